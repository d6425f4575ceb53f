"""Content hashes behind the reference-model cache key."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privaudit.training import data_fingerprint
from privaudit.training._hashing import canonical, sha256_json


def _base() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(20, 3)), rng.integers(0, 2, size=20)


def test_fingerprint_changes_with_any_value_shape_or_dtype() -> None:
    X, y = _base()
    ref = data_fingerprint(X, y)
    assert data_fingerprint(X.copy(), y.copy()) == ref
    X2 = X.copy()
    X2[7, 1] += 1e-12
    y2 = y.copy()
    y2[3] = 1 - y2[3]
    variants = [
        data_fingerprint(X2, y),
        data_fingerprint(X, y2),
        data_fingerprint(X.astype(np.float32), y),
        data_fingerprint(X.reshape(10, 6), y),
        data_fingerprint(X[:-1], y[:-1]),
        data_fingerprint(X, None),
        data_fingerprint(X, y.astype(np.int32)),
    ]
    assert ref not in variants
    assert len(set(variants)) == len(variants)


def test_fingerprint_of_non_contiguous_view_equals_copy() -> None:
    X, y = _base()
    view = X[:, ::2]
    assert not view.flags.c_contiguous
    assert data_fingerprint(view, y) == data_fingerprint(np.ascontiguousarray(view), y)


def test_fingerprint_dataframe_columns_and_values() -> None:
    X, y = _base()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    ref = data_fingerprint(df, pd.Series(y))
    assert data_fingerprint(df.copy(), pd.Series(y)) == ref
    assert data_fingerprint(df.rename(columns={"a": "z"}), pd.Series(y)) != ref
    df2 = df.copy()
    df2.iloc[0, 0] = 99.0
    assert data_fingerprint(df2, pd.Series(y)) != ref
    # The index is not data: a reset index gives the same fingerprint.
    assert data_fingerprint(df.set_axis(range(100, 120)), pd.Series(y)) == ref


def test_fingerprint_object_arrays_hash_values_not_pointers() -> None:
    a = np.array(["x", "yy", "zzz"], dtype=object)
    b = np.array(["x", "yy", "zzz"], dtype=object)
    assert data_fingerprint(a) == data_fingerprint(b)
    assert data_fingerprint(a) != data_fingerprint(np.array(["x", "yy", "zz"], dtype=object))


def test_fingerprint_sparse_matches_content() -> None:
    X, _ = _base()
    X[X < 0.5] = 0
    csr = sp.csr_matrix(X)
    assert data_fingerprint(csr) == data_fingerprint(sp.csc_matrix(X))
    X2 = X.copy()
    X2[0, 0] = 5.0
    assert data_fingerprint(csr) != data_fingerprint(sp.csr_matrix(X2))


def test_fingerprint_is_stable_across_processes() -> None:
    # The cache must be found again by a new Python process (hash() is salted per process).
    code = (
        "import numpy as np, pandas as pd; from privaudit.training import data_fingerprint; "
        "X = pd.DataFrame({'s': np.array(['a', 'b'], dtype=object), 'v': [1.0, 2.0]}); "
        "print(data_fingerprint(X, np.array([0, 1])))"
    )
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True).stdout.strip()
        for _ in range(2)
    }
    assert len(outs) == 1
    X = pd.DataFrame({"s": np.array(["a", "b"], dtype=object), "v": [1.0, 2.0]})
    assert outs == {data_fingerprint(X, np.array([0, 1]))}


def test_canonical_dict_order_and_float_int_distinction() -> None:
    assert sha256_json(canonical({"a": 1, "b": 2})) == sha256_json(canonical({"b": 2, "a": 1}))
    assert canonical(1) != canonical(1.0)
    assert canonical(np.float64(0.5)) == canonical(0.5)
    assert canonical([1, 2]) != canonical((1, 2))


def test_canonical_refuses_unhashable_object_with_clear_error() -> None:
    class Unpicklable:
        def __reduce__(self):
            raise TypeError("no")

    with pytest.raises(TypeError, match="Cannot fingerprint"):
        canonical(Unpicklable())


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 4)),
              elements=st.floats(-1e6, 1e6)), st.data())
def test_fingerprint_property_equal_iff_equal_content(X: np.ndarray, data) -> None:
    assert data_fingerprint(X) == data_fingerprint(X.copy())
    i = data.draw(st.integers(0, X.shape[0] - 1))
    j = data.draw(st.integers(0, X.shape[1] - 1))
    X2 = X.copy()
    X2[i, j] = X2[i, j] + 1.0 if abs(X2[i, j]) < 1e6 else 0.0
    assert data_fingerprint(X2) != data_fingerprint(X)
