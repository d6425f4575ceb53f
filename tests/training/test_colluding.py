"""Yeom et al.'s colluding training algorithm and adversary (CSF 2018, Section 4).

Theorem 4 on real data (digits): a model trained by Algorithm 1 generalises as well as the
honest one and the ordinary loss/confidence attacks see no more than on the honest model,
yet the colluding adversary (Adversary 3) reads membership with an advantage near
``1 - 2**-mk``; against the honest model the same adversary is at chance.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

from privaudit.attacks.membership import (
    ConfidenceAttack,
    EntropyAttack,
    LossAttack,
    ModifiedEntropyAttack,
)
from privaudit.attacks.membership._colluding import ColludingAttack
from privaudit.metrics import roc_auc
from privaudit.targets import (
    CallableTarget,
    LabelOnlyTarget,
    QueryBudgetExceededError,
    SklearnTarget,
)
from privaudit.training import ReferencePool, TrainingRecipe, as_recipe
from privaudit.training._colluding import ColludingKeys, ColludingRecipe

KEY = 20180709
N_KEYS = 2
N_CLASSES = 10
ORDINARY = (LossAttack, ConfidenceAttack, EntropyAttack, ModifiedEntropyAttack)


def _svm() -> SVC:
    # A regularised RBF SVM with a fixed gamma (gamma="scale" would read the scale of the
    # added points). SVC's own Platt scaling gives the probabilities the ordinary attacks
    # read: CalibratedClassifierCV, its suggested replacement, calibrates on held-out
    # folds of S', whose added points cannot be predicted out of fold.
    if "probability" not in SVC().get_params():
        pytest.skip("SVC(probability=True) was removed from scikit-learn")
    return SVC(C=3.0, gamma=2e-4, probability=True, random_state=0)


LEARNERS = {"1-nn": lambda: KNeighborsClassifier(n_neighbors=1), "rbf-svm": _svm}


@pytest.fixture(scope="module")
def digits():
    """Digits, half the records in training (members), half held out (non-members)."""
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(y))
    members, non_members = perm[: len(y) // 2], perm[len(y) // 2:]
    audited = np.r_[members, non_members]
    labels = np.r_[np.ones(members.size), np.zeros(non_members.size)].astype(int)
    return {"X": X, "y": y, "members": members, "non_members": non_members,
            "X_aud": X[audited], "y_aud": y[audited], "labels": labels}


@pytest.fixture(scope="module", params=sorted(LEARNERS))
def world(request, digits):
    """The honest and the colluding model of one learner, trained on the members."""
    estimator = LEARNERS[request.param]()
    recipe = ColludingRecipe(estimator, n_keys=N_KEYS, key=KEY)
    X, y, mem = digits["X"], digits["y"], digits["members"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=True), sklearn 1.9
        honest = clone(estimator).fit(X[mem], y[mem])
        colluding = recipe.train(X[mem], y[mem], random_state=0)
    return {"name": request.param, "recipe": recipe, "honest": honest,
            "colluding": colluding}


def _accuracies(model, d):
    X, y = d["X"], d["y"]
    return (float(np.mean(model.predict(X[d["members"]]) == y[d["members"]])),
            float(np.mean(model.predict(X[d["non_members"]]) == y[d["non_members"]])))


def _label_only(model, name):
    return LabelOnlyTarget(model.predict, classes=model.classes_, name=name)


def _hard_advantage(result):
    guess, lab = result.predictions, result.labels
    return float(guess[lab == 1].mean() - guess[lab == 0].mean())


# --------------------------------------------------------------------------- Theorem 4
def test_colluding_model_generalises_as_well_as_the_honest_one(world, digits):
    train_h, test_h = _accuracies(world["honest"], digits)
    train_c, test_c = _accuracies(world["colluding"], digits)
    print(f"{world['name']}: honest train/test {train_h:.4f}/{test_h:.4f}, "
          f"colluding {train_c:.4f}/{test_c:.4f}")
    assert test_h > 0.97
    assert abs(test_c - test_h) < 0.02
    assert train_c - test_c < 0.03  # no overfitting to speak of


def test_ordinary_attacks_see_no_more_on_the_colluding_model(world, digits):
    aucs = {}
    for model_name in ("honest", "colluding"):
        outputs = SklearnTarget(world[model_name]).query(digits["X_aud"], digits["y_aud"])
        for attack in ORDINARY:
            auc = roc_auc(digits["labels"], attack().score(outputs=outputs))
            print(f"{world['name']} {model_name} {attack.__name__}: AUC {auc:.3f}")
            aucs[model_name, attack.__name__] = auc
    for attack in ORDINARY:
        honest, colluding = (aucs[m, attack.__name__] for m in ("honest", "colluding"))
        assert colluding < 0.6, attack.__name__
        assert abs(colluding - honest) < 0.03, attack.__name__


def test_colluding_adversary_reads_membership(world, digits):
    model, recipe = world["colluding"], world["recipe"]
    target = _label_only(model, "colluding")
    result = ColludingAttack(recipe).run(target, digits["X_aud"], digits["y_aud"],
                                         digits["labels"])
    n = len(digits["labels"])
    # One batched query of n * k keyed points, nothing else.
    assert target.n_queries == n * N_KEYS == result.extra["queries_used"]
    assert result.extra["chance_match_rate"] == pytest.approx(N_CLASSES ** -N_KEYS)
    advantage = _hard_advantage(result)
    auc = roc_auc(result.labels, result.scores)
    print(f"{world['name']} colluding adversary: advantage {advantage:.3f}, AUC {auc:.3f} "
          f"(theory 1 - 2^-mk = {1 - N_CLASSES ** -N_KEYS:.2f})")
    assert advantage > 0.9
    assert advantage > 1 - N_CLASSES ** -N_KEYS - 0.03
    assert result.metrics(n_bootstrap=0)["mia_advantage"]["value"] == pytest.approx(advantage)
    np.testing.assert_array_equal(result.predictions, (result.raw_statistic == N_KEYS))
    # The same with probabilities (predictions = argmax of predict_proba).
    again = ColludingAttack(recipe).score(SklearnTarget(model), digits["X_aud"])
    np.testing.assert_array_equal(again, result.scores)


def test_colluding_adversary_is_at_chance_against_the_honest_model(world, digits):
    result = ColludingAttack(world["recipe"]).run(
        _label_only(world["honest"], "honest"), digits["X_aud"], None, digits["labels"])
    advantage = _hard_advantage(result)
    print(f"{world['name']} colluding adversary vs honest model: advantage {advantage:.3f}")
    assert abs(advantage) < 0.03
    # Far from the data the honest model answers some fixed label: a record passes the
    # test when G happens to draw it for both keys, about C ** -k of the time.
    assert result.predictions.mean() < 0.05


# --------------------------------------------------------------------------- the PRFs
def test_prfs_are_deterministic_for_a_key_and_change_with_it(digits):
    X, classes = digits["X"][:50], np.arange(N_CLASSES)
    keys = ColludingKeys(key=KEY, n_keys=3)
    points, labels = keys.probes(X, classes)
    again = ColludingKeys(key=KEY, n_keys=3)
    np.testing.assert_array_equal(again.points(X), points)
    np.testing.assert_array_equal(again.labels(X, classes), labels)
    assert again == keys and pickle.loads(pickle.dumps(keys)) == keys
    # Same numbers in another dtype or container: same keyed points.
    np.testing.assert_array_equal(keys.points(X.astype(np.int64)), points)
    np.testing.assert_array_equal(keys.points(X.astype(np.float32)), points)
    np.testing.assert_array_equal(keys.points(pd.DataFrame(X)), points)
    # Another key, or another key index, gives other points and labels.
    other_points, other_labels = ColludingKeys(key=KEY + 1, n_keys=3).probes(X, classes)
    assert not np.any(np.all(np.isclose(other_points, points), axis=1))
    assert np.mean(other_labels == labels) < 0.3
    per_key = points.reshape(50, 3, -1)
    assert not np.any(np.all(np.isclose(per_key[:, 0], per_key[:, 1]), axis=1))
    assert ColludingKeys(key=KEY + 1) != ColludingKeys(key=KEY)
    assert ColludingKeys(key=KEY + 1).key_tag() != ColludingKeys(key=KEY).key_tag()


def test_keyed_points_are_far_from_the_data_and_labels_uniform(digits):
    X = digits["X"]
    keys = ColludingKeys(key=KEY, n_keys=N_KEYS)
    points, labels = keys.probes(X[:300], np.arange(N_CLASSES))
    # Distance of each keyed point to the closest real record vs. record-to-record.
    d_points = np.sqrt(((points[:, None, :] - X[None, :600]) ** 2).sum(-1)).min(axis=1)
    d_records = np.sqrt(((X[:300, None, :] - X[None, 300:900]) ** 2).sum(-1)).min(axis=1)
    assert d_points.min() > 3 * d_records.max()
    counts = np.bincount(labels, minlength=N_CLASSES)
    expected = labels.size / N_CLASSES
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 30  # 9 degrees of freedom: p < 0.001 beyond 27.9


def test_algorithm_1_reference_loop_equals_the_vectorised_construction(digits):
    X, y = digits["X"][:40], digits["y"][:40]
    recipe = ColludingRecipe(KNeighborsClassifier(1), n_keys=3, key=KEY)
    keys, classes = recipe.keys, np.unique(y)
    # Algorithm 1, step 1, as written: S' = S ∪ {(F_{K_j}(x_i), G_{K_j}(x_i))}.
    rows, targets = [x for x in X], [label for label in y]
    for x in X:
        for j in range(recipe.n_keys):
            rows.append(keys.F(j, x))
            targets.append(keys.G(j, x, classes))
    X_sup, y_sup = recipe.supplement(X, y)
    np.testing.assert_array_equal(X_sup, np.array(rows))
    np.testing.assert_array_equal(y_sup, np.array(targets))
    assert X_sup.shape == (40 * 4, X.shape[1]) and y_sup.dtype == y.dtype
    # Records keep their shape: images (n, 8, 8) give points (n * k, 8, 8).
    images = X.reshape(-1, 8, 8)
    np.testing.assert_array_equal(keys.points(images).reshape(-1, 64), keys.points(X))
    np.testing.assert_array_equal(keys.F(1, images[3]).ravel(), keys.F(1, X[3]))


# --------------------------------------------------------------------------- the recipe
def test_recipe_follows_the_training_recipe_protocol(digits, tmp_path):
    X, y = digits["X"][:300], digits["y"][:300]
    recipe = ColludingRecipe(KNeighborsClassifier(1), key=KEY)
    assert isinstance(recipe, TrainingRecipe) and as_recipe(recipe) is recipe
    assert recipe.n_keys == 2 and recipe.spread == 4.0
    fp = recipe.fingerprint()
    assert ColludingRecipe(KNeighborsClassifier(1), key=KEY).fingerprint() == fp
    for other in (ColludingRecipe(KNeighborsClassifier(1), key=KEY + 1),
                  ColludingRecipe(KNeighborsClassifier(1), key=KEY, n_keys=3),
                  ColludingRecipe(KNeighborsClassifier(1), key=KEY, spread=8.0),
                  ColludingRecipe(KNeighborsClassifier(3), key=KEY)):
        assert other.fingerprint() != fp
    # The key is never shown.
    assert str(KEY) not in repr(recipe) and "key=<secret " in repr(recipe)
    assert str(KEY) not in repr(recipe.keys)
    # ... but two keys give two reprs (audit run keys read parameters through repr).
    assert repr(ColludingRecipe(KNeighborsClassifier(1), key=KEY + 1)) != repr(recipe)
    # train is a function of (X, y, seed); fit keeps the model.
    model = recipe.train(X, y, random_state=0)
    assert isinstance(model, KNeighborsClassifier) and model.n_samples_fit_ == 300 * 3
    fitted = ColludingRecipe(KNeighborsClassifier(1), key=KEY, random_state=0).fit(X, y)
    np.testing.assert_array_equal(fitted.model_.predict(X), model.predict(X))
    pickle.loads(pickle.dumps(recipe))  # sent to worker processes
    # As the recipe of a reference pool, with its models cached by skops.
    pytest.importorskip("skops.io")
    pool = ReferencePool(recipe, 2, cache_dir=tmp_path, random_state=0).fit(X, y)
    reloaded = ReferencePool(recipe, 2, cache_dir=tmp_path, random_state=0).fit(X, y)
    for a, b in zip(pool.models_, reloaded.models_, strict=True):
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
    one = recipe.load(next(tmp_path.rglob("*.skops")))
    assert isinstance(one, KNeighborsClassifier)


def test_recipe_wraps_any_object_with_fit_and_predict(digits):
    class Memo:
        """Not a scikit-learn estimator: a lookup table, 'fit' returns None."""

        def fit(self, X, y):
            self.table = {np.asarray(x).tobytes(): label for x, label in zip(X, y, strict=True)}

        def predict(self, X):
            return np.array([self.table.get(np.asarray(x).tobytes(), 0) for x in X])

    X, y = digits["X"][:100], digits["y"][:100]
    recipe = ColludingRecipe(Memo(), key=KEY)
    model = recipe.train(X, y, random_state=0)
    target = LabelOnlyTarget(model.predict, classes=np.arange(N_CLASSES))
    scores = ColludingAttack(recipe).score(target, np.r_[X, digits["X"][-100:]])
    assert scores[:100].min() == 1.0 and scores[100:].mean() < 0.3
    assert not recipe.can_save
    assert len(recipe.fingerprint()) == 64
    with pytest.raises(ValueError, match="cannot be cached"):
        recipe.save(model, "unused.skops")


@pytest.mark.parametrize("param,value", [
    ("n_keys", 0), ("n_keys", -1), ("n_keys", 1.5), ("n_keys", True), ("n_keys", "2"),
    ("key", 1.5), ("key", "secret"), ("key", None), ("key", True), ("key", -3),
    ("spread", 0.0), ("spread", float("nan")), ("random_state", -1),
])
def test_bad_parameters_name_themselves(param, value):
    with pytest.raises(ValueError, match=f"'{param}' parameter of ColludingRecipe"):
        ColludingRecipe(KNeighborsClassifier(1), **{param: value})
    if param != "random_state":
        with pytest.raises(ValueError, match=f"'{param}' parameter of ColludingKeys"):
            ColludingKeys(**{param: value})


def test_bad_records_and_estimator_name_themselves():
    with pytest.raises(TypeError, match="'estimator' parameter of ColludingRecipe"):
        ColludingRecipe(object())
    keys = ColludingKeys()
    with pytest.raises(ValueError, match=r"'X' parameter of ColludingKeys\.points"):
        keys.points(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match=r"'X' parameter of ColludingKeys\.points"):
        keys.points(np.zeros(3))
    with pytest.raises(ValueError, match=r"'y' parameter of ColludingKeys\.supplement"):
        keys.supplement(np.zeros((3, 2)), [0, 1])
    with pytest.raises(ValueError, match=r"'j' parameter of ColludingKeys\.F"):
        keys.F(2, np.zeros(3))


# --------------------------------------------------------------------------- the attack
def test_attack_estimator_contract(digits, world):
    recipe = world["recipe"]
    attack = ColludingAttack()
    assert repr(attack) == "ColludingAttack()" and attack.get_params() == {"recipe": None}
    attack = ColludingAttack(recipe)
    assert attack.recipe is recipe and not [k for k in vars(attack) if k.endswith("_")]
    assert attack.fit() is attack
    assert str(KEY) not in repr(attack) and str(KEY) not in str(
        attack.run(_label_only(world["colluding"], "m"), digits["X_aud"][:10], None,
                   digits["labels"][:10]).parameters)
    twin = clone(attack)
    assert twin.recipe is not recipe and twin.recipe.keys == recipe.keys
    with pytest.raises(ValueError, match="'params' parameter"):
        attack.set_params(key=1)
    # The keys alone are enough.
    X = digits["X_aud"][:30]
    target = _label_only(world["colluding"], "m")
    np.testing.assert_array_equal(ColludingAttack(recipe.keys).score(target, X),
                                  attack.score(target, X))


def test_attack_checks_its_inputs_before_querying(digits, world):
    model, recipe = world["colluding"], world["recipe"]
    X, labels = digits["X_aud"][:20], digits["labels"][:20]
    target = LabelOnlyTarget(model.predict, classes=model.classes_, max_queries=39)
    with pytest.raises(QueryBudgetExceededError, match="Nothing was queried"):
        ColludingAttack(recipe).score(target, X)
    assert target.n_queries == 0
    with pytest.raises(ValueError, match="'labels' parameter"):
        ColludingAttack(recipe).run(target, X, None, labels[:5])
    assert target.n_queries == 0
    with pytest.raises(TypeError, match="'target' parameter"):
        ColludingAttack(recipe).score(outputs=SklearnTarget(model).query(X, digits["y_aud"][:20]))
    with pytest.raises(TypeError, match="'recipe' parameter"):
        ColludingAttack(recipe=KNeighborsClassifier()).score(target, X)
    regressor = CallableTarget(lambda rows: np.zeros(len(rows)), task="regression")
    with pytest.raises(ValueError, match="classification target"):
        ColludingAttack(recipe).score(regressor, X)
    assert ColludingAttack(recipe).planned_queries(20) == 40
