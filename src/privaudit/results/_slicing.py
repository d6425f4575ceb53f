"""Leakage per slice of the audited records, and a per-record vulnerability ranking.

An attack's overall AUC averages over records that leak very differently: some classes,
the misclassified records, the high-loss records or an under-represented group can be far
more exposed than the average. :func:`slice_metrics` recomputes the metrics of an
:class:`~privaudit.results.AttackResult` on slices of its records, as TensorFlow Privacy's
``SlicingSpec`` does (entire dataset, by class, by classification correctness, by loss
percentile, by custom groups), with a bootstrap interval on every number.
:func:`vulnerability_ranking` goes down to single records: which members the attack
exposes at the lowest false-positive rate.

Both work on the arrays of the result and on attributes aligned with its records; every
grouping is vectorised (``pandas.factorize`` and one stable ``argsort``), and only the
loops over slices and metrics remain in Python.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

import privaudit.metrics as pm
from privaudit._validation import (
    check_fraction,
    check_random_state,
    check_scores,
    param_error,
    warn_degenerate,
)
from privaudit.results._attack_result import AttackResult
from privaudit.results._metric_policy import check_fprs, check_n_bootstrap, fpr_key

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SLICE_TYPES", "slice_metrics", "vulnerability_ranking"]

#: The built-in slice types, in the order their rows appear; a ``groups`` name may not reuse one.
SLICE_TYPES: tuple[str, ...] = ("entire", "class", "correctness", "loss_percentile")

_DEFAULT_SLICE_FPRS: tuple[float, ...] = (0.001, 0.01, 0.1)
_RANKING_COLUMNS = ("record_id", "label", "score", "detection_fpr", "rank")
# Slices named in the degenerate-slices warning before it says "and N more".
_WARN_EXAMPLES = 5


class _Slice(NamedTuple):
    slice_type: str
    slice_value: Any
    indices: NDArray[np.intp]
    loss_low: float = math.nan
    loss_high: float = math.nan


# --------------------------------------------------------------------------- validation


def _check_positive_int(value: Any, param: str, func: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise param_error(param, func, "a positive integer", value, error=TypeError)
    if value < 1:
        raise param_error(param, func, "a positive integer", value)
    return int(value)


def _aligned_series(values: Any, n: int, param: str, func: str) -> pd.Series:
    """``values`` as a positional pandas Series of length ``n`` (any value type)."""
    import pandas as pd

    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise param_error(
            param, func, f"an array with one value per audited record ({n})",
            f"<{type(values).__name__}>", error=TypeError,
        )
    if isinstance(values, pd.Series):
        # Aligned by position, like every other array here: the index is not a record id.
        series = values.reset_index(drop=True)
    else:
        if isinstance(values, np.ndarray) and values.ndim != 1:
            raise param_error(param, func, "a 1-D array", f"<array of shape {values.shape}>")
        try:
            series = pd.Series(values)
        except (TypeError, ValueError):
            raise param_error(
                param, func, "a 1-D array", f"<{type(values).__name__}>", error=TypeError
            ) from None
    if series.shape[0] != n:
        raise param_error(
            param, func, f"one value per audited record ({n})", f"<length {series.shape[0]}>"
        )
    return series


def _check_correct(correct: Any, n: int, func: str) -> NDArray[np.bool_]:
    arr = np.asarray(correct)
    if arr.ndim != 1:
        raise param_error("correct", func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.shape[0] != n:
        raise param_error(
            "correct", func, f"one value per audited record ({n})", f"<length {arr.shape[0]}>"
        )
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind not in "iuf":
        raise param_error(
            "correct", func, "booleans (True = the target predicted the class right)",
            f"<array of dtype {arr.dtype}>", error=TypeError,
        )
    bad = ~np.isin(arr, (0, 1))
    if np.any(bad):
        examples = np.unique(arr[bad])[:3].tolist()
        raise param_error("correct", func, "booleans or 0/1", f"<values such as {examples}>")
    return arr.astype(bool)


# --------------------------------------------------------------------------- slicing


def _split_by_codes(codes: NDArray[np.intp], n_codes: int) -> list[NDArray[np.intp]]:
    """Indices of the records of each code, ascending; one stable sort for all of them."""
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=n_codes)
    return np.split(order, np.cumsum(counts)[:-1])


def _value_slices(slice_type: str, series: pd.Series, param: str, func: str) -> list[_Slice]:
    """One slice per distinct value (sorted when the values can be; missing values last)."""
    import pandas as pd

    try:
        codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=False)
    except TypeError:
        try:  # values that cannot be ordered: first-seen order
            codes, uniques = pd.factorize(series, sort=False, use_na_sentinel=False)
        except TypeError:
            raise param_error(param, func, "hashable values (numbers, strings, booleans)",
                              "<unhashable values>", error=TypeError) from None
    values = pd.Index(uniques).tolist()
    parts = _split_by_codes(np.asarray(codes, dtype=np.intp), len(values))
    return [_Slice(slice_type, v, idx) for v, idx in zip(values, parts, strict=True)]


def _percentile_label(low: float, high: float, digits: int, last: bool) -> str:
    return f"[{low:.{digits}f}, {high:.{digits}f}{']' if last else ')'}"


def _percentile_slices(loss: NDArray[np.float64], n_percentiles: int) -> list[_Slice]:
    """Slices between the loss quantiles of all records; a partition of the records.

    Bin ``k`` holds the losses in ``[edge_k, edge_{k+1})`` (the last bin is closed). Tied
    losses always share a bin, so a bin can be empty when many losses are equal (e.g. the
    zero losses of an overfit model): splitting ties by record order would make the slices
    depend on how the records were listed, often members first.
    """
    probs = np.linspace(0.0, 1.0, n_percentiles + 1)
    edges = np.quantile(loss, probs)
    codes = np.searchsorted(edges[1:-1], loss, side="right").astype(np.intp)
    parts = _split_by_codes(codes, n_percentiles)
    digits = 2
    while len({f"{p:.{digits}f}" for p in probs}) < probs.shape[0]:
        digits += 1
    return [
        _Slice(
            "loss_percentile",
            _percentile_label(probs[k], probs[k + 1], digits, k == n_percentiles - 1),
            parts[k],
            float(edges[k]),
            float(edges[k + 1]),
        )
        for k in range(n_percentiles)
    ]


def _status(n_members: int, n_non_members: int, min_slice_size: int) -> str:
    if n_members + n_non_members == 0:
        return "empty"
    if n_members == 0 or n_non_members == 0:
        return "one_class"
    if min(n_members, n_non_members) < min_slice_size:
        return "too_small"
    return "ok"


def _describe(sl: _Slice, n_members: int, n_non_members: int) -> str:
    return f"{sl.slice_type}={sl.slice_value} ({n_members} members, {n_non_members} non-members)"


# --------------------------------------------------------------------------- public API


def slice_metrics(
    result: AttackResult,
    *,
    entire: bool = True,
    by_class: ArrayLike | None = None,
    correct: ArrayLike | None = None,
    loss: ArrayLike | None = None,
    n_percentiles: int = 10,
    groups: Mapping[str, ArrayLike] | None = None,
    fprs: Sequence[float] = _DEFAULT_SLICE_FPRS,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    min_slice_size: int = 10,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Metrics of an attack on slices of the audited records, each with a bootstrap interval.

    The slices are those of TensorFlow Privacy's ``SlicingSpec`` [1]_: the entire dataset,
    one slice per true class, correctly / incorrectly classified records, and loss
    percentiles; plus one slice per value of any user-defined attribute (``groups``), e.g.
    sex or ethnicity, to measure disparate vulnerability [2]_. Each slice is scored with the
    :mod:`privaudit.metrics` functions on its records alone, exactly as
    ``pm.roc_auc(labels[mask], scores[mask])`` would.

    Parameters
    ----------
    result : AttackResult
        The attack to slice.
    entire : bool, default=True
        Include the row of all records (``slice_type="entire"``, ``slice_value="all"``).
    by_class : array-like of shape (n_records,), optional
        True class of every audited record (any hashable values): one slice per class.
    correct : array-like of bool of shape (n_records,), optional
        Whether the target predicted each record's class right: slices ``"correct"`` and
        ``"incorrect"`` (both rows always present; an absent one is ``"empty"``).
    loss : array-like of shape (n_records,), optional
        Per-record loss of the target (e.g. ``result.raw_statistic`` of a LOSS attack):
        ``n_percentiles`` slices between its quantiles. The quantiles are taken over all
        audited records, members and non-members together, so the slicing itself uses no
        membership information (quantiles over members only would leak it into the slices).
    n_percentiles : int, default=10
        Number of loss-quantile slices (10 gives deciles, as TF Privacy).
    groups : mapping of str to array-like of shape (n_records,), optional
        User-defined attributes; for each, one slice per distinct value, with the attribute
        name as ``slice_type``. Names must differ from the built-in slice types.
    fprs : sequence of float, default=(0.001, 0.01, 0.1)
        False-positive rates in [0, 1) at which to report the TPR.
    n_bootstrap : int, default=200
        Bootstrap resamples per slice (stratified by label, as
        :meth:`AttackResult.metrics`); ``0`` gives point estimates with NaN bounds.
    confidence : float in (0, 1), default=0.95
        Level of every interval.
    min_slice_size : int, default=10
        A slice with fewer members or fewer non-members than this gets NaN metrics and
        ``status="too_small"``: an AUC over a handful of records is noise whatever its
        interval says. Use ``1`` to score every slice that has both classes.
    random_state : int, Generator or None, default=0
        Seeds the bootstrap. Row ``i`` (skipped slices included) is resampled with the
        ``i``-th integer ``rng.integers(2**63 - 1)`` drawn from it, the draw
        :meth:`AttackResult.metrics` makes, so the ``"entire"`` row has exactly the numbers
        of ``result.metrics(fprs, n_bootstrap, confidence, random_state)``.

    Returns
    -------
    pandas.DataFrame
        One row per slice, in the order entire, class, correctness, loss_percentile, then
        the ``groups`` in their order. Columns: ``slice_type``; ``slice_value`` (``"all"``,
        the class, ``"correct"``/``"incorrect"``, the percentile range such as
        ``"[0.10, 0.20)"`` (the last one closed), or the attribute value; a missing
        attribute value forms its own slice); ``n_records``, ``n_members``,
        ``n_non_members``; ``status`` (``"ok"``, ``"too_small"``, ``"one_class"`` or
        ``"empty"``: metrics are NaN unless ``"ok"``); ``auc``, ``auc_low``, ``auc_high``;
        ``advantage``, ``advantage_low``, ``advantage_high``; for each rate ``f``,
        ``tpr_at_fpr_<f>`` with ``_low`` and ``_high`` (``<f>`` is :func:`fpr_key`, e.g.
        ``tpr_at_fpr_0.001``); ``loss_low``, ``loss_high`` (the loss edges of a percentile
        slice, NaN on other rows). ``DataFrame.attrs`` records the attack name, ``fprs``,
        ``n_bootstrap``, ``confidence`` and ``min_slice_size``.

    Warns
    -----
    DegenerateInputWarning
        Once per call, naming the slices that were not scored (too small, one class only,
        empty), when there are any.

    Raises
    ------
    ValueError, TypeError
        If an attribute is not aligned with the records (one value per record), or an
        option is invalid.

    Notes
    -----
    Read the slices with three cautions. (1) The intervals are per slice, not
    simultaneous: among 20 slices, about one will exclude its true value by chance. (2) A
    slice defined by the attack's own signal flattens it: within a narrow loss percentile,
    a LOSS attack has little left to separate (TF Privacy's percentile slices are meant for
    the other attacks, or to show where the loss signal lives). (3) The AUC of a slice is
    comparable across slices whatever their member fraction (0.5 is chance in every slice);
    the TPR at a low FPR of a small slice is coarse, its FPR resolution being
    ``1 / n_non_members``.

    Unlike TF Privacy, whose percentile slices are closed on both sides (a record on an
    edge falls in two slices), the percentile slices here partition the records.

    References
    ----------
    .. [1] Song, S. and Marn, D. (2020). Introducing a new privacy testing library in
       TensorFlow. TensorFlow blog; the ``membership_inference_attack`` module of
       TensorFlow Privacy (``SlicingSpec``, ``dataset_slicing.py``).
    .. [2] Kulynych, B., Yaghini, M., Cherubin, G., Veale, M. and Troncoso, C. (2022).
       Disparate vulnerability to membership inference attacks. Proceedings on Privacy
       Enhancing Technologies, 2022(1), 460-480.
    .. [3] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership inference attacks from first principles. IEEE S&P (TPR at low FPR).
    """
    func = "slice_metrics"
    if not isinstance(result, AttackResult):
        raise param_error("result", func, "an AttackResult", f"<{type(result).__name__}>",
                          error=TypeError)
    if not isinstance(entire, (bool, np.bool_)):
        raise param_error("entire", func, "a boolean", entire, error=TypeError)
    fprs = check_fprs(fprs, func)
    n_bootstrap = check_n_bootstrap(n_bootstrap, func)
    confidence = check_fraction(confidence, param="confidence", func=func)
    min_slice_size = _check_positive_int(min_slice_size, "min_slice_size", func)
    n_percentiles = _check_positive_int(n_percentiles, "n_percentiles", func)
    rng = check_random_state(random_state, func=func)
    n = result.n_records
    slices = [_Slice("entire", "all", np.arange(n, dtype=np.intp))] if entire else []
    slices += _builtin_slices(n, by_class, correct, loss, n_percentiles, func)
    if groups is not None:
        slices += _group_slices(groups, n, func)
    metrics = _slice_metric_functions(fprs)
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for sl in slices:
        # One draw per row whether or not it is scored: a row's numbers never depend on
        # which other slices happened to be degenerate.
        seed = int(rng.integers(2**63 - 1))
        rows.append(_slice_row(result, sl, metrics, seed, skipped, n_bootstrap=n_bootstrap,
                               confidence=confidence, min_slice_size=min_slice_size))
    if skipped:
        _warn_skipped(skipped, len(slices), min_slice_size)
    return _slice_frame(rows, metrics, {
        "attack": result.name, "fprs": list(fprs), "n_bootstrap": n_bootstrap,
        "confidence": confidence, "min_slice_size": min_slice_size,
    })


