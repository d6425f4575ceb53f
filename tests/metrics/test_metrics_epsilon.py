"""effective_epsilon (TAPAS point estimate) and effective_epsilon_lower_bound (Jagielski)."""

from __future__ import annotations

import math

import metrics_reference as ref
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import (
    EpsilonBound,
    effective_epsilon,
    effective_epsilon_lower_bound,
)
from privaudit.metrics._epsilon import _epsilon_bounds

# ----------------------------------------------------------------- point estimate


def random_cases(seed, count):
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(2, 120))
        labels = rng.integers(0, 2, n)
        labels[:2] = [0, 1]
        if i % 2:
            scores = rng.integers(0, 5, n).astype(float)  # heavy ties
        else:
            scores = rng.normal(size=n) + rng.uniform(0, 2) * labels
        yield labels, scores


@pytest.mark.filterwarnings("ignore::privaudit.exceptions.DegenerateInputWarning")
@pytest.mark.parametrize("min_count", [0, 1, 3, 10])
def test_effective_epsilon_matches_tapas_loop(min_count):
    for labels, scores in random_cases(min_count, 80):
        ours = effective_epsilon(labels, scores, min_count=min_count)
        n = len(scores)
        k = 0 if min_count == 0 else max(min(min_count, int(0.1 * n)), 1)
        if n - 2 * k <= 0:
            assert math.isnan(ours)
            continue
        assert ours == pytest.approx(ref.effective_epsilon(labels, scores, min_count), abs=1e-12)


def test_effective_epsilon_pinned():
    # Scores 0..9; members {0, 4, 6, 7, 9}, non-members {1, 2, 3, 5, 8}. n = 10, so
    # k = max(min(10, 1), 1) = 1: drop scores 0 and 9, thresholds t = 1..8.
    # (TP/5, FP/5) for t = 1..8: (4,5) (4,4) (4,3) (4,2) (3,2) (3,1) (2,1) (1,1).
    # TPR/FPR:          .8   1   4/3  2   1.5  3    2    1
    # (1-FPR)/(1-TPR):  0    1   2    3   1.5  2   4/3   1
    # max = 3 (at t = 4 and t = 6) -> log 3.
    labels = np.zeros(10, int)
    labels[[0, 4, 6, 7, 9]] = 1
    scores = np.arange(10.0)
    assert effective_epsilon(labels, scores) == pytest.approx(math.log(3))
    # With every score a threshold, t = 9 has TP = 1 > 0 = FP: infinite (as TAPAS).
    assert effective_epsilon(labels, scores, min_count=0) == math.inf


def test_effective_epsilon_infinite_when_all_members_above_some_non_members():
    # Threshold with TPR = 1 and FPR < 1 -> inf (second TAPAS condition).
    labels = np.r_[np.ones(20, int), np.zeros(20, int)]
    scores = np.r_[np.arange(20, 40), np.arange(0, 40, 2)].astype(float)
    assert effective_epsilon(labels, scores) == math.inf


def test_effective_epsilon_worse_than_random_is_zero():
    # Members 0..29, non-members 10.5..39.5: TPR_t <= FPR_t at every threshold, so
    # every ratio is <= 1; TAPAS would return a negative log.
    labels = np.r_[np.ones(30, int), np.zeros(30, int)]
    scores = np.r_[np.arange(30), np.arange(30) + 10.5].astype(float)
    assert effective_epsilon(labels, scores) == 0.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(-5, 5)), min_size=25, max_size=80)
    .filter(lambda rows: len({r[0] for r in rows}) == 2)
)
def test_effective_epsilon_properties(rows):
    labels = np.array([r[0] for r in rows])
    scores = np.array([r[1] for r in rows], dtype=float)
    eps = effective_epsilon(labels, scores)
    assert eps >= 0
    # Ratios depend on the order of the scores only.
    assert effective_epsilon(labels, np.exp(scores / 2)) == eps
    # More thresholds can only raise the maximum.
    assert effective_epsilon(labels, scores, min_count=0) >= eps


def test_effective_epsilon_degenerate():
    with pytest.warns(DegenerateInputWarning, match="one class"):
        assert math.isnan(effective_epsilon([1, 1, 1], [0.1, 0.2, 0.3]))
    with pytest.warns(DegenerateInputWarning, match="no threshold"):
        assert math.isnan(effective_epsilon([0, 1], [0.1, 0.2]))


