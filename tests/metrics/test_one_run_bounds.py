"""One-run epsilon bounds (Steinke et al.; Mahloujifar et al.) and the canary-score bounds."""

from __future__ import annotations

import math
import warnings

import numpy as np
import one_run_reference as ref
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import (
    CanaryBound,
    canary_epsilon_lower_bound,
    one_run_epsilon_lower_bound,
)
from privaudit.metrics._guesses import guess_count_grid, rank_canaries
from privaudit.metrics._one_run import family_size, steinke_p_value

STEP = 5e-3  # grid of the reference scans


# ----------------------------------------------------------------- equality with references


@pytest.mark.parametrize(("m", "r", "v", "eps", "delta"), [
    (30, 20, 18, 0.5, 1e-3), (40, 10, 10, 2.0, 0.0), (60, 30, 25, 1.0, 1e-2),
    (20, 20, 0, 0.3, 1e-2), (50, 12, 3, 0.0, 1e-4),
])
def test_steinke_p_value_equals_explicit_summation(m, r, v, eps, delta):
    assert steinke_p_value(m, r, v, eps, delta) == pytest.approx(
        ref.steinke_p_value(m, r, v, eps, delta), rel=1e-9, abs=1e-14)


@pytest.mark.parametrize(("m", "r", "v", "delta", "confidence"), [
    (30, 20, 18, 1e-3, 0.95), (40, 10, 10, 0.0, 0.9), (60, 30, 25, 1e-2, 0.8),
])
def test_steinke_bound_equals_grid_scan(m, r, v, delta, confidence):
    fast = one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence)
    slow = ref.steinke_epsilon(m, r, v, 1 - confidence, delta, step=STEP, stop=4.0)
    assert slow <= fast < slow + STEP


@pytest.mark.parametrize(("m", "r", "v", "delta", "confidence"), [
    (30, 20, 18, 1e-3, 0.95), (20, 20, 17, 1e-4, 0.9),
])
def test_fdp_bound_equals_literal_recursion(m, r, v, delta, confidence):
    fast = one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence,
                                       method="fdp")
    slow = ref.fdp_epsilon(m, r, v, 1 - confidence, delta, step=STEP, stop=4.0)
    assert slow <= fast < slow + STEP


@pytest.mark.parametrize(("inputs", "printed"), [
    ((1000, 100, 75, 1e-4), 0.673),      # Steinke et al., App. D (p. 46)
    ((100000, 1510, 1439, 1e-5), 2.675),  # Steinke et al., Sec. 7 (p. 28), truncated
])
def test_steinke_reproduces_the_papers_printed_values(inputs, printed):
    m, r, v, delta = inputs
    assert one_run_epsilon_lower_bound(m, r, v, delta=delta) == pytest.approx(printed,
                                                                              abs=1e-3)


@pytest.mark.parametrize("method", ["steinke", "fdp"])
@pytest.mark.parametrize(("m", "r", "v"), [(100, 50, 25), (1000, 100, 40), (10, 0, 0),
                                           (500, 200, 0)])
def test_nothing_refuted_gives_zero(method, m, r, v):
    assert one_run_epsilon_lower_bound(m, r, v, delta=1e-5, method=method) == 0.0


# ----------------------------------------------------------------- monotonicity


@settings(max_examples=40, deadline=None)
@given(m=st.integers(2, 400), data=st.data(), method=st.sampled_from(["steinke", "fdp"]))
def test_more_correct_guesses_never_lower_the_bound(m, data, method):
    r = data.draw(st.integers(1, m))
    v = data.draw(st.integers(0, r - 1))
    low = one_run_epsilon_lower_bound(m, r, v, delta=1e-5, method=method)
    high = one_run_epsilon_lower_bound(m, r, v + 1, delta=1e-5, method=method)
    assert high >= low - 1e-8


@settings(max_examples=30, deadline=None)
@given(m=st.integers(20, 400), data=st.data(), method=st.sampled_from(["steinke", "fdp"]),
       levels=st.tuples(st.floats(0.5, 0.999), st.floats(0.5, 0.999)))
