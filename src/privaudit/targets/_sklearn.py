"""Adapter for fitted scikit-learn estimators (and pipelines)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._digest import state_digest
from privaudit._validation import param_error
from privaudit.exceptions import NotFittedError
from privaudit.targets._base import BaseTarget, ModelOutputs, Task, check_task, label_indices
from privaudit.targets._fingerprint import estimator_fingerprint
from privaudit.targets._records import DEFAULT_BATCH_SIZE, n_records, rows

__all__ = ["SklearnTarget"]

def _estimator_name(estimator: Any) -> str:
    steps = getattr(estimator, "steps", None)
    if steps:
        return f"{type(estimator).__name__}[{type(steps[-1][1]).__name__}]"
    return type(estimator).__name__


class SklearnTarget(BaseTarget):
    """A fitted scikit-learn estimator seen as a black box that returns probabilities.

    Classifiers are queried through ``predict_proba`` (columns in the order of the
    estimator's ``classes_``); regressors through ``predict``. Records are queried in
    chunks of ``batch_size`` rows so memory stays bounded on large audits.

    Parameters
    ----------
    estimator : fitted scikit-learn estimator
        A classifier with ``predict_proba`` or a regressor (pipelines included).
    name : str, optional
        Name used in results (default: the estimator's class name).
    task : {"classification", "regression"}, optional
        Overrides the task inferred from ``sklearn.base.is_classifier`` / ``is_regressor``.
    batch_size : int, default=4096
        Records per call to the estimator.
    max_queries : int, optional
        Query budget (see :class:`BaseTarget`).

    Raises
    ------
    privaudit.exceptions.NotFittedError
        If the estimator is not fitted.

    References
    ----------
    .. [1] Yeom et al., "Privacy Risk in Machine Learning: Analyzing the Connection to
       Overfitting", CSF 2018 (black-box access: the adversary queries ``A_S(x)``).
    """

    def __init__(
        self,
        estimator: Any,
        *,
        name: str | None = None,
        task: Task | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_queries: int | None = None,
    ) -> None:
        from sklearn.base import is_classifier, is_regressor
        from sklearn.exceptions import NotFittedError as SkNotFittedError
        from sklearn.utils.validation import check_is_fitted

        func = "SklearnTarget"
        if not (hasattr(estimator, "fit") and hasattr(estimator, "predict")):
            raise param_error(
                "estimator", func, "a fitted scikit-learn estimator (with fit and predict)",
                f"<{type(estimator).__name__}>", error=TypeError,
            )
        try:
            check_is_fitted(estimator)
        except SkNotFittedError:
            raise NotFittedError(
                f"The {type(estimator).__name__} given to SklearnTarget is not fitted: "
                "fit it on the training (member) records before auditing it."
            ) from None
        if task is None:
            if is_classifier(estimator):
                task = "classification"
            elif is_regressor(estimator):
                task = "regression"
            else:
                raise param_error(
                    "task", func,
                    "given ('classification' or 'regression') when the estimator is "
                    "neither a scikit-learn classifier nor a regressor", None,
                )
        task = check_task(task, func=func)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise param_error("batch_size", func, "a positive int", batch_size)
        super().__init__(name or _estimator_name(estimator), task, max_queries=max_queries)
        self.estimator = estimator
        self.batch_size = int(batch_size)
        if task == "classification":
            if not hasattr(estimator, "predict_proba"):
                raise param_error(
                    "estimator", func,
                    "a classifier with predict_proba (label-only access needs a label-only "
                    "target)", f"<{type(estimator).__name__} without predict_proba>",
                    error=TypeError,
                )
            classes = getattr(estimator, "classes_", None)
            if classes is None:
                raise param_error(
                    "estimator", func, "a classifier exposing classes_",
                    f"<{type(estimator).__name__}>", error=TypeError,
                )
            self.classes_ = np.asarray(classes)
            if self.classes_.size < 2:
                # scikit-learn fits a classifier on one class (predict_proba has one
                # column, every probability 1): no loss, no confidence, nothing to audit.
                raise param_error(
                    "estimator", func, "a classifier fitted on at least two classes",
                    f"<{type(estimator).__name__} fitted on the single class "
                    f"{self.classes_.tolist()!r}: it gives every record probability 1, so "
                    "its outputs say nothing about membership>")

    def query(self, X: Any, y: ArrayLike) -> ModelOutputs:
        """Query the estimator once per record and return its outputs for labels ``y``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_records, n_features)
            Records, in the form the estimator accepts.
        y : array-like of shape (n_records,)
            True labels (each one of ``classes_``) or regression targets.

        Returns
        -------
        ModelOutputs
        """
        func = f"{type(self).__name__}.query"
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
        self._spend_queries(n)
        if self.task == "classification":
            assert self.classes_ is not None
            proba = self._predict_chunked(X, n, "predict_proba", len(self.classes_))
            return ModelOutputs.from_probabilities(y_arr, proba, self.classes_)
        pred = self._predict_chunked(X, n, "predict", None)
        return ModelOutputs.from_regression(y_arr, pred)

    def fingerprint(self) -> str | None:
        """Digest of the fitted estimator (:func:`estimator_fingerprint`) and the task.

        Stable across two loads of one skops file and across processes; another fit
        (other parameters, data or seed) gives another. None if the state cannot be read.
        """
        state = estimator_fingerprint(self.estimator)
        return None if state is None else state_digest("sklearn", self.task, state)

    def _predict_chunked(
        self, X: Any, n: int, method: str, width: int | None
    ) -> NDArray[np.float64]:
        fn = getattr(self.estimator, method)
        shape = (n,) if width is None else (n, width)
        out = np.empty(shape, dtype=np.float64)
        for start in range(0, n, self.batch_size):
            stop = min(start + self.batch_size, n)
            chunk = np.asarray(fn(rows(X, start, stop)), dtype=np.float64)
            if width is None and chunk.ndim == 2 and chunk.shape[1] == 1:
                chunk = chunk[:, 0]
            if chunk.shape != (stop - start, *shape[1:]):
                raise ValueError(
                    f"{type(self.estimator).__name__}.{method} returned an array of shape "
                    f"{chunk.shape} for {stop - start} records; SklearnTarget expects "
                    f"{(stop - start, *shape[1:])} (multi-output models are not supported)."
                )
            out[start:stop] = chunk
        return out

    def __repr__(self) -> str:
        return (
            f"SklearnTarget({_estimator_name(self.estimator)}, name={self.name!r}, "
            f"task={self.task!r})"
        )
