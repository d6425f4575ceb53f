"""Numerical core of RMIA, the relative membership inference attack of Zarifzadeh et al.

Pure numpy over precomputed probabilities: the attack estimator queries the target and the
reference pool on the audited records ``x`` and on population samples ``z``, and hands
the numbers to :func:`rmia_scores`.
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import param_error
from privaudit.metrics import roc_auc

__all__ = ["RmiaOfflineTuning", "rmia_scores", "tune_rmia_offline_a"]

#: Lower clipping of probabilities, so that a ratio 0 / 0 (the target and every reference
#: model give the true label probability 0) reads as 1 rather than NaN.
_PROB_EPS: float = float(np.finfo(np.float64).tiny)


def _check_prob(value: ArrayLike, ndim: int, param: str, func: str) -> NDArray[np.float64]:
    shape_text = "(n_records,)" if ndim == 1 else "(n_models, n_records)"
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(
            param, func, f"an array of probabilities of shape {shape_text}",
            f"<{type(value).__name__}>", error=TypeError,
        ) from None
    if arr.ndim != ndim:
        raise param_error(param, func, f"of shape {shape_text}", f"<array of shape {arr.shape}>")
    if arr.size == 0:
        raise param_error(param, func, "non-empty", f"<array of shape {arr.shape}>")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        n_bad = int(np.sum(~(np.isfinite(arr) & (arr >= 0) & (arr <= 1))))
        raise param_error(param, func, "probabilities in [0, 1]", f"<{n_bad} values outside>")
    return arr


def _check_mask(
    mask: ArrayLike | None, shape: tuple[int, ...], param: str, func: str
) -> NDArray[np.bool_] | None:
    if mask is None:
        return None
    arr = np.asarray(mask)
    if arr.shape != shape:
        raise param_error(
            param, func, f"of shape (n_models, n_records) = {shape}",
            f"<array of shape {arr.shape}>",
        )
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind not in "iuf" or not np.all(np.isin(arr, (0, 1))):
        raise param_error(
            param, func, "booleans or 0/1 (True = the record is in that model's training set)",
            f"<array of dtype {arr.dtype}>",
        )
    return arr.astype(bool)


def _check_a(value: Any, func: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error("offline_a", func, "None or a real number in [0, 1]", value,
                          error=TypeError)
    a = float(value)
    if not (0.0 <= a <= 1.0):
        raise param_error("offline_a", func, "None or a real number in [0, 1]", value)
    return a


def _check_gamma(value: Any, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error("gamma", func, "a positive real number", value, error=TypeError)
    g = float(value)
    if not (np.isfinite(g) and g > 0):
        raise param_error("gamma", func, "a positive real number", value)
    return g


def _marginal(
    ref: NDArray[np.float64],
    mask: NDArray[np.bool_] | None,
    a: float | None,
    param: str,
    func: str,
) -> NDArray[np.float64]:
    """``Pr(x)``: mean over all models (online) or the offline approximation from OUT."""
    if a is None:
        return ref.mean(axis=0)
    if mask is None:
        p_out = ref.mean(axis=0)
    else:
        out = ~mask
        n_out = out.sum(axis=0)
        if np.any(n_out == 0):
            raise param_error(
                param, func,
                "such that every record has at least one OUT reference model (offline_a is "
                "set)", f"<{int(np.sum(n_out == 0))} records IN every model>",
            )
        p_out = np.where(out, ref, 0.0).sum(axis=0) / n_out
    # Zarifzadeh et al., Appendix: Pr_IN(x) ~ a Pr_OUT(x) + (1 - a), averaged with Pr_OUT.
    return 0.5 * ((1.0 + a) * p_out + (1.0 - a))


def _ratio(p_target: NDArray[np.float64], p_marginal: NDArray[np.float64]) -> NDArray[
    np.float64
]:
    return np.maximum(p_target, _PROB_EPS) / np.maximum(p_marginal, _PROB_EPS)


def rmia_scores(
    target_prob_x: ArrayLike,
    reference_prob_x: ArrayLike,
    target_prob_z: ArrayLike,
    reference_prob_z: ArrayLike,
    *,
    offline_a: float | None = None,
    in_mask_x: ArrayLike | None = None,
    in_mask_z: ArrayLike | None = None,
    gamma: float = 1.0,
) -> NDArray[np.float64]:
    """RMIA scores: how often ``x`` dominates population samples ``z`` in likelihood ratio.

    With ``Pr(x | theta)`` the target model's probability of the true label of ``x`` and
    ``Pr(x)`` its average over reference models,

    ``LR(x, z) = (Pr(x | theta) / Pr(x)) / (Pr(z | theta) / Pr(z))`` and
    ``score(x) = fraction of the z with LR(x, z) >= gamma``.

    ``Pr(x)`` (and ``Pr(z)`` the same way):

    - **online** (``offline_a=None``): the mean over all reference models, which in the
      online setting are trained with ``x`` for about half of them and without it for the
      others (the masks are not needed);
    - **offline** (``offline_a=a``): from the OUT models only (those with
      ``in_mask == False``; all models when no mask is given), with the paper's linear
      approximation of the missing IN models, ``Pr_IN(x) ~ a Pr_OUT(x) + (1 - a)``, so
      ``Pr(x) = ((1 + a) Pr_OUT(x) + (1 - a)) / 2``. As in the authors' implementation
      (ML Privacy Meter), the same approximation is applied to ``Pr(z)``, so that ``x`` and
      ``z`` are normalised alike. ``a = 1`` uses ``Pr_OUT`` as is; tune ``a`` with
      :func:`tune_rmia_offline_a`.

    Since ``LR(x, z) >= gamma`` iff ``r_z <= r_x / gamma`` with ``r = Pr(. | theta) /
    Pr(.)`` (all positive), the score is computed by sorting the ``z`` ratios once and
    a binary search per ``x``: ``O((n_x + n_z) log n_z)`` time and ``O(n_x + n_z)``
    memory, never the ``n_x * n_z`` matrix of pairwise ratios.

    Parameters
    ----------
    target_prob_x : array-like of shape (n_x,)
        ``Pr(x | theta)``: the audited model's probability of each record's true label.
    reference_prob_x : array-like of shape (n_models, n_x)
        The same probability under each reference model.
    target_prob_z : array-like of shape (n_z,)
        ``Pr(z | theta)`` on population samples. These must be non-members of the target
        and disjoint from the audited ``x``: this function sees only numbers, so the
        caller checks it (a ``z`` that is a member inflates every other score).
    reference_prob_z : array-like of shape (n_models, n_z)
        The same under each reference model (same models, same order as for ``x``).
    offline_a : float in [0, 1], optional
        ``None`` for the online attack; the offline approximation's ``a`` otherwise.
    in_mask_x, in_mask_z : array-like of bool, shape (n_models, n_x) / (n_models, n_z), optional
        Which reference models trained on each ``x`` / ``z`` (offline only: the OUT models
        give ``Pr_OUT``; every record needs at least one). Default: all OUT.
    gamma : float, default=1.0
        Threshold on the pairwise likelihood ratio (the paper uses 1 in most experiments
        and up to 2 on some datasets).

    Returns
    -------
    ndarray of shape (n_x,)
        Scores in [0, 1] (multiples of ``1 / n_z``), higher = more likely member.

    Notes
    -----
    Probabilities are clipped below at the smallest normal float64 before dividing, so a
    ratio ``0 / 0`` reads as 1 instead of NaN; the authors' code compares
    ``LR > gamma`` strictly, the paper ``LR >= gamma`` (used here); the two differ only on
    exact ties.

    References
    ----------
    .. [1] Zarifzadeh, S., Liu, P., Chua, Y. S. and Shokri, R. (2024). Low-Cost High-Power
       Membership Inference Attacks. ICML 2024, Section 3 (Eq. 3-4) and Appendix B (the
       offline approximation of Pr(x)).

    Examples
    --------
    >>> import numpy as np
    >>> rmia_scores([0.9, 0.5], [[0.5, 0.5]], [0.4, 0.5, 0.6, 0.8], [[0.5] * 4]).tolist()
    [1.0, 0.5]
    """
    func = "rmia_scores"
    px = _check_prob(target_prob_x, 1, "target_prob_x", func)
    rx = _check_prob(reference_prob_x, 2, "reference_prob_x", func)
    pz = _check_prob(target_prob_z, 1, "target_prob_z", func)
    rz = _check_prob(reference_prob_z, 2, "reference_prob_z", func)
    if rx.shape[1] != px.shape[0]:
        raise param_error(
            "reference_prob_x", func, f"of shape (n_models, {px.shape[0]}) to match "
            "'target_prob_x'", f"<array of shape {rx.shape}>",
        )
    if rz.shape != (rx.shape[0], pz.shape[0]):
        raise param_error(
            "reference_prob_z", func,
            f"of shape ({rx.shape[0]}, {pz.shape[0]}) (the same reference models as "
            "'reference_prob_x', one column per z)", f"<array of shape {rz.shape}>",
        )
    a = _check_a(offline_a, func)
    g = _check_gamma(gamma, func)
    mx = _check_mask(in_mask_x, rx.shape, "in_mask_x", func)
    mz = _check_mask(in_mask_z, rz.shape, "in_mask_z", func)
    ratio_x = _ratio(px, _marginal(rx, mx, a, "in_mask_x", func))
    ratio_z = np.sort(_ratio(pz, _marginal(rz, mz, a, "in_mask_z", func)))
    counts = np.searchsorted(ratio_z, ratio_x / g, side="right")
    return counts / float(ratio_z.shape[0])


class RmiaOfflineTuning(NamedTuple):
    """Result of :func:`tune_rmia_offline_a`.

    Attributes
    ----------
    a : float
        The grid value with the highest mean AUC (the smallest such value on ties).
    grid : ndarray of shape (n_grid,)
        The values tried.
    auc : ndarray of shape (n_grid,)
        Mean AUC over the pseudo-targets of the offline attack with each value.
    """

    a: float
    grid: NDArray[np.float64]
    auc: NDArray[np.float64]


def tune_rmia_offline_a(
    reference_prob: ArrayLike,
    in_mask: ArrayLike,
    reference_prob_z: ArrayLike,
    *,
    in_mask_z: ArrayLike | None = None,
    grid: ArrayLike | None = None,
    n_pseudo_targets: int = 1,
    gamma: float = 1.0,
) -> RmiaOfflineTuning:
    """Choose RMIA's offline ``a`` by attacking reference models with known membership.

    As Zarifzadeh et al. do, one reference model plays the target and the others the
    reference models: the offline attack (:func:`rmia_scores` with ``offline_a=a``) runs on
    records whose membership in the pseudo-target is known, for every ``a`` in ``grid``,
    and the ``a`` with the highest AUC (:func:`privaudit.metrics.roc_auc`) wins. With
    ``n_pseudo_targets=k`` the first ``k`` models take that role in turn and their AUCs are
    averaged (the models are exchangeable: each trained on a random half), which makes the
    choice less noisy at ``k`` times the cost.

    For pseudo-target ``t``: the records are labelled ``in_mask[t]`` (1 = member); the
    other models' OUT entries give ``Pr_OUT``, and records with no OUT model among them are
    left out; population samples IN the pseudo-target (``in_mask_z[t]``) are dropped, since
    ``z`` must be its non-members.

    Parameters
    ----------
    reference_prob : array-like of shape (n_models, n_records)
        Each reference model's probability of the true label of records it may have
        trained on (e.g. ``ReferencePool`` candidates, with ``in_mask_``). The audited
        records of an offline pool are OUT for every model and cannot serve here.
    in_mask : array-like of bool, shape (n_models, n_records)
        Which model trained on which record; every pseudo-target needs both members and
        non-members among the records.
    reference_prob_z : array-like of shape (n_models, n_z)
        The models' probabilities on population samples ``z``.
    in_mask_z : array-like of bool, shape (n_models, n_z), optional
        Which model trained on which ``z`` (default: none).
    grid : array-like of float in [0, 1], optional
        Values of ``a`` to try; default ``0, 0.1, ..., 1`` as the authors' code.
    n_pseudo_targets : int, default=1
        How many models (the first ones) play the target in turn; at most
        ``n_models``, and ``n_models >= 2``.
    gamma : float, default=1.0
        Passed to :func:`rmia_scores`.

    Returns
    -------
    RmiaOfflineTuning
        ``(a, grid, auc)``.

    Raises
    ------
    ValueError
        With fewer than 2 models, a grid value outside [0, 1], or a pseudo-target whose
        records are all members or all non-members (or with no usable ``z``).

    References
    ----------
    .. [1] Zarifzadeh, S., Liu, P., Chua, Y. S. and Shokri, R. (2024). Low-Cost High-Power
       Membership Inference Attacks. ICML 2024, Appendix B (choice of ``a``).
    """
    func = "tune_rmia_offline_a"
    ref = _check_prob(reference_prob, 2, "reference_prob", func)
    n_models = ref.shape[0]
    mask = _check_mask(in_mask, ref.shape, "in_mask", func)
    assert mask is not None
    refz = _check_prob(reference_prob_z, 2, "reference_prob_z", func)
    if refz.shape[0] != n_models:
        raise param_error(
            "reference_prob_z", func, f"of shape ({n_models}, n_z) (the same models)",
            f"<array of shape {refz.shape}>",
        )
    maskz = _check_mask(in_mask_z, refz.shape, "in_mask_z", func)
    if maskz is None:
        maskz = np.zeros(refz.shape, dtype=bool)
    if n_models < 2:
        raise param_error(
            "reference_prob", func, "from at least 2 models (one plays the target)",
            f"<{n_models} model>",
        )
    if (
        isinstance(n_pseudo_targets, bool)
        or not isinstance(n_pseudo_targets, numbers.Integral)
        or not (1 <= int(n_pseudo_targets) <= n_models)
    ):
        raise param_error(
            "n_pseudo_targets", func, f"an integer in [1, {n_models}]", n_pseudo_targets
        )
    g = _check_gamma(gamma, func)
    values = np.arange(11) / 10.0 if grid is None else np.asarray(grid, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise param_error("grid", func, "a non-empty 1-D array", f"<array of shape "
                          f"{values.shape}>")
    if not np.all((values >= 0) & (values <= 1)):
        raise param_error("grid", func, "values in [0, 1]", f"<values in [{values.min()}, "
                          f"{values.max()}]>")

    aucs = np.zeros((int(n_pseudo_targets), values.size))
    for t in range(int(n_pseudo_targets)):
        others = np.arange(n_models) != t
        keep_x = np.any(~mask[others], axis=0)
        keep_z = ~maskz[t] & np.any(~maskz[others], axis=0)
        labels = mask[t, keep_x]
        if labels.all() or not labels.any() or not keep_z.any():
            raise param_error(
                "in_mask", func,
                "such that each pseudo-target has members and non-members among the "
                "records with an OUT model left, and some population sample outside it",
                f"<pseudo-target {t}: {int(labels.sum())} members, "
                f"{int((~labels).sum())} non-members, {int(keep_z.sum())} z>",
            )
        for k, a in enumerate(values):
            scores = rmia_scores(
                ref[t, keep_x], ref[others][:, keep_x], refz[t, keep_z],
                refz[others][:, keep_z], offline_a=float(a),
                in_mask_x=mask[others][:, keep_x], in_mask_z=maskz[others][:, keep_z],
                gamma=g,
            )
            aucs[t, k] = roc_auc(labels.astype(np.int8), scores)
    mean_auc = aucs.mean(axis=0)
    best = int(np.argmax(mean_auc))
    return RmiaOfflineTuning(a=float(values[best]), grid=values, auc=mean_auc)