def _builtin_slices(
    n: int, by_class: ArrayLike | None, correct: ArrayLike | None, loss: ArrayLike | None,
    n_percentiles: int, func: str,
) -> list[_Slice]:
    """The class, correctness and loss-percentile slices asked for, in that order."""
    slices: list[_Slice] = []
    if by_class is not None:
        slices.extend(_value_slices("class", _aligned_series(by_class, n, "by_class", func),
                                    "by_class", func))
    if correct is not None:
        ok = _check_correct(correct, n, func)
        right, wrong = _split_by_codes((~ok).astype(np.intp), 2)
        slices.append(_Slice("correctness", "correct", right))
        slices.append(_Slice("correctness", "incorrect", wrong))
    if loss is not None:
        loss_arr = check_scores(loss, func=func, param="loss")
        if loss_arr.shape[0] != n:
            raise param_error("loss", func, f"one value per audited record ({n})",
                              f"<length {loss_arr.shape[0]}>")
        slices.extend(_percentile_slices(loss_arr, n_percentiles))
    return slices


def _group_slices(groups: Mapping[str, ArrayLike], n: int, func: str) -> list[_Slice]:
    """One slice per value of each user-defined attribute, in the mapping's order."""
    if not isinstance(groups, Mapping):
        raise param_error("groups", func, "a mapping of attribute name to values",
                          f"<{type(groups).__name__}>", error=TypeError)
    slices: list[_Slice] = []
    for name, values in groups.items():
        if not isinstance(name, str) or not name:
            raise param_error("groups", func, "keyed by non-empty strings",
                              f"<key {name!r}>", error=TypeError)
        if name in SLICE_TYPES:
            raise param_error("groups", func, f"keyed by names other than {list(SLICE_TYPES)}",
                              f"<key {name!r}>")
        param = f"groups[{name!r}]"
        slices.extend(_value_slices(name, _aligned_series(values, n, param, func), param, func))
    return slices


