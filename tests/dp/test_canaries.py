"""Canaries and their inclusion (privaudit.dp): each kind, ids, seeds, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.dp import CANARY_KINDS, CanarySet, draw_inclusion, make_canaries
from privaudit.dp._canaries import OOD_RADIUS_FACTOR

INPUT_KINDS = ("flipped-label", "random-label", "out-of-distribution")


def _population(n: int = 200, d: int = 5, n_classes: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 3, d) + rng.uniform(-5, 5, d)
    y = rng.integers(0, n_classes, n) * 10 + 1  # labels 1, 11, 21, 31: not 0..C-1
    return X, y


def _make(kind: str, m: int = 50, seed: int = 1, **kwargs) -> CanarySet:
    if kind == "dirac-gradient":
        return make_canaries(kind, m, n_parameters=kwargs.pop("n_parameters", 500),
                             random_state=seed, **kwargs)
    X, y = _population()
    return make_canaries(kind, m, features=X, labels=y, random_state=seed, **kwargs)


@pytest.mark.parametrize("kind", CANARY_KINDS)
def test_ids_are_unique_strings_in_order(kind: str) -> None:
    c = _make(kind, m=120)
    assert len(c) == 120 and c.kind == kind
    assert c.ids[0] == "canary-00000" and c.ids[-1] == "canary-00119"
    assert np.unique(c.ids).size == 120
    assert c.ids.dtype.kind == "U"


@pytest.mark.parametrize("kind", CANARY_KINDS)
def test_same_seed_same_canaries_other_seed_others(kind: str) -> None:
    a, b, other = _make(kind, seed=7), _make(kind, seed=7), _make(kind, seed=8)
    fields = ("coordinates",) if kind == "dirac-gradient" else ("features", "labels")
    for name in fields:
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert any(not np.array_equal(getattr(a, n), getattr(other, n)) for n in fields)


def test_flipped_label_canaries_are_real_records_with_another_label() -> None:
    X, y = _population()
    c = make_canaries("flipped-label", 150, features=X, labels=y, random_state=3)
    rows = [int(np.flatnonzero((X == f).all(axis=1))[0]) for f in c.features]
    assert len(set(rows)) == 150  # without replacement while there are enough records
    assert np.all(c.labels != y[rows])
    assert set(c.labels) <= set(y)
    assert c.coordinates is None


def test_flipped_labels_are_uniform_over_the_other_classes() -> None:
    X, y = _population(n=50)
    c = make_canaries("flipped-label", 6000, features=X, labels=y, random_state=4)
    rows = [int(np.flatnonzero((X == f).all(axis=1))[0]) for f in c.features[:600]]
    # 3 other classes each: every (own, new) pair near 1/3 of the own label's canaries
    own, new = y[rows], c.labels[:600]
    for label in np.unique(own):
        counts = np.unique(new[own == label], return_counts=True)[1]
        assert counts.size == 3 and counts.min() > counts.sum() / 3 * 0.5


def test_random_label_canaries_take_the_classes_given() -> None:
    X, y = _population()
    c = make_canaries("random-label", 400, features=X, labels=y, random_state=5)
    assert set(c.labels) == set(np.unique(y))
    d = make_canaries("random-label", 400, features=X, n_classes=3, random_state=5)
    assert set(d.labels) == {0, 1, 2}


def test_out_of_distribution_canaries_lie_beyond_every_record() -> None:
    X, y = _population()
    c = make_canaries("out-of-distribution", 300, features=X, labels=y, random_state=6)
    mean, std = X.mean(axis=0), X.std(axis=0)
    data_radius = np.linalg.norm((X - mean) / std, axis=1).max()
    canary_radius = np.linalg.norm((c.features - mean) / std, axis=1)
    assert np.allclose(canary_radius, OOD_RADIUS_FACTOR * data_radius)
    assert canary_radius.min() > data_radius
    assert set(c.labels) <= set(y) and len(set(c.labels)) == 4


def test_dirac_canaries_take_distinct_coordinates() -> None:
    c = make_canaries("dirac-gradient", 100, n_parameters=100, random_state=0)
    assert sorted(c.coordinates.tolist()) == list(range(100))  # all of them, once each
    d = make_canaries("dirac-gradient", 40, n_parameters=10_000, random_state=0)
    assert np.unique(d.coordinates).size == 40 and d.coordinates.max() < 10_000
    assert d.features is None and d.labels is None


def test_dirac_canaries_drawn_among_the_indices_given() -> None:
    slots = np.arange(900, 1000)
    c = make_canaries("dirac-gradient", 60, n_parameters=1000, parameter_indices=slots,
                      random_state=2)
    assert set(c.coordinates) <= set(slots) and np.unique(c.coordinates).size == 60


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_inclusion_rate_is_one_half(seed: int) -> None:
    inc = draw_inclusion(20_000, random_state=seed)
    assert inc.dtype == bool and inc.shape == (20_000,)
    assert abs(inc.mean() - 0.5) < 4 * 0.5 / np.sqrt(20_000)
    assert np.array_equal(inc, draw_inclusion(20_000, random_state=seed))
    assert not np.array_equal(inc, draw_inclusion(20_000, random_state=seed + 10))


def test_subset_by_mask_and_by_index() -> None:
    c = _make("flipped-label", m=10)
    mask = np.arange(10) % 3 == 0
    sub = c.subset(mask)
    assert sub.ids.tolist() == ["canary-00000", "canary-00003", "canary-00006", "canary-00009"]
    assert np.array_equal(sub.features, c.features[mask])
    picked = c.subset([4, 2])
    assert picked.ids.tolist() == ["canary-00004", "canary-00002"]
    assert np.array_equal(picked.labels, c.labels[[4, 2]])
    assert len(c.subset(np.zeros(10, dtype=bool))) == 0
    with pytest.raises(ValueError, match=r"'mask_or_index' parameter of CanarySet\.subset"):
        c.subset(np.ones(4, dtype=bool))


@pytest.mark.parametrize("n", [1, 0, -3, 2.5, True, "10"])
@pytest.mark.parametrize("kind", ["flipped-label", "dirac-gradient"])
def test_fewer_than_two_canaries_refused(kind: str, n) -> None:
    with pytest.raises(ValueError, match="'n_canaries' parameter of make_canaries"):
        _make(kind, m=n)
    with pytest.raises(ValueError, match="'n_canaries' parameter of draw_inclusion"):
        draw_inclusion(n)


@pytest.mark.parametrize("n_parameters", [49, 0, None, 50.0, True])
def test_dirac_with_too_few_parameters_refused(n_parameters) -> None:
    with pytest.raises(ValueError, match="'n_parameters' parameter of make_canaries must be "
                                         r"an integer >= n_canaries \(50\)"):
        make_canaries("dirac-gradient", 50, n_parameters=n_parameters)


@pytest.mark.parametrize("indices", [np.arange(10), np.array([1, 1, 2] * 20),
                                     np.arange(990, 1050), np.arange(60.0), -np.arange(60)])
def test_bad_parameter_indices_refused(indices) -> None:
    with pytest.raises(ValueError, match="'parameter_indices' parameter of make_canaries"):
        make_canaries("dirac-gradient", 50, n_parameters=1000, parameter_indices=indices)


@pytest.mark.parametrize("kind", ["gradient", "Flipped-Label", "", None, "dirac"])
def test_unknown_kind_refused(kind) -> None:
    with pytest.raises(ValueError, match="'kind' parameter of make_canaries must be one of"):
        make_canaries(kind, 10, n_parameters=100)


@pytest.mark.parametrize("kind", INPUT_KINDS)
def test_input_canaries_need_features_and_labels(kind: str) -> None:
    X, y = _population()
    with pytest.raises(ValueError, match="'features' parameter"):
        make_canaries(kind, 10, labels=y)
    with pytest.raises(ValueError, match="'labels' parameter"):
        make_canaries(kind, 10, features=X)
    with pytest.raises(ValueError, match=r"'labels' parameter.*one label per record"):
        make_canaries(kind, 10, features=X, labels=y[:-1])
    with pytest.raises(ValueError, match=r"'features' parameter.*2-D numeric"):
        make_canaries(kind, 10, features=X[:, 0], labels=y)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"'features' parameter.*finite"):
        make_canaries(kind, 10, features=bad, labels=y)
    with pytest.raises(ValueError, match=r"'labels' parameter.*at least 2 classes"):
        make_canaries(kind, 10, features=X, labels=np.ones(len(X)))


@settings(max_examples=40, deadline=None)
@given(n_classes=st.integers(2, 9), m=st.integers(2, 300), seed=st.integers(0, 2**32 - 1))
def test_property_flipped_label_always_differs(n_classes: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 2))
    X[:, 0] = np.arange(30)  # distinct records
    y = rng.integers(0, n_classes, 30)
    y[:2] = [0, n_classes - 1]
    c = make_canaries("flipped-label", m, features=X, labels=y, random_state=seed)
    rows = c.features[:, 0].astype(int)
    assert np.all(c.labels != y[rows])
    assert set(c.labels) <= set(y)
