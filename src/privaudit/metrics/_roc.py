"""ROC curve, AUC, TPR at fixed FPR and membership advantage.

All four sort the scores once (``np.unique``) and work on class counts per distinct score
(:mod:`privaudit.metrics._counts`), so they cost O(n log n) and handle ties exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    check_fraction,
    check_labels_scores,
    param_error,
    warn_degenerate,
)
from privaudit.metrics._counts import (
    advantage_from_counts,
    auc_from_counts,
    randomized_tpr_at_fpr_from_rates,
    rates_from_counts,
    score_counts,
    tpr_at_fpr_from_counts,
)

__all__ = ["RocCurve", "advantage", "roc_auc", "roc_curve", "tpr_at_fpr"]


class RocCurve(NamedTuple):
    """Points of a ROC curve, as scikit-learn's ``roc_curve`` returns them.

    Attributes
    ----------
    fpr : ndarray of shape (n_points,)
        False positive rate of the guess "member when ``score >= thresholds[i]``".
    tpr : ndarray of shape (n_points,)
        True positive rate of the same guess.
    thresholds : ndarray of shape (n_points,)
        Decreasing thresholds; the first is ``inf`` (nobody guessed a member).
    """

    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    thresholds: NDArray[np.float64]


def _one_class(labels: NDArray[np.int8], func: str, *, stacklevel: int = 4) -> bool:
    n_pos = int(labels.sum())
    if 0 < n_pos < labels.shape[0]:
        return False
    which = "members (1)" if n_pos else "non-members (0)"
    warn_degenerate(
        f"{func} is undefined when 'labels' contain only {which}: it needs both members "
        "and non-members. Returning NaN.",
        stacklevel=stacklevel,
    )
    return True


def roc_curve(labels: ArrayLike, scores: ArrayLike, *, drop_intermediate: bool = True) -> RocCurve:
    """ROC curve of an attack, identical to ``sklearn.metrics.roc_curve``.

    Every distinct score is a threshold (guess "member" when ``score >= threshold``), tied
    scores move together, and a first point ``(0, 0)`` with threshold ``inf`` is prepended
    (as scikit-learn >= 1.3 does).

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.
    drop_intermediate : bool, default=True
        Drop thresholds whose point is collinear with its neighbours (scikit-learn's
        rule). They never change the plotted curve or the AUC. Use ``False`` to keep one
        point per distinct score.

    Returns
    -------
    RocCurve
        ``(fpr, tpr, thresholds)``. With one class only, the undefined rate is all NaN
        and a :class:`~privaudit.exceptions.DegenerateInputWarning` is emitted.

    References
    ----------
    .. [1] Fawcett, T. (2006). An introduction to ROC analysis. Pattern Recognition
       Letters, 27(8), 861-874.
    """
    y, s = check_labels_scores(labels, scores, func="roc_curve")
    counts = score_counts(y, s)
    # Thresholds in decreasing order, cumulative counts of each class at or above them.
    thresholds = counts.values[::-1]
    tps = np.cumsum(counts.pos[::-1])
    fps = np.cumsum(counts.neg[::-1])
    if drop_intermediate and fps.shape[0] > 2:
        # A point is kept where the curve bends (second difference non-zero in either
        # coordinate), exactly scikit-learn's rule, so the arrays compare equal.
        corner = np.logical_or(np.diff(fps, 2), np.diff(tps, 2))
        keep = np.flatnonzero(np.r_[True, corner, True])
        thresholds, tps, fps = thresholds[keep], tps[keep], fps[keep]
    tps = np.r_[0.0, tps]
    fps = np.r_[0.0, fps]
    thresholds = np.r_[np.inf, thresholds]
    if _one_class(y, "roc_curve"):
        nan = np.full(tps.shape, np.nan)
        fpr = nan if fps[-1] == 0 else fps / fps[-1]
        tpr = nan if tps[-1] == 0 else tps / tps[-1]
        return RocCurve(fpr, tpr, thresholds)
    return RocCurve(fps / fps[-1], tps / tps[-1], thresholds)


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve, equal to ``sklearn.metrics.roc_auc_score``.

    Computed as the Mann-Whitney statistic: the probability that a random member scores
    higher than a random non-member, ties counting 1/2. This is exactly the trapezoidal
    area under :func:`roc_curve` (up to float rounding, < 1e-12).

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.

    Returns
    -------
    float
        AUC in [0, 1]; 0.5 is chance. NaN (with a
        :class:`~privaudit.exceptions.DegenerateInputWarning`) when only one class is
        present.

    References
    ----------
    .. [1] Hanley, J. A. and McNeil, B. J. (1982). The meaning and use of the area under a
       receiver operating characteristic (ROC) curve. Radiology, 143(1), 29-36.
    """
    y, s = check_labels_scores(labels, scores, func="roc_auc")
    if _one_class(y, "roc_auc"):
        return float("nan")
    counts = score_counts(y, s)
    return float(auc_from_counts(counts.pos, counts.neg))


