"""Closed forms of Yeom et al. (2018) against Monte Carlo runs of the paper's experiments.

Each simulation draws the challenge records as the paper's experiments do (members and
non-members in equal numbers, which gives the two conditional probabilities of the
advantage directly), runs the adversary exactly as the paper defines it, and compares the
empirical advantage with the formula within 4 standard errors (fixed seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import privaudit.metrics as metrics
from privaudit.metrics import (
    advantage,
    attribute_advantage_from_membership,
    bounded_loss_membership_advantage,
    bounded_loss_membership_advantage_from_losses,
    dp_membership_advantage_bound,
    gaussian_attribute_advantage,
    gaussian_membership_advantage,
    gaussian_membership_advantage_at_threshold,
    gaussian_membership_advantage_from_ratio,
    gaussian_membership_threshold,
)

N = 100_000  # challenge records per class in each simulation


def empirical_advantage(hit_members, hit_non_members):
    """``Pr[hit | member] - Pr[hit | non-member]`` and its standard error."""
    p0, p1 = np.mean(hit_members), np.mean(hit_non_members)
    se = math.sqrt(p0 * (1 - p0) / len(hit_members) + p1 * (1 - p1) / len(hit_non_members))
    return p0 - p1, se


def assert_close(empirical, se, predicted):
    # 4 standard errors, plus a floor for the degenerate cases where se = 0.
    assert abs(empirical - predicted) <= 4 * se + 1e-9, (empirical, se, predicted)


def doc_theorem_3(r):
    """Theorem 3 exactly as printed (document and paper), r = sigma_D / sigma_S."""
    q = math.sqrt(math.log(r) / (r**2 - 1))
    return math.erf(r * q) - math.erf(q)


# ----------------------------------------------------------------------------- Theorem 1


@pytest.mark.parametrize(
    ("epsilon", "expected"),
    [(0.0, 0.0), (math.log(1.5), 0.5), (math.log(2), 1.0), (0.1, math.expm1(0.1)),
     (1.0, 1.0), (math.inf, 1.0)],
)
def test_dp_bound_hand_values(epsilon, expected):
    # e^eps - 1: ln 1.5 -> 0.5, ln 2 -> exactly 1, beyond ln 2 clipped to 1.
    assert dp_membership_advantage_bound(epsilon) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 0.6])
def test_dp_bound_holds_for_a_dp_algorithm(epsilon):
    # The algorithm publishes, for every value of a large domain, the bit "value in S"
    # through randomised response at epsilon / 2: replacing a record flips at most two
    # bits, so it is epsilon-DP for the paper's neighbouring relation. The adversary
    # reads the bit of the challenge record.
    rng = np.random.default_rng(11)
    n_train, domain = 100, 10**6
    mu = 1 - (1 - 1 / domain) ** n_train  # a fresh record may be in S by chance
    keep = math.exp(epsilon / 2) / (1 + math.exp(epsilon / 2))
    in_s = {0: np.ones(N, bool), 1: rng.random(N) < mu}  # b = 0: member, as in the paper
    said = {b: np.where(rng.random(N) < keep, bits, ~bits) for b, bits in in_s.items()}
    emp, se = empirical_advantage(said[0], said[1])
    assert_close(emp, se, (1 - mu) * (2 * keep - 1))  # the simulation is what we think
    assert emp + 4 * se <= dp_membership_advantage_bound(epsilon)
    # ... and the tighter tanh(eps / 2) of the Notes holds as well.
    assert emp + 4 * se <= math.tanh(epsilon / 2)


# ----------------------------------------------------------------------------- Theorem 2


@pytest.mark.parametrize(("bound", "a_member", "a_non_member"), [(1.0, 2, 2), (5.0, 1, 3)])
def test_bounded_loss_adversary_monte_carlo(bound, a_member, a_non_member):
    # Losses B * Beta(a, 5): means B * a / (a + 5), so R_gen / B = a_D/(a_D+5) - a_S/(a_S+5).
    rng = np.random.default_rng(2)
    losses = {"member": bound * rng.beta(a_member, 5, N),
              "non_member": bound * rng.beta(a_non_member, 5, N)}
    # Adversary 1: "non-member" with probability loss / B, else "member".
    said_member = {k: rng.random(N) >= v / bound for k, v in losses.items()}
    emp, se = empirical_advantage(said_member["member"], said_member["non_member"])
    r_gen = bound * (a_non_member / (a_non_member + 5) - a_member / (a_member + 5))
    assert_close(emp, se, bounded_loss_membership_advantage(r_gen, bound))
    plug_in = bounded_loss_membership_advantage_from_losses(
        losses["member"], losses["non_member"], bound)
    assert_close(emp, se, plug_in)


def test_bounded_loss_zero_one_loss_is_accuracy_gap():
    # 0-1 loss: train accuracy 0.9, test accuracy 0.7 -> advantage 0.2 (B = 1), and
    # Adversary 1 is deterministic ("member" iff the prediction is right).
    member = np.r_[np.zeros(9), np.ones(1)]
    non_member = np.r_[np.zeros(7), np.ones(3)]
    assert bounded_loss_membership_advantage_from_losses(member, non_member, 1) == (
        pytest.approx(0.2))
    assert bounded_loss_membership_advantage(0.3 - 0.1, 1.0) == pytest.approx(0.2)
    assert bounded_loss_membership_advantage(-0.5, 2.0) == -0.25  # better on unseen data
    assert bounded_loss_membership_advantage(2.0, 2.0) == 1.0


# ----------------------------------------------------------------------------- Theorem 3


def gaussian_errors(sigma_train, sigma_test, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(0, sigma_train, N), rng.normal(0, sigma_test, N)


@pytest.mark.parametrize(
    ("sigma_train", "sigma_test"), [(1.0, 2.0), (2.0, 1.0), (0.3, 3.0), (1.0, 1.2), (1.5, 1.5)]
)
def test_likelihood_ratio_adversary_monte_carlo(sigma_train, sigma_test):
    members, non_members = gaussian_errors(sigma_train, sigma_test, seed=3)

    def adversary_2(errors):  # the b maximising f(error | b); True = member (b = 0)
        return stats.norm.logpdf(errors, scale=sigma_train) > stats.norm.logpdf(
            errors, scale=sigma_test)

    emp, se = empirical_advantage(adversary_2(members), adversary_2(non_members))
    assert_close(emp, se, gaussian_membership_advantage(sigma_train, sigma_test))


def test_best_threshold_of_privaudit_advantage_approaches_theorem_3():
    # privaudit's advantage() takes the best threshold of a score; with score -|error| the
    # family contains Adversary 2, the optimum, so it lands on Theorem 3 (a little above:
    # maximising over thresholds on a sample is optimistic).
    members, non_members = gaussian_errors(1.0, 2.0, seed=4)
    labels = np.r_[np.ones(N), np.zeros(N)]
    best = advantage(labels, -np.abs(np.r_[members, non_members]))
    assert best == pytest.approx(gaussian_membership_advantage(1.0, 2.0), abs=0.01)


@pytest.mark.parametrize("ratio", [1.5, 2.0, math.e, 10.0, 1e3])
def test_theorem_3_is_the_printed_formula(ratio):
    assert gaussian_membership_advantage_from_ratio(ratio) == pytest.approx(
        doc_theorem_3(ratio), abs=1e-12)
    # Read literally, the printed formula is negative below 1; the adversary is not.
    assert doc_theorem_3(1 / ratio) == pytest.approx(-doc_theorem_3(ratio), abs=1e-12)
    assert gaussian_membership_advantage_from_ratio(1 / ratio) == pytest.approx(
        doc_theorem_3(ratio), abs=1e-12)


def test_theorem_3_hand_values():
    # r = e: ln r = 1, so the erf arguments are e / sqrt(e^2 - 1) and 1 / sqrt(e^2 - 1).
    root = math.sqrt(math.e**2 - 1)
    assert gaussian_membership_advantage(1.0, math.e) == pytest.approx(
        math.erf(math.e / root) - math.erf(1 / root), abs=1e-14)
    # The brief's sigma form: erf(sigma_D k) - erf(sigma_S k), k^2 = ln(D/S) / (D^2 - S^2).
    k = math.sqrt(math.log(3 / 0.5) / (3**2 - 0.5**2))
    assert gaussian_membership_advantage(0.5, 3.0) == pytest.approx(
        math.erf(3 * k) - math.erf(0.5 * k), abs=1e-14)
    assert gaussian_membership_advantage(2.0, 2.0) == 0.0
    assert gaussian_membership_advantage(0.0, 0.0) == 0.0
    assert gaussian_membership_advantage(0.0, 1.0) == 1.0  # members' errors are exactly 0
    assert gaussian_membership_advantage(1.0, 0.0) == 1.0
    assert gaussian_membership_advantage_from_ratio(1.0) == 0.0
    assert gaussian_membership_advantage_from_ratio(0.0) == 1.0
    assert gaussian_membership_advantage_from_ratio(math.inf) == 1.0
    assert gaussian_membership_advantage_from_ratio(1e300) == 1.0  # no overflow


@pytest.mark.parametrize("h", [1e-12, 1e-9, 1e-6])
def test_theorem_3_near_one_is_not_lost_to_cancellation(h):
    # At r = 1 both erf arguments tend to 1/sqrt(2) and the derivative of the difference is
    # erf'(1/sqrt(2)) / sqrt(2) = sqrt(2 / (pi e)): Adv(1 + h) ~ h sqrt(2 / (pi e)).
    slope = math.sqrt(2 / (math.pi * math.e))
    assert gaussian_membership_advantage_from_ratio(1 + h) == pytest.approx(h * slope, rel=1e-3)
    assert gaussian_membership_advantage_from_ratio(1 / (1 + h)) == pytest.approx(
        h * slope, rel=1e-3)


def test_threshold_hand_values_and_density_equality():
    # sigma_S = 1, sigma_D = e: eps_eq = e sqrt(2 / (e^2 - 1)) (the document's formula).
    t = gaussian_membership_threshold(1.0, math.e)
    assert t == pytest.approx(math.e * math.sqrt(2 / (math.e**2 - 1)), rel=1e-14)
    assert stats.norm.pdf(t, scale=1.0) == pytest.approx(stats.norm.pdf(t, scale=math.e))
    assert gaussian_membership_threshold(math.e, 1.0) == t
    assert gaussian_membership_threshold(2.0, 2.0) == 2.0
    assert gaussian_membership_threshold(0.0, 2.0) == 0.0
    # At its own threshold the rule achieves Theorem 3.
    assert gaussian_membership_advantage_at_threshold(1.0, math.e, t) == pytest.approx(
        gaussian_membership_advantage(1.0, math.e), abs=1e-14)


def test_published_standard_error_threshold_monte_carlo():
    # The paper's rule when only sigma_S is known: "member" iff |error| <= sigma_S.
    members, non_members = gaussian_errors(1.0, 2.5, seed=5)
    emp, se = empirical_advantage(np.abs(members) <= 1.0, np.abs(non_members) <= 1.0)
    predicted = gaussian_membership_advantage_at_threshold(1.0, 2.5, 1.0)
    assert_close(emp, se, predicted)
    assert predicted == pytest.approx(math.erf(1 / math.sqrt(2)) - math.erf(0.4 / math.sqrt(2)))
    assert predicted < gaussian_membership_advantage(1.0, 2.5)


# ----------------------------------------------------------------------------- Theorem 5


def run_adversary_4(sigma_train, sigma_test, influence, seed, sigma_guess=1.3):
    """Model inversion of a binary attribute in {-1, 2} of a linear model, per class."""
    rng = np.random.default_rng(seed)
    values = np.array([-1.0, 2.0])
    coef = influence / 3  # |A(v, -1) - A(v, 2)| = 3 * coef = tau

    def model(v, t):
        return 0.7 * v[:, 0] - 1.2 * v[:, 1] + coef * t + 0.4

    correct = {}
    for b, sigma in ((0, sigma_train), (1, sigma_test)):
        v = rng.normal(size=(N, 2))
        t = rng.choice(values, N)  # uniform prior
        y = model(v, t) + rng.normal(0, sigma, N)
        # Adversary 4: argmax_i Pr[t = t_i] f_A(y - A(v, t_i)), with the adversary's own
        # Gaussian guess f_A (any variance gives the same choice under a uniform prior).
        score = np.column_stack(
            [np.log(0.5) + stats.norm.logpdf(y - model(v, np.full(N, ti)), scale=sigma_guess)
             for ti in values])
        correct[b] = values[np.argmax(score, axis=1)] == t
    return empirical_advantage(correct[0], correct[1])


@pytest.mark.parametrize(
    ("sigma_train", "sigma_test", "influence"),
    [(0.5, 2.0, 1.5), (2.0, 0.5, 1.5), (1.0, 3.0, 6.0), (1.0, 1.0, 1.0), (0.3, 1.0, 0.2)],
)
def test_binary_attribute_adversary_monte_carlo(sigma_train, sigma_test, influence):
    emp, se = run_adversary_4(sigma_train, sigma_test, influence, seed=6)
    assert_close(emp, se, gaussian_attribute_advantage(sigma_train, sigma_test, influence))


def test_binary_attribute_hand_values():
    # 1/2 (erf(tau / (2 sqrt 2 sigma_S)) - erf(tau / (2 sqrt 2 sigma_D))).
    assert gaussian_attribute_advantage(1.0, 2.0, 2 * math.sqrt(2)) == pytest.approx(
        0.5 * (math.erf(1.0) - math.erf(0.5)), abs=1e-15)
    assert gaussian_attribute_advantage(1.0, 2.0, 0.0) == 0.0
    assert gaussian_attribute_advantage(1.0, 1.0, 3.0) == 0.0
    # Perfect memorisation: members always right, non-members right w.p. Phi(tau / 2).
    assert gaussian_attribute_advantage(0.0, 1.0, 2.0) == pytest.approx(
        1 - stats.norm.cdf(1.0), abs=1e-15)
    # Wider errors on members: the formula, taken as stated, is negative.
    assert gaussian_attribute_advantage(2.0, 1.0, 1.0) < 0


def test_binary_attribute_peaks_at_twice_the_membership_threshold():
    # Derived in the Notes: over tau, the advantage peaks at 2 eps_eq with value Adv_3 / 2.
    sigma_train, sigma_test = 0.5, 2.0
    taus = np.linspace(0, 10, 10_001)
    values = [gaussian_attribute_advantage(sigma_train, sigma_test, t) for t in taus]
    best = int(np.argmax(values))
    assert taus[best] == pytest.approx(
        2 * gaussian_membership_threshold(sigma_train, sigma_test), abs=2e-3)
    assert values[best] == pytest.approx(
        gaussian_membership_advantage(sigma_train, sigma_test) / 2, abs=1e-7)


# ----------------------------------------------------------------------------- Theorem 7


@pytest.mark.parametrize(("n_values", "sigma_train", "sigma_test"), [(3, 0.5, 2.0), (2, 1.0, 3.0)])
def test_uniform_reduction_monte_carlo(n_values, sigma_train, sigma_test):
    # Adversary 6 with Adversary 2 as its membership oracle, records rebuilt exactly: the
    # oracle's advantage on the true value is Theorem 3, so Adv^A = Adv_3 / m.
    rng = np.random.default_rng(7)
    values = np.arange(n_values, dtype=float)
    threshold = gaussian_membership_threshold(sigma_train, sigma_test)
    right = {}
    for b, sigma in ((0, sigma_train), (1, sigma_test)):
        v = rng.normal(size=N)
        t = rng.choice(values, N)
        y = 0.8 * v + 1.1 * t + rng.normal(0, sigma, N)
        guess = rng.choice(values, N)  # drawn uniformly, whatever the record
        oracle_says_member = np.abs(y - (0.8 * v + 1.1 * guess)) <= threshold
        right[b] = oracle_says_member & (guess == t)  # otherwise: wrong or no answer
    emp, se = empirical_advantage(right[0], right[1])
    predicted = attribute_advantage_from_membership(
        gaussian_membership_advantage(sigma_train, sigma_test), n_values)
    assert_close(emp, se, predicted)


def test_uniform_reduction_hand_values():
    assert attribute_advantage_from_membership(0.6, 3) == pytest.approx(0.2)
    assert attribute_advantage_from_membership(-0.5, 1) == -0.5
    assert attribute_advantage_from_membership(1, 4) == 0.25


# ------------------------------------------------------------------------ properties

ratios = st.floats(min_value=1e-6, max_value=1e6)
sigmas = st.floats(min_value=1e-3, max_value=1e3)


@settings(max_examples=200, deadline=None)
@given(ratios, ratios)
def test_ratio_advantage_is_bounded_symmetric_and_monotone(r1, r2):
    a1 = gaussian_membership_advantage_from_ratio(r1)
    assert 0 <= a1 <= 1
    assert gaussian_membership_advantage_from_ratio(1 / r1) == pytest.approx(a1, abs=1e-12)
    low, high = sorted((max(r1, 1 / r1), max(r2, 1 / r2)))
    assert gaussian_membership_advantage_from_ratio(low) <= (
        gaussian_membership_advantage_from_ratio(high) + 1e-12)


@settings(max_examples=200, deadline=None)
@given(sigmas, sigmas, st.floats(min_value=1e-3, max_value=1e3),
       st.floats(min_value=0, max_value=1e4))
def test_sigma_advantage_properties(s, d, scale, threshold):
    adv = gaussian_membership_advantage(s, d)
    assert adv == pytest.approx(gaussian_membership_advantage(d, s), abs=1e-12)
    assert adv == pytest.approx(gaussian_membership_advantage_from_ratio(d / s), abs=1e-12)
    assert adv == pytest.approx(gaussian_membership_advantage(scale * s, scale * d), abs=1e-9)
    # Neyman-Pearson: no threshold rule, in either direction, beats Adversary 2.
    at = gaussian_membership_advantage_at_threshold(s, d, threshold)
    assert abs(at) <= adv + 1e-12


@settings(max_examples=200, deadline=None)
@given(sigmas, sigmas)
def test_threshold_equalises_the_densities(s, d):
    t = gaussian_membership_threshold(s, d)
    assert t == gaussian_membership_threshold(d, s)
    assert min(s, d) * (1 - 1e-12) <= t <= max(s, d) * (1 + 1e-12)  # ln x >= 1 - 1/x
    if abs(s - d) > 1e-6 * max(s, d):
        # log-densities are equal at t (relative to their scale, to survive cancellation)
        log_s = -math.log(s) - t**2 / (2 * s**2)
        log_d = -math.log(d) - t**2 / (2 * d**2)
        assert log_s == pytest.approx(log_d, abs=1e-9 * (1 + abs(log_s)))


@settings(max_examples=200, deadline=None)
@given(sigmas, sigmas, st.floats(min_value=0, max_value=1e4))
def test_attribute_advantage_properties(s, d, tau):
    adv = gaussian_attribute_advantage(s, d, tau)
    assert -0.5 <= adv <= 0.5
    assert gaussian_attribute_advantage(d, s, tau) == pytest.approx(-adv, abs=1e-15)
    assert abs(adv) <= gaussian_membership_advantage(s, d) / 2 + 1e-12
    assert (adv >= 0) == (s <= d) or adv == 0


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=0, max_value=50), st.floats(min_value=0, max_value=50))
def test_dp_bound_is_monotone_in_unit_interval(e1, e2):
    low, high = sorted((e1, e2))
    assert 0 <= dp_membership_advantage_bound(low) <= dp_membership_advantage_bound(high) <= 1
    assert dp_membership_advantage_bound(low) >= min(low, 1.0)  # e^eps - 1 >= eps


# ------------------------------------------------------------------------ bad input

NAN = math.nan

BAD = [
    (dp_membership_advantage_bound, (-0.1,), "epsilon", ValueError),
    (dp_membership_advantage_bound, ("1",), "epsilon", TypeError),
    (dp_membership_advantage_bound, (True,), "epsilon", TypeError),
    (bounded_loss_membership_advantage, (0.1, 0.0), "loss_bound", ValueError),
    (bounded_loss_membership_advantage, (0.1, math.inf), "loss_bound", ValueError),
    (bounded_loss_membership_advantage, (1.5, 1.0), "generalization_error", ValueError),
    (bounded_loss_membership_advantage, (None, 1.0), "generalization_error", TypeError),
    (bounded_loss_membership_advantage_from_losses, ([0.1, 1.2], [0.3], 1.0),
     "member_losses", ValueError),
    (bounded_loss_membership_advantage_from_losses, ([0.1], [-0.3], 1.0),
     "non_member_losses", ValueError),
    (bounded_loss_membership_advantage_from_losses, ([0.1], [NAN], 1.0),
     "non_member_losses", ValueError),
    (bounded_loss_membership_advantage_from_losses, ([], [0.3], 1.0), "member_losses",
     ValueError),
    (bounded_loss_membership_advantage_from_losses, ([[0.1]], [0.3], 1.0), "member_losses",
     ValueError),
    (bounded_loss_membership_advantage_from_losses, (["a"], [0.3], 1.0), "member_losses",
     TypeError),
    (gaussian_membership_advantage, (-1.0, 2.0), "sigma_train", ValueError),
    (gaussian_membership_advantage, (1.0, -2.0), "sigma_test", ValueError),
    (gaussian_membership_advantage, (1.0, math.inf), "sigma_test", ValueError),
    (gaussian_membership_advantage, (np.array([1.0]), 2.0), "sigma_train", TypeError),
    (gaussian_membership_advantage_from_ratio, (-0.5,), "ratio", ValueError),
    (gaussian_membership_threshold, (-1.0, 1.0), "sigma_train", ValueError),
    (gaussian_membership_advantage_at_threshold, (1.0, 2.0, -1.0), "threshold", ValueError),
    (gaussian_attribute_advantage, (1.0, 2.0, -1.0), "influence", ValueError),
    (gaussian_attribute_advantage, (1.0, -2.0, 1.0), "sigma_test", ValueError),
    (attribute_advantage_from_membership, (1.5, 2), "membership_advantage", ValueError),
    (attribute_advantage_from_membership, (0.5, 0), "n_values", ValueError),
    (attribute_advantage_from_membership, (0.5, 2.0), "n_values", TypeError),
]


@pytest.mark.parametrize(("func", "args", "param", "error"), BAD,
                         ids=[f"{f.__name__}-{p}-{i}" for i, (f, _, p, _) in enumerate(BAD)])
def test_bad_input_names_the_parameter(func, args, param, error):
    with pytest.raises(error, match=f"'{param}' parameter of {func.__name__} must be"):
        func(*args)


@pytest.mark.parametrize(
    ("func", "args"),
    [(dp_membership_advantage_bound, (NAN,)),
     (bounded_loss_membership_advantage, (NAN, 1.0)),
     (bounded_loss_membership_advantage, (0.1, NAN)),
     (bounded_loss_membership_advantage_from_losses, ([0.1], [0.3], NAN)),
     (gaussian_membership_advantage, (NAN, 1.0)),
     (gaussian_membership_advantage, (1.0, NAN)),
     (gaussian_membership_advantage_from_ratio, (NAN,)),
     (gaussian_membership_threshold, (1.0, NAN)),
     (gaussian_membership_advantage_at_threshold, (1.0, 2.0, NAN)),
     (gaussian_attribute_advantage, (1.0, 2.0, NAN)),
     (gaussian_attribute_advantage, (NAN, 2.0, 0.0)),
     (attribute_advantage_from_membership, (NAN, 3))],
)
def test_nan_gives_nan(func, args):
    assert math.isnan(func(*args))


def test_nan_does_not_hide_another_bad_argument():
    with pytest.raises(ValueError, match="'sigma_test'"):
        gaussian_membership_advantage(NAN, -1.0)


def test_exported_from_metrics():
    for name in ("attribute_advantage_from_membership", "bounded_loss_membership_advantage",
                 "bounded_loss_membership_advantage_from_losses",
                 "dp_membership_advantage_bound", "gaussian_attribute_advantage",
                 "gaussian_membership_advantage", "gaussian_membership_advantage_at_threshold",
                 "gaussian_membership_advantage_from_ratio", "gaussian_membership_threshold"):
        assert name in metrics.__all__
        assert isinstance(getattr(metrics, name)(*_one_valid_call(name)), float)
    assert metrics.__all__ == sorted(metrics.__all__, key=lambda n: (n[0].islower(), n))


def _one_valid_call(name):
    return {
        "attribute_advantage_from_membership": (0.3, 2),
        "bounded_loss_membership_advantage": (0.1, 1.0),
        "bounded_loss_membership_advantage_from_losses": ([0.1], [0.2], 1.0),
        "dp_membership_advantage_bound": (0.5,),
        "gaussian_attribute_advantage": (1.0, 2.0, 1.0),
        "gaussian_membership_advantage": (1.0, 2.0),
        "gaussian_membership_advantage_at_threshold": (1.0, 2.0, 1.0),
        "gaussian_membership_advantage_from_ratio": (2.0,),
        "gaussian_membership_threshold": (1.0, 2.0),
    }[name]
