"""U-MIA on real data: it finds records an "unlearning" kept, and nothing after retraining."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier

from privaudit.attacks.unlearning import UMIAAttack
from privaudit.exceptions import NotFittedError
from privaudit.metrics import roc_auc
from privaudit.targets import ModelOutputs, SklearnTarget


def _world(rows, unlearn, seed):
    """Train on ``rows``' first 300 records, "unlearn" 150 of them, hold out 150 others.

    A random forest: its members get confident outputs (a loss attack: AUC ~0.85).
    """
    X, y = load_digits(return_X_y=True)
    train, forget, held = rows[:300], rows[:150], rows[300:450]
    kept = train if unlearn == "none" else train[150:]  # RT: retrain without the forget set
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RandomForestClassifier(100, random_state=seed).fit(X[kept], y[kept])
    target = SklearnTarget(model)
    return target.query(X[forget], y[forget]), target.query(X[held], y[held])


@pytest.fixture(scope="module")
def rows():
    order = np.random.default_rng(0).permutation(1797)
    return order[:450], order[450:900]  # the surrogate's, the audited model's


@pytest.mark.parametrize(("unlearn", "low", "high"), [("none", 0.75, 1.0), ("rt", 0.4, 0.6)])
def test_umia_sees_kept_records_and_not_retrained_ones(rows, unlearn, low, high):
    surrogate, audited = rows
    attack = UMIAAttack(random_state=0).fit(*_world(surrogate, unlearn, seed=1))
    forget, held = _world(audited, unlearn, seed=2)
    labels = np.r_[np.ones(150), np.zeros(150)].astype(int)
    both = ModelOutputs.from_probabilities(
        np.r_[forget.y, held.y], np.vstack([forget.probabilities, held.probabilities]),
        forget.classes)
    result = attack.run(both, labels, target_name="unlearned")
    assert low <= roc_auc(result.labels, result.scores) <= high
    assert result.attack == "u-mia" and result.parameters["C"] == 3.0


def test_umia_errors_name_the_parameter(rows):
    forget, held = _world(rows[0], "none", seed=1)
    with pytest.raises(NotFittedError, match="UMIAAttack is not fitted"):
        UMIAAttack().score(forget)
    with pytest.raises(ValueError, match="'C' parameter"):
        UMIAAttack(C=0).fit(forget, held)
    with pytest.raises(TypeError, match="'heldout' parameter"):
        UMIAAttack().fit(forget, held.probabilities)
    labels_only = ModelOutputs.from_labels(forget.y, forget.y, forget.classes)
    with pytest.raises(ValueError, match="class probabilities"):
        UMIAAttack().fit(labels_only, held)
