"""Folders privaudit owns (results, caches, locks) never lead out through a planted link.

Each case plants a link in a folder privaudit writes or reads (built in tmp_path) and
checks that nothing outside is written (the outside folder stays as it was, a dangling
link's target is never created) and nothing outside is read (refused with
OutsideFolderError / ResultFileError naming the path, or skipped with a warning).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from privaudit.exceptions import OutsideFolderError
from privaudit.llm._sharded import _load as load_shard
from privaudit.results import (
    AttackResult,
    AttributeResult,
    DamagedResultWarning,
    ProximityResult,
    ResultFileError,
    ResultsStore,
    RiskResult,
    load_all_results,
)
from privaudit.synthetic._text_models import cached
from privaudit.training._cache import ModelCache, _byte_locks


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def result(target: str = "m") -> AttackResult:
    return AttackResult(labels=[1, 0, 1, 0], scores=[0.9, 0.1, 0.8, 0.3], attack="loss",
                        target=target)


# ------------------------------------------------------------------------------ results

def test_a_linked_result_folder_is_neither_written_nor_read(tmp_path, outside) -> None:
    store = ResultsStore(tmp_path / "out" / "results")
    folder = store.path_for("m", "loss")
    folder.parent.mkdir(parents=True)
    result("elsewhere").save(outside / "r")
    before = snapshot(outside)
    folder.symlink_to(outside / "r")
    with pytest.raises(ResultFileError, match="outside the folder") as info:
        store.load("m", "loss")
    assert isinstance(info.value, OutsideFolderError) and str(folder) in str(info.value)
    with pytest.raises(OutsideFolderError, match=str(folder)):
        store.save(result())
    assert snapshot(outside) == before


def test_a_linked_results_folder_is_refused(tmp_path, outside) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results").symlink_to(outside)
    with pytest.raises(OutsideFolderError, match="the results folder"):
        ResultsStore(tmp_path / "out" / "results").save(result())
    assert snapshot(outside) == {"secret.txt": b"secret"}


def _kinds(folder: Path) -> dict[str, tuple[object, str]]:
    return {
        "risk": (RiskResult(n_attacks=20, n_success=9, n_baseline=2, target="t"),
                 "risk.json"),
        "proximity-json": (ProximityResult("dcr", "quantile", synthetic=[0.1, 0.2]),
                           "proximity.json"),
        "proximity-npz": (ProximityResult("dcr", "quantile", synthetic=[0.1, 0.2]),
                          "proximity.npz"),
        "attribute-npz": (AttributeResult(candidates=[0, 1], guesses=np.array([0, 1]),
                                          truth=np.array([0, 1]), members=np.array([1, 0])),
                          "attribute.npz"),
        "scores": (result(), "scores.csv"),
    }


@pytest.mark.parametrize("kind", ["risk", "proximity-json", "proximity-npz",
                                  "attribute-npz", "scores"])
def test_report_skips_a_result_whose_file_links_out(tmp_path, outside, kind) -> None:
    results = tmp_path / "out" / "results"
    result("good").save(results / "good")
    made, name = _kinds(tmp_path)[kind]
    made.save(outside / "real")  # a genuine result, outside the folder the user named
    made.save(results / "bad")
    (results / "bad" / name).unlink()
    (results / "bad" / name).symlink_to(outside / "real" / name)
    before = snapshot(outside)
    with pytest.warns(DamagedResultWarning, match=rf"bad.*{name}.*outside the folder"):
        loaded = load_all_results(results)
    assert [r.target for r in loaded] == ["good"]
    assert snapshot(outside) == before


def test_report_skips_a_linked_result_folder_with_a_warning(tmp_path, outside) -> None:
    results = tmp_path / "out" / "results"
    result("good").save(results / "good")
    result("secret").save(outside / "r")
    (results / "linked").symlink_to(outside / "r")
    with pytest.warns(DamagedResultWarning, match=r"linked.*outside the folder"):
        loaded = load_all_results(tmp_path / "out")
    assert [r.target for r in loaded] == ["good"]


# ---------------------------------------------------------------- reference-model cache

class _Recipe:
    suffix = ".npy"

    def save(self, model, path):
        np.save(path, model, allow_pickle=False)

    def load(self, path):
        return np.load(path, allow_pickle=False)


def _cache(root: Path) -> ModelCache:
    return ModelCache(root, "ab" * 32, {"what": "test"}, _Recipe())


def test_a_linked_pool_folder_is_refused(tmp_path, outside) -> None:
    cache = _cache(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    cache.path.symlink_to(outside)
    with pytest.raises(OutsideFolderError, match="refpool-"):
        cache.prepare(np.ones((2, 3), dtype=bool))
    assert snapshot(outside) == {"secret.txt": b"secret"}


def test_a_dangling_lock_link_is_refused_and_its_target_never_created(tmp_path,
                                                                       outside) -> None:
    cache = _cache(tmp_path / "cache")
    cache.prepare(np.ones((2, 3), dtype=bool))
    cache.lock_path.symlink_to(outside / "created.lock")
    with pytest.raises(OutsideFolderError, match=r"models\.lock"):
        cache.claim([0], set())
    assert not (outside / "created.lock").exists()
    assert not _byte_locks._files  # nothing left open


def test_a_linked_model_file_is_retrained_never_read(tmp_path, outside) -> None:
    cache = _cache(tmp_path / "cache")
    cache.prepare(np.ones((2, 3), dtype=bool))
    indices = np.arange(3)
    cache.save(0, np.arange(4.0), seed=1, indices=indices, train_seconds=0.1)
    assert cache.check(0, 1, indices) is None
    np.save(outside / "model.npy", np.arange(4.0))
    cache.model_path(0).unlink()
    cache.model_path(0).symlink_to(outside / "model.npy")
    assert cache.check(0, 1, indices) == "is a link leading out of the cache"
    with pytest.raises(OutsideFolderError, match="outside the folder"):
        cache.load(0)
    before = snapshot(outside)
    cache.save(0, np.arange(5.0), seed=1, indices=indices, train_seconds=0.1)
    assert not cache.model_path(0).is_symlink() and snapshot(outside) == before


def test_a_linked_manifest_or_pool_json_is_not_read(tmp_path, outside) -> None:
    cache = _cache(tmp_path / "cache")
    cache.prepare(np.ones((2, 3), dtype=bool))
    (outside / "m.json").write_text('{"format": 1}')
    cache.manifest_path(0).symlink_to(outside / "m.json")
    assert cache.check(0, 1, np.arange(3)) == "is a link leading out of the cache"
    (cache.path / "pool.json").unlink()
    (cache.path / "pool.json").symlink_to(outside / "m.json")
    with pytest.raises(OutsideFolderError, match=r"pool\.json"):
        cache.prepare(np.ones((2, 3), dtype=bool))


# ------------------------------------------------------------ text caches, LLM shards

@pytest.mark.parametrize("kind", ["json", "npz"])
def test_a_linked_text_cache_file_is_replaced_not_read(tmp_path, outside, kind) -> None:
    root = tmp_path / "cache"
    value = [1.0, 2.0] if kind == "json" else np.array([1.0, 2.0], dtype=np.float32)
    cached(root, kind, "key", lambda: value)
    (name,) = [p.name for p in root.iterdir()]
    (root / name).unlink()
    if kind == "json":
        (outside / "planted").write_text("[9.0, 9.0]")
    else:
        np.savez(outside / "planted.npz", values=np.array([9.0, 9.0], dtype=np.float32))
    target = outside / ("planted" if kind == "json" else "planted.npz")
    (root / name).symlink_to(target)
    before = snapshot(outside)
    again = cached(root, kind, "key", lambda: value)
    assert np.asarray(again).tolist() == [1.0, 2.0]  # recomputed, not the planted value
    assert not (root / name).is_symlink() and snapshot(outside) == before


def test_a_linked_shard_file_is_not_read(tmp_path, outside) -> None:
    np.savez(outside / "shard.npz", loss=np.array([0.5]))
    (tmp_path / "shard-x.npz").symlink_to(outside / "shard.npz")
    assert load_shard(tmp_path / "shard-x.npz", ("loss",)) is None
    os.replace(outside / "shard.npz", tmp_path / "shard-x.npz")
    assert load_shard(tmp_path / "shard-x.npz", ("loss",))["loss"].tolist() == [0.5]
