"""Which false-positive rates a sample can resolve, and exact evidence of a lift there.

A TPR "at 0.1% FPR" measured on 100 non-members is the TPR at FPR 0: no threshold can let
through a tenth of a non-member. Such a rate is *unresolvable*; a lift TPR / FPR read
there divides by a rate that was never measured.

Where the rate is resolvable, the question "does the attack find more members than a
random guess at this FPR?" has an exact answer under the null hypothesis of no membership
signal: the labels are exchangeable given the scores, so the ranking of members and
non-members is a uniformly random permutation. The number of members ranked above the
(m + 1)-th highest non-member (the threshold that lets through at most m false positives)
is then negative-hypergeometric. Its upper tail is the p-value of the observed count:
exact for any sample size, no bootstrap, no normal approximation.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from privaudit._validation import check_fraction, check_labels_scores, param_error

__all__ = ["false_positives_allowed", "fpr_is_resolvable", "lift_p_value",
           "smallest_resolvable_fpr"]


def false_positives_allowed(fpr: float, n_non_members: int) -> int:
    """The most non-members a threshold may flag at false-positive rate ``<= fpr``.

    ``k / n_non_members <= fpr`` is compared as floats, the way a ROC curve computes its
    rates (so ``fpr=0.29`` admits 29 of 100).
    """
    if n_non_members <= 0:
        return 0
    k = math.floor(fpr * n_non_members)
    while k + 1 <= n_non_members and (k + 1) / n_non_members <= fpr:
        k += 1
    while k > 0 and k / n_non_members > fpr:
        k -= 1
    return k


def fpr_is_resolvable(fpr: float, n_non_members: int) -> bool:
    """Whether ``n_non_members`` can measure a TPR at false-positive rate ``fpr``.

    A positive rate is resolvable when it admits at least one false positive
    (``fpr >= 1 / n_non_members``); below that the threshold admits none and the TPR read
    there is the TPR at FPR 0, whatever ``fpr`` says. FPR 0 itself ("members above every
    non-member") is a count, resolvable by any sample with a non-member, though no lift
    can be read at it.
    """
    if n_non_members <= 0:
        return False
    return fpr == 0 or false_positives_allowed(fpr, n_non_members) >= 1


def smallest_resolvable_fpr(n_non_members: int) -> float:
    """``1 / n_non_members``: the smallest positive FPR a sample resolves (NaN for none)."""
    return 1.0 / n_non_members if n_non_members > 0 else math.nan


def lift_p_value(labels: ArrayLike, scores: ArrayLike, fpr: float) -> float:
    """Exact p-value of the TPR at ``fpr`` under "no membership signal".

    With ``m`` the false positives ``fpr`` admits (:func:`false_positives_allowed`), the
    statistic is ``X``, the number of members scoring strictly above the (m + 1)-th
    highest non-member score: the members found by the best threshold that flags at most
    ``m`` non-members. Under the null hypothesis the labels are exchangeable given the
    scores; breaking ties at random, the members ranked above the (m + 1)-th non-member
    follow the negative hypergeometric law ``nhypergeom(M=n, n=n_members, r=m + 1)``,
    whose upper tail ``P(X >= x)`` is the hypergeometric lower tail ``P(at most m
    non-members among the top x + m)``, the form computed.
    Ties are treated conservatively: a member tied with that non-member counts as below
    it, so ``X`` is never larger than the count with random tie-breaking and
    ``P(X >= x)`` is bounded by the law's upper tail, the value returned. A tie block of
    members and non-members straddling the limit therefore gives no evidence at that FPR
    (but full evidence at a larger FPR that takes the whole block).

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.
    fpr : float in [0, 1)
        The false-positive rate read.

    Returns
    -------
    float
        ``P(X >= observed)`` under the null, in (0, 1]; NaN when a class is missing.
        Several FPRs read on the same scores are several tests: correct for them (e.g.
        Bonferroni, as :func:`privaudit.report._verdict.attack_verdict` does).

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership inference attacks from first principles. IEEE S&P (why the TPR at low
       FPR is the measure).
    .. [2] Johnson, N. L., Kemp, A. W. and Kotz, S. (2005). Univariate Discrete
       Distributions, 3rd ed., Wiley, section 6.2.2 (negative hypergeometric law).
    """
    y, s = check_labels_scores(labels, scores, func="lift_p_value")
    fpr = check_fraction(fpr, param="fpr", func="lift_p_value", low_inclusive=True)
    members, non_members = s[y == 1], s[y == 0]
    if members.size == 0 or non_members.size == 0:
        return math.nan
    allowed = false_positives_allowed(fpr, non_members.size)
    if allowed >= non_members.size:  # pragma: no cover - fpr < 1 admits fewer
        raise param_error("fpr", "lift_p_value", "below 1", fpr)
    boundary = np.sort(non_members)[::-1][allowed]
    found = int(np.count_nonzero(members > boundary))
    if found == 0:
        return 1.0
    # X >= found  <=>  among the first found + allowed ranked records at most ``allowed``
    # are non-members: a hypergeometric lower tail, which scipy computes accurately far
    # into the tail (nhypergeom.sf is 1 - cdf, which loses everything below ~1e-10).
    draws = found + allowed
    return float(min(1.0, stats.hypergeom(y.size, non_members.size, draws).cdf(allowed)))
