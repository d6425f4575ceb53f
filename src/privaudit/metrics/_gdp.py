"""Gaussian differential privacy: the (epsilon, delta) conversion and Nasr et al.'s estimate.

The conversion (Dong, Roth and Su 2022) is also what the one-run f-DP bound
(:mod:`privaudit.metrics._one_run`) reports its mu in.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from privaudit._validation import check_random_state, param_error, warn_degenerate
from privaudit.metrics._guesses import (
    Guesses,
    check_confidence,
    check_score_pair,
    explicit_guesses,
    guess_count_grid,
    rank_canaries,
)
from privaudit.metrics._intervals import _clopper_pearson_bounds

__all__ = ["GdpEstimate", "gdp_delta", "gdp_epsilon", "gdp_epsilon_estimate", "gdp_mu"]

#: Root-finding tolerance of the conversions (absolute, on epsilon or mu).
_XTOL = 1e-12


def gdp_delta(epsilon: float, mu: float) -> float:
    r"""The delta of a mu-GDP mechanism at ``epsilon`` (Dong, Roth, Su 2022, Cor. 2.13).

    .. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2)
              - e^{\varepsilon}\,\Phi(-\varepsilon/\mu - \mu/2)

    computed in the log domain (the two terms are close for large ``epsilon``). No input
    checks: a private helper of :func:`gdp_epsilon` and :func:`gdp_mu`.
    """
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    log_first = special.log_ndtr(-epsilon / mu + mu / 2)
    log_second = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if log_second >= log_first:  # rounding only: the difference is >= 0 in exact arithmetic
        return 0.0
    return float(math.exp(log_first) * -math.expm1(log_second - log_first))


def _check_nonnegative(value: Any, param: str, func: str) -> float:
    expected = "a real number >= 0 (inf allowed)"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error(param, func, expected, value, error=TypeError)
    if math.isnan(float(value)) or float(value) < 0:
        raise param_error(param, func, expected, value)
    return float(value)


def check_delta(value: Any, func: str) -> float:
    """``delta`` must be a real number in [0, 1)."""
    expected = "a real number in [0, 1)"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error("delta", func, expected, value, error=TypeError)
    if not 0 <= float(value) < 1:  # NaN fails too
        raise param_error("delta", func, expected, value)
    return float(value)


def gdp_epsilon(mu: float, delta: float) -> float:
    r"""The smallest epsilon such that a mu-GDP mechanism is (epsilon, delta)-DP.

    A mu-GDP mechanism (Dong, Roth and Su 2022, Def. 2.6: its trade-off curve is that of
    telling N(0, 1) from N(mu, 1)) is (epsilon, delta)-DP exactly when ``delta >=
    delta_mu(epsilon)`` of Corollary 2.13 (see :func:`gdp_delta`); ``delta_mu`` decreases in
    epsilon, so the answer is its root, found by Brent's method to 1e-12.

    Parameters
    ----------
    mu : float >= 0
        The GDP parameter (``inf`` gives ``inf``).
    delta : float in [0, 1)

    Returns
    -------
    float
        Epsilon in [0, inf]: 0 when ``mu = 0`` or when ``delta_mu(0) <= delta``; ``inf``
        when ``delta = 0 < mu`` (no mu-GDP mechanism with ``mu > 0`` is pure DP).

    References
    ----------
    .. [1] Dong, J., Roth, A. and Su, W. J. (2022). Gaussian differential privacy. JRSS B,
       84(1), 3-37 (Corollary 2.13).
    """
    func = "gdp_epsilon"
    mu = _check_nonnegative(mu, "mu", func)
    delta = check_delta(delta, func)
    if mu == 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    if delta == 0 or math.isinf(mu):
        return math.inf
    high = 1.0
    while gdp_delta(high, mu) > delta:
        high *= 2
    return float(optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, high, xtol=_XTOL))


def gdp_mu(epsilon: float, delta: float) -> float:
    r"""The mu of the Gaussian mechanism that is exactly (epsilon, delta)-DP.

    The inverse of :func:`gdp_epsilon` in mu: the root of ``delta_mu(epsilon) = delta``
    (Dong, Roth and Su 2022, Cor. 2.13), increasing in mu. This is the noise of the
    analytic Gaussian mechanism (Balle and Wang 2018): ``sigma = sensitivity / mu``.

    Parameters
    ----------
    epsilon : float >= 0
        ``inf`` gives ``inf``.
    delta : float in [0, 1)
        ``delta = 0`` gives 0 (only ``mu = 0`` is pure DP).

    Returns
    -------
    float
        mu in [0, inf].

    References
    ----------
    .. [1] Dong, J., Roth, A. and Su, W. J. (2022). Gaussian differential privacy. JRSS B,
       84(1), 3-37 (Corollary 2.13).
    .. [2] Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for
       differential privacy: analytical calibration and optimal denoising. ICML.
    """
    func = "gdp_mu"
    epsilon = _check_nonnegative(epsilon, "epsilon", func)
    delta = check_delta(delta, func)
    if delta == 0:
        return 0.0
    if math.isinf(epsilon):
        return math.inf
    high = 1.0
    while gdp_delta(epsilon, high) < delta:
        high *= 2
    return float(optimize.brentq(lambda m: gdp_delta(epsilon, m) - delta, 0.0, high,
                                 xtol=_XTOL))


# ----------------------------------------------------------------- estimate from runs


class GdpEstimate(NamedTuple):
    """Gaussian-DP estimate from repeated runs (Nasr et al. 2023).

    Attributes
    ----------
    epsilon : float
        Epsilon at ``delta`` of the lower confidence bound ``mu`` (a lower bound on the
        epsilon of any mu-GDP mechanism that produced the scores).
    epsilon_point : float
        Epsilon at ``delta`` of ``mu_point``.
    mu : float
        Lower bound on the GDP mu (0 when not refuted).
    mu_point : float
        ``Phi^{-1}(1 - FPR) - Phi^{-1}(FNR)`` from the observed rates (clipped at 0; inf
        when a rate is 0).
    fpr_upper, fnr_upper : float
        Clopper-Pearson upper bounds on the rates at the chosen threshold.
    score_threshold : float
        "In" was guessed at or above it.
    confidence, delta : float
    """

    epsilon: float
    epsilon_point: float
    mu: float
    mu_point: float
    fpr_upper: float
    fnr_upper: float
    score_threshold: float
    confidence: float
    delta: float


class _RateBound(NamedTuple):
    mu: float
    mu_point: float
    fpr_upper: float
    fnr_upper: float
    threshold: float


def _rate_bound(g: Guesses, significance: float) -> _RateBound:
    """The mu bound from Clopper-Pearson upper bounds on FPR and FNR, each at ``significance / 2``.

    Dong, Roth and Su (2022, Eq. 6): a mu-GDP test has ``FNR >= Phi(Phi^{-1}(1 - FPR) -
    mu)``, so ``mu >= Phi^{-1}(1 - FPR) - Phi^{-1}(FNR)``; with both rates bounded above
    (union bound) the right side is a lower confidence bound. Negative values (the rule
    does worse than chance) are clipped at 0: they refute nothing.
    """
    n_pos, n_neg = g.n_included, g.n_canaries - g.n_included
    false_pos = g.n_guessed_in - g.correct_in
    false_neg = n_pos - g.correct_in
    _, fpr_high = _clopper_pearson_bounds(false_pos, n_neg, significance / 2)
    _, fnr_high = _clopper_pearson_bounds(false_neg, n_pos, significance / 2)
    mu = float(special.ndtri(1 - fpr_high) - special.ndtri(fnr_high))
    with np.errstate(divide="ignore", invalid="ignore"):
        point = float(special.ndtri(1 - false_pos / n_neg) - special.ndtri(false_neg / n_pos))
    # A rule that guesses everyone "in" has FPR = 1, FNR = 0: -inf - (-inf), no evidence.
    point = 0.0 if math.isnan(point) else max(point, 0.0)
    return _RateBound(max(mu, 0.0), point, float(fpr_high), float(fnr_high),
                      g.threshold_in)


def _best_rate_bound(ranked: Any, significance: float) -> _RateBound:
    """The best mu over the one-sided rules of the grid, each at ``significance``.

    Ties (typically all 0) are broken by the point estimate, then by more guesses.
    """
    candidates = [_rate_bound(ranked.guesses(int(k), 0), significance)
                  for k in guess_count_grid(ranked.n_canaries)]
    return max(candidates, key=lambda c: (c.mu, c.mu_point))


def gdp_epsilon_estimate(
    in_scores: ArrayLike, out_scores: ArrayLike, *, delta: float, confidence: float = 0.95,
    threshold: str | float = "bonferroni",
    random_state: int | np.random.Generator | None = None,
) -> GdpEstimate:
    r"""Epsilon of the Gaussian-DP curve that repeated runs' scores refute (Nasr et al. 2023).

    For repeated training runs: ``in_scores`` are the canary's scores in the runs that
    included it, ``out_scores`` in the runs that did not (higher = more likely included),
    each run an independent trial. At a threshold (guess "in" at or above it), one-sided
    Clopper-Pearson bounds on the false positive and false negative rates, each at
    ``(1 - confidence) / 2``, give the lower bound

    .. math:: \mu \ge \Phi^{-1}(1 - \overline{FPR}) - \Phi^{-1}(\overline{FNR})

    (Dong, Roth and Su 2022, Eq. 6), clipped at 0, converted to epsilon at ``delta`` with
    :func:`gdp_epsilon` (their Cor. 2.13). On scores that carry no signal ``mu`` is 0 and
    so is ``epsilon`` (jax-privacy 2.0.0's ``epsilon_from_gdp`` took ``|mu|`` and reported
    3.5-5.9 there; fixed after its release).

    The threshold, as in :func:`~privaudit.metrics.canary_epsilon_lower_bound` (one-sided
    rules; ties against the attacker): ``"bonferroni"`` over the guess counts of
    :func:`~privaudit.metrics._guesses.guess_count_grid` (fixed from the number of runs),
    each at ``1 - (1 - confidence) / len(grid)``; ``"split"``: chosen on a random half of
    the runs, bounded on the other at the full confidence; a float: pre-registered.

    Parameters
    ----------
    in_scores, out_scores : array-like
        Finite scores of one dtype, at least one run of each kind.
    delta : float in (0, 1)
        A mu-GDP mechanism with ``mu > 0`` has no finite pure-DP epsilon.
    confidence : float in (0, 1), default=0.95
    threshold : "bonferroni", "split" or float, default="bonferroni"
    random_state : None, int or numpy.random.Generator
        The split.

    Returns
    -------
    GdpEstimate
        NaN fields with a :class:`~privaudit.exceptions.DegenerateInputWarning` when the
        runs lack one kind.

    References
    ----------
    .. [1] Nasr, M. et al. (2023). Tight auditing of differentially private machine
       learning. USENIX Security.
    .. [2] Dong, J., Roth, A. and Su, W. J. (2022). Gaussian differential privacy. JRSS B.
    """
    func = "gdp_epsilon_estimate"
    ins, outs = check_score_pair(in_scores, out_scores, func)
    delta = check_delta(delta, func)
    if delta == 0:
        raise param_error("delta", func, "in (0, 1) (a Gaussian trade-off curve is never "
                          "(epsilon, 0)-DP)", delta)
    confidence = check_confidence(confidence, func)
    rule = _check_gdp_threshold(threshold, func)
    rng = check_random_state(random_state, func=func)
    significance = 1 - confidence
    if ins.size == 0 or outs.size == 0:
        warn_degenerate(f"{func} needs runs with and without the canary. Returning NaN.")
        nan = float("nan")
        return GdpEstimate(nan, nan, nan, nan, nan, nan, nan, confidence, delta)
    if rule == "bonferroni":
        ranked = rank_canaries(ins, outs)
        found = _best_rate_bound(ranked, significance / len(guess_count_grid(ranked.n_canaries)))
    elif rule == "split":
        found = _split_rate_bound(ins, outs, significance, rng)
    else:
        found = _rate_bound(explicit_guesses(ins, outs, float(rule)), significance)
    return GdpEstimate(gdp_epsilon(found.mu, delta), gdp_epsilon(found.mu_point, delta),
                       found.mu, found.mu_point, found.fpr_upper, found.fnr_upper,
                       found.threshold, confidence, delta)


def _split_rate_bound(ins: NDArray[np.float64], outs: NDArray[np.float64],
                      significance: float, rng: np.random.Generator) -> _RateBound:
    in_perm, out_perm = rng.permutation(ins), rng.permutation(outs)
    n_in_a, n_out_a = ins.size // 2, outs.size // 2
    held_in, held_out = in_perm[n_in_a:], out_perm[n_out_a:]
    if n_in_a == 0 or n_out_a == 0:  # nothing to choose on: guess nothing
        return _rate_bound(explicit_guesses(held_in, held_out, math.inf), significance)
    chosen = _best_rate_bound(rank_canaries(in_perm[:n_in_a], out_perm[:n_out_a]), significance)
    return _rate_bound(explicit_guesses(held_in, held_out, chosen.threshold), significance)


def _check_gdp_threshold(threshold: Any, func: str) -> str | float:
    expected = "'bonferroni', 'split' or a score (float)"
    if isinstance(threshold, str):
        if threshold not in ("bonferroni", "split"):
            raise param_error("threshold", func, expected, threshold)
        return threshold
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real):
        raise param_error("threshold", func, expected, threshold, error=TypeError)
    if math.isnan(float(threshold)):
        raise param_error("threshold", func, expected, threshold)
    return float(threshold)
