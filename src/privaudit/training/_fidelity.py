"""Fidelity check: whether the reference models are "models like the target".

Reference-model attacks (shadow models, LiRA, RMIA) assume the reference models behave like
the target. When they do not (another architecture, a much smaller training set, far lower
accuracy), the attack's calibration is wrong and its numbers mean little, yet every tool
still prints them. privaudit warns.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_fraction, param_error
from privaudit.exceptions import FidelityWarning

__all__ = ["FidelityReport", "FidelityWarning", "check_fidelity"]

# Parameters that set a scikit-learn estimator's loss / split criterion.
_LOSS_PARAMS = ("loss", "criterion")
# Attributes under which target adapters keep the model they wrap.
_WRAPPED_ATTRS = ("estimator", "module", "model")


@dataclass(frozen=True)
class FidelityReport:
    """How the reference models compare with the target.

    Attributes
    ----------
    target_accuracy : float
        Target's accuracy on the test data (NaN if unknown).
    reference_accuracy : ndarray of shape (n_models,)
        Each reference model's accuracy on the same data.
    target_n_train : int or None
        Target's training-set size, if known.
    reference_n_train : ndarray of shape (n_models,)
        Each reference model's training-set size.
    target_class, reference_class : str or None
        Qualified class names.
    target_loss, reference_loss : str or None
        Loss / criterion parameter when the models expose one.
    problems : tuple of str
        One sentence per clear difference; empty when the pool looks faithful.
    """

    target_accuracy: float
    reference_accuracy: NDArray[np.float64]
    target_n_train: int | None
    reference_n_train: NDArray[np.int64]
    target_class: str | None
    reference_class: str | None
    target_loss: str | None
    reference_loss: str | None
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when no clear difference was found."""
        return not self.problems


