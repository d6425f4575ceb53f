"""clopper_pearson, wilson_interval, bootstrap_ci."""

from __future__ import annotations

import functools
import math

import metrics_reference as ref
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score

from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import (
    Estimate,
    advantage,
    bootstrap_ci,
    clopper_pearson,
    roc_auc,
    tpr_at_fpr,
    wilson_interval,
)

GRID = [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (1, 1000), (500, 1000), (999, 1000),
        (7, 13), (0, 100_000), (12_345, 100_000)]


# ------------------------------------------------------------------ Clopper-Pearson


@pytest.mark.parametrize(("k", "n"), GRID)
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_clopper_pearson_is_scipy_exact_interval(k, n, confidence):
    ours = clopper_pearson(k, n, confidence)
    theirs = stats.binomtest(k, n).proportion_ci(confidence, method="exact")
    assert ours.value == k / n
    assert ours.low == pytest.approx(theirs.low, abs=1e-10)
    assert ours.high == pytest.approx(theirs.high, abs=1e-10)


@pytest.mark.parametrize(("k", "n"), [(0, 7), (1, 7), (3, 7), (7, 7), (2, 50), (45, 50)])
def test_clopper_pearson_inverts_the_binomial_tails(k, n):
    low, high = ref.clopper_pearson(k, n, 0.9)
    ours = clopper_pearson(k, n, 0.9)
    assert ours.low == pytest.approx(low, abs=1e-9)
    assert ours.high == pytest.approx(high, abs=1e-9)


def test_clopper_pearson_pinned_closed_forms():
    # k = 0: P(X = 0 | p) = (1 - p)^n = 0.025  ->  high = 1 - 0.025^(1/10) = 0.308497.
    # k = n: symmetric, low = 0.025^(1/10) = 0.691503.
    assert clopper_pearson(0, 10).high == pytest.approx(1 - 0.025**0.1, abs=1e-12)
    assert clopper_pearson(0, 10).high == pytest.approx(0.308497, abs=1e-6)
    assert clopper_pearson(0, 10).low == 0.0
    assert clopper_pearson(10, 10).low == pytest.approx(0.691503, abs=1e-6)
    assert clopper_pearson(10, 10).high == 1.0
    # n = 1, k = 1 at 90%: low = 0.05 (P(X = 1 | p) = p = 0.05).
    assert clopper_pearson(1, 1, 0.9) == Estimate(1.0, pytest.approx(0.05), 1.0)


@pytest.mark.parametrize("n", [5, 20, 60])
def test_clopper_pearson_coverage_is_at_least_nominal(n):
    # Exact coverage: sum over k of P(k | p) [p in CI(k)], for a grid of true p.
    intervals = [clopper_pearson(k, n, 0.9) for k in range(n + 1)]
    for p in np.linspace(0.01, 0.99, 41):
        pmf = stats.binom.pmf(np.arange(n + 1), n, p)
        covered = np.array([ci.low <= p <= ci.high for ci in intervals])
        assert pmf[covered].sum() >= 0.9 - 1e-9


# -------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize(("k", "n"), GRID)
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_wilson_is_scipy_wilson_interval(k, n, confidence):
    ours = wilson_interval(k, n, confidence)
    theirs = stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
    assert ours.value == k / n
    assert ours.low == pytest.approx(theirs.low, abs=1e-10)
    assert ours.high == pytest.approx(theirs.high, abs=1e-10)


@pytest.mark.parametrize(("k", "n"), [(0, 7), (1, 7), (3, 7), (7, 7), (2, 50), (45, 50)])
def test_wilson_solves_the_score_equation(k, n):
    low, high = ref.wilson(k, n, 0.95)
    ours = wilson_interval(k, n, 0.95)
    assert ours.low == pytest.approx(low, abs=1e-9)
    assert ours.high == pytest.approx(high, abs=1e-9)


def test_wilson_pinned():
    # k = 0: centre = half = (z^2/2) / (n + z^2), so high = z^2 / (n + z^2);
    # z = 1.959964, z^2 = 3.841459, n = 10 -> 3.841459 / 13.841459 = 0.277533.
    ci = wilson_interval(0, 10)
    assert ci.low == 0.0
    assert ci.high == pytest.approx(0.277533, abs=1e-6)
    # k = 5, n = 10: centre = (5 + z^2/2) / (10 + z^2) = 1/2;
    # half = z / (n + z^2) * sqrt(k (n - k) / n + z^2 / 4) = 0.141601 * sqrt(3.460365)
    # = 0.141601 * 1.860206 = 0.263407 -> [0.236593, 0.763407].
    ci = wilson_interval(5, 10)
    assert ci.low == pytest.approx(0.236593, abs=1e-6)
    assert ci.high == pytest.approx(0.763407, abs=1e-6)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.floats(0.01, 0.999))
