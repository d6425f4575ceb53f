"""Training recipes: fingerprints, seeding, safe save/load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_digits
from sklearn.ensemble import BaggingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from privaudit.training import CallableRecipe, SklearnRecipe, TrainingRecipe, as_recipe

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    return X[:300] / 16.0, y[:300]


def train_lr(X, y, *, random_state, C=1.0):
    return LogisticRegression(C=C, max_iter=200, random_state=random_state).fit(X, y)


def train_lr_other(X, y, *, random_state, C=1.0):
    return LogisticRegression(C=C, max_iter=300, random_state=random_state).fit(X, y)


def save_npz(model, path):
    np.savez(path, coef=model.coef_, intercept=model.intercept_, classes=model.classes_)


def load_npz(path):
    with np.load(path, allow_pickle=False) as f:
        model = LogisticRegression()
        model.coef_, model.intercept_, model.classes_ = f["coef"], f["intercept"], f["classes"]
    return model


class Custom(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


# ----------------------------------------------------------------- fingerprints


def test_sklearn_fingerprint_tracks_class_and_params_not_seed() -> None:
    fp = SklearnRecipe(LogisticRegression(C=1.0)).fingerprint()
    assert SklearnRecipe(LogisticRegression(C=1.0)).fingerprint() == fp
    # random_state is replaced by the pool's seeds, so it is not part of the identity.
    assert SklearnRecipe(LogisticRegression(C=1.0, random_state=7)).fingerprint() == fp
    others = {
        SklearnRecipe(LogisticRegression(C=0.5)).fingerprint(),
        SklearnRecipe(LogisticRegression(C=1.0, class_weight={0: 2.0})).fingerprint(),
        SklearnRecipe(MLPClassifier()).fingerprint(),
        SklearnRecipe(make_pipeline(StandardScaler(), LogisticRegression())).fingerprint(),
        SklearnRecipe(
            make_pipeline(StandardScaler(with_mean=False), LogisticRegression())
        ).fingerprint(),
    }
    assert fp not in others and len(others) == 5


def test_sklearn_fingerprint_same_for_fitted_and_unfitted_estimator() -> None:
    X, y = _data()
    est = LogisticRegression(max_iter=50)
    assert SklearnRecipe(est).fingerprint() == SklearnRecipe(est.fit(X, y)).fingerprint()


def test_fingerprint_stable_across_processes() -> None:
    code = (
        "from sklearn.linear_model import LogisticRegression; "
        "from privaudit.training import SklearnRecipe; "
        "print(SklearnRecipe(LogisticRegression(C=0.3, class_weight={0: 2.0})).fingerprint())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == SklearnRecipe(LogisticRegression(C=0.3, class_weight={0: 2.0})).fingerprint()


def test_callable_fingerprint_covers_function_source_and_kwargs() -> None:
    fp = CallableRecipe(train_lr).fingerprint()
    assert CallableRecipe(train_lr).fingerprint() == fp
    assert CallableRecipe(train_lr, fn_kwargs={"C": 0.5}).fingerprint() != fp
    # Same kwargs and name pattern, different source: different model, different key.
    assert CallableRecipe(train_lr_other).fingerprint() != fp
    assert CallableRecipe(train_lr, version="2").fingerprint() != fp
    assert CallableRecipe(train_lr, save=save_npz, load=load_npz,
                          suffix=".npz").fingerprint() != fp


# ----------------------------------------------------------------- training


def test_sklearn_recipe_seeds_every_random_state_deterministically() -> None:
    X, y = _data()
    recipe = SklearnRecipe(make_pipeline(StandardScaler(), BaggingClassifier(
        DecisionTreeClassifier(), n_estimators=3)))
    a = recipe.train(X, y, random_state=5)
    b = recipe.train(X, y, random_state=5)
    c = recipe.train(X, y, random_state=6)
    params = a.get_params()
    seeds = {k: v for k, v in params.items() if k.endswith("random_state")}
    assert set(seeds) == {"baggingclassifier__random_state",
                          "baggingclassifier__estimator__random_state"}
    assert all(isinstance(v, int) for v in seeds.values())
    # Nested seeds differ from one another (the bagging and its tree are not seeded alike).
    assert len(set(seeds.values())) == len(seeds) == 2
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))


def test_sklearn_recipe_top_level_seed_is_the_given_seed() -> None:
    X, y = _data()
    model = SklearnRecipe(RandomForestClassifier(n_estimators=2)).train(X, y, random_state=11)
    assert model.random_state == 11
    # The template is untouched (the recipe clones it).
    recipe = SklearnRecipe(RandomForestClassifier(n_estimators=2, random_state=3))
    recipe.train(X, y, random_state=11)
    assert recipe.estimator.random_state == 3


def test_sklearn_recipe_equals_clone_fit_cross_check() -> None:
    X, y = _data()
    ours = SklearnRecipe(MLPClassifier((8,), max_iter=20)).train(X, y, random_state=4)
    ref = MLPClassifier((8,), max_iter=20, random_state=4).fit(X, y)
    np.testing.assert_array_equal(ours.predict_proba(X), ref.predict_proba(X))


# ----------------------------------------------------------------- save / load


@pytest.mark.parametrize(
    "estimator",
    [LogisticRegression(max_iter=100), MLPClassifier((8,), max_iter=20),
     make_pipeline(StandardScaler(), DecisionTreeClassifier())],
)
def test_sklearn_save_load_roundtrip_is_exact(tmp_path: Path, estimator) -> None:
    X, y = _data()
    recipe = SklearnRecipe(estimator)
    model = recipe.train(X, y, random_state=0)
    path = tmp_path / f"m{recipe.suffix}"
    recipe.save(model, path)
    loaded = recipe.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_sklearn_load_refuses_foreign_types(tmp_path: Path) -> None:
    import skops.io as sio

    X, y = _data()
    path = tmp_path / "m.skops"
    sio.dump(make_pipeline(StandardScaler(), Custom()).fit(X, y), path)
    recipe = SklearnRecipe(LogisticRegression())
    with pytest.raises(ValueError, match="types this recipe does not produce"):
        recipe.load(path)
    # The recipe that did produce it trusts its own estimator's package.
    own = SklearnRecipe(make_pipeline(StandardScaler(), Custom()))
    assert own.load(path).predict(X[:2]).shape == (2,)


def test_sklearn_load_refuses_other_estimator_class(tmp_path: Path) -> None:
    X, y = _data()
    path = tmp_path / "m.skops"
    SklearnRecipe(DecisionTreeClassifier()).save(DecisionTreeClassifier().fit(X, y), path)
    with pytest.raises(ValueError, match="not a LogisticRegression"):
        SklearnRecipe(LogisticRegression()).load(path)


def test_callable_recipe_roundtrip_and_no_save(tmp_path: Path) -> None:
    X, y = _data()
    recipe = CallableRecipe(train_lr, fn_kwargs={"C": 0.5}, save=save_npz, load=load_npz,
                            suffix=".npz")
    model = recipe.train(X, y, random_state=1)
    assert model.C == 0.5 and model.random_state == 1
    recipe.save(model, tmp_path / "m.npz")
    np.testing.assert_array_equal(recipe.load(tmp_path / "m.npz").predict_proba(X),
                                  model.predict_proba(X))
    bare = CallableRecipe(train_lr)
    assert not bare.can_save
    with pytest.raises(ValueError, match="cannot be cached"):
        bare.save(model, tmp_path / "x.bin")


# ----------------------------------------------------------------- dispatch and errors


def test_as_recipe_dispatch() -> None:
    assert isinstance(as_recipe(LogisticRegression()), SklearnRecipe)
    assert isinstance(as_recipe(train_lr), CallableRecipe)
    recipe = SklearnRecipe(LogisticRegression())
    assert as_recipe(recipe) is recipe
    assert isinstance(recipe, TrainingRecipe)
    with pytest.raises(TypeError, match="The 'recipe' parameter of ReferencePool must be"):
        as_recipe(42)


def test_recipe_argument_errors() -> None:
    with pytest.raises(TypeError, match="The 'estimator' parameter of SklearnRecipe"):
        SklearnRecipe("lr")
    with pytest.raises(TypeError, match="The 'fn' parameter of CallableRecipe must be callable"):
        CallableRecipe(3)
    with pytest.raises(ValueError, match="The 'load' parameter of CallableRecipe"):
        CallableRecipe(train_lr, save=save_npz)
