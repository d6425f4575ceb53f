"""The gate on every result kind: the number it reads, its budgets' boundaries, its inputs."""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from gate_results import N_BOOTSTRAP, attack_result, dp_result, risk_result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privaudit.policy import GateResult, PolicyError, UnmatchedBudgetWarning, gate
from privaudit.report import AuditReport, headline_epsilon
from privaudit.results import ResultsStore


def _attack(result, name, fpr=None):
    """The reference: the result's own metrics, at the gate's settings."""
    metrics = result.metrics(fprs=() if fpr is None else (fpr,), n_bootstrap=N_BOOTSTRAP,
                             random_state=0)
    return metrics["tpr_at_fpr"][str(fpr)] if fpr is not None else metrics[name]


def _estimate(estimate):
    return {"value": estimate.value, "low": estimate.low}


#: Per kind: the metric budgeted, the budget's extra keys, the reference reading.
CASES = {
    "model": ("auc", {}, lambda r: _attack(r, "auc")),
    "llm": ("tpr_at_fpr", {"fpr": 0.1}, lambda r: _attack(r, "tpr_at_fpr", 0.1)),
    "unlearning": ("advantage", {}, lambda r: _attack(r, "advantage")),
    "synthetic": ("risk", {}, lambda r: _estimate(r.risk())),
    "attribute": ("attribute_advantage", {}, lambda r: _estimate(r.advantage())),
    # A lower bound itself: read the same at both bases.
    "dp": ("epsilon_lower_bound", {}, lambda r: {"value": r.epsilon_lower_bound,
                                                 "low": r.epsilon_lower_bound}),
}


def _gate(results, rules, **options):
    return gate(results, {"rules": rules, **options.pop("policy", {})},
                n_bootstrap=N_BOOTSTRAP, **options)


