"""Fidelity check: warn when reference models differ clearly from the target."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.tree import DecisionTreeClassifier

from privaudit.exceptions import PrivauditWarning
from privaudit.training import FidelityWarning, ReferencePool, check_fidelity

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def setup():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))
    pool_rows, test_rows = order[:800], order[800:1200]
    target_rows = pool_rows[:400]  # the target trained on half of the pool data
    lr = LogisticRegression(max_iter=200)
    target = LogisticRegression(max_iter=200, random_state=0).fit(X[target_rows], y[target_rows])
    pool = ReferencePool(lr, 4, random_state=0).fit(X[pool_rows], y[pool_rows])
    return X, y, target, pool, test_rows


def test_faithful_pool_gives_no_warning(setup) -> None:
    X, y, target, pool, test = setup
    with warnings.catch_warnings():
        warnings.simplefilter("error", FidelityWarning)
        report = pool.check_fidelity(target, X[test], y[test], target_n_train=400)
    assert report.ok and report.problems == ()
    assert report.reference_accuracy.shape == (4,)
    assert abs(report.target_accuracy - report.reference_accuracy.mean()) < 0.05
    # Cross-check with scikit-learn's own score.
    assert report.target_accuracy == pytest.approx(target.score(X[test], y[test]))
    np.testing.assert_array_equal(report.reference_n_train, pool.in_mask_.sum(axis=1))
    assert report.target_class == report.reference_class == (
        "sklearn.linear_model._logistic.LogisticRegression")


def test_other_model_class_warns(setup) -> None:
    X, y, _, pool, test = setup
    tree = DecisionTreeClassifier(random_state=0).fit(X[:400], y[:400])
    with pytest.warns(FidelityWarning, match="target is a .*DecisionTreeClassifier"):
        report = check_fidelity(tree, pool, X[test], y[test])
    assert not report.ok
    assert issubclass(FidelityWarning, PrivauditWarning)


def test_training_size_mismatch_warns(setup) -> None:
    X, y, target, pool, test = setup
    with pytest.warns(FidelityWarning, match=r"train on 400 records on average, the target on "
                                             r"1500 \(ratio 0.27\)"):
        report = check_fidelity(target, pool, X[test], y[test], target_n_train=1500)
    assert len(report.problems) == 1


def test_accuracy_far_from_pool_warns_only_beyond_both_thresholds(setup) -> None:
    X, y, _, pool, test = setup
    desc = {"model_class": "sklearn.linear_model._logistic.LogisticRegression"}
    with pytest.warns(FidelityWarning, match="target test accuracy 0.500 is far"):
        report = check_fidelity({**desc, "accuracy": 0.5}, pool, X[test], y[test])
    assert len(report.problems) == 1
    near = check_fidelity({**desc, "accuracy": float(report.reference_accuracy.mean()) + 0.01},
                          pool, X[test], y[test])
    assert near.ok
    # With a huge margin, even a distant accuracy is accepted.
    assert check_fidelity({**desc, "accuracy": 0.5}, pool, X[test], y[test],
                          accuracy_margin=0.6, warn=False).ok


def test_loss_mismatch_warns() -> None:
    X, y = load_digits(return_X_y=True)
    X = X[:400] / 16.0
    y = y[:400]
    target = SGDClassifier(loss="hinge", random_state=0).fit(X[:200], y[:200])
    pool = ReferencePool(SGDClassifier(loss="log_loss"), 2, random_state=0).fit(X[:200], y[:200])
    with pytest.warns(FidelityWarning, match="target trains with loss=hinge, reference models "
                                             "with loss=log_loss"):
        check_fidelity(target, pool, X[200:], y[200:], accuracy_margin=1.0)


def test_fidelity_argument_errors(setup) -> None:
    X, y, target, pool, test = setup
    with pytest.raises(TypeError, match="The 'target' parameter of check_fidelity"):
        check_fidelity(object(), pool, X[test], y[test])
    with pytest.raises(ValueError, match="The 'target' parameter of check_fidelity"):
        check_fidelity({"acc": 0.9}, pool, X[test], y[test])
    with pytest.raises(ValueError, match="The 'target_n_train' parameter of check_fidelity"):
        check_fidelity(target, pool, X[test], y[test], target_n_train=0)
    with pytest.raises(ValueError, match="The 'n_std' parameter of check_fidelity"):
        check_fidelity(target, pool, X[test], y[test], n_std=-1)


def test_target_adapter_is_queried_and_unwrapped(setup) -> None:
    from privaudit.targets import SklearnTarget

    X, y, target, pool, test = setup
    adapter = SklearnTarget(target)
    report = check_fidelity(adapter, pool, X[test], y[test], target_n_train=400)
    assert report.ok
    assert report.target_accuracy == pytest.approx(target.score(X[test], y[test]))
    assert report.target_class == report.reference_class
    assert adapter.n_queries == len(test)  # one query per test record
