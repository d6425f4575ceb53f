from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score

import privaudit.metrics as pm
from privaudit.exceptions import BaselineWarning, DegenerateInputWarning
from privaudit.results import DEFAULT_FPRS, AttackResult, fpr_key

# ----------------------------------------------------------------------------- construction


def test_defaults_and_dtypes() -> None:
    result = AttackResult(labels=[1, 0, 1, 0], scores=[3, 1, 2, 0])
    assert result.labels.dtype == np.int8
    assert result.scores.dtype == np.float64
    assert result.record_ids.dtype == np.int64
    np.testing.assert_array_equal(result.record_ids, np.arange(4))
    assert (result.n_records, result.n_members, result.n_non_members) == (4, 2, 2)
    assert result.parameters == {} and result.extra == {}
    assert result.predictions is None and result.raw_statistic is None
    assert "n_members=2" in repr(result) and "array" not in repr(result)


def test_booleans_and_string_ids() -> None:
    result = AttackResult(labels=[True, False], scores=[0.2, 0.1], record_ids=["a", "b"],
                          predictions=[True, True])
    np.testing.assert_array_equal(result.labels, [1, 0])
    np.testing.assert_array_equal(result.predictions, [1, 1])
    assert result.record_ids.dtype == object
    assert list(result.record_ids) == ["a", "b"]