@pytest.mark.parametrize("basis", ["lower", "point"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_kind_fails_just_above_its_budget_and_passes_at_and_below(every_kind, kind,
                                                                        basis):
    metric, extra, reference = CASES[kind]
    result = every_kind[kind]
    expected = reference(result)["low" if basis == "lower" else "value"]
    assert math.isfinite(expected)
    outcomes = []
    for budget in (expected - 1e-9, expected, expected + 1e-9):
        if not METRIC_RANGE[metric][0] <= budget <= METRIC_RANGE[metric][1]:
            outcomes.append("fail" if budget < expected else "pass")  # outside the range
            continue
        checked = _gate([result], [{"kind": kind, metric: {"max": budget, **extra}}],
                        basis=basis)
        (check,) = checked.checks
        assert check.value == pytest.approx(expected, abs=1e-12)
        assert (check.kind, check.basis, check.budget) == (kind, basis, budget)
        assert checked.passed == (check.outcome == "pass")
        outcomes.append(check.outcome)
    assert outcomes == ["fail", "pass", "pass"]


METRIC_RANGE = {"auc": (0, 1), "tpr_at_fpr": (0, 1), "advantage": (0, 1), "risk": (0, 1),
                "attribute_advantage": (-1, 1), "epsilon_lower_bound": (0, math.inf)}


def test_the_lower_bound_passes_what_the_point_estimate_exceeds(every_kind):
    result = every_kind["llm"]
    auc = _attack(result, "auc")
    between = (auc["low"] + auc["value"]) / 2
    rules = [{"auc": {"max": between}}]
    assert _gate([result], rules).passed                      # the evidence: not exceeded
    assert not _gate([result], rules, basis="point").passed   # the estimate: exceeded
    assert not _gate([result], rules, policy={"basis": "point"}).passed
    # A budget's own basis wins over the policy's and the caller's.
    own = [{"auc": {"max": between, "basis": "lower"}}]
    assert _gate([result], own, basis="point", policy={"basis": "point"}).passed


def test_the_effective_epsilon_reads_jagielski_bound_or_the_plug_in(every_kind):
    result = every_kind["llm"]
    bound = headline_epsilon(result, confidence=0.95, random_state=0)["value"]
    assert 0 < bound < math.inf
    for budget, outcome in ((bound, "pass"), (bound * (1 - 1e-9), "fail")):
        (check,) = _gate([result], [{"effective_epsilon": {"max": budget}}]).checks
        assert (check.value, check.outcome) == (bound, outcome)
    # TAPAS's plug-in estimate is infinite as soon as a threshold flags members and no
    # non-member: at basis point any budget is exceeded, at the lower bound it is not.
    assert _attack(result, "effective_epsilon")["value"] == math.inf
    rules = [{"effective_epsilon": {"max": 1e6}}]
    (check,) = _gate([result], rules, basis="point").checks
    assert (check.value, check.outcome) == (math.inf, "fail")
    assert _gate([result], rules).passed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budget=st.floats(0, 1), basis=st.sampled_from(["lower", "point"]))
def test_a_check_fails_exactly_when_the_reading_exceeds_the_budget(budget, basis):
    result = attack_result("llm", signal=0.5, n=40)
    reading = _attack(result, "advantage")["low" if basis == "lower" else "value"]
    (check,) = _gate([result], [{"advantage": {"max": budget}}], basis=basis).checks
    assert check.status == ("fail" if reading > budget else "pass")


@pytest.mark.parametrize(("mode", "passed", "outcome"), [
    ("warn", True, "warn"), ("fail", False, "fail"), ("pass", True, "pass")])
def test_an_unresolvable_fpr_is_unmeasurable_and_the_policy_decides(mode, passed, outcome):
    # 100 non-members cannot resolve FPR 0.001: that TPR is the TPR at FPR 0.
    result = attack_result("model", signal=3.0)
    checked = _gate([result], [{"tpr_at_fpr": {"fpr": 0.001, "max": 0.0}}],
                    policy={"unmeasurable": mode})
    (check,) = checked.checks
    assert (check.status, check.outcome, checked.passed) == ("unmeasurable", outcome, passed)
    assert math.isnan(check.value) and "100 non-members" in check.note
    # At FPR 0.01 (one false positive in 100) the same budget is measured and exceeded.
    measured = _gate([result], [{"tpr_at_fpr": {"fpr": 0.01, "max": 0.0}}]).checks[0]
    assert measured.status == "fail"


def test_a_metric_without_a_number_at_its_basis_is_unmeasurable_never_passed(every_kind):
    result = every_kind["llm"]
    no_interval = gate([result], {"rules": [{"auc": {"max": 0.5}}]}, n_bootstrap=0)
    (check,) = no_interval.checks
    assert check.status == "unmeasurable" and "basis point" in check.note
    assert gate([result], {"rules": [{"auc": {"max": 0.5}}]}, n_bootstrap=0,
                basis="point").checks[0].status == "fail"
    cross_fitted = attack_result("model", signal=2.0, out_of_fold=True)
    (check,) = _gate([cross_fitted], [{"effective_epsilon": {"max": 0.1}}]).checks
    assert check.status == "unmeasurable" and "no lower bound" in check.note
    every_control_succeeds = risk_result(n_control=200)
    (check,) = _gate([every_control_succeeds], [{"risk": {"max": 0.1}}]).checks
    assert check.status == "unmeasurable" and "NaN" in check.note


def test_a_dp_budget_of_claim_reads_each_result_s_own_claim():
    refuted, kept = dp_result(signal=4.0, claim=1.0), dp_result(signal=4.0, claim=20.0)
    checked = _gate([refuted, kept], [{"kind": "dp", "epsilon_lower_bound": {"max": "claim"}}])
    assert [(c.budget, c.outcome) for c in checked.checks] == [(1.0, "fail"), (20.0, "pass")]
    assert "rdp" in checked.checks[0].note


def test_rules_cover_results_by_target_attack_and_kind_patterns():
    results = [attack_result("llm", target="gpt-a", attack="loss"),
               attack_result("llm", target="gpt-b", attack="min-k"),
               attack_result("unlearning", target="gpt-a", attack="loss"), risk_result()]
    def covered(**scope):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnmatchedBudgetWarning)
            checks = _gate(results, [{**scope, "auc": {"max": 1.0}}]).checks
        return [(c.kind, c.target, c.attack) for c in checks]

    assert covered() == [("llm", "gpt-a", "loss"), ("llm", "gpt-b", "min-k"),
                         ("unlearning", "gpt-a", "loss")]  # not the risk: no AUC there
    assert covered(kind="llm", target="gpt-?") == covered(kind="l*")[:2]
    assert covered(attack="min-*") == [("llm", "gpt-b", "min-k")]
    assert covered(target="gpt-a", kind="unlearning") == [("unlearning", "gpt-a", "loss")]
    assert covered(target="GPT-A") == []  # case-sensitive, as names are
    assert covered(dataset="tv16") == [] and covered(generator="?*") == []


