"""Siblings of records: one copy per candidate value of the sensitive attribute, queried once.

Every attribute attack that reads the model (Yeom et al.'s Adversary 4, Zhao et al.'s
attacks through membership inference, the direct classifier) needs the model's answer on
each record with its sensitive attribute set to each candidate value. They are built here
once, ``n x m`` rows in one array, sent to the target in ONE query, and shared by every
attack of an audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error

__all__ = ["SensitiveAttribute", "SiblingOutputs", "best_candidates", "candidate_order",
           "candidate_prior", "known_features", "make_siblings", "query_siblings",
           "softmax_rows"]


@dataclass(frozen=True)
class SensitiveAttribute:
    """Where the sensitive attribute lives in a record, and the values it may take.

    Parameters
    ----------
    column : int, str or sequence of them
        The column (index for arrays, name for DataFrames), or several columns holding
        one attribute (a one-hot group, a pixel block).
    candidates : sequence
        The values to try, in a fixed order: scalars for one column, tuples of one value
        per column for several.
    name : str
        How reports name the attribute (default: the column).
    """

    column: Any
    candidates: tuple[Any, ...]
    name: str = ""

    @property
    def columns(self) -> list[Any]:
        """The attribute's columns as a list."""
        if isinstance(self.column, (list, tuple)):
            return list(self.column)
        return [self.column]

    @property
    def label(self) -> str:
        """The attribute's name for reports."""
        if self.name:
            return self.name
        return ",".join(str(c) for c in self.columns)

    def values(self) -> NDArray[Any]:
        """The candidates as an ``(m, n_columns)`` array."""
        return np.array([c if isinstance(c, tuple) else (c,) for c in self.candidates],
                        dtype=object)

    def truth_index(self, X: Any) -> NDArray[np.int64]:
        """Index of each record's value among the candidates (-1 when not a candidate)."""
        current = _columns(X, self.columns)
        out = np.full(current.shape[0], -1, dtype=np.int64)
        for j, value in enumerate(self.values()):
            hit = np.all(current == value[None, :].astype(current.dtype), axis=1)
            out[hit & (out < 0)] = j
        return out

    def current(self, X: Any) -> NDArray[Any]:
        """The records' values of the attribute, ``(n, n_columns)``."""
        return _columns(X, self.columns)


def _columns(X: Any, columns: list[Any]) -> NDArray[Any]:
    if hasattr(X, "iloc"):
        missing = [c for c in columns if c not in X.columns]
        if missing:
            raise param_error("column", "SensitiveAttribute", "columns of the data",
                              missing)
        return X[columns].to_numpy()
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise param_error("X", "SensitiveAttribute", "a 2-d array or a DataFrame",
                          f"<{arr.ndim}-d array>")
    bad = [c for c in columns if not isinstance(c, (int, np.integer))
           or not -arr.shape[1] <= c < arr.shape[1]]
    if bad:
        raise param_error("column", "SensitiveAttribute",
                          f"column indices in [0, {arr.shape[1]})", bad)
    return arr[:, columns]


def make_siblings(X: Any, attribute: SensitiveAttribute) -> Any:
    """``n x m`` records: record ``i`` with candidate ``j`` in row ``i * m + j``."""
    values = attribute.values()
    m, n = len(values), len(X)
    index = np.repeat(np.arange(n), m)
    if hasattr(X, "iloc"):
        import pandas as pd

        out = X.iloc[index].reset_index(drop=True)
        for k, column in enumerate(attribute.columns):
            out[column] = pd.Series(np.tile(values[:, k], n)).astype(X[column].dtype)
        return out
    arr = np.asarray(X)
    out = arr[index].copy()
    for k, column in enumerate(attribute.columns):
        out[:, column] = np.tile(values[:, k], n).astype(arr.dtype)
    return out


