"""Saved results and reports as an attacker writes them: files pointing elsewhere, cells
that run, names that collide.

Every crafted result folder is built here, in tmp_path, by saving a harmless result and
then editing its files as someone who can write to the results folder would.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import privaudit
from privaudit.report import MIAttackReport, build_report
from privaudit.results import (
    AttackResult,
    DamagedResultWarning,
    ResultFileError,
    csv_safe_cell,
    csv_safe_frame,
    load_results,
    restore_csv_cell,
    result_folder_name,
)
from privaudit.targets import as_target

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
            "\tTAB", "\rCR", "\uff1dSUM(A1)"]


def small_result(**provenance) -> AttackResult:
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(20, dtype=int), np.zeros(20, dtype=int)]
    scores = np.r_[rng.normal(1, 1, 20), rng.normal(0, 1, 20)]
    return AttackResult(labels=labels, scores=scores, **{"attack": "loss", "target": "m",
                                                         **provenance})


def secret_scores(tmp_path: Path) -> Path:
    """A valid scores file outside every result folder: reading it would leak it."""
    other = tmp_path / "elsewhere"
    small_result(target="secret").save(other)
    return other / "scores.csv"


def point_scores_at(folder: Path, value: str) -> None:
    doc = json.loads((folder / "result.json").read_text())
    doc["files"]["scores"] = value
    (folder / "result.json").write_text(json.dumps(doc))


# ------------------------------------------------------------------ files.scores escapes


@pytest.mark.parametrize("kind", ["relative", "absolute", "subfolder"])
def test_files_scores_outside_the_folder_is_refused(tmp_path, kind) -> None:
    secret = secret_scores(tmp_path)
    folder = tmp_path / "results" / "r"
    small_result().save(folder)
    value = {"relative": "../../elsewhere/scores.csv", "absolute": str(secret),
             "subfolder": "sub/scores.csv"}[kind]
    point_scores_at(folder, value)
    with pytest.raises(ResultFileError, match=r"'files\.scores'.*inside") as info:
        AttackResult.load(folder)
    assert str(folder / "result.json") in str(info.value)


def test_scores_symlink_out_of_the_folder_is_refused(tmp_path) -> None:
    secret = secret_scores(tmp_path)
    folder = tmp_path / "r"
    small_result().save(folder)
    (folder / "scores.csv").unlink()
    os.symlink(secret, folder / "scores.csv")
    with pytest.raises(ResultFileError, match="outside the folder") as info:
        AttackResult.load(folder)
    assert "'files.scores'" in str(info.value) and "scores.csv" in str(info.value)


def test_result_json_symlink_out_of_the_folder_is_refused(tmp_path) -> None:
    other = tmp_path / "other"
    small_result(target="secret").save(other)
    folder = tmp_path / "r"
    folder.mkdir()
    os.symlink(other / "result.json", folder / "result.json")
    os.symlink(other / "scores.csv", folder / "scores.csv")
    with pytest.raises(ResultFileError, match="outside the folder"):
        AttackResult.load(folder)


def test_report_skips_an_escaping_result_and_builds_the_rest(tmp_path) -> None:
    secret_scores(tmp_path)
    results = tmp_path / "results"
    small_result(target="good").save(results / "good")
    small_result(target="bad").save(results / "bad")
    point_scores_at(results / "bad", "../../elsewhere/scores.csv")
    with pytest.warns(DamagedResultWarning, match="bad"):
        loaded = load_results(results)
    assert [r.target for r in loaded] == ["good"]
    with pytest.raises(ResultFileError):
        load_results(results, strict=True)


# ------------------------------------------------------------------ CSV injection


def test_csv_safe_cell_rule_and_round_trip() -> None:
    for text in FORMULAS:
        assert csv_safe_cell(text).startswith("'")
        assert restore_csv_cell(csv_safe_cell(text)) == text
    for text in ["model", "", "a=b", "'quoted", "''", "0.5"]:
        assert restore_csv_cell(csv_safe_cell(text)) == text
    assert csv_safe_cell("model") == "model"


def test_csv_safe_frame_keeps_numbers_numbers() -> None:
    frame = pd.DataFrame({"target": ["=1+1", "-x", "ok"], "value": [-0.5, -1e-300, 2.0],
                          "count": [-3, 0, 4], "=header": [True, False, True]})
    safe = csv_safe_frame(frame)
    assert safe["target"].tolist() == ["'=1+1", "'-x", "ok"]
    assert safe["value"].tolist() == [-0.5, -1e-300, 2.0]
    assert safe["count"].tolist() == [-3, 0, 4]
    assert list(safe.columns) == ["target", "value", "count", "'=header"]
    assert frame["target"].tolist() == ["=1+1", "-x", "ok"]  # the input is not modified


def _cells(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [cell for row in csv.reader(handle) for cell in row]


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_every_csv_of_a_report_neutralises_formulas(tmp_path) -> None:
    results = [small_result(target=name, attack=f"{name}!", dataset="@data",
                            generator="+gen") for name in FORMULAS[:4]]
    build_report(results, tmp_path, n_bootstrap=20)
    csvs = sorted(tmp_path.rglob("*.csv"))
    assert {p.name for p in csvs} == {"metrics.csv", "effective_epsilon.csv", "scores.csv"}
    for path in csvs:
        for cell in _cells(path):
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                assert _numeric(cell), f"{path.name}: {cell!r}"  # numbers stay numbers
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    assert sorted(metrics["target"]) == sorted("'" + name for name in FORMULAS[:4])
    assert metrics["auc"].dtype == np.float64
    epsilon = pd.read_csv(tmp_path / "effective_epsilon.csv")
    assert all(t.startswith("'") for t in epsilon["target"])


def test_publish_neutralises_metrics_csv(tmp_path) -> None:
    MIAttackReport([small_result(target="=HYPERLINK(1)")], n_bootstrap=10).publish(tmp_path)
    assert "'=HYPERLINK(1)" in _cells(tmp_path / "metrics.csv")


def test_negative_raw_statistic_and_scores_stay_numbers(tmp_path) -> None:
    result = small_result(raw_statistic=-np.arange(40.0) - 0.5, raw_statistic_name="loss")
    result.scores[0] = -0.5
    result.save(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "scores.csv", newline="", encoding="utf-8")))
    assert rows[0]["score"] == "-0.5" and rows[0]["loss"] == "-0.5"


def test_neutralised_ids_and_raw_name_round_trip(tmp_path) -> None:
    ids = [*FORMULAS, "'=x", "'", "plain", *[f"r{i}" for i in range(40 - len(FORMULAS) - 3)]]
    result = small_result(record_ids=ids, raw_statistic=np.arange(40.0),
                          raw_statistic_name="=stat")
    result.save(tmp_path)
    cells = _cells(tmp_path / "scores.csv")
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")]
    loaded = AttackResult.load(tmp_path)
    assert loaded.record_ids.tolist() == ids
    assert loaded.raw_statistic_name == "=stat"
    np.testing.assert_array_equal(loaded.raw_statistic, result.raw_statistic)


# ------------------------------------------------------------------ colliding names


def test_result_folder_names_are_unique_per_name() -> None:
    long = "x" * 80
    names = ["model v1", "model_v1", "model/v1", "Model_v1", long + "a", long + "b", "..", ""]
    folders = [result_folder_name(n, "loss") for n in names]
    assert len(set(folders)) == len(names)
    assert len(set(map(str.lower, folders))) == len(names)  # case-insensitive file systems
    assert all(f and "/" not in f and not f.startswith(".") and len(f) < 200 for f in folders)
    assert result_folder_name("model v1", "loss").startswith("model_v1-")


def test_build_report_keeps_colliding_targets_apart(tmp_path) -> None:
    results = [small_result(target="model v1"), small_result(target="model_v1", attack="loss")]
    results[1].scores[:] = results[1].scores[::-1]
    build_report(results, tmp_path, n_bootstrap=10)
    loaded = load_results(tmp_path / "results")
    assert sorted(r.target for r in loaded) == ["model v1", "model_v1"]
    by_target = {r.target: r for r in loaded}
    for result in results:
        np.testing.assert_array_equal(by_target[result.target].scores, result.scores)


def test_compare_plots_of_colliding_names_do_not_overwrite(tmp_path) -> None:
    results = [small_result(dataset=d, attack=a) for d in ("data v1", "data_v1")
               for a in ("loss", "lira")]
    paths = MIAttackReport(results, n_bootstrap=10).compare(
        ["dataset", "generator"], "attack", tmp_path)
    assert len(paths) == 2 and len({p.name for p in paths}) == 2


def test_audit_model_keeps_colliding_targets_apart(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    labels = np.r_[np.ones(30, dtype=int), np.zeros(30, dtype=int)]
    first = LogisticRegression().fit(X[:30], y[:30])
    second = LogisticRegression(C=0.01).fit(X[:30], y[:30])
    for name, model in (("model v1", first), ("model_v1", second)):
        privaudit.audit_model(as_target(model, name=name), X, y, labels, attacks=["loss"],
                              results_dir=tmp_path, slices=False)
    loaded = load_results(tmp_path, strict=True)
    assert sorted(r.target for r in loaded) == ["model v1", "model_v1"]


def test_cli_report_skips_the_escaping_result_with_a_warning(tmp_path) -> None:
    from typer.testing import CliRunner

    from privaudit.cli import app

    secret_scores(tmp_path)
    results = tmp_path / "results"
    small_result(target="good").save(results / "good")
    small_result(target="bad").save(results / "bad")
    point_scores_at(results / "bad", "/etc/passwd")
    outcome = CliRunner().invoke(app, ["report", str(results), "--out",
                                       str(tmp_path / "out"), "--n-bootstrap", "10"])
    assert outcome.exit_code == 0, outcome.output
    # The command shows each warning as one line (issue 20), not Python's warning form.
    lines = [line for line in outcome.output.splitlines()
             if line.startswith("DamagedResultWarning:")]
    assert len(lines) == 1 and "'files.scores'" in lines[0]
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [entry["target"] for entry in doc["results"]] == ["good"]