@pytest.mark.parametrize(
    ("labels", "scores", "kwargs", "error", "match"),
    [
        ([0, 1, 1], [0.1, np.nan, 0.3], {}, ValueError, "finite"),
        ([0, 1, 1], [0.1, np.inf, 0.3], {}, ValueError, "finite"),
        ([0, 1], [0.1, 0.2, 0.3], {}, ValueError, "same length"),
        ([0, 2], [0.1, 0.2], {}, ValueError, "0/1"),
        ([], [], {}, ValueError, "non-empty"),
        ([0, 1], [0.1, 0.2], {"min_count": -1}, ValueError, "'min_count'"),
        ([0, 1], [0.1, 0.2], {"min_count": 2.5}, TypeError, "'min_count'"),
    ],
)
def test_effective_epsilon_bad_input(labels, scores, kwargs, error, match):
    with pytest.raises(error, match=match):
        effective_epsilon(labels, scores, **kwargs)


# ------------------------------------------------------------------- lower bound


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
@pytest.mark.parametrize("tails", [2, 4])
def test_epsilon_bounds_match_scipy_binomtest(confidence, tails):
    for tp, n_pos, fp, n_neg in [(10, 10, 0, 10), (0, 10, 0, 10), (7, 10, 2, 10),
                                 (3, 50, 40, 50), (500, 1000, 120, 1000), (9, 9, 9, 9),
                                 (1, 30, 0, 30), (30, 30, 29, 30)]:
        low, high = _epsilon_bounds(tp, n_pos, fp, n_neg, (1 - confidence) / tails)
        ref_low, ref_high = ref.epsilon_bounds(tp, n_pos, fp, n_neg, confidence, tails)
        assert low == pytest.approx(ref_low, abs=1e-9)
        assert high == pytest.approx(ref_high, abs=1e-9)


def test_lower_bound_pinned_perfect_separation():
    # 20 members score 1, 20 non-members score 0; validation_split 0.5 -> 10 + 10 each.
    # Selection picks t = 1. On test: TP = 10/10, FP = 0/10. At level gamma each bound
    # has tail a = (1 - gamma)/2: TPR_low = a^(1/10), FPR_high = 1 - a^(1/10), so
    # eps_low = log(a^0.1 / (1 - a^0.1)), e.g. gamma = 0.95: a^0.1 = 0.691503 ->
    # log(0.691503 / 0.308497) = log(2.241521) = 0.807155; FPR_low = 0 -> eps_high = inf.
    labels = np.r_[np.ones(20, int), np.zeros(20, int)]
    scores = labels.astype(float)
    rows = effective_epsilon_lower_bound(labels, scores, validation_split=0.5, random_state=0)
    assert [r.confidence for r in rows] == [0.9, 0.95, 0.99]
    for row in rows:
        a = (1 - row.confidence) / 2
        assert row.epsilon_low == pytest.approx(math.log(a**0.1 / (1 - a**0.1)))
        assert row.epsilon_high == math.inf
        assert (row.attack, row.threshold, row.n_validation, row.n_test) == (
            "attack_0", 1.0, 20, 20)
    assert rows[1].epsilon_low == pytest.approx(0.807155, abs=1e-6)
    # joint=True: tails (1 - gamma)/4, e.g. gamma = 0.95: 0.0125^0.1 = 0.645195 ->
    # log(0.645195 / 0.354805) = log(1.818450) = 0.597984.
    joint = effective_epsilon_lower_bound(labels, scores, validation_split=0.5,
                                          random_state=0, joint=True)
    assert joint[1].epsilon_low == pytest.approx(0.597984, abs=1e-6)


def reference_lower_bound(labels, all_scores, validation, test, levels, selection):
    """Loop over attacks and thresholds with scipy's intervals (as TAPAS does)."""
    best, candidates = -1.0, {}
    y_val = labels[validation]
    for a, scores in enumerate(all_scores):
        s = scores[validation]
        for t in np.unique(s):
            tp = int(np.sum(s[y_val == 1] >= t))
            fp = int(np.sum(s[y_val == 0] >= t))
            low, _ = ref.epsilon_bounds(tp, int(np.sum(y_val)), fp,
                                        int(np.sum(y_val == 0)), selection)
            candidates[(a, float(t))] = low
            best = max(best, low)
    return best, candidates


