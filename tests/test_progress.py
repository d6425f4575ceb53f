"""Progress a user can see: callbacks, plain log lines off a terminal, bars on a terminal.

The reference pool reports each model made (cached ones counted from the start), through
``ReferencePool.fit``, ``collect_reference_outputs`` and ``audit_model``; the CLI prints no
control character off a terminal and draws a bar on one.
"""

from __future__ import annotations

import io
import re
import sys
import types

import numpy as np
import pytest
import yaml
from rich.console import Console
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

import privaudit.training._pool as pool_module
from privaudit._progress import (
    CallbackProgress,
    LogProgress,
    NotebookProgress,
    Progress,
    RichProgress,
    as_progress,
    console_progress,
    in_notebook,
)
from privaudit.exceptions import PrivauditWarning
from privaudit.training import ReferencePool

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # any control character but \t and \n
COUNT = re.compile(r"training reference models(?: \((\d+) found in the cache\))?: (\d+)/(\d+)")


def _data(n: int = 120):
    X, y = load_breast_cancer(return_X_y=True)
    return X[:n] / X[:n].max(axis=0), y[:n]


def _pool(tmp_path=None, n_models: int = 3) -> ReferencePool:
    return ReferencePool(LogisticRegression(max_iter=50), n_models, random_state=0,
                         cache_dir=None if tmp_path is None else tmp_path / "cache")


def proba(model, X, y):
    return model.predict_proba(X)


# ------------------------------------------------------------------ the abstraction


def test_callback_gets_counts_throttled_and_always_the_last():
    messages: list[str] = []
    progress = CallbackProgress(messages.append, min_interval=3600)
    with progress.task("training reference models", total=100) as step:
        for _ in range(100):
            step.advance()
    # The first count at once, then nothing for an hour, but the end always.
    assert messages == ["training reference models: 1/100", "training reference models: 100/100"]


def test_callback_sends_the_last_count_when_the_total_is_unknown():
    messages: list[str] = []
    with CallbackProgress(messages.append, min_interval=3600).task("scoring") as step:
        step.advance(5)
        step.advance(7)
    assert messages == ["scoring: 5", "scoring: 12"]


def test_delayed_step_stays_silent_when_quick():
    messages: list[str] = []
    lines: list[str] = []
    for progress in (CallbackProgress(messages.append), LogProgress(lines.append)):
        with progress.task("querying reference models", total=3, delay=60) as step:
            step.advance(3)
    assert messages == [] and lines == []


def test_as_progress_normalises_its_argument():
    assert type(as_progress(None)) is Progress
    messages: list[str] = []
    wrapped = as_progress(messages.append)
    assert isinstance(wrapped, CallbackProgress)
    wrapped("hello")  # a Progress is itself a callable(str)
    assert messages == ["hello"]
    log = LogProgress(lambda line: None)
    assert as_progress(log) is log
    with pytest.raises(TypeError, match=r"The 'progress' parameter of f must be None, a "
                                        r"bool, a callable\(str\) or a Progress. Got 3 "
                                        r"instead."):
        as_progress(3, func="f")
    assert type(as_progress(False)) is Progress  # False: silent, as None


def test_log_lines_are_single_lines_without_control_characters():
    lines: list[str] = []
    progress = LogProgress(lines.append, timestamps=False)
    progress.message("two\nlines and a\rcarriage return")
    assert lines == ["two lines and a carriage return"]


# ------------------------------------------------------------------ the reference pool


def test_pool_reports_each_model_to_a_callback(tmp_path):
    X, y = _data()
    messages: list[str] = []
    pool = _pool(tmp_path).fit(X, y, progress=CallbackProgress(messages.append,
                                                                min_interval=0))
    counts = [COUNT.fullmatch(m) for m in messages]
    assert all(counts), messages
    assert [int(c.group(2)) for c in counts] == [1, 2, 3]
    assert {c.group(3) for c in counts} == {"3"} and pool.n_trained_ == 3

    # A rerun finds the three models in the cache and says so at once.
    messages.clear()
    again = _pool(tmp_path).fit(X, y, progress=messages.append)
    assert again.n_trained_ == 0
    assert messages == ["training reference models (3 found in the cache): 3/3"]


def test_pool_counts_cached_models_from_the_start(tmp_path):
    X, y = _data()
    pool = _pool(tmp_path).fit(X, y)
    pool._cache.model_path(1).unlink()  # one model lost: two remain cached
    messages: list[str] = []
    with pytest.warns(PrivauditWarning, match="no model file"):
        again = _pool(tmp_path).fit(X, y, progress=CallbackProgress(messages.append,
                                                                     min_interval=0))
    assert again.n_trained_ == 1
    assert messages == ["training reference models (2 found in the cache): 2/3",
                        "training reference models (2 found in the cache): 3/3"]


def test_pool_without_cache_reports_through_a_plain_callable():
    X, y = _data()
    messages: list[str] = []
    _pool().fit(X, y, progress=messages.append)
    assert messages[0] == "training reference models: 1/3"
    assert messages[-1] == "training reference models: 3/3"


