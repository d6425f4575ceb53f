"""Shokri et al.'s shadow-model attack (ShadowModelAttack).

Layers: a slow record-by-record reference implementation of the documented algorithm
(attack training set, subsampling, per-class and fallback models, seeds) compared with the
fast one; hypothesis properties (class-order invariance, scores are probabilities); an
end-to-end run on sklearn digits with an overfit MLP target and offline shadow models
trained through collect_reference_outputs; and the bad inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from privaudit.attacks.membership import LossAttack
from privaudit.attacks.membership._reference import (
    ReferenceOutputs,
    collect_reference_outputs,
)
from privaudit.attacks.membership._shadow import ShadowModelAttack, global_features
from privaudit.exceptions import NotFittedError
from privaudit.metrics import roc_auc
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs, SklearnTarget

# --------------------------------------------------------------------------- synthetic data


def synthetic_outputs(rng, y, inside, n_classes, classes=None):
    """Prediction vectors where members get more mass on their true class."""
    logits = rng.normal(size=(y.shape[0], n_classes))
    logits[np.arange(y.shape[0]), y] += 1.0 + 2.0 * inside
    classes = np.arange(n_classes) if classes is None else classes
    return ModelOutputs.from_probabilities(classes[y], softmax(logits, axis=1), classes)


def synthetic_reference(n_models=4, n_pop=240, n_classes=4, n_rare=4, seed=0):
    """Offline reference outputs; the last class has only ``n_rare`` population records."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes - 1, size=n_pop)
    y[rng.choice(n_pop, size=n_rare, replace=False)] = n_classes - 1
    y_aud = rng.integers(0, n_classes, size=10)
    population, masks, audited = [], [], []
    for _ in range(n_models):
        inside = rng.random(n_pop) < 0.5
        population.append(synthetic_outputs(rng, y, inside, n_classes))
        masks.append(inside)
        audited.append(synthetic_outputs(rng, y_aud, np.zeros(10, bool), n_classes))
    return ReferenceOutputs(
        audited=tuple(audited), audited_in=np.zeros((n_models, 10), bool),
        population=tuple(population), population_in=np.array(masks), mode="offline",
    )


