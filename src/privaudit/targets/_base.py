"""The protocols every audited artefact follows, and what one query of a model returns.

An *audited artefact* is what privaudit measures, seen through the access an adversary has:
a classifier or regressor, a causal language model scored on texts, a synthetic table, a
model after machine unlearning. Two layers:

- :class:`AuditedArtifact`, what an audit needs of *any* artefact: ``name``, ``task``,
  ``fingerprint()``, ``n_queries``, ``reveals_probabilities``;
- :class:`Target`, a model queried record by record: the above plus ``classes_``,
  ``n_classes`` and ``query(X, y) -> ModelOutputs``. The adapters (scikit-learn, torch,
  callables, label-only callables) implement it through :class:`BaseTarget`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

import privaudit.signals as _signals
from privaudit._validation import param_error

__all__ = [
    "AuditedArtifact",
    "BaseTarget",
    "ModelOutputs",
    "QueryBudgetExceededError",
    "Target",
    "Task",
    "check_task",
    "label_indices",
]

Task = Literal["classification", "regression"]
_TASKS: tuple[str, ...] = ("classification", "regression")


def check_task(task: Any, *, func: str, param: str = "task") -> Task:
    """Return ``task`` if it is ``"classification"`` or ``"regression"``, else raise."""
    if task not in _TASKS:
        raise param_error(param, func, "'classification' or 'regression'", task)
    return task  # type: ignore[no-any-return]


def label_indices(
    y: ArrayLike, classes: ArrayLike, *, func: str, param: str = "y"
) -> NDArray[np.intp]:
    """Map each label in ``y`` to its column in ``classes`` (the model's class order).

    Raises a ``ValueError`` naming ``param`` and listing a few unknown labels if some
    label is not one of ``classes``: a probability for an unseen class does not exist,
    and silently mapping it would corrupt every signal.
    """
    classes_arr = np.asarray(classes)
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise param_error(param, func, "a 1-D array of labels", f"<array of shape {y_arr.shape}>")
    sorter = np.argsort(classes_arr, kind="stable")
    try:
        pos = np.searchsorted(classes_arr, y_arr, sorter=sorter)
    except (TypeError, ValueError):
        raise param_error(
            param, func, f"labels of the model's classes {_preview(classes_arr)}",
            f"<labels of dtype {y_arr.dtype}>", error=TypeError,
        ) from None
    pos = np.clip(pos, 0, classes_arr.size - 1)
    idx = sorter[pos]
    found = classes_arr[idx] == y_arr
    if not np.all(found):
        unknown = np.unique(y_arr[~np.asarray(found, dtype=bool)])[:5].tolist()
        raise param_error(
            param, func, f"labels among the model's classes_ {_preview(classes_arr)}",
            f"<unknown labels such as {unknown}>",
        )
    return idx.astype(np.intp, copy=False)


def _preview(arr: NDArray[Any], k: int = 8) -> str:
    items = arr[:k].tolist()
    return str(items) if arr.size <= k else str(items)[:-1] + ", ...]"


# Signals a ModelOutputs can compute, by the kind of output they need.
_PROBA_SIGNALS: dict[str, Callable[..., NDArray[np.float64]]] = {
    "cross_entropy": _signals.cross_entropy,
    "true_class_confidence": _signals.true_class_confidence,
    "modified_entropy": _signals.modified_entropy,
    "correctness": _signals.correctness,
    "logit_confidence": _signals.logit_confidence,
}
_REGRESSION_SIGNALS: dict[str, Callable[..., NDArray[np.float64]]] = {
    "squared_error": _signals.squared_error,
    "absolute_error": _signals.absolute_error,
    "residual": _signals.residual,
}


@dataclass(frozen=True, eq=False)
class ModelOutputs:
    """What one query of a target returned for ``n`` records, plus their losses.

    Build it with :meth:`from_probabilities`, :meth:`from_regression` or
    :meth:`from_labels` (label-only access), which compute the per-record loss once.
    Signals (:mod:`privaudit.signals`) are computed on first use by :meth:`signal` and
    cached, so several attacks sharing one ``ModelOutputs`` never recompute them.

    Parameters
    ----------
    y : ndarray of shape (n_records,)
        True labels (classification) or targets (regression).
    task : {"classification", "regression"}
        What the model predicts.
    loss : ndarray of shape (n_records,)
        Per-record loss: cross-entropy (probabilities), 0-1 loss (labels only) or squared
        error (regression).
    loss_name : str
        ``"cross_entropy"``, ``"zero_one"`` or ``"squared_error"``.
    probabilities : ndarray of shape (n_records, n_classes), optional
        Class probabilities, columns in the order of ``classes``.
    predictions : ndarray of shape (n_records,), optional
        Regression predictions, or predicted labels for classification.
    classes : ndarray of shape (n_classes,), optional
        The model's classes (``classes_``), for classification.
    y_index : ndarray of int, shape (n_records,), optional
        Column of each record's true class in ``probabilities``.
    """

    y: NDArray[Any]
    task: Task
    loss: NDArray[np.float64]
    loss_name: str
    probabilities: NDArray[np.float64] | None = None
    predictions: NDArray[Any] | None = None
    classes: NDArray[Any] | None = None
    y_index: NDArray[np.intp] | None = None
    _cache: dict[str, NDArray[np.float64]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def from_probabilities(
        cls, y: ArrayLike, probabilities: ArrayLike, classes: ArrayLike
    ) -> ModelOutputs:
        """Outputs of a classifier that reveals class probabilities.

        Parameters
        ----------
        y : array-like of shape (n_records,)
            True labels, each one of ``classes``.
        probabilities : array-like of shape (n_records, n_classes)
            Probabilities, column ``j`` for ``classes[j]``.
        classes : array-like of shape (n_classes,)
            The model's classes.
        """
        func = "ModelOutputs.from_probabilities"
        classes_arr = np.asarray(classes)
        p = np.asarray(probabilities, dtype=np.float64)
        y_arr = np.asarray(y)
        if p.ndim != 2 or p.shape != (y_arr.shape[0], classes_arr.shape[0]):
            raise param_error(
                "probabilities", func,
                f"of shape (n_records, n_classes) = ({y_arr.shape[0]}, {classes_arr.shape[0]})",
                f"<array of shape {p.shape}>",
            )
        idx = label_indices(y_arr, classes_arr, func=func)
        loss = _signals.cross_entropy(p, idx)
        predictions = classes_arr[np.argmax(p, axis=1)]
        out = cls(
            y=y_arr, task="classification", loss=loss, loss_name="cross_entropy",
            probabilities=p, predictions=predictions, classes=classes_arr, y_index=idx,
        )
        out._cache["cross_entropy"] = loss
        return out

    @classmethod
    def from_labels(
        cls, y: ArrayLike, predicted_labels: ArrayLike, classes: ArrayLike
    ) -> ModelOutputs:
        """Outputs of a label-only classifier: the loss is the 0-1 loss."""
        func = "ModelOutputs.from_labels"
        classes_arr = np.asarray(classes)
        y_arr = np.asarray(y)
        pred = np.asarray(predicted_labels)
        if pred.shape != y_arr.shape:
            raise param_error(
                "predicted_labels", func, f"of the same shape as 'y' {y_arr.shape}",
                f"<array of shape {pred.shape}>",
            )
        idx = label_indices(y_arr, classes_arr, func=func)
        label_indices(pred, classes_arr, func=func, param="predicted_labels")
        loss = (pred != y_arr).astype(np.float64)
        out = cls(
            y=y_arr, task="classification", loss=loss, loss_name="zero_one",
            predictions=pred, classes=classes_arr, y_index=idx,
        )
        out._cache["correctness"] = 1.0 - loss
        return out

    @classmethod
    def from_regression(cls, y: ArrayLike, predictions: ArrayLike) -> ModelOutputs:
        """Outputs of a regressor: the loss is the squared error."""
        y_arr = np.asarray(y, dtype=np.float64)
        pred = np.asarray(predictions, dtype=np.float64)
        if pred.ndim == 2 and pred.shape[1] == 1:
            pred = pred[:, 0]
        loss = _signals.squared_error(y_arr, pred)
        out = cls(
            y=y_arr, task="regression", loss=loss, loss_name="squared_error",
            predictions=pred,
        )
        out._cache["squared_error"] = loss
        return out

    def __len__(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_records(self) -> int:
        """Number of queried records."""
        return len(self)

    @property
    def available_signals(self) -> tuple[str, ...]:
        """Names accepted by :meth:`signal` for these outputs."""
        if self.task == "regression":
            return tuple(_REGRESSION_SIGNALS)
        if self.probabilities is None:
            return ("correctness",)
        return (*_PROBA_SIGNALS, "entropy")

    def signal(self, name: str) -> NDArray[np.float64]:
        """The per-record signal ``name`` (see :mod:`privaudit.signals`), cached.

        The returned array is read-only: it is shared by every attack reading it.
        """
        if name in self._cache:
            return self._cache[name]
        if name not in self.available_signals:
            kind = (
                "regression predictions" if self.task == "regression"
                else "class probabilities" if self.probabilities is not None
                else "predicted labels only"
            )
            raise param_error(
                "name", "ModelOutputs.signal",
                f"one of {list(self.available_signals)} for outputs with {kind}", name,
            )
        if self.task == "regression":
            value = _REGRESSION_SIGNALS[name](self.y, self.predictions)
        elif name == "entropy":
            value = _signals.entropy(self.probabilities)  # type: ignore[arg-type]
        else:
            value = _PROBA_SIGNALS[name](self.probabilities, self.y_index)
        value.setflags(write=False)
        self._cache[name] = value
        return value

    def subset(self, indices: ArrayLike) -> ModelOutputs:
        """Outputs of the records ``indices`` (no new query)."""
        idx = np.asarray(indices)

        def take(a: NDArray[Any] | None) -> NDArray[Any] | None:
            return None if a is None else a[idx]

        out = ModelOutputs(
            y=self.y[idx], task=self.task, loss=self.loss[idx], loss_name=self.loss_name,
            probabilities=take(self.probabilities), predictions=take(self.predictions),
            classes=self.classes, y_index=take(self.y_index),
        )
        for key, value in self._cache.items():
            out._cache[key] = value[idx]
        return out


@runtime_checkable
class AuditedArtifact(Protocol):
    """What an audit needs of every artefact it measures, whatever its kind.

    An audit validates the artefact, keys its saved results on ``fingerprint()``, reports
    ``name`` and the queries spent, and refuses attacks the access does not allow. Kinds:

    - a classifier or regressor (``task`` ``"classification"`` / ``"regression"``) is a
      :class:`Target`: ``classes_``, ``n_classes`` and ``query(X, y) -> ModelOutputs``;
    - an unlearned model is a :class:`Target` like any other, with its own fingerprint;
      the audit pairs it with the model retrained without the forget set;
    - a causal language model (e.g. ``task="causal-lm"``) scores texts instead of
      ``query``: e.g. ``score_texts(texts)`` returning per-token log-probabilities;
    - a synthetic table (e.g. ``task="synthetic-table"``) exposes its released rows;
      its "queries" are nearest-neighbour lookups, not model calls.

    Only this base is shared; each kind's audit reads its kind-specific part.

    Attributes
    ----------
    name : str
        Name used in results and reports.
    task : str
        What the artefact is or predicts; for a model :data:`Task`.
    n_queries : int
        Records (or texts, or rows) queried so far: what a query budget is counted in.
    reveals_probabilities : bool
        Whether the answers carry probabilities (False for label-only access); attacks
        that need them are refused before any query is spent.

    Methods
    -------
    fingerprint() -> str or None
        A digest of what the artefact is (parameters, settings), stable across loads and
        processes, or None when it cannot be read: the audit then identifies the artefact
        by its answers.
    """

    name: str
    task: str
    n_queries: int
    reveals_probabilities: bool

    def fingerprint(self) -> str | None:
        """Digest of the artefact, stable across loads and processes, or None."""
        ...


@runtime_checkable
class Target(AuditedArtifact, Protocol):
    """A model queried record by record (scikit-learn, torch, callables, label-only).

    Everything of :class:`AuditedArtifact` (``name``, ``task``, ``fingerprint()``,
    ``n_queries``, ``reveals_probabilities``), plus the model part below.

    Attributes
    ----------
    task : {"classification", "regression"}
        What the model predicts.
    classes_ : ndarray or None
        The classes, in the order of the probability columns (``None`` for regression).
    n_classes : int or None
        ``len(classes_)`` (``None`` for regression).
    """

    task: Task
    classes_: NDArray[Any] | None
    n_classes: int | None

    def query(self, X: Any, y: ArrayLike) -> ModelOutputs:
        """Query the model once per record of ``X`` and return its outputs for ``y``."""
        ...


class QueryBudgetExceededError(RuntimeError):
    """A target was asked for more queries than its ``max_queries`` budget allows."""


class BaseTarget:
    """Shared plumbing of the adapters: name, task, query counter and budget.

    Parameters
    ----------
    name : str
        Name used in results.
    task : {"classification", "regression"}
        What the model predicts.
    max_queries : int, optional
        Budget of record queries; a query that would exceed it raises
        :class:`QueryBudgetExceededError` before the model is called.
    """

    name: str
    task: Task
    classes_: NDArray[Any] | None = None
    #: Whether :meth:`query` returns probabilities (label-only targets set it to False).
    reveals_probabilities: bool = True

    def __init__(self, name: str, task: Task, *, max_queries: int | None = None) -> None:
        cls_name = type(self).__name__
        if not isinstance(name, str) or not name:
            raise param_error("name", cls_name, "a non-empty string", name, error=TypeError)
        self.name = name
        self.task = check_task(task, func=cls_name)
        if max_queries is not None and (
            isinstance(max_queries, bool) or not isinstance(max_queries, (int, np.integer))
            or max_queries < 0
        ):
            raise param_error("max_queries", cls_name, "None or a non-negative int", max_queries)
        self.max_queries = None if max_queries is None else int(max_queries)
        self.n_queries = 0

    @property
    def n_classes(self) -> int | None:
        """Number of classes (``None`` for regression)."""
        return None if self.classes_ is None else len(self.classes_)

    def fingerprint(self) -> str | None:
        """Digest of the model and the settings that change its answers, or None.

        None (the default) means the parameters cannot be read: the audit identifies the
        model by its answers. Adapters that can read them override this.
        """
        return None

    def reset_queries(self) -> None:
        """Set the query counter back to 0."""
        self.n_queries = 0

    def _spend_queries(self, n: int) -> None:
        if self.max_queries is not None and self.n_queries + n > self.max_queries:
            raise QueryBudgetExceededError(
                f"Querying {n} records would exceed the budget of target {self.name!r}: "
                f"{self.n_queries} of max_queries={self.max_queries} already used."
            )
        self.n_queries += n

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, task={self.task!r})"
