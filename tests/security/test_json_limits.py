"""JSON read from folders privaudit owns is bounded: depth, size, numbers (issue 19).

A 200,000-deep ``result.json`` used to abort the whole report with RecursionError; a 1 GB
one would be read whole. Each is now a damaged result, skipped with a warning, and the
rest of the report is built; the same limits hold for every kind and for cache manifests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privaudit._files import JSON_MAX_BYTES, parse_json, read_json_inside
from privaudit.results import (
    AttackResult,
    DamagedResultWarning,
    ProximityResult,
    ResultFileError,
    RiskResult,
    load_all_results,
    load_result,
)
from privaudit.training._cache import ModelCache

DEEP = "[" * 200_000 + "]" * 200_000


def result(target: str) -> AttackResult:
    return AttackResult(labels=[1, 0, 1, 0], scores=[0.9, 0.1, 0.8, 0.3], attack="loss",
                        target=target)


def _huge(path: Path) -> None:
    """A 1 GB file without writing 1 GB (sparse): refused by its size, never read."""
    with open(path, "wb") as fh:
        fh.truncate(1 << 30)


@pytest.mark.parametrize(("content", "message"), [
    (DEEP, "nested more than 64 levels"),
    ('{"a": ' * 100 + "1" + "}" * 100, "nested more than 64 levels"),
    ('{"privaudit_result": 2, "n_records": 1e999}', "overflows a float"),
    ('{"privaudit_result": 2, "n_records": ' + "9" * 5000 + "}", "not valid JSON"),
    ('{"privaudit_result": 2, "n_records": NaN}', "token NaN"),
    (None, "more than the 67,108,864 bytes"),
])
def test_a_bad_result_json_is_a_damaged_result(tmp_path, content, message) -> None:
    folder = tmp_path / "r"
    result("bad").save(folder)
    if content is None:
        _huge(folder / "result.json")
    else:
        (folder / "result.json").write_text(content)
    with pytest.raises(ResultFileError, match=message) as info:
        AttackResult.load(folder)
    assert str(folder / "result.json") in str(info.value)


@pytest.mark.parametrize("kind", ["risk.json", "proximity.json"])
def test_every_kind_is_read_with_the_limits(tmp_path, kind) -> None:
    folder = tmp_path / "r"
    made = (RiskResult(n_attacks=20, n_success=9, n_baseline=2) if kind == "risk.json"
            else ProximityResult("dcr", "quantile", synthetic=[0.1]))
    made.save(folder)
    (folder / kind).write_text(DEEP)
    with pytest.raises(ResultFileError, match="nested"):
        load_result(folder)
    _huge(folder / kind)
    with pytest.raises(ResultFileError, match="bytes"):
        load_result(folder)


def test_report_skips_the_deep_and_huge_results_and_builds_the_rest(tmp_path) -> None:
    from typer.testing import CliRunner

    from privaudit.cli import app

    results = tmp_path / "results"
    for name in ("deep", "good", "huge"):
        result(name).save(results / name)
    (results / "deep" / "result.json").write_text(DEEP)
    _huge(results / "huge" / "result.json")
    with pytest.warns(DamagedResultWarning) as caught:
        assert [r.target for r in load_all_results(results)] == ["good"]
    assert sorted(str(w.message).split("result ")[1].split(":")[0].rsplit("/", 1)[1]
                  for w in caught) == ["deep", "huge"]
    outcome = CliRunner().invoke(app, ["report", str(results), "--out",
                                       str(tmp_path / "out"), "--n-bootstrap", "10"])
    assert outcome.exit_code == 0, outcome.output
    # One line per damaged result, as the command shows warnings (issue 20).
    assert sum(line.startswith("DamagedResultWarning:")
               for line in outcome.output.splitlines()) == 2
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [entry["target"] for entry in doc["results"]] == ["good"]


def test_a_deep_or_huge_cache_manifest_is_remade(tmp_path) -> None:
    class Recipe:
        suffix = ".npy"

        def save(self, model, path):
            np.save(path, model, allow_pickle=False)

    cache = ModelCache(tmp_path, "cd" * 32, {}, Recipe())
    cache.prepare(np.ones((1, 2), dtype=bool))
    cache.save(0, np.zeros(2), seed=0, indices=np.arange(2), train_seconds=0.0)
    cache.manifest_path(0).write_text(DEEP)
    assert cache.check(0, 0, np.arange(2)) == "is unreadable"
    _huge(cache.manifest_path(0))
    assert cache.check(0, 0, np.arange(2)) == "is unreadable"
    assert np.isnan(cache.train_seconds(0))


def test_the_limits_themselves(tmp_path) -> None:
    assert parse_json('{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    assert parse_json("[" * 64 + "]" * 64) is not None
    with pytest.raises(ValueError, match="nested more than 64"):
        parse_json("[" * 65 + "]" * 65)
    (tmp_path / "big.json").write_bytes(b" " * 11)
    with pytest.raises(ValueError, match="11 bytes long, more than the 10"):
        read_json_inside(tmp_path, "big.json", max_bytes=10)
    assert JSON_MAX_BYTES == 64 << 20
