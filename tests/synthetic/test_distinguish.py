"""Distinguishability: a cross-fitted forest separating synthetic rows from original rows."""

import numpy as np
import pandas as pd
import pytest

from privaudit.metrics import roc_auc
from privaudit.synthetic import independent_marginals
from privaudit.synthetic._distinguish import Distinguisher
from privaudit.synthetic._metadata import TableMetadata


def table(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(shift, 1, n)
    return pd.DataFrame({"x": x, "y": x + rng.normal(0, 0.3, n),
                         "colour": rng.choice(["red", "blue"], n),
                         "review": [f"the {w} was fine" for w in rng.choice(
                             ["soup", "room", "view"], n)]})


META = TableMetadata({"x": "numerical", "y": "numerical", "colour": "categorical",
                      "review": "text"})


def test_same_distribution_is_near_half_and_a_shift_is_caught():
    original = table(300, 0)
    same = Distinguisher(n_estimators=50, random_state=0).fit_score(table(300, 1), original,
                                                                     metadata=META)
    shifted = Distinguisher(n_estimators=50, random_state=0).fit_score(
        table(300, 2, shift=1.5), original, metadata=META)
    assert abs(same.metrics(n_bootstrap=0)["auc"]["value"] - 0.5) < 0.08
    assert shifted.metrics(n_bootstrap=0)["auc"]["value"] > 0.7
    assert same.out_of_fold and same.labels.sum() == 300
    extra = shifted.extra
    assert extra["synthetic_confidence"] > 0.5 > extra["original_confidence"]
    assert extra["fidelity_score"] == pytest.approx(1 - roc_auc(shifted.labels, shifted.scores))


def test_marginals_break_the_joint_structure_and_are_told_apart():
    original = table(400, 3)
    broken = independent_marginals(original, 400, random_state=0)  # y no longer follows x
    result = Distinguisher(n_estimators=60, random_state=0).fit_score(broken, original,
                                                                      metadata=META)
    assert result.metrics(n_bootstrap=0)["auc"]["value"] > 0.65


def test_seeded():
    a, b = table(80, 4), table(80, 5)
    one = Distinguisher(n_estimators=10, random_state=7).fit_score(a, b, metadata=META)
    two = Distinguisher(n_estimators=10, random_state=7).fit_score(a, b, metadata=META)
    np.testing.assert_array_equal(one.scores, two.scores)


@pytest.mark.parametrize(("kwargs", "param"), [({"n_splits": 1}, "n_splits"),
                                               ({"n_estimators": 0}, "n_estimators")])
def test_bad_settings_name_the_parameter(kwargs, param):
    with pytest.raises(ValueError, match=f"'{param}'"):
        Distinguisher(**kwargs).fit_score(table(20, 0), table(20, 1), metadata=META)


def test_too_few_rows_names_the_table():
    with pytest.raises(ValueError, match="'synthetic_data'"):
        Distinguisher().fit_score(table(3, 0), table(20, 1), metadata=META)


def test_missing_numbers_are_imputed_and_flagged():
    from privaudit.synthetic._distinguish import _imputed

    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 5.0], [3.0, np.nan, 7.0]])
    np.testing.assert_array_equal(_imputed(x), [[1, 0, 3, 0, 1], [2, 0, 5, 1, 1],
                                                [3, 0, 7, 0, 1]])
    # A generator that never leaves a gap is told apart by the flag alone.
    rng = np.random.default_rng(0)
    original = pd.DataFrame({"v": np.where(rng.random(200) < 0.5, np.nan, 1.0)})
    synthetic = pd.DataFrame({"v": np.ones(200)})
    result = Distinguisher(n_estimators=20, random_state=0).fit_score(
        synthetic, original, metadata=TableMetadata({"v": "numerical"}))
    assert result.metrics(n_bootstrap=0)["auc"]["value"] > 0.7


@pytest.mark.parametrize(("auc", "reading"), [
    ((0.358, 0.270, 0.444), "below chance: the classifier is systematically wrong"),
    ((0.45, 0.40, 0.52), "hard to tell apart"), ((0.9, 0.85, 0.95), "easy to tell apart")])
def test_the_reading_of_an_auc_rests_on_its_interval(auc, reading):
    from types import SimpleNamespace

    from privaudit.report._sections_synthetic import fidelity_row

    result = SimpleNamespace(target="s", extra={}, n_members=80, n_non_members=80)
    row = fidelity_row(result, {"auc": dict(zip(("value", "low", "high"), auc, strict=True))})
    assert row["reading"].startswith(reading)