def test_intervals_contain_their_estimate_and_nest(kn, confidence):
    k, n = kn
    for interval in (clopper_pearson, wilson_interval):
        ci = interval(k, n, confidence)
        assert 0 <= ci.low <= ci.value <= ci.high <= 1
        wider = interval(k, n, min(0.9999, confidence + 0.0005 + (1 - confidence) / 2))
        assert wider.low <= ci.low + 1e-12 and wider.high >= ci.high - 1e-12
    # The same proportion on 4 times the data gives a narrower exact interval.
    big = clopper_pearson(4 * k, 4 * n, confidence)
    small = clopper_pearson(k, n, confidence)
    assert big.high - big.low <= small.high - small.low + 1e-12


@pytest.mark.parametrize("interval", [clopper_pearson, wilson_interval])
@pytest.mark.parametrize(
    ("k", "n", "confidence", "error", "match"),
    [
        (3, 2, 0.95, ValueError, "'k' parameter"),
        (-1, 2, 0.95, ValueError, "'k' parameter"),
        (0, 0, 0.95, ValueError, "'n' parameter"),
        (0, -3, 0.95, ValueError, "'n' parameter"),
        (1.5, 2, 0.95, TypeError, "'k' parameter"),
        (1, 2.0, 0.95, TypeError, "'n' parameter"),
        (True, 2, 0.95, TypeError, "'k' parameter"),
        (1, 2, 0.0, ValueError, "'confidence' parameter"),
        (1, 2, 1.0, ValueError, "'confidence' parameter"),
        (1, 2, 95, ValueError, "'confidence' parameter"),
    ],
)
def test_interval_bad_input(interval, k, n, confidence, error, match):
    with pytest.raises(error, match=match):
        interval(k, n, confidence)


def test_numpy_integers_accepted():
    assert clopper_pearson(np.int64(3), np.int32(10)) == clopper_pearson(3, 10)


# ----------------------------------------------------------------------- bootstrap


def gaussian_audit(n, shift, seed):
    rng = np.random.default_rng(seed)
    labels = (np.arange(n) < n // 2).astype(int)
    return labels, np.round(rng.normal(size=n) + shift * labels, 1)


def test_bootstrap_matches_a_plain_loop_reference():
    labels, scores = gaussian_audit(30, 0.8, 0)
    for metric, slow in [
        (roc_auc, ref.auc),
        (advantage, ref.advantage),
        (functools.partial(tpr_at_fpr, fpr=0.2), lambda y, s: ref.tpr_at_fpr(y, s, 0.2)),
    ]:
        ours = bootstrap_ci(metric, labels, scores, n_resamples=200, confidence=0.9,
                            random_state=7)
        theirs = ref.stratified_bootstrap(slow, labels, scores, 200, 0.9, seed=7)
        np.testing.assert_allclose(tuple(ours), theirs, atol=1e-12)


@pytest.mark.parametrize("stratified", [True, False])
def test_batched_path_equals_loop_path(stratified):
    labels, scores = gaussian_audit(400, 0.5, 1)
    pairs = [
        (roc_auc, lambda y, s: roc_auc_score(y, s)),
        (advantage, lambda y, s: advantage(y, s)),
        (functools.partial(tpr_at_fpr, fpr=0.05), lambda y, s: tpr_at_fpr(y, s, 0.05)),
        (functools.partial(tpr_at_fpr, fpr=0.0), lambda y, s: tpr_at_fpr(y, s, 0.0)),
    ]
    for batched, looped in pairs:
        a = bootstrap_ci(batched, labels, scores, n_resamples=100, random_state=3,
                         stratified=stratified)
        b = bootstrap_ci(looped, labels, scores, n_resamples=100, random_state=3,
                         stratified=stratified)
        np.testing.assert_allclose(tuple(a), tuple(b), atol=1e-12)


def test_batched_path_over_several_chunks(monkeypatch):
    import privaudit.metrics._intervals as intervals

    # Force 3 resamples per chunk so the chunking is exercised.
    monkeypatch.setattr(intervals, "_CHUNK_ELEMENTS", 3 * 50)
    labels, scores = gaussian_audit(50, 0.5, 2)
    a = bootstrap_ci(roc_auc, labels, scores, n_resamples=20, random_state=0)
    b = bootstrap_ci(lambda y, s: roc_auc(y, s), labels, scores, n_resamples=20,
                     random_state=0)
    np.testing.assert_allclose(tuple(a), tuple(b), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60))
