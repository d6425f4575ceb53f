"""Newcombe's hybrid score interval of a difference of proportions (method 10)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.metrics import newcombe_interval, wilson_interval


@pytest.mark.parametrize(("counts", "expected"), [
    # Newcombe (1998), Table II, method 10.
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0)),
])
def test_newcombes_published_examples(counts, expected):
    e = newcombe_interval(*counts)
    assert e.value == pytest.approx(counts[0] / counts[1] - counts[2] / counts[3])
    assert (round(e.low, 4), round(e.high, 4)) == expected


def test_slow_reference_from_the_two_wilson_intervals():
    for k1, n1, k2, n2 in [(3, 17, 11, 13), (0, 5, 5, 5), (40, 90, 41, 88)]:
        a, b = wilson_interval(k1, n1), wilson_interval(k2, n2)
        d = a.value - b.value
        low = d - ((a.value - a.low) ** 2 + (b.high - b.value) ** 2) ** 0.5
        high = d + ((a.high - a.value) ** 2 + (b.value - b.low) ** 2) ** 0.5
        e = newcombe_interval(k1, n1, k2, n2)
        assert e.low == pytest.approx(max(low, -1)) and e.high == pytest.approx(min(high, 1))


def test_coverage_near_the_nominal_level():
    rng = np.random.default_rng(0)
    p1, p2, n1, n2 = 0.3, 0.45, 40, 60
    k1, k2 = rng.binomial(n1, p1, 4000), rng.binomial(n2, p2, 4000)
    covered = [newcombe_interval(int(a), n1, int(b), n2) for a, b in zip(k1, k2, strict=True)]
    rate = np.mean([e.low <= p1 - p2 <= e.high for e in covered])
    assert 0.93 <= rate <= 0.97


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 50), st.integers(1, 50), st.data())
def test_the_interval_holds_the_estimate_and_mirrors(n1, n2, data):
    k1, k2 = data.draw(st.integers(0, n1)), data.draw(st.integers(0, n2))
    e = newcombe_interval(k1, n1, k2, n2)
    assert -1.0 <= e.low <= e.value <= e.high <= 1.0
    m = newcombe_interval(k2, n2, k1, n1)
    assert m.value == pytest.approx(-e.value)
    assert (m.low, m.high) == pytest.approx((-e.high, -e.low))


def test_bad_counts_name_the_parameter():
    with pytest.raises(ValueError, match="'k' parameter"):
        newcombe_interval(5, 4, 1, 2)
