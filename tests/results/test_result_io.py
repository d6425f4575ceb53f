from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privaudit.results import AttackResult, ResultFileError, UnsealedResultWarning, load_results
from privaudit.results._io import atomic_write, atomic_write_text


def assert_same(a: AttackResult, b: AttackResult) -> None:
    """Field-by-field equality, float64 bit for bit and ids of the same type."""
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.labels.dtype == b.labels.dtype
    assert a.scores.tobytes() == b.scores.tobytes()
    assert a.record_ids.dtype == b.record_ids.dtype
    assert a.record_ids.tolist() == b.record_ids.tolist()
    for name in ("predictions", "raw_statistic"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.tobytes() == y.tobytes(), name
    for name in ("attack", "target", "dataset", "generator", "kind", "raw_statistic_name",
                 "parameters", "extra"):
        assert getattr(a, name) == getattr(b, name), name


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_round_trip_is_exact(tmp_path, make_result, fmt) -> None:
    result = make_result(40, 30, 0.9, predictions=True, raw=True, dataset="loans",
                         generator="ctgan", parameters={"k": 0.2, "names": ["a", "b"]},
                         extra={"theory": 0.1, "nested": {"x": 1}})
    # Values that a lossy float printer would corrupt, and non-finite raw values.
    result.scores[:4] = [0.1 + 0.2, 1e-310, -1.7976931348623157e308, 2.0 / 3.0]
    result.raw_statistic[:3] = [np.nan, np.inf, -np.inf]
    result.save(tmp_path / "r", format=fmt)
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == sorted(
        ["result.json", f"scores.{fmt}"])
    assert_same(result, AttackResult.load(tmp_path / "r"))
    assert_same(result, AttackResult.load(tmp_path / "r" / "result.json"))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_string_ids_that_look_like_numbers_stay_strings(tmp_path, fmt) -> None:
    ids = ["007", "1e3", "NA", "", " padded ", 'quote"comma,', "line\nbreak", "naïve ✓"]
    result = AttackResult(labels=[1, 0] * 4, scores=np.linspace(0, 1, 8), record_ids=ids)
    result.save(tmp_path, format=fmt)
    loaded = AttackResult.load(tmp_path)
    assert loaded.record_ids.tolist() == ids
    assert_same(result, loaded)


_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
_ids = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"),
               max_size=8)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.lists(st.tuples(st.booleans(), _floats), min_size=1, max_size=25),
    string_ids=st.booleans(),
    fmt=st.sampled_from(["csv", "parquet"]),
    id_draw=st.data(),
)
def test_round_trip_property(data, string_ids, fmt, id_draw) -> None:
    n = len(data)
    if string_ids:
        ids = id_draw.draw(st.lists(_ids, min_size=n, max_size=n, unique=True))
    else:
        ids = id_draw.draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=n, max_size=n,
                                    unique=True))
    result = AttackResult(labels=[d[0] for d in data], scores=[d[1] for d in data],
                          record_ids=ids)
    with tempfile.TemporaryDirectory() as tmp:
        result.save(tmp, format=fmt)
        assert_same(result, AttackResult.load(tmp))


def test_csv_is_readable_by_a_plain_reader(tmp_path, make_result) -> None:
    # Reference reader: the csv module and float(), nothing from pandas.
    result = make_result(5, 5, predictions=True, raw=True)
    result.save(tmp_path)
    with open(tmp_path / "scores.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["record_id"]) for r in rows] == result.record_ids.tolist()
    assert [int(r["label"]) for r in rows] == result.labels.tolist()
    assert [float(r["score"]) for r in rows] == result.scores.tolist()
    assert [float(r["loss"]) for r in rows] == result.raw_statistic.tolist()
    assert [int(r["prediction"]) for r in rows] == result.predictions.tolist()


def test_result_json_is_strict_and_complete(tmp_path, make_result) -> None:
    result = make_result(extra={"missing": float("nan")})
    result.save(tmp_path, n_bootstrap=20)

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    doc = json.loads((tmp_path / "result.json").read_text(), parse_constant=refuse)
    assert doc["privaudit_result"] == 2
    assert doc["audit"] == {} and doc["out_of_fold"] is False and doc["raw_advantage"] is None
    assert doc["files"] == {"scores": "scores.csv", "record_id_type": "int",
                            "has_predictions": False, "csv_escaped": True}
    assert doc["metrics"]["auc"]["low"] is not None  # bootstrapped on request
    assert doc["extra"] == {"missing": None}


def test_saving_in_another_format_removes_the_stale_file(tmp_path, make_result) -> None:
    result = make_result()
    result.save(tmp_path, format="csv")
    result.save(tmp_path, format="parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json", "scores.parquet"]
    assert_same(result, AttackResult.load(tmp_path))
    with pytest.raises(ValueError, match=r"The 'format' parameter of AttackResult\.save"):
        result.save(tmp_path, format="xlsx")


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path) -> None:
    target = tmp_path / "file.txt"
    atomic_write_text(target, "old")

    def fail(tmp: Path) -> None:
        tmp.write_text("half-writ")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError, match="killed"):
        atomic_write(target, fail)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]  # no temporary file left


