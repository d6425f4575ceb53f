"""Confidence intervals: Clopper-Pearson, Wilson, and a (batched) stratified bootstrap."""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Iterator, Mapping
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
    advantage_from_rates,
    auc_from_counts,
    randomized_tpr_at_fpr_from_rates,
    rates_from_counts,
    score_counts,
    tpr_at_fpr_from_rates,
)
from privaudit.metrics._roc import advantage, roc_auc, tpr_at_fpr

__all__ = ["Estimate", "bootstrap_ci", "bootstrap_cis", "clopper_pearson", "wilson_interval"]

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


def newcombe_interval(k1: int, n1: int, k2: int, n2: int,
                      confidence: float = 0.95) -> Estimate:
    """Interval of the difference of two independent proportions ``k1/n1 - k2/n2``.

    Newcombe's hybrid score interval (his method 10): with ``(l1, u1)`` and ``(l2, u2)``
    the Wilson intervals of the two proportions (:func:`wilson_interval`) and
    ``d = p1 - p2``::

        low  = d - sqrt((p1 - l1)**2 + (u2 - p2)**2)
        high = d + sqrt((u1 - p1)**2 + (p2 - l2)**2)

    It stays inside [-1, 1], is never degenerate at 0 or n successes (unlike the Wald
    interval), and covers close to the nominal level even for small samples. An
    advantage defined as a difference of success rates on two groups (Yeom et al.'s
    attribute advantage: accuracy on members minus accuracy on non-members) gets its
    interval from here.

    Parameters
    ----------
    k1, n1 : int
        Successes and trials of the first group (n1 > 0).
    k2, n2 : int
        Successes and trials of the second group (n2 > 0).
    confidence : float in (0, 1), default=0.95
        Confidence level.

    Returns
    -------
    Estimate
        ``(k1/n1 - k2/n2, low, high)``.

    References
    ----------
    .. [1] Newcombe, R. G. (1998). Interval estimation for the difference between
       independent proportions: comparison of eleven methods. Statistics in Medicine,
       17(8), 873-890.

    Examples
    --------
    Newcombe's example (a), 56/70 against 48/80:

    >>> e = newcombe_interval(56, 70, 48, 80)
    >>> round(e.value, 4), round(e.low, 4), round(e.high, 4)
    (0.2, 0.0524, 0.3339)
    """
    first = wilson_interval(k1, n1, confidence)
    second = wilson_interval(k2, n2, confidence)
    d = first.value - second.value
    low = d - np.hypot(first.value - first.low, second.high - second.value)
    high = d + np.hypot(first.high - first.value, second.value - second.low)
    return Estimate(float(d), float(max(low, -1.0)), float(min(high, 1.0)))


# --------------------------------------------------------------------------- bootstrap

