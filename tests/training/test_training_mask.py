"""The balanced in/out mask of the reference pool (LiRA's ``keep`` mask)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.training import balanced_in_mask


def slow_balanced_in_mask(n_models, n_candidates, fraction, rng):
    """Record by record, straight from the definition, consuming the same random draws."""
    expected = fraction * n_models
    k_low = math.floor(expected + 1e-9)
    n_extra = round((expected - k_low) * n_candidates)
    perm = rng.permutation(n_candidates)
    extra = set(perm[:n_extra].tolist())
    u = rng.random((n_models, n_candidates))
    mask = np.zeros((n_models, n_candidates), dtype=bool)
    for j in range(n_candidates):
        k = k_low + (1 if j in extra else 0)
        # the k models with the smallest draws for this record
        chosen = sorted(range(n_models), key=lambda i: u[i, j])[:k]
        for i in chosen:
            mask[i, j] = True
    return mask


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 60), st.floats(0.05, 0.95), st.integers(0, 2**32 - 1))
def test_fast_mask_equals_slow_reference(n_models, m, fraction, seed) -> None:
    fast = balanced_in_mask(n_models, m, fraction, np.random.default_rng(seed))
    slow = slow_balanced_in_mask(n_models, m, fraction, np.random.default_rng(seed))
    np.testing.assert_array_equal(fast, slow)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 16), st.integers(1, 80), st.floats(0.05, 0.95), st.integers(0, 2**32 - 1))
def test_every_record_in_floor_or_ceil_models(n_models, m, fraction, seed) -> None:
    mask = balanced_in_mask(n_models, m, fraction, np.random.default_rng(seed))
    per_record = mask.sum(axis=0)
    lo = math.floor(fraction * n_models + 1e-9)
    assert set(np.unique(per_record).tolist()) <= {lo, lo + 1}
    # Overall, a fraction `fraction` of the (model, record) pairs is IN (to one record).
    assert abs(mask.sum() - fraction * n_models * m) <= 1


def test_even_models_half_is_exactly_half() -> None:
    mask = balanced_in_mask(16, 1000, 0.5, np.random.default_rng(0))
    assert np.all(mask.sum(axis=0) == 8)
    # Each model trains on about half of the records (binomial spread, not fixed).
    sizes = mask.sum(axis=1)
    assert np.all(np.abs(sizes - 500) < 60)


def test_single_model_trains_on_half() -> None:
    mask = balanced_in_mask(1, 101, 0.5, np.random.default_rng(0))
    assert mask.sum() in (50, 51)


def test_in_models_uniform_over_models_statistically() -> None:
    # Which models a record is IN for is uniformly random: each model is IN for half the
    # records (within 4 binomial SDs), and two models share about a quarter minus the
    # (negative) dependence from the per-record constraint: P(both) = (4/8)(3/7).
    mask = balanced_in_mask(8, 20000, 0.5, np.random.default_rng(1))
    frac = mask.mean(axis=1)
    assert np.all(np.abs(frac - 0.5) < 4 * math.sqrt(0.25 / 20000))
    both = (mask[0] & mask[1]).mean()
    assert abs(both - 3 / 14) < 0.01
