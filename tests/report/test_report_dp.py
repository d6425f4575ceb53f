"""The report's DP-training section: the table, the figures, the verdict's wording and rank.

Results are built from scores of a known Gaussian mechanism (included canaries shifted by
``signal``, every score with N(0, 1) noise), bounded by the real
:func:`~privaudit.metrics.canary_epsilon_lower_bound`: a large shift refutes a claim of
eps = 1, no shift leaves it standing.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from privaudit.metrics import canary_epsilon_lower_bound, one_run_epsilon_lower_bound
from privaudit.report import Finding, strongest_finding
from privaudit.report._html import _environment
from privaudit.report._sections_dp import DPTrainingSection, bound_curve, dp_rows
from privaudit.report._sections_overview import overview_rows
from privaudit.report._verdict import REFUTED_CLAIM_STRENGTH, dp_claim_level
from privaudit.results import AttackResult, AuditInfo, DPAuditResult

M = 400


def _result(signal: float, *, claim: Any = 1.0, n_runs: int = 1, seed: int = 0,
            target: str = "mechanism") -> DPAuditResult:
    rng = np.random.default_rng(seed)
    included = rng.random((n_runs, M)) < 0.5
    scores = signal * included + rng.normal(size=(n_runs, M))
    level = 1 - 0.05 / (2 * n_runs)
    bounds = [{method: canary_epsilon_lower_bound(
        scores[i][included[i]], scores[i][~included[i]], delta=1e-5, confidence=level,
        method=method, two_sided=True) for method in ("steinke", "fdp")}
        for i in range(n_runs)]
    claims = claim if isinstance(claim, dict) else {"claimed": claim}
    return DPAuditResult(canary_ids=[f"canary-{i:05d}" for i in range(M)], scores=scores,
                         included=included, claimed_epsilon=claims, delta=1e-5,
                         bounds=bounds, attack="dirac-gradient-canaries", target=target,
                         canaries="dirac-gradient", audit=AuditInfo(kind="dp"))


@pytest.fixture(scope="module")
def refuted() -> DPAuditResult:
    return _result(8.0, target="not private")


@pytest.fixture(scope="module")
def consistent() -> DPAuditResult:
    return _result(0.0, target="private")


def _page(results: list[Any]) -> SimpleNamespace:
    """What the section reads of the page: its results."""
    return SimpleNamespace(all_results=results)


def test_the_verdict_is_worded_as_a_claim_refuted_or_not_never_as_privacy(refuted,
                                                                         consistent):
    assert refuted.refuted and refuted.verdict == "claim refuted"
    assert not consistent.refuted and consistent.verdict == "consistent with the claim"
    findings = DPTrainingSection().findings(_page([refuted, consistent]))
    by_name = {f.artefact: f for f in findings}
    assert by_name["not private"].label == "Claim refuted"
    assert by_name["not private"].severity == "critical"
    assert by_name["private"].label == "Consistent with the claim"
    assert by_name["private"].severity in ("minimal", "low")
    for f in findings:
        assert "private" not in f.label.lower() and "proved" not in f.text.lower()
        assert f.section == "dp" and f.kind == "dp-training"


def test_the_section_renders_the_table_the_figures_and_both_verdicts(refuted, consistent):
    section = DPTrainingSection()
    results = [refuted, consistent]
    assert section.applies_to(results)
    assert not section.applies_to([AttackResult(labels=[1, 0], scores=[0.9, 0.1])])
    context = section.context(_page(results))
    html = _environment().get_template("sections/dp.html").render(**context)
    assert html.count("<img") == 1 + 2 * len(results)  # claims + histogram & curve each
    assert "claim refuted" in html and "consistent with the claim" in html
    assert html.count("<tr>") == len(results) + sum(len(dp_rows(r)) for r in results)
    assert "not private" in html and "dirac-gradient" in html
    assert "proved private" not in html.lower()


def test_a_row_per_run_and_method_with_the_guesses_behind_each_bound():
    result = _result(8.0, n_runs=2)
    rows = dp_rows(result)
    assert [(r["run"], r["method"]) for r in rows] == [
        (1, "steinke"), (1, "fdp"), (2, "steinke"), (2, "fdp")]
    for row, bound in zip(rows, [b for run in result.bounds for b in run.values()],
                          strict=True):
        assert row["guesses"] == f"{bound.n_guesses:,}"
        assert row["correct"] == f"{bound.n_correct:,}"
        assert row["refuted"] == (bound.epsilon > 1.0)
    assert result.bound_confidence == pytest.approx(1 - 0.05 / 4)


def test_a_refuted_claim_outranks_every_other_finding_of_its_artefact(refuted):
    [dp] = DPTrainingSection().findings(_page([refuted]))
    other = Finding(artefact=dp.artefact, kind="membership", severity="critical",
                    label="Severe leakage", attack="lira", metric="TPR", interval="",
                    text="", section="summary", strength=5000.0)
    assert strongest_finding([other, dp]) is dp
    assert overview_rows([other, dp])[0]["answer"]["label"] == "Claim refuted"


@pytest.mark.parametrize(("bound", "claim", "severity"), [
    (2.0, 1.0, "critical"), (1.0, 1.0, "low"), (0.5, 8.0, "low"), (0.0, 1.0, "minimal"),
    (float("inf"), 1.0, "critical"), (float("nan"), 1.0, "undefined"),
    (1.0, float("nan"), "undefined")])
def test_the_level_of_a_bound_against_its_claim(bound, claim, severity):
    level, strength = dp_claim_level(bound, claim)
    assert level == severity
    assert (strength >= REFUTED_CLAIM_STRENGTH) == (severity == "critical")


def test_the_bound_against_guesses_is_the_one_run_bound_of_each_top_k(refuted):
    counts, bounds = bound_curve(refuted, "steinke")
    assert counts[0] == 1 and counts[-1] == M and counts == sorted(set(counts))
    order = np.argsort(-refuted.scores[0], kind="stable")
    for k, value in zip(counts[::6], bounds[::6], strict=True):  # a slow reference
        correct = int(sum(refuted.included[0][order[:k]]))
        assert value == one_run_epsilon_lower_bound(
            M, k, correct, delta=1e-5, confidence=refuted.bound_confidence)
    assert max(bounds) > 1.0  # the leaky mechanism's top guesses refute eps = 1


def test_a_claim_per_accountant_is_shown_and_read_at_its_smallest():
    result = _result(3.0, claim={"rdp": 9.0, "prv": 0.5})
    assert result.claim == 0.5 and result.claim_accountant == "prv"
    context = DPTrainingSection().context(_page([result]))
    [block] = context["dp_blocks"]
    assert [c["accountant"] for c in block["claims"]] == ["rdp", "prv"]
    assert all(row["accountant"] == "prv" for row in block["rows"])
