"""``privaudit audit synthetic``: options, configuration file, one-line errors, report."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.synthetic import copying_generator

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

runner = CliRunner()
CHECKS = "exact_matches,ims,dcr,nndr"


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("tables")
    frame = pd.DataFrame({"age": rng.integers(18, 80, 600), "income": rng.lognormal(10, 1, 600),
                          "city": rng.choice(["a", "b", "c", "d"], 600)})
    original, holdout = frame.iloc[:300].reset_index(drop=True), frame.iloc[300:]
    original.to_csv(folder / "o.csv", index=False)
    holdout.to_parquet(folder / "h.parquet", index=False)
    copying_generator(original, 300, copy_fraction=0.5, random_state=0).to_csv(
        folder / "s.csv", index=False)
    (folder / "m.json").write_text(json.dumps({"columns": {
        "age": {"sdtype": "numerical"}, "income": {"sdtype": "numerical"},
        "city": {"sdtype": "categorical"}}}))
    return folder


def test_options_run_the_checks_and_write_the_report(tables, tmp_path):
    result = runner.invoke(app, [
        "audit", "synthetic", "--synthetic", str(tables / "s.csv"), "--original",
        str(tables / "o.csv"), "--holdout", str(tables / "h.parquet"), "--metadata",
        str(tables / "m.json"), "--checks", CHECKS, "-o", str(tmp_path / "rep"),
        "--verbose"])
    assert result.exit_code == 0, result.output
    assert "closeness to the training records" in result.output
    assert "CLOSER than unseen rows" in result.output
    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert [e["metric"] for e in doc["proximity"]] == CHECKS.split(",")
    assert (tmp_path / "rep" / "index.html").is_file()


def test_configuration_file_form(tables, tmp_path):
    (tmp_path / "audit.yaml").write_text(
        f"tables: {{synthetic: {tables / 's.csv'}, original: {tables / 'o.csv'}, "
        f"holdout: {tables / 'h.parquet'}}}\n"
        "checks: [exact_matches, dcr]\ncheck_params: {dcr: {quantile: 0.1}}\n"
        "name: copier\nreport: {out: rep, n_bootstrap: 50}\n")
    result = runner.invoke(app, ["audit", "synthetic", "--config", str(tmp_path / "audit.yaml")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert [(e["target"], e["metric"]) for e in doc["proximity"]] == [
        ("copier", "exact_matches"), ("copier", "dcr")]
    assert doc["proximity"][1]["quantile"] == 0.1


@pytest.mark.parametrize(("args", "message"), [
    (["--synthetic", "S"], "Missing option --original"),
    (["--synthetic", "{t}/s.csv", "--original", "{t}/nope.csv"], "does not exist"),
    (["--synthetic", "{t}/s.csv", "--original", "{t}/o.csv", "--checks", "dcr,bogus"],
     "--checks names 'bogus'"),
    (["--synthetic", "{t}/m.json", "--original", "{t}/o.csv"], "CSV"),
    (["--config", "{t}/o.csv", "--synthetic", "{t}/s.csv"], "not both"),
])
def test_errors_are_one_readable_line(tables, args, message):
    result = runner.invoke(app, ["audit", "synthetic",
                                 *[a.format(t=tables) for a in args]])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_table_with_other_columns_is_refused_naming_it(tables, tmp_path):
    pd.read_csv(tables / "s.csv").drop(columns=["city"]).to_csv(tmp_path / "s.csv",
                                                                 index=False)
    result = runner.invoke(app, ["audit", "synthetic", "--synthetic", str(tmp_path / "s.csv"),
                                 "--original", str(tables / "o.csv")])
    assert result.exit_code != 0 and "missing ['city']" in result.output


def _crafted(tables, folder, kind):
    """A synthetic table written the way issue 19's crafted files were."""
    frame = pd.read_csv(tables / "s.csv")
    path = folder / f"s_{kind}.csv"
    if kind == "index":
        frame.to_csv(path)  # pandas' index: a leading 'Unnamed: 0' column
    elif kind == "semicolon":
        frame.to_csv(path, sep=";", index=False)
    elif kind == "inf":
        frame["income"] = frame["income"].astype(float)
        frame.loc[5, "income"] = np.inf
        frame.to_csv(path, index=False)
    elif kind == "one-row":
        frame.iloc[:1].to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("kind", "checks", "expected"), [
    ("index", "exact_matches", ["s_index.csv", "'Unnamed: 0'", "values 0 to 299",
                                "index=False"]),
    ("semicolon", "exact_matches", ["s_semicolon.csv", "one column", "semicolons"]),
    ("inf", "exact_matches", ["s_inf.csv", "column 'income'", "infinite", "line 7"]),
    ("one-row", "linkability", ["synthetic table has 1 row", "linkability needs at least 10",
                                "n_neighbors"]),
])
def test_crafted_tables_exit_2_with_one_line_naming_file_and_column(tables, tmp_path, kind,
                                                                    checks, expected):
    path = _crafted(tables, tmp_path, kind)
    result = runner.invoke(app, ["audit", "synthetic", "--synthetic", str(path), "--original",
                                 str(tables / "o.csv"), "--holdout", str(tables / "h.parquet"),
                                 "--checks", checks, "-o", str(tmp_path / "rep")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(error) == 1, result.output
    text = " ".join(result.output.split())
    for part in expected:
        assert part in text, (part, result.output)
    assert not (tmp_path / "rep" / "results").exists()  # refused before any work


def _bad_inputs(tables, folder):
    """Issue 19's inputs refused up front: (extra options, parts of the one error line)."""
    frame = pd.read_csv(tables / "s.csv")
    frame.astype({"age": object}).assign(age=lambda x: x.age.where(x.index != 3, "abc")).to_csv(
        folder / "text.csv", index=False)
    frame.assign(city=[[c] for c in frame.city]).to_parquet(folder / "lists.parquet")
    metas = {"banana": {"columns": {"age": {"sdtype": "banana"}}}, "list": [1, 2],
             "agex": {"columns": {"agex": {"sdtype": "numerical"}}},
             "citynum": {"columns": {"city": {"sdtype": "numerical"}}}}
    for name, doc in metas.items():
        (folder / f"{name}.json").write_text(json.dumps(doc))
    (folder / "bad.json").write_text("{bad")
    syn, meta = ["--synthetic", str(tables / "s.csv")], "--metadata"
    return {
        "text": (["--synthetic", str(folder / "text.csv")], ["text.csv", "'age'", "'abc'"]),
        "lists": (["--synthetic", str(folder / "lists.parquet")],
                  ["lists.parquet", "'city'", "holds lists"]),
        "banana": ([*syn, meta, str(folder / "banana.json")], ["--metadata", "banana.json",
                                                               "'age'", "'banana'"]),
        "list": ([*syn, meta, str(folder / "list.json")], ["list.json", "JSON object"]),
        "notjson": ([*syn, meta, str(folder / "bad.json")], ["bad.json", "not readable JSON"]),
        "agex": ([*syn, meta, str(folder / "agex.json")], ["metadata file", "agex.json",
                                                           "'agex'"]),
        "citynum": ([*syn, meta, str(folder / "citynum.json")], ["s.csv", "'city'",
                                                                 "citynum.json"]),
        "checks-empty": ([*syn, "--checks", ","], ["--checks names no check"]),
        "checks-twice": ([*syn, "--checks", "dcr,dcr"], ["--checks", "['dcr']", "once"]),
        "holdout-is-original": ([*syn, "--holdout", str(tables / "o.csv")],
                                ["--holdout and --original", "o.csv"]),
        "folder": (["--synthetic", str(tables)], ["--synthetic", "is a folder"]),
    }


@pytest.mark.parametrize("kind", ["text", "lists", "banana", "list", "notjson", "agex",
                                  "citynum", "checks-empty", "checks-twice",
                                  "holdout-is-original", "folder"])
def test_bad_inputs_are_refused_up_front_naming_option_file_and_column(tables, tmp_path, kind):
    args, expected = _bad_inputs(tables, tmp_path)[kind]
    result = runner.invoke(app, ["audit", "synthetic", "--original", str(tables / "o.csv"),
                                 *args, "-o", str(tmp_path / "rep")])
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(error) == 1 and "Traceback" not in result.output, result.output
    text = " ".join(result.output.split())
    assert "parameter of" not in text and "MixedTypeEncoder" not in text, text
    for part in expected:
        assert part in text, (part, result.output)
    assert not (tmp_path / "rep").exists()  # refused before any work


def test_a_csv_cell_over_128_kib_is_read(tables, tmp_path):
    frame = pd.read_csv(tables / "s.csv")
    frame["city"] = frame["city"].astype(object)
    frame.loc[3, "city"] = "x" * 200_000  # over the csv module's 131,072-character limit
    frame.to_csv(tmp_path / "s.csv", index=False)
    result = runner.invoke(app, ["audit", "synthetic", "--synthetic", str(tmp_path / "s.csv"),
                                 "--original", str(tables / "o.csv"), "--holdout",
                                 str(tables / "h.parquet"), "--checks", "exact_matches",
                                 "-o", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert [e["metric"] for e in doc["proximity"]] == ["exact_matches"]


def test_the_metadata_file_is_refused_before_any_table_is_read(tables, tmp_path):
    result = runner.invoke(app, ["audit", "synthetic", "--synthetic", str(tmp_path / "no.csv"),
                                 "--original", str(tables / "o.csv"), "--metadata",
                                 str(tmp_path), "-o", str(tmp_path / "rep")])
    assert result.exit_code == 2, result.output
    assert "--metadata" in result.output and "is a folder" in result.output


def test_terminal_tables_read_the_verdict_as_the_report_does():
    # The terminal summary and the HTML report share one reading: overlapping intervals are
    # undecided (not "no holdout"), and a distinguisher below chance is not "hard to tell
    # apart".
    from rich.console import Console

    from privaudit.cli._app import _fidelity_table, _proximity_table

    estimate = {"value": 0.1, "low": 0.0, "high": 0.2}
    entry = {"target": "syn", "metric": "dcr", "statistic": "quantile", "quantile": 0.05,
             "value": estimate, "baseline_value": estimate, "passed": None,
             "verdict": "overlap"}
    console = Console(width=200, record=True)
    console.print(_proximity_table([entry]))
    console.print(_fidelity_table([{"target": "syn", "metrics": {"auc": {
        "value": 0.36, "low": 0.27, "high": 0.44}}}]))
    text = console.export_text()
    assert "undecided (intervals overlap)" in text and "no holdout" not in text
    assert "below chance" in text and "hard to tell apart" not in text
