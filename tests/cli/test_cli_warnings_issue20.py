"""Warnings reach the terminal as one line each, and third-party noise not at all (issue 20).

Each test runs a command through the CLI runner with the demo's parts replaced by a
function that raises the warnings the real parts raise: privaudit's own (a BaselineWarning
from :meth:`AttackResult.check_baseline`), matplotlib's layout notice raised while
privaudit's report draws a figure, transformers' ``loss_type`` log notice.
"""

from __future__ import annotations

import logging
import os
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.cli._warnings import terminal_warnings, warning_line
from privaudit.exceptions import BaselineWarning
from privaudit.results import AttackResult

runner = CliRunner()

LOSS_TYPE_NOTICE = ("`loss_type=None` was set in the config but it is unrecognized. Using "
                    "the default loss: `ForCausalLMLoss`.")


def _chance_result(name: str, seed: int) -> AttackResult:
    rng = np.random.default_rng(seed)
    return AttackResult(labels=np.r_[np.ones(60, int), np.zeros(60, int)],
                        scores=rng.normal(size=120), attack="loss", target=name)


def _run_demo_with(monkeypatch, tmp_path, part, *extra: str):
    """``privaudit demo`` whose parts are ``part()`` (it returns the results)."""
    import privaudit.studies as studies

    monkeypatch.setattr(studies, "run_demo_parts", lambda only, **kw: part())
    result = runner.invoke(app, ["demo", "--out", str(tmp_path / "demo"), "--n-bootstrap",
                                 "10", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def _collapsed_layout_figure():
    """A figure whose constrained layout collapses: matplotlib warns when it is saved."""
    from privaudit.report._common import new_figure

    figure = new_figure(0.3, 0.3)  # the report's figures: Agg canvas, constrained layout
    figure.add_subplot().set_title("a title far too long for a figure this small " * 3)
    return figure


def test_privaudit_warnings_are_one_line_each_and_identical_ones_once(monkeypatch, tmp_path):
    results = [_chance_result("model-a", 0), _chance_result("model-b", 1)]

    def part():
        for result in [*results, results[0]]:  # model-a's warning raised twice
            result.check_baseline(n_bootstrap=50)
        warnings.warn("line one\n   line two", BaselineWarning, stacklevel=1)
        return results

    output = _run_demo_with(monkeypatch, tmp_path, part)
    lines = [line for line in output.splitlines() if "BaselineWarning" in line]
    assert len(lines) == 3, output
    assert all(line.startswith("BaselineWarning: ") for line in lines)
    assert sum("model-a" in line for line in lines) == 1
    assert any(line.endswith("line one line two") for line in lines)
    assert ".py:" not in output  # never Python's file:line form, nor its source line
    assert "check_baseline(" not in output


def test_third_party_notices_privaudit_causes_are_silenced_narrowly(monkeypatch, tmp_path,
                                                                    caplog):
    from privaudit.report._common import figure_png

    def part():
        figure_png(_collapsed_layout_figure())  # raised while privaudit's report draws
        notices = logging.getLogger("transformers.modeling_utils")
        notices.warning(LOSS_TYPE_NOTICE)
        notices.warning("another transformers notice stays visible")
        return [_chance_result("model-a", 0)]

    output = _run_demo_with(monkeypatch, tmp_path, part)
    assert "constrained_layout not applied" not in output
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("transformers")]
    assert logged == ["another transformers notice stays visible"]  # that one only
    assert "loss_type" not in output


def test_the_same_layout_warning_elsewhere_is_shown_as_one_line(monkeypatch, tmp_path):
    # The filter names privaudit's report modules: the notice from any other code (here
    # this test module saving a figure itself) still reaches the terminal, on one line.
    import io

    def part():
        _collapsed_layout_figure().savefig(io.BytesIO(), format="png")
        return [_chance_result("model-a", 0)]

    output = _run_demo_with(monkeypatch, tmp_path, part)
    lines = [line for line in output.splitlines() if "constrained_layout" in line]
    assert len(lines) == 1 and lines[0].startswith("UserWarning: constrained_layout not")


def test_the_filters_are_the_commands_only(monkeypatch, tmp_path):
    from privaudit.report._common import figure_png

    _run_demo_with(monkeypatch, tmp_path, lambda: [_chance_result("model-a", 0)])
    with warnings.catch_warnings(record=True) as caught:  # after the command: as before
        warnings.simplefilter("always")
        figure_png(_collapsed_layout_figure())
    assert any("constrained_layout not applied" in str(w.message) for w in caught)
    assert not logging.getLogger("transformers.modeling_utils").filters


@pytest.mark.parametrize("user_value", [None, "true"])
def test_tokenizers_parallelism_is_off_for_the_command_unless_the_user_set_it(
        monkeypatch, tmp_path, user_value):
    if user_value is None:
        monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    else:
        monkeypatch.setenv("TOKENIZERS_PARALLELISM", user_value)
    seen = []

    def part():
        seen.append(os.environ.get("TOKENIZERS_PARALLELISM"))
        return [_chance_result("model-a", 0)]

    _run_demo_with(monkeypatch, tmp_path, part)
    assert seen == [user_value or "false"]
    assert os.environ.get("TOKENIZERS_PARALLELISM") == user_value


@pytest.mark.parametrize(("message", "category", "line"), [
    ("plain", UserWarning, "UserWarning: plain"),
    ("two\nlines  and   spaces", BaselineWarning, "BaselineWarning: two lines and spaces"),
    (RuntimeWarning("an instance"), RuntimeWarning, "RuntimeWarning: an instance"),
    ("", DeprecationWarning, "DeprecationWarning"),
])
def test_warning_line(message, category, line):
    assert warning_line(message, category) == line


def test_identical_means_same_category_and_message():
    lines = []
    with terminal_warnings(lines.append):
        warnings.warn("same text", UserWarning, stacklevel=1)
        warnings.warn("same text", BaselineWarning, stacklevel=1)
        warnings.warn("same text", UserWarning, stacklevel=2)  # another place, same warning
    assert lines == ["UserWarning: same text", "BaselineWarning: same text"]
