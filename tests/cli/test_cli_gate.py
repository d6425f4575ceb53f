"""``privaudit gate`` and ``--gate``: the table, the JUnit file and the exit codes 0, 1, 2."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privaudit.cli import app
from privaudit.results import AttackResult, AuditInfo, ResultsStore

runner = CliRunner()
FAST = ["--n-bootstrap", "100"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Two LLM results: a leaky one (AUC about 0.9) and a quiet one (about 0.5)."""
    folder = tmp_path_factory.mktemp("results")
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(100), np.zeros(100)]
    ResultsStore(folder).save_all([
        AttackResult(labels=labels, scores=rng.normal(size=200) + signal * labels,
                     attack="loss", target=target, audit=AuditInfo(kind="llm"))
        for target, signal in (("leaky", 2.0), ("quiet", 0.0))])
    return folder


def _policy(tmp_path, text):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def _gate(saved, policy, *options):
    return runner.invoke(app, ["gate", str(saved), "--policy", str(policy), *FAST, *options])


def test_every_check_is_shown_and_the_exit_code_says_pass_or_fail(saved, tmp_path):
    quiet_only = _policy(tmp_path, "rules: [{target: quiet, auc: {max: 0.7}}]")
    result = _gate(saved, quiet_only)
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "Gate passed: 0 of 1 checks failed" in result.output
    both = _policy(tmp_path, "rules: [{name: llm-auc, kind: llm, auc: {max: 0.7}}]")
    result = _gate(saved, both, "--junit", str(tmp_path / "gate.xml"))
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output and "leaky" in result.output and "llm-auc" in result.output
    assert "Gate FAILED: 1 of 2 checks failed" in result.output
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")


def test_the_basis_option_reads_the_point_estimate(saved, tmp_path):
    # The quiet model's AUC: its lower bound is under 0.5, its point estimate above 0.45.
    policy = _policy(tmp_path, "rules: [{target: quiet, auc: {max: 0.45}}]")
    assert _gate(saved, policy).exit_code == 0
    result = _gate(saved, policy, "--basis", "point")
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize(("text", "options", "message"), [
    ("rules: [{aucc: {max: 0.6}}]", [], "The 'rules[0].aucc' key of"),
    ("rules: [{auc: {max: 1:30}}]", [], "'rules[0].auc.max' key of"),  # no base-60 number
    ("rules: [{auc: {max: 0.6}, 1: 2}]", [], "The key 1 in 'rules[0]' of"),
    ("rules: [{auc: {max: 0.6}}]", ["--junit", ""], "--junit option needs a file name"),
    ("rules: [{auc: {max: 0.6}}]", ["--junit", "."], "--junit option needs a file name"),
    ("rules: [{auc: {max: 1.7}}]", [], "The 'rules[0].auc.max' key of"),
    ("rules: [{tpr_at_fpr: {max: 0.1}}]", [], "'rules[0].tpr_at_fpr.fpr' key of"),
    ("rules: [{auc: {max: 0.6}}]", ["--basis", "upper"], "'--basis' parameter"),
    ("rules: [{target: nope, auc: {max: 0.6}}]", ["--strict"], "covers no result"),
    ("rules: [{auc: {max: 0.6}}]", ["--n-bootstrap", "-1"], "'--n-bootstrap' parameter"),
])
def test_bad_input_is_one_line_with_exit_code_2(saved, tmp_path, text, options, message):
    result = _gate(saved, _policy(tmp_path, text), *options)
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert message in line and "Traceback" not in result.output


def test_numbers_in_exponent_notation_are_numbers(saved, tmp_path):
    policy = _policy(tmp_path, "rules: [{target: quiet, tpr_at_fpr: {fpr: 1e-1, max: 9e-1}}]")
    result = _gate(saved, policy)
    assert result.exit_code == 0, result.output
    assert "tpr_at_fpr@0.1" in result.output


def test_a_junit_folder_is_refused_before_the_gate_runs(saved, tmp_path):
    policy = _policy(tmp_path, "rules: [{auc: {max: 0.6}}]")
    result = _gate(saved, policy, "--junit", str(tmp_path))
    assert result.exit_code == 2 and "names the folder" in result.output
    assert "Gate" not in result.output  # nothing gated: the path was checked first


def test_the_junit_file_can_be_a_device_or_a_pipe_never_replaced(saved, tmp_path):
    """``--junit /dev/null`` (as root in a CI container) must not replace the device."""
    import os
    import stat
    import threading

    policy = _policy(tmp_path, "rules: [{target: quiet, auc: {max: 0.7}}]")
    result = _gate(saved, policy, "--junit", "/dev/null")
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    fifo = tmp_path / "gate.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    result = _gate(saved, policy, "--junit", str(fifo))
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and received[0].startswith("<?xml")
    # /dev/stdout is a link to /proc/self/fd/1: written through, the link kept
    import subprocess
    import sys

    shown = subprocess.run(
        [sys.executable, "-c", "from privaudit.cli import main; main()", "gate",
         str(saved), "--policy", str(policy),
         *FAST, "--junit", "/dev/stdout"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "<testsuites" in shown.stdout and os.path.islink("/dev/stdout")


def test_missing_files_and_unmatched_budgets(saved, tmp_path):
    result = _gate(saved, tmp_path / "nope.yaml")
    assert result.exit_code == 2 and "does not exist" in result.output
    policy = _policy(tmp_path, "rules: [{auc: {max: 0.99}}, {target: nope, auc: {max: 0.6}}]")
    result = _gate(tmp_path / "no-results", policy)
    assert result.exit_code == 2 and "does not exist" in result.output
    # Without --strict, a budget that covers nothing is a warning and the rest is gated.
    result = _gate(saved, policy)
    assert result.exit_code == 0, result.output
    assert "covers no result" in result.output and "Gate passed" in result.output


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """A synthetic table copying half of its 200 training rows, and 200 unseen rows."""
    from privaudit.synthetic import copying_generator

    folder = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 80, 400), "income": rng.lognormal(10, 1, 400),
                          "city": rng.choice(["a", "b", "c", "d"], 400)})
    frame.iloc[:200].to_csv(folder / "o.csv", index=False)
    frame.iloc[200:].to_csv(folder / "h.csv", index=False)
    copying_generator(frame.iloc[:200].reset_index(drop=True), 200, copy_fraction=0.5,
                      random_state=0).to_csv(folder / "s.csv", index=False)
    return folder


