"""Gaussian DP: the (epsilon, delta) conversion and Nasr et al.'s estimate from repeated runs."""

from __future__ import annotations

import math

import numpy as np
import one_run_reference as ref
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import GdpEstimate, gdp_epsilon, gdp_epsilon_estimate, gdp_mu
from privaudit.metrics._gdp import gdp_delta


@pytest.mark.parametrize(("epsilon", "mu"), [(0.0, 0.5), (1.0, 1.0), (3.0, 2.0), (8.0, 3.0),
                                             (0.5, 0.1)])
def test_delta_equals_the_formula(epsilon, mu):
    assert gdp_delta(epsilon, mu) == pytest.approx(ref.gdp_delta(epsilon, mu), rel=1e-9,
                                                   abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(mu=st.floats(0.05, 8.0), delta=st.sampled_from([1e-7, 1e-5, 1e-3, 0.05]))
def test_epsilon_and_mu_are_inverse(mu, delta):
    epsilon = gdp_epsilon(mu, delta)
    if epsilon > 0:
        assert gdp_mu(epsilon, delta) == pytest.approx(mu, rel=1e-7)
        assert gdp_delta(epsilon, mu) == pytest.approx(delta, rel=1e-6)
    else:  # mu so small that (0, delta)-DP already holds
        assert gdp_delta(0.0, mu) <= delta


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.0, 20.0), delta=st.sampled_from([1e-6, 1e-4, 0.01]))
def test_mu_then_epsilon_round_trips(epsilon, delta):
    assert gdp_epsilon(gdp_mu(epsilon, delta), delta) == pytest.approx(epsilon, abs=1e-7)


def test_conversion_edges_and_monotonicity():
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    assert gdp_epsilon(1.0, 0.0) == math.inf
    assert gdp_epsilon(math.inf, 1e-5) == math.inf
    assert gdp_mu(1.0, 0.0) == 0.0
    assert gdp_mu(math.inf, 1e-5) == math.inf
    eps = [gdp_epsilon(mu, 1e-5) for mu in (0.5, 1.0, 2.0, 4.0)]
    assert eps == sorted(eps) and eps[0] > 0
    assert gdp_epsilon(2.0, 1e-3) < gdp_epsilon(2.0, 1e-6)


@pytest.mark.parametrize(("func", "args", "param"), [
    (gdp_epsilon, (-1.0, 1e-5), "mu"), (gdp_epsilon, (float("nan"), 1e-5), "mu"),
    (gdp_epsilon, ("1", 1e-5), "mu"), (gdp_epsilon, (1.0, 1.0), "delta"),
    (gdp_epsilon, (1.0, -1e-9), "delta"), (gdp_mu, (-0.1, 1e-5), "epsilon"),
    (gdp_mu, (True, 1e-5), "epsilon"), (gdp_mu, (1.0, 2.0), "delta"),
])
def test_conversion_bad_input_names_the_parameter(func, args, param):
    with pytest.raises((ValueError, TypeError), match=f"'{param}' parameter"):
        func(*args)


# ----------------------------------------------------------------- the estimate


def _runs(n: int, mu: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


@pytest.mark.parametrize("threshold", ["bonferroni", "split"])
def test_null_scores_report_zero(threshold):
    positive = 0
    for seed in range(30):
        est = gdp_epsilon_estimate(*_runs(300, 0.0, seed), delta=1e-5, threshold=threshold,
                                   random_state=seed)
        assert (est.mu == 0) == (est.epsilon == 0)
        positive += est.epsilon > 0
    assert positive <= 5  # P[Binomial(30, 0.05) >= 6] < 0.01


def test_gaussian_runs_recover_mu():
    for threshold in ("bonferroni", "split", 1.0):
        est = gdp_epsilon_estimate(*_runs(2000, 2.0, 1), delta=1e-5, threshold=threshold,
                                   random_state=0)
        assert isinstance(est, GdpEstimate)
        assert 1.5 < est.mu < 2.0 < est.mu_point + 0.3
        assert abs(est.mu_point - 2.0) < 0.25
        assert est.epsilon == pytest.approx(gdp_epsilon(est.mu, 1e-5))
        assert est.epsilon < gdp_epsilon(2.0, 1e-5) < est.epsilon_point + 1.5


def test_explicit_threshold_equals_the_formula():
    ins, outs = _runs(500, 1.5, 2)
    t, confidence = 0.8, 0.9
    fn, fp = int(np.sum(ins < t)), int(np.sum(outs >= t))
    fpr_high = stats.beta.ppf(1 - 0.05, fp + 1, outs.size - fp)
    fnr_high = stats.beta.ppf(1 - 0.05, fn + 1, ins.size - fn)
    mu = stats.norm.isf(fpr_high) - stats.norm.ppf(fnr_high)
    est = gdp_epsilon_estimate(ins, outs, delta=1e-5, confidence=confidence, threshold=t)
    assert est.fpr_upper == pytest.approx(fpr_high, rel=1e-9)
    assert est.fnr_upper == pytest.approx(fnr_high, rel=1e-9)
    assert est.mu == pytest.approx(mu, rel=1e-9)
    point = stats.norm.isf(fp / outs.size) - stats.norm.ppf(fn / ins.size)
    assert est.mu_point == pytest.approx(point, rel=1e-9)
    assert est.score_threshold == t


def test_higher_confidence_never_raises_the_estimate():
    ins, outs = _runs(400, 1.0, 3)
    values = [gdp_epsilon_estimate(ins, outs, delta=1e-5, confidence=c).epsilon
              for c in (0.5, 0.8, 0.95, 0.999)]
    assert values == sorted(values, reverse=True)


def test_missing_kind_of_run_is_nan():
    with pytest.warns(DegenerateInputWarning):
        est = gdp_epsilon_estimate([1.0, 2.0], np.array([], float), delta=1e-5)
    assert math.isnan(est.epsilon) and math.isnan(est.mu)


@pytest.mark.parametrize(("ins", "outs", "kwargs", "param"), [
    ([1.0], [], {}, "in_scores"),
    ([1.0, float("nan")], [0.0], {}, "in_scores"),
    (np.array([1.0], np.float32), np.array([0.0]), {}, "out_scores"),
    ([1.0, 2.0], [0.0], {"delta": 0.0}, "delta"),
    ([1.0, 2.0], [0.0], {"delta": 1.0}, "delta"),
    ([1.0, 2.0], [0.0], {"confidence": 0.0}, "confidence"),
    ([1.0, 2.0], [0.0], {"threshold": "convex-hull"}, "threshold"),
    ([1.0, 2.0], [0.0], {"threshold": float("nan")}, "threshold"),
    ([1.0, 2.0], [0.0], {"threshold": (1.0, 0.0)}, "threshold"),
])
def test_estimate_bad_input_names_the_parameter(ins, outs, kwargs, param):
    with pytest.raises((ValueError, TypeError), match=f"'{param}' parameter"):
        gdp_epsilon_estimate(ins, outs, **({"delta": 1e-5} | kwargs))
