"""The metric policy of a result: which metrics, with which intervals, from which arrays.

:meth:`AttackResult.metrics <privaudit.results.AttackResult.metrics>` and
:meth:`~privaudit.results.AttackResult.check_baseline` delegate here, so the data class
holds data and the choices a privacy reviewer cares about (stratified percentile bootstrap
for threshold metrics, exact Clopper-Pearson intervals for rates of hard predictions, no
interval around the plug-in effective epsilon) are written in one place.

References
----------
.. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for Adversarial
   Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
.. [2] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private Machine
   Learning: How Private is Private SGD?" NeurIPS 2020.
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

import privaudit.metrics as pm
from privaudit._validation import check_fraction, check_random_state, param_error
from privaudit.exceptions import BaselineWarning

__all__ = [
    "DEFAULT_FPRS",
    "beats_random",
    "check_fprs",
    "check_n_bootstrap",
    "estimate_dict",
    "fpr_key",
    "fpr_resolution",
    "result_metrics",
]

#: False-positive rates at which :meth:`AttackResult.metrics` reports the TPR by default.
DEFAULT_FPRS: tuple[float, ...] = (0.0, 0.001, 0.01, 0.1)


def fpr_key(fpr: float) -> str:
    """Key under which the TPR at false-positive rate ``fpr`` is stored (``"0.001"``).

    ``str(float(fpr))``: the shortest text that reads back as the same float, so keys never
    collide and ``float(key) == fpr``.
    """
    return str(float(fpr))


def check_fprs(fprs: Iterable[float], func: str) -> tuple[float, ...]:
    """``fprs`` as a tuple of rates in [0, 1), duplicates dropped; else a clear error."""
    if isinstance(fprs, (str, bytes)) or not isinstance(fprs, Iterable):
        raise param_error("fprs", func, "a sequence of rates in [0, 1)", fprs, error=TypeError)
    out = tuple(
        check_fraction(f, param="fprs", func=func, low_inclusive=True) for f in fprs
    )
    # Duplicates would collide in the dict; keep the first occurrence, in order.
    return tuple(dict.fromkeys(out))


def check_n_bootstrap(n_bootstrap: Any, func: str) -> int:
    """``n_bootstrap`` as a non-negative int; else a clear error naming it."""
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, numbers.Integral):
        raise param_error(
            "n_bootstrap", func, "a non-negative integer", n_bootstrap, error=TypeError
        )
    if n_bootstrap < 0:
        raise param_error("n_bootstrap", func, "a non-negative integer", n_bootstrap)
    return int(n_bootstrap)


def estimate_dict(value: float, low: float = math.nan, high: float = math.nan) -> dict[str, float]:
    """``{"value", "low", "high"}`` as floats: one metric with its interval."""
    return {"value": float(value), "low": float(low), "high": float(high)}


def result_metrics(
    result: Any,
    fprs: Sequence[float] = DEFAULT_FPRS,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> dict[str, Any]:
    """Every metric of ``result`` with its interval: see :meth:`AttackResult.metrics`."""
    func = "AttackResult.metrics"
    fprs = check_fprs(fprs, func)
    n_bootstrap = check_n_bootstrap(n_bootstrap, func)
    confidence = check_fraction(confidence, param="confidence", func=func)
    rng = check_random_state(random_state, func=func)
    # One seed for every bootstrap: each metric is resampled on the same index draws.
    seed = int(rng.integers(2**63 - 1)) if n_bootstrap else 0
    boot = functools.partial(_bootstrap, result.labels, n_bootstrap=n_bootstrap,
                             confidence=confidence, seed=seed)
    method = "bootstrap" if n_bootstrap else "none"
    out: dict[str, Any] = {"n_members": result.n_members,
                           "n_non_members": result.n_non_members}
    out.update(_threshold_metrics(result, fprs, boot))
    intervals = {"auc": method, "advantage": method, "tpr_at_fpr": method,
                 "effective_epsilon": "none"}
    if result.predictions is not None:
        rates = _prediction_rates(result, confidence)
        out.update(rates)
        intervals.update(dict.fromkeys(rates, "clopper-pearson"))
        raw_advantage = 1.0 if result.raw_advantage is None else float(result.raw_advantage)
        out.update(boot({"mia_advantage": _MiaAdvantage(),
                         "privacy_gain": _PrivacyGain(raw_advantage)}, result.predictions))
        intervals.update(mia_advantage=method, privacy_gain=method)
    out.update(fpr_resolution(result, fprs, out.pop("tpr_at_smallest_fpr", None)))
    low = out["auc"]["low"]
    out["better_than_random"] = bool(low > 0.5) if math.isfinite(low) else None
    out["confidence"] = confidence
    out["n_bootstrap"] = n_bootstrap
    out["interval_method"] = intervals
    return out


def fpr_resolution(result: Any, fprs: Sequence[float],
                   smallest_tpr: dict[str, float] | None = None) -> dict[str, Any]:
    """Which FPRs the result's non-members resolve, and the exact p-value of each TPR.

    Returns ``fpr_resolution``: ``smallest_fpr`` (``1 / n_non_members``), ``resolvable``
    (per :func:`fpr_key`, whether at least one false positive fits:
    :func:`privaudit.metrics.fpr_is_resolvable`), ``smallest_resolvable`` (the key of
    the smallest positive resolvable FPR read, or None) and ``smallest`` (the TPR at
    ``smallest_fpr`` itself, ``{"fpr", "tpr", "p_value"}``, or None: the result read at
    the smallest FPR its non-members resolve, when the rates read are all finer); and
    ``tpr_p_value``: per key, the exact p-value of the TPR under "no membership signal"
    (:func:`privaudit.metrics.lift_p_value`), None where the FPR is 0 or unresolvable.
    """
    n_neg = result.n_non_members
    resolvable = {fpr_key(f): pm.fpr_is_resolvable(f, n_neg) for f in fprs}
    positive = sorted(f for f in fprs if f > 0 and resolvable[fpr_key(f)])
    both = 0 < result.n_members and 0 < n_neg
    p_values = {fpr_key(f): pm.lift_p_value(result.labels, result.scores, f)
                if both and f > 0 and resolvable[fpr_key(f)] else None for f in fprs}
    smallest = None
    if smallest_tpr is not None:
        fpr = pm.smallest_resolvable_fpr(n_neg)
        smallest = {"fpr": fpr, "tpr": smallest_tpr,
                    "p_value": pm.lift_p_value(result.labels, result.scores, fpr)}
    return {"fpr_resolution": {"smallest_fpr": pm.smallest_resolvable_fpr(n_neg),
                               "resolvable": resolvable,
                               "smallest_resolvable": fpr_key(positive[0]) if positive
                               else None,
                               "smallest": smallest},
            "tpr_p_value": p_values}


def _bootstrap(labels: NDArray[Any], metrics: dict[str, Callable[..., float]],
               values: NDArray[Any], *, n_bootstrap: int, confidence: float,
               seed: int) -> dict[str, dict[str, float]]:
    # One call for all metrics of the same values: the resamples are drawn once from
    # ``seed`` (the same draws each metric would get alone) and the built-in threshold
    # metrics share one pass of the counting engine.
    cis = pm.bootstrap_cis(metrics, labels, values, n_resamples=n_bootstrap,
                           confidence=confidence, random_state=seed)
    if not n_bootstrap:
        return {name: estimate_dict(ci.value) for name, ci in cis.items()}
    return {name: estimate_dict(*ci) for name, ci in cis.items()}


def _threshold_metrics(result: Any, fprs: tuple[float, ...],
                       boot: Callable[..., dict[str, dict[str, float]]]) -> dict[str, Any]:
    # Partials of tpr_at_fpr (not wrappers) let bootstrap_cis use its batched path. The
    # randomised threshold (Fawcett 2006) is continuous in the counts: a tie block of
    # members and non-members straddling the FPR would otherwise split the bootstrap
    # between 0 and 1 (an interval [0, 1] around a TPR of 1.0). Without ties it is the
    # plain TPR at FPR.
    tpr_metrics = {fpr_key(f): functools.partial(pm.tpr_at_fpr, fpr=f, randomized=True)
                   for f in fprs}
    # The TPR at one false positive (1 / n_non_members): where the result is read when
    # the rates asked for are finer than its non-members resolve.
    smallest = ({"tpr_at_smallest_fpr": functools.partial(
        pm.tpr_at_fpr, fpr=1.0 / result.n_non_members, randomized=True)}
        if result.n_non_members >= 2 and result.n_members else {})
    threshold = boot({"auc": pm.roc_auc, "advantage": pm.advantage, **{
        f"tpr_at_fpr:{key}": metric for key, metric in tpr_metrics.items()
    }, **smallest}, result.scores)
    return {
        # moved into fpr_resolution
        **{key: _holding_value(threshold[key]) for key in smallest},
        "auc": threshold["auc"],
        "advantage": threshold["advantage"],
        "tpr_at_fpr": {key: _holding_value(threshold[f"tpr_at_fpr:{key}"])
                       for key in tpr_metrics},
        # A point estimate only: the plug-in maximum over thresholds is biased upwards and
        # often infinite, so a bootstrap interval around it would be misleading. The valid
        # bound is EffectiveEpsilonReport's (Jagielski et al.).
        "effective_epsilon": estimate_dict(pm.effective_epsilon(result.labels,
                                                                result.scores)),
    }


def _holding_value(estimate: dict[str, float]) -> dict[str, float]:
    """A TPR's interval, stretched to hold its point estimate when it does not.

    A percentile interval can miss the estimate when the bootstrap distribution piles up
    against a bound (a TPR of 1.0 whose resamples all lose a member or two): the table
    would then show a number outside its own interval. Stretching to the estimate only
    widens the interval, so its coverage is not reduced.
    """
    low, high, value = estimate["low"], estimate["high"], estimate["value"]
    if math.isnan(low) or math.isnan(value):
        return estimate
    return {"value": value, "low": min(low, value), "high": max(high, value)}


def _prediction_rates(result: Any, confidence: float) -> dict[str, dict[str, float]]:
    """Accuracy, TPR, FPR and precision of the hard predictions, with exact intervals."""
    y, p = result.labels, result.predictions
    binary = pm.binary_metrics(y, p)
    tp = int(np.count_nonzero(p[y == 1]))
    fp = int(np.count_nonzero(p[y == 0]))
    rates = {
        "accuracy": (binary.accuracy, int(np.count_nonzero(p == y)), result.n_records),
        "true_positive_rate": (binary.true_positive_rate, tp, result.n_members),
        "false_positive_rate": (binary.false_positive_rate, fp, result.n_non_members),
        "precision": (binary.precision, tp, tp + fp),
    }
    out = {}
    for name, (value, k, n) in rates.items():
        if n > 0:
            ci = pm.clopper_pearson(k, n, confidence)
            out[name] = estimate_dict(value, ci.low, ci.high)
        else:
            out[name] = estimate_dict(value)
    return out


def beats_random(
    result: Any,
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> bool:
    """Whether ``result`` beats random guessing: see :meth:`AttackResult.check_baseline`."""
    func = "AttackResult.check_baseline"
    n_bootstrap = check_n_bootstrap(n_bootstrap, func)
    if n_bootstrap == 0:
        raise param_error("n_bootstrap", func, "a positive integer", n_bootstrap)
    confidence = check_fraction(confidence, param="confidence", func=func)
    auc = pm.roc_auc(result.labels, result.scores)
    ci = pm.bootstrap_ci(
        pm.roc_auc, result.labels, result.scores, n_resamples=n_bootstrap,
        confidence=confidence, random_state=check_random_state(random_state, func=func),
    )
    better = bool(math.isfinite(ci.low) and ci.low > 0.5)
    if not better:
        warnings.warn(
            f"{result.name} is no better than random guessing: the {confidence:.0%} "
            f"interval of its AUC, [{ci.low:.3f}, {ci.high:.3f}] (AUC {auc:.3f}), "
            f"does not lie above 0.5.",
            BaselineWarning,
            stacklevel=3,
        )
    return better


class _MiaAdvantage:
    def __call__(self, labels: ArrayLike, predictions: ArrayLike) -> float:
        return pm.binary_metrics(labels, np.asarray(predictions).astype(np.int8)).advantage


class _PrivacyGain:
    def __init__(self, raw_advantage: float) -> None:
        self.raw_advantage = raw_advantage

    def __call__(self, labels: ArrayLike, predictions: ArrayLike) -> float:
        return pm.privacy_gain(
            labels, np.asarray(predictions).astype(np.int8), raw_advantage=self.raw_advantage
        )