def test_lower_bound_matches_reference_procedure():
    rng = np.random.default_rng(11)
    n = 240
    labels = rng.integers(0, 2, n)
    all_scores = np.vstack([
        rng.normal(size=n),                                  # useless
        np.round(rng.laplace(size=n) + 1.0 * labels, 1),    # informative, ties
        rng.normal(size=n) + 0.5 * labels,                   # weaker
    ])
    rows = effective_epsilon_lower_bound(labels, all_scores, validation_split=0.25,
                                         random_state=5)
    # The documented split: per class (0 then 1) a permutation; first round(n_c / 4).
    split_rng = np.random.default_rng(5)
    validation, test = [], []
    for cls in (0, 1):
        idx = split_rng.permutation(np.flatnonzero(labels == cls))
        n_val = int(np.floor(0.25 * len(idx) + 0.5))
        validation += idx[:n_val].tolist()
        test += idx[n_val:].tolist()
    validation, test = np.sort(validation), np.sort(test)
    best, candidates = reference_lower_bound(labels, all_scores, validation, test,
                                             [0.9, 0.95, 0.99], 0.9)
    attack = int(rows[0].attack.split("_")[1])
    assert candidates[(attack, rows[0].threshold)] == pytest.approx(best, abs=1e-9)
    assert best > 0
    s = all_scores[attack, test]
    y = labels[test]
    tp = int(np.sum(s[y == 1] >= rows[0].threshold))
    fp = int(np.sum(s[y == 0] >= rows[0].threshold))
    for row in rows:
        low, high = ref.epsilon_bounds(tp, int(y.sum()), fp, int((y == 0).sum()),
                                       row.confidence)
        assert row.epsilon_low == pytest.approx(low, abs=1e-9)
        assert row.epsilon_high == pytest.approx(high, abs=1e-9)
        assert (row.n_validation, row.n_test) == (len(validation), len(test))


