"""Slow, obviously correct references for the one-run and Gaussian-DP bounds.

Written from the papers' formulas with plain Python floats (``math.comb``, the
``statistics.NormalDist`` of the standard library, no scipy), sums spelled out, searches
as plain grid scans. The fast code in ``privaudit.metrics._one_run`` / ``_gdp`` must agree.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_NORMAL = NormalDist()


def binomial_tail(u: int, r: int, q: float) -> float:
    """P[Binomial(r, q) >= u], by summing the pmf term by term (1 for u <= 0)."""
    if u <= 0:
        return 1.0
    return sum(math.comb(r, j) * q**j * (1 - q) ** (r - j) for j in range(u, r + 1))


def steinke_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Steinke et al. (2023), Thm 5.2 + Cor. 5.4: f(v) + 2 m delta max_i (f(v-i) - f(v))/i.

    The max runs over ALL i = 1..m as in the paper (not stopped at v).
    """
    if v == 0:
        return 1.0
    q = math.exp(epsilon) / (1 + math.exp(epsilon))
    tails = [binomial_tail(u, r, q) for u in range(v + 1)]  # f(u) for u = 0..v
    f_v = tails[v]
    worst = max((tails[max(v - i, 0)] - f_v) / i for i in range(1, m + 1))
    return min(f_v + 2 * m * delta * worst, 1.0)


def fdp_refutes(m: int, r: int, v: int, mu: float, significance: float) -> bool:
    """Mahloujifar et al.'s recursion, every step run (no early stop), Gaussian curve."""
    if v == 0:
        return False

    def blow_up_inverse(x: float) -> float:  # Phi(Phi^-1(x) - mu)
        if x <= 0:
            return 0.0
        if x >= 1:
            return 1.0
        return _NORMAL.cdf(_NORMAL.inv_cdf(x) - mu)

    correct = significance * v / m
    wrong = significance * (r - v) / m
    for i in range(v - 1, -1, -1):
        new_wrong = max(wrong, blow_up_inverse(correct))
        correct = min(correct + i / (r - i) * (new_wrong - wrong), 1.0)
        wrong = new_wrong
    return correct + wrong > r / m


def largest_on_grid(refutes, step: float, stop: float) -> float:
    """The largest grid point k * step <= stop that ``refutes`` (0.0 when none)."""
    best = 0.0
    for k in range(int(stop / step) + 1):
        if refutes(k * step):
            best = k * step
    return best


def gdp_delta(epsilon: float, mu: float) -> float:
    """Dong, Roth, Su (2022) Cor. 2.13, straight from the formula."""
    return _NORMAL.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * _NORMAL.cdf(
        -epsilon / mu - mu / 2
    )


def steinke_epsilon(m: int, r: int, v: int, significance: float, delta: float,
                    step: float = 1e-3, stop: float = 12.0) -> float:
    """Largest epsilon on a grid whose p-value is below the significance."""
    return largest_on_grid(lambda e: steinke_p_value(m, r, v, e, delta) < significance,
                           step, stop)


def fdp_epsilon(m: int, r: int, v: int, significance: float, delta: float,
                step: float = 1e-3, stop: float = 12.0) -> float:
    """Largest epsilon on a grid whose Gaussian curve (mu through (eps, delta)) is refuted."""

    def mu_of(epsilon: float) -> float:  # bisection on Cor. 2.13, increasing in mu
        low, high = 1e-12, 64.0
        for _ in range(100):
            middle = (low + high) / 2
            low, high = (middle, high) if gdp_delta(epsilon, middle) < delta else (low, middle)
        return low

    return largest_on_grid(lambda e: fdp_refutes(m, r, v, mu_of(e), significance), step, stop)


def pessimistic_counts(in_scores, out_scores, k_in: int, k_out: int) -> tuple[int, int]:
    """Correct "in" guesses among the top k_in and "out" among the bottom k_out.

    Scores strictly beyond the k-th are all guessed; among those tied with it, the wrong
    canaries are guessed first. Loops over the canaries, no sorting tricks.
    """
    canaries = [(s, 1) for s in in_scores] + [(s, 0) for s in out_scores]

    def count(k: int, sign: int, wanted: int) -> int:
        if k == 0:
            return 0
        kth = sorted((sign * s for s, _ in canaries), reverse=True)[k - 1]
        beyond = [lab for s, lab in canaries if sign * s > kth]
        tied = [lab for s, lab in canaries if sign * s == kth]
        need = k - len(beyond)
        wrong_tied = sum(1 for lab in tied if lab != wanted)
        right_taken = max(0, need - wrong_tied)
        return sum(1 for lab in beyond if lab == wanted) + right_taken

    return count(k_in, 1, 1), count(k_out, -1, 0)