def test_raw_statistic_gets_a_default_name() -> None:
    result = AttackResult(labels=[1, 0], scores=[1.0, 0.0], raw_statistic=[0.0, 1.0])
    assert result.raw_statistic_name == "raw_statistic"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"labels": [0, 2], "scores": [0, 1]}, ValueError,
         r"^The 'labels' parameter of AttackResult must be 0/1 \(1 = member\)\. "
         r"Got <values such as \[2\]> instead\.$"),
        ({"labels": [0, 1], "scores": [0, np.nan]}, ValueError,
         "The 'scores' parameter of AttackResult must be finite"),
        ({"labels": [0, 1], "scores": [0, 1, 2]}, ValueError,
         r"The 'scores' parameter of AttackResult must be the same length as 'labels' \(2\)"),
        ({"labels": [0, 1], "scores": [0, 1], "record_ids": [1]}, ValueError,
         "The 'record_ids' parameter of AttackResult must be the same length"),
        ({"labels": [0, 1], "scores": [0, 1], "record_ids": [0.5, 1.5]}, TypeError,
         "The 'record_ids' parameter of AttackResult must be integers or strings"),
        ({"labels": [0, 1], "scores": [0, 1], "record_ids": [[1], [2]]}, ValueError,
         "The 'record_ids' parameter of AttackResult must be a 1-D array"),
        ({"labels": [0, 1], "scores": [0, 1], "predictions": [0, 3]}, ValueError,
         "The 'predictions' parameter of AttackResult must be 0/1"),
        ({"labels": [0, 1], "scores": [0, 1], "predictions": [0]}, ValueError,
         "The 'predictions' parameter of AttackResult must be the same length"),
        ({"labels": [0, 1], "scores": [0, 1], "raw_statistic": [0]}, ValueError,
         "The 'raw_statistic' parameter of AttackResult must be the same length"),
        ({"labels": [0, 1], "scores": [0, 1], "kind": "membershp"}, ValueError,
         "The 'kind' parameter of AttackResult must be 'membership' or 'attribute'"),
        ({"labels": [0, 1], "scores": [0, 1], "raw_statistic": [1, 0],
          "raw_statistic_name": "score"}, ValueError,
         "The 'raw_statistic_name' parameter of AttackResult must be none of"),
        ({"labels": [0, 1], "scores": [0, 1], "attack": 3}, TypeError,
         "The 'attack' parameter of AttackResult must be a string"),
        ({"labels": [0, 1], "scores": [0, 1], "parameters": [("a", 1)]}, TypeError,
         "The 'parameters' parameter of AttackResult must be a dict"),
    ],
)
def test_bad_input_is_refused_with_the_template(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        AttackResult(**kwargs)


# ----------------------------------------------------------------------------- metrics


def test_metrics_values_are_the_metric_functions(make_result) -> None:
    result = make_result(150, 250, 0.8, predictions=True, seed=3, raw_advantage=0.9)
    y, s, p = result.labels, result.scores, result.predictions
    m = result.metrics(n_bootstrap=0)
    assert m["n_members"] == 150 and m["n_non_members"] == 250
    assert m["auc"]["value"] == pm.roc_auc(y, s)
    assert m["advantage"]["value"] == pm.advantage(y, s)
    assert m["effective_epsilon"]["value"] == pm.effective_epsilon(y, s)
    assert list(m["tpr_at_fpr"]) == ["0.0", "0.001", "0.01", "0.1"]
    for fpr in DEFAULT_FPRS:
        assert m["tpr_at_fpr"][fpr_key(fpr)]["value"] == pm.tpr_at_fpr(y, s, fpr)
    binary = pm.binary_metrics(y, p)
    for name in ("accuracy", "true_positive_rate", "false_positive_rate", "precision"):
        assert m[name]["value"] == getattr(binary, name)
    assert m["mia_advantage"]["value"] == binary.advantage
    assert m["privacy_gain"]["value"] == pm.privacy_gain(y, p, raw_advantage=0.9)
    # and, as a cross-check outside privaudit, scikit-learn's AUC
    assert m["auc"]["value"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_bootstrap_intervals_share_one_seed_and_contain_values(make_result) -> None:
    result = make_result(300, 300, 1.0, predictions=True, seed=1)
    y, s = result.labels, result.scores
    m = result.metrics(n_bootstrap=200, random_state=7)
    # Every bootstrapped metric is resampled with the same seed, drawn once from random_state.
    seed = int(np.random.default_rng(7).integers(2**63 - 1))
    auc = pm.bootstrap_ci(pm.roc_auc, y, s, n_resamples=200, random_state=seed)
    assert (m["auc"]["low"], m["auc"]["high"]) == (auc.low, auc.high)
    adv = pm.bootstrap_ci(pm.advantage, y, s, n_resamples=200, random_state=seed)
    assert (m["advantage"]["low"], m["advantage"]["high"]) == (adv.low, adv.high)
    for name in ("auc", "advantage", "mia_advantage", "privacy_gain", "accuracy",
                 "true_positive_rate", "false_positive_rate", "precision"):
        e = m[name]
        assert e["low"] <= e["value"] <= e["high"], name
        assert e["low"] < e["high"], name
    e = m["tpr_at_fpr"]["0.1"]
    assert e["low"] <= e["value"] <= e["high"]
    assert m["interval_method"] == {
        "auc": "bootstrap", "advantage": "bootstrap", "tpr_at_fpr": "bootstrap",
        "effective_epsilon": "none", "accuracy": "clopper-pearson",
        "true_positive_rate": "clopper-pearson", "false_positive_rate": "clopper-pearson",
        "precision": "clopper-pearson", "mia_advantage": "bootstrap",
        "privacy_gain": "bootstrap",
    }
    assert math.isnan(m["effective_epsilon"]["low"])
    assert (m["confidence"], m["n_bootstrap"]) == (0.95, 200)


def test_rate_intervals_are_scipy_clopper_pearson(make_result) -> None:
    result = make_result(120, 80, 0.7, predictions=True, seed=2)
    y, p = result.labels, result.predictions
    m = result.metrics(n_bootstrap=0, confidence=0.9)
    counts = {
        "accuracy": (int(np.sum(p == y)), y.size),
        "true_positive_rate": (int(p[y == 1].sum()), int(y.sum())),
        "false_positive_rate": (int(p[y == 0].sum()), int((y == 0).sum())),
        "precision": (int(y[p == 1].sum()), int(p.sum())),
    }
    for name, (k, n) in counts.items():
        ci = stats.binomtest(k, n).proportion_ci(0.9, method="exact")
        assert m[name]["value"] == pytest.approx(k / n, abs=1e-15)
        assert m[name]["low"] == pytest.approx(ci.low, abs=1e-10), name
        assert m[name]["high"] == pytest.approx(ci.high, abs=1e-10), name


def test_no_bootstrap_gives_nan_bounds_and_unknown_flag(make_result) -> None:
    m = make_result(predictions=True).metrics(n_bootstrap=0)
    for name in ("auc", "advantage", "mia_advantage", "privacy_gain"):
        assert not math.isnan(m[name]["value"])
        assert math.isnan(m[name]["low"]) and math.isnan(m[name]["high"])
    assert math.isfinite(m["accuracy"]["low"])  # exact intervals cost nothing
    assert m["better_than_random"] is None
    assert m["interval_method"]["auc"] == "none"


def test_metrics_without_predictions_have_no_prediction_keys(make_result) -> None:
    m = make_result().metrics(n_bootstrap=0)
    assert "accuracy" not in m and "privacy_gain" not in m


def test_metrics_are_reproducible(make_result) -> None:
    result = make_result(seed=4)
    a = result.metrics(n_bootstrap=50, random_state=3)
    b = result.metrics(n_bootstrap=50, random_state=3)
    c = result.metrics(n_bootstrap=50, random_state=4)
    assert a == b
    assert a["auc"]["low"] != c["auc"]["low"]


def test_custom_fprs_and_their_validation(make_result) -> None:
    result = make_result()
    m = result.metrics(fprs=[0.05, 1e-5, 0.05], n_bootstrap=0)
    assert list(m["tpr_at_fpr"]) == ["0.05", "1e-05"]
    with pytest.raises(ValueError, match=r"The 'fprs' parameter of AttackResult.metrics"):
        result.metrics(fprs=[1.0])
    with pytest.raises(TypeError, match="The 'fprs' parameter"):
        result.metrics(fprs=0.1)
    with pytest.raises(ValueError, match="The 'n_bootstrap' parameter"):
        result.metrics(n_bootstrap=-1)


def test_one_class_only_is_nan_with_a_warning() -> None:
    result = AttackResult(labels=[1, 1, 1], scores=[0.1, 0.5, 0.9])
    with pytest.warns(DegenerateInputWarning):
        m = result.metrics(n_bootstrap=20)
    assert math.isnan(m["auc"]["value"])
    assert m["better_than_random"] is None


# ----------------------------------------------------------------------------- baseline


def test_strong_attack_beats_the_baseline_silently(make_result) -> None:
    result = make_result(shift=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert result.check_baseline(n_bootstrap=200) is True
    assert result.metrics(n_bootstrap=200)["better_than_random"] is True


def test_random_attack_warns_and_is_flagged(make_result) -> None:
    result = make_result(shift=0.0, seed=5)
    with pytest.warns(BaselineWarning, match="no better than random"):
        assert result.check_baseline(n_bootstrap=200) is False
    assert result.metrics(n_bootstrap=200)["better_than_random"] is False
    with pytest.raises(ValueError, match="n_bootstrap"):
        result.check_baseline(n_bootstrap=0)


# ----------------------------------------------------------------------------- conventions


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(-20, 20)), min_size=2, max_size=60).filter(
        lambda rows: 0 < sum(r[0] for r in rows) < len(rows)
    )
)
def test_both_sign_conventions_give_the_same_auc(rows) -> None:
    labels = np.array([r[0] for r in rows], dtype=int)
    scores = np.array([r[1] for r in rows], dtype=float) / 4  # ties on purpose
    result = AttackResult(labels=labels, scores=scores)
    ours = result.scores_as("privaudit")
    theirs = result.scores_as("open-unlearning")
    np.testing.assert_array_equal(theirs.labels, 1 - labels)  # 0 = forget (member)
    auc = pm.roc_auc(ours.labels, ours.scores)
    assert pm.roc_auc(theirs.labels, theirs.scores) == pytest.approx(auc, abs=1e-12)
    assert roc_auc_score(theirs.labels, theirs.scores) == pytest.approx(auc, abs=1e-12)


