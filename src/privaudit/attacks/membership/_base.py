"""Estimator-style base class of the membership attacks.

``__init__`` stores parameters and does no work; ``fit`` calibrates and returns ``self``;
``score`` returns one float per record (higher = more likely member); ``run`` returns an
:class:`~privaudit.results.AttackResult`. Learned state ends in ``_``.

Every method takes either a target with records (``target, X, y``: the target is queried
once) or ``outputs=`` (a :class:`~privaudit.targets.ModelOutputs` already computed), so
one query can feed several attacks (:func:`run_attacks`).
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_binary_labels, param_error, warn_degenerate
from privaudit.attacks._base import BaseAttack
from privaudit.attacks._tags import AttackTags
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs, Target, as_target

__all__ = [
    "MembershipAttack",
    "ReferenceAttack",
    "SignalAttack",
    "ThresholdAttack",
    "resolve_outputs",
]

_S = TypeVar("_S", bound="SignalAttack")
_R = TypeVar("_R", bound="ReferenceAttack")


def resolve_outputs(
    target: Any,
    X: Any,
    y: ArrayLike | None,
    outputs: ModelOutputs | None,
    *,
    func: str,
    tasks: tuple[str, ...] = ("classification", "regression"),
) -> tuple[ModelOutputs, Target | None]:
    """Query ``target`` on ``(X, y)`` once, or take the given ``outputs``; check the task."""
    resolved: Target | None = None
    if outputs is not None:
        if not isinstance(outputs, ModelOutputs):
            raise param_error(
                "outputs", func, "a privaudit.targets.ModelOutputs",
                f"<{type(outputs).__name__}>", error=TypeError,
            )
        if target is not None:
            resolved = as_target(target)
    else:
        if target is None:
            raise param_error(
                "target", func, "given (with X and y) when 'outputs' is not", None,
                error=TypeError,
            )
        if X is None or y is None:
            missing = "X" if X is None else "y"
            raise param_error(
                missing, func, "given when a target is queried", None, error=TypeError
            )
        resolved = as_target(target)
        if resolved.task not in tasks:
            raise _task_error(func, tasks, resolved.task, resolved.name)
        outputs = resolved.query(X, y)
    if outputs.task not in tasks:
        raise _task_error(func, tasks, outputs.task, resolved.name if resolved else "")
    return outputs, resolved


def _check_bool(value: Any, param: str, func: str) -> None:
    """Refuse a ``param`` that is not True or False (1 and "yes" are mistakes)."""
    if not isinstance(value, (bool, np.bool_)):
        raise param_error(param, func, "True or False", value, error=TypeError)


def _task_error(func: str, tasks: tuple[str, ...], task: str, name: str) -> ValueError:
    from privaudit.attacks._plan import attacks_for

    expected = " or ".join(f"a {t} target" for t in tasks)
    if task in ("classification", "regression"):
        expected += f" (attacks that work on a {task} target: {', '.join(attacks_for(task))})"
    label = f" {name!r}" if name else ""
    return param_error("target", func, expected, f"<{task} target{label}>")  # type: ignore[return-value]


class MembershipAttack(BaseAttack):
    """Base class of the membership attacks: one ``score``/``run`` contract.

    ``score(target, X, y, *, outputs=None)`` gives one float64 per record (higher = more
    likely member) and ``run(..., labels=...)`` an :class:`~privaudit.results.AttackResult`.
    How an attack is fitted depends on what it calibrates on, as its tags say:
    :class:`SignalAttack` (the target's outputs on records of known membership) or
    :class:`ReferenceAttack` (the outputs of reference models).

    Subclasses set ``name`` (registry name), ``_tags`` and implement
    :meth:`_raw_statistic` and :meth:`_to_score`; they may override :meth:`_calibrate`,
    :meth:`_predict` and :meth:`_extra`, and :meth:`check_params` (called by ``fit``,
    ``score`` and ``run`` before anything else, and by the audits before any work) checks
    every constructor parameter.
    """

    # ----------------------------------------------------------- hooks
    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        raise NotImplementedError

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError  # pragma: no cover

    def _calibrate(self, outputs: ModelOutputs, labels: NDArray[np.int8] | None) -> None:
        """Learn state from calibration outputs (default: nothing to learn)."""

    def _predict(self, scores: NDArray[np.float64]) -> NDArray[np.int8] | None:
        return None

    def _extra(
        self,
        outputs: ModelOutputs,
        labels: NDArray[np.int8],
        scores: NDArray[np.float64],
        predictions: NDArray[np.int8] | None,
    ) -> dict[str, Any]:
        return {}

    # ----------------------------------------------------------- public API
    def score(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
    ) -> NDArray[np.float64]:
        """One membership score per record, higher = more likely member.

        Parameters
        ----------
        target : Target or fitted scikit-learn estimator, optional
            The audited model.
        X, y : array-like, optional
            Audited records and their true labels/targets.
        outputs : ModelOutputs, optional
            Precomputed outputs instead of ``target, X, y``.

        Returns
        -------
        ndarray of shape (n_records,)
        """
        func = f"{type(self).__name__}.score"
        self.check_params()
        self._check_fitted(func)
        out, _ = self._outputs(target, X, y, outputs, func)
        raw, _ = self._raw_statistic(out)
        return self._to_score(raw)

    def run(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
        record_ids: ArrayLike | None = None,
        dataset: str = "",
        target_name: str | None = None,
    ) -> AttackResult:
        """Score the audited records and package the result.

        Parameters
        ----------
        target : Target or fitted scikit-learn estimator, optional
            The audited model (its ``name`` goes into the result).
        X, y : array-like, optional
            Audited records and their true labels/targets.
        labels : array-like of 0/1
            Ground truth, 1 = member, 0 = non-member.
        outputs : ModelOutputs, optional
            Precomputed outputs instead of querying ``target``.
        record_ids : array-like, optional
            Identifiers of the audited records (default ``0..n-1``).
        dataset : str
            Dataset name for provenance.
        target_name : str, optional
            Overrides the target's name (needed when only ``outputs`` is given).

        Returns
        -------
        AttackResult
        """
        func = f"{type(self).__name__}.run"
        self.check_params()
        self._require_labels(labels, func)
        self._check_fitted(func)
        out, resolved = self._outputs(target, X, y, outputs, func)
        lab = self._check_labels(labels, len(out), func)
        raw, raw_name = self._raw_statistic(out)
        scores = self._to_score(raw)
        predictions = self._predict(scores)
        name = target_name if target_name is not None else (resolved.name if resolved else "")
        return self._package(
            labels=lab, scores=scores, target_name=name, record_ids=record_ids,
            dataset=dataset, raw=raw, raw_name=raw_name, predictions=predictions,
            extra=self._extra(out, lab, scores, predictions),
        )

    @staticmethod
    def _require_labels(labels: ArrayLike | None, func: str) -> None:
        if labels is None:
            raise param_error(
                "labels", func, "given (1 = member, 0 = non-member)", None, error=TypeError
            )

    def _package(
        self,
        *,
        labels: NDArray[np.int8],
        scores: NDArray[np.float64],
        target_name: str,
        record_ids: ArrayLike | None,
        dataset: str,
        raw: NDArray[np.float64] | None,
        raw_name: str,
        extra: dict[str, Any],
        predictions: NDArray[np.int8] | None = None,
        attack: str | None = None,
        parameters: dict[str, Any] | None = None,
        out_of_fold: bool = False,
    ) -> AttackResult:
        """The one place a membership attack turns its scores into an AttackResult.

        Scores NaN on every record (the attack's statistic undefined, e.g. LiRA's pooled
        variance 0 on a constant model; a warning already said why) become a result with
        no information: every score 0 (AUC 0.5), no ``predictions``,
        ``extra["degenerate"]`` saying so, and a
        :class:`~privaudit.exceptions.DegenerateInputWarning`. The audit then keeps its
        other attacks' results instead of failing on AttackResult's finite scores.
        """
        scores = np.asarray(scores, dtype=np.float64)
        if scores.size and np.all(np.isnan(scores)):
            reason = self._no_information_reason()
            warn_degenerate(f"{type(self).__name__}.run: {reason}, so the attack has no "
                            "information on these records; each gets the score 0 (AUC 0.5).",
                            stacklevel=4)
            scores, predictions = np.zeros_like(scores), None
            extra = {**extra, "degenerate": f"{reason}: no information, every score 0"}
        return AttackResult(
            labels=labels,
            scores=scores,
            record_ids=None if record_ids is None else np.asarray(record_ids),
            attack=self.name if attack is None else attack,
            target=target_name,
            dataset=dataset,
            kind="membership",
            predictions=predictions,
            raw_statistic=raw,
            raw_statistic_name=raw_name,
            parameters=_jsonable(self.get_params(deep=False) if parameters is None else parameters),
            extra=extra,
            out_of_fold=out_of_fold,
        )

    def _no_information_reason(self) -> str:
        """Why every score is NaN, for the warning and ``extra["degenerate"]``.

        An attack that knows the cause (a statistic constant on its population) says so.
        """
        return "every score is NaN (the statistic is undefined on this target)"

    def _outputs(
        self, target: Any, X: Any, y: ArrayLike | None, outputs: ModelOutputs | None, func: str
    ) -> tuple[ModelOutputs, Target | None]:
        tags = self.__privaudit_tags__()
        if (tags.needs_probabilities and outputs is None and target is not None
                and not getattr(target, "reveals_probabilities", True)):
            # Refuse before querying: a label-only target's budget must not be spent on an
            # attack that cannot use its answers.
            raise param_error(
                "target", func, "a target revealing class probabilities",
                f"<label-only target {getattr(target, 'name', '')!r}>",
            )
        out, resolved = resolve_outputs(target, X, y, outputs, func=func, tasks=tags.tasks)
        if tags.needs_probabilities and out.probabilities is None:
            raise param_error(
                "target", func, "a target revealing class probabilities",
                "<label-only outputs>",
            )
        return out, resolved

    @staticmethod
    def _check_labels(labels: ArrayLike, n: int, func: str) -> NDArray[np.int8]:
        lab = check_binary_labels(labels, func=func)
        if lab.shape[0] != n:
            raise param_error(
                "labels", func, f"one label per audited record ({n}, the length of X)",
                f"<length {lab.shape[0]}>",
            )
        return lab


class SignalAttack(MembershipAttack):
    """A membership attack calibrated on the target's outputs on records of known membership.

    ``fit(target, X, y, labels, *, outputs=None)`` (e.g. a threshold tuned on shadow data,
    the error scales of Yeom et al.'s Gaussian adversary, a trained attack classifier).
    """

    def fit(
        self: _S,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
    ) -> _S:
        """Calibrate the attack on records whose membership is known; returns ``self``.

        Parameters
        ----------
        target : Target or fitted scikit-learn estimator, optional
            The model to query (the audited target, or a shadow/reference model).
        X, y : array-like, optional
            Calibration records and their true labels/targets.
        labels : array-like of 0/1, optional
            Membership of the calibration records (1 = member of the queried model's
            training set). Attacks document what they do without it.
        outputs : ModelOutputs, optional
            Precomputed outputs instead of ``target, X, y``.

        Returns
        -------
        self
        """
        func = f"{type(self).__name__}.fit"
        self.check_params()
        out, _ = self._outputs(target, X, y, outputs, func)
        lab = None if labels is None else self._check_labels(labels, len(out), func)
        self._calibrate(out, lab)
        return self


class ParameterFreeAttack(SignalAttack):
    """A signal attack with nothing to learn (the gap attack, gradient norms).

    ``fit`` accepts the usual arguments, checks the parameters and returns ``self``
    without querying anything.
    """

    def fit(self: _S, target: Any = None, X: Any = None, y: ArrayLike | None = None,
            labels: ArrayLike | None = None, *,
            outputs: ModelOutputs | None = None) -> _S:
        """Nothing to learn: checks the parameters, returns ``self`` without querying.

        Parameters
        ----------
        target, X, y, labels, outputs : ignored
            Accepted so that the attack is fitted as every :class:`SignalAttack`.

        Returns
        -------
        self
        """
        self.check_params()
        return self


class ReferenceAttack(MembershipAttack):
    """A membership attack calibrated on the outputs of reference (shadow) models.

    Every such attack is fitted the same way, ``fit(reference, population_outputs=None)``:
    ``reference`` is a :class:`~privaudit.attacks.membership.ReferenceOutputs` and
    ``population_outputs`` the target's outputs on the pool's population records, read by
    the attacks tagged ``needs_population`` that compare the target with the population
    (RMIA) and ignored by the others. :meth:`min_reference_models` says how many reference
    models the attack needs.
    """

    _tags: ClassVar[AttackTags] = AttackTags(
        tasks=("classification",), needs_probabilities=True, needs_reference_models=True,
    )

    def fit(self: _R, reference: Any,
            population_outputs: ModelOutputs | None = None) -> _R:
        """Calibrate on reference outputs (and the target's population outputs); ``self``."""
        raise NotImplementedError

    def min_reference_models(self, mode: str) -> tuple[int, str]:
        """Fewest reference models the attack needs with a pool of ``mode``, and why."""
        raise NotImplementedError


class ThresholdAttack(SignalAttack):
    """A membership attack that thresholds one per-record statistic.

    Parameters
    ----------
    threshold : float, optional
        Decision threshold on the raw statistic (units of the statistic, e.g. a loss).
        When ``None``, :meth:`fit` calibrates it; without either, ``run`` gives scores but
        no hard predictions.

    Notes
    -----
    Calibration on members and non-members (e.g. a shadow model's training and held-out
    records) picks the threshold maximising TPR - FPR on them, as Song & Mittal choose
    their thresholds on shadow data.
    """

    #: +1 when a larger statistic means "more likely member" (confidence), -1 when a
    #: smaller one does (loss, entropy): score = sign * statistic.
    sign: ClassVar[float] = -1.0

    def __init__(self, threshold: float | None = None) -> None:
        self.threshold = threshold

    def check_params(self) -> None:
        """``threshold`` None or a real number (an infinite one guesses nobody or everyone)."""
        t, who = self.threshold, type(self).__name__
        if t is None:
            return
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Real):
            raise param_error("threshold", who, "None or a real number", t, error=TypeError)
        if np.isnan(t):
            raise param_error("threshold", who, "None or a real number", t)

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.sign * raw

    def _calibrate(self, outputs: ModelOutputs, labels: NDArray[np.int8] | None) -> None:
        func = f"{type(self).__name__}.fit"
        if labels is None or labels.min() == labels.max():
            raise param_error(
                "labels", func,
                "given with both members (1) and non-members (0) to calibrate a threshold",
                "<one class only>" if labels is not None else None,
            )
        raw, _ = self._raw_statistic(outputs)
        self.threshold_ = self.sign * _best_score_threshold(self._to_score(raw), labels)

    def _raw_threshold(self) -> float | None:
        t = self.threshold if self.threshold is not None else getattr(self, "threshold_", None)
        return None if t is None else float(t)

    def _score_threshold(self) -> float | None:
        t = self._raw_threshold()
        return None if t is None else self.sign * t

    def _predict(self, scores: NDArray[np.float64]) -> NDArray[np.int8] | None:
        st = self._score_threshold()
        return None if st is None else (scores >= st).astype(np.int8)

    def _extra(
        self,
        outputs: ModelOutputs,
        labels: NDArray[np.int8],
        scores: NDArray[np.float64],
        predictions: NDArray[np.int8] | None,
    ) -> dict[str, Any]:
        t = self._raw_threshold()
        return {"threshold": t} if t is not None and np.isfinite(t) else {}


def _best_score_threshold(scores: NDArray[np.float64], labels: NDArray[np.int8]) -> float:
    """Score threshold maximising TPR - FPR (member iff score >= threshold; ties: first).

    ``+inf`` (nobody is a member) when no threshold beats random guessing.
    """
    from privaudit.metrics import roc_curve

    curve = roc_curve(labels, scores, drop_intermediate=False)
    best = int(np.argmax(curve.tpr - curve.fpr))
    return float(curve.thresholds[best]) if best > 0 else float("inf")


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, (np.floating, np.integer)):
            value = value.item()
        if value is None or isinstance(value, (bool, int, float, str)):
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = list(value)
        else:
            out[key] = repr(value)
    return out
