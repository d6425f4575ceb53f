"""Exact row matching by hashing: one kernel for every "is this record in that table?".

Used by the model audit (audited records repeated in the population) and by the
synthetic-data checks (synthetic rows copied from the training data, IMS, duplication
rates). Rows are hashed in bulk with pandas' vectorised 64-bit row hash after a joint
normalisation of the tables, and every hash match is confirmed by comparing the values,
so a hash collision can never count as a match: the result is exact.

Normalisation, decided per column over ALL the tables at once: a column whose non-missing
values all read as numbers is compared as float64 (``1``, ``1.0`` and ``"1"`` are equal,
``-0.0`` equals ``0.0``), any other column as text; every missing value (NaN, None, NaT)
is one value, equal to itself. Columns are matched by position.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["normalised_tables", "row_hashes", "rows_found_in", "table_digest", "with_label"]

_MISSING = "\x00<missing>"


def _as_frame(table: Any) -> pd.DataFrame:
    if isinstance(table, pd.DataFrame):
        frame = table.reset_index(drop=True)
    elif isinstance(table, pd.Series):
        frame = table.reset_index(drop=True).to_frame()
    else:
        arr = np.asarray(table)
        frame = pd.DataFrame(arr.reshape(len(arr), -1))
    frame.columns = range(frame.shape[1])
    return frame


def with_label(X: Any, y: Any) -> pd.DataFrame:
    """The records as a model sees them: features by position, then the label (as text).

    For "is this (record, label) in that training set?" questions with
    :func:`rows_found_in`.
    """
    frame = _as_frame(X)
    frame[frame.shape[1]] = np.asarray(y).astype(str)
    return frame


def normalised_tables(*tables: Any) -> list[pd.DataFrame]:
    """The tables with columns by position, each column numeric or text in all of them.

    A column held as numbers (a NumPy bool, integer or float dtype) in every table is
    converted in one block per table (the fast path, most columns of most tables);
    :func:`_normalised_column` decides each other column from its values.

    Raises
    ------
    ValueError
        When the tables do not have the same number of columns.
    """
    frames = [_as_frame(t) for t in tables]
    widths = {f.shape[1] for f in frames}
    if len(widths) > 1:
        raise ValueError(f"Tables compared row by row must have the same number of columns; "
                         f"got {sorted(widths)}.")
    width = frames[0].shape[1] if frames else 0
    dtypes = [list(f.dtypes) for f in frames]
    held_as_numbers = [col for col in range(width)
                       if all(_holds_numbers(types[col]) for types in dtypes)]
    out: list[dict[int, Any]] = [{} for _ in frames]
    for i, frame in enumerate(frames):
        # + 0.0 turns -0.0 into 0.0: equal numbers hash equal.
        block = frame.iloc[:, held_as_numbers].to_numpy(dtype=np.float64) + 0.0
        out[i].update(zip(held_as_numbers, block.T, strict=True))
    numbers_held = set(held_as_numbers)
    for col in (c for c in range(width) if c not in numbers_held):
        for i, column in enumerate(_normalised_column([f[col] for f in frames])):
            out[i][col] = column
    return [pd.DataFrame({col: columns[col] for col in range(width)}, index=range(len(f)))
            for columns, f in zip(out, frames, strict=True)]


def _holds_numbers(dtype: Any) -> bool:
    """Whether a column of this dtype holds only numbers (or NaN), never text or NA."""
    return isinstance(dtype, np.dtype) and dtype.kind in "biuf"


def _normalised_column(columns: list[pd.Series]) -> list[pd.Series]:
    """One column of every table, decided from its values in all of them.

    Float64 when all its non-missing values read as numbers in every table, else text
    with one marker for every missing value.
    """
    numbers = [pd.to_numeric(c, errors="coerce") for c in columns]
    if all(n.notna().sum() == c.notna().sum() for n, c in zip(numbers, columns, strict=True)):
        return [n.astype(np.float64) + 0.0 for n in numbers]
    return [c.astype(str).where(c.notna(), _MISSING) for c in columns]


def row_hashes(*tables: Any) -> list[np.ndarray]:
    """One uint64 hash per row of each table, after :func:`normalised_tables`."""
    return [pd.util.hash_pandas_object(f, index=False).to_numpy()
            for f in normalised_tables(*tables)]


def rows_found_in(queries: Any, candidates: Any) -> np.ndarray:
    """Whether each row of ``queries`` equals some row of ``candidates`` (exactly).

    Returns
    -------
    ndarray of bool, shape (n_queries,)
    """
    q, c = normalised_tables(queries, candidates)
    hq = pd.util.hash_pandas_object(q, index=False).to_numpy()
    hc = pd.util.hash_pandas_object(c, index=False).to_numpy()
    if not len(hc):
        return np.zeros(len(hq), dtype=bool)
    order = np.argsort(hc, kind="stable")
    sorted_hashes = hc[order]
    position = np.minimum(np.searchsorted(sorted_hashes, hq), len(hc) - 1)
    hits = np.flatnonzero(sorted_hashes[position] == hq)
    # Confirm every hash hit by its values, against the first candidate of that hash, in
    # bulk; only a true 64-bit collision (never seen in practice) goes on to the others.
    found = np.zeros(len(hq), dtype=bool)
    found[hits] = _equal_rows(q.iloc[hits], c.iloc[order[position[hits]]])
    for i in hits[~found[hits]]:
        stop = np.searchsorted(sorted_hashes, hq[i], side="right")
        others = order[position[i] + 1:stop]
        found[i] = bool(len(others)) and bool(
            _equal_rows(q.iloc[[i] * len(others)], c.iloc[others]).any())
    return found


def _equal_rows(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    """Row-wise equality of two aligned normalised tables (missing equals missing)."""
    same = np.ones(len(a), dtype=bool)
    for col in a.columns:
        x, y = a[col].to_numpy(), b[col].to_numpy()
        if x.dtype.kind == "f":
            same &= (x == y) | (np.isnan(x) & np.isnan(y))
        else:
            same &= x == y
    return same


def table_digest(table: pd.DataFrame) -> str:
    """A content digest of a table: its column names and dtypes, and its rows in order."""
    from privaudit._digest import run_digest

    hashes = row_hashes(table)[0]
    return run_digest([str(c) for c in table.columns], [str(t) for t in table.dtypes], hashes)
