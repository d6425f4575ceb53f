"""Catalogue gaps found against IBM ART (issue 7): the gap attack, LabelOnlyAttack(n_noise=0),
trained-gb, and the label-only noise scale read from a population."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

from privaudit.attacks import GapAttack, LabelOnlyAttack, get_attack, get_tags
from privaudit.attacks.membership import TrainedGBAttack
from privaudit.metrics import roc_auc
from privaudit.targets import LabelOnlyTarget, ModelOutputs


@pytest.fixture(scope="module")
def tree():
    X, y = load_breast_cancer(return_X_y=True)
    perm = np.random.default_rng(1).permutation(len(X))
    mem, non, pop = perm[:100], perm[100:200], perm[200:400]
    model = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X[mem], y[mem])
    X_aud = np.concatenate([X[mem], X[non]])
    y_aud = np.concatenate([y[mem], y[non]])
    labels = np.r_[np.ones(100), np.zeros(100)].astype(int)
    return model, X_aud, y_aud, labels, X[pop]


def test_gap_scores_are_correctness_and_auc_is_half_plus_half_the_gap(tree):
    model, X, y, labels, _ = tree
    result = get_attack("gap").run(model, X, y, labels)
    correct = (model.predict(X) == y).astype(float)
    np.testing.assert_array_equal(result.scores, correct)
    np.testing.assert_array_equal(result.predictions, correct.astype(np.int8))
    train, test = correct[:100].mean(), correct[100:].mean()
    assert result.extra == {"train_accuracy": train, "test_accuracy": test}
    # A two-valued score: AUC = 1/2 + (TPR - FPR) / 2 with TPR, FPR the two accuracies.
    assert roc_auc(labels, result.scores) == pytest.approx(0.5 + (train - test) / 2)
    assert result.attack == "gap"


def test_gap_runs_on_a_label_only_target_with_one_query_per_record(tree):
    model, X, y, _, _ = tree
    target = LabelOnlyTarget(model.predict, classes=model.classes_, max_queries=len(y))
    scores = GapAttack().fit().score(target, X, y)
    assert target.n_queries == len(y)
    np.testing.assert_array_equal(scores, (model.predict(X) == y).astype(float))
    tags = get_tags("gap")
    assert tags.tasks == ("classification",) and not tags.needs_probabilities


def test_gap_refuses_a_regression_target():
    outputs = ModelOutputs.from_regression([1.0, 2.0], [1.0, 2.5])
    with pytest.raises(ValueError, match=r"'target' parameter of GapAttack\.score"):
        GapAttack().score(outputs=outputs)


def test_label_only_without_noise_is_the_gap_attack(tree):
    # Was refused ("n_noise must be >= 1 when image_shape gives no augmentation").
    model, X, y, labels, _ = tree
    target = LabelOnlyTarget(model.predict, classes=model.classes_, max_queries=len(y))
    attack = LabelOnlyAttack(n_noise=0)
    assert attack.planned_queries(len(y), X.shape[1]) == len(y)
    result = attack.run(target, X, y, labels)
    assert target.n_queries == len(y)  # no query beyond the labels
    np.testing.assert_array_equal(result.scores, get_attack("gap").score(model, X, y))


def test_label_only_without_noise_needs_no_varying_feature():
    X = np.ones((6, 3))
    y = np.array([0, 1, 0, 1, 0, 1])
    target = LabelOnlyTarget(lambda rows: np.zeros(len(rows), dtype=int), classes=[0, 1])
    scores = LabelOnlyAttack(n_noise=0).score(target, X, y)
    np.testing.assert_array_equal(scores, (y == 0).astype(float))


def test_label_only_reads_its_noise_scale_from_the_population(tree):
    model, X, y, _, X_pop = tree
    assert get_tags("label-only").uses_population_features
    attack = LabelOnlyAttack(n_noise=4, random_state=0).fit(X=X_pop)
    np.testing.assert_allclose(attack.feature_scale_, X_pop.std(axis=0))
    own = LabelOnlyAttack(n_noise=4, random_state=0).score(model, X, y)
    from_pop = attack.score(model, X, y)
    assert own.shape == from_pop.shape == (len(y),)
    assert not np.array_equal(own, from_pop)  # the scale changed the perturbations


def test_trained_gb_is_registered_and_cross_fitted():
    # Members get a confident true-class probability, non-members a hesitant one.
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(100), np.zeros(100)].astype(int)
    p_true = np.where(labels == 1, rng.uniform(0.9, 1.0, 200), rng.uniform(0.5, 0.95, 200))
    y = rng.integers(0, 2, 200)
    probs = np.where(y[:, None] == np.arange(2), p_true[:, None], 1 - p_true[:, None])
    outputs = ModelOutputs.from_probabilities(y, probs, classes=[0, 1])
    attack = get_attack("trained-gb", random_state=0)
    assert isinstance(attack, TrainedGBAttack) and attack.model == "gb"
    assert get_tags(attack).cross_fitted
    result = attack.run(outputs=outputs, labels=labels)
    assert result.attack == "trained-gb"
    assert result.scores.shape == (200,)
    assert roc_auc(labels, result.scores) > 0.75
    again = get_attack("trained-gb", random_state=0).run(outputs=outputs, labels=labels)
    np.testing.assert_array_equal(result.scores, again.scores)
