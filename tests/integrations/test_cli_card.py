"""``privaudit card`` and ``privaudit log``: files written, bad input one line with exit 2.

The commands are registered by the application (cli/_app.py); here they run under the
same error boundary, in a Typer app of their own.
"""

from __future__ import annotations

import pytest
import typer
import yaml
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


def test_log_reaches_an_mlflow_store(report_dir, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    done = runner.invoke(app, ["log", str(report_dir), "--mlflow", uri])
    assert done.exit_code == 0, done.output
    run_id = done.output.strip().rsplit(" ", 1)[-1]
    assert MlflowClient(uri).get_run(run_id).data.tags["privaudit.verdict"]


@pytest.mark.parametrize(("args", "message"), [
    (["card", "{missing}"], "results folder"),
    (["card", "{report}", "--out", "{report}"], "--out"),
    (["card", "{report}", "--n-bootstrap", "-1"], "--n-bootstrap"),
    (["log", "{report}"], "--mlflow URI, --wandb PROJECT"),
    (["log", "{report}", "--mlflow", "file:{blocker}/mlruns"], "--mlflow option of privaudit log"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, report_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    args = [a.format(missing=tmp_path / "missing", report=report_dir, blocker=blocker)
            for a in args]
    done = runner.invoke(app, args)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]