def _audit(tables, out, policy, *options):
    return runner.invoke(app, [
        "audit", "synthetic", "--synthetic", str(tables / "s.csv"), "--original",
        str(tables / "o.csv"), "--holdout", str(tables / "h.csv"), "--checks", "linkability",
        "-o", str(out), *(("--gate", str(policy)) if policy else ()), *options])


@pytest.mark.usefixtures("figures_not_drawn")
def test_an_audit_with_gate_runs_then_gates_its_results(tables, tmp_path):
    kept = _policy(tmp_path, "rules: [{kind: synthetic, risk: {max: 0.9}}]")
    result = _audit(tables, tmp_path / "kept", kept)
    assert result.exit_code == 0, result.output
    assert "Report:" in result.output and "Gate passed: 0 of 1 checks failed" in result.output
    strict = _policy(tmp_path, "rules: [{kind: synthetic, risk: {max: 0.01}}]")
    result = _audit(tables, tmp_path / "exceeded", strict, "--gate-junit",
                    str(tmp_path / "gate.xml"))
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output and (tmp_path / "exceeded" / "index.html").is_file()
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    # A bad policy is refused before the audit runs: no report is written.
    bad = _policy(tmp_path, "rules: [{kind: synthetic, risk: {max: 5}}]")
    result = _audit(tables, tmp_path / "never", bad)
    assert result.exit_code == 2 and "'rules[0].risk.max'" in result.output
    assert not (tmp_path / "never").exists()
    result = _audit(tables, tmp_path / "never", None, "--gate-junit", "gate.xml")
    assert result.exit_code == 2 and "--gate-junit needs --gate" in result.output
    result = _audit(tables, tmp_path / "never", kept, "--gate-junit", str(tmp_path))
    assert result.exit_code == 2 and "--gate-junit option names the folder" in result.output
    assert not (tmp_path / "never").exists()


@pytest.mark.usefixtures("figures_not_drawn")
def test_an_audit_gates_its_own_results_not_those_left_in_its_folder(tables, tmp_path):
    """A second audit into the same --out: the gate reads the report just written."""
    from privaudit.results import ResultsStore

    out = tmp_path / "out"
    kept = _policy(tmp_path, "rules: [{kind: synthetic, risk: {max: 0.9}}]")
    assert _audit(tables, out, kept).exit_code == 0
    # an earlier audit's leaky result left beside this report's own
    ResultsStore(out / "results").save(AttackResult(
        labels=np.r_[np.ones(50), np.zeros(50)], scores=np.r_[np.ones(50), np.zeros(50)],
        attack="loss", target="stale", audit=AuditInfo(kind="synthetic")))
    both = _policy(tmp_path, "rules: [{kind: synthetic, risk: {max: 0.9}, auc: {max: 0.6}}]")
    result = _audit(tables, out, both)
    assert result.exit_code == 0, result.output
    assert "stale" not in result.output
    assert _gate(out, both).exit_code == 1  # the folder itself holds it: gated there


def test_the_integrations_commands_are_registered():
    for command in ("card", "log", "gate"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "RESULTS" in result.output.upper(), result.output


def test_a_language_model_s_memorisation_is_gated_in_the_shell(tmp_path):
    """Saved extraction and canary results: their budgets, and a closeness result named."""
    from policy.memorisation_results import exposed_canaries, extraction_result
    from privaudit.results import ProximityResult

    folder = tmp_path / "results"
    closeness = ProximityResult("dcr", "quantile", synthetic=np.linspace(0, 1, 40),
                                target="synthetic")
    ResultsStore(folder).save_all([extraction_result(member_hits=8), exposed_canaries(n=24),
                                   closeness])
    policy = _policy(tmp_path, "rules: [{name: memorisation, kind: llm, extraction: "
                               "{max: 0.05}, exposure: {max: 50}}]")
    result = _gate(folder, policy, "--junit", str(tmp_path / "gate.xml"))
    assert result.exit_code == 1, result.output
    assert "extraction@k-extractability" in result.output and "exposure" in result.output
    assert "Gate FAILED: 1 of 2 checks failed" in result.output
    assert "1 result not gated: dcr on synthetic" in " ".join(result.output.split())
    assert "NOT GATED dcr on synthetic (proximity): not gated," in " ".join(
        result.output.split())
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