def synthetic_target(n=200, n_classes=4, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    labels = (rng.random(n) < 0.5).astype(int)
    return synthetic_outputs(rng, y, labels, n_classes), labels


@pytest.fixture(scope="module")
def reference():
    return synthetic_reference()


@pytest.fixture(scope="module")
def target_outputs():
    return synthetic_target()


@pytest.fixture(scope="module")
def fitted_lr(reference):
    return ShadowModelAttack("lr", random_state=0).fit(reference)


# --------------------------------------------------------------------------- reference


def shadow_reference(ref, target, make_clf, *, max_train, min_class, random_state):
    """The documented algorithm one (model, record) pair at a time, with plain lists."""
    classes = sorted({c for o in ref.population for c in o.classes.tolist()})
    n_classes = len(classes)
    seeds = np.random.default_rng(random_state).integers(0, 2**31 - 1, size=n_classes + 2)

    def aligned(o, j):
        vec = [0.0] * n_classes
        for k, c in enumerate(o.classes.tolist()):
            vec[classes.index(c)] = float(o.probabilities[j, k])
        return vec

    rows = []  # (aligned prediction vector, true class, 1 if in the shadow model's data)
    for m, o in enumerate(ref.population):
        for j in range(len(o)):
            rows.append((aligned(o, j), o.y[j].item(), int(ref.population_in[m, j])))
    if len(rows) > max_train:
        keep = np.random.default_rng(int(seeds[0])).choice(len(rows), max_train, replace=False)
        rows = [rows[i] for i in sorted(keep.tolist())]

    def glob(vec, c):
        return [*sorted(vec, reverse=True), vec[classes.index(c)]]

    models = {}
    for i, c in enumerate(classes):
        sub = [r for r in rows if r[1] == c]
        n_in = sum(r[2] for r in sub)
        if min(n_in, len(sub) - n_in) >= min_class:
            models[c] = make_clf(int(seeds[i + 1])).fit([r[0] for r in sub], [r[2] for r in sub])
    fallback = None
    if len(models) < n_classes:
        fallback = make_clf(int(seeds[-1])).fit([glob(r[0], r[1]) for r in rows],
                                                [r[2] for r in rows])
    scores = []
    for j in range(len(target)):
        vec = aligned(target, j)
        c = target.y[j].item()
        if c in models:
            p = models[c].predict_proba([vec])[0]
            scores.append(p[list(models[c].classes_).index(1)])
        else:
            p = fallback.predict_proba([glob(vec, c)])[0]
            scores.append(p[list(fallback.classes_).index(1)])
    return np.array(scores), sorted(set(classes) - set(models))


def builtin_lr(seed):
    return Pipeline([("scale", StandardScaler()),
                     ("clf", LogisticRegression(C=1.0, max_iter=1000))])


@pytest.mark.parametrize("max_train", [10_000, 500])
def test_matches_the_reference_loop_builtin_lr(reference, target_outputs, max_train):
    outputs, _ = target_outputs
    attack = ShadowModelAttack("lr", max_attack_train=max_train, random_state=3).fit(reference)
    expected, fallback = shadow_reference(reference, outputs, builtin_lr, max_train=max_train,
                                          min_class=20, random_state=3)
    np.testing.assert_allclose(attack.score(outputs=outputs), expected, rtol=0, atol=1e-10)
    # The rare class (4 records x 4 models) has too few examples: the global model scores it.
    assert fallback == [3]
    assert attack.fallback_classes_.tolist() == [3]
    assert sorted(attack.class_models_) == [0, 1, 2]
    assert attack.n_attack_train_ == min(max_train, 4 * 240)
    assert attack.n_shadow_models_ == 4


def test_matches_the_reference_loop_user_classifier_reseeded(reference, target_outputs):
    outputs, _ = target_outputs
    user = RandomForestClassifier(n_estimators=15, min_samples_leaf=3, random_state=999)
    attack = ShadowModelAttack(user, max_attack_train=700, min_class_samples=5,
                               random_state=11).fit(reference)

    def make(seed):
        return RandomForestClassifier(n_estimators=15, min_samples_leaf=3, random_state=seed)

    expected, fallback = shadow_reference(reference, outputs, make, max_train=700,
                                          min_class=5, random_state=11)
    np.testing.assert_allclose(attack.score(outputs=outputs), expected, rtol=0, atol=1e-12)
    assert fallback == attack.fallback_classes_.tolist()
    # The user's estimator is cloned, never fitted in place.
    assert not hasattr(user, "estimators_")


def test_global_features_hand_worked():
    p = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    np.testing.assert_array_equal(
        global_features(p, np.array([2, 1])),
        [[0.5, 0.3, 0.2, 0.3], [0.6, 0.3, 0.1, 0.1]],
    )


def test_all_classes_in_fallback_is_a_single_global_model(reference, target_outputs):
    outputs, labels = target_outputs
    attack = ShadowModelAttack("lr", min_class_samples=10**6, random_state=0).fit(reference)
    assert attack.class_models_ == {}
    assert attack.fallback_classes_.tolist() == [0, 1, 2, 3]
    scores = attack.score(outputs=outputs)
    # Class-agnostic features still separate the synthetic members.
    assert roc_auc(labels, scores) > 0.65


# --------------------------------------------------------------------------- properties


@settings(max_examples=20, deadline=None)
@given(perm=st.permutations(range(4)))
def test_scores_do_not_depend_on_the_target_column_order(fitted_lr, target_outputs, perm):
    outputs, _ = target_outputs
    perm = np.array(perm)
    shuffled = ModelOutputs.from_probabilities(outputs.y, outputs.probabilities[:, perm],
                                               outputs.classes[perm])
    np.testing.assert_allclose(fitted_lr.score(outputs=shuffled),
                               fitted_lr.score(outputs=outputs), rtol=0, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60))
def test_scores_are_probabilities_and_predictions_threshold_half(fitted_lr, seed, n):
    outputs, labels = synthetic_target(n=n, seed=seed)
    if labels.min() == labels.max():
        labels[0] = 1 - labels[0]
    result = fitted_lr.run(outputs=outputs, labels=labels, target_name="synthetic")
    assert np.all((result.scores >= 0) & (result.scores <= 1))
    np.testing.assert_array_equal(result.predictions, (result.scores >= 0.5).astype(np.int8))
    np.testing.assert_array_equal(result.raw_statistic, result.scores)


