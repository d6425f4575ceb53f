"""Issue 19, the red team's cases on ``audit model`` and ``report``: one line, exit 2.

Each input the user can get wrong is refused before any work, naming the file, the
column, the key or the option, and what was expected; nothing is written.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from privaudit.cli import app

runner = CliRunner()


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
