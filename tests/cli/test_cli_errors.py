"""The CLI's error boundary and its checks of data files (issue 6, section 4).

Every mistake a user can fix prints ONE line naming the file, the column or the key, with
exit code 2 and no traceback; `privaudit --debug` shows the traceback. The files are
crafted in tmp_path.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

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
FEATURES = ["f0", "f1", "f2"]


def _records(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)).round(6), columns=FEATURES)
    frame["y"] = (frame["f0"] + rng.normal(scale=0.5, size=n) > 0).astype(int)
    return frame


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    train = _records(40, 0)
    model = LogisticRegression().fit(train[FEATURES], train["y"])
    save_sklearn_model(model, folder / "model.skops")
    return folder / "model.skops"


@pytest.fixture
def audit(tmp_path, model_file):
    """A valid audit in tmp_path: write_config(**changes) returns the config's path."""
    (tmp_path / "model.skops").write_bytes(model_file.read_bytes())
    data = _records(40, 1)
    data["member"] = np.r_[np.ones(20, int), np.zeros(20, int)]
    data["id"] = [f"r{i}" for i in range(40)]
    data.to_csv(tmp_path / "data.csv", index=False)
    _records(30, 2).to_csv(tmp_path / "pop.csv", index=False)

    def write_config(**sections):
        config = {
            "target": {"path": "model.skops"},
            "data": {"path": "data.csv", "label_column": "y", "membership_column": "member",
                     "id_column": "id"},
            "population": {"path": "pop.csv"},
            "attacks": ["loss"],
            "report": {"out": "report", "n_bootstrap": 0},
        }
        config.update(sections)
        (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
        return tmp_path / "audit.yaml"

    write_config.folder = tmp_path
    return write_config


def _run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def _one_line_error(result, *needles: str) -> str:
    """Exit code 2, one line of output, no traceback, every needle in that line."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _audit(config):
    return _run("audit", "model", "--config", config)


def test_valid_audit_runs(audit):
    result = _audit(audit())
    assert result.exit_code == 0, result.output


# --- Data files ---------------------------------------------------------------------------


def test_empty_csv(audit):
    (audit.folder / "data.csv").write_text("")
    _one_line_error(_audit(audit()), "data.csv", "is empty")


def test_header_only_csv(audit):
    (audit.folder / "data.csv").write_text("f0,f1,f2,y,member,id\n")
    _one_line_error(_audit(audit()), "data.csv", "no rows")


def test_binary_csv(audit, model_file):
    (audit.folder / "data.csv").write_bytes(model_file.read_bytes())  # a zip archive
    _one_line_error(_audit(audit()), "data.csv")


def test_garbage_parquet(audit):
    (audit.folder / "pop.parquet").write_bytes(b"not parquet at all")
    config = audit(population={"path": "pop.parquet"})
    _one_line_error(_audit(config), "pop.parquet", "Parquet")


def test_missing_data_file(audit):
    (audit.folder / "data.csv").unlink()
    _one_line_error(_audit(audit()), "data.path", "data.csv")


@pytest.mark.parametrize(
    ("cell", "words"),
    [("nan", ["missing values", "line 5"]), ("inf", ["infinite"]), ("abc", ["text", "'abc'"])],
)
def test_bad_feature_cell_names_file_column_and_line(audit, cell, words):
    data = pd.read_csv(audit.folder / "data.csv").astype({"f1": object})
    data.loc[3, "f1"] = cell
    data.to_csv(audit.folder / "data.csv", index=False)
    _one_line_error(_audit(audit()), "'f1'", "data.csv", *words)


def test_missing_values_pass_when_the_model_takes_them(audit):
    from sklearn.ensemble import RandomForestClassifier

    train = _records(40, 0)
    train.loc[0, "f1"] = np.nan  # trees split on missing values (scikit-learn >= 1.4)
    model = RandomForestClassifier(n_estimators=3, random_state=0)
    save_sklearn_model(model.fit(train[FEATURES], train["y"]), audit.folder / "model.skops")
    data = pd.read_csv(audit.folder / "data.csv")
    data.loc[3, "f1"] = np.nan
    data.to_csv(audit.folder / "data.csv", index=False)
    result = _audit(audit())
    assert result.exit_code == 0, result.output


def test_nan_label_in_the_population(audit):
    pop = pd.read_csv(audit.folder / "pop.csv")
    pop.loc[2, "y"] = np.nan
    pop.to_csv(audit.folder / "pop.csv", index=False)
    _one_line_error(_audit(audit()), "pop.csv", "label column 'y'", "line 4")


def test_label_the_model_does_not_know(audit):
    pop = pd.read_csv(audit.folder / "pop.csv")
    pop.loc[1, "y"] = 7
    pop.to_csv(audit.folder / "pop.csv", index=False)
    _one_line_error(_audit(audit()), "pop.csv", "label column 'y'", "[7]", "line 3")


def test_population_with_fewer_fields_names_the_column(audit):
    lines = (audit.folder / "pop.csv").read_text().splitlines()
    lines[3] = ",".join(lines[3].split(",")[:2])  # a row that stops after two fields
    (audit.folder / "pop.csv").write_text("\n".join(lines) + "\n")
    line = _one_line_error(_audit(audit()), "pop.csv", "Line 4", "2 field(s)", "'f2'")
    assert "Input X contains NaN" not in line


def test_population_without_a_feature_column(audit):
    pop = pd.read_csv(audit.folder / "pop.csv").drop(columns="f2")
    pop.to_csv(audit.folder / "pop.csv", index=False)
    _one_line_error(_audit(audit()), "pop.csv", "no column 'f2'", "feature column of the data")


def test_missing_id_column_is_named_as_the_id_column(audit):
    data = audit()
    config = yaml.safe_load(data.read_text())
    config["data"]["id_column"] = "patient"
    data.write_text(yaml.safe_dump(config))
    line = _one_line_error(_audit(data), "data.csv", "'patient'", "data.id_column")
    assert "feature" not in line


def test_duplicated_ids_are_named(audit):
    data = pd.read_csv(audit.folder / "data.csv")
    data.loc[5, "id"] = "r1"
    data.to_csv(audit.folder / "data.csv", index=False)
    _one_line_error(_audit(audit()), "data.csv", "'id'", "'r1'", "unique")


def test_population_sharing_ids_with_the_data(audit):
    pop = pd.read_csv(audit.folder / "pop.csv")
    pop["id"] = [f"p{i}" for i in range(len(pop))]
    pop.loc[0, "id"] = "r3"
    pop.to_csv(audit.folder / "pop.csv", index=False)
    _one_line_error(_audit(audit()), "pop.csv", "shares 1 id", "'r3'")


def test_membership_column_outside_0_1(audit):
    data = pd.read_csv(audit.folder / "data.csv")
    data.loc[7, "member"] = 2
    data.to_csv(audit.folder / "data.csv", index=False)
    _one_line_error(_audit(audit()), "membership column 'member'", "data.csv", "[2]", "line 9")


def test_repeated_csv_column_names(audit):
    text = (audit.folder / "data.csv").read_text().replace("f0,f1,f2", "f0,f1,f1", 1)
    (audit.folder / "data.csv").write_text(text)
    _one_line_error(_audit(audit()), "data.csv", "'f1'")


def test_feature_subset_overlap_is_explained(audit):
    # Two different people can share the features used: say so, naming them, rather than
    # calling them the same records.
    data = pd.read_csv(audit.folder / "data.csv")
    pop = pd.read_csv(audit.folder / "pop.csv")
    pop.loc[4, "f0"] = data.loc[2, "f0"]
    pop.loc[4, "y"] = data.loc[2, "y"]
    pop.to_csv(audit.folder / "pop.csv", index=False)
    config = audit()
    raw = yaml.safe_load(config.read_text())
    raw["data"]["feature_columns"] = ["f0"]
    config.write_text(yaml.safe_dump(raw))
    # A model of f0 alone: its columns match data.feature_columns.
    save_sklearn_model(LogisticRegression().fit(data[["f0"]], data["y"]),
                       audit.folder / "model.skops")
    _one_line_error(_audit(config), "pop.csv", "data.csv", "repeats 1 audited record",
                    "['f0']", "data line 4 = population line 6", "Only 1 of the data's 3")


# --- Model file, output folders, configuration ---------------------------------------------


def test_pickle_renamed_skops(audit):
    (audit.folder / "model.skops").write_bytes(pickle.dumps({"not": "a model"}))
    _one_line_error(_audit(audit()), "model.skops", "target.path", "skops file")


@pytest.mark.parametrize("key", ["cache_dir", "report"])
def test_output_folder_pointing_at_a_file(audit, key):
    (audit.folder / "taken.txt").write_text("a file")
    changes = {"cache_dir": "taken.txt"} if key == "cache_dir" else {
        "report": {"out": "taken.txt"}}
    _one_line_error(_audit(audit(**changes)),
                    "cache_dir" if key == "cache_dir" else "report.out", "taken.txt")


def test_out_option_pointing_at_a_file(audit):
    (audit.folder / "taken.txt").write_text("a file")
    _one_line_error(_run("audit", "model", "--config", audit(), "--out",
                         audit.folder / "taken.txt"), "--out", "taken.txt")


def test_yaml_syntax_error(audit):
    config = audit()
    config.write_text("target: {path: model.skops\n")
    _one_line_error(_audit(config), "audit.yaml", "not valid YAML", "line")


def test_unknown_key(audit):
    _one_line_error(_audit(audit(executor={"njobs": 1})), "'executor.njobs'", "audit.yaml")


def test_n_jobs_zero(audit):
    _one_line_error(_audit(audit(executor={"n_jobs": 0})), "'executor.n_jobs'")


def test_missing_configuration(tmp_path):
    _one_line_error(_audit(tmp_path / "nope.yaml"), "nope.yaml", "does not exist")


def test_report_without_results(tmp_path):
    _one_line_error(_run("report", tmp_path), "no saved results")


def test_report_out_pointing_at_a_file(tmp_path):
    (tmp_path / "taken").write_text("a file")
    _one_line_error(_run("report", tmp_path, "--out", tmp_path / "taken"), "--out", "taken")


@pytest.mark.parametrize("option", [["--n-jobs", "0"], ["--seed", "-1"],
                                    ["--n-reference-models", "0"]])
def test_demo_bad_options_fail_before_any_work(tmp_path, option):
    result = _run("demo", "--out", tmp_path / "demo", *option)
    _one_line_error(result, option[0])
    assert not (tmp_path / "demo").exists()


# --- --debug -----------------------------------------------------------------------------


def test_debug_raises_the_error_itself(audit):
    (audit.folder / "data.csv").write_text("")
    result = _run("--debug", "audit", "model", "--config", audit())
    assert result.exit_code == 1
    assert isinstance(result.exception, ValueError)
    assert "is empty" in str(result.exception)


def test_debug_prints_the_traceback_in_a_real_process(tmp_path):
    # A missing configuration fails before scikit-learn is imported: two quick processes.
    command = [sys.executable, "-c", "from privaudit.cli import main; main()", "audit",
               "model", "--config", str(tmp_path / "missing.yaml")]
    plain = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.strip().splitlines() == [
        f"Error: The audit configuration {tmp_path / 'missing.yaml'} does not exist."]
    debug = subprocess.run([*command[:3], "--debug", *command[3:]], capture_output=True,
                           text=True, timeout=600)
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr and "ConfigError" in debug.stderr