def tpr_at_fpr(labels: ArrayLike, scores: ArrayLike, fpr: float, *,
               randomized: bool = False) -> float:
    """Highest TPR the attacker can reach while keeping its FPR at most ``fpr``.

    By default only real operating points count: the thresholds at the distinct scores,
    plus the point (0, 0) of a threshold above every score. There is no interpolation
    between points, and collinear points (that ``roc_curve`` drops by default) are
    considered. With ``randomized=True`` the attacker may also guess "member" at random
    for the records tied at the first score beyond the limit (Fawcett 2006): the curve is
    read at ``fpr`` on the segment joining the points. The two differ only when members
    and non-members tie across ``fpr``, and the randomised value is continuous in the
    counts, so its bootstrap interval is not split between 0 and 1 by a tie block.

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.
    fpr : float in [0, 1)
        Largest admissible false positive rate. ``fpr=0`` gives the fraction of members
        scoring strictly above every non-member.
    randomized : bool, default=False
        Allow a randomised threshold on the boundary (see above).

    Returns
    -------
    float
        TPR in [0, 1]; NaN (with a :class:`~privaudit.exceptions.DegenerateInputWarning`)
        when only one class is present.

    Raises
    ------
    ValueError
        If ``fpr`` is not in [0, 1).

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership inference attacks from first principles. IEEE S&P.
    .. [2] Fawcett, T. (2006). An introduction to ROC analysis. Pattern Recognition
       Letters, 27(8), 861-874 (section 7: interpolating between classifiers).
    """
    y, s = check_labels_scores(labels, scores, func="tpr_at_fpr")
    fpr = check_fraction(fpr, param="fpr", func="tpr_at_fpr", low_inclusive=True)
    if not isinstance(randomized, (bool, np.bool_)):
        raise param_error("randomized", "tpr_at_fpr", "a bool", randomized, error=TypeError)
    if _one_class(y, "tpr_at_fpr"):
        return float("nan")
    counts = score_counts(y, s)
    if randomized:
        rates = rates_from_counts(counts.pos, counts.neg)
        return float(randomized_tpr_at_fpr_from_rates(*rates, fpr))
    return float(tpr_at_fpr_from_counts(counts.pos, counts.neg, fpr))


def advantage(labels: ArrayLike, scores: ArrayLike) -> float:
    """Membership advantage: the largest TPR - FPR over all thresholds.

    For one threshold, TPR - FPR is Yeom et al.'s membership advantage of the adversary
    "member when ``score >= t``" (Definition 4: Pr[A = 1 | member] - Pr[A = 1 |
    non-member]); this function reports the best threshold, i.e. the maximal vertical
    distance between the ROC curve and the diagonal (Youden's J). It is >= 0, since the
    trivial thresholds give 0. For fixed hard guesses use
    :func:`~privaudit.metrics.binary_metrics` instead.

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.

    Returns
    -------
    float
        Advantage in [0, 1]; NaN (with a
        :class:`~privaudit.exceptions.DegenerateInputWarning`) when only one class is
        present.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF.
    """
    y, s = check_labels_scores(labels, scores, func="advantage")
    if _one_class(y, "advantage"):
        return float("nan")
    counts = score_counts(y, s)
    return float(advantage_from_counts(counts.pos, counts.neg))
