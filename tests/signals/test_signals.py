import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import entropy as scipy_entropy
from sklearn.metrics import log_loss

from privaudit import signals

EPS = signals.EPS


# ---------------------------------------------------------------- slow references
def ref_cross_entropy(p, y):
    return np.array([-math.log(max(p[i][y[i]], EPS)) for i in range(len(y))])


def ref_confidence(p, y):
    return np.array([p[i][y[i]] for i in range(len(y))])


def ref_entropy(p):
    out = []
    for row in p:
        out.append(-sum(v * math.log(v) for v in row if v > 0))
    return np.array(out)


def ref_modified_entropy(p, y):
    out = []
    for i, row in enumerate(p):
        py = row[y[i]]
        total = -(1 - py) * math.log(max(py, EPS))
        for j, v in enumerate(row):
            if j != y[i]:
                total -= v * math.log(max(1 - v, EPS))
        out.append(total)
    return np.array(out)


def ref_correctness(p, y):
    return np.array([1.0 if int(np.argmax(p[i])) == y[i] else 0.0 for i in range(len(y))])


def ref_logit(p, y):
    out = []
    for i, row in enumerate(p):
        py = row[y[i]]
        rest = sum(v for j, v in enumerate(row) if j != y[i])
        tiny = np.finfo(np.float64).tiny
        out.append(math.log(max(py, tiny)) - math.log(max(rest, tiny)))
    return np.array(out)


def random_probs(rng, n, c, concentration=0.5):
    p = rng.dirichlet(np.full(c, concentration), size=n)
    y = rng.integers(0, c, size=n)
    return p, y


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("c", [2, 3, 10])
def test_signals_match_slow_references(seed, c):
    p, y = random_probs(np.random.default_rng(seed), 200, c)
    np.testing.assert_allclose(signals.cross_entropy(p, y), ref_cross_entropy(p, y), rtol=1e-12)
    np.testing.assert_allclose(signals.true_class_confidence(p, y), ref_confidence(p, y))
    np.testing.assert_allclose(signals.entropy(p), ref_entropy(p), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(
        signals.modified_entropy(p, y), ref_modified_entropy(p, y), rtol=1e-10, atol=1e-14
    )
    np.testing.assert_array_equal(signals.correctness(p, y), ref_correctness(p, y))
    np.testing.assert_allclose(signals.logit_confidence(p, y), ref_logit(p, y), rtol=1e-9)


def test_cross_entropy_matches_sklearn_log_loss_per_record():
    p, y = random_probs(np.random.default_rng(5), 40, 4, concentration=0.2)
    p[0] = [1.0, 0.0, 0.0, 0.0]
    y[0] = 2  # probability 0: clipped at eps as sklearn does
    ours = signals.cross_entropy(p, y)
    for i in range(len(y)):
        assert ours[i] == pytest.approx(log_loss([y[i]], p[i:i + 1], labels=range(4)), rel=1e-9)
    assert ours[0] == pytest.approx(-math.log(EPS))


def test_entropy_matches_scipy():
    p, _ = random_probs(np.random.default_rng(6), 50, 6)
    np.testing.assert_allclose(signals.entropy(p), scipy_entropy(p, axis=1), rtol=1e-10)


def test_regression_signals_by_hand():
    y = np.array([3.0, -1.0, 2.5])
    pred = np.array([1.0, -1.5, 2.5])
    np.testing.assert_allclose(signals.residual(y, pred), [2.0, 0.5, 0.0])
    np.testing.assert_allclose(signals.squared_error(y, pred), [4.0, 0.25, 0.0])
    np.testing.assert_allclose(signals.absolute_error(y, pred), [2.0, 0.5, 0.0])
    # A column vector of predictions (as some regressors return) is accepted.
    np.testing.assert_allclose(signals.squared_error(y, pred[:, None]), [4.0, 0.25, 0.0])


def test_modified_entropy_two_class_by_hand():
    # F = (0.8, 0.2). True class 0: -(1-0.8) ln 0.8 - 0.2 ln(1-0.2) = -0.4 ln 0.8.
    # True class 1: -(1-0.2) ln 0.2 - 0.8 ln(1-0.8) = -1.6 ln 0.2.
    p = np.array([[0.8, 0.2], [0.8, 0.2]])
    got = signals.modified_entropy(p, np.array([0, 1]))
    assert got[0] == pytest.approx(-0.4 * math.log(0.8))  # 0.0892574...
    assert got[1] == pytest.approx(-1.6 * math.log(0.2))  # 2.5751...
    assert got[0] == pytest.approx(0.08925742052568390, abs=1e-15)
    # Plain entropy cannot tell the two records apart; Mentr can.
    h = signals.entropy(p)
    assert h[0] == h[1]


def test_other_signals_by_hand():
    p = np.array([[0.9, 0.1], [0.25, 0.75]])
    y = np.array([0, 0])
    np.testing.assert_allclose(signals.logit_confidence(p, y), [math.log(9), math.log(1 / 3)])
    np.testing.assert_allclose(signals.true_class_confidence(p, y), [0.9, 0.25])
    np.testing.assert_allclose(signals.cross_entropy(p, y), [-math.log(0.9), -math.log(0.25)])
    np.testing.assert_array_equal(signals.correctness(p, y), [1.0, 0.0])
    np.testing.assert_allclose(
        signals.entropy(np.array([[0.5, 0.5, 0.0]])), [math.log(2)]
    )


def test_logit_keeps_resolution_near_one():
    # 1 - p_y rounds to 0 in float64 here, but the other classes' mass does not.
    p = np.array([[1.0, 1e-20, 0.0], [1.0, 1e-25, 0.0]])
    got = signals.logit_confidence(p, np.array([0, 0]))
    assert np.all(np.isfinite(got))
    assert got[1] > got[0] > 40


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"probabilities": np.ones(3), "y_index": np.zeros(3, int)}, "probabilities"),
        ({"probabilities": np.full((3, 2), 0.5), "y_index": np.zeros(2, int)}, "y_index"),
        ({"probabilities": np.full((3, 2), 0.5), "y_index": np.array([0, 1, 2])}, "y_index"),
        ({"probabilities": np.full((3, 2), 0.5), "y_index": np.zeros(3)}, "y_index"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, param):
    with pytest.raises((ValueError, TypeError), match=f"'{param}' parameter of cross_entropy"):
        signals.cross_entropy(**kwargs)


