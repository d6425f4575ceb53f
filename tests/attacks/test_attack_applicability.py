"""Attacks that cannot run as asked say so up front, naming what to change (issue 6, section 4).

``check_attack_plan`` runs in ``audit_model`` before any query or training; each attack's
``fit`` gives the same message when used directly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.datasets import load_diabetes, load_digits
from sklearn.linear_model import LogisticRegression, Ridge

from privaudit import audit_model
from privaudit.attacks import attacks_for, check_attack_plan, get_attack
from privaudit.attacks.membership import (
    ConfidenceAttack,
    LabelOnlyAttack,
    LiRAAttack,
    ReferenceOutputs,
    RMIAAttack,
    ShadowModelAttack,
)
from privaudit.targets import ModelOutputs
from privaudit.training import ReferenceSpec

CLASSIFIER_ONLY = ["confidence", "entropy", "modified-entropy", "label-only", "lira-online",
                   "lira-offline", "rmia", "shadow", "trained-lr", "trained-rf"]


class ExplodingRegressor(RegressorMixin, BaseEstimator):
    """A recipe whose training must never start."""

    def fit(self, X, y):
        raise AssertionError("a reference model was trained before the plan was checked")


# --------------------------------------------------------------------------- the check


def test_attacks_for_each_task():
    assert attacks_for("regression") == ["gaussian-threshold", "loss", "quantile"]
    assert "gradient-norm" in attacks_for("regression", white_box=True)
    assert "label-only" in attacks_for("classification", probabilities=False)
    assert "lira-online" not in attacks_for("classification", probabilities=False)


@pytest.mark.parametrize("name", CLASSIFIER_ONLY)
def test_classifier_attacks_on_a_regressor_name_those_that_work(name):
    with pytest.raises(ValueError, match=rf"'attacks' parameter of audit_model .*regression "
                                         rf"target \(gaussian-threshold, loss, quantile\)\. "
                                         rf"Got <'{name}'"):
        check_attack_plan([name], task="regression", func="audit_model")


@pytest.mark.parametrize(("name", "n", "mode", "need"), [
    ("lira-online", 1, "online", 2),
    ("lira-offline", 1, "online", 2),
    ("rmia", 1, "offline", 2),
    ("rmia", 1, "online", 2),
])
def test_too_few_reference_models_name_the_parameter(name, n, mode, need):
    with pytest.raises(ValueError, match=rf"'n_reference_models' parameter .* at least {need} "
                                         rf"for {name} .*reference\.n_models"):
        check_attack_plan([name], task="classification", n_reference_models=n,
                          reference_mode=mode)


@pytest.mark.parametrize(("name", "params", "mode"), [
    ("lira-offline", {}, "offline"),
    ("shadow", {}, "offline"),
    ("rmia", {"offline": False}, "online"),
    ("rmia", {"offline_a": 0.3}, "offline"),
])
def test_one_reference_model_is_enough_for_some(name, params, mode):
    check_attack_plan([name], task="classification", n_reference_models=1,
                      reference_mode=mode, attack_params={name: params})
    assert get_attack(name, **params).min_reference_models(mode)[0] == 1


def test_white_box_and_cross_fitting_needs():
    with pytest.raises(TypeError, match="gradient-norm needs the weights"):
        check_attack_plan(["loss", "gradient-norm"], task="classification")
    check_attack_plan(["gradient-norm"], task="classification", white_box=True)
    with pytest.raises(ValueError, match="at least 5 members and 5 non-members for trained-lr"):
        check_attack_plan(["trained-lr"], task="classification", n_members=3,
                          n_non_members=40)
    with pytest.raises(ValueError, match="at least 3 members"):
        check_attack_plan(["trained-knn"], task="classification", n_members=2,
                          n_non_members=40, attack_params={"trained-knn": {"n_splits": 3}})


# --------------------------------------------------------------------------- audit_model


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    model = LogisticRegression(max_iter=200).fit(X[:100], y[:100])
    return {"model": model, "X": X[:200], "y": y[:200], "pop": (X[200:400], y[200:400]),
            "labels": np.r_[np.ones(100, int), np.zeros(100, int)]}


def test_audit_refuses_lira_on_a_regressor_before_training(tmp_path):
    X, y = load_diabetes(return_X_y=True)
    labels = np.r_[np.ones(100, int), np.zeros(100, int)]
    with pytest.raises(ValueError, match=r"work on a regression target \(gaussian-threshold, "
                                         r"loss, quantile\)\. Got <'lira-offline'"):
        audit_model(Ridge().fit(X[:100], y[:100]), X[:200], y[:200], labels,
                    attacks=["loss", "lira-offline"], population=(X[200:400], y[200:400]),
                    reference=ReferenceSpec(recipe=ExplodingRegressor()),
                    results_dir=tmp_path, n_jobs=1)
    assert not any(tmp_path.iterdir())  # not even the LOSS attack ran


def test_audit_refuses_rmia_with_one_model_before_any_work(digits, tmp_path):
    with pytest.raises(ValueError, match=r"'n_reference_models' parameter of audit_model must "
                                         r"be at least 2 for rmia"):
        audit_model(digits["model"], digits["X"], digits["y"], digits["labels"],
                    attacks=["loss", "rmia"], population=digits["pop"],
                    reference=ReferenceSpec(n_models=1), results_dir=tmp_path, n_jobs=1)
    assert not any(tmp_path.iterdir())


def test_audit_refuses_gradient_norm_on_sklearn_before_any_work(digits, tmp_path):
    with pytest.raises(TypeError, match="gradient-norm needs the weights"):
        audit_model(digits["model"], digits["X"], digits["y"], digits["labels"],
                    attacks=["loss", "gradient-norm"], results_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_audit_refuses_trained_attacks_on_too_few_members(digits):
    labels = np.zeros(200, int)
    labels[:3] = 1
    with pytest.raises(ValueError, match=r"'labels' parameter of audit_model .* trained-lr"):
        audit_model(digits["model"], digits["X"], digits["y"], labels,
                    attacks=["loss", "trained-lr"])


# --------------------------------------------------------------------------- direct fits


def _pool(n_models, n_records=20, *, audited_in=None, population_in=None, mode="online",
          regression=False):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=n_records)

    def outputs():
        if regression:
            return ModelOutputs.from_regression(y.astype(float), rng.normal(size=n_records))
        p = rng.dirichlet(np.ones(3), size=n_records)
        return ModelOutputs.from_probabilities(y, p, np.arange(3))

    if audited_in is None:
        audited_in = np.zeros((n_models, n_records), dtype=bool)
    if population_in is None:
        population_in = rng.random((n_models, n_records)) < 0.5
    return ReferenceOutputs(
        audited=tuple(outputs() for _ in range(n_models)), audited_in=audited_in,
        population=tuple(outputs() for _ in range(n_models)), population_in=population_in,
        mode=mode,
    ), outputs()


def test_lira_fit_with_one_model_names_the_parameter():
    pool, _ = _pool(1, audited_in=np.r_[[True] * 10, [False] * 10][None, :])
    with pytest.raises(ValueError, match=r"'reference' parameter of LiRAAttack.fit must be "
                                         r"outputs of at least 2 reference models for "
                                         r"lira-online .*n_reference_models"):
        LiRAAttack().fit(pool)


def test_rmia_fit_with_one_model_names_the_parameter():
    pool, out = _pool(1, mode="offline")
    with pytest.raises(ValueError, match=r"at least 2 reference models for rmia \(one "
                                         r"reference model plays the target"):
        RMIAAttack().fit(pool, out)


def test_rmia_fit_when_tuning_is_impossible_says_what_to_do():
    # Two models, each population record IN exactly one: a pseudo-target's records with an
    # OUT model left are all its members. This used to fail inside tune_rmia_offline_a.
    half = np.arange(20) % 2 == 0
    pool, out = _pool(2, mode="offline", population_in=np.stack([half, ~half]))
    with pytest.raises(ValueError, match=r"'reference' parameter of RMIAAttack.fit .*raise "
                                         r"n_reference_models.*or give offline_a a number"):
        RMIAAttack().fit(pool, out)
    assert np.all(np.isfinite(RMIAAttack(offline_a=0.3).fit(pool, out).score(outputs=out)))


@pytest.mark.parametrize("attack", [LiRAAttack(), LiRAAttack(online=False), RMIAAttack(),
                                    ShadowModelAttack()])
def test_reference_attacks_on_regression_outputs_name_those_that_work(attack):
    pool, out = _pool(4, mode="offline", regression=True)
    args = (pool, out) if isinstance(attack, RMIAAttack) else (pool,)
    with pytest.raises(ValueError, match=r"'reference' parameter .*attacks that work on a "
                                         r"regression target: gaussian-threshold, loss, "
                                         r"quantile\)"):
        attack.fit(*args)


@pytest.mark.parametrize("attack", [ConfidenceAttack(), LabelOnlyAttack(n_noise=2)])
def test_classifier_attacks_on_a_regressor_list_the_alternatives(attack):
    X, y = load_diabetes(return_X_y=True)
    model = Ridge().fit(X[:50], y[:50])
    with warnings.catch_warnings(), pytest.raises(
            ValueError, match=r"attacks that work on a regression target: gaussian-threshold"):
        warnings.simplefilter("ignore")
        attack.run(model, X[:20], y[:20], np.r_[np.ones(10, int), np.zeros(10, int)])
