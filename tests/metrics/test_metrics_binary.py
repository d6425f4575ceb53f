"""binary_metrics and privacy_gain: reference, sklearn, properties, pinned, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, confusion_matrix, precision_score

from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import BinaryMetrics, binary_metrics, privacy_gain

# Members: 4, guessed member 3 of them. Non-members: 6, guessed member 2 of them.
LABELS = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
GUESSES = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]


def reference(labels, guesses):
    """Counting by hand, one record at a time."""
    tp = fp = tn = fn = 0
    for y, g in zip(labels, guesses, strict=True):
        if y == 1 and g == 1:
            tp += 1
        elif y == 0 and g == 1:
            fp += 1
        elif y == 0 and g == 0:
            tn += 1
        else:
            fn += 1
    tpr = tp / (tp + fn)
    fpr = fp / (fp + tn)
    return (tp + tn) / len(labels), tpr, fpr, tp / (tp + fp), tpr - fpr


def test_pinned_numbers():
    # TP = 3, FN = 1, FP = 2, TN = 4.
    # accuracy = (3 + 4) / 10 = 0.7; TPR = 3/4; FPR = 2/6 = 1/3; precision = 3/5;
    # advantage = 3/4 - 1/3 = 5/12.
    m = binary_metrics(LABELS, GUESSES)
    assert isinstance(m, BinaryMetrics)
    assert m.accuracy == pytest.approx(0.7)
    assert m.true_positive_rate == pytest.approx(0.75)
    assert m.false_positive_rate == pytest.approx(1 / 3)
    assert m.precision == pytest.approx(0.6)
    assert m.advantage == pytest.approx(5 / 12)
    # TAPAS: privacy gain = 1 - advantage = 7/12; Stadler's scale: (1 - 5/12) / 4 = 7/48.
    assert privacy_gain(LABELS, GUESSES) == pytest.approx(7 / 12)
    assert privacy_gain(LABELS, GUESSES, convention="stadler") == pytest.approx(7 / 48)
    # Against a raw-data adversary with advantage 0.5: 0.5 - 5/12 = 1/12.
    assert privacy_gain(LABELS, GUESSES, raw_advantage=0.5) == pytest.approx(1 / 12)


def test_stadler_convention_matches_their_record_privacy_gain():
    # spring-epfl/synthetic_data_release: PL = P[success] - P[prior], PG = (PL_R - PL_S)/2,
    # P[success] on raw data = 1, prior = 1/2, P[success] on synthetic data = balanced
    # accuracy of the guesses.
    m = binary_metrics(LABELS, GUESSES)
    p_success = (m.true_positive_rate + 1 - m.false_positive_rate) / 2
    pl_raw, pl_syn = 1 - 0.5, p_success - 0.5
    assert privacy_gain(LABELS, GUESSES, convention="stadler") == pytest.approx(
        (pl_raw - pl_syn) / 2
    )
    # A random guesser gives PG = 0.25, the reference line of their plots.
    assert privacy_gain([1, 0], [1, 1], convention="stadler") == pytest.approx(0.25)


@pytest.mark.parametrize("seed", range(20))
def test_matches_reference_and_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 60))
    labels = rng.integers(0, 2, n)
    labels[:2] = [0, 1]
    guesses = rng.integers(0, 2, n)
    guesses[0] = 1
    m = binary_metrics(labels, guesses)
    np.testing.assert_allclose(tuple(m), reference(labels, guesses), atol=1e-12)
    tn, fp, fn, tp = confusion_matrix(labels, guesses, labels=[0, 1]).ravel()
    assert m.accuracy == pytest.approx(accuracy_score(labels, guesses))
    assert m.precision == pytest.approx(precision_score(labels, guesses))
    assert m.true_positive_rate == pytest.approx(tp / (tp + fn))
    assert m.false_positive_rate == pytest.approx(fp / (fp + tn))
    assert privacy_gain(labels, guesses) == pytest.approx(1 - m.advantage)


@pytest.mark.filterwarnings("ignore::privaudit.exceptions.DegenerateInputWarning")
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=2, max_size=50).filter(
        lambda rows: len({r[0] for r in rows}) == 2
    )
)
def test_properties(rows):
    labels = [r[0] for r in rows]
    guesses = [r[1] for r in rows]
    m = binary_metrics(labels, guesses)
    assert -1 <= m.advantage <= 1
    assert 0 <= m.accuracy <= 1
    assert 0 <= privacy_gain(labels, guesses) <= 2
    # Flipping every guess flips the sign of the advantage.
    flipped = binary_metrics(labels, [1 - g for g in guesses])
    assert flipped.advantage == pytest.approx(-m.advantage)
    # Guessing the truth is the best adversary: advantage 1, no privacy gain.
    assert binary_metrics(labels, labels).advantage == 1
    assert privacy_gain(labels, labels) == 0


def test_no_member_guess_gives_nan_precision_and_warning():
    with pytest.warns(DegenerateInputWarning, match="precision"):
        m = binary_metrics([1, 0, 1], [0, 0, 0])
    assert math.isnan(m.precision)
    assert m.true_positive_rate == 0 and m.false_positive_rate == 0 and m.advantage == 0


@pytest.mark.parametrize("labels", [[1, 1, 1], [0, 0, 0]])
def test_one_class_gives_nan_rates_and_warning(labels):
    with pytest.warns(DegenerateInputWarning, match="only"):
        m = binary_metrics(labels, [1, 0, 1])
    assert math.isnan(m.advantage)
    assert m.accuracy == pytest.approx(np.mean(np.array(labels) == [1, 0, 1]))
    with pytest.warns(DegenerateInputWarning):
        assert math.isnan(privacy_gain(labels, [1, 0, 1]))


@pytest.mark.parametrize(
    ("labels", "predictions", "match"),
    [
        ([0, 1], [0, 1, 1], "'predictions'.*same length"),
        ([0, 1], [0, 0.5], "'predictions'.*0/1"),
        ([0, 1], [0, 2], "'predictions'.*0/1"),
        ([0, 2], [0, 1], "'labels'.*0/1"),
        ([], [], "non-empty"),
    ],
)
def test_bad_input(labels, predictions, match):
    with pytest.raises(ValueError, match=match):
        binary_metrics(labels, predictions)
    with pytest.raises(ValueError, match=match):
        privacy_gain(labels, predictions)


def test_bad_privacy_gain_options():
    with pytest.raises(ValueError, match="'raw_advantage' parameter of privacy_gain"):
        privacy_gain([0, 1], [0, 1], raw_advantage=1.5)
    with pytest.raises(ValueError, match="'convention'"):
        privacy_gain([0, 1], [0, 1], convention="paper")
