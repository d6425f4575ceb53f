"""Issue 20 (A): the findings of the LLM, synthetic, risk sections for the overview."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.report import HtmlReport
from privaudit.report._sections_attribute import AttributeSection
from privaudit.report._sections_llm import LLMSection, llm_context
from privaudit.report._sections_risk import RiskSection
from privaudit.report._sections_synthetic import SyntheticSection
from privaudit.results import (
    AttackResult,
    AttributeResult,
    AuditInfo,
    ProximityResult,
    RiskResult,
)


def scored(shift: float, seed: int = 0, n: int = 150, **fields) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n, int), np.zeros(n, int)]
    return AttackResult(labels=labels, scores=rng.normal(size=2 * n) + shift * labels,
                        **fields)


@pytest.mark.parametrize("blind_shift", [0.0, 2.0])
def test_llm_findings_rate_the_model_and_give_the_blind_baseline_its_own_severity(
        blind_shift):
    blind = scored(blind_shift, attack="blind-baseline", target="texts-only",
                   audit=AuditInfo(kind="llm", role="baseline"))
    model = scored(3.0, attack="loss", target="gpt", audit=AuditInfo(kind="llm"))
    report = HtmlReport([model, blind], n_bootstrap=50)
    findings = {f.attack: f for f in LLMSection().findings(report)}
    assert findings["blind-baseline"].severity == "baseline"
    assert findings["loss"].severity in ("high", "critical")
    assert all(f.section == "llm" for f in findings.values())
    context = llm_context(report.results, report.metric_dicts)
    assert context["llm_blinds"][0]["severity"] == "baseline"
    assert "without the model" in context["llm_blinds"][0]["text"]
    # The 0.1% column of 150 texts is unresolvable, not a number.
    row = context["llm_tables"][0]["rows"][0]
    assert row["tpr01"]["ci"] == "unresolvable"
    assert row["verdict"].severity == findings["loss"].severity
    # The overview's answer for the model is never the baseline's.
    assert {f.artefact: f.severity for f in report.overview}["gpt"] != "baseline"


def _proximity(verdict: str) -> ProximityResult:
    rng = np.random.default_rng(0)
    holdout = rng.uniform(0.05, 0.4, 300)
    synthetic = {"closer": np.r_[np.zeros(120), holdout[:180]],
                 "not closer": holdout + 0.5, "no holdout": holdout}[verdict]
    return ProximityResult("dcr", "quantile", synthetic=synthetic,
                           baseline=None if verdict == "no holdout" else holdout,
                           target="record 7", generator="copier", dataset="d")


@pytest.mark.parametrize(("verdict", "severity"), [
    ("closer", "high"), ("not closer", "minimal"), ("no holdout", "undefined")])
def test_closeness_findings(verdict, severity):
    result = _proximity(verdict)
    assert result.verdict == verdict
    report = HtmlReport([result], n_bootstrap=0)
    (finding,) = SyntheticSection().findings(report)
    assert finding.severity == severity
    assert finding.artefact == "record 7 (copier, d)"
    assert finding.kind == "synthetic" and finding.section == "synthetic"


@pytest.mark.parametrize(("shift", "artefact"), [(-2.0, True), (-1.0, True), (0.3, False),
                                                 (2.0, False)])
def test_a_distinguisher_gives_a_finding_only_as_an_artefact(shift, artefact):
    fidelity = scored(shift, attack="distinguishability", target="synthetic table",
                      audit=AuditInfo(role="fidelity"))
    report = HtmlReport([fidelity], n_bootstrap=100)
    findings = SyntheticSection().findings(report)
    assert [f.severity for f in findings] == (["artefact"] if artefact else [])


@pytest.mark.parametrize(("success", "control", "severity"), [
    (190, 10, "critical"), (90, 10, "high"), (30, 10, "low"), (10, 10, "minimal"),
    (3, 10, "minimal")])
def test_risk_findings_read_the_residual_risk_interval(success, control, severity):
    risk = RiskResult(n_attacks=200, n_success=success, n_baseline=5, n_control=control,
                      n_control_attacks=200, target="table", attack="singling-out")
    report = HtmlReport([risk], n_bootstrap=0)
    (finding,) = RiskSection().findings(report)
    assert finding.severity == severity, (risk.risk(), finding.text)
    assert finding.kind == "synthetic" and finding.section == "risks"


def _attribute(n: int, n_member_hits: int, n_non_member_hits: int) -> AttributeResult:
    """``n`` members and ``n`` non-members; the model-free guess is always wrong."""
    truth = np.array([0, 1] * n)
    guesses = 1 - truth
    guesses[:n_member_hits] = truth[:n_member_hits]
    guesses[n:n + n_non_member_hits] = truth[n:n + n_non_member_hits]
    return AttributeResult(candidates=["f", "m"], guesses=guesses, truth=truth,
                           members=np.r_[np.ones(n), np.zeros(n)].astype(int),
                           posteriors=np.full((2 * n, 2), 0.5),
                           model_free={"prior": 1 - truth}, attack="model-inversion",
                           target="model", sensitive_attribute="sex")


@pytest.mark.parametrize(("member_hits", "non_member_hits", "severity"), [
    (200, 0, "critical"), (100, 0, "high"), (20, 0, "moderate"), (0, 0, "minimal")])
def test_attribute_findings_read_the_advantage_over_a_model_free_guess(
        member_hits, non_member_hits, severity):
    result = _attribute(200, member_hits, non_member_hits)
    report = HtmlReport([result], n_bootstrap=0)
    (finding,) = AttributeSection().findings(report)
    assert finding.severity == severity, (result.simulator_advantage(), finding.text)
    assert finding.kind == "attribute" and finding.section == "attribute"
    assert finding.artefact == "model"