def test_target_over_a_subset_of_the_classes_is_zero_filled(fitted_lr):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, size=50)
    sub = synthetic_outputs(rng, y, np.ones(50, bool), 3)  # classes 0, 1, 2 only
    padded = ModelOutputs.from_probabilities(
        sub.y, np.c_[sub.probabilities, np.zeros(50)], np.arange(4)
    )
    np.testing.assert_array_equal(fitted_lr.score(outputs=sub), fitted_lr.score(outputs=padded))


def test_same_seed_same_scores_other_seed_other_scores(reference, target_outputs):
    outputs, _ = target_outputs
    a = ShadowModelAttack("mlp", max_attack_train=600, random_state=7).fit(reference)
    b = ShadowModelAttack("mlp", max_attack_train=600, random_state=7).fit(reference)
    c = ShadowModelAttack("mlp", max_attack_train=600, random_state=8).fit(reference)
    np.testing.assert_array_equal(a.score(outputs=outputs), b.score(outputs=outputs))
    assert not np.allclose(a.score(outputs=outputs), c.score(outputs=outputs))


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def digits_audit():
    """Overfit MLP on half of the audited digits; 4 offline shadow models on the rest.

    Audited: 900 records (450 members, 450 non-members); population: the other 897,
    on which each shadow model trains on a random half (about the target's size).
    """
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(X))
    audited, population = perm[:900], perm[900:]
    labels = np.r_[np.ones(450, dtype=int), np.zeros(450, dtype=int)]
    make = MLPClassifier(hidden_layer_sizes=(256,), alpha=1e-6, max_iter=200)
    # One BLAS thread: the suite runs on 2 cores, oversubscription slows MLPs many-fold.
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = MLPClassifier(hidden_layer_sizes=(256,), alpha=1e-6, max_iter=200,
                               random_state=0).fit(X[audited[:450]], y[audited[:450]])
        ref = collect_reference_outputs(
            make, X[audited], y[audited], X_population=X[population],
            y_population=y[population], n_models=4, mode="offline", random_state=0,
        )
    outputs = SklearnTarget(target, name="digits-mlp").query(X[audited], y[audited])
    return outputs, labels, ref


def test_shadow_attack_on_digits_beats_chance_and_matches_loss(digits_audit):
    outputs, labels, ref = digits_audit
    loss_auc = roc_auc(labels, LossAttack().score(outputs=outputs))
    with threadpool_limits(1):
        attack = ShadowModelAttack(random_state=0).fit(ref)  # the paper's MLP attack models
        result = attack.run(outputs=outputs, labels=labels, target_name="digits-mlp")
    assert isinstance(result, AttackResult)
    assert result.attack == "shadow"
    assert result.raw_statistic_name == "membership_probability"
    assert result.extra["n_shadow_models"] == 4
    assert result.extra["fallback_classes"] == []  # ~360 shadow examples per class
    metrics = result.metrics(n_bootstrap=300, random_state=0)
    auc = metrics["auc"]["value"]
    # Measured: shadow (MLP attack models) 0.582, LOSS 0.557 (the target generalises well
    # on digits, so leakage is modest; Shokri-style attacks roughly match LOSS).
    assert auc > 0.55
    assert metrics["auc"]["low"] > 0.5
    assert abs(auc - loss_auc) < 0.06
    # Members get higher membership probabilities on average.
    assert result.scores[labels == 1].mean() > result.scores[labels == 0].mean()


def test_shadow_attack_other_attack_models_on_digits(digits_audit):
    outputs, labels, ref = digits_audit
    loss_auc = roc_auc(labels, LossAttack().score(outputs=outputs))
    for model in ("lr", "rf"):
        with threadpool_limits(1):
            scores = ShadowModelAttack(model, random_state=0).fit(ref).score(outputs=outputs)
        auc = roc_auc(labels, scores)
        # Measured: lr 0.580, rf 0.591.
        assert auc > 0.55, model
        assert abs(auc - loss_auc) < 0.06, model


def test_shadow_attack_queries_a_target_directly(digits_audit):
    _, _, ref = digits_audit
    attack = ShadowModelAttack("lr", random_state=0).fit(ref)
    X, y = load_digits(return_X_y=True)
    model = LogisticRegression(max_iter=200).fit(X[:100] / 16.0, y[:100])
    result = attack.run(model, X[:100] / 16.0, y[:100], np.ones(100, dtype=int))
    assert result.target  # the adapter's name
    assert result.scores.shape == (100,)


# --------------------------------------------------------------------------- bad input


