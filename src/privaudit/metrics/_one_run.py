"""Epsilon lower bounds from one training run: Steinke et al.'s and the f-DP recursion.

The setting (Steinke, Nasr and Jagielski 2023, Sec. 3): each of ``m`` canaries is included
in the training data independently with probability 1/2; after training, an attacker that
sees only the model makes ``r`` guesses ("in" or "out") and abstains on the rest; ``v`` of
the guesses are correct. An (epsilon, delta)-DP training makes many correct guesses
unlikely, so a large ``v`` refutes the claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._validation import check_random_state, param_error, warn_degenerate
from privaudit.metrics._gdp import check_delta, gdp_epsilon, gdp_mu
from privaudit.metrics._guesses import (
    Guesses,
    RankedCanaries,
    check_confidence,
    check_count,
    check_score_pair,
    explicit_guesses,
    guess_count_grid,
    rank_canaries,
)
from privaudit.metrics._intervals import _clopper_pearson_bounds

__all__ = ["CanaryBound", "canary_epsilon_lower_bound", "one_run_epsilon_lower_bound",
           "top_k_epsilon_lower_bound"]

ONE_RUN_METHODS = ("steinke", "fdp")
CANARY_METHODS = ("steinke", "fdp", "clopper-pearson")
THRESHOLD_RULES = ("bonferroni", "split")

#: Bisection stops when the bracket is this narrow (absolute, in epsilon or mu).
_TOLERANCE = 1e-9


# ----------------------------------------------------------------- the two tests


def steinke_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    r"""P[at least ``v`` of ``r`` guesses correct] under (epsilon, delta)-DP, bounded.

    Steinke, Nasr and Jagielski (2023): for an epsilon-DP mechanism the number of correct
    guesses is stochastically dominated by ``Binomial(r, e^eps / (1 + e^eps))``
    (Theorem 5.2); with delta > 0 the tail gains the term of their Corollary 5.4 (the
    computation of their Appendix D, ``p_value_DP_audit``)::

        p = f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i,   f(u) = P[X >= u]

    (for ``i > v``, ``f(v - i) = 1`` and the term is largest at ``i = v``, so stopping
    there is exact). The window sums ``f(v - i) - f(v)`` are cumulative sums of the
    binomial pmf, not differences of tails, to keep their precision.
    """
    q = float(special.expit(epsilon))
    if v == 0:
        return 1.0
    if q >= 1.0:
        return 1.0
    tail = float(special.bdtrc(v - 1, r, q))  # P[X >= v]
    if delta == 0:
        return min(tail, 1.0)
    below = np.arange(v - 1, -1, -1, dtype=np.float64)  # v - 1, v - 2, ..., 0
    log_pmf = (special.gammaln(r + 1) - special.gammaln(below + 1)
               - special.gammaln(r - below + 1)
               + below * math.log(q) + (r - below) * math.log1p(-q))
    windows = np.cumsum(np.exp(log_pmf)) / np.arange(1, v + 1)
    return min(tail + 2 * m * delta * float(windows.max()), 1.0)


def fdp_refutes(m: int, r: int, v: int, mu: float, significance: float) -> bool:
    r"""Whether ``v`` correct of ``r`` guesses refute mu-GDP at this significance.

    Mahloujifar, Melis and Chaudhuri (2024), the recursion of their one-run f-DP audit
    (``audit_rh_with_cap`` in their code) on the trade-off curve
    ``f(x) = Phi(Phi^{-1}(1 - x) - mu)`` of mu-GDP, through ``g(x) = f(1 - x)``. Starting
    from ``r_c = a v / m``, ``h_c = a (r - v) / m`` (``a`` = significance), for
    ``i = v - 1, ..., 0``::

        h' = max(h, g(r_c));   r_c <- min(r_c + i / (r - i) (h' - h), 1);   h <- h'

    (stopping as soon as ``h`` no longer moves: nothing changes after that). The claim is
    refuted when ``r_c + h > r / m``.
    """
    if v == 0:
        return False
    correct_mass = significance * v / m
    wrong_mass = significance * (r - v) / m
    for i in range(v - 1, -1, -1):
        raised = max(wrong_mass, float(special.ndtr(special.ndtri(correct_mass) - mu)))
        if raised == wrong_mass:
            break
        correct_mass = min(correct_mass + i / (r - i) * (raised - wrong_mass), 1.0)
        wrong_mass = raised
    return correct_mass + wrong_mass > r / m


# ----------------------------------------------------------------- monotone search


def largest_refuted(refutes: Callable[[float], bool], low: float) -> float:
    """The largest x >= ``low`` with ``refutes(x)``, by bisection; ``low`` when none.

    ``refutes`` must be monotone (true below a point, false above): a claim of privacy
    parameter x is weaker as x grows, so once a claim is not refuted no larger one is.
    """
    if not refutes(low):
        return low
    high = max(1.0, 2 * low)
    while refutes(high):
        low, high = high, 2 * high
        if high > 1e6:  # all guesses correct and delta = 0 with huge r: keep finite
            return low
    while high - low > _TOLERANCE * max(1.0, low):
        middle = (low + high) / 2
        if refutes(middle):
            low = middle
        else:
            high = middle
    return low


def steinke_bound(m: int, r: int, v: int, significance: float, delta: float,
                  floor: float = 0.0) -> float:
    """Largest epsilon refuted by Steinke et al.'s test, searched from ``floor`` up.

    Returns ``floor`` when ``floor`` is not refuted (0.0 from the default floor: nothing
    refuted); a pure-DP pre-check skips the search when even delta = 0 does not refute
    (the delta term only raises the p-value).
    """
    if steinke_p_value(m, r, v, floor, 0.0) >= significance:
        return floor
    return largest_refuted(lambda e: steinke_p_value(m, r, v, e, delta) < significance, floor)


def fdp_mu_bound(m: int, r: int, v: int, significance: float, mu_floor: float) -> float:
    """Largest mu whose mu-GDP claim the guesses refute, searched from ``mu_floor`` up."""
    return largest_refuted(lambda mu: fdp_refutes(m, r, v, mu, significance), mu_floor)


def fdp_bound(m: int, r: int, v: int, significance: float, delta: float,
              floor: float = 0.0) -> float:
    """The f-DP bound in epsilon: the refuted mu converted at delta (Dong et al. Cor. 2.13)."""
    mu_floor = gdp_mu(floor, delta)
    mu = fdp_mu_bound(m, r, v, significance, mu_floor)
    return floor if mu == mu_floor else max(floor, gdp_epsilon(mu, delta))


def _check_method(method: Any, allowed: Sequence[str], func: str) -> str:
    if not isinstance(method, str) or method not in allowed:
        raise param_error("method", func, "one of " + ", ".join(repr(a) for a in allowed),
                          method)
    return method


def _check_delta_for(delta: Any, method: str, func: str) -> float:
    delta = check_delta(delta, func)
    if delta == 0 and method == "fdp":
        raise param_error(
            "delta", func, "in (0, 1) with method='fdp' (a Gaussian trade-off curve is "
            "never (epsilon, 0)-DP; use method='steinke' for pure DP)", delta,
        )
    return delta


def one_run_epsilon_lower_bound(
    n_canaries: int, n_guesses: int, n_correct: int, *, delta: float,
    confidence: float = 0.95, method: str = "steinke",
) -> float:
    r"""The largest epsilon whose (epsilon, delta) claim one run's guesses refute.

    Each of ``n_canaries`` canaries was included independently with probability 1/2; the
    attacker made ``n_guesses`` guesses ("in" or "out", abstaining on the rest), of which
    ``n_correct`` were right. The result is the supremum of the epsilons the guesses refute
    at level ``confidence`` (0.0 when none), found by bisection to 1e-9.

    ``method="steinke"`` (Steinke, Nasr and Jagielski 2023): the claim is refuted when
    :func:`steinke_p_value` (their Theorem 5.2, the binomial tail, plus the delta term of
    Corollary 5.4) is below ``1 - confidence``. Valid for any (epsilon, delta)-DP
    mechanism; ``delta = 0`` is the pure-DP case.

    ``method="fdp"`` (Mahloujifar, Melis and Chaudhuri 2024): the recursion of
    :func:`fdp_refutes` tests the claim "the mechanism is mu-GDP" (its trade-off curve is at
    least the Gaussian one); the largest refuted mu is reported as the epsilon of mu-GDP at
    ``delta`` (Dong, Roth and Su 2022, Cor. 2.13). Tighter than Steinke et al.'s bound, but
    it refutes "as private as the Gaussian mechanism with this (epsilon, delta)", which is
    what DP-SGD's accounting assumes, not every (epsilon, delta)-DP mechanism.

    Equal to jax-privacy 2.0.0's ``_epsilon_one_run`` / ``_epsilon_one_run_fdp`` up to their
    root-finding tolerance (1e-6): jax-privacy searches epsilon with Brent's method, which
    finds a root, and stops at 1e-6; here the search is a bisection for the largest refuted
    value (the paper's ``get_eps_audit``), to 1e-9.

    Parameters
    ----------
    n_canaries : int >= 2
        Canaries ``m``, each included with probability 1/2.
    n_guesses : int in [0, n_canaries]
        Guesses made ``r`` (``k+ + k-``).
    n_correct : int in [0, n_guesses]
        Correct guesses ``v``.
    delta : float in [0, 1)
        The claim's delta (``> 0`` for ``method="fdp"``).
    confidence : float in (0, 1), default=0.95
    method : {"steinke", "fdp"}, default="steinke"

    Returns
    -------
    float
        The epsilon lower bound, >= 0.

    References
    ----------
    .. [1] Steinke, T., Nasr, M. and Jagielski, M. (2023). Privacy auditing with one (1)
       training run. NeurIPS 36 (Theorem 5.2, Corollary 5.4, Appendix D).
    .. [2] Mahloujifar, S., Melis, L. and Chaudhuri, K. (2024). Auditing f-differential
       privacy in one run. arXiv:2410.22235 (ICML 2025).
    .. [3] Dong, J., Roth, A. and Su, W. J. (2022). Gaussian differential privacy. JRSS B.
    """
    func = "one_run_epsilon_lower_bound"
    m = check_count(n_canaries, "n_canaries", func, 2)
    r = check_count(n_guesses, "n_guesses", func, 0, m)
    v = check_count(n_correct, "n_correct", func, 0, r)
    method = _check_method(method, ONE_RUN_METHODS, func)
    delta = _check_delta_for(delta, method, func)
    significance = 1 - check_confidence(confidence, func)
    bound = steinke_bound if method == "steinke" else fdp_bound
    return float(bound(m, r, v, significance, delta))


# ----------------------------------------------------------------- from scores


class CanaryBound(NamedTuple):
    """The epsilon lower bound from canary scores, with the guesses that gave it.

    Attributes
    ----------
    epsilon : float
        The lower bound (0.0 when nothing is refuted).
    method : str
        ``"steinke"``, ``"fdp"`` or ``"clopper-pearson"``.
    threshold : str
        ``"bonferroni"``, ``"split"`` or ``"explicit"``.
    n_canaries : int
        Canaries the bound counts (after a split: the held-out half).
    n_guesses, n_correct : int
        Guesses made (``k+ + k-``) and correct among them.
    n_guessed_in, n_guessed_out, n_abstained : int
        ``k+``, ``k-`` (0 unless two-sided) and the canaries without a guess.
    score_threshold_in, score_threshold_out : float
        Score at/above which "in" was guessed, at/below which "out" was (nan if none).
    confidence, delta : float
    """

    epsilon: float
    method: str
    threshold: str
    n_canaries: int
    n_guesses: int
    n_correct: int
    n_guessed_in: int
    n_guessed_out: int
    n_abstained: int
    score_threshold_in: float
    score_threshold_out: float
    confidence: float
    delta: float


def _clopper_pearson_epsilon(g: Guesses, significance: float, delta: float) -> float:
    """Jagielski et al.'s bound from exact bounds on the error rates of the guesses.

    "In" guesses: ``log((TPR_low - delta) / FPR_high)``; "out" guesses:
    ``log((TNR_low - delta) / FNR_high)``, rates over the included / excluded canaries.
    Every one-sided Clopper-Pearson bound used fails with probability ``significance``
    divided by their number (union bound), so the max over the parts needs no more.
    """
    n_pos, n_neg = g.n_included, g.n_canaries - g.n_included
    parts = [(g.correct_in, n_pos, g.n_guessed_in - g.correct_in, n_neg)] if g.n_guessed_in else []
    if g.n_guessed_out:
        parts.append((g.correct_out, n_neg, g.n_guessed_out - g.correct_out, n_pos))
    best = 0.0
    for hits, n_hits, misses, n_misses in parts:
        tail = significance / (2 * len(parts))
        hit_low, _ = _clopper_pearson_bounds(hits, n_hits, tail)
        _, miss_high = _clopper_pearson_bounds(misses, n_misses, tail)
        if float(hit_low) > delta:
            best = max(best, math.log(float(hit_low) - delta) - math.log(float(miss_high)))
    return best


def _bound_of(g: Guesses, method: str, significance: float, delta: float,
              floor: float = 0.0) -> float:
    if method == "clopper-pearson":
        return max(floor, _clopper_pearson_epsilon(g, significance, delta))
    bound = steinke_bound if method == "steinke" else fdp_bound
    return bound(g.n_canaries, g.n_guesses, g.n_correct, significance, delta, floor)


def top_k_epsilon_lower_bound(
    n_canaries: int, n_included: int, k: int, n_correct: int, *, delta: float,
    confidence: float = 0.95, method: str = "steinke",
) -> float:
    """The bound of ``method`` if "in" was guessed for exactly the top ``k`` canaries.

    Every method of :func:`canary_epsilon_lower_bound` for one fixed one-sided rule (no
    correction for choosing ``k``): ``"steinke"`` / ``"fdp"`` equal
    :func:`one_run_epsilon_lower_bound` on ``(n_canaries, k, n_correct)``;
    ``"clopper-pearson"`` needs the number of included canaries too (its rates are over
    the included and the excluded), and is NaN when either group is empty, as in
    :func:`canary_epsilon_lower_bound` (no warning: the caller warned for the bound).

    Parameters
    ----------
    n_canaries : int >= 2
    n_included : int in [0, n_canaries]
        Canaries that were included.
    k : int in [0, n_canaries]
        Canaries guessed "in" (the top-scored).
    n_correct : int in [0, min(k, n_included)]
        Included canaries among them.
    delta : float in [0, 1)
    confidence : float in (0, 1), default=0.95
    method : {"steinke", "fdp", "clopper-pearson"}, default="steinke"

    Returns
    -------
    float
        The epsilon lower bound (>= 0, or NaN as said).
    """
    func = "top_k_epsilon_lower_bound"
    m = check_count(n_canaries, "n_canaries", func, 2)
    n_in = check_count(n_included, "n_included", func, 0, m)
    k = check_count(k, "k", func, 0, m)
    v = check_count(n_correct, "n_correct", func, max(0, k - (m - n_in)), min(k, n_in))
    method = _check_method(method, CANARY_METHODS, func)
    if method != "clopper-pearson":
        return one_run_epsilon_lower_bound(m, k, v, delta=delta, confidence=confidence,
                                           method=method)
    delta = _check_delta_for(delta, method, func)
    significance = 1 - check_confidence(confidence, func)
    if n_in in (0, m):
        return math.nan
    guesses = Guesses(m, n_in, k, 0, v, 0, math.nan, math.nan)
    return float(_bound_of(guesses, method, significance, delta))


def _rule_family(n_canaries: int, two_sided: bool) -> list[tuple[int, int]]:
    """The guess rules the Bonferroni correction runs over, from ``n_canaries`` only.

    For every count ``k`` of :func:`guess_count_grid`: "in" for the top ``k``; and, for
    the two-sided attacker, "in" for the top ``ceil(k/2)`` with "out" for the bottom
    ``floor(k/2)``. Both attackers divide the confidence by the size of the two-sided
    family, so the two-sided one, which may use every rule the one-sided one may, never
    gets a lower bound.
    """
    counts = guess_count_grid(n_canaries)
    rules = [(int(k), 0) for k in counts]
    if two_sided:
        rules += [(int(k) - int(k) // 2, int(k) // 2) for k in counts if k >= 2]
    return rules


def family_size(n_canaries: int) -> int:
    """Number of rules the Bonferroni correction divides the confidence by."""
    return len(_rule_family(n_canaries, two_sided=True))


def _best_rule(ranked: RankedCanaries, rules: list[tuple[int, int]], method: str,
               significance: float, delta: float) -> tuple[float, Guesses]:
    """The best bound over ``rules`` at ``significance``, and the rule that gives it.

    Rules are visited by decreasing precision, and each is only searched above the best
    bound so far (a rule that does not refute it cannot improve on it). When nothing is
    refuted, the most precise rule is returned with 0.0.
    """
    outcomes = [ranked.guesses(k_in, k_out) for k_in, k_out in rules]
    precision = [g.n_correct / g.n_guesses if g.n_guesses else 0.0 for g in outcomes]
    order = sorted(range(len(outcomes)), key=lambda i: (-precision[i], -outcomes[i].n_guesses))
    best, best_rule = 0.0, outcomes[order[0]]
    for i in order:
        value = _bound_of(outcomes[i], method, significance, delta, floor=best)
        if value > best:
            best, best_rule = value, outcomes[i]
    return best, best_rule


def _split_bound(in_scores: NDArray[np.float64], out_scores: NDArray[np.float64],
                 two_sided: bool, method: str, significance: float, delta: float,
                 rng: np.random.Generator) -> tuple[float, Guesses]:
    """Choose the rules on a random half, bound them on the other half.

    Each kind of rule the call may use (one-sided; and two-sided) is chosen on the
    selection half and turned into score thresholds; the other half is bounded with each
    at ``significance / 2`` (so the two-sided result, a max over a superset, is never
    below the one-sided one, which is spent the same way).
    """
    in_perm, out_perm = rng.permutation(in_scores), rng.permutation(out_scores)
    n_in_a, n_out_a = in_scores.size // 2, out_scores.size // 2
    ranked_a = rank_canaries(in_perm[:n_in_a], out_perm[:n_out_a])
    held_in, held_out = in_perm[n_in_a:], out_perm[n_out_a:]
    family = _rule_family(ranked_a.n_canaries, two_sided) if ranked_a.n_canaries else []
    kinds = [[rule for rule in family if rule[1] == 0], [rule for rule in family if rule[1] > 0]]
    bounds = []
    for rules in (kind for kind in kinds if kind):
        chosen = _choose(ranked_a, rules, method, significance / 2, delta)
        held = explicit_guesses(held_in, held_out, chosen.threshold_in,
                                chosen.threshold_out if chosen.n_guessed_out else None)
        bounds.append((_bound_of(held, method, significance / 2, delta), held))
    if not bounds:  # a selection half without canaries: no rule, no guess
        return 0.0, explicit_guesses(held_in, held_out, math.inf)
    return max(bounds, key=lambda pair: pair[0])  # the first (one-sided) on ties


def _choose(ranked: RankedCanaries, rules: list[tuple[int, int]], method: str,
            significance: float, delta: float) -> Guesses:
    """The rule with the best bound on the selection half (then at confidence 1/2)."""
    value, rule = _best_rule(ranked, rules, method, significance, delta)
    if value == 0:  # nothing refuted at the level: rank the rules by a weaker test
        rule = _best_rule(ranked, rules, method, 0.5, delta)[1]
    return rule


def _check_threshold(threshold: Any, two_sided: bool, func: str) -> str | tuple[float, ...]:
    expected = ("'bonferroni', 'split', a score (float), or with two_sided=True a pair "
                "(in_threshold, out_threshold) with out_threshold < in_threshold")
    if isinstance(threshold, str):
        if threshold not in THRESHOLD_RULES:
            raise param_error("threshold", func, expected, threshold)
        return threshold
    values = threshold if isinstance(threshold, (tuple, list)) else (threshold,)
    if not all(isinstance(t, (int, float, np.floating, np.integer))
               and not isinstance(t, (bool, np.bool_)) for t in values):
        raise param_error("threshold", func, expected, threshold, error=TypeError)
    if len(values) not in (1, 2) or any(math.isnan(float(t)) for t in values):
        raise param_error("threshold", func, expected, threshold)
    if len(values) == 2 and (not two_sided or float(values[1]) >= float(values[0])):
        raise param_error("threshold", func, expected, threshold)
    return tuple(float(t) for t in values)


def canary_epsilon_lower_bound(
    in_scores: ArrayLike, out_scores: ArrayLike, *, delta: float, confidence: float = 0.95,
    method: str = "steinke", threshold: str | float | tuple[float, float] = "bonferroni",
    two_sided: bool = False, random_state: int | np.random.Generator | None = None,
) -> CanaryBound:
    r"""Epsilon lower bound from the scores of canaries included at random in one run.

    ``in_scores`` are the scores of the canaries that were included, ``out_scores`` of
    those that were not (higher = more likely included); ``m`` is their total. The
    attacker guesses "in" for the highest scores (and, ``two_sided``, "out" for the
    lowest, abstaining in between: Steinke et al.'s ``k+`` and ``k-``); the correct
    guesses give the bound of ``method``:

    - ``"steinke"`` / ``"fdp"``: :func:`one_run_epsilon_lower_bound` on (m, guesses,
      correct).
    - ``"clopper-pearson"`` (Jagielski, Ullman and Oprea 2020): exact bounds on the rates
      of the guesses, ``log((TPR - delta) / FPR)`` for "in" guesses and ``log((TNR -
      delta) / FNR)`` for "out" guesses. It treats the canaries as independent trials (as
      if each were a separate training run), which one run does not give: a heuristic
      beside the one-run methods, valid for repeated runs.

    The guesses are chosen without invalidating the bound (``threshold``):

    - ``"bonferroni"``: the rules of a grid fixed from ``m`` alone (never the scores):
      "in" for the top ``k``, ``k = round(m 2^{-j/2})`` from ``m`` down to ``m / 100``
      (:func:`~privaudit.metrics._guesses.guess_count_grid`), plus, two-sided, "in" for
      the top ``ceil(k/2)`` and "out" for the bottom ``floor(k/2)``. Each is bounded at
      confidence ``1 - (1 - confidence) / F``, ``F`` the size of the two-sided family
      (about 30), and the best is reported. jax-privacy instead divides by the number of
      thresholds on the ROC's convex hull, a count that depends on the scores.
    - ``"split"``: a random half (``random_state``; included and excluded canaries
      halved separately) chooses the rules, as score thresholds; the other half is
      bounded with them (``n_canaries`` is then that half), each kind (one-sided, and
      two-sided) at ``1 - (1 - confidence) / 2``.
    - a float: a pre-registered score threshold, "in" at or above it, at the full
      confidence (equal to jax-privacy's ``Explicit``); with ``two_sided`` a pair
      ``(in_threshold, out_threshold)`` also guesses "out" at or below the second. A
      single float guesses "in" only, even with ``two_sided=True``.

    ``two_sided=True`` never gives a lower bound than ``two_sided=False`` on the same
    scores (and ``random_state``): both spend the confidence over the same rules, the
    two-sided attacker may use more of them.

    Ties: at equal scores the guesses take the wrong canaries first (see
    :mod:`privaudit.metrics._guesses`), so a tie never helps the attacker.

    Parameters
    ----------
    in_scores, out_scores : array-like of shape (n_in,), (n_out,)
        Finite scores of one dtype; at least 2 canaries in all.
    delta : float in [0, 1)
        ``> 0`` for ``method="fdp"``.
    confidence : float in (0, 1), default=0.95
    method : {"steinke", "fdp", "clopper-pearson"}, default="steinke"
    threshold : "bonferroni", "split", float or (float, float), default="bonferroni"
    two_sided : bool, default=False
    random_state : None, int or numpy.random.Generator
        The split (only ``threshold="split"`` draws).

    Returns
    -------
    CanaryBound
        When nothing is refuted, ``epsilon`` is 0.0 and the guesses are those of the most
        precise rule. ``"clopper-pearson"`` needs included and excluded canaries: NaN with
        a :class:`~privaudit.exceptions.DegenerateInputWarning` otherwise.

    References
    ----------
    .. [1] Steinke, T., Nasr, M. and Jagielski, M. (2023). Privacy auditing with one (1)
       training run. NeurIPS 36.
    .. [2] Mahloujifar, S., Melis, L. and Chaudhuri, K. (2024). Auditing f-differential
       privacy in one run. arXiv:2410.22235.
    .. [3] Jagielski, M., Ullman, J. and Oprea, A. (2020). Auditing differentially private
       machine learning: how private is private SGD? NeurIPS 33.
    """
    func = "canary_epsilon_lower_bound"
    ins, outs = check_score_pair(in_scores, out_scores, func)
    method = _check_method(method, CANARY_METHODS, func)
    delta = _check_delta_for(delta, method, func)
    confidence = check_confidence(confidence, func)
    if not isinstance(two_sided, (bool, np.bool_)):
        raise param_error("two_sided", func, "a bool", two_sided, error=TypeError)
    rule = _check_threshold(threshold, bool(two_sided), func)
    rng = check_random_state(random_state, func=func)
    significance = 1 - confidence

    def result(epsilon: float, g: Guesses, name: str) -> CanaryBound:
        return CanaryBound(
            float(epsilon), method, name, g.n_canaries, g.n_guesses, g.n_correct,
            g.n_guessed_in, g.n_guessed_out, g.n_canaries - g.n_guesses,
            g.threshold_in, g.threshold_out, confidence, delta,
        )

    if method == "clopper-pearson" and (ins.size == 0 or outs.size == 0):
        warn_degenerate(f"{func}: method='clopper-pearson' needs included and excluded "
                        "canaries. Returning NaN.")
        name = rule if isinstance(rule, str) else "explicit"
        return result(float("nan"), explicit_guesses(ins, outs, math.inf), name)
    if rule == "bonferroni":
        ranked = rank_canaries(ins, outs)
        rules = _rule_family(ranked.n_canaries, bool(two_sided))
        level = significance / family_size(ranked.n_canaries)
        return result(*_best_rule(ranked, rules, method, level, delta), "bonferroni")
    if rule == "split":
        return result(*_split_bound(ins, outs, bool(two_sided), method, significance,
                                    delta, rng), "split")
    g = explicit_guesses(ins, outs, rule[0], rule[1] if len(rule) == 2 else None)
    return result(_bound_of(g, method, significance, delta), g, "explicit")