def test_higher_confidence_and_larger_delta_never_raise_the_bound(m, data, method, levels):
    r = data.draw(st.integers(1, m))
    v = data.draw(st.integers(r // 2, r))
    lo_conf, hi_conf = sorted(levels)
    at = {c: one_run_epsilon_lower_bound(m, r, v, delta=1e-5, confidence=c, method=method)
          for c in (lo_conf, hi_conf)}
    assert at[hi_conf] <= at[lo_conf] + 1e-8
    small, large = (one_run_epsilon_lower_bound(m, r, v, delta=d, method=method)
                    for d in (1e-6, 1e-3))
    assert large <= small + 1e-8


def _idealised_counts(m: int, mu: float, k: int) -> int:
    """Expected correct "in" guesses among the top k of m canaries, Gaussian mechanism."""
    t = optimize.brentq(lambda x: 0.5 * stats.norm.sf(x - mu) + 0.5 * stats.norm.sf(x) - k / m,
                        -30, 30)
    return round(m * 0.5 * stats.norm.sf(t - mu))


@pytest.mark.parametrize("m", [100, 1000, 10000])
def test_fdp_is_at_least_steinke_on_the_gaussian_mechanism(m):
    # Mahloujifar et al. (Sec. 6): on Gaussian mechanisms the f-DP analysis is tighter.
    for mu in (0.5, 1.0, 2.0, 4.0):
        for share in (0.01, 0.05, 0.2, 1.0):
            k = max(1, round(share * m))
            v = _idealised_counts(m, mu, k)
            steinke = one_run_epsilon_lower_bound(m, k, v, delta=1e-5)
            fdp = one_run_epsilon_lower_bound(m, k, v, delta=1e-5, method="fdp")
            assert fdp >= steinke - 1e-8, (mu, k, v)


# ----------------------------------------------------------------- from scores


def _gaussian_canaries(m: int, mu: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    included = rng.random(m) < 0.5
    scores = rng.normal(size=m) + mu * included
    return scores[included], scores[~included]


def test_gaussian_mechanism_bound_is_near_the_idealised_value():
    m, mu, delta = 1000, 2.0, 1e-5
    level = 0.05 / family_size(m)
    for method in ("steinke", "fdp"):
        ideal = max(one_run_epsilon_lower_bound(m, int(k), _idealised_counts(m, mu, int(k)),
                                                delta=delta, confidence=1 - level,
                                                method=method)
                    for k in guess_count_grid(m))
        measured = [canary_epsilon_lower_bound(*_gaussian_canaries(m, mu, seed), delta=delta,
                                               method=method).epsilon for seed in range(5)]
        assert abs(np.median(measured) - ideal) < 0.3, (method, ideal, measured)
        assert ideal > 1.5


@pytest.mark.parametrize("threshold", ["bonferroni", "split"])
@pytest.mark.parametrize("method", ["steinke", "fdp", "clopper-pearson"])
def test_null_scores_rarely_give_a_positive_bound(method, threshold):
    n_seeds, alpha = 30, 0.05
    positive = 0
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        scores = rng.normal(size=400)
        included = rng.random(400) < 0.5
        bound = canary_epsilon_lower_bound(scores[included], scores[~included], delta=1e-5,
                                           method=method, threshold=threshold,
                                           two_sided=True, random_state=seed)
        positive += bound.epsilon > 0
    # A valid bound is positive in at most alpha of the seeds; P[Binomial(30, 0.05) >= 6]
    # is 0.008, so 6 or more positives reject "rate <= alpha" at the 1% level.
    assert stats.binom.sf(5, n_seeds, alpha) < 0.01
    assert positive <= 5


score_lists = st.lists(st.integers(-3, 3), min_size=1, max_size=30)


@settings(max_examples=25, deadline=None)
@given(ins=score_lists, outs=score_lists, method=st.sampled_from(["steinke", "fdp",
                                                                  "clopper-pearson"]),
       threshold=st.sampled_from(["bonferroni", "split", 0.5]), seed=st.integers(0, 2**16))
def test_two_sided_never_lower_than_one_sided(ins, outs, method, threshold, seed):
    ins, outs = np.array(ins, float) * 0.7 + 1, np.array(outs, float)
    one, two = (canary_epsilon_lower_bound(ins, outs, delta=1e-3, method=method,
                                           threshold=threshold, two_sided=s,
                                           random_state=seed) for s in (False, True))
    assert two.epsilon >= one.epsilon
    assert one.n_guessed_out == 0


def test_explicit_threshold_bounds_the_counts_above_it():
    ins, outs = _gaussian_canaries(500, 2.0, 3)
    for t in (-1.0, 0.5, 2.0, 10.0):
        tp, fp = int(np.sum(ins >= t)), int(np.sum(outs >= t))
        for method in ("steinke", "fdp"):
            got = canary_epsilon_lower_bound(ins, outs, delta=1e-5, method=method,
                                             threshold=t)
            assert got.epsilon == one_run_epsilon_lower_bound(500, tp + fp, tp, delta=1e-5,
                                                              method=method)
            assert (got.threshold, got.n_guesses, got.n_correct) == ("explicit", tp + fp, tp)
    pair = canary_epsilon_lower_bound(ins, outs, delta=1e-5, threshold=(1.0, -1.0),
                                      two_sided=True)
    correct = int(np.sum(ins >= 1.0) + np.sum(outs <= -1.0))
    assert (pair.n_guessed_out, pair.n_correct) == (int(np.sum(ins <= -1) + np.sum(outs <= -1)),
                                                    correct)


def test_clopper_pearson_equals_the_formula():
    ins, outs = _gaussian_canaries(600, 2.0, 4)
    t, delta = 1.0, 1e-5
    tp, fp = int(np.sum(ins >= t)), int(np.sum(outs >= t))
    tpr_low = stats.beta.ppf(0.025, tp, ins.size - tp + 1)
    fpr_high = stats.beta.ppf(0.975, fp + 1, outs.size - fp)
    got = canary_epsilon_lower_bound(ins, outs, delta=delta, method="clopper-pearson",
                                     threshold=t)
    assert got.epsilon == pytest.approx(math.log((tpr_low - delta) / fpr_high), rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(ins=score_lists, outs=score_lists, data=st.data())
def test_ties_are_broken_against_the_attacker(ins, outs, data):
    ranked = rank_canaries(np.array(ins, float), np.array(outs, float))
    m = len(ins) + len(outs)
    k_in = data.draw(st.integers(0, m))
    k_out = data.draw(st.integers(0, m - k_in))
    g = ranked.guesses(k_in, k_out)
    assert (g.correct_in, g.correct_out) == ref.pessimistic_counts(ins, outs, k_in, k_out)


def test_all_tied_scores_refute_nothing():
    bound = canary_epsilon_lower_bound(np.zeros(300), np.zeros(300), delta=1e-5,
                                       two_sided=True)
    assert bound.epsilon == 0.0
    assert bound.n_correct * 2 <= bound.n_guesses


def test_result_fields_and_determinism():
    ins, outs = _gaussian_canaries(400, 3.0, 5)
    a = canary_epsilon_lower_bound(ins, outs, delta=1e-5, threshold="split",
                                   two_sided=True, random_state=7)
    b = canary_epsilon_lower_bound(ins, outs, delta=1e-5, threshold="split",
                                   two_sided=True, random_state=7)
    assert isinstance(a, CanaryBound) and a == b
    assert a.n_guesses == a.n_guessed_in + a.n_guessed_out
    assert a.n_abstained == a.n_canaries - a.n_guesses
    assert a.n_canaries == ins.size - ins.size // 2 + outs.size - outs.size // 2
    bonf = canary_epsilon_lower_bound(ins, outs, delta=1e-5, two_sided=True)
    assert bonf.n_canaries == 400 and bonf.epsilon > 1
    assert bonf.score_threshold_in >= (bonf.score_threshold_out
                                       if bonf.n_guessed_out else -np.inf)


def test_grid_depends_on_the_number_of_canaries_only():
    assert list(guess_count_grid(1000)[:3]) == [1000, 707, 500]
    assert guess_count_grid(1000)[-1] >= 10 and len(guess_count_grid(1000)) == 14
    assert list(guess_count_grid(3)) == [3, 2, 1]
    assert family_size(1000) == 28


def test_clopper_pearson_without_both_kinds_is_nan():
    with pytest.warns(DegenerateInputWarning):
        bound = canary_epsilon_lower_bound([1.0, 2.0, 3.0], np.array([], float), delta=0.0,
                                           method="clopper-pearson")
    assert math.isnan(bound.epsilon)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"n_canaries": 1}, "n_canaries"), ({"n_canaries": 0}, "n_canaries"),
    ({"n_canaries": 2.0}, "n_canaries"), ({"n_guesses": 11}, "n_guesses"),
    ({"n_guesses": -1}, "n_guesses"), ({"n_correct": 6}, "n_correct"),
    ({"n_correct": True}, "n_correct"), ({"delta": 1.0}, "delta"), ({"delta": -0.1}, "delta"),
    ({"delta": float("nan")}, "delta"), ({"delta": 0.0, "method": "fdp"}, "delta"),
    ({"confidence": 1.0}, "confidence"), ({"confidence": 0.0}, "confidence"),
    ({"method": "clopper-pearson"}, "method"), ({"method": "Steinke"}, "method"),
])
def test_one_run_bad_input_names_the_parameter(kwargs, param):
    args = {"n_canaries": 10, "n_guesses": 5, "n_correct": 4, "delta": 1e-5} | kwargs
    with pytest.raises((ValueError, TypeError), match=f"'{param}' parameter"):
        one_run_epsilon_lower_bound(args.pop("n_canaries"), args.pop("n_guesses"),
                                    args.pop("n_correct"), **args)


