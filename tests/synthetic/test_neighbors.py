"""The mixed-type nearest-neighbour engine against a brute-force loop over rows and columns."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_gower import mixed_table, reference_gower

import privaudit.synthetic._neighbors as engine
from privaudit.synthetic._neighbors import MixedTypeEncoder, gower_distances, nearest_neighbors

CATEGORICAL = {"state", "zip", "member"}


@pytest.fixture(scope="module")
def tables():
    return mixed_table(40, 1), mixed_table(55, 2)


@pytest.fixture(scope="module")
def slow(tables):
    a, b = tables
    return reference_gower(a, b, CATEGORICAL, [a, b])


def test_every_column_kind_takes_its_own_path(tables, monkeypatch):
    monkeypatch.setattr(engine, "_MAX_INDICATORS", 13)  # 12 ages in, 60-odd spends out
    a, b = tables
    kinds = {c.name: (c.kind, c.has_missing) for c in MixedTypeEncoder().fit(a, b).columns_}
    assert kinds == {"age": ("thermometer", False), "income": ("continuous", False),
                     "state": ("categorical", False), "zip": ("codes", False),
                     "score": ("thermometer", True), "spend": ("continuous", True),
                     "member": ("categorical", False)}


def test_distances_equal_the_brute_force_loop(tables, slow):
    a, b = tables
    enc = MixedTypeEncoder().fit(a, b)
    fast = gower_distances(enc.transform(a), enc.transform(b))
    np.testing.assert_allclose(fast, slow, rtol=0, atol=2e-9)
    assert fast.min() >= 0 and fast.max() <= 1


@pytest.mark.parametrize("limit", [1, 2, 13, 1000])
def test_same_distances_whichever_columns_join_the_matrix_product(tables, slow, limit,
                                                                  monkeypatch):
    # limit 1: every column outside the product (codes / cdist); 1000: all inside it.
    monkeypatch.setattr(engine, "_MAX_INDICATORS", limit)
    a, b = tables
    enc = MixedTypeEncoder().fit(a, b)
    np.testing.assert_allclose(gower_distances(enc.transform(a), enc.transform(b)), slow,
                               atol=2e-9)


@pytest.mark.parametrize("k", [1, 3, 12])
def test_top_k_is_the_sorted_brute_force_with_ties_to_the_lowest_position(tables, slow, k):
    a, b = tables
    b_twice = pd.concat([b, b], ignore_index=True)  # every candidate tied with its twin
    dist, idx = nearest_neighbors(a, b_twice, n_neighbors=k)
    full = np.hstack([slow, slow])
    for i in range(len(a)):
        order = sorted(range(full.shape[1]), key=lambda j: (round(full[i, j], 9), j))[:k]
        assert idx[i].tolist() == order
        np.testing.assert_allclose(dist[i], full[i, order], atol=2e-9)


def test_exclude_self_finds_the_closest_other_row_and_twins_at_zero():
    a = mixed_table(30, 3)
    a = pd.concat([a, a.iloc[[4]]], ignore_index=True)  # row 30 duplicates row 4
    dist, idx = nearest_neighbors(a, a, n_neighbors=2, exclude_self=True)
    full = reference_gower(a, a, CATEGORICAL, [a])
    np.fill_diagonal(full, np.inf)
    np.testing.assert_allclose(dist[:, 0], full.min(axis=1), atol=2e-9)
    assert not np.any(idx[:, 0] == np.arange(len(a)))
    assert dist[4, 0] == 0.0 and idx[4, 0] == 30 and idx[30, 0] == 4


def test_identical_rows_are_exactly_zero():
    a = mixed_table(50, 4)
    dist, idx = nearest_neighbors(a, a.iloc[::-1].reset_index(drop=True))
    assert np.all(dist[:, 0] == 0.0)
    assert np.array_equal(idx[:, 0], len(a) - 1 - np.arange(len(a)))


def test_ranges_come_from_the_fit_frames():
    q = pd.DataFrame({"x": [0.0, 10.0]})
    c = pd.DataFrame({"x": [1.0, 2.0]})
    wide = pd.DataFrame({"x": [0.0, 100.0]})
    dist, _ = nearest_neighbors(q, c, fit_frames=[wide])
    np.testing.assert_allclose(dist[:, 0], [0.01, 0.08])
    dist, _ = nearest_neighbors(q, c)  # default range over both tables: 10
    np.testing.assert_allclose(dist[:, 0], [0.1, 0.8])


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 60), st.integers(1, 4))
def test_chunking_never_changes_the_answer(chunk_size, k):
    a, b = mixed_table(37, 5), mixed_table(23, 6)
    whole = nearest_neighbors(a, b, n_neighbors=k)
    chunked = nearest_neighbors(a, b, n_neighbors=k, chunk_size=chunk_size)
    assert np.array_equal(whole[1], chunked[1]) and np.array_equal(whole[0], chunked[0])


def test_worker_processes_give_the_same_numbers():
    a, b = mixed_table(120, 7), mixed_table(90, 8)
    inline = nearest_neighbors(a, b, n_neighbors=2)
    spread = nearest_neighbors(a, b, n_neighbors=2, chunk_size=25, executor="local", n_jobs=2)
    assert np.array_equal(inline[0], spread[0]) and np.array_equal(inline[1], spread[1])


def test_progress_bar_counts_the_chunks():
    messages = []
    nearest_neighbors(mixed_table(30, 9), mixed_table(20, 10), chunk_size=7,
                      progress=messages.append)
    assert messages and any("Nearest neighbours" in m for m in messages)


def test_explicit_categorical_columns_compare_numbers_as_labels():
    q = pd.DataFrame({"code": [1, 2]})
    c = pd.DataFrame({"code": [3, 2]})
    dist, _ = nearest_neighbors(q, c, categorical=["code"])
    assert dist[:, 0].tolist() == [1.0, 0.0]
    dist, _ = nearest_neighbors(q, c)  # numeric: 1 is |1 - 2| / (3 - 1) from 2
    assert dist[:, 0].tolist() == [0.5, 0.0]


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"n_neighbors": 0}, "n_neighbors"),
    ({"n_neighbors": 99}, "n_neighbors"),
    ({"n_neighbors": True}, "n_neighbors"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"columns": ["nope"]}, "columns"),
    ({"categorical": ["nope"]}, "categorical"),
    ({"exclude_self": True}, "exclude_self"),
])
def test_bad_arguments_name_the_parameter(kwargs, param):
    a, b = mixed_table(5, 11), mixed_table(6, 12)
    with pytest.raises((ValueError, TypeError), match=f"'{param}'"):
        nearest_neighbors(a, b, **kwargs)


def test_a_text_column_left_numeric_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"'x' holds text.*categorical"):
        MixedTypeEncoder(categorical=[]).fit(pd.DataFrame({"x": ["a", "b"]}))


def test_transform_refuses_values_fit_never_saw():
    enc = MixedTypeEncoder().fit(pd.DataFrame({"s": ["a", "b"], "n": [1, 2]}))
    with pytest.raises(ValueError, match="'s'"):
        enc.transform(pd.DataFrame({"s": ["c", "a"], "n": [1, 2]}))
    with pytest.raises(ValueError, match="'n'"):
        enc.transform(pd.DataFrame({"s": ["a", "a"], "n": [1, 3]}))
