"""Issue 19, the red team's cases on ``audit model`` and ``report``: one line, exit 2.

Each input the user can get wrong is refused before any work, naming the file, the
column, the key or the option, and what was expected; nothing is written.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.linear_model import LogisticRegression
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.targets import save_sklearn_model

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

runner = CliRunner()


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """A logistic regression fitted on columns f0, f1 (with their names)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 2)), columns=["f0", "f1"])
    path = tmp_path_factory.mktemp("model") / "model.skops"
    save_sklearn_model(LogisticRegression().fit(X, (X.f0 > 0).astype(int)), path)
    return path


def _audit(folder, model_file, data: pd.DataFrame, name: str = "data.csv", **config):
    """An ``audit model`` configuration in ``folder`` on ``data``; its command line."""
    rng = np.random.default_rng(1)
    pop = pd.DataFrame(rng.normal(size=(30, 2)), columns=["f0", "f1"]).assign(y=1)
    pop.to_csv(folder / "pop.csv", index=False)
    if name.endswith(".parquet"):
        data.to_parquet(folder / name, index=False)
    else:
        data.to_csv(folder / name, index=False)
    config = {"target": {"path": str(model_file)},
              "data": {"path": name, "label_column": "y", "membership_column": "member",
                       "id_column": "id"},
              "population": {"path": "pop.csv"}, "report": {"out": "report"}, **config}
    (folder / "audit.yaml").write_text(yaml.safe_dump(config))
    return ["audit", "model", "--config", str(folder / "audit.yaml")]


def _data(n: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(rng.normal(size=(n, 2)), columns=["f0", "f1"])
    return frame.assign(y=(frame.f0 > 0).astype(int), member=np.arange(n) % 2,
                        id=[f"r{i}" for i in range(n)])


def _refused(argv: list[str], *words: str) -> str:
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _saved_result(folder):
    """A result folder as the report reads it (only its name and result.json matter)."""
    result = folder / "results" / "model__loss"
    result.mkdir(parents=True)
    (result / "result.json").write_text(json.dumps({"truncated": "{"})[:10])
    return folder


# ------------------------------------------------------------------ report's folders

def test_report_of_a_missing_folder_says_it_does_not_exist(tmp_path):
    _refused(["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r")],
             "does not exist", "nope")
    assert not (tmp_path / "r").exists()


def test_report_of_damaged_results_only_says_they_were_skipped(tmp_path):
    source = _saved_result(tmp_path / "audit")
    _refused(["report", str(source / "results"), "--out", str(tmp_path / "r")],
             "1 saved result(s) skipped as damaged", "model__loss")
    assert not (tmp_path / "r").exists()


def test_report_out_inside_its_input_is_refused(tmp_path):
    source = _saved_result(tmp_path / "audit")
    for out in (source / "results", source / "results" / "again", source / "x"):
        folder = source if out.name == "x" else source / "results"
        _refused(["report", str(folder), "--out", str(out)], "--out", str(folder))
    assert not (source / "x").exists() and not (source / "results" / "again").exists()


def test_report_huge_n_bootstrap_is_refused(tmp_path):
    source = _saved_result(tmp_path / "audit")
    _refused(["report", str(source), "--out", str(tmp_path / "r"), "--n-bootstrap",
              "1000000000"], "--n-bootstrap", "at most 100,000")


# ------------------------------------------------------------------ audit model's data

@pytest.mark.parametrize("rows", [slice(None), slice(0, 1)])
def test_one_membership_class_is_refused(tmp_path, model_file, rows):
    data = _data().assign(member=1).iloc[rows]
    _refused(_audit(tmp_path, model_file, data), "'member'", "data.membership_column",
             "data.csv", "both members (1) and non-members (0)", "only 1")
    assert not (tmp_path / "report").exists()


def test_latin1_csv_is_said_not_utf8_with_its_line(tmp_path, model_file):
    argv = _audit(tmp_path, model_file, _data())
    path = tmp_path / "data.csv"
    path.write_bytes(path.read_bytes().replace(b",r1\n", b",r\xe91\n"))
    _refused(argv, "data.csv", "not UTF-8", "line 3", "Re-save it as UTF-8")
    assert not (tmp_path / "report").exists()


def test_binary_csv_is_still_said_binary(tmp_path, model_file):
    argv = _audit(tmp_path, model_file, _data())
    (tmp_path / "data.csv").write_bytes(b"f0,f1\x00\xff\xfe\n")
    _refused(argv, "data.csv", "binary content")


def test_parquet_list_column_is_named(tmp_path, model_file):
    data = _data().assign(f1=lambda x: [[v, v] for v in x.f1])
    _refused(_audit(tmp_path, model_file, data, "data.parquet"), "'f1'", "data.parquet",
             "holds lists", "flat columns")
    assert not (tmp_path / "report").exists()


# ------------------------------------------------------------------ the model's columns

def test_sklearn_model_columns_missing_or_renamed_are_named(tmp_path, model_file):
    data = _data().rename(columns={"f1": "f_one"})
    _refused(_audit(tmp_path, model_file, data), "data.csv", "missing from the file ['f1']",
             "'f_one'")
    assert not (tmp_path / "report").exists()


def test_sklearn_model_columns_in_another_order_are_selected_by_name(tmp_path, model_file):
    from privaudit.cli._config import load_audit_config
    from privaudit.cli._datafiles import load_records
    from privaudit.targets import as_target, load_sklearn_model

    data = _data()[["f1", "y", "member", "id", "f0"]]
    _audit(tmp_path, model_file, data)
    cfg = load_audit_config(tmp_path / "audit.yaml")
    target = as_target(load_sklearn_model(model_file))
    (X, *_), (X_pop, _) = load_records(cfg, target)
    assert list(X.columns) == list(X_pop.columns) == ["f0", "f1"]


def test_sklearn_model_without_names_compares_counts(tmp_path):
    rng = np.random.default_rng(0)
    model = LogisticRegression().fit(rng.normal(size=(20, 3)), np.arange(20) % 2)
    save_sklearn_model(model, tmp_path / "unnamed.skops")
    _refused(_audit(tmp_path, tmp_path / "unnamed.skops", _data()), "data.csv",
             "2 feature column(s)", "takes 3")


def test_torch_model_given_too_few_columns_is_refused_before_any_work(tmp_path):
    import torch
    from safetensors.torch import save_file

    (tmp_path / "net.py").write_text(
        "import torch\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(3, 2))\n")
    torch.manual_seed(0)
    save_file(torch.nn.Sequential(torch.nn.Linear(3, 2)).state_dict(),
              str(tmp_path / "net.safetensors"))
    argv = _audit(tmp_path, tmp_path / "net.safetensors", _data())
    config = yaml.safe_load((tmp_path / "audit.yaml").read_text())
    config["target"].update(type="torch", factory="net:build")
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
    _refused(argv, "data.csv", "2 feature column(s)", "net:build takes 3")
    assert not (tmp_path / "report").exists()


def test_population_too_small_for_reference_models_names_the_file(tmp_path, model_file):
    argv = _audit(tmp_path, model_file, _data(), attacks=["lira-offline"],
                  reference={"n_models": 2})
    pd.read_csv(tmp_path / "pop.csv").iloc[:1].to_csv(tmp_path / "pop.csv", index=False)
    line = _refused(argv, "pop.csv", "population.path", "1 row(s)", "at least 4 rows")
    assert "ReferencePool" not in line and "parameter" not in line
    assert not (tmp_path / "report").exists()
