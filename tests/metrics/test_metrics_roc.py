"""roc_curve, roc_auc, tpr_at_fpr, advantage: reference, sklearn, properties, pinned, bad input."""

from __future__ import annotations

import itertools
import math
import warnings

import metrics_reference as ref
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import advantage, roc_auc, roc_curve, tpr_at_fpr


def random_cases(seed: int, count: int):
    """Random (labels, scores) with both classes; half of them with heavy ties."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(2, 40))
        labels = rng.integers(0, 2, n)
        labels[:2] = [0, 1]
        rng.shuffle(labels)
        if i % 2:
            scores = rng.integers(0, 4, n).astype(float)  # heavy ties
        else:
            scores = rng.normal(size=n) + labels * rng.uniform(0, 2)
        yield labels, scores


# (1) slow reference implementations ------------------------------------------------


@pytest.mark.parametrize("case", list(random_cases(0, 60)))
def test_matches_reference_implementations(case):
    labels, scores = case
    assert roc_auc(labels, scores) == pytest.approx(ref.auc(labels, scores), abs=1e-12)
    assert advantage(labels, scores) == pytest.approx(ref.advantage(labels, scores), abs=1e-12)
    for fpr in (0.0, 0.01, 0.1, 0.25, 0.5, 0.999):
        assert tpr_at_fpr(labels, scores, fpr) == pytest.approx(
            ref.tpr_at_fpr(labels, scores, fpr), abs=1e-12
        )
    curve = roc_curve(labels, scores, drop_intermediate=False)
    points = ref.roc_points(labels, scores)
    np.testing.assert_allclose(curve.fpr, [p[0] for p in points], atol=1e-12)
    np.testing.assert_allclose(curve.tpr, [p[1] for p in points], atol=1e-12)
    np.testing.assert_array_equal(curve.thresholds, [p[2] for p in points])


# (2) cross-checks with scikit-learn ---------------------------------------------------


@pytest.mark.parametrize("drop_intermediate", [True, False])
def test_roc_curve_is_sklearn_roc_curve(drop_intermediate):
    for labels, scores in random_cases(1, 100):
        ours = roc_curve(labels, scores, drop_intermediate=drop_intermediate)
        theirs = sk_roc_curve(labels, scores, drop_intermediate=drop_intermediate)
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, b)


def test_roc_auc_is_sklearn_roc_auc_score():
    for labels, scores in random_cases(2, 200):
        assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 50_000)
    scores = np.round(rng.normal(size=50_000) + 0.3 * labels, 2)
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


def test_accepts_booleans_lists_and_integer_scores():
    labels = [True, False, True, False]
    scores = [3, 1, 2, 2]
    assert roc_auc(labels, scores) == roc_auc_score(labels, scores)
    ours = roc_curve(labels, scores)
    theirs = sk_roc_curve(labels, scores)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


# (3) properties ---------------------------------------------------------------------

samples = st.lists(
    st.tuples(st.integers(0, 1), st.integers(-6, 6)), min_size=2, max_size=40
).filter(lambda rows: len({label for label, _ in rows}) == 2)


def split(rows):
    labels = np.array([r[0] for r in rows])
    scores = np.array([r[1] for r in rows], dtype=float)
    return labels, scores


@settings(max_examples=80, deadline=None)
@given(samples)
def test_auc_invariant_to_strictly_increasing_transforms(rows):
    labels, scores = split(rows)
    auc = roc_auc(labels, scores)
    # Exact on integers in [-6, 6]: ties and order are preserved, no rounding collision.
    for transformed in (3 * scores + 7, scores**3, np.exp(scores / 3), np.arctan(scores)):
        assert roc_auc(labels, transformed) == pytest.approx(auc, abs=1e-12)
    assert advantage(labels, np.exp(scores / 3)) == pytest.approx(
        advantage(labels, scores), abs=1e-12
    )


@settings(max_examples=80, deadline=None)
@given(samples)
def test_auc_of_negated_scores_is_one_minus_auc(rows):
    labels, scores = split(rows)
    assert roc_auc(labels, -scores) == pytest.approx(1 - roc_auc(labels, scores), abs=1e-12)
    # Swapping the roles of members and non-members is the same reflection.
    assert roc_auc(1 - labels, scores) == pytest.approx(1 - roc_auc(labels, scores), abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(samples, st.lists(st.floats(0, 0.999), min_size=2, max_size=6))
def test_tpr_at_fpr_is_monotone_in_fpr(rows, fprs):
    labels, scores = split(rows)
    values = [tpr_at_fpr(labels, scores, f) for f in sorted(fprs)]
    assert all(a <= b for a, b in itertools.pairwise(values))
    assert all(0 <= v <= 1 for v in values)


@settings(max_examples=80, deadline=None)
@given(samples)
def test_advantage_in_unit_interval_and_consistent_with_auc(rows):
    labels, scores = split(rows)
    adv = advantage(labels, scores)
    auc = roc_auc(labels, scores)
    assert 0 <= adv <= 1
    # Every ROC point (and segment) has TPR <= FPR + adv, hence
    # AUC - 1/2 = integral of (TPR - FPR) <= adv and AUC <= 1 - (1 - adv)^2 / 2.
    assert auc - 0.5 <= adv + 1e-12
    assert auc <= 1 - (1 - adv) ** 2 / 2 + 1e-12


# (4) pinned numbers worked out by hand -----------------------------------------------

# Members score 0.9, 0.8, 0.3; non-members 0.8, 0.3, 0.1 (one tie at 0.8, one at 0.3).
PIN_LABELS = [1, 1, 0, 0, 1, 0]
PIN_SCORES = [0.9, 0.8, 0.8, 0.3, 0.3, 0.1]


def test_pinned_auc():
    # Pairs (member, non-member), 3 x 3 = 9:
    #   0.9 beats 0.8, 0.3, 0.1                 -> 3
    #   0.8 ties 0.8 (1/2), beats 0.3, 0.1      -> 2.5
    #   0.3 loses to 0.8, ties 0.3, beats 0.1   -> 1.5
    # AUC = 7 / 9.
    assert roc_auc(PIN_LABELS, PIN_SCORES) == pytest.approx(7 / 9, abs=1e-15)


def test_pinned_roc_curve():
    # Thresholds inf, 0.9, 0.8, 0.3, 0.1 -> (FP, TP) = (0,0), (0,1), (1,2), (2,3), (3,3).
    full = roc_curve(PIN_LABELS, PIN_SCORES, drop_intermediate=False)
    np.testing.assert_array_equal(full.thresholds, [np.inf, 0.9, 0.8, 0.3, 0.1])
    np.testing.assert_allclose(full.fpr, [0, 0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(full.tpr, [0, 1 / 3, 2 / 3, 1, 1])
    # Without the prepended point: fps = [0, 1, 2, 3], tps = [1, 2, 3, 3]; second
    # differences fps [0, 0], tps [0, -1] -> the 0.8 point is collinear, dropped.
    dropped = roc_curve(PIN_LABELS, PIN_SCORES)
    np.testing.assert_array_equal(dropped.thresholds, [np.inf, 0.9, 0.3, 0.1])
    np.testing.assert_allclose(dropped.fpr, [0, 0, 2 / 3, 1])
    np.testing.assert_allclose(dropped.tpr, [0, 1 / 3, 1, 1])


def test_pinned_tpr_at_fpr_and_advantage():
    # FPR 0: only 0.9 is above every non-member -> 1/3.
    assert tpr_at_fpr(PIN_LABELS, PIN_SCORES, 0.0) == pytest.approx(1 / 3)
    # FPR <= 0.5: points with FPR 0 and 1/3 -> best TPR 2/3 (threshold 0.8).
    assert tpr_at_fpr(PIN_LABELS, PIN_SCORES, 0.5) == pytest.approx(2 / 3)
    # FPR <= 2/3 (the same float as 2 / 3 computed by the curve) -> TPR 1.
    assert tpr_at_fpr(PIN_LABELS, PIN_SCORES, 2 / 3) == pytest.approx(1.0)
    # TPR - FPR over the points: 0, 1/3, 1/3, 1/3, 0 -> 1/3.
    assert advantage(PIN_LABELS, PIN_SCORES) == pytest.approx(1 / 3)


def test_tpr_at_fpr_uses_collinear_points_dropped_from_the_plot():
    # Points (0, 0), (1/2, 1/2), (1, 1): the middle one is collinear and dropped from the
    # plotted curve, but an attacker can pick it: TPR at FPR <= 0.5 is 0.5, not 0.
    labels = [1, 0, 1, 0]
    scores = [2.0, 2.0, 1.0, 1.0]
    assert len(roc_curve(labels, scores).fpr) == 3
    assert tpr_at_fpr(labels, scores, 0.5) == pytest.approx(0.5)


def test_fpr_boundary_is_compared_like_the_curve():
    # 29 of 100 non-members above the threshold: FPR 29/100 == 0.29 as floats, admitted.
    labels = np.r_[np.zeros(100, int), np.ones(10, int)]
    scores = np.r_[np.arange(100) >= 71, np.ones(10)].astype(float)
    assert tpr_at_fpr(labels, scores, 0.29) == 1.0
    assert tpr_at_fpr(labels, scores, 0.289) == 0.0


# bad and degenerate input ----------------------------------------------------------

FUNCS = {
    "roc_auc": roc_auc,
    "advantage": advantage,
    "roc_curve": roc_curve,
    "tpr_at_fpr": lambda y, s: tpr_at_fpr(y, s, 0.1),
}


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize(
    ("labels", "scores", "match"),
    [
        ([0, 1, 1], [0.1, np.nan, 0.3], "finite"),
        ([0, 1, 1], [0.1, np.inf, 0.3], "finite"),
        ([0, 1, 1], [0.1, 0.2], "same length"),
        ([0, 1, 2], [0.1, 0.2, 0.3], r"0/1 \(1 = member\)"),
        ([0, 1, -1], [0.1, 0.2, 0.3], r"0/1"),
        ([0, 0.5, 1], [0.1, 0.2, 0.3], r"0/1"),
        ([], [], "non-empty"),
        ([0, 1], [[0.1, 0.2]], "1-D"),
    ],
)
def test_bad_input_raises_value_error_naming_the_parameter(name, labels, scores, match):
    with pytest.raises(ValueError, match=match) as info:
        FUNCS[name](labels, scores)
    assert "parameter of" in str(info.value)


def test_string_labels_raise_type_error():
    with pytest.raises(TypeError, match="'labels'"):
        roc_auc(["a", "b"], [0.1, 0.2])


@pytest.mark.parametrize("fpr", [-0.1, 1.0, 1.5, float("nan"), float("inf")])
def test_fpr_outside_unit_interval(fpr):
    with pytest.raises(ValueError, match=r"The 'fpr' parameter of tpr_at_fpr must be"):
        tpr_at_fpr([0, 1], [0.1, 0.2], fpr)


def test_fpr_not_a_number():
    with pytest.raises(TypeError, match="'fpr'"):
        tpr_at_fpr([0, 1], [0.1, 0.2], "0.1")


@pytest.mark.parametrize("name", ["roc_auc", "advantage", "tpr_at_fpr"])
@pytest.mark.parametrize("labels", [[1, 1, 1], [0, 0, 0]])
def test_one_class_gives_nan_and_warning(name, labels):
    with pytest.warns(DegenerateInputWarning, match="only"):
        value = FUNCS[name](labels, [0.1, 0.2, 0.3])
    assert math.isnan(value)


def test_one_class_roc_curve_has_nan_rates_like_sklearn():
    with pytest.warns(DegenerateInputWarning):
        curve = roc_curve([1, 1, 1], [0.1, 0.2, 0.3], drop_intermediate=False)
    assert np.all(np.isnan(curve.fpr))
    np.testing.assert_allclose(curve.tpr, [0, 1 / 3, 2 / 3, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn's UndefinedMetricWarning
        theirs = sk_roc_curve([1, 1, 1], [0.1, 0.2, 0.3])
        ours = roc_curve([1, 1, 1], [0.1, 0.2, 0.3])
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_constant_scores_are_valid_not_degenerate():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert roc_auc([0, 1, 0, 1], [0.5] * 4) == 0.5
        assert advantage([0, 1, 0, 1], [0.5] * 4) == 0.0
        assert tpr_at_fpr([0, 1, 0, 1], [0.5] * 4, 0.5) == 0.0


def test_large_input_runs_in_n_log_n():
    # An O(n^2) implementation would not finish on 200,000 records.
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200_000)
    scores = rng.normal(size=200_000) + labels
    # Gaussian mean shift 1: AUC = Phi(1 / sqrt 2) = 0.760, advantage = 2 Phi(1/2) - 1
    # = 0.383, TPR at FPR 0.001 = Phi(1 - 3.09) = 0.018.
    assert roc_auc(labels, scores) == pytest.approx(0.760, abs=0.005)
    assert advantage(labels, scores) == pytest.approx(0.383, abs=0.01)
    assert tpr_at_fpr(labels, scores, 0.001) == pytest.approx(0.018, abs=0.01)
