"""Issue 20 (A): TPR at FPR under ties (randomised threshold), resolvable FPRs, exact lift test."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import stats

from privaudit.metrics import (
    bootstrap_ci,
    false_positives_allowed,
    fpr_is_resolvable,
    lift_p_value,
    smallest_resolvable_fpr,
    tpr_at_fpr,
)
from privaudit.results import AttackResult


def tie_block(n_members: int, n_non_members: int, n_tied: int, seed: int = 0):
    """Colluding-style scores: every member tied at the top with ``n_tied`` non-members."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_members, int), np.zeros(n_non_members, int)]
    scores = np.r_[np.ones(n_members), np.ones(n_tied),
                   rng.uniform(0, 0.5, n_non_members - n_tied)]
    return labels, scores


# ------------------------------------------------------------ randomised threshold


@pytest.mark.parametrize("seed", range(5))
def test_randomized_equals_the_step_rule_without_ties(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 300)
    scores = rng.normal(size=300) + labels
    for fpr in (0.0, 0.003, 0.01, 0.1, 0.5):
        assert tpr_at_fpr(labels, scores, fpr, randomized=True) == pytest.approx(
            tpr_at_fpr(labels, scores, fpr), abs=1e-12)


@pytest.mark.parametrize(("n_tied", "fpr", "expected"), [
    (3, 0.01, 1.0),        # 3 of 600 tied <= 6 admitted: the whole block
    (12, 0.01, 0.5),       # 6 of 12 tied non-members admitted: half the block
    (8, 0.01, 0.75),
    (600, 0.1, 0.1),       # every record tied: the diagonal
])
def test_randomized_reads_the_segment_across_a_tie_block(n_tied, fpr, expected):
    labels, scores = tie_block(600, 600, n_tied)
    assert tpr_at_fpr(labels, scores, fpr, randomized=True) == pytest.approx(expected)
    # The step rule jumps: all or nothing of the block.
    assert tpr_at_fpr(labels, scores, fpr) in (0.0, 1.0)


@pytest.mark.parametrize("n_tied", [4, 5, 6])
def test_a_tie_block_does_not_split_the_interval_between_0_and_1(n_tied):
    # Yeom's colluding model: all members tied at the top with a few non-members. The
    # step rule's bootstrap is bimodal ({0, 1}) when resamples put more than 6 tied
    # non-members in the block; the randomised TPR is continuous, its interval stays high
    # and holds the point estimate.
    labels, scores = tie_block(600, 600, n_tied)
    step = bootstrap_ci(functools.partial(tpr_at_fpr, fpr=0.01), labels, scores,
                        n_resamples=400, random_state=1)
    rand = bootstrap_ci(functools.partial(tpr_at_fpr, fpr=0.01, randomized=True), labels,
                        scores, n_resamples=400, random_state=1)
    assert step.value == 1.0 and step.low == 0.0
    assert rand.low <= rand.value <= rand.high
    assert rand.value == 1.0 and rand.low > 0.4


def test_the_metrics_dict_reads_the_randomised_tpr():
    labels, scores = tie_block(600, 600, 3)
    m = AttackResult(labels=labels, scores=scores, attack="colluding").metrics(
        n_bootstrap=300, random_state=0)
    estimate = m["tpr_at_fpr"]["0.01"]
    assert estimate["value"] == 1.0 and estimate["low"] > 0.5


def test_randomized_must_be_a_bool():
    with pytest.raises(TypeError, match="'randomized' parameter of tpr_at_fpr"):
        tpr_at_fpr([0, 1], [0.1, 0.2], 0.1, randomized="yes")


# ------------------------------------------------------------ resolvable FPRs


@pytest.mark.parametrize(("fpr", "n_neg", "allowed", "resolvable"), [
    (0.001, 100, 0, False), (0.001, 150, 0, False), (0.01, 100, 1, True),
    (0.001, 1000, 1, True), (0.29, 100, 29, True), (0.0, 100, 0, True),
    (0.001, 999, 0, False), (0.01, 99, 0, False),
])
def test_an_fpr_is_resolvable_when_one_false_positive_fits(fpr, n_neg, allowed, resolvable):
    assert false_positives_allowed(fpr, n_neg) == allowed
    assert fpr_is_resolvable(fpr, n_neg) is resolvable


def test_smallest_resolvable_fpr():
    assert smallest_resolvable_fpr(100) == 0.01
    assert math.isnan(smallest_resolvable_fpr(0))


