"""An attack whose statistic is undefined on a target gives a result with no information.

A constant model (every record gets the same answer) leaves LiRA's pooled variance at 0:
its likelihood ratio is undefined, and every score NaN. The audit must keep its other
attacks' results and show this one as uninformative (AUC 0.5, a warning), not fail as a
whole on AttackResult's finite scores.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.dummy import DummyClassifier

import privaudit
from privaudit.attacks.membership import LiRAAttack
from privaudit.exceptions import DegenerateInputWarning
from privaudit.results import AttackResult


@pytest.fixture(scope="module")
def constant():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(240, 4)), rng.integers(0, 2, 240)
    labels = np.r_[np.ones(60), np.zeros(60)].astype(int)
    return DummyClassifier(strategy="uniform").fit(X[:60], y[:60]), X, y, labels


def test_a_constant_model_keeps_every_attack_and_lira_shows_no_information(constant):
    model, X, y, labels = constant
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = privaudit.audit_model(
            model, X[:120], y[:120], labels, population=(X[120:], y[120:]),
            attacks=["loss", "lira-online", "lira-offline"],
            recipe=DummyClassifier(strategy="uniform"), n_reference_models=4, random_state=0)
    by_attack = {r.attack: r for r in report}
    assert set(by_attack) == {"loss", "lira-online", "lira-offline"}
    for name in ("lira-online", "lira-offline"):
        result = by_attack[name]
        assert np.all(result.scores == 0) and result.predictions is None
        assert "no information" in result.extra["degenerate"]
        assert result.metrics(n_bootstrap=0)["auc"]["value"] == 0.5
    messages = [str(w.message) for w in caught if issubclass(w.category, DegenerateInputWarning)]
    assert any("LiRAAttack.run: every score is NaN" in m for m in messages)


def test_scores_nan_on_some_records_only_are_still_refused():
    """Only a statistic undefined everywhere is 'no information'; a partial NaN is a bug."""
    attack = LiRAAttack()
    with pytest.raises(ValueError, match="scores"):
        attack._package(labels=np.r_[1, 0].astype(np.int8), scores=np.r_[np.nan, 1.0],
                        target_name="m", record_ids=None, dataset="", raw=None, raw_name="",
                        extra={})
    assert isinstance(attack._package(
        labels=np.r_[1, 0].astype(np.int8), scores=np.r_[0.5, 1.0], target_name="m",
        record_ids=None, dataset="", raw=None, raw_name="", extra={}), AttackResult)


def test_the_report_calls_a_result_with_no_information_not_interpretable(constant):
    """AUC 0.5 from scores of 0 is no evidence of safety: the verdict must not say 'minimal'."""
    model, X, y, labels = constant
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = privaudit.audit_model(
            model, X[:120], y[:120], labels, population=(X[120:], y[120:]),
            attacks=["lira-online"], recipe=DummyClassifier(strategy="uniform"),
            n_reference_models=4, random_state=0)
    verdict = report.with_settings(n_bootstrap=0).verdict
    assert verdict.severity == "undefined" and "measured nothing" in verdict.text
