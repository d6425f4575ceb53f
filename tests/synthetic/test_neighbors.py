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


def _seeds(n, seed):
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)


@pytest.mark.parametrize("k", [1, 3, 12])
def test_tie_seeds_keep_the_exact_neighbours_and_shuffle_only_ties(tables, slow, k):
    """Each row's first k in the order (distance, its own random key): the distances are
    the brute force's, every candidate nearer than the k-th is kept, and a row without
    ties gets the engine's usual neighbours."""
    a, b = tables
    b_twice = pd.concat([b, b], ignore_index=True)
    full = np.hstack([slow, slow])
    plain = nearest_neighbors(a, b, n_neighbors=k)
    dist, idx = nearest_neighbors(a, b_twice, n_neighbors=k, tie_seeds=_seeds(len(a), 0))
    for i in range(len(a)):
        assert len(set(idx[i])) == k
        np.testing.assert_allclose(dist[i], np.sort(full[i])[:k], atol=2e-9)
        np.testing.assert_allclose(full[i, idx[i]], dist[i], atol=2e-9)
        assert set(np.flatnonzero(full[i] < dist[i, -1] - 1e-8)) <= set(idx[i])
    assert 0.25 < np.mean(idx >= len(b)) < 0.75  # the copy as often as the first row
    # Without ties (b alone: distinct distances in these tables), the exact neighbours.
    alone = nearest_neighbors(a, b, n_neighbors=k, tie_seeds=_seeds(len(a), 1))
    assert np.array_equal(alone[1], plain[1]) and np.array_equal(alone[0], plain[0])


@pytest.mark.parametrize(("xs", "k", "outcomes"), [
    ([1.0] * 4, 4, 24),               # 4 copies, all kept: their 24 orders
    ([1.0] * 4, 2, 12),               # 2 of 4 copies drawn: 12 ordered pairs
    ([0.0] + [1.0] * 5, 3, 20),       # the nearest, then 2 of 5 copies: 20 ordered pairs
])
def test_tie_seeds_draw_each_rows_ties_uniformly_and_independently(xs, k, outcomes):
    """Every query sees the same ties: each row's neighbours are its own uniform draw among
    them (every outcome about equally often), not one draw shared by every row."""
    candidates = pd.DataFrame({"x": xs})
    queries = pd.DataFrame({"x": np.zeros(4800)})
    _, idx = nearest_neighbors(queries, candidates, n_neighbors=k, tie_seeds=_seeds(4800, 2),
                               fit_frames=[pd.DataFrame({"x": [0.0, 1.0]})])
    counts = pd.Series([tuple(r) for r in idx]).value_counts()
    expected = 4800 / outcomes  # binomial sd below sqrt(expected): 5 sd either side
    assert len(counts) == outcomes
    assert counts.min() > expected - 5 * expected**0.5
    assert counts.max() < expected + 5 * expected**0.5
    if xs[0] == 0.0:
        assert np.all(idx[:, 0] == 0)  # the one nearer candidate always comes first
    again = nearest_neighbors(queries, candidates, n_neighbors=k, tie_seeds=_seeds(4800, 2),
                              fit_frames=[pd.DataFrame({"x": [0.0, 1.0]})])[1]
    assert np.array_equal(idx, again)


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
@given(st.integers(1, 60), st.integers(1, 12), st.booleans())
def test_chunking_never_changes_the_answer(chunk_size, k, random_ties):
    a, b = mixed_table(37, 5), mixed_table(23, 6)
    b = pd.concat([b, b.iloc[::2]], ignore_index=True)  # ties to break
    seeds = {"tie_seeds": _seeds(len(a), 3)} if random_ties else {}
    whole = nearest_neighbors(a, b, n_neighbors=k, **seeds)
    chunked = nearest_neighbors(a, b, n_neighbors=k, chunk_size=chunk_size, **seeds)
    assert np.array_equal(whole[1], chunked[1]) and np.array_equal(whole[0], chunked[0])


def test_worker_processes_give_the_same_numbers():
    a, b = mixed_table(120, 7), mixed_table(90, 8)
    b = pd.concat([b, b], ignore_index=True)
    for seeds in ({}, {"tie_seeds": _seeds(len(a), 4)}):
        inline = nearest_neighbors(a, b, n_neighbors=2, **seeds)
        spread = nearest_neighbors(a, b, n_neighbors=2, chunk_size=25, executor="local",
                                   n_jobs=2, **seeds)
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
    ({"tie_seeds": np.arange(4, dtype=np.uint64)}, "tie_seeds"),
    ({"tie_seeds": np.array([1, 2, 3, 4, -5])}, "tie_seeds"),
    ({"tie_seeds": np.linspace(0, 1, 5)}, "tie_seeds"),
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