def test_a_generator_audit_s_records_are_told_apart_by_generator():
    copier, dp = (attack_result("generator", target="record 7", attack="groundhog", seed=s)
                  for s in (0, 1))
    copier.generator, dp.generator = "copier", "dp-bayes-eps1"
    checks = _gate([copier, dp], [{"generator": "dp-*", "auc": {"max": 1.0}}]).checks
    assert [c.artefact for c in checks] == ["record 7 (dp-bayes-eps1)"]


def test_a_budget_covering_no_result_warns_or_with_strict_is_an_error():
    results = [attack_result("llm")]
    rules = [{"name": "typo", "target": "gtp-*", "auc": {"max": 0.6}},
             {"kind": "llm", "auc": {"max": 0.9}}]
    unmatched = r"auc budget of rule 'typo' \(target 'gtp-\*'\)"
    with pytest.warns(UnmatchedBudgetWarning, match=unmatched):
        checked = _gate(results, rules)
    assert len(checked.checks) == 1 and len(checked.unmatched) == 1
    with pytest.raises(PolicyError, match=r"auc budget of rule 'typo' .* covers no result"):
        _gate(results, rules, strict=True)


def test_reports_lists_and_saved_folders_give_the_same_checks(tmp_path):
    member, baseline = attack_result("llm", signal=1.0), attack_result(
        "llm", signal=0.2, target="texts-only", attack="blind", role="baseline")
    report = AuditReport([member], baselines=[baseline], kind="llm", func="audit_llm")
    rules = [{"auc": {"max": 0.7}}]
    from_report = _gate(report, rules)
    from_list = _gate([member, baseline], rules)
    ResultsStore(tmp_path / "a").save_all([member])
    ResultsStore(tmp_path / "b").save_all([baseline])
    from_folder = _gate(tmp_path, rules)
    from_folders = _gate([tmp_path / "a", str(tmp_path / "b")], rules)
    for checked in (from_report, from_list, from_folder, from_folders):
        assert [(c.target, c.outcome, c.value) for c in checked.checks] == [
            (c.target, c.outcome, c.value) for c in from_report.checks]
        assert checked.not_gated == 1   # the blind baseline: evidence on the split
    for bad in ("not a result", [member, 3], 3.0, []):
        with pytest.raises((TypeError, ValueError, OSError), match=r"results|exist"):
            _gate(bad, rules)