@pytest.mark.parametrize(("n_neg", "resolvable"), [
    (100, {"0.0": True, "0.001": False, "0.01": True, "0.1": True}),
    (150, {"0.0": True, "0.001": False, "0.01": True, "0.1": True}),
    (2000, {"0.0": True, "0.001": True, "0.01": True, "0.1": True}),
    (50, {"0.0": True, "0.001": False, "0.01": False, "0.1": True}),
])
def test_the_metrics_dict_says_which_fprs_are_resolvable(n_neg, resolvable):
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(100, int), np.zeros(n_neg, int)]
    result = AttackResult(labels=labels, scores=rng.normal(size=labels.size))
    m = result.metrics(n_bootstrap=0)
    assert m["fpr_resolution"]["resolvable"] == resolvable
    assert m["fpr_resolution"]["smallest_fpr"] == pytest.approx(1 / n_neg)
    smallest = min((float(k) for k, v in resolvable.items() if v and float(k) > 0))
    assert m["fpr_resolution"]["smallest_resolvable"] == str(smallest)
    for key, ok in resolvable.items():
        assert (m["tpr_p_value"][key] is None) == (not ok or key == "0.0")


# ------------------------------------------------------------ exact lift test


def test_the_p_value_is_the_negative_hypergeometric_tail():
    # RT in the demo: 4 of 100 members above every one of 100 non-members: p ~ 0.06.
    labels = np.r_[np.ones(100, int), np.zeros(100, int)]
    scores = np.r_[[10, 10, 10, 10], np.zeros(96), np.arange(100) / 100.0]
    assert lift_p_value(labels, scores, 0.0) == pytest.approx(
        stats.nhypergeom(200, 100, 1).sf(3))
    assert lift_p_value(labels, scores, 0.0) == pytest.approx(0.0606, abs=1e-3)


@pytest.mark.parametrize("seed", range(3))
def test_the_p_value_is_valid_under_the_null(seed):
    # No signal: the p-value is (super-)uniform, P(p <= 0.05) <= 0.05 up to noise.
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(60, int), np.zeros(200, int)]
    p = np.array([lift_p_value(labels, rng.integers(0, 20, labels.size).astype(float), 0.01)
                  for _ in range(300)])
    assert np.mean(p <= 0.05) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)


@pytest.mark.parametrize(("n_tied", "fpr", "small"), [
    (3, 0.01, True),    # the block fits under 1% FPR: certainty, tiny p
    (12, 0.01, False),  # the block straddles 1%: conservatively no evidence there
    (12, 0.1, True),    # ... but full evidence at 10%
])
def test_ties_are_conservative_never_inflating(n_tied, fpr, small):
    labels, scores = tie_block(600, 600, n_tied)
    p = lift_p_value(labels, scores, fpr)
    assert (p < 1e-10) is small
    # Random tie-breaking could only find more members above the boundary.
    assert p >= lift_p_value(labels, scores + 1e-9 * labels, fpr)


def test_lift_p_value_of_one_class_is_nan():
    assert math.isnan(lift_p_value([1, 1, 1], [0.1, 0.2, 0.3], 0.1))


@pytest.mark.parametrize(("n_members", "n_neg", "fpr"), [(50, 80, 0.0), (50, 80, 0.05),
                                                        (120, 40, 0.1), (30, 300, 0.01)])
def test_the_p_value_matches_the_negative_hypergeometric_law(n_members, n_neg, fpr):
    rng = np.random.default_rng(n_members + n_neg)
    labels = np.r_[np.ones(n_members, int), np.zeros(n_neg, int)]
    scores = rng.normal(size=labels.size) + 0.8 * labels
    allowed = false_positives_allowed(fpr, n_neg)
    boundary = np.sort(scores[labels == 0])[::-1][allowed]
    found = int(np.sum(scores[labels == 1] > boundary))
    expected = stats.nhypergeom(labels.size, n_members, allowed + 1).sf(found - 1)
    assert lift_p_value(labels, scores, fpr) == pytest.approx(expected, rel=1e-9, abs=1e-13)


def test_a_huge_lift_keeps_a_tiny_p_value_not_rounding_noise():
    # 20,000 per side with a clear shift: the p-value is far below 1e-10 (nhypergeom.sf,
    # computed as 1 - cdf, would return noise of that order or 0).
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(20_000, int), np.zeros(20_000, int)]
    scores = rng.normal(size=labels.size) + 0.5 * labels
    assert 0 < lift_p_value(labels, scores, 0.01) < 1e-20


@pytest.mark.parametrize("seed", range(4))
def test_the_tpr_interval_always_holds_its_estimate(seed):
    # Small samples with heavy ties: percentile intervals can miss the estimate; the
    # metrics dict stretches them to hold it.
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(25, int), np.zeros(25, int)]
    scores = rng.integers(0, 3, 50) + 2.0 * labels * rng.integers(0, 2, 50)
    m = AttackResult(labels=labels, scores=scores.astype(float)).metrics(
        fprs=(0.0, 0.04, 0.1, 0.3), n_bootstrap=60, random_state=seed)
    for estimate in [*m["tpr_at_fpr"].values(), m["fpr_resolution"]["smallest"]["tpr"]]:
        assert estimate["low"] <= estimate["value"] <= estimate["high"]