def test_regression_shape_mismatch():
    with pytest.raises(ValueError, match="'predictions' parameter of squared_error"):
        signals.squared_error(np.zeros(3), np.zeros(4))


@st.composite
def prob_matrices(draw):
    c = draw(st.integers(2, 6))
    n = draw(st.integers(1, 5))
    row = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=c, max_size=c).filter(
        lambda r: sum(r) > 1e-6
    )
    p = np.array([draw(row) for _ in range(n)], dtype=float)
    p = p / p.sum(axis=1, keepdims=True)
    y = np.array([draw(st.integers(0, c - 1)) for _ in range(n)])
    return p, y


@settings(max_examples=60, deadline=None)
@given(py=prob_matrices())
def test_signal_properties(py):
    p, y = py
    c = p.shape[1]
    h = signals.entropy(p)
    assert np.all(h >= -1e-12) and np.all(h <= math.log(c) + 1e-9)
    mentr = signals.modified_entropy(p, y)
    assert np.all(mentr >= -1e-12)
    ce = signals.cross_entropy(p, y)
    assert np.all(ce >= 0) and np.all(ce <= -math.log(EPS) + 1e-9)
    # Logit scaling is increasing in the confidence (clearly different confidences).
    conf = signals.true_class_confidence(p, y)
    logit = signals.logit_confidence(p, y)
    lower = conf[:, None] < conf[None, :] - 1e-9
    assert np.all((logit[:, None] < logit[None, :])[lower])


@settings(max_examples=40, deadline=None)
@given(q=st.floats(min_value=1e-6, max_value=1 - 1e-6), r=st.floats(min_value=1e-6,
                                                                      max_value=1 - 1e-6))
def test_binary_modified_entropy_decreases_with_confidence(q, r):
    lo, hi = sorted((q, r))
    p = np.array([[lo, 1 - lo], [hi, 1 - hi]])
    m = signals.modified_entropy(p, np.array([0, 0]))
    assert m[1] <= m[0] + 1e-12


def test_modified_entropy_keeps_resolution_near_one():
    p = np.array([[1.0 - 1e-13, 1e-13, 0.0], [1.0 - 1e-13, 5e-14, 5e-14]])
    got = signals.modified_entropy(p, np.array([0, 0]))
    np.testing.assert_allclose(got, ref_modified_entropy(p, [0, 0]), rtol=1e-6)
    assert got[0] != got[1]
