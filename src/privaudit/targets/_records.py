"""Row access shared by every adapter: count the records of ``X`` and slice a chunk."""

from __future__ import annotations

from typing import Any

from privaudit._validation import param_error

__all__ = ["DEFAULT_BATCH_SIZE", "n_records", "rows"]

#: Records per call of a scikit-learn estimator or a function target.
DEFAULT_BATCH_SIZE = 4096


def n_records(X: Any, *, func: str, param: str = "X") -> int:
    """Number of rows of ``X`` (array, DataFrame, sparse matrix or list)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        raise param_error(
            param, func, "an array-like of records", f"<{type(X).__name__}>", error=TypeError
        ) from None


def rows(X: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of ``X`` (positional for a DataFrame)."""
    if hasattr(X, "iloc"):
        return X.iloc[start:stop]
    return X[start:stop]