def test_reference_without_population_outputs_is_refused(reference):
    no_population = ReferenceOutputs(audited=reference.audited, audited_in=reference.audited_in,
                                     mode="offline")
    with pytest.raises(ValueError, match=r"'reference' parameter of ShadowModelAttack\.fit "
                                         r"must be reference outputs with population"):
        ShadowModelAttack().fit(no_population)


def test_fit_needs_reference_outputs():
    with pytest.raises(TypeError, match="must be a ReferenceOutputs"):
        ShadowModelAttack().fit(np.zeros((3, 3)))


def test_population_of_one_membership_kind_is_refused(reference):
    all_in = ReferenceOutputs(
        audited=reference.audited, audited_in=reference.audited_in,
        population=reference.population, population_in=np.ones_like(reference.population_in),
        mode="offline",
    )
    with pytest.raises(ValueError, match="both members and non-members"):
        ShadowModelAttack("lr").fit(all_in)


def test_regression_or_label_only_shadow_outputs_are_refused(reference):
    rng = np.random.default_rng(0)
    reg = tuple(ModelOutputs.from_regression(rng.normal(size=240), rng.normal(size=240))
                for _ in range(4))
    bad = ReferenceOutputs(audited=reference.audited, audited_in=reference.audited_in,
                           population=reg, population_in=reference.population_in,
                           mode="offline")
    with pytest.raises(ValueError, match="revealing probabilities"):
        ShadowModelAttack("lr").fit(bad)
    y = reference.population[0].y
    labels_only = tuple(ModelOutputs.from_labels(y, y, np.arange(4)) for _ in range(4))
    bad = ReferenceOutputs(audited=reference.audited, audited_in=reference.audited_in,
                           population=labels_only, population_in=reference.population_in,
                           mode="offline")
    with pytest.raises(ValueError, match="without probabilities"):
        ShadowModelAttack("lr").fit(bad)


def test_target_with_a_class_unknown_to_the_shadow_models(fitted_lr):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, size=30)
    outputs = synthetic_outputs(rng, y, np.ones(30, bool), 5)
    with pytest.raises(ValueError, match=r"shadow models' classes .*unknown to them"):
        fitted_lr.score(outputs=outputs)


def test_regression_and_label_only_targets_are_refused(fitted_lr):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    reg = LinearRegression().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="must be a classification target"):
        fitted_lr.run(reg, X, X[:, 0], np.r_[np.ones(10), np.zeros(10)].astype(int))
    y = np.arange(20) % 4
    with pytest.raises(ValueError, match="revealing class probabilities"):
        fitted_lr.score(outputs=ModelOutputs.from_labels(y, y, np.arange(4)))


def test_score_before_fit_and_bad_parameters(reference, target_outputs):
    outputs, labels = target_outputs
    with pytest.raises(NotFittedError):
        ShadowModelAttack().score(outputs=outputs)
    with pytest.raises(NotFittedError):
        ShadowModelAttack().run(outputs=outputs, labels=labels)
    with pytest.raises(ValueError, match="'max_attack_train' parameter of ShadowModelAttack"):
        ShadowModelAttack(max_attack_train=1).fit(reference)
    with pytest.raises(TypeError, match="'min_class_samples'"):
        ShadowModelAttack(min_class_samples=2.5).fit(reference)
    with pytest.raises(ValueError,
                       match=r"'attack_model' parameter of ShadowModelAttack must be one"):
        ShadowModelAttack("svm").fit(reference)
    with pytest.raises(TypeError, match="'attack_model' parameter"):
        ShadowModelAttack(object()).fit(reference)


def test_labels_must_match_the_records(fitted_lr, target_outputs):
    outputs, labels = target_outputs
    with pytest.raises(ValueError, match="one label per audited record"):
        fitted_lr.run(outputs=outputs, labels=labels[:-1])


def test_estimator_contract():
    attack = ShadowModelAttack(attack_model="rf", random_state=0)
    assert attack.get_params() == {"attack_model": "rf", "max_attack_train": 20_000,
                                   "min_class_samples": 20, "random_state": 0}
    assert repr(attack) == "ShadowModelAttack(attack_model='rf', random_state=0)"
    assert attack.set_params(max_attack_train=100) is attack
    assert attack.max_attack_train == 100
    assert ShadowModelAttack.name == "shadow"
    assert not [k for k in vars(ShadowModelAttack()) if k.endswith("_")]  # no work in init