def test_pool_map_reports_only_when_long(monkeypatch):
    X, y = _data()
    pool = _pool().fit(X, y)
    messages: list[str] = []
    pool.map(proba, X, y, progress=messages.append)
    assert messages == []  # quick: silent
    monkeypatch.setattr(pool_module, "MAP_PROGRESS_DELAY", 0.0)
    pool.map(proba, X, y, progress=CallbackProgress(messages.append, min_interval=0))
    assert messages == [f"querying reference models: {i}/3" for i in (1, 2, 3)]


def test_pool_refuses_a_progress_that_is_not_callable():
    X, y = _data()
    with pytest.raises(TypeError, match=r"The 'progress' parameter of ReferencePool\.fit"):
        _pool().fit(X, y, progress="yes")


def test_collect_reference_outputs_passes_progress(tmp_path):
    from privaudit.attacks.membership import collect_reference_outputs

    X, y = _data()
    messages: list[str] = []
    ref = collect_reference_outputs(
        LogisticRegression(max_iter=50), X[:60], y[:60], X_population=X[60:],
        y_population=y[60:], n_models=3, mode="offline", random_state=0,
        progress=CallbackProgress(messages.append, min_interval=0),
    )
    assert ref.n_models == 3
    assert [m for m in messages if COUNT.fullmatch(m)] == [
        f"training reference models: {i}/3" for i in (1, 2, 3)]
    with pytest.raises(TypeError, match="The 'progress' parameter of collect_reference_outputs"):
        collect_reference_outputs(LogisticRegression(), X[:60], y[:60], n_models=3,
                                  progress=object())


# ------------------------------------------------------------------ on and off a terminal


def test_off_a_terminal_one_plain_line_per_step(tmp_path, capsys):
    X, y = _data()
    progress = console_progress(Console(stderr=True))  # capsys: stderr is not a terminal
    assert isinstance(progress, LogProgress)
    with progress:
        progress.message("training the pool")
        _pool(tmp_path).fit(X, y, progress=progress)
        _pool(tmp_path).fit(X, y, progress=progress)
    err = capsys.readouterr().err
    assert not CONTROL.search(err), repr(err)
    lines = err.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].endswith("] training the pool")
    assert re.search(r"\] training reference models: 3/3 \(\d+\.\d s\)$", lines[1])
    assert "(3 found in the cache): 3/3" in lines[2]


def test_on_a_terminal_a_bar_is_drawn(tmp_path):
    X, y = _data()
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    progress = console_progress(console)
    assert isinstance(progress, RichProgress)
    with progress:
        progress.message("training the pool")
        _pool(tmp_path, n_models=4).fit(X, y, progress=progress)
    text = out.getvalue()
    assert "\x1b[" in text  # drawn with terminal control sequences
    assert "━" in text  # the bar
    assert "training reference models" in text and "4/4" in text
    assert "training the pool" in text


def test_rich_progress_starts_on_first_use_and_stops_on_close():
    out = io.StringIO()
    progress = RichProgress(Console(file=out, force_terminal=True, width=80))
    with progress.task("steps", total=2) as step:
        step.advance(2)
    progress.close()
    progress.close()  # idempotent
    assert "steps: 2/2" in out.getvalue()


# ------------------------------------------------------------------ in a notebook


class ZMQInteractiveShell:
    """Stands for ipykernel's shell: detection goes by the class name, not an import."""


class ColabShell(ZMQInteractiveShell):
    """A kernel's shell that subclasses it (Google Colab's does)."""


class TerminalInteractiveShell:
    """The terminal IPython: not a notebook."""


def _ipython(monkeypatch, shell) -> None:
    """A fake IPython module whose get_ipython() returns ``shell`` (None: plain Python)."""
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)


@pytest.mark.parametrize("shell,expected", [
    (ZMQInteractiveShell(), True), (ColabShell(), True),
    (TerminalInteractiveShell(), False), (None, False),
])
def test_a_notebook_is_told_by_its_shell(monkeypatch, shell, expected):
    _ipython(monkeypatch, shell)
    assert in_notebook() is expected


