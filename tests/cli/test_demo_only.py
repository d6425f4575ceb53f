"""``privaudit demo --only KIND`` runs one audit kind's part of the demo."""

import pytest
from typer.testing import CliRunner

import privaudit.studies._demo as demo_module
from privaudit.cli import app
from privaudit.studies import DEMO_PARTS, run_demo_parts

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


def test_every_part_is_an_audit_kind_and_model_is_there():
    assert list(DEMO_PARTS) == ["model", "llm", "synthetic", "generator", "unlearning", "dp"]
    assert all(callable(part) for part in DEMO_PARTS.values())


def test_only_runs_the_named_parts_in_order(monkeypatch):
    calls = []

    def part(name):
        def run(random_state, n_reference_models, n_jobs, progress):
            calls.append((name, random_state, n_reference_models, n_jobs))
            return [name]
        return run

    monkeypatch.setattr(demo_module, "DEMO_PARTS", {"a": part("a"), "b": part("b")})
    assert run_demo_parts(["b"], random_state=3, n_reference_models=4, n_jobs=1) == ["b"]
    assert calls == [("b", 3, 4, 1)]
    calls.clear()
    assert run_demo_parts(None) == ["a", "b"]  # all parts, in their order
    assert run_demo_parts(["b", "a", "b"]) == ["b", "a"]  # repeats run once


def test_unknown_kind_is_one_readable_line(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--only", "nope", "--out",
                                      str(tmp_path / "r")])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--only" in lines[0] and "'model', 'llm', 'synthetic'" in lines[0]
    assert not (tmp_path / "r").exists()  # refused before any work


def test_unknown_kind_in_the_api():
    with pytest.raises(ValueError, match="'only' parameter of run_demo_parts"):
        run_demo_parts(["nope"])


def test_llm_part_is_skipped_without_its_extra(monkeypatch):
    import privaudit.studies._demo as demo_module

    monkeypatch.setattr(demo_module, "_llm_available", lambda: False)
    said = []
    assert demo_module.DEMO_PARTS["llm"](0, 4, 1, said.append) == []
    assert "'llm' extra" in said[0]
    monkeypatch.setattr(demo_module, "_LLM_MODULES", ("privaudit_no_such_module",))
    with pytest.raises(ImportError, match=r"privaudit\[llm\]"):
        run_demo_parts(["llm"])


def test_only_takes_comma_separated_kinds(tmp_path, monkeypatch):
    import privaudit.studies as studies

    asked = []

    def stop(only, **kwargs):
        asked.append(only)
        raise ValueError("stopped")

    monkeypatch.setattr(studies, "run_demo_parts", stop)
    CliRunner().invoke(app, ["demo", "--only", "model, synthetic", "--only", "model",
                             "--out", str(tmp_path / "r")])
    assert asked == [["model", "synthetic"]]


@pytest.mark.parametrize("value", ["", ",", "model,bogus"])
def test_only_with_an_unknown_or_empty_kind_is_refused(tmp_path, value):
    result = CliRunner().invoke(app, ["demo", "--only", value, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--only" in lines[0] and "comma-separated" in lines[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("argv", [["demo", "--n-bootstrap", "1000000000"],
                                  ["demo", "--n-reference-models", "1000000"],
                                  ["study", "unlearning", "--n-bootstrap", "1000000000"]])
def test_huge_counts_are_refused_naming_the_option_and_limit(tmp_path, argv):
    result = CliRunner().invoke(app, [*argv, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and argv[-2] in lines[0] and "at most" in lines[0]
    assert not (tmp_path / "r").exists()
