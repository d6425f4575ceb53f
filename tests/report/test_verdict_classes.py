"""Issue 20 (A): verdicts that never contradict the numbers, one test per class of fault.

Ties, unresolvable FPRs, blind baselines, AUCs below chance, and the findings the overview
reads (one per result, the generator part of every artefact).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from privaudit.report import HtmlReport, fidelity_reading
from privaudit.report._sections_membership import MetricsSection, metric_rows
from privaudit.report._verdict import attack_verdict, result_verdict, share_level
from privaudit.results import AttackResult, AuditInfo


def result_of(labels, scores, **fields) -> AttackResult:
    return AttackResult(labels=np.asarray(labels), scores=np.asarray(scores, dtype=float),
                        **fields)


def colluding(n: int, n_tied: int, seed: int = 0, **fields) -> AttackResult:
    """All ``n`` members tied at the top with ``n_tied`` of ``n`` non-members."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n, int), np.zeros(n, int)]
    scores = np.r_[np.ones(n + n_tied), rng.uniform(0, 0.5, n - n_tied)]
    return result_of(labels, scores, attack="colluding", target="digits-colluding", **fields)


def top_members(n_members: int, n_neg: int, n_top: int, seed: int = 0,
                **fields) -> AttackResult:
    """``n_top`` members above every non-member, the rest exchangeable with them."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_members, int), np.zeros(n_neg, int)]
    scores = rng.uniform(0, 1, labels.size)
    scores[:n_top] = 2.0 + np.arange(n_top)
    return result_of(labels, scores, attack="u-mia", target="RT", **fields)


def separated(n: int, shift: float, seed: int = 0, **fields) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n, int), np.zeros(n, int)]
    return result_of(labels, rng.normal(size=2 * n) + shift * labels, **fields)


def verdict_of(result: AttackResult, n_bootstrap: int = 300):
    return result_verdict(result, result.metrics(n_bootstrap=n_bootstrap, random_state=0))


# ------------------------------------------------------------------ 1. ties


@pytest.mark.parametrize(("n", "n_tied"), [(600, 3), (600, 5), (600, 6), (1000, 2),
                                           (300, 1)])
def test_ties_never_turn_certainty_into_no_evidence(n, n_tied):
    result = colluding(n, n_tied)
    m = result.metrics(n_bootstrap=400, random_state=0)
    verdict = result_verdict(result, m)
    assert verdict.severity == "critical", verdict.text
    # Read at 1%, or at the one false positive its non-members resolve (0.1% is not
    # resolvable with 1,000 or fewer): whichever gives the larger significant lift.
    assert verdict.fpr == 0.01 or verdict.fpr == pytest.approx(1 / n)
    assert verdict.tpr == 1.0 or verdict.fpr < 0.01
    shown = m["tpr_at_fpr"]["0.01"]
    assert shown["low"] <= shown["value"] <= shown["high"]
    assert shown["low"] > 0.4  # not the [0, 1] of a bimodal bootstrap


@pytest.mark.parametrize("n_tied", [10, 20])
def test_a_tie_block_straddling_1pct_is_read_conservatively(n_tied):
    # 600 members tied with 10 or 20 of 600 non-members: at 1% FPR (6 false positives) the
    # block does not fit, so no certainty is claimed there; the AUC still says "clear".
    result = colluding(600, n_tied)
    m = result.metrics(n_bootstrap=200, random_state=0)
    verdict = result_verdict(result, m)
    assert m["tpr_p_value"]["0.01"] == 1.0
    assert verdict.severity in ("low", "moderate", "high", "critical")
    assert "AUC" in verdict.text


# ------------------------------------------------------------------ 2. unresolvable FPR


@pytest.mark.parametrize(("n_members", "n_neg", "n_top"), [
    (100, 100, 4),   # the demo's RT: 4/100 above every non-member, p ~ 0.06
    (150, 150, 3),
    (100, 100, 2),
    (75, 150, 2),
])
def test_no_verdict_rests_on_an_unresolvable_fpr(n_members, n_neg, n_top):
    result = top_members(n_members, n_neg, n_top)
    verdict = verdict_of(result)
    assert verdict.severity == "minimal", verdict.text
    assert not math.isfinite(verdict.lift)
    assert "0.1% FPR" not in verdict.text


@pytest.mark.parametrize(("n_neg", "expected_fpr"), [(100, 0.01), (150, 1 / 150),
                                                     (5000, 0.001)])
def test_a_strong_lift_is_read_at_the_smallest_resolvable_fpr(n_neg, expected_fpr):
    result = top_members(200, n_neg, 60)
    verdict = verdict_of(result)
    # 0.1% is unresolvable below 1,000 non-members: the finest rate read is then one
    # false positive (1/150 = 0.67%), not the 1% beside it.
    assert verdict.fpr == pytest.approx(expected_fpr)
    if expected_fpr == pytest.approx(1 / n_neg):
        assert f"the smallest FPR its {n_neg:,} non-members resolve" in verdict.text
    assert verdict.p_value < 0.05
    assert verdict.severity in ("high", "critical")


@pytest.mark.parametrize("n_neg", [100, 150, 999])
def test_the_table_shows_unresolvable_cells_as_such(n_neg):
    report = HtmlReport([top_members(100, n_neg, 4)], n_bootstrap=50)
    row = metric_rows(report)[0]
    cell_01 = row["cells"][1 + report.fprs.index(0.001)]
    assert cell_01["value"] == "—" and cell_01["ci"] == "unresolvable"
    assert f"{n_neg:,}" in cell_01["title"]
    assert row["cells"][1 + report.fprs.index(0.01)]["ci"] != "unresolvable"


def test_a_hand_made_dict_without_p_values_still_needs_a_resolvable_fpr():
    metrics = {"n_non_members": 100, "auc": {"value": 0.5, "low": 0.4, "high": 0.6},
               "tpr_at_fpr": {"0.001": {"value": 0.04, "low": 0.01, "high": 0.08}}}
    assert attack_verdict("a", metrics).severity == "minimal"
    metrics["n_non_members"] = 10_000
    assert attack_verdict("a", metrics).severity == "high"  # 40x, interval above 0.1%


# ------------------------------------------------------------------ 3. blind baselines


@pytest.mark.parametrize(("shift", "seed", "distinguishable"), [
    (1.5, 0, True), (3.0, 0, True), (0.0, 1, False), (0.0, 3, False)])
def test_a_blind_baseline_is_evidence_about_the_split(shift, seed, distinguishable):
    result = separated(150, shift, seed, attack="blind-baseline", target="texts-only",
                       audit=AuditInfo(kind="llm", role="baseline"))
    verdict = verdict_of(result)
    assert verdict.severity == "baseline" and verdict.label == "Split baseline"
    assert ("Split distinguishable without the model" in verdict.text) is distinguishable
    assert "leakage" not in verdict.label.lower()


def test_baselines_read_as_baselines_in_the_table_and_the_findings():
    baseline = separated(150, 2.0, attack="blind-baseline", target="texts-only",
                         audit=AuditInfo(kind="llm", role="baseline"))
    model = separated(150, 2.0, attack="loss", target="gpt", audit=AuditInfo(kind="llm"))
    other = separated(150, 2.0, attack="loss", target="m", audit=AuditInfo(role="baseline"))
    report = HtmlReport([baseline, model, other], n_bootstrap=50)
    rows = metric_rows(report)
    assert rows[0]["verdict"].severity == "baseline"
    assert rows[2]["verdict"].severity == "baseline"
    findings = {f.artefact: f for f in report.findings if f.attack in ("blind-baseline",)}
    assert findings["texts-only"].severity == "baseline"
    for finding in report.findings:
        if finding.attack == "blind-baseline" or finding.artefact == "m":
            assert finding.severity == "baseline"


# ------------------------------------------------------------------ 4. AUC below 0.5


@pytest.mark.parametrize(("shift", "kind"), [(-1.0, "membership"), (-3.0, "membership"),
                                             (-1.0, "attribute")])
def test_an_auc_wholly_below_chance_is_an_artefact(shift, kind):
    result = separated(200, shift, attack="a", target="t", kind=kind)
    verdict = verdict_of(result)
    assert verdict.severity == "artefact" and verdict.label == "Audit artefact"
    assert "below chance" in verdict.text


def test_without_an_interval_an_anomalous_auc_is_an_artefact():
    metrics = {"auc": {"value": 0.135, "low": math.nan, "high": math.nan},
               "tpr_at_fpr": {}}
    assert attack_verdict("a", metrics).severity == "artefact"
    metrics["auc"]["value"] = 0.45
    assert attack_verdict("a", metrics).severity != "artefact"


@pytest.mark.parametrize("auc", [(0.135, 0.10, 0.17), (0.40, 0.33, 0.47), (0.2, math.nan,
                                                                           math.nan)])
def test_a_distinguisher_below_chance_is_never_green(auc):
    words, css = fidelity_reading(dict(zip(("value", "low", "high"), auc, strict=True)))
    assert css == "artefact"
    assert "artefact" in words and "hard to tell apart" not in words


# ------------------------------------------------------------------ 5. findings


def test_one_finding_per_result_with_the_generator_in_the_artefact():
    results = [
        colluding(300, 1, generator="copier", dataset="d"),
        separated(300, 0.0, attack="dcr", target="digits-colluding", generator="dp",
                  dataset="d"),
        separated(300, -1.0, attack="x", target="digits-colluding", generator="copula",
                  dataset="d"),
    ]
    report = HtmlReport(results, n_bootstrap=50)
    findings = MetricsSection().findings(report)
    assert len(findings) == 3
    assert {f.artefact for f in findings} == {
        "digits-colluding (copier, d)", "digits-colluding (dp, d)",
        "digits-colluding (copula, d)"}
    by_generator = {f.artefact.split("(")[1].split(",")[0]: f for f in findings}
    assert by_generator["copier"].severity == "critical"
    assert re.match(r"TPR 100\.0% at (1|0\.333)% FPR \((100|300)x\)",
                    by_generator["copier"].metric)
    assert by_generator["copier"].interval.startswith("[")
    assert by_generator["copula"].severity == "artefact"
    assert by_generator["dp"].metric.startswith("AUC ")
    assert all(f.section == "metrics" for f in findings)
    # Every artefact keeps its own answer in the overview.
    assert len(report.overview) == 3


@pytest.mark.parametrize(("low", "value", "level"), [
    (0.6, 0.7, "critical"), (0.25, 0.3, "high"), (0.06, 0.1, "moderate"),
    (0.01, 0.02, "low"), (-0.01, 0.02, "minimal"), (math.nan, 0.3, "high"),
    (math.nan, math.nan, "undefined")])
def test_share_levels(low, value, level):
    assert share_level(low, value) == level


@pytest.mark.parametrize(("n_neg", "unresolvable"), [(40, True), (99, True), (100, False),
                                                     (500, False)])
def test_a_slice_too_small_for_its_fpr_shows_an_unresolvable_tpr(n_neg, unresolvable):
    from privaudit.report._sections_slices import slice_sections
    from privaudit.results import SliceSummary

    row = {"slice_type": "entire", "slice_value": "all", "n_members": 50,
           "n_non_members": n_neg, "auc": 0.6, "auc_low": 0.5, "auc_high": 0.7,
           "tpr_at_fpr_0.01": 0.1, "tpr_at_fpr_0.01_low": 0.0,
           "tpr_at_fpr_0.01_high": 0.2, "advantage": 0.1, "advantage_low": 0.0,
           "advantage_high": 0.2}
    result = separated(20, 1.0, audit=AuditInfo(slices=SliceSummary(rows=[row])))
    (section,) = slice_sections([result])
    tpr = section["rows"][0]["tpr"]
    assert (tpr["ci"] == "unresolvable") is unresolvable
    assert (tpr["value"] == "—") is unresolvable


@pytest.mark.parametrize(("n_neg", "fpr_text"), [(75, "1.33%"), (50, "2%"), (30, "3.33%")])
def test_fewer_than_100_non_members_are_read_at_their_smallest_fpr(n_neg, fpr_text):
    # 30 of 75 members above every non-member (the LLM demo's 75 texts per side): no FPR
    # up to 1% is resolvable, so the result is read at one false positive, and says so.
    result = top_members(75, n_neg, 30)
    m = result.metrics(n_bootstrap=200, random_state=0)
    smallest = m["fpr_resolution"]["smallest"]
    assert smallest["fpr"] == pytest.approx(1 / n_neg)
    assert smallest["tpr"]["low"] <= smallest["tpr"]["value"] <= smallest["tpr"]["high"]
    verdict = result_verdict(result, m)
    assert verdict.fpr == pytest.approx(1 / n_neg)
    assert f"at {fpr_text} FPR, the smallest FPR its {n_neg} non-members resolve" in (
        verdict.text)
    assert verdict.lift == pytest.approx(0.4 * n_neg)
    assert verdict.severity != "minimal"
    finding = MetricsSection().findings(HtmlReport([result], n_bootstrap=50))[0]
    assert finding.metric.startswith(f"TPR 40.0% at {fpr_text} FPR")
    assert finding.interval.startswith("[")


def test_fewer_than_20_non_members_read_no_lift():
    verdict = verdict_of(top_members(30, 15, 10))
    assert not math.isfinite(verdict.lift)
    assert "no FPR up to 5% can be measured" in verdict.text


@pytest.mark.parametrize("n_neg", [100, 150, 999])
def test_the_metrics_frame_leaves_unresolvable_tprs_empty(n_neg):
    from privaudit.report import MIAttackReport

    frame = MIAttackReport([top_members(100, n_neg, 4)], n_bootstrap=30).metrics_frame()
    row = frame.iloc[0]
    assert all(math.isnan(row[f"tpr_at_fpr_0.001{end}"]) for end in ("", "_low", "_high"))
    assert math.isfinite(row["tpr_at_fpr_0.01"]) and math.isfinite(row["tpr_at_fpr_0.0"])
    assert row["smallest_resolvable_fpr"] == pytest.approx(1 / n_neg)
