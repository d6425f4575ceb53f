"""``privaudit study unlearning`` and ``privaudit demo --only unlearning`` end to end.

Both run RT and GA with every attack on a tiny setting (monkeypatched in place of the quick
one and the seven algorithms: seconds); the quick study itself is tested in tests/studies.
"""

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

import privaudit.studies._unlearning_study as study_module
from privaudit.audits import UNLEARNING_ATTACKS
from privaudit.cli import app

pytest.importorskip("torch")

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

ALGORITHMS = ("RT", "GA")
CELLS = sorted((a, k) for a in ALGORITHMS for k in UNLEARNING_ATTACKS)


@pytest.fixture
def tiny(monkeypatch):
    setting = replace(study_module.UNLEARNING_QUICK_SETTING, n_rows=2000, n_train=300,
                      n_forget=30, n_heldout=30, n_population=600, hidden=(16,), epochs=5,
                      n_shadows=4)
    monkeypatch.setattr(study_module, "UNLEARNING_QUICK_SETTING", setting)
    monkeypatch.setattr(study_module, "UNLEARNING_ALGORITHMS", ALGORITHMS)
    return setting


def _cells(out):
    entries = json.loads((out / "results.json").read_text())["results"]
    return sorted((e["target"], e["attack"]) for e in entries)


def test_study_unlearning_quick(tmp_path, tiny):
    out = tmp_path / "study"
    args = ["study", "unlearning", "--quick", "--out", str(out), "--n-bootstrap", "10",
            "--n-jobs", "1", "--verbose"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "index.html").exists() and (out / "shadows").is_dir()
    assert _cells(out) == CELLS
    assert "Unlearning: accuracy" in result.output and "GA" in result.output
    meta = json.loads((out / "unlearning-study.json").read_text())
    assert meta["setting"]["n_train"] == tiny.n_train
    assert list(meta["algorithms"]) == list(ALGORITHMS)
    # A rerun reuses every finished cell (and says so in its log).
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert again.output.count("reusing the finished result") == len(CELLS)


def test_demo_only_unlearning(tmp_path, tiny):
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--only", "unlearning", "--out", str(out),
                                      "--n-bootstrap", "10"])
    assert result.exit_code == 0, result.output
    assert (out / "index.html").exists()
    assert _cells(out) == CELLS
    assert not (out / "shadows").exists()  # the demo's cache is temporary


@pytest.mark.parametrize("option", [["--n-jobs", "0"], ["--seed", "-1"],
                                    ["--n-bootstrap", "-1"]])
def test_bad_options_fail_before_any_work(tmp_path, option):
    out = tmp_path / "study"
    result = CliRunner().invoke(app, ["study", "unlearning", "--out", str(out), *option])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and option[0] in lines[0]
    assert not out.exists()
