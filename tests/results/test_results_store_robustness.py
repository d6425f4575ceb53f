"""Damaged or tampered saved results, and scores that would be silently misread.

Each damaged result is made here by saving a small valid one and editing its files.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score, roc_curve
from tampering import edit_csv, edit_json, unseal

import privaudit
import privaudit.metrics as pm
from privaudit.results import (
    AttackResult,
    DamagedResultWarning,
    ResultFileError,
    load_results,
)
from privaudit.targets import as_target

# The damage below is made on results as a privaudit without digests wrote them (the
# digests would report any edit as "modified" first); test_integrity.py edits sealed ones.
pytestmark = pytest.mark.filterwarnings("ignore::privaudit.results.UnsealedResultWarning")

N = 12


def saved(tmp_path: Path, name: str = "r", **kwargs) -> Path:
    labels = np.r_[np.ones(N // 2, dtype=int), np.zeros(N // 2, dtype=int)]
    scores = np.linspace(1.0, 0.0, N)
    folder = tmp_path / name
    AttackResult(labels=labels, scores=scores, attack="loss", target=name, **kwargs
                 ).save(folder)
    return folder


def set_cell(column: str, value: str, row: int = 1) -> Callable[[list[str]], list[str]]:
    def change(lines: list[str]) -> list[str]:
        header = lines[0].split(",")
        cells = lines[row].split(",")
        cells[header.index(column)] = value
        return [*lines[:row], ",".join(cells), *lines[row + 1:]]
    return change


# ------------------------------------------------------------------ scores.csv


@pytest.mark.parametrize(("change", "message"), [
    (lambda lines: lines[:-3], r"has 9 rows, but 'n_records'.* is 12"),
    (lambda lines: [*lines, lines[1]], r"has 13 rows, but 'n_records'"),
    (set_cell("label", "2"), r"'labels'.*0/1"),
    (set_cell("label", "0.5"), r"column 'label' holds '0.5' on line 2"),
    (set_cell("label", "NaN", row=3), r"column 'label' holds 'NaN' on line 4"),
    (set_cell("label", "", row=2), r"column 'label' holds '' on line 3"),
    (set_cell("score", "abc"), r"column 'score' holds 'abc' on line 2, which is not a number"),
    (set_cell("score", "inf"), r"'scores'.*finite"),
    (set_cell("record_id", "x"), r"column 'record_id' holds 'x'"),
    (set_cell("record_id", "99999999999999999999"), r"column 'record_id'"),
    (lambda lines: [lines[0].replace("score", "scor"), *lines[1:]], r"no column 'score'"),
    (lambda lines: [], r"empty"),
])
def test_damaged_scores_csv_names_the_file_and_the_fault(tmp_path, change, message) -> None:
    folder = saved(tmp_path)
    edit_csv(folder, change)
    with pytest.raises(ResultFileError, match=message) as info:
        AttackResult.load(folder)
    assert "scores.csv" in str(info.value)


def test_duplicated_rows_are_refused_even_with_a_matching_n_records(tmp_path) -> None:
    folder = saved(tmp_path)
    edit_csv(folder, lambda lines: [*lines[:-1], lines[1]])  # last row replaced by the first
    with pytest.raises(ResultFileError, match=r"'record_ids'.*unique.*\[0\]"):
        AttackResult.load(folder)


def test_binary_and_missing_scores_files(tmp_path) -> None:
    folder = saved(tmp_path)
    (folder / "scores.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(ResultFileError, match=r"scores\.csv cannot be read"):
        AttackResult.load(folder)
    (folder / "scores.csv").unlink()
    with pytest.raises(ResultFileError, match=r"'files.scores'\) is missing"):
        AttackResult.load(folder)


def test_parquet_with_a_string_score_column_is_refused(tmp_path) -> None:
    import pandas as pd

    folder = tmp_path / "p"
    AttackResult(labels=[1, 0, 1, 0], scores=[0.1, 0.2, 0.3, 0.4]).save(folder, format="parquet")
    frame = pd.read_parquet(folder / "scores.parquet")
    frame["score"] = frame["score"].astype(str)
    frame.to_parquet(folder / "scores.parquet")
    unseal(folder)
    with pytest.raises(ResultFileError, match=r"scores.parquet holds invalid data.*'scores'"):
        AttackResult.load(folder)


def test_crlf_scores_file_still_loads(tmp_path) -> None:
    folder = saved(tmp_path)
    path = folder / "scores.csv"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    unseal(folder)  # with its digest, any change of bytes is an edit (test_integrity.py)
    loaded = AttackResult.load(folder)
    assert loaded.n_records == N and loaded.scores[0] == 1.0


# ------------------------------------------------------------------ result.json


def _drop(*keys: str) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        target = doc
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]
    return change


def _set(value, *keys: str) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        target = doc
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


@pytest.mark.parametrize(("change", "message"), [
    (_drop("files"), r"the key 'files' must be present"),
    (_drop("n_records"), r"the key 'n_records' must be present"),
    (_drop("files", "scores"), r"the key 'files.scores' must be present"),
    (_set("12", "n_records"), r"'n_records' must be of type int.*str"),
    (_set(True, "n_records"), r"'n_records' must be of type int.*bool"),
    (_set(0, "n_records"), r"'n_records' must be a positive integer"),
    (_set(5, "target"), r"'target' must be of type str"),
    (_set([1], "parameters"), r"'parameters' must be of type dict or null"),
    (_set("both", "kind"), r"'kind' must be 'membership' or 'attribute'"),
    (_set("yes", "files", "has_predictions"), r"'files.has_predictions' must be of type bool"),
    (_set("float", "files", "record_id_type"), r"'files.record_id_type' must be 'int' or"),
    (_set("1", "privaudit_result"), r"'privaudit_result' must be a positive integer"),
    (_set(None, "files", "scores"), r"'files.scores' must be of type str"),
])
def test_damaged_result_json_names_the_key(tmp_path, change, message) -> None:
    folder = saved(tmp_path)
    edit_json(folder, change)
    with pytest.raises(ResultFileError, match=message) as info:
        AttackResult.load(folder)
    assert "result.json" in str(info.value)


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b""])
def test_result_json_that_is_not_a_result(tmp_path, content) -> None:
    folder = saved(tmp_path)
    (folder / "result.json").write_bytes(content)
    with pytest.raises(ResultFileError, match=r"result\.json"):
        AttackResult.load(folder)


def test_load_results_skips_damaged_results_with_a_warning(tmp_path) -> None:
    good = saved(tmp_path, "good")
    saved(tmp_path, "b_truncated")
    edit_csv(tmp_path / "b_truncated", lambda lines: lines[:-1])
    saved(tmp_path, "a_notjson")
    (tmp_path / "a_notjson" / "result.json").write_text("{")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_results(tmp_path)
    assert [r.target for r in loaded] == ["good"]
    messages = [str(w.message) for w in caught if w.category is DamagedResultWarning]
    assert len(messages) == 2
    assert "a_notjson" in messages[0] and "b_truncated" in messages[1]
    with pytest.raises(ResultFileError, match="a_notjson"):
        load_results(tmp_path, strict=True)
    assert len(load_results(good, strict=True)) == 1
    with pytest.raises(TypeError, match="'strict'"):
        load_results(good, strict="yes")


# ------------------------------------------------------------------ audit_model reuse


@pytest.fixture(scope="module")
def tiny_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    labels = np.r_[np.ones(20, dtype=int), np.zeros(20, dtype=int)]
    return as_target(LogisticRegression().fit(X[:20], y[:20]), name="tiny"), X, y, labels


def _audit(tiny_model, results_dir: Path, messages: list[str]) -> AttackResult:
    target, X, y, labels = tiny_model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", privaudit.exceptions.BaselineWarning)
        return privaudit.audit_model(target, X, y, labels, attacks=["loss"],
                                     results_dir=results_dir, slices=False,
                                     progress=messages.append)[0]


@pytest.mark.parametrize("damage", ["not json", "truncated", "labels flipped"])
def test_audit_model_recomputes_a_damaged_saved_result(tmp_path, tiny_model, damage) -> None:
    first = _audit(tiny_model, tmp_path, [])
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    if damage == "not json":
        (folder / "result.json").write_text("{")
    elif damage == "truncated":
        edit_csv(folder, lambda lines: lines[:-5])
    else:
        edit_csv(folder, lambda lines: [lines[0], *(
            ",".join([c[0], str(1 - int(c[1])), *c[2:]])
            for c in (line.split(",") for line in lines[1:]))])
    messages: list[str] = []
    with pytest.warns(DamagedResultWarning, match="recomputed and overwritten"):
        again = _audit(tiny_model, tmp_path, messages)
    assert not any("reusing" in m for m in messages)
    np.testing.assert_array_equal(again.scores, first.scores)
    np.testing.assert_array_equal(AttackResult.load(folder).labels, first.labels)
    reused: list[str] = []
    _audit(tiny_model, tmp_path, reused)  # repaired: reused, without a warning
    assert any("reusing" in m for m in reused)


# ------------------------------------------------------------------ API validation


def test_duplicate_record_ids_are_an_error() -> None:
    for ids in ([1, 2, 2, 3], ["a", "b", "a", "c"]):
        with pytest.raises(ValueError, match=r"'record_ids' parameter of AttackResult must be "
                                             r"unique.*1 ids used more than once"):
            AttackResult(labels=[1, 0, 1, 0], scores=[0.1, 0.2, 0.3, 0.4], record_ids=ids)


STRING_SCORES = [["0.9", "0.1", "0.8", "0.2"], np.array(["0.9", "0.1", "0.8", "0.2"]),
                 np.array([0.9, "0.1", 0.8, 0.2], dtype=object), [0.9, None, 0.8, 0.2],
                 np.array([1 + 0j, 0, 1, 0])]


@pytest.mark.parametrize("scores", STRING_SCORES)
def test_non_numeric_scores_are_refused_everywhere(scores) -> None:
    labels = [1, 0, 1, 0]
    calls = {
        "AttackResult": lambda: AttackResult(labels=labels, scores=scores),
        "roc_auc": lambda: pm.roc_auc(labels, scores),
        "roc_curve": lambda: pm.roc_curve(labels, scores),
        "tpr_at_fpr": lambda: pm.tpr_at_fpr(labels, scores, 0.1),
        "advantage": lambda: pm.advantage(labels, scores),
        "effective_epsilon": lambda: pm.effective_epsilon(labels, scores),
        "bootstrap_ci": lambda: pm.bootstrap_ci(pm.roc_auc, labels, scores, n_resamples=5),
        "effective_epsilon_lower_bound": lambda: pm.effective_epsilon_lower_bound(
            labels, [scores, scores]),
    }
    for func, call in calls.items():
        with pytest.raises(TypeError, match=rf"The 'scores' parameter of {func}.*numeric"):
            call()


def test_non_numeric_raw_statistic_is_refused() -> None:
    with pytest.raises(TypeError, match="'raw_statistic' parameter of AttackResult"):
        AttackResult(labels=[1, 0], scores=[0.5, 0.1], raw_statistic=["1.0", "2.0"])


def _pairwise_auc(labels, scores) -> float:
    """Reference: the share of (member, non-member) pairs ranked right, ties counting half."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    neg = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def test_huge_integer_scores_are_ranked_exactly() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 60)
    k = rng.integers(0, 20, 60) + 5 * labels
    for base, dtype in ((2**62, np.int64), (-(2**62), np.int64), (2**63 + 5, np.uint64)):
        scores = (np.array(base, dtype=dtype) + k.astype(dtype)).astype(dtype)
        assert np.unique(scores.astype(np.float64)).size == 1  # float64 collapses them
        expected = roc_auc_score(labels, scores)
        assert expected > 0.6
        assert pm.roc_auc(labels, scores) == expected
        assert AttackResult(labels=labels, scores=scores).metrics(n_bootstrap=0)[
            "auc"]["value"] == expected
        fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
        curve = pm.roc_curve(labels, scores, drop_intermediate=False)
        np.testing.assert_allclose(curve.tpr, tpr)
        np.testing.assert_allclose(curve.fpr, fpr)
    python_ints = [2**80 + int(v) for v in k]  # beyond int64: an object array of ints
    assert pm.roc_auc(labels, python_ints) == pytest.approx(_pairwise_auc(labels, k), abs=1e-12)