def randomised_response(n, seed, epsilon=1.0):
    """Members answer 1 w.p. e^eps / (1 + e^eps), non-members w.p. 1 / (1 + e^eps):
    exactly epsilon-DP, and the threshold 1 attains TPR / FPR = e^eps."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    p = np.where(labels == 1, math.exp(epsilon) / (1 + math.exp(epsilon)),
                 1 / (1 + math.exp(epsilon)))
    return labels, (rng.random(n) < p).astype(float)


def test_randomised_response_bound_is_valid_in_repeated_runs():
    # True epsilon 1. Every one of 20 audits of 2,000 records stays below 1 at 95%.
    for seed in range(20):
        rows = effective_epsilon_lower_bound(*randomised_response(2000, seed),
                                             random_state=seed)
        assert all(r.epsilon_low < 1 for r in rows), (seed, rows)
        assert all(r.epsilon_low <= r.epsilon_high for r in rows)
    # Over 200 smaller audits the failure rate is within the nominal level (measured:
    # 4% at 90%, 1.5% at 95%, 0% at 99%; CP and the union bound are conservative), and
    # the upper bound on the attack's effective epsilon rarely falls below 1 either.
    lows, highs = [], []
    for seed in range(200):
        rows = effective_epsilon_lower_bound(*randomised_response(1000, seed),
                                             random_state=seed)
        lows.append([r.epsilon_low for r in rows])
        highs.append([r.epsilon_high for r in rows])
    above = (np.array(lows) > 1).mean(axis=0)
    below = (np.array(highs) < 1).mean(axis=0)
    assert above[0] <= 0.1 and above[1] <= 0.05 and above[2] <= 0.01
    assert below[0] <= 0.1 and below[1] <= 0.05 and below[2] <= 0.01


def test_randomised_response_bound_approaches_epsilon():
    # Measured (95%): mean 0.87 at n = 2,000, 0.96 at n = 20,000, 0.97-0.99 at 200,000.
    means = []
    for n in (2000, 20_000):
        means.append(np.mean([
            effective_epsilon_lower_bound(*randomised_response(n, s), random_state=s)[1]
            .epsilon_low for s in range(5)
        ]))
    big = effective_epsilon_lower_bound(*randomised_response(200_000, 0), random_state=0)
    assert means[0] < means[1] < big[1].epsilon_low
    assert 0.95 < big[1].epsilon_low < 1
    assert big[1].epsilon_low < 1 < big[1].epsilon_high


def test_selection_finds_the_informative_attack():
    labels, rr = randomised_response(4000, 3)
    noise = np.random.default_rng(0).normal(size=4000)
    rows = effective_epsilon_lower_bound(labels, {"noise": noise, "rr": rr}, random_state=1)
    assert {r.attack for r in rows} == {"rr"} and rows[0].threshold == 1.0
    rows2d = effective_epsilon_lower_bound(labels, np.vstack([noise, rr]), random_state=1)
    assert rows2d[0].attack == "attack_1"
    assert [r.epsilon_low for r in rows2d] == [r.epsilon_low for r in rows]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.floats(0.05, 0.5))
def test_lower_bound_properties(seed, split):
    labels, scores = randomised_response(300, seed, epsilon=2.0)
    scores = scores + np.random.default_rng(seed).normal(scale=0.3, size=300)
    rows = effective_epsilon_lower_bound(labels, scores, validation_split=split,
                                         random_state=seed)
    assert all(isinstance(r, EpsilonBound) for r in rows)
    lows = [r.epsilon_low for r in rows]
    assert all(x >= 0 for x in lows)
    assert lows[0] >= lows[1] >= lows[2]  # higher confidence, lower bound
    assert all(r.epsilon_low <= r.epsilon_high for r in rows)
    assert rows == effective_epsilon_lower_bound(labels, scores, validation_split=split,
                                                 random_state=seed)
    joint = effective_epsilon_lower_bound(labels, scores, validation_split=split,
                                          random_state=seed, joint=True)
    assert all(j.epsilon_low <= r.epsilon_low for j, r in zip(joint, rows, strict=True))
    assert all(j.epsilon_high >= r.epsilon_high for j, r in zip(joint, rows, strict=True))


def test_scalar_confidence_level():
    labels, scores = randomised_response(500, 0)
    rows = effective_epsilon_lower_bound(labels, scores, confidence_levels=0.95,
                                         random_state=0)
    assert len(rows) == 1 and rows[0].confidence == 0.95


def test_lower_bound_degenerate_splits():
    labels = np.r_[np.ones(3, int), np.zeros(50, int)]
    scores = np.arange(53.0)
    # 10% of 3 members rounds to 0: the validation part has no member.
    with pytest.warns(DegenerateInputWarning, match="validation"):
        rows = effective_epsilon_lower_bound(labels, scores, random_state=0)
    assert all(math.isnan(r.epsilon_low) and math.isnan(r.threshold) for r in rows)
    assert rows[0].attack == "" and rows[0].n_validation + rows[0].n_test == 53
    # 60% of 1 member rounds to 1: the test part has no member.
    with pytest.warns(DegenerateInputWarning, match="test"):
        rows = effective_epsilon_lower_bound(np.r_[1, np.zeros(9, int)], np.arange(10.0),
                                             validation_split=0.6, random_state=0)
    assert math.isnan(rows[0].epsilon_high)
    with pytest.warns(DegenerateInputWarning):
        rows = effective_epsilon_lower_bound(np.ones(10, int), np.arange(10.0))
    assert math.isnan(rows[0].epsilon_low)


@pytest.mark.parametrize(
    ("scores", "kwargs", "error", "match"),
    [
        ([0.1, 0.2, np.nan, 0.4], {}, ValueError, "finite"),
        ([0.1, 0.2, 0.3], {}, ValueError, "same length"),
        ({"a": [0.1, 0.2, 0.3, 0.4], "b": [0.1]}, {}, ValueError, "same length"),
        ({}, {}, ValueError, "non-empty"),
        (np.zeros((2, 2, 1)), {}, ValueError, "2-D"),
        ([0.1, 0.2, 0.3, 0.4], {"validation_split": 0.0}, ValueError, "'validation_split'"),
        ([0.1, 0.2, 0.3, 0.4], {"validation_split": 1.0}, ValueError, "'validation_split'"),
        ([0.1, 0.2, 0.3, 0.4], {"confidence_levels": []}, TypeError, "'confidence_levels'"),
        ([0.1, 0.2, 0.3, 0.4], {"confidence_levels": "0.9"}, TypeError, "'confidence_levels'"),
        ([0.1, 0.2, 0.3, 0.4], {"confidence_levels": (0.9, 1.2)}, ValueError,
         "'confidence_levels'"),
        ([0.1, 0.2, 0.3, 0.4], {"selection_confidence": 1.0}, ValueError,
         "'selection_confidence'"),
        ([0.1, 0.2, 0.3, 0.4], {"random_state": "x"}, TypeError, "'random_state'"),
    ],
)
def test_lower_bound_bad_input(scores, kwargs, error, match):
    with pytest.raises(error, match=match):
        effective_epsilon_lower_bound([0, 1, 0, 1], scores, **kwargs)


def test_lower_bound_bad_labels():
    with pytest.raises(ValueError, match=r"'labels'.*0/1"):
        effective_epsilon_lower_bound([0, 1, 2, 1], [0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="non-empty"):
        effective_epsilon_lower_bound([], [])