def test_bootstrap_same_seed_same_numbers(seed, n_resamples):
    labels, scores = gaussian_audit(40, 0.5, 4)
    first = bootstrap_ci(roc_auc, labels, scores, n_resamples=n_resamples, random_state=seed)
    again = bootstrap_ci(roc_auc, labels, scores, n_resamples=n_resamples, random_state=seed)
    assert first == again
    assert first.low <= first.high
    assert 0 <= first.low and first.high <= 1
    gen = bootstrap_ci(roc_auc, labels, scores, n_resamples=n_resamples,
                       random_state=np.random.default_rng(seed))
    assert gen == first


def test_different_seeds_give_different_intervals():
    labels, scores = gaussian_audit(200, 0.5, 5)
    a = bootstrap_ci(roc_auc, labels, scores, n_resamples=100, random_state=0)
    b = bootstrap_ci(roc_auc, labels, scores, n_resamples=100, random_state=1)
    assert a.value == b.value and (a.low, a.high) != (b.low, b.high)


def test_bootstrap_value_is_metric_on_full_data_and_covers_truth():
    # Shift 1: true AUC = Phi(1 / sqrt(2)) = 0.7602. Nominal 95% coverage; over 40
    # independent audits at least 32 must contain the truth (a wrong interval, e.g. one
    # built from non-stratified ranks or the wrong quantiles, fails this).
    truth = stats.norm.cdf(1 / math.sqrt(2))
    covered = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        labels = (np.arange(400) < 200).astype(int)
        scores = rng.normal(size=400) + labels
        ci = bootstrap_ci(roc_auc, labels, scores, n_resamples=400, random_state=seed)
        assert ci.value == roc_auc(labels, scores)
        covered += ci.low <= truth <= ci.high
    assert covered >= 32


def test_custom_metric_uses_the_loop():
    labels, scores = gaussian_audit(60, 1.0, 6)
    calls = []

    def mean_gap(y, s):
        calls.append(1)
        return float(s[y == 1].mean() - s[y == 0].mean())

    ci = bootstrap_ci(mean_gap, labels, scores, n_resamples=50, random_state=0)
    assert len(calls) == 51  # full data + one per resample
    assert ci.low < ci.value < ci.high


def test_zero_resamples_switches_the_interval_off():
    labels, scores = gaussian_audit(20, 1.0, 0)
    ci = bootstrap_ci(roc_auc, labels, scores, n_resamples=0)
    assert ci.value == roc_auc(labels, scores)
    assert math.isnan(ci.low) and math.isnan(ci.high)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_resamples": -1}, ValueError, "'n_resamples' parameter of bootstrap_ci"),
        ({"n_resamples": 10.0}, TypeError, "'n_resamples'"),
        ({"confidence": 1.0}, ValueError, "'confidence'"),
        ({"confidence": -0.5}, ValueError, "'confidence'"),
        ({"random_state": "seed"}, TypeError, "'random_state'"),
        ({"random_state": -3}, ValueError, "'random_state'"),
    ],
)
def test_bootstrap_bad_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        bootstrap_ci(roc_auc, [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], **kwargs)


@pytest.mark.parametrize(
    ("labels", "scores", "match"),
    [
        ([0, 1, 1], [0.1, np.nan, 0.3], "finite"),
        ([0, 1, 1], [0.1, 0.3], "same length"),
        ([0, 1, 3], [0.1, 0.2, 0.3], "0/1"),
        ([], [], "non-empty"),
    ],
)
def test_bootstrap_bad_data(labels, scores, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(roc_auc, labels, scores)


def test_bootstrap_bad_metric():
    with pytest.raises(TypeError, match="'metric'"):
        bootstrap_ci("roc_auc", [0, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="'fpr'"):
        bootstrap_ci(functools.partial(tpr_at_fpr, fpr=1.5), [0, 1], [0.1, 0.2])


def test_bootstrap_one_class_is_nan_with_warning():
    with pytest.warns(DegenerateInputWarning):
        ci = bootstrap_ci(roc_auc, [1, 1, 1], [0.1, 0.2, 0.3], n_resamples=10)
    assert all(math.isnan(x) for x in ci)


def test_unstratified_resamples_missing_a_class_are_dropped_with_warning():
    labels = [1, 0, 0, 0, 0, 0]
    scores = [0.9, 0.1, 0.2, 0.3, 0.4, 0.5]
    with pytest.warns(DegenerateInputWarning, match="resamples"):
        ci = bootstrap_ci(roc_auc, labels, scores, n_resamples=200, random_state=0,
                          stratified=False)
    assert ci.value == 1.0 and ci.low == 1.0 and ci.high == 1.0