def test_small_integer_scores_keep_their_values(tmp_path) -> None:
    scores = np.array([2**53, -(2**53), 3, 0], dtype=np.int64)
    result = AttackResult(labels=[1, 0, 1, 0], scores=scores)
    assert result.scores.tolist() == [2.0**53, -(2.0**53), 3.0, 0.0]
    big = AttackResult(labels=[1, 0, 1, 0], scores=scores * 4 + 1)
    big.save(tmp_path)
    assert AttackResult.load(tmp_path).metrics(n_bootstrap=0)["auc"]["value"] == \
        roc_auc_score([1, 0, 1, 0], scores * 4 + 1)


@pytest.mark.parametrize("value", ["abc", 3.0, True])
def test_tampered_raw_advantage_is_refused_on_load(tmp_path, value) -> None:
    folder = saved(tmp_path)
    edit_json(folder, _set(value, "raw_advantage"))
    with pytest.raises(ResultFileError, match=r"'raw_advantage'"):
        AttackResult.load(folder)


@pytest.mark.parametrize("key,value", [
    (("audit",), []), (("audit", "key"), 3), (("audit", "baseline"), "random"),
    (("audit", "baseline", "passed"), "yes"),
    (("audit", "slices", "most_exposed_tied"), "many"), (("out_of_fold",), "no"),
])
def test_tampered_audit_info_is_refused_on_load(tmp_path, key, value) -> None:
    from privaudit.results import AuditInfo, BaselineCheck, SliceSummary

    folder = saved(tmp_path, audit=AuditInfo(
        key="k", baseline=BaselineCheck("random-guess", True),
        slices=SliceSummary(rows=[{"slice_type": "entire"}], most_exposed_tied=1)))
    edit_json(folder, _set(value, *key))
    with pytest.raises(ResultFileError, match=key[-1]):
        AttackResult.load(folder)


def test_files_written_before_csv_escaping_keep_their_ids(tmp_path) -> None:
    ids = ["'quoted", "=formula", *[f"r{i}" for i in range(N - 2)]]
    folder = saved(tmp_path, record_ids=ids)
    assert AttackResult.load(folder).record_ids.tolist() == ids
    # As an older privaudit wrote it: cells as they are, no 'csv_escaped' flag.
    edit_json(folder, _drop("files", "csv_escaped"))
    edit_csv(folder, lambda lines: [lines[0], *(line.replace("''", "'").replace("'=", "=")
                                                for line in lines[1:])])
    assert AttackResult.load(folder).record_ids.tolist() == ids
