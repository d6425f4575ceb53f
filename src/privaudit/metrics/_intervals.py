"""Confidence intervals: Clopper-Pearson, Wilson, and a (batched) stratified bootstrap."""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from privaudit._validation import (
    check_fraction,
    check_labels_scores,
    check_random_state,
    param_error,
    warn_degenerate,
)
from privaudit.metrics._counts import (
    advantage_from_counts,
    auc_from_counts,
    score_counts,
    tpr_at_fpr_from_counts,
)
from privaudit.metrics._roc import advantage, roc_auc, tpr_at_fpr

__all__ = ["Estimate", "bootstrap_ci", "clopper_pearson", "wilson_interval"]

# Bound on the number of resampled indices held in memory at once (32 MB of int64).
_CHUNK_ELEMENTS = 1 << 22


class Estimate(NamedTuple):
    """A point estimate with the bounds of its confidence interval."""

    value: float
    low: float
    high: float


def _check_count(value: Any, param: str, func: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise param_error(param, func, "an integer", value, error=TypeError)
    return int(value)


def _check_binomial(k: Any, n: Any, func: str) -> tuple[int, int]:
    k = _check_count(k, "k", func)
    n = _check_count(n, "n", func)
    if n <= 0:
        raise param_error("n", func, "a positive integer", n)
    if not 0 <= k <= n:
        raise param_error("k", func, f"an integer in [0, n] = [0, {n}]", k)
    return k, n


def _clopper_pearson_bounds(
    k: ArrayLike, n: ArrayLike, tail: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One-sided exact bounds, each failing with probability at most ``tail``.

    ``low`` is the ``tail`` quantile of Beta(k, n - k + 1) (0 when k = 0) and ``high``
    the ``1 - tail`` quantile of Beta(k + 1, n - k) (1 when k = n). Vectorised over k, n.
    """
    k_arr, n_arr = np.broadcast_arrays(np.asarray(k, dtype=np.float64),
                                       np.asarray(n, dtype=np.float64))
    low = np.zeros(k_arr.shape)
    high = np.ones(k_arr.shape)
    has_success = k_arr > 0
    has_failure = k_arr < n_arr
    low[has_success] = special.betaincinv(
        k_arr[has_success], n_arr[has_success] - k_arr[has_success] + 1, tail
    )
    high[has_failure] = special.betaincinv(
        k_arr[has_failure] + 1, n_arr[has_failure] - k_arr[has_failure], 1 - tail
    )
    return low, high


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> Estimate:
    """Exact (Clopper-Pearson) two-sided interval of a binomial proportion k/n.

    The interval inverts two one-sided binomial tests, each at level
    ``(1 - confidence) / 2``: ``low`` is the ``(1 - confidence) / 2`` quantile of
    Beta(k, n - k + 1) (0 when k = 0) and ``high`` the ``(1 + confidence) / 2`` quantile of
    Beta(k + 1, n - k) (1 when k = n). It is the same interval as
    ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")``. Its
    coverage is at least ``confidence`` for every true proportion (conservative).

    Parameters
    ----------
    k : int
        Number of successes, 0 <= k <= n.
    n : int
        Number of trials, n > 0.
    confidence : float in (0, 1), default=0.95
        Confidence level of the two-sided interval.

    Returns
    -------
    Estimate
        ``(k / n, low, high)``.

    References
    ----------
    .. [1] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial
       limits illustrated in the case of the binomial. Biometrika, 26(4), 404-413.
    """
    k, n = _check_binomial(k, n, "clopper_pearson")
    confidence = check_fraction(confidence, param="confidence", func="clopper_pearson")
    low, high = _clopper_pearson_bounds(k, n, (1 - confidence) / 2)
    return Estimate(k / n, float(low), float(high))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> Estimate:
    """Wilson score interval of a binomial proportion k/n.

    With ``z`` the ``(1 + confidence) / 2`` normal quantile and ``p = k / n``::

        centre = (k + z**2 / 2) / (n + z**2)
        half   = z / (n + z**2) * sqrt(k * (n - k) / n + z**2 / 4)

    the interval is ``[centre - half, centre + half]``: the proportions not rejected by
    the two-sided score test. It always contains ``k / n`` and stays inside [0, 1]; its
    bounds are set to exactly 0 (k = 0) and 1 (k = n) so that float rounding cannot
    exclude the estimate. Same numbers as ``scipy.stats.binomtest(k, n).proportion_ci(
    confidence, method="wilson")``.

    Parameters
    ----------
    k : int
        Number of successes, 0 <= k <= n.
    n : int
        Number of trials, n > 0.
    confidence : float in (0, 1), default=0.95
        Confidence level (approximate: the score interval is not exact).

    Returns
    -------
    Estimate
        ``(k / n, low, high)``.

    References
    ----------
    .. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and
       statistical inference. Journal of the American Statistical Association, 22(158),
       209-212.
    """
    k, n = _check_binomial(k, n, "wilson_interval")
    confidence = check_fraction(confidence, param="confidence", func="wilson_interval")
    z = float(stats.norm.ppf((1 + confidence) / 2))
    z2 = z * z
    centre = (k + z2 / 2) / (n + z2)
    half = z / (n + z2) * np.sqrt(k * (n - k) / n + z2 / 4)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Estimate(k / n, float(low), float(high))


# --------------------------------------------------------------------------- bootstrap

BatchedMetric = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


def _batched_version(metric: Callable[..., float]) -> BatchedMetric | None:
    """The count-based batched implementation of a built-in metric, or None.

    Recognises ``roc_auc``, ``advantage`` and ``tpr_at_fpr`` (the latter through
    ``functools.partial(tpr_at_fpr, fpr=...)``), by identity, so a user's own function of
    the same name is never mistaken for them.
    """
    func: Any = metric
    keywords: dict[str, Any] = {}
    if isinstance(metric, functools.partial):
        if metric.args:
            return None
        func, keywords = metric.func, dict(metric.keywords)
    if func is roc_auc and not keywords:
        return auc_from_counts
    if func is advantage and not keywords:
        return advantage_from_counts
    if func is tpr_at_fpr and set(keywords) == {"fpr"}:
        fpr = check_fraction(keywords["fpr"], param="fpr", func="tpr_at_fpr",
                             low_inclusive=True)
        return functools.partial(tpr_at_fpr_from_counts, fpr=fpr)
    return None


def _resample_draws(
    labels: NDArray[np.int8], n_resamples: int, rng: np.random.Generator, *, stratified: bool
) -> tuple[list[NDArray[np.intp]], Iterator[list[NDArray[np.intp]]]]:
    """Bootstrap draws, a bounded number of resamples at a time.

    Returns the groups resampled from (members and non-members when ``stratified``, all
    records otherwise) and an iterator over chunks; a chunk holds, per group, an array of
    shape (rows, group size) of positions into that group. Resample ``r`` of a chunk is
    ``concatenate([group[d[r]] for group, d in zip(groups, chunk)])``. Both the batched
    and the loop paths consume exactly these draws, so a metric gives the same interval
    whichever path computes it.
    """
    n = labels.shape[0]
    if stratified:
        # Keep the member and non-member counts of the audit: they are fixed by the
        # experiment's design, not sampled, in a membership-inference game.
        groups = [np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)]
        groups = [g for g in groups if g.shape[0]]
    else:
        groups = [np.arange(n)]
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // n)

    def chunks() -> Iterator[list[NDArray[np.intp]]]:
        done = 0
        while done < n_resamples:
            rows = min(rows_per_chunk, n_resamples - done)
            yield [rng.integers(0, g.shape[0], size=(rows, g.shape[0])) for g in groups]
            done += rows

    return groups, chunks()


def _batched_statistics(
    batched: BatchedMetric,
    labels: NDArray[np.int8],
    scores: NDArray[np.float64],
    groups: list[NDArray[np.intp]],
    chunks: Iterator[list[NDArray[np.intp]]],
) -> NDArray[np.float64]:
    counts = score_counts(labels, scores)
    n_values = counts.values.shape[0]
    group_values = [counts.inverse[g] for g in groups]
    group_labels = [labels[g] for g in groups]
    out = []
    for draws in chunks:
        rows = draws[0].shape[0]
        size = rows * n_values
        offsets = (n_values * np.arange(rows, dtype=np.intp))[:, None]
        pos = np.zeros(size)
        neg = np.zeros(size)
        for values, group_label, draw in zip(group_values, group_labels, draws, strict=True):
            # Flattened (resample, distinct score) bins: one bincount gives every
            # resample's class counts without a Python loop over resamples.
            flat = values[draw]
            flat += offsets
            flat = flat.ravel()
            if np.all(group_label == 1):
                pos += np.bincount(flat, minlength=size)
            elif np.all(group_label == 0):
                neg += np.bincount(flat, minlength=size)
            else:
                drawn_pos = np.bincount(
                    flat, weights=group_label[draw].ravel().astype(np.float64), minlength=size
                )
                pos += drawn_pos
                neg += np.bincount(flat, minlength=size) - drawn_pos
        out.append(batched(pos.reshape(rows, n_values), neg.reshape(rows, n_values)))
    return np.concatenate(out)


def _looped_statistics(
    metric: Callable[..., float],
    labels: NDArray[np.int8],
    scores: NDArray[np.float64],
    groups: list[NDArray[np.intp]],
    chunks: Iterator[list[NDArray[np.intp]]],
) -> NDArray[np.float64]:
    statistics = []
    for draws in chunks:
        idx = np.concatenate([g[d] for g, d in zip(groups, draws, strict=True)], axis=1)
        statistics.extend(float(metric(labels[row], scores[row])) for row in idx)
    return np.array(statistics, dtype=np.float64)


def bootstrap_ci(
    metric: Callable[..., float],
    labels: ArrayLike,
    scores: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    stratified: bool = True,
) -> Estimate:
    """Percentile bootstrap interval of ``metric(labels, scores)``.

    Records are resampled with replacement ``n_resamples`` times; the interval is the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (``np.quantile``,
    linear interpolation) of the metric over the resamples. By default the resampling is
    stratified by label: members are drawn from the members and non-members from the
    non-members, so every resample keeps the audit's member/non-member counts (fixed by the
    experiment's design, not random) and never loses a class.

    For :func:`roc_auc`, :func:`advantage` and ``functools.partial(tpr_at_fpr, fpr=x)``
    all resamples are evaluated at once from class counts per distinct score (no Python
    loop over resamples); any other callable is called once per resample. Both paths use
    the same draws, so they give the same numbers for the same ``random_state``. Draws
    are made in chunks of at most 2**22 indices, so memory stays bounded for any
    ``n_resamples``.

    Parameters
    ----------
    metric : callable
        ``metric(labels, scores) -> float``.
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.
    n_resamples : int, default=1000
        Number of bootstrap resamples, >= 0. ``0`` skips the resampling and returns
        ``(value, nan, nan)``: a way to switch intervals off (as TAPAS's
        ``num_bootstrap=0``) without a separate code path.
    confidence : float in (0, 1), default=0.95
        Level of the two-sided percentile interval.
    random_state : None, int or numpy.random.Generator, default=None
        Source of the resampling draws; the same seed gives the same interval.
    stratified : bool, default=True
        Resample within each class (see above). With ``False``, records are drawn from the
        whole set; resamples where the metric is NaN (e.g. one class drawn) are left out
        of the quantiles with a warning.

    Returns
    -------
    Estimate
        ``value`` is the metric on the full data; ``low`` and ``high`` the percentile
        bounds. A percentile interval need not contain ``value`` when the metric's
        bootstrap distribution is very skewed (e.g. a bounded metric at its bound).

    Raises
    ------
    ValueError
        If ``n_resamples`` is negative, ``confidence`` is not in (0, 1), or the labels
        and scores are invalid.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap.
       Chapman & Hall, chapter 13 (percentile intervals).
    """
    func = "bootstrap_ci"
    if not callable(metric):
        raise param_error("metric", func, "a callable metric(labels, scores)", metric,
                          error=TypeError)
    y, s = check_labels_scores(labels, scores, func=func)
    n_resamples = _check_count(n_resamples, "n_resamples", func)
    if n_resamples < 0:
        raise param_error("n_resamples", func, "a non-negative integer", n_resamples)
    confidence = check_fraction(confidence, param="confidence", func=func)
    rng = check_random_state(random_state, func=func)
    batched = _batched_version(metric)

    value = float(metric(y, s))
    if n_resamples == 0:
        return Estimate(value, float("nan"), float("nan"))
    if batched is not None and np.isnan(value):
        # The built-in metric has already warned (one class only); every resample would
        # be NaN as well.
        return Estimate(value, float("nan"), float("nan"))

    groups, chunks = _resample_draws(y, n_resamples, rng, stratified=stratified)
    if batched is not None:
        statistics = _batched_statistics(batched, y, s, groups, chunks)
    else:
        statistics = _looped_statistics(metric, y, s, groups, chunks)

    finite = ~np.isnan(statistics)
    n_dropped = int(np.sum(~finite))
    if n_dropped == n_resamples:
        warn_degenerate(
            f"bootstrap_ci: the metric was NaN on all {n_resamples} resamples; "
            "returning a NaN interval."
        )
        return Estimate(value, float("nan"), float("nan"))
    if n_dropped:
        warn_degenerate(
            f"bootstrap_ci: the metric was NaN on {n_dropped} of {n_resamples} resamples "
            "(e.g. a resample without members or non-members); they are left out of the "
            "interval."
        )
    alpha = 1 - confidence
    low, high = np.quantile(statistics[finite], [alpha / 2, 1 - alpha / 2])
    return Estimate(value, float(low), float(high))