def _slice_metric_functions(fprs: Sequence[float]) -> list[tuple[str, Callable[..., float]]]:
    """The metrics of every slice: AUC, advantage and the TPR at each FPR."""
    metrics: list[tuple[str, Callable[..., float]]] = [
        ("auc", pm.roc_auc),
        ("advantage", pm.advantage),
    ]
    # Partials (not wrappers) of tpr_at_fpr, so that bootstrap_cis takes its batched path;
    # randomised on tied scores, as the whole result's TPRs (AttackResult.metrics), so a
    # slice of everything reads the same number and a tie block never splits [0, 1].
    metrics.extend(
        (f"tpr_at_fpr_{fpr_key(f)}", functools.partial(pm.tpr_at_fpr, fpr=f, randomized=True))
        for f in fprs
    )
    return metrics


def _slice_row(
    result: AttackResult, sl: _Slice, metrics: list[tuple[str, Callable[..., float]]],
    seed: int, skipped: list[str], *, n_bootstrap: int, confidence: float,
    min_slice_size: int,
) -> dict[str, Any]:
    """One slice's row; a slice not scored gets NaN metrics and is added to ``skipped``."""
    y = result.labels[sl.indices]
    n_members = int(np.count_nonzero(y))
    n_non_members = int(y.shape[0]) - n_members
    status = _status(n_members, n_non_members, min_slice_size)
    row: dict[str, Any] = {
        "slice_type": sl.slice_type,
        "slice_value": sl.slice_value,
        "n_records": n_members + n_non_members,
        "n_members": n_members,
        "n_non_members": n_non_members,
        "status": status,
    }
    if status == "ok":
        s = result.scores[sl.indices]
        # One call per slice: every metric is resampled on the same draws of ``seed``
        # (as separate calls with that seed would) and counted in one pass.
        estimates = pm.bootstrap_cis(dict(metrics), y, s, n_resamples=n_bootstrap,
                                     confidence=confidence, random_state=seed)
        for name, est in estimates.items():
            row[name], row[f"{name}_low"], row[f"{name}_high"] = est
    else:
        skipped.append(_describe(sl, n_members, n_non_members))
        for name, _ in metrics:
            row[name] = row[f"{name}_low"] = row[f"{name}_high"] = math.nan
    row["loss_low"] = sl.loss_low
    row["loss_high"] = sl.loss_high
    return row


