"""Numerical core of LiRA, the likelihood-ratio attack of Carlini et al. (2022).

Pure numpy/scipy over precomputed signal matrices: the attack estimator queries the
target and the reference pool, and hands the statistics to :func:`lira_scores`.

Shapes used throughout: ``n_models`` reference models, ``n_records`` audited records and,
optionally, ``n_augmentations`` queries per record (e.g. the record and its mirror image).
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

import privaudit.signals as signals
from privaudit._validation import param_error, warn_degenerate
from privaudit.exceptions import PrivauditWarning

__all__ = [
    "GaussianFitWarning",
    "LiraGaussians",
    "fit_lira_gaussians",
    "lira_scores",
    "logit_confidence",
    "saturation_bound",
]

#: Clipping of :func:`logit_confidence` on probabilities: the smallest normal float64
#: (the same as :func:`privaudit.signals.logit_confidence`), so that confidences within
#: 1e-16 of 1, common for memorised records, keep distinct statistics.
_LOGIT_EPS: float = float(np.finfo(np.float64).tiny)

#: With ``fix_variance="auto"``, a record whose own variance on a side exceeds this multiple
#: of the median one is an outlier that the pooled variance neither describes nor should
#: absorb (e.g. a record some trees of a forest give probability exactly 1, and
#: ``logit_confidence`` 708, while others give 0.9 and 2.2). Under a Gaussian with one
#: common variance and ``d`` degrees of freedom the ratio is ``chi2_d / d`` over its
#: median: above 20 with probability < 0.3% even for ``d = 1``.
_OUTLIER_VARIANCE_RATIO: float = 20.0

#: ``fix_variance="auto"`` uses per-record variances from this many reference models on
#: (Carlini et al., Section VI.A, Figure 9: per-record variances win above about 64).
_AUTO_PER_RECORD_FROM: int = 64


class GaussianFitWarning(PrivauditWarning):
    """LiRA's Gaussians describe some records poorly (saturated statistics, outliers)."""


def saturation_bound(eps: float) -> float:
    """Absolute value of the logit-scaled confidence when ``eps`` clips it.

    ``log(1 - eps) - log(eps)``: the statistic of a probability of exactly 0 or 1 under
    ``logit_confidence(..., eps=eps)`` (708.4 for the default, the smallest normal
    float64; 103.6 for the ``1e-45`` of Carlini et al.'s code); no unclipped probability
    reaches it.
    """
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (0 < eps < 1):
        raise param_error("eps", "saturation_bound", "a real number in (0, 1)", eps)
    return float(math.log1p(-eps) - math.log(eps))


# --------------------------------------------------------------------------- statistic


