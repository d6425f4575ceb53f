"""The gate on an LLM audit's memorisation results, and on every registered result type.

Each budget is checked at its boundary (a budget just below the reading fails, at and just
above it passes) against a reference computed another way: Newcombe's interval from the
extraction counts, the median's order-statistic bound from a plain binomial search, the
canaries' epsilon bound recomputed from their scores. Then the sweep: every type in
``RESULT_TYPES`` is read by a metric or named not gated with a reason, never passed.
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from gate_results import attack_result, attribute_result, dp_result, risk_result
from hypothesis import given, settings
from hypothesis import strategies as st
from memorisation_results import (
    canary_result,
    exposed_canaries,
    extraction_result,
    random_canaries,
)
from scipy.stats import binom

from privaudit.metrics import canary_epsilon_lower_bound, newcombe_interval
from privaudit.policy import (
    METRICS,
    NOT_BUDGETED,
    UnmatchedBudgetWarning,
    gate,
    reading_type,
)
from privaudit.results import RESULT_TYPES, ProximityResult


def _boundary_outcomes(results, rule, expected, basis):
    """The outcomes of budgets just below, at and just above ``expected``."""
    (metric, budget), = rule.items()
    outcomes = []
    for limit in (expected - 1e-9, expected, expected + 1e-9):
        checked = gate(results, {"rules": [{metric: {**budget, "max": limit}}]}, basis=basis)
        (check,) = checked.checks
        assert check.value == pytest.approx(expected, abs=1e-12)
        assert checked.passed == (check.outcome == "pass")
        outcomes.append(check.outcome)
    return outcomes


@pytest.mark.parametrize("basis", ["lower", "point"])
def test_k_extractability_reads_newcombe_s_difference_of_the_member_and_held_out_rates(
        basis):
    result = extraction_result(member_hits=8, held_out_hits=1, n=20)
    reference = newcombe_interval(8, 20, 1, 20, 0.95)   # from the counts, not the result
    expected = reference.low if basis == "lower" else reference.value
    assert 0 < expected < 1
    outcomes = _boundary_outcomes([result], {"extraction": {}}, expected, basis)
    assert outcomes == ["fail", "pass", "pass"]


@pytest.mark.parametrize("basis", ["lower", "point"])
def test_a_bootstrap_check_reads_its_stored_difference(basis):
    result = extraction_result()
    difference = result.comparisons["extraction-strength"]["difference"]
    expected = difference["low" if basis == "lower" else "value"]
    rule = {"extraction": {"check": "extraction-strength"}}
    assert _boundary_outcomes([result], rule, expected, basis) == ["fail", "pass", "pass"]


def _median_lower_bound(values):
    """The reference: the largest order statistic ``x_(l)`` with P(Bin(n, 1/2) < l) <= 2.5%."""
    x, n = sorted(values), len(values)
    ranks = [rank for rank in range(1, n + 1) if binom.cdf(rank - 1, n, 0.5) <= 0.025]
    return x[max(ranks) - 1] if ranks else -math.inf


@pytest.mark.parametrize(("basis", "repetitions"), [
    ("lower", None), ("point", None), ("lower", 16), ("point", 4)])
def test_exposure_reads_the_median_of_the_inserted_canaries(basis, repetitions):
    result = exposed_canaries(n=24)   # 8 canaries of each repetition count
    exposures = [row["exposure"] for row in result.canaries
                 if repetitions is None or row["repetitions"] == repetitions]
    expected = (_median_lower_bound(exposures) if basis == "lower"
                else float(np.median(exposures)))
    assert math.isfinite(expected) and expected > 0
    rule = {"exposure": {} if repetitions is None else {"repetitions": repetitions}}
    assert _boundary_outcomes([result], rule, expected, basis) == ["fail", "pass", "pass"]


@settings(max_examples=40, deadline=None)
@given(ranks=st.lists(st.integers(1, 10_000), min_size=1, max_size=40),
       budget=st.floats(0, 14))
def test_exposure_fails_exactly_when_the_median_s_order_statistic_bound_exceeds_it(ranks,
                                                                                   budget):
    result = canary_result(ranks, [1] * len(ranks))
    bound = _median_lower_bound([row["exposure"] for row in result.canaries])
    (check,) = gate([result], {"rules": [{"exposure": {"max": budget}}]}).checks
    if math.isinf(bound):   # fewer than 6 canaries: no evidence either way
        assert check.status == "unmeasurable" and math.isnan(check.value)
    else:
        assert check.value == bound and check.status == ("fail" if bound > budget else "pass")


def test_exposure_without_evidence_is_unmeasurable_never_passed():
    few = exposed_canaries(n=15)   # 5 canaries inserted 16 times: no 95% bound on a median
    (check,) = gate([few], {"rules": [{"exposure": {"max": 0.0, "repetitions": 16}}]}).checks
    assert check.status == "unmeasurable" and "median of 5 canaries" in check.note
    (check,) = gate([few], {"rules": [{"exposure": {"max": 0.0, "repetitions": 16}}]},
                    basis="point").checks
    assert check.status == "fail"
    (check,) = gate([few], {"rules": [{"exposure": {"max": 0.0, "repetitions": 2}}]},
                    basis="point").checks
    assert check.status == "unmeasurable" and "no canary inserted 2 times" in check.note
    # Canaries left out at random are not inserted: their exposure is not the model's.
    left_out = canary_result([1] * 6 + [5000] * 6, [4] * 12, included=[False] * 6 + [True] * 6)
    (check,) = gate([left_out], {"rules": [{"exposure": {"max": 3.0}}]}).checks
    assert check.value == pytest.approx(_median_lower_bound([math.log2(2)] * 6))


@pytest.mark.parametrize("basis", ["lower", "point"])
def test_the_canaries_one_run_bound_is_their_effective_epsilon_at_both_bases(basis):
    result = random_canaries(m=80)
    scores = np.array([row["score"] for row in result.canaries])
    included = np.array([row["included"] for row in result.canaries])
    reference = canary_epsilon_lower_bound(scores[included], scores[~included], delta=1e-5,
                                           confidence=0.95, random_state=0).epsilon
    assert reference > 0
    rule = {"effective_epsilon": {}}
    assert _boundary_outcomes([result], rule, reference, basis) == ["fail", "pass", "pass"]
    inserted = exposed_canaries()
    (check,) = gate([inserted], {"rules": [{"effective_epsilon": {"max": 1.0}}]}).checks
    assert check.status == "unmeasurable" and "inclusion='random'" in check.note


def test_an_extraction_check_missing_or_at_another_level_is_unmeasurable():
    result = extraction_result()
    (check,) = gate([result], {"rules": [{"extraction": {"check": "verbmem", "max": 0.5}}]}
                    ).checks
    assert check.status == "unmeasurable" and "did not run the check 'verbmem'" in check.note
    at_90 = extraction_result(confidence=0.9)
    (check,) = gate([at_90], {"rules": [{"extraction": {"max": 0.0}}]}).checks
    assert check.status == "unmeasurable" and "at 90%" in check.note
    (check,) = gate([at_90], {"rules": [{"extraction": {"max": 0.0}}]}, basis="point").checks
    assert check.status == "fail"


def _proximity_result():
    rng = np.random.default_rng(0)
    return ProximityResult("dcr", "quantile", synthetic=rng.uniform(0, 1, 60),
                           baseline=rng.uniform(0, 1, 60), target="synthetic")


def _one_of_each_type():
    return [attack_result("model"), attribute_result(), risk_result(), dp_result(),
            _proximity_result(), extraction_result(), random_canaries()]


#: A policy with a budget on every metric, loose enough to pass what it reads.
EVERY_METRIC = {"rules": [{
    "auc": {"max": 1}, "advantage": {"max": 1}, "tpr_at_fpr": {"fpr": 0.1, "max": 1},
    "effective_epsilon": {"max": 1e9}, "risk": {"max": 1}, "attribute_advantage": {"max": 1},
    "attribute_simulator_advantage": {"max": 1}, "epsilon_lower_bound": {"max": 1e9},
    "extraction": {"max": 1}, "exposure": {"max": 1e3}}]}


def test_every_registered_result_type_is_read_by_a_metric_or_named_not_gated():
    results = _one_of_each_type()
    assert {type(r).RESULT_TYPE for r in results} == set(RESULT_TYPES), (
        "a result type was added: give it a gate reading or a NOT_BUDGETED reason, and a "
        "result here")
    read = {kind for spec in METRICS.values() for kind in spec.result_types}
    for result in results:
        kind = reading_type(result)
        assert kind in read or NOT_BUDGETED.get(type(result).RESULT_TYPE), kind
    assert set(NOT_BUDGETED) <= set(RESULT_TYPES)
    checked = gate(results, EVERY_METRIC, n_bootstrap=50)
    checked_ids = {(c.target, c.attack) for c in checked.checks}
    for result in results:
        budgeted = reading_type(result) in read
        assert ((result.target, result.attack) in checked_ids) == budgeted
    (left,) = checked.left_out
    assert (left.result_type, left.reason) == ("proximity", NOT_BUDGETED["proximity"])
    assert checked.not_gated == 1 and checked.passed
    assert "1 result not gated: dcr on synthetic (closeness" in checked.summary()
    row = checked.table().iloc[-1]
    assert (row["outcome"], row["artefact"], row["note"]) == (
        "not gated", "synthetic", NOT_BUDGETED["proximity"])


def test_a_result_no_budget_covers_is_not_gated_and_named():
    results = [attack_result("llm"), extraction_result(), exposed_canaries()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnmatchedBudgetWarning)
        checked = gate(results, {"rules": [{"kind": "llm", "auc": {"max": 1.0}}]},
                       n_bootstrap=50)
    assert len(checks := checked.checks) == 1 and checks[0].attack == "loss"
    assert [(e.attack, e.result_type, e.reason) for e in checked.left_out] == [
        ("extraction", "memorisation:extraction", "no budget of the policy covers it"),
        ("canaries", "memorisation:canaries", "no budget of the policy covers it")]
    assert "2 results not gated: extraction on tiny-lm (toy-texts), canaries on" in (
        checked.summary())


def test_the_junit_file_holds_the_memorisation_checks_and_the_results_not_gated(tmp_path):
    results = [extraction_result(member_hits=8), exposed_canaries(n=24), _proximity_result()]
    policy = {"rules": [{"name": "llm", "extraction": {"max": 0.05},
                         "exposure": [{"max": 1.0}, {"max": 1.0, "repetitions": 2}]}]}
    checked = gate(results, policy)
    root = ET.parse(checked.to_junit(tmp_path / "gate.xml")).getroot()
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == int(suite.get("tests")) == len(checked.checks) + 1 == 4
    outcome = {c.get("name"): ("failure" if c.find("failure") is not None else
                               "skipped" if c.find("skipped") is not None else "pass")
               for c in cases}
    assert outcome == {
        "extraction@k-extractability | tiny-lm (toy-texts) | extraction": "failure",
        "exposure | tiny-lm (toy-texts) | canaries": "failure",
        "exposure@r2 | tiny-lm (toy-texts) | canaries": "skipped",
        "not gated | synthetic | dcr": "skipped"}
    assert (int(suite.get("failures")), int(suite.get("skipped"))) == (2, 2)
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["not_gated"] == "1"
    (not_gated,) = [c for c in cases if c.get("classname") == "privaudit.gate.not-gated"]
    assert "closeness" in not_gated.find("skipped").get("message")


def test_the_gate_reads_the_memorisation_numbers_the_report_tabulates():
    """Against a second path: ``AuditReport.to_frame``, the report's metrics table."""
    from privaudit.report import AuditReport

    results = [extraction_result(), exposed_canaries(n=24), random_canaries()]
    frame = AuditReport(results, kind="llm").to_frame(n_bootstrap=50)
    rows = {(r["attack"], i): r for i, r in enumerate(frame.to_dict("records"))}
    extraction, exposed, included = (rows[name, i] for i, name in enumerate(
        ("extraction", "canaries", "canaries")))
    policy = {"rules": [{"extraction": [{"max": 1}, {"check": "extraction-strength",
                                                     "max": 1}],
                         "exposure": {"max": 1e3, "repetitions": 16},
                         "effective_epsilon": {"max": 1e3}}]}
    lower, point = (gate(results, policy, basis=basis).checks for basis in ("lower", "point"))
    read = {(c.metric, c.basis): c.value for c in (*lower, *point) if c.status != "unmeasurable"}
    for basis, end in (("lower", "_low"), ("point", "")):
        for check in ("k-extractability", "extraction-strength"):
            assert read[f"extraction@{check}", basis] == pytest.approx(
                extraction[f"{check}_difference{end}"], abs=1e-12)
        assert read["effective_epsilon", basis] == included["epsilon_lower_bound"]
    assert read["exposure@r16", "point"] == pytest.approx(exposed["exposure_r16"])
