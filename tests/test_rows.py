"""The shared exact row matcher against a plain set of normalised tuples."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import privaudit._rows as rows_module
from privaudit._rows import normalised_tables, row_hashes, rows_found_in


def _key(value):
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ("missing",)
    try:
        return ("number", float(value) + 0.0)
    except (TypeError, ValueError):
        return ("text", str(value))


def reference_found(queries, candidates):
    """Each query row as a tuple of normalised cells, looked up in a Python set."""
    def kinds(col):
        cells = [v for t in (queries, candidates) for v in t.iloc[:, col]
                 if _key(v) != ("missing",)]
        return all(_key(v)[0] == "number" for v in cells)

    numeric = [kinds(c) for c in range(queries.shape[1])]

    def row(table, i):
        # Cell by cell from its column: table.iloc[i] would upcast a row of int and float
        # columns to float, so an int 0 of a text column would read "0.0", not "0".
        cells = [table.iloc[i, c] for c in range(table.shape[1])]
        return tuple(_key(v) if num or _key(v) == ("missing",) else ("text", str(v))
                     for v, num in zip(cells, numeric, strict=True))

    seen = {row(candidates, j) for j in range(len(candidates))}
    return np.array([row(queries, i) in seen for i in range(len(queries))])


cells = st.one_of(st.integers(0, 3), st.sampled_from([0.0, -0.0, 1.0, 2.5, math.nan]),
                  st.sampled_from(["a", "b", "1"]), st.none())


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3).flatmap(lambda w: st.tuples(
    st.lists(st.lists(cells, min_size=w, max_size=w), min_size=0, max_size=12),
    st.lists(st.lists(cells, min_size=w, max_size=w), min_size=0, max_size=12))))
@example(([[0, 0.0]], [[0, 0], ["a", None]]))  # int and float columns, a text one
def test_equals_a_set_of_normalised_tuples(tables):
    q_rows, c_rows = tables
    width = len((q_rows or c_rows or [[0]])[0])
    q = pd.DataFrame(q_rows, columns=range(width)) if q_rows else pd.DataFrame(
        columns=range(width))
    c = pd.DataFrame(c_rows, columns=range(width)) if c_rows else pd.DataFrame(
        columns=range(width))
    assert rows_found_in(q, c).tolist() == reference_found(q, c).tolist()


def test_numbers_match_across_types_and_text_stays_text():
    q = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]})
    c = pd.DataFrame({"a": ["1.0", "2", "3"], "b": ["x", "z", np.nan]})
    assert rows_found_in(q, c).tolist() == [True, False, True]
    mixed = pd.DataFrame({"a": ["1", "one"]})
    assert rows_found_in(pd.DataFrame({"a": [1.0]}), mixed).tolist() == [False]  # text: "1.0"


def test_a_hash_collision_never_counts_as_a_match(monkeypatch):
    # Every row hashes alike: only the value check can tell them apart.
    monkeypatch.setattr(rows_module.pd.util, "hash_pandas_object",
                        lambda frame, index=False: pd.Series(np.zeros(len(frame), np.uint64)))
    q = pd.DataFrame({"a": [1, 2, 5]})
    c = pd.DataFrame({"a": [3, 2, 4, 1]})
    assert rows_found_in(q, c).tolist() == [True, True, False]


def test_hashes_are_joint_and_equal_for_equal_rows():
    h1, h2 = row_hashes(pd.DataFrame({"a": [1, 2]}), np.array([["2"], ["1"]]))
    assert h1[0] == h2[1] and h1[1] == h2[0]
    assert h1.dtype == np.uint64


def test_tables_of_different_widths_are_refused():
    with pytest.raises(ValueError, match="same number of columns"):
        normalised_tables(pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [1], "b": [2]}))


def test_empty_candidates_match_nothing():
    assert rows_found_in(pd.DataFrame({"a": [1]}), pd.DataFrame({"a": []})).tolist() == [False]


def column_by_column(*tables):
    """normalised_tables without its fast path: every column decided from its values."""
    frames = [rows_module._as_frame(t) for t in tables]
    columns = [rows_module._normalised_column([f[c] for f in frames])
               for c in range(frames[0].shape[1])]
    return [pd.DataFrame({c: column[i] for c, column in enumerate(columns)},
                         index=range(len(f))) for i, f in enumerate(frames)]


numeric_columns = st.sampled_from([
    np.array([0, 1, 2, 1]), np.array([True, False, True, True]),
    np.array([0.0, -0.0, np.nan, 2.5]), np.array([3, 2**40, 0, 7], dtype=np.uint64),
    np.array([1.0, 2.0, 0.0, 1.0], dtype=np.float32)])
other_columns = st.sampled_from([
    np.array(["1", "1.0", None, "2"], dtype=object), np.array(["a", "b", "a", "1"], dtype=object),
    pd.array([1, None, 2, 1], dtype="Int64"), np.array([0, 0.0, "x", None], dtype=object)])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(numeric_columns, st.one_of(numeric_columns, other_columns)),
                min_size=0, max_size=5), st.integers(0, 4))
def test_numeric_columns_in_one_block_equal_the_column_by_column_path(pairs, n_rows):
    # A column numeric in one table and text or nullable in the other takes the slow path;
    # both paths give the same frames, hence the same hashes and matches.
    first = pd.DataFrame({i: a[:n_rows] for i, (a, _) in enumerate(pairs)}, index=range(n_rows))
    second = pd.DataFrame({i: b for i, (_, b) in enumerate(pairs)}, index=range(4))
    for fast, slow in zip(normalised_tables(first, second), column_by_column(first, second),
                          strict=True):
        pd.testing.assert_frame_equal(fast, slow)
    np.testing.assert_array_equal(rows_found_in(first, second),
                                  reference_found(first, second))