def test_without_ipython_loaded_it_is_no_notebook_and_ipython_stays_unloaded(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert in_notebook() is False
    assert "IPython" not in sys.modules  # detected without importing it


def test_progress_true_shows_what_suits_the_place(monkeypatch, capsys):
    _ipython(monkeypatch, ZMQInteractiveShell())
    assert isinstance(as_progress(True), NotebookProgress)
    _ipython(monkeypatch, TerminalInteractiveShell())
    assert isinstance(as_progress(True), LogProgress)  # capsys: stderr is no terminal
    _ipython(monkeypatch, None)
    progress = as_progress(True)
    progress.message("plain python")
    assert capsys.readouterr().err.strip().endswith("] plain python")


class _Outputs:
    """IPython's display, recorded: each display and each update of its handle."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def display(self, obj, display_id=False):
        assert display_id is True
        self.shown.append(obj.data)
        return types.SimpleNamespace(update=lambda new: self.shown.append(new.data))


@pytest.fixture()
def outputs(monkeypatch) -> _Outputs:
    import IPython.display

    recorder = _Outputs()
    monkeypatch.setattr(IPython.display, "display", recorder.display)
    return recorder


def test_notebook_bars_update_one_output_and_escape_names(outputs):
    progress = NotebookProgress(min_interval=3600)
    progress.message("training <script>alert(1)</script>")
    with progress.task("<b>reference</b> models", total=4) as step:
        step.advance()
        step.advance(3)  # within min_interval of the last draw: not drawn
    assert len(outputs.shown) == 3  # the message, the step's start, its end
    first, running, done = outputs.shown
    assert "&lt;script&gt;" in first and "<script" not in "".join(outputs.shown)
    assert '<progress value="0" max="4"></progress> 0/4' in running
    assert "&lt;b&gt;reference&lt;/b&gt; models" in running
    assert "<progress" not in done and "&lt;b&gt;reference&lt;/b&gt; models: 4/4 (" in done


def test_notebook_bars_redraw_as_steps_advance_and_keep_the_latest_lines(outputs):
    progress = NotebookProgress(min_interval=0, max_lines=2)
    with progress.task("scoring") as step:  # unknown total: a bar without a value
        step.advance(5)
    assert "<progress></progress> 5" in outputs.shown[-2]
    for i in range(3):
        progress.message(f"line {i}")
    assert "line 0" not in outputs.shown[-1] and "line 2" in outputs.shown[-1]


def test_a_quick_delayed_step_is_never_drawn(outputs):
    progress = NotebookProgress(min_interval=0)
    with progress.task("querying reference models", total=3, delay=60) as step:
        step.advance(3)
    assert all("querying" not in shown for shown in outputs.shown)


# ------------------------------------------------------------------ API and CLI


@pytest.fixture(scope="module")
def tiny_audit(tmp_path_factory):
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(X))
    members, non_members, population = perm[:80], perm[80:160], perm[160:360]
    model = DecisionTreeClassifier(random_state=0).fit(X[members], y[members])
    audited = np.r_[members, non_members]
    labels = np.r_[np.ones(80, int), np.zeros(80, int)]
    return model, X[audited], y[audited], labels, (X[population], y[population])


def test_audit_model_old_callable_api_still_works(tiny_audit):
    from privaudit import audit_model
    from privaudit.training import ReferenceSpec

    model, X, y, labels, population = tiny_audit
    messages: list[str] = []
    results = audit_model(model, X, y, labels, population=population,
                          attacks=["loss", "lira-offline"],
                          reference=ReferenceSpec(n_models=3),
                          random_state=0, progress=messages.append)
    assert [r.attack for r in results] == ["loss", "lira-offline"]
    assert all(isinstance(m, str) for m in messages)
    assert any(m.startswith("running loss") for m in messages), messages
    # The pool's training is reported with counts through the same callable.
    assert "training reference models: 3/3" in messages, messages


@pytest.fixture()
def audit_config(tmp_path, tiny_audit):
    import pandas as pd

    from privaudit.targets import save_sklearn_model

    model, X, y, labels, population = tiny_audit
    save_sklearn_model(model, tmp_path / "model.skops")
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["diagnosis"], frame["member"] = y, labels
    frame.to_csv(tmp_path / "audited.csv", index=False)
    pop = pd.DataFrame(population[0], columns=frame.columns[:X.shape[1]])
    pop["diagnosis"] = population[1]
    pop.to_csv(tmp_path / "population.csv", index=False)
    config = {
        "target": {"path": "model.skops", "name": "tree"},
        "data": {"path": "audited.csv", "label_column": "diagnosis",
                 "membership_column": "member"},
        "population": {"path": "population.csv"},
        "attacks": ["loss", "lira-offline"],
        "reference": {"n_models": 3},
        "executor": {"name": "local", "n_jobs": 1},
        "random_state": 0,
        "report": {"out": "report", "n_bootstrap": 0},
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
    return tmp_path / "audit.yaml"


def test_cli_off_a_terminal_prints_plain_lines(audit_config):
    from privaudit.cli import app

    result = CliRunner().invoke(app, ["audit", "model", "--config", str(audit_config)])
    assert result.exit_code == 0, result.output
    assert not CONTROL.search(result.output), repr(result.output)
    lines = [line for line in result.output.splitlines() if line.startswith("[")]
    # One line per message or step, never a line per model.
    assert sum("training reference models:" in line for line in lines) == 1, lines
    assert len(lines) < 20, lines


def test_cli_on_a_terminal_draws_a_bar(audit_config, monkeypatch):
    from privaudit.cli import _app, app

    out = io.StringIO()
    monkeypatch.setattr(_app, "_console",
                        lambda: Console(file=out, force_terminal=True, width=120))
    result = CliRunner().invoke(app, ["audit", "model", "--config", str(audit_config)])
    assert result.exit_code == 0, result.output
    text = out.getvalue()
    assert "━" in text and "3/3" in text, text[-2000:]
