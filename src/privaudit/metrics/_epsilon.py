"""Effective epsilon: TAPAS's point estimate and Jagielski et al.'s lower bound."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    check_binary_labels,
    check_fraction,
    check_labels_scores,
    check_random_state,
    check_real_array,
    check_scores,
    paired_with_labels,
    param_error,
    warn_degenerate,
)
from privaudit.metrics._counts import at_or_above, score_counts
from privaudit.metrics._intervals import _clopper_pearson_bounds

__all__ = ["EpsilonBound", "effective_epsilon", "effective_epsilon_lower_bound"]


class EpsilonBound(NamedTuple):
    """One row of the effective-epsilon lower bound, for one confidence level.

    Attributes
    ----------
    confidence : float
        Confidence level gamma of this row.
    epsilon_low : float
        Lower confidence bound (level gamma) on epsilon: a mechanism that is
        epsilon-DP for a smaller epsilon would, with probability >= gamma, not have
        produced these test outcomes.
    epsilon_high : float
        Upper confidence bound (level gamma) on the effective epsilon of the selected
        attack and threshold (not on the mechanism's epsilon: a better attack may exist).
    attack : str
        Name of the selected attack.
    threshold : float
        Selected threshold: the attack guesses "member" when ``score >= threshold``.
    n_validation : int
        Records used to select the attack and threshold.
    n_test : int
        Records used for the bounds.
    """

    confidence: float
    epsilon_low: float
    epsilon_high: float
    attack: str
    threshold: float
    n_validation: int
    n_test: int


def _check_min_count(value: Any, func: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise param_error("min_count", func, "a non-negative integer", value, error=TypeError)
    if value < 0:
        raise param_error("min_count", func, "a non-negative integer", value)
    return int(value)


def _n_extreme(n: int, min_count: int) -> int:
    """TAPAS's ``num_significant = max(min(10, int(0.1 * n)), 1)``, with 10 -> min_count."""
    if min_count == 0:
        return 0
    return max(min(min_count, int(0.1 * n)), 1)


def effective_epsilon(labels: ArrayLike, scores: ArrayLike, *, min_count: int = 10) -> float:
    r"""Point estimate of the effective epsilon of an attack (TAPAS's summary).

    For the guess "member when ``score >= t``" with rates ``TPR_t`` and ``FPR_t``, an
    epsilon-DP mechanism forces ``TPR_t <= e^eps FPR_t`` and
    ``1 - FPR_t <= e^eps (1 - TPR_t)``. The estimate is

    .. math::

        \hat\varepsilon = \max_{t \in T^*} \log \max\left(\frac{TPR_t}{FPR_t},
        \frac{1 - FPR_t}{1 - TPR_t}\right)

    over the thresholds ``T*`` left after dropping the most extreme scores: with ``n``
    records, the ``k = max(min(min_count, floor(n / 10)), 1)`` lowest and ``k`` highest
    sorted scores are removed, and every distinct remaining score is a threshold (TAPAS
    uses ``min_count=10``; ``min_count=0`` keeps every score). As in TAPAS, the result is
    ``inf`` when a kept threshold has ``FPR = 0 < TPR`` or ``TPR = 1 > FPR``.

    This is a noisy, optimistic plug-in number (maximum over thresholds of estimated
    ratios), not a statistical bound: use :func:`effective_epsilon_lower_bound` for that.

    Differences from TAPAS, all on cases where TAPAS returns NaN or a negative number:
    a threshold with ``TPR = FPR = 0`` or ``TPR = FPR = 1`` carries no evidence and is
    skipped (TAPAS's 0/0 gives NaN); the result is clipped at 0 (an attack worse than
    random everywhere has no evidence against 0-DP; TAPAS returns a negative log). Only
    the direction "higher score = member" is tested (as TAPAS, and the privaudit score
    convention); the second ratio already covers the complementary guess "non-member
    when ``score < t``". Pass ``-scores`` to test an attack whose sign is reversed.

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.
    min_count : int >= 0, default=10
        Cap on the number of extreme scores dropped at each end (see above).

    Returns
    -------
    float
        Effective epsilon in [0, inf]. NaN with a
        :class:`~privaudit.exceptions.DegenerateInputWarning` when only one class is
        present or no threshold is left.

    References
    ----------
    .. [1] Houssiau, F. et al. (2022). TAPAS: a toolbox for adversarial privacy auditing
       of synthetic data. NeurIPS Workshop on Synthetic Data for ML
       (``BinaryLabelInferenceAttackSummary.effective_epsilon``).
    .. [2] Kairouz, P., Oh, S. and Viswanath, P. (2015). The composition theorem for
       differential privacy. ICML (the hypothesis-testing view of DP).
    """
    func = "effective_epsilon"
    y, s = check_labels_scores(labels, scores, func=func)
    min_count = _check_min_count(min_count, func)
    n_pos = int(y.sum())
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        warn_degenerate(
            f"{func} is undefined when 'labels' contain only one class. Returning NaN."
        )
        return float("nan")
    n = s.shape[0]
    k = _n_extreme(n, min_count)
    kept = np.sort(s)[k : n - k]
    if kept.size == 0:
        warn_degenerate(
            f"{func}: no threshold is left after dropping the {k} lowest and {k} highest "
            f"of {n} scores. Returning NaN."
        )
        return float("nan")
    thresholds = np.unique(kept)
    # Members / non-members with score >= t, for every kept threshold t at once.
    tp = n_pos - np.searchsorted(np.sort(s[y == 1]), thresholds, side="left")
    fp = n_neg - np.searchsorted(np.sort(s[y == 0]), thresholds, side="left")
    if np.any((fp == 0) & (tp > 0)) or np.any((tp == n_pos) & (fp < n_neg)):
        return float("inf")
    tpr = tp / n_pos
    fpr = fp / n_neg
    # Thresholds with FPR = TPR = 0 (or = 1) are uninformative; give them ratio 1.
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio_pos = np.where(fp > 0, tpr / fpr, 1.0)
        ratio_neg = np.where(tp < n_pos, (1 - fpr) / (1 - tpr), 1.0)
    best = max(1.0, float(np.max(ratio_pos)), float(np.max(ratio_neg)))
    return float(np.log(best))


# ------------------------------------------------------------------ Jagielski et al. bound


def _epsilon_bounds(
    tp: ArrayLike, n_pos: ArrayLike, fp: ArrayLike, n_neg: ArrayLike, tail: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Epsilon bounds from Clopper-Pearson bounds on TPR and FPR, vectorised.

    Each one-sided CP bound fails with probability at most ``tail``. On the event
    {TPR >= TPR_low, FPR <= FPR_high} (probability >= 1 - 2 tail, union bound) both
    ``TPR / FPR >= TPR_low / FPR_high`` and ``(1 - FPR) / (1 - TPR) >= (1 - FPR_high) /
    (1 - TPR_low)`` hold, so their max is a lower bound on epsilon with no further
    correction. The upper bound is symmetric, on {TPR <= TPR_high, FPR >= FPR_low}.
    """
    tpr_low, tpr_high = _clopper_pearson_bounds(tp, n_pos, tail)
    fpr_low, fpr_high = _clopper_pearson_bounds(fp, n_neg, tail)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.maximum(
            np.log(tpr_low) - np.log(fpr_high), np.log1p(-fpr_high) - np.log1p(-tpr_low)
        )
        high = np.maximum(
            np.log(tpr_high) - np.log(fpr_low), np.log1p(-fpr_low) - np.log1p(-tpr_high)
        )
    # log(0) - log(0) cannot happen (FPR_high > 0 and TPR_low < 1 always), so NaN never
    # appears; clip at 0: epsilon is never negative.
    return np.maximum(low, 0.0), np.maximum(high, 0.0)


def _as_attacks(
    labels: ArrayLike, scores: ArrayLike | Mapping[str, ArrayLike], n: int, func: str
) -> tuple[list[str], NDArray[np.float64]]:
    if isinstance(scores, Mapping):
        if not scores:
            raise param_error("scores", func, "a non-empty mapping", "<an empty mapping>")
        names = [str(name) for name in scores]
        rows = [check_scores(paired_with_labels(labels, v, func=func, param=f"scores[{k!r}]"),
                             func=func, param=f"scores[{k!r}]") for k, v in scores.items()]
    else:
        if getattr(scores, "ndim", None) == 1:  # a Series: matched on the labels' index
            scores = paired_with_labels(labels, scores, func=func, param="scores")
        # Not converted to float here: each row goes through check_scores, which refuses
        # strings and ranks integers that float64 cannot hold exactly.
        arr = check_real_array(scores, func=func, param="scores")
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise param_error(
                "scores", func, "a 1-D array, a 2-D array (n_attacks, n_records) or a "
                "mapping name -> scores", f"<array of shape {arr.shape}>",
            )
        names = [f"attack_{i}" for i in range(arr.shape[0])]
        rows = [check_scores(row, func=func) for row in arr]
    for name, row in zip(names, rows, strict=True):
        if row.shape[0] != n:
            raise param_error(
                "scores", func, f"of the same length as 'labels' ({n}) for every attack",
                f"<length {row.shape[0]} for {name!r}>",
            )
    return names, np.vstack(rows)


def _check_levels(levels: Any, func: str) -> tuple[float, ...]:
    if isinstance(levels, numbers.Real) and not isinstance(levels, bool):
        levels = (levels,)
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        raise param_error(
            "confidence_levels", func, "a non-empty sequence of numbers in (0, 1)", levels,
            error=TypeError,
        )
    return tuple(check_fraction(c, param="confidence_levels", func=func) for c in levels)


def _stratified_split(
    labels: NDArray[np.int8], fraction: float, rng: np.random.Generator
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    validation, test = [], []
    for cls in (0, 1):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        n_val = int(np.floor(fraction * idx.shape[0] + 0.5))
        validation.append(idx[:n_val])
        test.append(idx[n_val:])
    return np.sort(np.concatenate(validation)), np.sort(np.concatenate(test))


def effective_epsilon_lower_bound(
    labels: ArrayLike,
    scores: ArrayLike | Mapping[str, ArrayLike],
    *,
    validation_split: float = 0.1,
    confidence_levels: Sequence[float] = (0.9, 0.95, 0.99),
    random_state: int | np.random.Generator | None = None,
    selection_confidence: float = 0.9,
    joint: bool = False,
) -> tuple[EpsilonBound, ...]:
    """Statistically valid lower bound on epsilon from attack outcomes (Jagielski et al.).

    The two-step procedure (select, then bound) of TAPAS's ``EffectiveEpsilonReport``,
    after a random split:

    1. **Split.** The records are split at random, stratified by label, into a
       validation part (a fraction ``validation_split`` of the members and of the
       non-members, rounded to the nearest integer, halves up) and a disjoint test part.
    2. **Select** (validation only). For every attack and every distinct validation score
       ``t`` (guess "member" when ``score >= t``), compute the epsilon lower bound below
       at the lower confidence level ``selection_confidence``; keep the attack and
       threshold with the highest value. Ties (common on a small validation part, where
       every bound may be 0) are broken by the same bound at confidence 0 (the
       Clopper-Pearson medians, a smoothed plug-in estimate), then by the first attack
       and the highest threshold.
    3. **Bound** (test only). For the selected attack and threshold, count true
       positives ``TP`` out of ``P`` test members and false positives ``FP`` out of
       ``N`` test non-members. For each confidence level gamma, with one-sided
       Clopper-Pearson bounds at level ``1 - (1 - gamma) / 2`` each (so
       ``TPR >= TPR_low`` and ``FPR <= FPR_high`` hold together with probability
       >= gamma, by the union bound)::

           epsilon_low  = max(0, log(TPR_low / FPR_high),
                                 log((1 - FPR_high) / (1 - TPR_low)))
           epsilon_high = max(0, log(TPR_high / FPR_low),
                                 log((1 - FPR_low) / (1 - TPR_high)))

       ``TPR_low``/``FPR_high`` are the ends of the two-sided Clopper-Pearson interval at
       level gamma (:func:`~privaudit.metrics.clopper_pearson`). Both ratios are bounded
       on the same event, so taking their max needs no further correction.
       ``epsilon_low`` is thus a level-gamma lower confidence bound on the epsilon of any
       epsilon-DP mechanism (delta = 0) that produced the outcomes, valid because the
       attack and threshold were fixed before looking at the test part. ``epsilon_high``
       is a level-gamma upper bound on the effective epsilon of the selected attack at
       the selected threshold (``inf`` when ``FP = 0`` or ``TP = P``); the pair
       ``[epsilon_low, epsilon_high]`` covers it with probability >= 2 gamma - 1.

    With ``joint=True``, each one-sided bound is taken at ``1 - (1 - gamma) / 4`` so that
    ``[epsilon_low, epsilon_high]`` holds jointly with probability >= gamma (and
    ``epsilon_low`` alone with >= ``1 - (1 - gamma) / 2``). This is TAPAS's convention
    (it uses two-sided CP intervals at ``1 - (1 - gamma) / 2``).

    Differences from TAPAS: the split is random and stratified (TAPAS takes the first
    ``int(split * n)`` records as they come, so any ordering of the outcomes biases it);
    selection scores both ratios at once (TAPAS scores "TP/FP with ``score >= t``" and
    "TN/FN with ``score <= t``" separately: the same family of guesses). TAPAS's default
    selection level (``conf_level=0.9`` two-sided per rate) corresponds to
    ``selection_confidence=0.95`` here. The selection level is a heuristic that affects
    power only, never validity: on 20 simulated audits of 20,000 records, a lower level
    found better thresholds when the likelihood ratio grows in the tails (Gaussian
    scores, mean shift 1: mean 95% bound 2.17 at 0.5, 2.02 at 0.9, 1.87 at 0.99) and a
    higher one when it is flat (Laplace scores, true epsilon 1: 0.72 at 0.5, 0.84 at 0.9,
    0.92 at 0.99); the default 0.9 sits between.

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,) or (n_attacks, n_records), or mapping
        Scores of one attack, of several attacks (rows, named ``"attack_0"``,
        ``"attack_1"``, ...), or a mapping ``name -> scores``; all over the same records.
        Higher = more likely member.
    validation_split : float in (0, 1), default=0.1
        Fraction of each class used for selection. The test part needs many records,
        so keep this small.
    confidence_levels : sequence of float in (0, 1), default=(0.9, 0.95, 0.99)
        One output row per level.
    random_state : None, int or numpy.random.Generator, default=None
        Source of the random split.
    selection_confidence : float in (0, 1), default=0.9
        Level of the bound maximised during selection.
    joint : bool, default=False
        Make ``[epsilon_low, epsilon_high]`` a joint level-gamma interval (see above).

    Returns
    -------
    tuple of EpsilonBound
        One row per confidence level, in the given order. When the validation or the
        test part lacks members or non-members, the epsilons and the threshold are NaN
        (attack ``""``) and a :class:`~privaudit.exceptions.DegenerateInputWarning` is
        emitted.

    References
    ----------
    .. [1] Jagielski, M., Ullman, J. and Oprea, A. (2020). Auditing differentially private
       machine learning: how private is private SGD? NeurIPS 33, 22205-22216.
    .. [2] Houssiau, F. et al. (2022). TAPAS: a toolbox for adversarial privacy auditing
       of synthetic data. NeurIPS Workshop on Synthetic Data for ML
       (``EffectiveEpsilonReport``).
    .. [3] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial
       limits illustrated in the case of the binomial. Biometrika, 26(4), 404-413.
    """
    func = "effective_epsilon_lower_bound"
    y = check_binary_labels(labels, func=func)
    names, all_scores = _as_attacks(labels, scores, y.shape[0], func)
    validation_split = check_fraction(validation_split, param="validation_split", func=func)
    levels = _check_levels(confidence_levels, func)
    selection_confidence = check_fraction(
        selection_confidence, param="selection_confidence", func=func
    )
    rng = check_random_state(random_state, func=func)
    tails_per_level = 4 if joint else 2

    validation, test = _stratified_split(y, validation_split, rng)
    y_val, y_test = y[validation], y[test]
    n_val, n_test = int(validation.shape[0]), int(test.shape[0])

    def nan_rows() -> tuple[EpsilonBound, ...]:
        return tuple(
            EpsilonBound(c, float("nan"), float("nan"), "", float("nan"), n_val, n_test)
            for c in levels
        )

    for part, part_labels in (("validation", y_val), ("test", y_test)):
        n_pos = int(part_labels.sum())
        if n_pos == 0 or n_pos == part_labels.shape[0]:
            warn_degenerate(
                f"{func}: the {part} part ({part_labels.shape[0]} records) lacks members or "
                "non-members; use more records or another validation_split. Returning NaN."
            )
            return nan_rows()

    # Selection: every attack, every distinct validation score, all at once per attack.
    sel_tail = (1 - selection_confidence) / 2
    best_key: tuple[float, float] = (-np.inf, -np.inf)
    attack, threshold = 0, float("nan")
    for a in range(all_scores.shape[0]):
        counts = score_counts(y_val, all_scores[a, validation])
        tp, fp = at_or_above(counts.pos), at_or_above(counts.neg)
        n_pos_v, n_neg_v = counts.pos.sum(), counts.neg.sum()
        primary, _ = _epsilon_bounds(tp, n_pos_v, fp, n_neg_v, sel_tail)
        # Ties (typically all 0 on a small validation part) are broken by the bound at
        # tail 0.5 (Clopper-Pearson medians, a smoothed plug-in), so that the trivial
        # "everyone is a member" threshold is not picked by default.
        secondary, _ = _epsilon_bounds(tp, n_pos_v, fp, n_neg_v, 0.5)
        i = int(np.lexsort((secondary, primary))[-1])
        key = (float(primary[i]), float(secondary[i]))
        if key > best_key:
            best_key, attack, threshold = key, a, float(counts.values[i])

    s_test = all_scores[attack, test]
    guessed = s_test >= threshold
    tp = int(np.sum(guessed & (y_test == 1)))
    fp = int(np.sum(guessed & (y_test == 0)))
    n_pos_t = int(y_test.sum())
    n_neg_t = n_test - n_pos_t
    rows = []
    for c in levels:
        low, high = _epsilon_bounds(tp, n_pos_t, fp, n_neg_t, (1 - c) / tails_per_level)
        rows.append(
            EpsilonBound(c, float(low), float(high), names[attack], threshold, n_val, n_test)
        )
    return tuple(rows)