def _warn_skipped(skipped: list[str], n_slices: int, min_slice_size: int) -> None:
    shown = "; ".join(skipped[:_WARN_EXAMPLES])
    extra = len(skipped) - _WARN_EXAMPLES
    more = f"; and {extra} more" if extra > 0 else ""
    warn_degenerate(
        f"slice_metrics: {len(skipped)} of {n_slices} slices have too few records to "
        f"be scored (fewer than min_slice_size={min_slice_size} members or non-members): "
        f"{shown}{more}. Their metrics are NaN (see the 'status' column).",
        stacklevel=4,
    )


def _slice_frame(
    rows: list[dict[str, Any]], metrics: list[tuple[str, Callable[..., float]]],
    attrs: dict[str, Any],
) -> pd.DataFrame:
    import pandas as pd

    columns = ["slice_type", "slice_value", "n_records", "n_members", "n_non_members", "status"]
    for name, _ in metrics:
        columns += [name, f"{name}_low", f"{name}_high"]
    columns += ["loss_low", "loss_high"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["slice_value"] = frame["slice_value"].astype(object)
    frame.attrs.update(attrs)
    return frame


def _detection_fpr(
    labels: NDArray[np.int8], scores: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Fraction of non-members scoring >= each record (the other non-members, for one)."""
    neg_sorted = np.sort(scores[labels == 0])
    n0 = neg_sorted.shape[0]
    at_or_above = n0 - np.searchsorted(neg_sorted, scores, side="left")
    is_member = labels == 1
    out = np.full(scores.shape[0], np.nan)
    if n0 > 0:
        # Same division as the ROC curve's FPR, so the identity with tpr_at_fpr is exact.
        out[is_member] = at_or_above[is_member] / n0
    if n0 > 1:
        # Leave-one-out: a non-member is measured against the others, as a member is
        # measured against non-members it is not part of.
        out[~is_member] = (at_or_above[~is_member] - 1) / (n0 - 1)
    return out


def vulnerability_ranking(
    result: AttackResult,
    *,
    top: int | None = None,
    include_non_members: bool = False,
    record_features: pd.DataFrame | Mapping[str, ArrayLike] | None = None,
) -> pd.DataFrame:
    """Audited members ranked by how exposed they are, the most exposed first.

    A member's exposure is its ``detection_fpr``: the fraction of non-members whose score
    is at least the member's score,
    ``detection_fpr = #{non-members j : score_j >= score_i} / n_non_members``. It is the
    false-positive rate the attacker must accept to flag this record (the lowest FPR of a
    threshold that catches it), i.e. the empirical one-sided p-value of the record's score
    under the null hypothesis "this record was not a member". Smaller is more exposed; 0
    means the record scores above every non-member.

    Parameters
    ----------
    result : AttackResult
        The attack whose records to rank.
    top : int, optional
        Keep only the first ``top`` rows.
    include_non_members : bool, default=False
        Also rank the non-members, each measured against the *other* non-members (leave one
        out). Non-members near the top are false alarms at that FPR: a useful reminder of
        how many records reach a given ``detection_fpr`` without being members.
    record_features : DataFrame or mapping of str to array-like, optional
        Extra columns aligned by position with the result's records (e.g. class, group,
        loss), carried into the ranking. Names must differ from the ranking's columns.

    Returns
    -------
    pandas.DataFrame
        Columns ``record_id``, ``label``, ``score``, ``detection_fpr``, ``rank`` (1 = most
        exposed; records with the same ``detection_fpr`` and score share a rank), the raw
        statistic under its name when the result has one, then the ``record_features``
        columns. Sorted by ``detection_fpr`` ascending, then score descending, then record
        order; the index is ``0..k-1``.

    Warns
    -----
    DegenerateInputWarning
        When the result has no non-members (or a single one with
        ``include_non_members=True``): ``detection_fpr`` is then NaN and the ranking falls
        back to the score.

    Notes
    -----
    Why this measure. The LiRA paper [1]_ argues that membership inference must be judged
    by the records an attack identifies *confidently*, at a low FPR, not by average-case
    accuracy, and shows per-example that a few records are far more exposed than the rest.
    ``detection_fpr`` states that per record, on one calibrated scale for every attack (raw
    scores are not comparable: a loss, a likelihood ratio, a posterior), using only the
    attack's scores on this audit. It decomposes the ROC curve exactly: for every ``f``,
    ``tpr_at_fpr(labels, scores, f)`` equals the fraction of members with
    ``detection_fpr <= f``. So the members counted in "TPR at 0.1% FPR" are the top of this
    ranking.

    The other per-record view is Song and Mittal's *privacy risk score* [2]_, used by TF
    Privacy: the posterior probability that a record is a member given the target's output,
    estimated with shadow models and class-conditional histograms. It answers a different
    question (how likely, under a prior on membership) and depends on that prior and on
    density estimates; ``detection_fpr`` needs neither. When the posterior is monotone in
    the score the two give the same order.

    Cautions. Its resolution is ``1 / n_non_members``: a 0 means "above all
    ``n_non_members`` non-members", and the true FPR may still be up to about
    ``3 / n_non_members`` (rule of three). With many members, some reach a small
    ``detection_fpr`` by chance even against a useless attack (about ``f * n_members``
    reach ``f`` or below): compare the count at ``f`` with ``f * n_members`` before calling
    a record exposed. And exposure is relative to this attack: a stronger attack may expose
    records this one does not.

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership inference attacks from first principles. IEEE S&P.
    .. [2] Song, L. and Mittal, P. (2021). Systematic evaluation of privacy risks of
       machine learning models. USENIX Security.
    """
    import pandas as pd

    func = "vulnerability_ranking"
    if not isinstance(result, AttackResult):
        raise param_error("result", func, "an AttackResult", f"<{type(result).__name__}>",
                          error=TypeError)
    if top is not None:
        top = _check_positive_int(top, "top", func)
    if not isinstance(include_non_members, (bool, np.bool_)):
        raise param_error("include_non_members", func, "a boolean", include_non_members,
                          error=TypeError)
    features = _ranking_features(result, record_features, func)
    labels, scores = result.labels, result.scores
    n0 = result.n_non_members
    if n0 == 0 or (include_non_members and n0 == 1):
        warn_degenerate(
            f"vulnerability_ranking: the result has {n0} non-member(s), too few to measure a "
            "detection FPR; detection_fpr is NaN and records are ranked by score.",
        )
    detection = _detection_fpr(labels, scores)
    keep = np.arange(result.n_records) if include_non_members else np.flatnonzero(labels == 1)
    order, rank = _rank(keep, detection, scores)
    if top is not None:
        order, rank = order[:top], rank[:top]
    data: dict[str, Any] = {
        "record_id": result.record_ids[order],
        "label": labels[order],
        "score": scores[order],
        "detection_fpr": detection[order],
        "rank": rank.astype(np.int64),
    }
    if result.raw_statistic is not None:
        data[result.raw_statistic_name] = result.raw_statistic[order]
    for name, series in features.items():
        data[name] = series.iloc[order].to_numpy()
    return pd.DataFrame(data)


def _ranking_features(
    result: AttackResult, record_features: Any, func: str,
) -> dict[str, pd.Series]:
    """The user's per-record columns, aligned with the records, named apart from ours."""
    import pandas as pd

    if record_features is None:
        return {}
    if isinstance(record_features, pd.DataFrame):
        items = [(c, record_features[c]) for c in record_features.columns]
    elif isinstance(record_features, Mapping):
        items = list(record_features.items())
    else:
        raise param_error("record_features", func, "a DataFrame or a mapping of columns",
                          f"<{type(record_features).__name__}>", error=TypeError)
    taken = {*_RANKING_COLUMNS, result.raw_statistic_name}
    features: dict[str, pd.Series] = {}
    for name, values in items:
        if not isinstance(name, str) or name in taken:
            raise param_error("record_features", func,
                              f"columns named by strings other than {sorted(taken - {''})}",
                              f"<column {name!r}>")
        features[name] = _aligned_series(values, result.n_records,
                                         f"record_features[{name!r}]", func)
    return features


def _rank(
    keep: NDArray[np.intp], detection: NDArray[np.float64], scores: NDArray[np.float64],
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Records ``keep`` by detection FPR (NaN last), then score; competition ranks."""
    d_key = np.where(np.isnan(detection[keep]), np.inf, detection[keep])
    order = keep[np.lexsort((keep, -scores[keep], d_key))]
    d_sorted = np.where(np.isnan(detection[order]), np.inf, detection[order])
    s_sorted = scores[order]
    # Competition ranking ("1, 2, 2, 4"): a new rank starts wherever the sort key changes.
    new_key = np.r_[True, (d_sorted[1:] != d_sorted[:-1]) | (s_sorted[1:] != s_sorted[:-1])]
    positions = np.arange(1, order.shape[0] + 1)
    return order, np.maximum.accumulate(np.where(new_key, positions, 0))