def test_open_unlearning_view_of_a_loss_attack_is_the_loss() -> None:
    # A LOSS attack scores -loss; open-unlearning's score for it is the loss itself.
    loss = np.array([0.3, 2.0, 0.1, 1.5])
    result = AttackResult(labels=[1, 0, 1, 0], scores=-loss, raw_statistic=loss,
                          raw_statistic_name="avg_loss")
    view = result.scores_as("open-unlearning")
    np.testing.assert_array_equal(view.scores, loss)
    frame = result.to_frame(convention="open-unlearning")
    np.testing.assert_array_equal(frame["score"], frame["avg_loss"])
    np.testing.assert_array_equal(frame["label"], [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"The 'convention' parameter of AttackResult\.scores_as"):
        result.scores_as("sklearn")


# ----------------------------------------------------------------------------- views


def test_to_frame_columns_and_values(make_result) -> None:
    full = make_result(n_members=3, n_non_members=2, predictions=True, raw=True)
    frame = full.to_frame()
    assert list(frame.columns) == ["record_id", "label", "score", "prediction", "loss"]
    np.testing.assert_array_equal(frame["score"], full.scores)
    np.testing.assert_array_equal(frame["loss"], full.raw_statistic)
    np.testing.assert_array_equal(frame["prediction"], full.predictions)
    bare = make_result(n_members=3, n_non_members=2).to_frame()
    assert list(bare.columns) == ["record_id", "label", "score"]


def test_to_dict_is_strict_json(make_result) -> None:
    result = make_result(predictions=True, parameters={"k": np.int64(3), "grid": (1, 2)},
                         extra={"theory": np.float64(0.25), "missing": float("nan"),
                                "arr": np.arange(3)})
    doc = result.to_dict(n_bootstrap=0)
    text = json.dumps(doc, allow_nan=False)  # no NaN token anywhere
    back = json.loads(text)
    assert back["parameters"] == {"k": 3, "grid": [1, 2]}
    assert back["extra"] == {"theory": 0.25, "missing": None, "arr": [0, 1, 2]}
    assert back["metrics"]["auc"]["low"] is None  # NaN bound written as null
    assert back["metrics"]["tpr_at_fpr"]["0.01"]["value"] == result.metrics(
        n_bootstrap=0)["tpr_at_fpr"]["0.01"]["value"]
    assert {"attack", "target", "dataset", "generator", "kind"} <= set(back)


def test_to_dict_names_what_is_not_serialisable(make_result) -> None:
    result = make_result(extra={"model": object()})
    with pytest.raises(TypeError, match=r"AttackResult.extra\['model'\] must be JSON"):
        result.to_dict(n_bootstrap=0)
