"""The commands render a study's counted steps as bars, never a line per count (issue 20).

Each study command hands its study the command's progress (:mod:`privaudit._progress`),
so a step the study counts (``progress.task(..., total=600)``) is one bar on a terminal
and one line when it ends in a log, not one message per count. The studies are replaced
by a step of 600 counts spread over about a second and a half, as long steps are.
"""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

import privaudit.cli._app as app_module
from privaudit._progress import as_progress
from privaudit.cli import app
from privaudit.results import AttackResult

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

runner = CliRunner()

STEP = "fitting the shadow models"


def _counted_study(*args, progress=None, **kwargs):
    """A study whose one long step counts 600 units through ``progress``."""
    with as_progress(progress).task(STEP, total=600) as step:
        for _ in range(600):
            time.sleep(0.0025)
            step.advance()
    rng = np.random.default_rng(0)
    return [AttackResult(labels=np.r_[np.ones(50, int), np.zeros(50, int)],
                         scores=rng.normal(size=100), attack="loss", target="model")]


def _patch_studies(monkeypatch):
    import privaudit.studies as studies

    monkeypatch.setattr(studies, "run_demo_parts", lambda only, **kw: _counted_study(**kw))
    monkeypatch.setattr(studies, "run_overfitting_study", _counted_study)
    monkeypatch.setattr(studies, "run_unlearning_study", _counted_study)
    monkeypatch.setattr(studies, "study_tables", lambda results: {"accuracy": []})


COMMANDS = [["demo"], ["study", "overfitting"], ["study", "unlearning"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_counted_step_is_one_line_in_a_log(monkeypatch, tmp_path, command):
    _patch_studies(monkeypatch)
    result = runner.invoke(app, [*command, "--out", str(tmp_path / "r"), "--n-bootstrap",
                                 "10"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if STEP in line]
    assert len(lines) == 1, result.output
    assert f"{STEP}: 600/600 (" in lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_counted_step_is_a_bar_on_a_terminal(monkeypatch, tmp_path, command):
    _patch_studies(monkeypatch)
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100, color_system=None)
    monkeypatch.setattr(app_module, "_console", lambda: terminal)
    result = runner.invoke(app, [*command, "--out", str(tmp_path / "r"), "--n-bootstrap",
                                 "10"])
    assert result.exit_code == 0, result.output
    drawn = screen.getvalue()
    assert "━" in drawn and "/600" in drawn  # a bar with its count while the step runs
    assert drawn.count(f"{STEP}: 600/600 (") == 1  # and one line in the scrollback