def _qualname(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _loss_of(model: Any) -> str | None:
    get_params = getattr(model, "get_params", None)
    if get_params is None:
        return None
    try:
        params = get_params(deep=False)
    except Exception:  # a non-sklearn get_params: no loss to compare
        return None
    for name in _LOSS_PARAMS:
        if name in params and params[name] is not None:
            return f"{name}={params[name]}"
    return None


def _accuracy(model: Any, X: Any, y: Any) -> float:
    return float(np.mean(np.asarray(model.predict(X)) == np.asarray(y)))


def check_fidelity(
    target: Any,
    pool: Any,
    X_test: Any,
    y_test: ArrayLike,
    *,
    target_n_train: int | None = None,
    n_std: float = 2.0,
    accuracy_margin: float = 0.05,
    size_tolerance: float = 0.25,
    warn: bool = True,
) -> FidelityReport:
    """Warn when the reference models differ clearly from the target.

    Three checks, each reported as one sentence in ``problems`` and together in one
    :class:`FidelityWarning`:

    - accuracy: the target's test accuracy lies more than ``n_std`` standard deviations of
      the pool *and* more than ``accuracy_margin`` away from the pool's mean (both, so that
      neither a very tight pool nor a tiny test set triggers it);
    - training-set size: the mean reference training-set size differs from
      ``target_n_train`` by more than a factor ``1 + size_tolerance``;
    - model type: the target's class differs from the reference models' class, or both
      expose a ``loss``/``criterion`` parameter and these differ.

    Parameters
    ----------
    target : fitted model, target adapter or mapping
        The audited model (anything with ``predict``); a privaudit target adapter (queried
        once on ``X_test``, which counts against its query budget; its wrapped
        ``estimator``/``module``/``model`` gives the class); or a mapping with any of
        ``"accuracy"``, ``"n_train"``, ``"model_class"`` (qualified class name) and
        ``"loss"`` when only its description is known.
    pool : ReferencePool
        A fitted pool.
    X_test, y_test : held-out data neither the target nor the pool trained on, ideally.
    target_n_train : int, optional
        Size of the target's training set (overrides ``target["n_train"]``).
    n_std : float, default=2.0
        Accuracy check: distance in pool standard deviations.
    accuracy_margin : float, default=0.05
        Accuracy check: minimum absolute distance.
    size_tolerance : float, default=0.25
        Size check: allowed relative difference.
    warn : bool, default=True
        Emit a :class:`FidelityWarning` when there is a problem.

    Returns
    -------
    FidelityReport

    References
    ----------
    .. [1] Shokri, R. et al. "Membership Inference Attacks Against Machine Learning
       Models." IEEE S&P 2017 (shadow models must imitate the target's training).
    .. [2] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022 (reference models trained like the target on same-size sets).
    """
    func = "check_fidelity"
    pool._check_fitted(func)
    _check_tolerances(func, n_std=n_std, accuracy_margin=accuracy_margin,
                      size_tolerance=size_tolerance)
    t_acc, t_n, t_class, t_loss = _describe_target(target, X_test, y_test, func)
    if target_n_train is not None:
        t_n = target_n_train
    if t_n is not None and (isinstance(t_n, bool) or not isinstance(t_n, numbers.Integral)
                            or t_n < 1):
        raise param_error("target_n_train", func, "a positive integer", t_n)

    ref_acc = np.asarray(pool.map(_accuracy, X_test, y_test), dtype=np.float64)
    ref_n = pool.in_mask_.sum(axis=1).astype(np.int64)
    first = pool.models_[0]
    r_class = _qualname(first)
    r_loss = _loss_of(first)
    problems = _accuracy_problems(t_acc, ref_acc, n_std, accuracy_margin)
    problems += _size_problems(t_n, ref_n, size_tolerance)
    if t_class is not None and t_class != r_class:
        problems.append(f"target is a {t_class}, reference models are {r_class}")
    elif t_loss is not None and r_loss is not None and t_loss != r_loss:
        problems.append(f"target trains with {t_loss}, reference models with {r_loss}")

    report = FidelityReport(
        target_accuracy=t_acc, reference_accuracy=ref_acc,
        target_n_train=None if t_n is None else int(t_n), reference_n_train=ref_n,
        target_class=t_class, reference_class=r_class, target_loss=t_loss,
        reference_loss=r_loss, problems=tuple(problems),
    )
    if problems and warn:
        import warnings

        warnings.warn(
            "The reference models differ clearly from the target, so attacks calibrated on "
            "them may be wrong: " + "; ".join(problems) + ".",
            FidelityWarning, stacklevel=2,
        )
    return report


def _check_tolerances(func: str, **tolerances: Any) -> None:
    for name, value in tolerances.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
            raise param_error(name, func, "a non-negative real number", value)
    check_fraction(tolerances["accuracy_margin"], param="accuracy_margin", func=func,
                   low_inclusive=True, high_inclusive=True)


def _describe_target(target: Any, X_test: Any, y_test: ArrayLike, func: str) -> tuple:
    """The target's ``(accuracy, n_train, class name, loss)``, each None/NaN if unknown."""
    if isinstance(target, Mapping):
        unknown = set(target) - {"accuracy", "n_train", "model_class", "loss"}
        if unknown:
            raise param_error("target", func,
                              "a model or a mapping with keys accuracy/n_train/model_class/loss",
                              f"<mapping with keys {sorted(unknown)}>")
        return (float(target.get("accuracy", float("nan"))), target.get("n_train"),
                target.get("model_class"), target.get("loss"))
    if callable(getattr(target, "predict", None)):
        return _accuracy(target, X_test, y_test), None, _qualname(target), _loss_of(target)
    if callable(getattr(target, "query", None)):
        # A privaudit target adapter: accuracy from one query, type from the wrapped model.
        outputs = target.query(X_test, y_test)
        predictions = getattr(outputs, "predictions", None)
        t_acc = (float("nan") if predictions is None
                 else float(np.mean(np.asarray(predictions) == np.asarray(y_test))))
        inner = next((getattr(target, a) for a in _WRAPPED_ATTRS
                      if getattr(target, a, None) is not None), None)
        if inner is None:
            return t_acc, None, None, None
        return t_acc, None, _qualname(inner), _loss_of(inner)
    raise param_error("target", func,
                      "a fitted model with predict, a target adapter or a mapping",
                      f"<{type(target).__name__}>", error=TypeError)


def _accuracy_problems(t_acc: float, ref_acc: NDArray[np.float64], n_std: float,
                       accuracy_margin: float) -> list[str]:
    if not np.isfinite(t_acc):
        return []
    mean, std = float(ref_acc.mean()), float(ref_acc.std(ddof=1)) if ref_acc.size > 1 else 0.0
    gap = abs(t_acc - mean)
    if gap > n_std * std and gap > accuracy_margin:
        return [f"target test accuracy {t_acc:.3f} is far from the reference models' "
                f"{mean:.3f} ± {std:.3f} (more than {n_std:g} SD and {accuracy_margin:g})"]
    return []


def _size_problems(t_n: Any, ref_n: NDArray[np.int64], size_tolerance: float) -> list[str]:
    if t_n is None:
        return []
    ratio = float(ref_n.mean()) / float(t_n)
    if 1.0 / (1.0 + size_tolerance) <= ratio <= 1.0 + size_tolerance:
        return []
    return [f"reference models train on {ref_n.mean():.0f} records on average, the "
            f"target on {int(t_n)} (ratio {ratio:.2f}); set train_fraction so that "
            "they match"]