@pytest.mark.parametrize(("ins", "outs", "kwargs", "param"), [
    ([1.0], [], {}, "in_scores"),
    ([], [2.0], {}, "in_scores"),
    ([1.0, float("nan")], [0.0], {}, "in_scores"),
    ([1.0], [0.0, float("nan")], {}, "out_scores"),
    (np.array([1.0, 2.0], np.float32), np.array([0.0, 1.0]), {}, "out_scores"),
    ([1, 2], [0.5, 0.1], {}, "out_scores"),
    (["1", "2"], ["0"], {}, "in_scores"),
    ([[1.0, 2.0]], [0.0], {}, "in_scores"),
    ([1.0, 2.0], [0.0], {"threshold": "holm"}, "threshold"),
    ([1.0, 2.0], [0.0], {"threshold": (1.0, 0.0)}, "threshold"),
    ([1.0, 2.0], [0.0], {"threshold": (0.0, 1.0), "two_sided": True}, "threshold"),
    ([1.0, 2.0], [0.0], {"threshold": float("nan")}, "threshold"),
    ([1.0, 2.0], [0.0], {"threshold": True}, "threshold"),
    ([1.0, 2.0], [0.0], {"method": "bootstrap"}, "method"),
    ([1.0, 2.0], [0.0], {"delta": 0.0, "method": "fdp"}, "delta"),
    ([1.0, 2.0], [0.0], {"confidence": 1.5}, "confidence"),
    ([1.0, 2.0], [0.0], {"two_sided": "yes"}, "two_sided"),
])
def test_canary_bad_input_names_the_parameter(ins, outs, kwargs, param):
    with pytest.raises((ValueError, TypeError), match=f"'{param}' parameter"):
        canary_epsilon_lower_bound(ins, outs, **({"delta": 1e-5} | kwargs))


def test_valid_edge_inputs_run_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert canary_epsilon_lower_bound([1.0, 2.0], [], delta=0.0).epsilon == 0.0
        assert canary_epsilon_lower_bound([1, 2], [0], delta=0.0, threshold="split",
                                          random_state=0).epsilon == 0.0