@dataclass(frozen=True)
class SiblingOutputs:
    """The model's answers on every record with every candidate value.

    ``losses[i, j]`` is the loss of record ``i``'s label when its attribute is candidate
    ``j`` (cross-entropy, squared error or 0-1 loss, as the target reveals);
    ``probabilities[i, j]`` the class probabilities then (None for regression or
    label-only targets); ``predictions[i, j]`` the prediction (regression) or predicted
    class; ``outputs`` the same answers as one flat
    :class:`~privaudit.targets.ModelOutputs` (row ``i * m + j``), which membership attacks
    score.
    """

    losses: NDArray[np.float64]
    loss_name: str
    task: str
    probabilities: NDArray[np.float64] | None = None
    predictions: NDArray[Any] | None = None
    outputs: Any = None

    @property
    def n_records(self) -> int:
        return int(self.losses.shape[0])

    @property
    def n_candidates(self) -> int:
        return int(self.losses.shape[1])


def query_siblings(target: Any, X: Any, y: Any,
                   attribute: SensitiveAttribute) -> SiblingOutputs:
    """Query ``target`` once on all siblings of ``X`` (labels ``y``); see the module.

    Parameters
    ----------
    target : privaudit Target
        The model, behind the target protocol (its query counter counts ``n x m``).
    X : array or DataFrame, shape (n_records, n_features)
        The records (their own attribute values are replaced).
    y : array of shape (n_records,)
        Their labels.
    attribute : SensitiveAttribute
        The column(s) and candidate values.
    """
    y = np.asarray(y)
    if len(X) != y.shape[0]:
        raise param_error("y", "query_siblings", f"length {len(X)} (one label per record)",
                          f"<length {y.shape[0]}>")
    m = len(attribute.candidates)
    out = target.query(make_siblings(X, attribute), np.repeat(y, m))
    n = y.shape[0]
    probabilities = None if out.probabilities is None else out.probabilities.reshape(
        n, m, -1)
    predictions = None if out.predictions is None else np.asarray(out.predictions).reshape(
        n, m)
    return SiblingOutputs(losses=out.loss.reshape(n, m), loss_name=out.loss_name,
                          task=out.task, probabilities=probabilities,
                          predictions=predictions, outputs=out)


def known_features(X: Any, y: Any, attribute: SensitiveAttribute) -> NDArray[np.float64]:
    """What the attacker knows of each record: its other features and its label.

    Yeom et al.'s ``phi(z)``: the record without its sensitive attribute. Categorical
    columns of a DataFrame are one-hot encoded; the label is one more column (one-hot for
    a classifier's string labels).
    """
    import pandas as pd

    frame = X if hasattr(X, "iloc") else pd.DataFrame(np.asarray(X))
    drop = attribute.columns
    rest = frame.drop(columns=drop).reset_index(drop=True)
    labels = pd.Series(np.asarray(y), name="__label__")
    table = pd.concat([rest, labels], axis=1)
    table.columns = [str(c) for c in table.columns]
    encoded = pd.get_dummies(table, dtype=np.float64)
    return encoded.to_numpy(dtype=np.float64)


def candidate_prior(truth: NDArray[np.int64], n_candidates: int,
                    smoothing: float = 1.0) -> NDArray[np.float64]:
    """Frequencies of the candidates among known values (Laplace-smoothed; -1 ignored)."""
    counts = np.bincount(truth[truth >= 0], minlength=n_candidates).astype(np.float64)
    counts += smoothing
    return counts / counts.sum()


def best_candidates(scores: NDArray[np.float64], prior: NDArray[np.float64]
                    ) -> NDArray[np.int64]:
    """Each row's highest-scoring candidate; ties go to the more common value.

    An attack whose scores cannot tell the candidates apart (an attribute the model
    ignores) then guesses as the prior does, as Yeom et al.'s Adversary 4 would, instead
    of always the first candidate.
    """
    top = scores.max(axis=1, keepdims=True)
    tied = np.isclose(scores, top, rtol=1e-12, atol=0.0)
    return np.where(tied, prior[None, :], -np.inf).argmax(axis=1).astype(np.int64)


def softmax_rows(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax (a belief over candidates from log-scale scores)."""
    shifted = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def candidate_order(values: Sequence[Any]) -> list[Any]:
    """Distinct values in a stable order (sorted when they compare)."""
    distinct = list(dict.fromkeys(v.item() if hasattr(v, "item") else v for v in values))
    try:
        return sorted(distinct)
    except TypeError:
        return distinct