def test_the_junit_file_has_one_testcase_per_check_with_failures_and_skips(tmp_path):
    results = [attack_result("llm", signal=2.0, target="leaky"),
               attack_result("llm", signal=0.0, target="quiet")]
    checked = _gate(results, [{"name": "r", "auc": {"max": 0.6}},
                              {"tpr_at_fpr": {"fpr": 0.001, "max": 0.1}}])
    assert isinstance(checked, GateResult) and checked.exit_code == 1
    path = checked.to_junit(tmp_path / "out" / "gate.xml")
    root = ET.parse(path).getroot()
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(checked.checks) == int(suite.get("tests")) == 4
    failures = [c for c in cases if c.find("failure") is not None]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert (len(failures), len(skipped)) == (1, 2) == (int(suite.get("failures")),
                                                        int(suite.get("skipped")))
    assert failures[0].get("name") == "auc | leaky | loss"
    assert failures[0].get("classname") == "privaudit.gate.r"
    assert "> budget 0.6" in failures[0].find("failure").get("message")
    assert "resolve" in skipped[0].find("skipped").get("message")
    table = checked.table()
    assert list(table["outcome"]) == ["fail", "pass", "warn", "warn"]
    assert np.isnan(table["value"].iloc[2])


def test_the_gate_reads_the_numbers_the_report_tabulates(every_kind):
    """Against a second path: ``AuditReport.to_frame``, the report's metrics table."""
    results = list(every_kind.values())
    frame = AuditReport(results, kind="").to_frame(n_bootstrap=N_BOOTSTRAP, fprs=(0.1,))
    rules = [{"auc": {"max": 1}, "advantage": {"max": 1}, "risk": {"max": 1},
              "tpr_at_fpr": {"fpr": 0.1, "max": 1}, "effective_epsilon": {"max": 1e9},
              "attribute_advantage": {"max": 1}, "epsilon_lower_bound": {"max": 1e9}}]
    columns = {"auc": "auc", "advantage": "advantage", "tpr_at_fpr@0.1": "tpr_at_fpr_0.1",
               "risk": "risk", "attribute_advantage": "advantage",
               "epsilon_lower_bound": "epsilon_lower_bound"}
    compared = 0
    for basis, suffix in (("lower", "_low"), ("point", "")):
        for check in _gate(results, rules, basis=basis).checks:
            row = frame[(frame["target"] == check.target) & (frame["attack"] == check.attack)]
            if check.metric == "effective_epsilon":
                column = "effective_epsilon_lower_bound" if basis == "lower" else (
                    "effective_epsilon")
            else:
                column = columns[check.metric] + (
                    suffix if check.metric != "epsilon_lower_bound" else "")
            assert check.value == pytest.approx(float(row[column].iloc[0]), abs=1e-12), (
                check.metric, basis)
            compared += 1
    assert compared == 2 * (4 * 3 + 1 + 1 + 1)  # 3 attack results x 4 metrics, 3 others


def test_junit_names_are_unique_when_kinds_or_budgets_repeat(tmp_path):
    """CI reporters key test cases by class and name: two checks must never share them."""
    results = [attack_result("llm", signal=2.0, target="m"),
               attack_result("unlearning", signal=0.0, target="m", seed=1)]
    checked = _gate(results, [{"name": "r", "auc": {"max": 0.6}}])
    cases = ET.parse(checked.to_junit(tmp_path / "a.xml")).getroot().iter("testcase")
    assert sorted(c.get("name") for c in cases) == ["auc | m | loss | llm",
                                                    "auc | m | loss | unlearning"]
    twice = _gate(results[:1], [{"name": "r", "tpr_at_fpr": [{"fpr": 0.1, "max": 0.5},
                                                             {"fpr": 0.1, "max": 0.9}]}])
    cases = ET.parse(twice.to_junit(tmp_path / "b.xml")).getroot().iter("testcase")
    names = [c.get("name") for c in cases]
    assert len(names) == 2 and len(set(names)) == 2 and names[1].endswith(" #2")


