"""Class counts per distinct score: the one representation behind every threshold metric.

A score threshold ``t`` ("guess member when ``score >= t``") only matters through how many
members and non-members sit at or above it. So ROC points, AUC, advantage and TPR at a
fixed FPR all follow from two count vectors over the distinct scores (sorted ascending):
``pos[u]`` members and ``neg[u]`` non-members whose score equals ``values[u]``.

The functions below accept count arrays of shape ``(U,)`` or ``(B, U)`` (one row per
bootstrap resample) and work along the last axis, so the single-sample metrics and the
batched bootstrap share one implementation. Counts are float64 holding integers, so sums
and cumulative sums stay exact (below 2**53).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ScoreCounts",
    "advantage_from_counts",
    "advantage_from_rates",
    "at_or_above",
    "auc_from_counts",
    "randomized_tpr_at_fpr_from_rates",
    "rates_from_counts",
    "score_counts",
    "tpr_at_fpr_from_counts",
    "tpr_at_fpr_from_rates",
]


class ScoreCounts(NamedTuple):
    """Distinct scores (ascending) with the number of members/non-members at each."""

    values: NDArray[np.float64]
    inverse: NDArray[np.intp]
    pos: NDArray[np.float64]
    neg: NDArray[np.float64]


def score_counts(labels: NDArray[np.int8], scores: NDArray[np.float64]) -> ScoreCounts:
    """Sort once (``np.unique``) and count each class at every distinct score."""
    values, inverse = np.unique(scores, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_values = values.shape[0]
    total = np.bincount(inverse, minlength=n_values).astype(np.float64)
    pos = np.bincount(inverse, weights=labels.astype(np.float64), minlength=n_values)
    return ScoreCounts(values, inverse, pos, total - pos)


def at_or_above(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Number of records with score >= ``values[u]``, for every ``u`` (suffix sums)."""
    return np.cumsum(counts[..., ::-1], axis=-1)[..., ::-1]


def auc_from_counts(pos: NDArray[np.float64], neg: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mann-Whitney AUC: P(member score > non-member score) + P(tie) / 2.

    Each member at ``values[u]`` beats the non-members strictly below and ties with those
    at ``values[u]``; the sums are exact, and only the final division rounds.
    """
    n_pos = pos.sum(axis=-1)
    n_neg = neg.sum(axis=-1)
    below = np.cumsum(neg, axis=-1) - neg
    wins = (pos * (below + 0.5 * neg)).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return wins / (n_pos * n_neg)


def rates_from_counts(
    pos: NDArray[np.float64], neg: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """TPR and FPR of "member when score >= ``values[u]``", for every ``u``.

    Computed once and shared when several metrics are evaluated on the same counts (the
    suffix sums dominate the cost of every threshold metric).
    """
    n_pos = pos.sum(axis=-1, keepdims=True)
    n_neg = neg.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return at_or_above(pos) / n_pos, at_or_above(neg) / n_neg


def advantage_from_rates(
    tpr: NDArray[np.float64], fpr: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Max over thresholds of TPR - FPR, from :func:`rates_from_counts`."""
    return np.max(tpr - fpr, axis=-1)


def advantage_from_counts(
    pos: NDArray[np.float64], neg: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Max over thresholds of TPR - FPR.

    The lowest threshold (everyone guessed a member) gives exactly 1 - 1 = 0, so the
    maximum is never negative.
    """
    return advantage_from_rates(*rates_from_counts(pos, neg))


def tpr_at_fpr_from_rates(
    tprs: NDArray[np.float64], fprs: NDArray[np.float64], fpr: float
) -> NDArray[np.float64]:
    """Highest TPR whose FPR is <= ``fpr``, from :func:`rates_from_counts`."""
    achievable = np.where(fprs <= fpr, tprs, 0.0)
    result = np.max(achievable, axis=-1)
    # NaN rates (a class absent from a resample) must give NaN, not a silent 0.
    undefined = np.isnan(tprs[..., 0]) | np.isnan(fprs[..., 0])
    return np.where(undefined, np.nan, result)


def tpr_at_fpr_from_counts(
    pos: NDArray[np.float64], neg: NDArray[np.float64], fpr: float
) -> NDArray[np.float64]:
    """Highest TPR over all thresholds whose FPR is <= ``fpr``.

    The point (0, 0) (nobody guessed a member) is always available, hence the 0 default.
    FPRs are compared as ``count / n_neg <= fpr``, the same division a ROC curve makes, so
    ``fpr=0.29`` admits 29 false positives out of 100.
    """
    return tpr_at_fpr_from_rates(*rates_from_counts(pos, neg), fpr)


def randomized_tpr_at_fpr_from_rates(
    tprs: NDArray[np.float64], fprs: NDArray[np.float64], fpr: float
) -> NDArray[np.float64]:
    """Highest TPR at FPR <= ``fpr`` when the attacker may randomise on the boundary.

    The ROC points are joined by straight segments and the curve is read at ``fpr``: the
    point on the segment from the last threshold whose FPR is <= ``fpr`` to the next one
    is reached by guessing "member" for each record at that next score with a fixed
    probability (Fawcett 2006, section 7; the Neyman-Pearson most powerful test at level
    ``fpr`` randomises on its boundary the same way). Consecutive thresholds differ by the
    records at one score, so the segment only rises across ``fpr`` when members and
    non-members tie at that score: without ties this equals
    :func:`tpr_at_fpr_from_rates`. With ties it is continuous in the class counts, so a
    bootstrap of it is not split between 0 and 1 when a tie block straddles ``fpr``.
    Rates are non-increasing along the last axis (:func:`rates_from_counts`).
    """
    n_points = fprs.shape[-1]
    with np.errstate(invalid="ignore"):
        above = np.sum(fprs > fpr, axis=-1, keepdims=True)  # points beyond the limit
    inside = above < n_points  # else only the origin (0, 0) is within the limit
    at = np.minimum(above, n_points - 1)
    t0 = np.where(inside, np.take_along_axis(tprs, at, axis=-1), 0.0)
    f0 = np.where(inside, np.take_along_axis(fprs, at, axis=-1), 0.0)
    nxt = np.maximum(above - 1, 0)
    t1 = np.take_along_axis(tprs, nxt, axis=-1)
    f1 = np.take_along_axis(fprs, nxt, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        on_segment = t0 + (fpr - f0) / (f1 - f0) * (t1 - t0)
    result = np.where(above >= 1, on_segment, t0)[..., 0]
    undefined = np.isnan(tprs[..., 0]) | np.isnan(fprs[..., 0])
    return np.where(undefined, np.nan, result)