def test_load_results_finds_every_result(tmp_path, make_result) -> None:
    a = make_result(attack="a", seed=1)
    b = make_result(attack="b", seed=2)
    c = make_result(attack="c", seed=3)
    a.save(tmp_path / "run" / "x" / "a")
    b.save(tmp_path / "run" / "y" / "b")
    c.save(tmp_path / "other" / "c")
    loaded = load_results(tmp_path / "run")
    assert [r.attack for r in loaded] == ["a", "b"]
    # several paths, a direct result.json, and a duplicate reached twice
    loaded = load_results([tmp_path / "other" / "c" / "result.json", tmp_path, str(tmp_path)])
    assert [r.attack for r in loaded] == ["c", "a", "b"]
    assert_same(loaded[1], a)


def test_load_errors_are_clear(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_results(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"No result.json found under"):
        load_results(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match=r"AttackResult\.save"):
        AttackResult.load(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "result.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a privaudit result file"):
        AttackResult.load(tmp_path / "bad")
    (tmp_path / "bad" / "result.json").write_text('{"privaudit_result": 99}')
    with pytest.raises(ValueError, match="newer privaudit"):
        AttackResult.load(tmp_path / "bad")


def test_audit_info_round_trips(tmp_path, make_result) -> None:
    from privaudit.results import AuditInfo, BaselineCheck, SliceSummary

    info = AuditInfo(
        key="abc",
        baseline=BaselineCheck("random-guess", False, {"n_bootstrap": 200}),
        slices=SliceSummary(rows=[{"slice_type": "entire", "auc": 0.5}],
                            most_exposed=[{"record_id": 3, "score": 1.0}],
                            most_exposed_tied=4, settings={"n_bootstrap": 100}))
    result = make_result(audit=info, out_of_fold=True, raw_advantage=0.5)
    result.save(tmp_path)
    loaded = AttackResult.load(tmp_path)
    assert loaded.audit == info and loaded.out_of_fold is True and loaded.raw_advantage == 0.5
    assert loaded.extra == {}


def test_schema_1_results_still_load(tmp_path, make_result) -> None:
    """A result saved before AuditInfo kept the audit's facts as loose extra keys."""
    make_result().save(tmp_path)
    doc = json.loads((tmp_path / "result.json").read_text())
    for key in ("audit", "out_of_fold", "raw_advantage"):
        del doc[key]
    doc["privaudit_result"] = 1
    del doc["integrity"]  # schema 1 had no digests
    doc["extra"] = {
        "audit_key": "k1", "baseline": "random-guess", "better_than_baseline": True,
        "better_than_random": True, "slices": [{"slice_type": "entire"}],
        "most_exposed": [{"record_id": 0}], "most_exposed_tied": 2,
        "slice_settings": {"n_bootstrap": 100}, "n_reference_models": 16,
        "out_of_fold": True, "raw_advantage": 0.25, "threshold": 0.7,
    }
    (tmp_path / "result.json").write_text(json.dumps(doc))
    with pytest.warns(UnsealedResultWarning, match="no digest"):
        loaded = AttackResult.load(tmp_path)
    assert loaded.audit.key == "k1" and loaded.extra["n_reference_models"] == 16
    assert loaded.audit.baseline.name == "random-guess" and loaded.audit.baseline.passed
    assert loaded.audit.slices.rows == [{"slice_type": "entire"}]
    assert loaded.audit.slices.most_exposed_tied == 2
    assert loaded.out_of_fold is True and loaded.raw_advantage == 0.25
    assert loaded.extra == {"threshold": 0.7, "n_reference_models": 16}  # attack details


def test_loose_audit_keys_in_extra_are_moved_with_a_warning(make_result) -> None:
    with pytest.warns(DeprecationWarning, match="typed fields"):
        result = make_result(extra={"raw_advantage": 0.5, "out_of_fold": True, "x": 1})
    assert result.raw_advantage == 0.5 and result.out_of_fold and result.extra == {"x": 1}
    with pytest.raises(ValueError, match="'raw_advantage'"):
        make_result(raw_advantage=2.0)
    with pytest.raises(TypeError, match="'audit'"):
        make_result(audit={"key": "k"})


def test_findings_round_trip_and_are_checked(tmp_path, make_result) -> None:
    from privaudit.results import AuditInfo, Finding

    findings = [Finding("privleak", "info", "PrivLeak +3%", 0.03),
                Finding("blind-baseline", "critical", "sets differ")]
    make_result(audit=AuditInfo(findings=findings)).save(tmp_path)
    assert AttackResult.load(tmp_path).audit.findings == findings
    with pytest.raises(ValueError, match="severity"):
        Finding("x", "fatal")
    with pytest.raises(ValueError, match="code"):
        Finding("")
    doc = json.loads((tmp_path / "result.json").read_text())
    doc["audit"]["findings"][0]["severity"] = "fatal"
    del doc["integrity"]  # as written before digests (with them: "modified")
    (tmp_path / "result.json").write_text(json.dumps(doc))
    with pytest.warns(UnsealedResultWarning), pytest.raises(ResultFileError,
                                                           match=r"findings\[0\]"):
        AttackResult.load(tmp_path)
