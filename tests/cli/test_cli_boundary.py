"""The CLI's error boundary and what it prints through rich.

A library's crash on an input (a Rust panic, which is a BaseException and not an
Exception; a RecursionError on a deeply nested file; a MemoryError) is one readable line
naming the command and the file, exit code 2; KeyboardInterrupt and SystemExit keep
their behaviour. Names from the user's files are printed literally: ``[/bold]`` used to
crash rich after the report was written, and ``[red]x`` was eaten as markup.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from rich.console import Console
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from privaudit.cli import app

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

runner = CliRunner()

MARKUP_NAMES = ["[/bold]", "[red]x", "[link=file:///etc]y"]


class PanicException(BaseException):
    """What pyo3 raises when Rust code panics (tokenizers on a crafted regex)."""


PanicException.__module__ = "pyo3_runtime"


def crash_while_reading(exc: BaseException, path):
    def load(config):
        tokenizer_file = str(path)  # the local a library frame names its file by
        assert tokenizer_file
        raise exc

    return load


@pytest.mark.parametrize("exc, says", [
    (PanicException("called `Result::unwrap()` on an `Err` value: regex"),
     "a library crashed on its input (PanicException: called"),
    (RecursionError("maximum recursion depth exceeded while decoding a JSON array"),
     "an input is nested too deeply to be read (RecursionError"),
    (MemoryError(), "it ran out of memory (MemoryError"),
])
def test_a_library_crash_is_one_line_naming_the_command_and_the_file(
        tmp_path, monkeypatch, exc, says):
    crafted = tmp_path / "tokenizer.json"
    crafted.write_text("{}")
    monkeypatch.setattr("privaudit.cli._generator.load_generator_config",
                        crash_while_reading(exc, crafted))
    result = runner.invoke(app, ["audit", "generator", "--config", str(tmp_path / "a.yaml")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith("Error: privaudit audit generator stopped: ")
    assert says in lines[0] and f"while reading {str(crafted)!r}" in lines[0]


def test_debug_shows_the_crash_itself(tmp_path, monkeypatch):
    monkeypatch.setattr("privaudit.cli._generator.load_generator_config",
                        crash_while_reading(PanicException("boom"), tmp_path))
    with pytest.raises(PanicException, match="boom"):
        runner.invoke(app, ["--debug", "audit", "generator", "--config", "a.yaml"])


def raise_(exc):
    def load(config):
        raise exc

    return load


def test_interrupts_and_exits_behave_as_usual(monkeypatch):
    target = "privaudit.cli._generator.load_generator_config"
    monkeypatch.setattr(target, raise_(KeyboardInterrupt()))
    result = runner.invoke(app, ["audit", "generator", "--config", "a.yaml"])
    assert result.exit_code == 130 and "Error:" not in result.output  # typer's own handling
    monkeypatch.setattr(target, raise_(SystemExit(7)))
    assert runner.invoke(app, ["audit", "generator", "--config", "a.yaml"]).exit_code == 7


def test_a_bug_keeps_its_traceback(monkeypatch):
    monkeypatch.setattr("privaudit.cli._generator.load_generator_config",
                        raise_(ZeroDivisionError("a bug")))
    result = runner.invoke(app, ["audit", "generator", "--config", "a.yaml"])
    assert isinstance(result.exception, ZeroDivisionError)


# ------------------------------------------------------------------ rich markup


@pytest.fixture(scope="module")
def markup_results(tmp_path_factory):
    """Saved results of three targets whose names are rich markup."""
    from privaudit import audit_model
    from privaudit.targets import as_target

    folder = tmp_path_factory.mktemp("markup")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(120, 3)), rng.integers(0, 2, 120)
    labels = np.r_[np.ones(60, int), np.zeros(60, int)]
    model = DecisionTreeClassifier(random_state=0).fit(X[:60], y[:60])
    for name in MARKUP_NAMES:
        audit_model(as_target(model, name=name), X, y, labels, attacks=["loss"],
                    results_dir=folder / "results", random_state=0)
    return folder


def test_names_that_look_like_markup_print_literally_and_never_crash(markup_results):
    out = markup_results / "[red]report"
    result = runner.invoke(app, ["report", str(markup_results / "results"), "--out", str(out),
                                 "--n-bootstrap", "10"])
    assert result.exit_code == 0, result.output
    for name in MARKUP_NAMES:
        assert name in result.output
    assert f"Report: {out / 'index.html'}" in result.output


def test_every_summary_table_prints_user_strings_literally(tmp_path):
    from privaudit.cli._app import _print_summary

    ci = {"value": 0.5, "low": 0.4, "high": 0.6}
    name, attack, column = MARKUP_NAMES
    (tmp_path / "results.json").write_text(json.dumps({
        "results": [{"target": name, "attack": attack, "generator": column, "kind": "attribute",
                     "parameters": {"sensitive_attribute": column},
                     "metrics": {"auc": ci, "advantage": ci, "tpr_at_fpr": {}}}],
        "proximity": [{"target": name, "metric": attack, "statistic": "share", "value": ci,
                       "baseline_value": ci, "passed": False}],
        "fidelity": [{"target": name, "metrics": {"auc": ci}}],
        "risks": [{"target": name, "attack": attack, "risk": ci,
                   "rates": {"attack": ci, "baseline": ci, "control": ci}}],
        "attributes": [{"target": name, "attack": attack, "sensitive_attribute": column,
                        "metrics": {k: ci for k in ("accuracy_members", "accuracy_non_members",
                                                    "advantage", "simulator_advantage")}}],
    }))
    buffer = io.StringIO()
    _print_summary(Console(file=buffer, width=400, force_terminal=True), tmp_path)
    text = _strip_ansi(buffer.getvalue())
    assert text.count(name) == 5  # the target column of every table
    for literal in MARKUP_NAMES:
        assert literal in text


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b]*\x1b\\\\", "", text)


def test_progress_descriptions_and_messages_are_not_markup():
    from privaudit._progress import RichProgress

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, force_terminal=True)
    with RichProgress(console) as progress:
        for name in MARKUP_NAMES:
            progress.message(f"Auditing {name}")
            with progress.task(f"Training {name}", total=2) as task:
                task.advance()
                task.advance()
    text = _strip_ansi(buffer.getvalue())
    for name in MARKUP_NAMES:
        assert f"Auditing {name}" in text and f"Training {name}" in text