class _CountTable:
    """Class counts of one chunk of resamples, shape (rows, distinct scores).

    The ROC rates are computed on first use and kept, so several threshold metrics of the
    same resamples share one pass of suffix sums.
    """

    __slots__ = ("_rates", "neg", "pos")

    def __init__(self, pos: NDArray[np.float64], neg: NDArray[np.float64]) -> None:
        self.pos = pos
        self.neg = neg
        self._rates: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None

    def rates(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if self._rates is None:
            self._rates = rates_from_counts(self.pos, self.neg)
        return self._rates


BatchedMetric = Callable[[_CountTable], NDArray[np.float64]]


def _batched_auc(table: _CountTable) -> NDArray[np.float64]:
    return auc_from_counts(table.pos, table.neg)


def _batched_advantage(table: _CountTable) -> NDArray[np.float64]:
    return advantage_from_rates(*table.rates())


def _batched_tpr_at_fpr(table: _CountTable, fpr: float,
                        randomized: bool = False) -> NDArray[np.float64]:
    if randomized:
        return randomized_tpr_at_fpr_from_rates(*table.rates(), fpr)
    return tpr_at_fpr_from_rates(*table.rates(), fpr)


def _batched_version(metric: Callable[..., float]) -> BatchedMetric | None:
    """The count-based batched implementation of a built-in metric, or None.

    Recognises ``roc_auc``, ``advantage`` and ``tpr_at_fpr`` (the latter through
    ``functools.partial(tpr_at_fpr, fpr=...)``, optionally with ``randomized=``), by
    identity, so a user's own function of the same name is never mistaken for them.
    """
    func: Any = metric
    keywords: dict[str, Any] = {}
    if isinstance(metric, functools.partial):
        if metric.args:
            return None
        func, keywords = metric.func, dict(metric.keywords)
    if func is roc_auc and not keywords:
        return _batched_auc
    if func is advantage and not keywords:
        return _batched_advantage
    if func is tpr_at_fpr and set(keywords) in ({"fpr"}, {"fpr", "randomized"}):
        fpr = check_fraction(keywords["fpr"], param="fpr", func="tpr_at_fpr",
                             low_inclusive=True)
        randomized = keywords.get("randomized", False)
        if not isinstance(randomized, (bool, np.bool_)):
            return None  # the plain call raises the parameter error
        return functools.partial(_batched_tpr_at_fpr, fpr=fpr, randomized=bool(randomized))
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


def _resample_statistics(
    batched: list[BatchedMetric],
    looped: list[Callable[..., float]],
    labels: NDArray[np.int8],
    scores: NDArray[np.float64],
    groups: list[NDArray[np.intp]],
    chunks: Iterator[list[NDArray[np.intp]]],
) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    """Every metric on every resample, each chunk of draws consumed once by all metrics.

    The batched metrics share one count table per chunk (scores sorted once, class counts
    per distinct score for all the chunk's resamples); the others are called per resample.
    Returns the statistics of ``batched`` and of ``looped``, in order.
    """
    if batched:
        counts = score_counts(labels, scores)
        n_values = counts.values.shape[0]
        group_values = [counts.inverse[g] for g in groups]
        group_labels = [labels[g] for g in groups]
    batched_out: list[list[NDArray[np.float64]]] = [[] for _ in batched]
    looped_out: list[list[float]] = [[] for _ in looped]
    for draws in chunks:
        if batched:
            rows = draws[0].shape[0]
            size = rows * n_values
            offsets = (n_values * np.arange(rows, dtype=np.intp))[:, None]
            pos = np.zeros(size)
            neg = np.zeros(size)
            for values, group_label, draw in zip(group_values, group_labels, draws,
                                                 strict=True):
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
                        flat, weights=group_label[draw].ravel().astype(np.float64),
                        minlength=size,
                    )
                    pos += drawn_pos
                    neg += np.bincount(flat, minlength=size) - drawn_pos
            table = _CountTable(pos.reshape(rows, n_values), neg.reshape(rows, n_values))
            for out, metric in zip(batched_out, batched, strict=True):
                out.append(metric(table))
            del table
        if looped:
            idx = np.concatenate([g[d] for g, d in zip(groups, draws, strict=True)], axis=1)
            for row in idx:
                y_row, s_row = labels[row], scores[row]
                for stats_out, metric in zip(looped_out, looped, strict=True):
                    stats_out.append(float(metric(y_row, s_row)))
    return (
        [np.concatenate(out) if out else np.empty(0) for out in batched_out],
        [np.array(out, dtype=np.float64) for out in looped_out],
    )


def _percentile_interval(
    value: float,
    statistics: NDArray[np.float64],
    confidence: float,
    *,
    who: str,
) -> Estimate:
    """Percentile interval of the finite statistics, warning about NaN resamples."""
    n_resamples = statistics.shape[0]
    finite = ~np.isnan(statistics)
    n_dropped = int(np.sum(~finite))
    if n_dropped == n_resamples:
        warn_degenerate(
            f"{who} was NaN on all {n_resamples} resamples; returning a NaN interval.",
            stacklevel=4,
        )
        return Estimate(value, float("nan"), float("nan"))
    if n_dropped:
        warn_degenerate(
            f"{who} was NaN on {n_dropped} of {n_resamples} resamples "
            "(e.g. a resample without members or non-members); they are left out of the "
            "interval.",
            stacklevel=4,
        )
    alpha = 1 - confidence
    low, high = np.quantile(statistics[finite], [alpha / 2, 1 - alpha / 2])
    return Estimate(value, float(low), float(high))


def _check_n_resamples(n_resamples: Any, func: str) -> int:
    n_resamples = _check_count(n_resamples, "n_resamples", func)
    if n_resamples < 0:
        raise param_error("n_resamples", func, "a non-negative integer", n_resamples)
    return n_resamples


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
    n_resamples = _check_n_resamples(n_resamples, func)
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
        (statistics,), _ = _resample_statistics([batched], [], y, s, groups, chunks)
    else:
        _, (statistics,) = _resample_statistics([], [metric], y, s, groups, chunks)
    return _percentile_interval(value, statistics, confidence, who="bootstrap_ci: the metric")


