"""Adapters for models reachable only through a function: probabilities or labels only.

These model the access an outside adversary has to a deployed model (a prediction API):
:class:`CallableTarget` returns what the API returns (class probabilities, or predictions
for a regressor), :class:`LabelOnlyTarget` only the predicted label. Both count the records
they are asked about and can enforce a budget, since a real API is paid or rate-limited per
query.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._digest import state_digest
from privaudit._validation import param_error
from privaudit.targets._base import BaseTarget, ModelOutputs, Task, check_task, label_indices
from privaudit.targets._records import DEFAULT_BATCH_SIZE, n_records, rows

__all__ = ["CallableTarget", "LabelOnlyTarget"]

#: Tolerance on the row sums of returned probabilities (APIs often round them).
PROBABILITY_SUM_ATOL = 1e-2


def _fn_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _check_classes(classes: Any, func: str) -> NDArray[Any]:
    if classes is None:
        raise param_error("classes", func, "given for a classifier (the labels of the "
                          "outputs, in order)", None, error=TypeError)
    if isinstance(classes, (int, np.integer)) and not isinstance(classes, bool):
        if classes < 2:
            raise param_error("classes", func, "at least 2 classes", classes)
        return np.arange(int(classes))
    arr = np.asarray(classes)
    if arr.ndim != 1 or arr.size < 2:
        raise param_error("classes", func, "a 1-D array of at least 2 labels (or their number)",
                          f"<array of shape {arr.shape}>")
    if np.unique(arr).size != arr.size:
        raise param_error("classes", func, "free of duplicates", "<repeated labels>")
    return arr


def _check_batch_size(batch_size: Any, func: str) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise param_error("batch_size", func, "a positive int", batch_size)
    return int(batch_size)


class _FunctionTarget(BaseTarget):
    """Shared plumbing: a function called on chunks of records, counting records."""

    def __init__(
        self, fn: Callable[[Any], Any], *, task: Task, classes: Any, name: str | None,
        batch_size: int, max_queries: int | None, fingerprint: str | None = None,
    ) -> None:
        func = type(self).__name__
        if not callable(fn):
            raise param_error("fn", func, "a callable fn(X) -> outputs",
                              f"<{type(fn).__name__}>", error=TypeError)
        if fingerprint is not None and (not isinstance(fingerprint, str) or not fingerprint):
            raise param_error("fingerprint", func, "None or a non-empty str identifying "
                              "the model behind fn", fingerprint, error=TypeError)
        self._user_fingerprint = fingerprint
        task = check_task(task, func=func)
        super().__init__(name or _fn_name(fn), task, max_queries=max_queries)
        self.fn = fn
        self.batch_size = _check_batch_size(batch_size, func)
        if task == "classification":
            self.classes_ = _check_classes(classes, func)

    def fingerprint(self) -> str | None:
        """None (the audit identifies the model by its answers), or the user's fingerprint.

        A ``fingerprint=`` string given at construction is digested with the access kind,
        the task and ``classes_`` (which change what a query returns).
        """
        if self._user_fingerprint is None:
            return None
        return state_digest(type(self).__name__, self.task, self.classes_,
                            self._user_fingerprint)

    def _prepare(self, X: Any, y: ArrayLike, func: str) -> tuple[int, NDArray[Any]]:
        n = n_records(X, func=func)
        y_arr = np.asarray(y)
        if y_arr.ndim != 1 or y_arr.shape[0] != n:
            raise param_error(
                "y", func, f"a 1-D array with one entry per record of X ({n})",
                f"<array of shape {y_arr.shape}>",
            )
        if self.task == "classification":
            assert self.classes_ is not None
            # Validate labels before spending queries on them.
            label_indices(y_arr, self.classes_, func=func)
        return n, y_arr

    def _call_chunked(self, X: Any, n: int) -> list[NDArray[Any]]:
        chunks = []
        for start in range(0, n, self.batch_size):
            stop = min(start + self.batch_size, n)
            chunks.append(np.asarray(self.fn(rows(X, start, stop))))
            if chunks[-1].shape[:1] != (stop - start,):
                raise ValueError(
                    f"The function of target {self.name!r} returned an array of shape "
                    f"{chunks[-1].shape} for {stop - start} records; it must return one "
                    "output per record."
                )
        return chunks

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_fn_name(self.fn)}, name={self.name!r})"


class CallableTarget(_FunctionTarget):
    """A black-box model behind a function returning class probabilities (or predictions).

    Parameters
    ----------
    fn : callable
        ``fn(X_chunk) -> outputs`` for a chunk of rows of ``X``. A classifier returns
        probabilities of shape ``(n, n_classes)``, column ``j`` for ``classes[j]``, each
        row non-negative, finite and summing to 1 (within 0.01: APIs round them). A
        regressor returns predictions of shape ``(n,)``.
    task : {"classification", "regression"}, default="classification"
        What the model predicts.
    classes : array-like or int
        The labels of the probability columns, in order (or their number ``C``, meaning
        ``0 .. C-1``). Required for classification.
    name : str, optional
        Name used in results (default: the function's name).
    batch_size : int, default=4096
        Records per call of ``fn``.
    max_queries : int, optional
        Budget in records: a query that would exceed it raises
        :class:`~privaudit.targets.QueryBudgetExceededError` before ``fn`` is called.
    fingerprint : str, optional
        An identifier of the model behind ``fn`` (a version, a digest of its weights),
        stable across processes. Without it :meth:`fingerprint` is None and an audit
        identifies the model by its answers.

    Notes
    -----
    ``n_queries`` counts records: a query on ``n`` records costs ``n`` whatever the
    ``batch_size``.

    References
    ----------
    .. [1] Shokri, R., Stronati, M., Song, C., Shmatikov, V. "Membership Inference Attacks
       Against Machine Learning Models." IEEE S&P 2017 (black-box access to a prediction
       API returning probability vectors).
    """

    def __init__(
        self,
        fn: Callable[[Any], Any],
        *,
        task: Task = "classification",
        classes: ArrayLike | int | None = None,
        name: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_queries: int | None = None,
        fingerprint: str | None = None,
    ) -> None:
        super().__init__(fn, task=task, classes=classes, name=name, batch_size=batch_size,
                         max_queries=max_queries, fingerprint=fingerprint)

    def query(self, X: Any, y: ArrayLike) -> ModelOutputs:
        """Call the function once per record and return its outputs for labels ``y``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_records, ...)
            Records, in the form ``fn`` accepts.
        y : array-like of shape (n_records,)
            True labels (each one of ``classes_``) or regression targets.

        Returns
        -------
        ModelOutputs
        """
        func = f"{type(self).__name__}.query"
        n, y_arr = self._prepare(X, y, func)
        self._spend_queries(n)
        chunks = self._call_chunked(X, n)
        try:
            out = np.concatenate(chunks, axis=0).astype(np.float64) if chunks else np.empty(0)
        except (TypeError, ValueError):
            raise TypeError(
                f"The function of target {self.name!r} returned non-numeric outputs."
            ) from None
        if self.task == "regression":
            if out.ndim == 2 and out.shape[1] == 1:
                out = out[:, 0]
            if out.ndim != 1:
                raise ValueError(
                    f"The function of target {self.name!r} returned outputs of shape "
                    f"{out.shape}; a regressor must return one prediction per record."
                )
            return ModelOutputs.from_regression(y_arr, out)
        assert self.classes_ is not None
        c = len(self.classes_)
        if n == 0:
            out = out.reshape(0, c)
        if out.ndim != 2 or out.shape[1] != c:
            raise ValueError(
                f"The function of target {self.name!r} returned probabilities of shape "
                f"{out.shape}, but the target has {c} classes: expected ({n}, {c})."
            )
        bad = ~np.isfinite(out).all(axis=1)
        if bad.any():
            raise ValueError(
                f"The function of target {self.name!r} returned non-finite probabilities "
                f"for {int(bad.sum())} records."
            )
        sums = out.sum(axis=1)
        if np.any(out < 0) or not np.allclose(sums, 1.0, rtol=0, atol=PROBABILITY_SUM_ATOL):
            worst = float(np.max(np.abs(sums - 1.0))) if sums.size else 0.0
            raise ValueError(
                f"The function of target {self.name!r} must return probabilities (rows "
                f"non-negative and summing to 1); some row sums are off by {worst:.3g}. "
                "Apply a softmax to logits first."
            )
        return ModelOutputs.from_probabilities(y_arr, out, self.classes_)


class LabelOnlyTarget(_FunctionTarget):
    """A classifier that reveals only its predicted label (the hardest black-box access).

    Attacks that read probabilities (confidence, entropy, LiRA...) refuse its outputs with
    a clear error; the 0-1 loss (:class:`~privaudit.attacks.membership.LossAttack`) and the
    label-only attack (:class:`~privaudit.attacks.membership.LabelOnlyAttack`) work.

    Parameters
    ----------
    fn : callable
        ``fn(X_chunk) -> labels`` of shape ``(n,)``, each one of ``classes``
        (e.g. ``estimator.predict``).
    classes : array-like or int
        The labels the model can predict (or their number ``C``, meaning ``0 .. C-1``).
    name : str, optional
        Name used in results (default: the function's name).
    batch_size : int, default=4096
        Records per call of ``fn``.
    max_queries : int, optional
        Budget in records: a query that would exceed it raises
        :class:`~privaudit.targets.QueryBudgetExceededError` before ``fn`` is called.
    fingerprint : str, optional
        An identifier of the model behind ``fn`` (a version, a digest of its weights),
        stable across processes. Without it :meth:`fingerprint` is None and an audit
        identifies the model by its answers.

    Attributes
    ----------
    reveals_probabilities : bool
        Always ``False``: callers can refuse before spending any query.

    Notes
    -----
    ``n_queries`` counts records: a query on ``n`` records costs ``n`` whatever the
    ``batch_size``. Label-only attacks query many perturbed copies of each record; they
    check their whole plan against the remaining budget before the first query.

    References
    ----------
    .. [1] Choquette-Choo, C. A., Tramèr, F., Carlini, N., Papernot, N. "Label-Only
       Membership Inference Attacks." ICML 2021.
    """

    reveals_probabilities = False

    def __init__(
        self,
        fn: Callable[[Any], Any],
        *,
        classes: ArrayLike | int,
        name: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_queries: int | None = None,
        fingerprint: str | None = None,
    ) -> None:
        super().__init__(fn, task="classification", classes=classes, name=name,
                         batch_size=batch_size, max_queries=max_queries,
                         fingerprint=fingerprint)

    def query(self, X: Any, y: ArrayLike) -> ModelOutputs:
        """Ask for the predicted label of every record; the loss is the 0-1 loss.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_records, ...)
            Records, in the form ``fn`` accepts.
        y : array-like of shape (n_records,)
            True labels, each one of ``classes_``.

        Returns
        -------
        ModelOutputs
            With ``predictions`` and no ``probabilities``.
        """
        func = f"{type(self).__name__}.query"
        n, y_arr = self._prepare(X, y, func)
        self._spend_queries(n)
        chunks = self._call_chunked(X, n)
        assert self.classes_ is not None
        pred = np.concatenate(chunks, axis=0) if chunks else self.classes_[:0]
        if pred.ndim != 1:
            raise ValueError(
                f"The function of target {self.name!r} returned an array of shape "
                f"{pred.shape}; a label-only target returns one label per record "
                "(use CallableTarget for probabilities)."
            )
        try:
            label_indices(pred, self.classes_, func=f"the function of target {self.name!r}",
                          param="predicted labels")
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"The function of target {self.name!r} returned labels that are not among "
                f"its classes {self.classes_[:8].tolist()}: {exc}"
            ) from None
        return ModelOutputs.from_labels(y_arr, pred, self.classes_)
