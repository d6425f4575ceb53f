"""``privaudit card`` and ``privaudit log``: files written, bad input one line with exit 2.

The commands are registered by the application (cli/_app.py); here they run under the
same error boundary, in a Typer app of their own.
"""

from __future__ import annotations

import pytest
import typer
import yaml
from integration_data import N_BOOTSTRAP, membership
from typer.testing import CliRunner

from privaudit.cli._app import _ErrorBoundary
from privaudit.cli._card import card_command, log_command

app = typer.Typer(cls=_ErrorBoundary)
app.command("card")(card_command)
app.command("log")(log_command)
runner = CliRunner()


def test_card_writes_the_section(report_dir, tmp_path):
    out = tmp_path / "privacy.md"
    done = runner.invoke(app, ["card", str(report_dir), "--out", str(out),
                               "--claimed-epsilon", "2"])
    assert done.exit_code == 0, done.output
    text = out.read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["model-index"][0]["name"] == "toy <audit>"
    assert "### Limits of this audit" in text and "| 2 |" in text


def test_log_reaches_an_mlflow_store_with_the_report_folders_own_settings(
        report_dir, tmp_path, monkeypatch):
    """No --n-bootstrap: the folder's own (its results.json), the settings of its numbers."""
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    done = runner.invoke(app, ["log", str(report_dir), "--mlflow", uri])
    assert done.exit_code == 0, done.output
    run = MlflowClient(uri).get_run(done.output.strip().rsplit(" ", 1)[-1])
    assert run.data.tags["privaudit.verdict"]
    assert run.data.params["privaudit.n_bootstrap"] == str(N_BOOTSTRAP)


def test_saved_results_default_to_1000_resamples(tmp_path, monkeypatch):
    """A folder of saved results records no settings: --n-bootstrap's default, 1000."""
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    from privaudit.report import AuditReport

    AuditReport([membership("m", 1.0, seed=0, n=20)]).save(tmp_path / "saved")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    done = runner.invoke(app, ["log", str(tmp_path / "saved"), "--mlflow", uri])
    assert done.exit_code == 0, done.output
    params = MlflowClient(uri).get_run(done.output.strip().rsplit(" ", 1)[-1]).data.params
    assert params["privaudit.n_bootstrap"] == "1000"


@pytest.mark.parametrize(("args", "message"), [
    (["card", "{missing}"], "results folder"),
    (["card", "{report}", "--out", "{report}"], "--out"),
    (["card", "{report}", "--n-bootstrap", "-1"], "--n-bootstrap"),
    (["card", "{report}", "--out", "{out}", "--n-bootstrap", "7"],
     "--n-bootstrap option of privaudit card must be the report folder's own "
     f"({N_BOOTSTRAP})"),
    (["card", "{report}", "--out", "{out}", "--claimed-epsilon", "-1"],
     "--claimed-epsilon option of privaudit card"),
    (["card", "{report}", "--out", "{out}", "--claimed-epsilon", "nan"],
     "--claimed-epsilon option of privaudit card"),
    (["card", "{report}", "--out", "{out}", "--claimed-epsilon", "inf"],
     "--claimed-epsilon option of privaudit card"),
    (["log", "{report}"], "--mlflow URI, --wandb PROJECT"),
    (["log", "{report}", "--mlflow", "file:{blocker}/mlruns"], "--mlflow option of privaudit log"),
    (["log", "{report}", "--mlflow", "file:{store}", "--n-bootstrap", "7"],
     "--n-bootstrap option of privaudit log must be the report folder's own "
     f"({N_BOOTSTRAP})"),
    (["log", "{report}", "--mlflow", "file:{store}", "--experiment", ""],
     "--experiment option of privaudit log"),
    (["log", "{report}", "--wandb", "proj/with:bad?chars"], "--wandb option of privaudit log"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, report_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_MODE", "offline")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    args = [a.format(missing=tmp_path / "missing", report=report_dir, blocker=blocker,
                     out=tmp_path / "card.md", store=tmp_path / "mlruns") for a in args]
    done = runner.invoke(app, args)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]
    assert "log in" not in lines[0] and "tracking_uri" not in lines[0]
    assert not (tmp_path / "card.md").exists()