def bootstrap_cis(
    metrics: Mapping[str, Callable[..., float]],
    labels: ArrayLike,
    scores: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    stratified: bool = True,
) -> dict[str, Estimate]:
    """Percentile bootstrap intervals of several metrics, on the same resamples.

    Draws the resamples once and evaluates every metric on each of them. The built-in
    threshold metrics (:func:`roc_auc`, :func:`advantage`,
    ``functools.partial(tpr_at_fpr, fpr=x)``) are recognised as :func:`bootstrap_ci`
    recognises them and share one pass of the counting engine per chunk of resamples:
    the scores are sorted once, the class counts per distinct score are accumulated once
    for all of them, and the TPR/FPR suffix sums are computed once for ``advantage`` and
    every ``tpr_at_fpr``. Any other callable is called once per resample, on the same
    draws.

    Each interval is bit for bit the one :func:`bootstrap_ci` gives for that metric with
    the same ``random_state`` (an int seed, or a Generator in the same state): only the
    shared work is done once.

    Parameters
    ----------
    metrics : mapping of str to callable
        Non-empty; each value is ``metric(labels, scores) -> float``, each key names it in
        the result.
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    scores : array-like of shape (n_records,)
        Finite attack scores, higher = more likely member.
    n_resamples : int, default=1000
        Number of bootstrap resamples, >= 0. ``0`` returns ``(value, nan, nan)`` for
        every metric without drawing.
    confidence : float in (0, 1), default=0.95
        Level of the two-sided percentile intervals.
    random_state : None, int or numpy.random.Generator, default=None
        Source of the resampling draws, used once for all metrics.
    stratified : bool, default=True
        Resample within each class, as in :func:`bootstrap_ci`.

    Returns
    -------
    dict of str to Estimate
        The interval of each metric, under its key and in the order of ``metrics``.

    Raises
    ------
    TypeError
        If ``metrics`` is not a mapping of strings to callables.
    ValueError
        If ``metrics`` is empty, ``n_resamples`` is negative, ``confidence`` is not in
        (0, 1), or the labels and scores are invalid.

    Notes
    -----
    Memory stays bounded as in :func:`bootstrap_ci`: the draws are made in chunks of at
    most 2**22 indices, and one chunk's counts and rates are held at a time.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap.
       Chapman & Hall, chapter 13 (percentile intervals).
    """
    func = "bootstrap_cis"
    if not isinstance(metrics, Mapping):
        raise param_error("metrics", func, "a mapping of names to metric(labels, scores)",
                          f"<{type(metrics).__name__}>", error=TypeError)
    if not metrics:
        raise param_error("metrics", func, "a non-empty mapping", "<empty mapping>")
    for name, metric in metrics.items():
        if not isinstance(name, str):
            raise param_error("metrics", func, "keyed by strings", f"<key {name!r}>",
                              error=TypeError)
        if not callable(metric):
            raise param_error("metrics", func, "a mapping of names to callables",
                              f"<{type(metric).__name__} under key {name!r}>",
                              error=TypeError)
    y, s = check_labels_scores(labels, scores, func=func)
    n_resamples = _check_n_resamples(n_resamples, func)
    confidence = check_fraction(confidence, param="confidence", func=func)
    rng = check_random_state(random_state, func=func)
    batched = {name: _batched_version(metric) for name, metric in metrics.items()}

    values = {name: float(metric(y, s)) for name, metric in metrics.items()}
    nan = float("nan")
    out = {name: Estimate(value, nan, nan) for name, value in values.items()}
    if n_resamples == 0:
        return out
    # As in bootstrap_ci: a built-in metric that is NaN on the full data (one class only)
    # is NaN on every resample, so it needs no resampling.
    to_batch = [(name, b) for name, b in batched.items()
                if b is not None and not np.isnan(values[name])]
    to_loop = [name for name, b in batched.items() if b is None]
    if not to_batch and not to_loop:
        return out

    groups, chunks = _resample_draws(y, n_resamples, rng, stratified=stratified)
    batched_stats, looped_stats = _resample_statistics(
        [b for _, b in to_batch], [metrics[name] for name in to_loop], y, s, groups, chunks
    )
    batched_names = [name for name, _ in to_batch]
    for name, statistics in zip(batched_names + to_loop, batched_stats + looped_stats,
                                strict=True):
        out[name] = _percentile_interval(values[name], statistics, confidence,
                                         who=f"bootstrap_cis: the metric {name!r}")
    return out
