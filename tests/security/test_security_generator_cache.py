"""A generator's shadow-run cache: a table replaced by a pickle is never unpickled."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from privaudit._digest import file_sha256
from privaudit.exceptions import OutsideFolderError, PrivauditWarning
from privaudit.synthetic import independent_marginals
from privaudit.training import GeneratorRuns

AUX = pd.DataFrame({"x": np.arange(100) % 7, "c": list("abcd") * 25})
TARGETS = pd.DataFrame({"x": [50], "c": ["z"]})


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def make(cache):
    return GeneratorRuns(independent_marginals, AUX, TARGETS, n_runs=4, n_train_rows=20,
                         random_state=0, cache_dir=cache).run()


@pytest.mark.parametrize("forge_manifest", [False, True])
def test_a_pickle_in_place_of_a_table_never_runs(tmp_path, forge_manifest):
    runs = make(tmp_path / "cache")
    marker = tmp_path / "pwned"
    table = runs.cache_path_ / "model-00001.parquet"
    table.write_bytes(pickle.dumps(Payload(str(marker))))
    assert not marker.exists()
    if forge_manifest:  # the attacker rewrites the hash too: the cache trusts the file
        manifest = runs.cache_path_ / "model-00001.json"
        info = json.loads(manifest.read_text())
        info["model_sha256"] = file_sha256(table)
        manifest.write_text(json.dumps(info))
        with pytest.raises(ValueError, match=r"model-00001\.parquet is not a Parquet table"):
            make(tmp_path / "cache")  # the tables are read once, as the runs finish
    else:
        with pytest.warns(PrivauditWarning, match="does not match"):
            again = make(tmp_path / "cache")
        assert again.n_made_ == 1 and len(again.synthetic_[1]) == 20
    assert not marker.exists()


# ------------------------------------------------------------ links out of the cache
# Issue 19: every file of a genruns-<key> folder resolves inside the cache; a planted link
# is refused (OutsideFolderError) before anything is read, locked or written through it.

def _folder_name(tmp_path):
    runs = make(tmp_path / "probe")
    return runs.cache_path_.name


def test_a_genruns_folder_linked_outside_is_refused(tmp_path):
    name = _folder_name(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / name).symlink_to(outside, target_is_directory=True)
    with pytest.raises(OutsideFolderError, match=name):
        make(cache)
    assert list(outside.iterdir()) == []  # nothing written there


@pytest.mark.parametrize("entry", ["model-00001.parquet", "model-00001.json", "pool.json",
                                   "in_mask.npy", "models.lock"])
def test_a_cache_file_linked_outside_is_refused(tmp_path, entry):
    runs = make(tmp_path / "cache")
    folder = runs.cache_path_
    secret = tmp_path / "secret"
    secret.mkdir()
    planted = secret / entry
    original = folder / entry
    if original.exists():  # the real content, outside: a link that would "work"
        planted.write_bytes(original.read_bytes())
        original.unlink()
    original.symlink_to(planted)
    before = {p.name: p.stat().st_mtime_ns for p in secret.iterdir()}
    with pytest.raises(OutsideFolderError, match=entry.replace(".", r"\.")):
        make(tmp_path / "cache")
    with pytest.raises(OutsideFolderError):
        GeneratorRuns.from_cache(folder)
    assert {p.name: p.stat().st_mtime_ns for p in secret.iterdir()} == before


def test_a_dangling_lock_link_creates_nothing(tmp_path):
    runs = make(tmp_path / "cache")
    target = tmp_path / "elsewhere" / "created.lock"
    target.parent.mkdir()
    lock = runs.cache_path_ / "models.lock"
    if lock.exists():
        lock.unlink()
    lock.symlink_to(target)
    for table in runs.cache_path_.glob("model-*.json"):
        table.unlink()  # tables to make again: the lock would be taken
    with pytest.raises(OutsideFolderError, match=r"models\.lock"):
        make(tmp_path / "cache")
    assert not target.exists()


def test_a_table_linked_inside_the_folder_is_not_followed_either(tmp_path):
    runs = make(tmp_path / "cache")
    folder = runs.cache_path_
    (folder / "model-00001.parquet").unlink()
    (folder / "model-00001.parquet").symlink_to(folder / "model-00000.parquet")
    with pytest.raises(OutsideFolderError, match="symbolic link"):
        GeneratorRuns.from_cache(folder)