def logit_confidence(
    outputs: ArrayLike,
    y_index: ArrayLike,
    *,
    from_logits: bool = False,
    eps: float = _LOGIT_EPS,
) -> NDArray[np.float64]:
    """LiRA's statistic: the logit-scaled true-class confidence ``log(p_y / (1 - p_y))``.

    Computed stably as ``log p_y - log(sum_{y' != y} p_y')``: the denominator is the sum
    of the *other* classes' probabilities, never ``1 - p_y``, which rounds to 0 as soon as
    ``p_y`` is within 1e-16 of 1.

    - From probabilities (``from_logits=False``): ``log(max(p_y, eps)) -
      log(max(sum_{y' != y} p_y', eps))``. With the default ``eps`` (the smallest normal
      float64, about 2.2e-308) the statistic lies in about [-708, 708] and equals
      :func:`privaudit.signals.logit_confidence`.
    - From logits (``from_logits=True``): the softmax normaliser cancels, so the statistic
      is exactly ``z_y - logsumexp_{y' != y} z_y'``, computed with the max-shift trick.
      No clipping is needed: this is the most precise route when logits are available
      (e.g. a correct prediction with margin 800 gives 800, where probabilities would
      saturate).

    Parameters
    ----------
    outputs : array-like of shape (..., n_records, n_classes)
        Class probabilities, or unnormalised logits when ``from_logits=True``. Leading
        dimensions are kept, so the stacked outputs of a reference pool, shape
        ``(n_models, n_records, n_classes)``, or with augmentations
        ``(n_models, n_records, n_augmentations, n_classes)`` after moving axes, work as
        they are (``y_index`` then has shape ``(n_records, n_augmentations)`` or is
        broadcast against the leading dimensions).
    y_index : array-like of int, shape broadcastable to ``outputs.shape[:-1]``
        Column of each record's true class, usually of shape ``(n_records,)``.
    from_logits : bool, default=False
        Whether ``outputs`` are logits rather than probabilities.
    eps : float, default=np.finfo(np.float64).tiny
        Clipping of the numerator and denominator (probabilities only).

    Returns
    -------
    ndarray of shape ``outputs.shape[:-1]``
        Higher = more likely member; approximately Gaussian across reference models,
        which is why LiRA fits Gaussians to it.

    Raises
    ------
    ValueError
        If ``outputs`` has fewer than 2 classes, non-finite values, negative
        probabilities, or ``y_index`` is out of range.

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership Inference Attacks From First Principles. IEEE S&P 2022, Section IV.C
       ("logit scaling").

    Examples
    --------
    >>> import numpy as np
    >>> round(float(logit_confidence([[0.75, 0.25]], [0])[0]), 12)  # log(0.75 / 0.25)
    1.098612288668
    >>> round(float(logit_confidence([[2.0, 0.0, 0.0]], [0], from_logits=True)[0]), 12)
    1.30685281944
    """
    func = "logit_confidence"
    arr = np.asarray(outputs, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[-1] < 2:
        raise param_error(
            "outputs", func, "an array of shape (..., n_records, n_classes >= 2)",
            f"<array of shape {arr.shape}>",
        )
    if not np.all(np.isfinite(arr)):
        raise param_error("outputs", func, "finite (no NaN or inf)", "<non-finite values>")
    if not from_logits and np.any(arr < 0):
        raise param_error(
            "outputs", func, "non-negative probabilities (pass from_logits=True for logits)",
            "<negative values>",
        )
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not (0 < eps < 1):
        raise param_error("eps", func, "a real number in (0, 1)", eps)
    idx = np.asarray(y_index)
    if idx.dtype.kind not in "iu":
        raise param_error(
            "y_index", func, "integer class indices", f"<array of dtype {idx.dtype}>",
            error=TypeError,
        )
    n_classes = arr.shape[-1]
    if idx.size and (idx.min() < 0 or idx.max() >= n_classes):
        raise param_error(
            "y_index", func, f"in [0, {n_classes})", f"<values in [{idx.min()}, {idx.max()}]>"
        )
    try:
        idx_b = np.broadcast_to(idx, arr.shape[:-1])
    except ValueError:
        raise param_error(
            "y_index", func, f"broadcastable to {arr.shape[:-1]}", f"<array of shape {idx.shape}>"
        ) from None
    if not from_logits:
        # One implementation of the probability route: the per-record signal, on the
        # stacked outputs flattened to (records, classes).
        flat = signals.logit_confidence(
            arr.reshape(-1, n_classes), idx_b.reshape(-1).astype(np.intp), eps=eps
        )
        return flat.reshape(arr.shape[:-1])
    true_col = idx_b[..., None].astype(np.intp)
    is_true = np.zeros(arr.shape, dtype=bool)
    np.put_along_axis(is_true, true_col, True, axis=-1)
    true_val = np.take_along_axis(arr, true_col, axis=-1)[..., 0]
    others = np.where(is_true, -np.inf, arr)
    top = others.max(axis=-1, keepdims=True)
    lse_others = top[..., 0] + np.log(np.exp(others - top).sum(axis=-1))
    return true_val - lse_others


# --------------------------------------------------------------------------- Gaussians


class LiraGaussians(NamedTuple):
    """Per-record Gaussian fits of LiRA (one column per augmentation).

    Attributes
    ----------
    mu_in, sigma_in : ndarray of shape (n_records, n_augmentations)
        Mean and standard deviation of the statistic on reference models trained WITH
        the record (NaN when ``fit_lira_gaussians`` was asked for the OUT side only).
    mu_out, sigma_out : ndarray of shape (n_records, n_augmentations)
        The same on reference models trained WITHOUT the record.
    n_in, n_out : ndarray of int, shape (n_records,)
        Number of IN / OUT reference models of each record.
    imputed_in, imputed_out : ndarray of bool, shape (n_records,)
        Records whose mean on that side was imputed (no reference model on that side):
        ``mu_in = mu_out + shift`` or ``mu_out = mu_in - shift``, with ``shift`` the mean
        of ``mu_in - mu_out`` over the records that have both.
    """

    mu_in: NDArray[np.float64]
    sigma_in: NDArray[np.float64]
    mu_out: NDArray[np.float64]
    sigma_out: NDArray[np.float64]
    n_in: NDArray[np.int64]
    n_out: NDArray[np.int64]
    imputed_in: NDArray[np.bool_]
    imputed_out: NDArray[np.bool_]


def _as_3d_reference(reference_stats: ArrayLike, func: str) -> NDArray[np.float64]:
    try:
        ref = np.asarray(reference_stats, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(
            "reference_stats", func, "an array of real numbers",
            f"<{type(reference_stats).__name__}>", error=TypeError,
        ) from None
    if ref.ndim not in (2, 3):
        raise param_error(
            "reference_stats", func,
            "of shape (n_models, n_records) or (n_models, n_records, n_augmentations)",
            f"<array of shape {ref.shape}>",
        )
    if ref.shape[0] == 0 or ref.shape[1] == 0 or (ref.ndim == 3 and ref.shape[2] == 0):
        raise param_error(
            "reference_stats", func, "non-empty", f"<array of shape {ref.shape}>"
        )
    if not np.all(np.isfinite(ref)):
        n_bad = int(np.sum(~np.isfinite(ref)))
        raise param_error(
            "reference_stats", func, "finite (no NaN or inf)", f"<{n_bad} non-finite values>"
        )
    return ref if ref.ndim == 3 else ref[:, :, None]


def _as_mask(
    in_mask: ArrayLike, shape: tuple[int, int], func: str, param: str
) -> NDArray[np.bool_]:
    mask = np.asarray(in_mask)
    if mask.shape != shape:
        raise param_error(
            param, func, f"of shape (n_models, n_records) = {shape}",
            f"<array of shape {mask.shape}>",
        )
    if mask.dtype == bool:
        return mask
    if mask.dtype.kind not in "iuf" or not np.all(np.isin(mask, (0, 1))):
        raise param_error(
            param, func, "booleans or 0/1 (True = the record is in that model's training set)",
            f"<array of dtype {mask.dtype}>",
        )
    return mask.astype(bool)


def _check_min_models(min_models: Any, func: str) -> int:
    if isinstance(min_models, bool) or not isinstance(min_models, numbers.Integral):
        raise param_error("min_models", func, "an integer >= 2", min_models, error=TypeError)
    if int(min_models) < 2:
        raise param_error("min_models", func, "an integer >= 2", min_models)
    return int(min_models)


def _check_fix_variance(value: Any, func: str) -> bool | str:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, str) and value == "auto":
        return "auto"
    raise param_error("fix_variance", func, "True, False or 'auto'", value)


def _check_saturation(value: Any, func: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise param_error("saturation", func, "None or a positive real number", value)
    return float(value)


def _side_moments(
    ref: NDArray[np.float64], mask: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Per-record count, mean and sum of squared deviations over the models in ``mask``."""
    count = mask.sum(axis=0).astype(np.int64)
    w = mask[:, :, None]
    total = np.where(w, ref, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count[:, None]
    mean[count == 0] = np.nan
    # Two passes (mean, then squared deviations) rather than E[x^2] - E[x]^2, which
    # cancels catastrophically when the statistic's spread is small next to its level.
    dev = np.where(w, ref - np.nan_to_num(mean)[None, :, :], 0.0)
    ss = (dev * dev).sum(axis=0)
    return count, mean, ss


def _pooled_variance(
    ref: NDArray[np.float64],
    mask: NDArray[np.bool_],
    count: NDArray[np.int64],
    ss: NDArray[np.float64],
    side: str,
    func: str,
    keep: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """Within-record variance pooled over records, one value per augmentation.

    ``sum_j sum_{i in side(j)} (s_ij - mu_j)^2 / sum_j (n_j - 1)``: the deviations of each
    record from its OWN mean, so differences in hardness between records (the very thing
    LiRA models per record) do not inflate it. ``keep`` restricts the sum to some records
    (all of them when none of those has two models).
    """
    if keep is not None:
        dof = int(np.sum(np.maximum(count[keep] - 1, 0)))
        if dof > 0:
            return ss[keep].sum(axis=0) / dof
    dof = int(np.sum(np.maximum(count - 1, 0)))
    if dof > 0:
        var = ss.sum(axis=0) / dof
    else:
        # No record has two models on this side (e.g. a single reference model): the
        # within-record variance cannot be estimated, so use the spread over all records,
        # as Carlini et al.'s code does for its global variance.
        values = ref[mask]  # (n_values, n_aug)
        var = (
            values.var(axis=0, ddof=1) if values.shape[0] > 1
            else np.zeros(ref.shape[2])
        )
        warnings.warn(
            f"{func}: no record has two {side.upper()} reference models, so the "
            f"{side.upper()} variance cannot be estimated within records; using the "
            "variance of the statistic across records instead (add reference models for a "
            "sharper test).",
            PrivauditWarning,
            stacklevel=4,
        )
    return var


def _saturated(
    ref: NDArray[np.float64], mask: NDArray[np.bool_], bound: float | None
) -> NDArray[np.bool_]:
    """Records with a clipped statistic (probability exactly 0 or 1) among the models in mask."""
    if bound is None:
        return np.zeros(ref.shape[1], dtype=bool)
    hit = np.abs(ref) >= bound * (1.0 - 1e-9)
    return np.any(hit & mask[:, :, None], axis=(0, 2))


def _outliers(own: NDArray[np.float64], count: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Records whose own variance dwarfs the median one (see _OUTLIER_VARIANCE_RATIO)."""
    regular = count >= 2
    if not np.any(regular):
        return np.zeros(count.shape, dtype=bool)
    median = np.median(own[regular], axis=0)
    too_wide = (own > _OUTLIER_VARIANCE_RATIO * median) & (median > 0)
    return regular & np.any(too_wide, axis=1)


class _SideFit(NamedTuple):
    var: NDArray[np.float64]  # (n_rec, n_aug)
    ok: bool  # False when the pooled variance is 0
    n_saturated: int
    dominated: float  # share of the pooled sum of squares held by outlying records


def _side_variance(
    ref: NDArray[np.float64],
    side_mask: NDArray[np.bool_],
    count: NDArray[np.int64],
    ss: NDArray[np.float64],
    *,
    fix_variance: bool | str,
    min_models: int,
    bound: float | None,
    side: str,
    func: str,
) -> _SideFit:
    """Variance of every record on one side, by the ``fix_variance`` rule."""
    n_rec, n_aug = ref.shape[1], ref.shape[2]
    raw = _pooled_variance(ref, side_mask, count, ss, side, func)
    with np.errstate(invalid="ignore", divide="ignore"):
        own = ss / (count[:, None] - 1)
    saturated = _saturated(ref, side_mask, bound)
    # Outliers only: flagging every saturated record would hand per-record variances to
    # most records of a sharp network (all near 708), which the paper finds too noisy
    # with few models; a saturated record that mixes 708 with ordinary values is an
    # outlier anyway.
    irregular = _outliers(own, count)
    total = float(ss.sum())
    dominated = float(ss[irregular].sum()) / total if total > 0 else 0.0
    enough = (count[:, None] >= min_models) & (own > 0)
    if fix_variance is True:
        var = np.broadcast_to(raw, (n_rec, n_aug)).copy()
    elif fix_variance is False:
        # Per-record variance only where enough models back it; a record whose models
        # all agree exactly (variance 0) would get an infinite ratio.
        var = np.where(enough, own, np.broadcast_to(raw, (n_rec, n_aug)))
    else:  # "auto"
        pooled = _pooled_variance(ref, side_mask, count, ss, side, func, keep=~irregular)
        pooled = np.where(pooled > 0, pooled, raw)
        per_record = ref.shape[0] >= _AUTO_PER_RECORD_FROM
        use_own = enough if per_record else enough & irregular[:, None]
        var = np.where(use_own, own, np.broadcast_to(pooled, (n_rec, n_aug)))
    return _SideFit(var, bool(np.all(raw > 0)), int(saturated.sum()), dominated)


def _fit(
    ref: NDArray[np.float64],
    mask: NDArray[np.bool_],
    *,
    fix_variance: bool | str,
    min_models: int,
    need_in: bool,
    func: str,
    bound: float | None = None,
) -> tuple[LiraGaussians, bool]:
    """Fit the Gaussians; the flag is False when a variance is 0 (degenerate input)."""
    n_rec, n_aug = ref.shape[1], ref.shape[2]
    n_in, mean_in, ss_in = _side_moments(ref, mask)
    n_out, mean_out, ss_out = _side_moments(ref, ~mask)
    both = (n_in > 0) & (n_out > 0)
    imputed_in = np.zeros(n_rec, dtype=bool)
    imputed_out = n_out == 0
    if need_in:
        imputed_in = n_in == 0
    missing = imputed_out | imputed_in
    if np.any(missing):
        if not np.any(both):
            raise ValueError(
                f"{func}: {int(missing.sum())} of {n_rec} records have no "
                f"{'IN or OUT' if need_in else 'OUT'} reference model, and no record has "
                "both IN and OUT models to estimate the IN-OUT shift from; use more "
                "reference models" + (" or online=False." if need_in else ".")
            )
        shift = np.mean(mean_in[both] - mean_out[both], axis=0)
        mean_out = np.where(imputed_out[:, None], mean_in - shift, mean_out)
        if need_in:
            mean_in = np.where(imputed_in[:, None], mean_out + shift, mean_in)
        warnings.warn(
            f"{func}: {int(missing.sum())} of {n_rec} records have no reference model on "
            "one side (IN or OUT); their mean there was imputed from the other side plus "
            "the average IN-OUT shift, and their variance set to the pooled variance.",
            PrivauditWarning,
            stacklevel=3,
        )
    sides = [("out", n_out, ss_out, ~mask)]
    if need_in:
        sides.insert(0, ("in", n_in, ss_in, mask))
    sigmas: dict[str, NDArray[np.float64]] = {
        "in": np.full((n_rec, n_aug), np.nan), "out": np.full((n_rec, n_aug), np.nan)
    }
    ok = True
    for side, count, ss, side_mask in sides:
        fit = _side_variance(ref, side_mask, count, ss, fix_variance=fix_variance,
                             min_models=min_models, bound=bound, side=side, func=func)
        ok = ok and fit.ok
        sigmas[side] = np.sqrt(fit.var)
        _warn_fit(fit, side, n_rec, fix_variance, bound, func)
    if not need_in:
        mean_in = np.full((n_rec, n_aug), np.nan)
    fits = LiraGaussians(
        mu_in=mean_in, sigma_in=sigmas["in"], mu_out=mean_out, sigma_out=sigmas["out"],
        n_in=n_in, n_out=n_out, imputed_in=imputed_in, imputed_out=imputed_out,
    )
    return fits, ok


def _warn_fit(
    fit: _SideFit, side: str, n_rec: int, fix_variance: bool | str, bound: float | None,
    func: str,
) -> None:
    """Say when the Gaussians of one side describe some records poorly."""
    side = side.upper()
    if fit.n_saturated:
        remedy = {
            "auto": "those whose spread is an outlier keep their own variance, out of the "
                    "pooled one",
            False: "they use their own variance",
            True: "they may inflate the pooled variance of every record",
        }[fix_variance]
        warnings.warn(
            f"{func}: the statistic is saturated (|statistic| = {bound:.1f}, a probability "
            f"of exactly 0 or 1, as trees give) on some {side} reference model for "
            f"{fit.n_saturated} of {n_rec} records; a Gaussian fits them poorly and {remedy}.",
            GaussianFitWarning,
            stacklevel=4,
        )
    if fix_variance is True and fit.dominated > 0.5:
        warnings.warn(
            f"{func}: records with outlying (e.g. saturated) statistics hold "
            f"{fit.dominated:.0%} of the pooled {side} variance, which flattens every other "
            "record's test; use fix_variance='auto' (or False).",
            GaussianFitWarning,
            stacklevel=4,
        )


def fit_lira_gaussians(
    reference_stats: ArrayLike,
    in_mask: ArrayLike,
    *,
    fix_variance: bool | str = False,
    min_models: int = 2,
    online: bool = True,
    saturation: float | None = None,
) -> LiraGaussians:
    """Fit LiRA's per-record IN and OUT Gaussians to reference-model statistics.

    For each record ``j`` (and augmentation), ``mu_in`` / ``mu_out`` are the means of the
    statistic over the reference models trained with / without it, and ``sigma_in`` /
    ``sigma_out`` their standard deviations (unbiased, ``ddof=1``). All of it is computed
    with masked array reductions, vectorised over records. (Means as in the paper;
    Carlini et al.'s code uses medians and ``ddof=0``.)

    Rules for records with few models (so that every record gets finite parameters):

    - ``fix_variance=True``: every record uses the *pooled within-record* variance of its
      side, ``sum_j sum_i (s_ij - mu_j)^2 / sum_j (n_j - 1)`` (Carlini et al.'s "global
      variance"). Pooling the deviations from each record's own mean keeps the records'
      differing hardness out of it; Carlini et al.'s code instead takes ``np.std`` of all
      values together, which adds the spread of the means across records.
    - ``fix_variance=False``: a record with at least ``min_models`` models on a side (and
      a positive sample variance there) uses its own variance; the others use the pooled
      variance. If no record has two models on a side, the pooled variance is the
      variance across records (with a :class:`~privaudit.exceptions.PrivauditWarning`).
    - ``fix_variance="auto"``: the pooled variance, estimated on the *regular* records
      only, for every record but the outliers, which keep their own variance (when
      ``min_models`` back it): records whose own variance on that side exceeds 20 times
      the median one, typically a statistic that saturates (a probability of exactly 0
      or 1, as decision trees give) on some models only. A handful of them otherwise
      dominates the pooled variance and flattens every other record's test (on a random
      forest, online LiRA then finds fewer members at low FPR than LOSS). From 64
      reference models on, every record with ``min_models`` models uses its own variance
      (Carlini et al., Figure 9), the regular pooled one otherwise.
    - A record with *no* model on a side (e.g. IN for every model) gets the mean of the
      other side shifted by the average ``mu_in - mu_out`` of the records that have both,
      and the pooled variance, with a warning counting such records. The reference pool
      trains each record into half the models, so this only happens with tiny pools.

    Parameters
    ----------
    reference_stats : array-like of shape (n_models, n_records[, n_augmentations])
        The statistic (e.g. :func:`logit_confidence`) of every reference model on every
        record.
    in_mask : array-like of bool, shape (n_models, n_records)
        ``in_mask[i, j]`` is True when record ``j`` is in model ``i``'s training set
        (``ReferencePool.in_mask_`` restricted to the audited rows).
    fix_variance : bool or "auto", default=False
        Use one pooled variance per side (per augmentation) for every record (``True``),
        per-record variances (``False``) or the robust rule above (``"auto"``).
    min_models : int, default=2
        Fewest models on a side for a record's own variance to be used.
    online : bool, default=True
        Fit the IN side too; ``False`` fits the OUT side only (IN fields are NaN).
    saturation : float, optional
        The absolute value at which the statistic is clipped (``saturation_bound(eps)``
        for ``logit_confidence(..., eps=eps)``); statistics at it are saturated. ``None``:
        nothing is treated as saturated.

    Warns
    -----
    GaussianFitWarning
        When some records have saturated statistics, or (``fix_variance=True``) when
        outlying records hold most of a pooled variance.

    Returns
    -------
    LiraGaussians

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership Inference Attacks From First Principles. IEEE S&P 2022, Algorithm 1 and
       Section IV.C ("per-example" vs. "global" variance).
    """
    func = "fit_lira_gaussians"
    ref = _as_3d_reference(reference_stats, func)
    mask = _as_mask(in_mask, ref.shape[:2], func, "in_mask")
    mm = _check_min_models(min_models, func)
    fits, ok = _fit(ref, mask, fix_variance=_check_fix_variance(fix_variance, func),
                    min_models=mm, need_in=bool(online), func=func,
                    bound=_check_saturation(saturation, func))
    if not ok:
        warn_degenerate(
            f"{func}: a pooled variance is 0 (every reference model gives the same "
            "statistic on each record); the Gaussians are degenerate."
        )
    return fits


def lira_scores(
    target_stat: ArrayLike,
    reference_stats: ArrayLike,
    in_mask: ArrayLike,
    *,
    online: bool = True,
    fix_variance: bool | str = False,
    min_models: int = 2,
    saturation: float | None = None,
) -> NDArray[np.float64]:
    """LiRA membership scores from the target's and the reference models' statistics.

    The Gaussians are fitted by :func:`fit_lira_gaussians` (see it for the handling of
    records with few reference models). Then, with ``phi`` the target's statistic:

    - **Online** (``online=True``): the log-likelihood ratio of Carlini et al.'s
      Algorithm 1, ``log N(phi; mu_in, sigma_in^2) - log N(phi; mu_out, sigma_out^2)``,
      summed over augmentations (a diagonal multivariate Gaussian over the queries, as the
      paper does with multiple queries; Carlini et al.'s code averages, which ranks the
      same).
    - **Offline** (``online=False``): only OUT models are used. The paper's score is the
      one-sided test ``Lambda = 1 - Pr[Z > phi]``, ``Z ~ N(mu_out, sigma_out^2)``. This
      function returns ``-log Pr[Z > phi] = -norm.logsf((phi - mu_out) / sigma_out)``, the
      negative log p-value: a strictly increasing function of ``Lambda``, so every ROC
      metric is identical, but it keeps full float resolution for the most exposed
      records (``Lambda`` and ``log Lambda`` round to 1 and 0 once ``phi`` is ~8 resp.
      ~38 standard deviations above ``mu_out``, tying exactly the records that decide the
      TPR at low FPR). The price is at the other end: records more than ~38 standard
      deviations *below* ``mu_out`` all score 0, a tie among certain non-members that
      moves no low-FPR operating point. With several augmentations the standardised statistics are
      combined as ``Z = sum_a z_a / sqrt(n_augmentations)`` (Stouffer's method: the
      one-sided test of their sum, N(0, 1) under the OUT hypothesis). Note that Carlini
      et al.'s released code scores offline with the two-sided ``-logpdf`` under the OUT
      Gaussian instead; this follows the paper.

    Higher = more likely member in both modes.

    Parameters
    ----------
    target_stat : array-like of shape (n_records,) or (n_records, n_augmentations)
        The audited model's statistic, e.g. ``logit_confidence(target_probabilities, y)``.
    reference_stats : array-like of shape (n_models, n_records[, n_augmentations])
        The same statistic from each reference model, on the same records (same order).
    in_mask : array-like of bool, shape (n_models, n_records)
        ``in_mask[i, j]`` is True when record ``j`` is in reference model ``i``'s training
        set. Offline, audited records are usually OUT for every model (all False).
    online : bool, default=True
        Online (IN and OUT models) or offline (OUT models only) attack.
    fix_variance : bool or "auto", default=False
        One pooled variance per side instead of per-record variances; the paper finds it
        better with few reference models (below about 64). ``"auto"``: pooled over the
        regular records, per-record for saturated or outlying ones, per-record for all
        from 64 models on (see :func:`fit_lira_gaussians`).
    min_models : int, default=2
        Fewest models on a side for a record's own variance to be used.
    saturation : float, optional
        The absolute value at which the statistic is clipped (see
        :func:`fit_lira_gaussians`).

    Returns
    -------
    ndarray of shape (n_records,)
        Finite scores, higher = more likely member; NaN everywhere (with a
        :class:`~privaudit.exceptions.DegenerateInputWarning`) when a pooled variance is
        0, i.e. every reference model gives the same statistic on each record.

    Raises
    ------
    ValueError
        On inconsistent shapes, non-finite statistics, or (online) when some record has
        no IN or no OUT model and no record has both (nothing to impute from).

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership Inference Attacks From First Principles. IEEE S&P 2022, Algorithm 1,
       Sections IV.C-IV.D and VI.

    Examples
    --------
    >>> import numpy as np
    >>> ref = np.array([[1.0, 0.0], [3.0, 2.0], [-1.0, 4.0], [1.0, 6.0]])
    >>> mask = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=bool)
    >>> lira_scores([2.0, 3.0], ref, mask).round(12).tolist()  # record 1: halfway, ratio 1
    [1.0, 0.0]
    """
    func = "lira_scores"
    ref = _as_3d_reference(reference_stats, func)
    n_models, n_rec, n_aug = ref.shape
    no_aug_axis = np.ndim(reference_stats) == 2
    try:
        phi = np.asarray(target_stat, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(
            "target_stat", func, "an array of real numbers",
            f"<{type(target_stat).__name__}>", error=TypeError,
        ) from None
    expected = (n_rec,) if no_aug_axis else (n_rec, n_aug)
    if phi.shape != expected:
        raise param_error(
            "target_stat", func, f"of shape {expected} to match 'reference_stats'",
            f"<array of shape {phi.shape}>",
        )
    if not np.all(np.isfinite(phi)):
        n_bad = int(np.sum(~np.isfinite(phi)))
        raise param_error(
            "target_stat", func, "finite (no NaN or inf)", f"<{n_bad} non-finite values>"
        )
    phi = phi.reshape(n_rec, n_aug)
    mask = _as_mask(in_mask, (n_models, n_rec), func, "in_mask")
    mm = _check_min_models(min_models, func)
    fits, ok = _fit(ref, mask, fix_variance=_check_fix_variance(fix_variance, func),
                    min_models=mm, need_in=bool(online), func=func,
                    bound=_check_saturation(saturation, func))
    if not ok:
        warn_degenerate(
            f"{func}: a pooled variance is 0 (every reference model gives the same "
            "statistic on each record), so the likelihood ratio is undefined; returning NaN."
        )
        return np.full(n_rec, np.nan)
    z_out = (phi - fits.mu_out) / fits.sigma_out
    if online:
        z_in = (phi - fits.mu_in) / fits.sigma_in
        # log N(phi; mu_in, s_in) - log N(phi; mu_out, s_out); the 2*pi terms cancel.
        llr = np.log(fits.sigma_out) - np.log(fits.sigma_in) + 0.5 * (z_out**2 - z_in**2)
        return llr.sum(axis=1)
    combined = z_out.sum(axis=1) / math.sqrt(n_aug)
    # log_ndtr(-z) = log Pr[Z > z] without cancellation (what scipy.stats.norm.logsf uses).
    return -special.log_ndtr(-combined)
