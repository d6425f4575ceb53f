"""Common checks run over every registered attack, as scikit-learn's check_estimator does
(issue 7, section 2): __init__ stores only, get/set_params, clone, fit returns self, a clear
NotFittedError, seeding, score shape and dtype, label-only targets refused when needed."""

import inspect

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler
from torch import nn

from privaudit import NotFittedError
from privaudit.attacks import BaseAttack, available_attacks, get_attack, get_tags
from privaudit.attacks.membership import collect_reference_outputs
from privaudit.targets import LabelOnlyTarget, SklearnTarget, TorchTarget

NAMES = available_attacks()


@pytest.fixture(scope="module")
def world():
    """A small classifier and regressor, 80 audited records each, a pool of 4 models."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    perm = np.random.default_rng(0).permutation(len(X))
    aud, pop = perm[:80], perm[80:240]
    model = LogisticRegression(C=100.0, max_iter=2000).fit(X[aud[:40]], y[aud[:40]])
    target = SklearnTarget(model, name="lr")
    reference = collect_reference_outputs(
        LogisticRegression(C=100.0, max_iter=2000), X[aud], y[aud], X_population=X[pop],
        y_population=y[pop], n_models=4, mode="online", random_state=0,
    )
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(X.shape[1], 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    Xr, yr = load_diabetes(return_X_y=True)
    reg = SklearnTarget(Ridge(alpha=1e-3).fit(Xr[:40], yr[:40]), name="ridge")
    return {
        "classification": (target, X[aud].astype(np.float32), y[aud]),
        "regression": (reg, Xr[:80], yr[:80]),
        "labels": np.r_[np.ones(40), np.zeros(40)].astype(int),
        "population": (X[pop], y[pop]),
        "reference": reference,
        "torch": TorchTarget(net),
        "label_only": LabelOnlyTarget(model.predict, classes=model.classes_),
    }


def _data(world, attack):
    tags = get_tags(attack)
    target, X, y = world[tags.tasks[0]]
    if tags.queries_target:
        target = world["torch"]
    return target, X, y


def _fit(world, attack):
    """Fit ``attack`` the way its tags say; returns what fit returned."""
    tags = get_tags(attack)
    target, X, y = _data(world, attack)
    if tags.needs_reference_models:
        Xp, yp = world["population"]
        return attack.fit(world["reference"], population_outputs=target.query(Xp, yp))
    if tags.uses_population_features:
        return attack.fit(X=world["population"][0])
    if tags.needs_population:  # no pool: the target's answers on the population (quantile)
        return attack.fit(target, *world["population"])
    if tags.queries_target:
        return attack.fit()
    return attack.fit(outputs=target.query(X, y), labels=world["labels"])


def _score(world, attack):
    target, X, y = _data(world, attack)
    tags = get_tags(attack)
    if tags.queries_target or tags.uses_population_features or (
            tags.needs_population and not tags.needs_reference_models):
        return attack.score(target, X, y)
    return attack.score(outputs=target.query(X, y))


def _seeded(name):
    attack = get_attack(name)
    if "random_state" in attack.get_params():
        attack.set_params(random_state=0)
    return attack


def test_every_attack_is_a_base_attack():
    for name in NAMES:
        assert isinstance(get_attack(name), BaseAttack), name


@pytest.mark.parametrize("name", NAMES)
def test_init_stores_parameters_unchanged(name):
    attack = get_attack(name)
    params = attack.get_params(deep=False)
    assert not [k for k in vars(attack) if k.endswith("_") and not k.startswith("_")]
    # Every parameter is a constructor argument, stored as given (the same object).
    sentinels = {k: object() for k in params}
    again = type(attack)(**sentinels)
    for key, value in sentinels.items():
        assert getattr(again, key) is value, (name, key)
    assert set(inspect.signature(type(attack).__init__).parameters) - {"self"} == set(params)


@pytest.mark.parametrize("name", NAMES)
def test_get_set_params_round_trip_and_clone(name):
    attack = get_attack(name)
    params = attack.get_params(deep=False)
    assert attack.set_params(**params) is attack
    assert attack.get_params(deep=False) == params
    twin = clone(attack)
    assert type(twin) is type(attack) and twin is not attack
    assert twin.get_params(deep=False) == params
    assert repr(twin) == repr(attack)
    assert twin.name == attack.name
    with pytest.raises(ValueError, match="'params' parameter"):
        attack.set_params(no_such_parameter=1)


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self_and_score_is_float64_per_record(world, name):
    attack = _seeded(name)
    assert _fit(world, attack) is attack
    scores = _score(world, attack)
    assert isinstance(scores, np.ndarray)
    assert scores.shape == (80,)
    assert scores.dtype == np.float64
    assert np.all(np.isfinite(scores))


@pytest.mark.parametrize("name", [n for n in NAMES if get_tags(n).requires_fit])
def test_not_fitted_error_before_fit(world, name):
    attack = get_attack(name)
    with pytest.raises(NotFittedError, match="not fitted"):
        _score(world, attack)


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_scores(world, name):
    first = _score(world, _fit(world, _seeded(name)))
    second = _score(world, _fit(world, clone(_seeded(name))))
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("name", [n for n in NAMES if "classification" in get_tags(n).tasks
                                  and not get_tags(n).needs_white_box])
def test_label_only_target_refused_when_probabilities_are_needed(world, name):
    attack = _seeded(name)
    _fit(world, attack)
    _, X, y = world["classification"]
    if get_tags(attack).needs_probabilities:
        with pytest.raises(ValueError, match="revealing class probabilities"):
            attack.score(world["label_only"], X, y)
    else:
        scores = attack.score(world["label_only"], X, y)
        assert scores.shape == (80,) and scores.dtype == np.float64