def test_a_precision_the_gate_does_not_read_raises_no_warning():
    """An attack that calls no record a member: its precision is NaN, not the gate's concern."""
    result = attack_result("model", signal=0.0, target="m")
    result = type(result)(labels=result.labels, scores=result.scores, attack="quantile",
                          target="m", predictions=np.zeros(len(result.labels), np.int8),
                          audit=result.audit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checked = _gate([result], [{"auc": {"max": 0.9}}])
    assert [c.outcome for c in checked.checks] == ["pass"]


def test_a_compared_artefact_is_left_out_in_memory_and_once_saved(tmp_path):
    """The LLM audit's compare= model: never gated as the audited one, from either path."""
    from privaudit.report import build_report

    main = attack_result("llm", signal=0.0, target="unlearned")
    original = attack_result("llm", signal=2.0, target="original", seed=1)
    original.audit.role = "compared"  # as audit_llm marks its compare= and retrained= models
    report = AuditReport([main], compared=[original], kind="llm")
    rules = [{"kind": "llm", "auc": {"max": 0.6}}]
    build_report(report, tmp_path / "report", n_bootstrap=N_BOOTSTRAP)
    for source in (report, tmp_path / "report"):
        checked = _gate(source, rules)
        assert [c.target for c in checked.checks] == ["unlearned"], source
        assert [e.artefact for e in checked.left_out] == ["original"]
        assert "compared artefact" in checked.left_out[0].reason


def test_a_report_folder_is_gated_with_the_report_s_own_bootstrap(tmp_path):
    """The numbers the report shows: its results.json says how many resamples made them."""
    from privaudit.report import build_report

    result = attack_result("model", signal=0.5, target="m")
    build_report([result], tmp_path / "report", n_bootstrap=50, random_state=3)
    rules = {"rules": [{"auc": {"max": 1.0}}]}
    from_folder = gate(tmp_path / "report", rules)
    by_hand = gate([result], rules, n_bootstrap=50, random_state=3)
    assert from_folder.checks[0].value == by_hand.checks[0].value
    for other in (gate([result], rules), gate([result], rules, n_bootstrap=50)):
        assert from_folder.checks[0].value != other.checks[0].value  # 1000 resamples, seed 0


def test_one_folder_reached_by_two_paths_is_gated_once(tmp_path):
    folder = tmp_path / "results"
    ResultsStore(folder).save(attack_result("model", signal=1.0, target="m"))
    (tmp_path / "latest").symlink_to(folder)
    checked = gate([folder, tmp_path / "latest"], {"rules": [{"auc": {"max": 1.0}}]},
                   n_bootstrap=N_BOOTSTRAP)
    assert len(checked.checks) == 1


def test_a_result_its_attack_could_not_measure_is_unmeasurable_not_passed():
    """Scores of 0 (no information) read AUC 0.5: never a pass on no evidence."""
    blind = attack_result("model", signal=0.0, target="m")
    blind.extra["degenerate"] = "every score was NaN: no information, every score 0"
    checked = _gate([blind], [{"auc": {"max": 0.6}, "tpr_at_fpr": {"fpr": 0.1, "max": 0.5}}])
    assert [c.outcome for c in checked.checks] == ["warn", "warn"]
    assert all("no information" in c.note for c in checked.checks)
    strict = _gate([blind], [{"auc": {"max": 0.6}}], policy={"unmeasurable": "fail"})
    assert strict.exit_code == 1


def test_a_risk_without_control_records_is_unmeasurable_and_not_a_verdict():
    """No holdout: the raw success rate (an independent table links 0.66) is no evidence."""
    from privaudit.results import AuditInfo, RiskResult

    raw = RiskResult(n_attacks=200, n_success=130, n_baseline=10, n_baseline_attacks=200,
                     attack="linkability", target="synthetic", audit=AuditInfo(kind="synthetic"))
    checked = _gate([raw], [{"risk": {"max": 0.05}}])
    assert [c.outcome for c in checked.checks] == ["warn"]
    assert "no control records" in checked.checks[0].note
    verdict = AuditReport([raw], kind="synthetic").with_settings(n_bootstrap=0).verdict
    assert verdict.severity == "undefined" and verdict.label == "No control set"
    assert "not a residual risk" in verdict.text
