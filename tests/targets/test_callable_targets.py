import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LinearRegression, LogisticRegression

from privaudit.attacks import get_attack
from privaudit.attacks.membership import (
    ConfidenceAttack,
    EntropyAttack,
    LossAttack,
    ModifiedEntropyAttack,
)
from privaudit.targets import (
    CallableTarget,
    LabelOnlyTarget,
    QueryBudgetExceededError,
    SklearnTarget,
    Target,
)


@pytest.fixture(scope="module")
def clf():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = np.array(["b", "a", "c"])[np.argmax(X[:, :3], axis=1)]
    return X, y, LogisticRegression(max_iter=500).fit(X, y)


class Counting:
    """A prediction function that records how often, and on how many rows, it was called."""

    def __init__(self, fn):
        self.fn = fn
        self.sizes = []

    def __call__(self, X):
        self.sizes.append(len(X))
        return self.fn(X)


def test_callable_target_matches_sklearn_target(clf):
    X, y, model = clf
    target = CallableTarget(model.predict_proba, classes=model.classes_)
    assert isinstance(target, Target)
    assert target.name.endswith("predict_proba")
    out = target.query(X, y)
    ref = SklearnTarget(model).query(X, y)
    np.testing.assert_array_equal(out.probabilities, ref.probabilities)
    np.testing.assert_array_equal(out.loss, ref.loss)
    np.testing.assert_array_equal(out.predictions, model.predict(X))


def test_callable_regressor():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=12)
    model = LinearRegression().fit(X, y)
    out = CallableTarget(model.predict, task="regression", batch_size=5).query(X, y)
    np.testing.assert_allclose(out.loss, (y - model.predict(X)) ** 2)


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda X: np.full((len(X), 2), 0.5), r"shape \(30, 2\), but the target has 3 classes"),
        (lambda X: np.full((len(X), 3), 0.5), "summing to 1"),
        (lambda X: np.tile([1.2, -0.2, 0.0], (len(X), 1)), "non-negative"),
        (lambda X: np.tile([np.nan, 0.5, 0.5], (len(X), 1)), "non-finite probabilities for 30"),
        (lambda X: np.full((len(X) - 1, 3), 1 / 3), "one output per record"),
    ],
)
def test_bad_probabilities_are_refused(clf, fn, match):
    X, y, _ = clf
    with pytest.raises(ValueError, match=match):
        CallableTarget(fn, classes=["a", "b", "c"]).query(X, y)


def test_rounded_probabilities_are_accepted(clf):
    X, y, model = clf
    rounded = CallableTarget(lambda Z: np.round(model.predict_proba(Z), 3),
                             classes=model.classes_, name="api")
    out = rounded.query(X, y)
    np.testing.assert_allclose(out.probabilities, model.predict_proba(X), atol=5e-4)


def test_constructor_errors():
    with pytest.raises(TypeError, match="'classes' parameter of CallableTarget must be given"):
        CallableTarget(lambda X: X)
    with pytest.raises(TypeError, match="'fn' parameter of LabelOnlyTarget must be a callable"):
        LabelOnlyTarget("predict", classes=2)
    with pytest.raises(ValueError, match=r"'classes' parameter .* free of duplicates"):
        LabelOnlyTarget(len, classes=[1, 1, 2])
    with pytest.raises(ValueError, match="'batch_size' parameter"):
        LabelOnlyTarget(len, classes=2, batch_size=0)
    with pytest.raises(ValueError, match="'max_queries' parameter"):
        LabelOnlyTarget(len, classes=2, max_queries=-1)
    np.testing.assert_array_equal(LabelOnlyTarget(len, classes=3).classes_, [0, 1, 2])


def test_label_only_outputs_are_labels_and_zero_one_loss(clf):
    X, y, model = clf
    fn = Counting(model.predict)
    target = LabelOnlyTarget(fn, classes=model.classes_, batch_size=7)
    out = target.query(X, y)
    assert out.probabilities is None
    np.testing.assert_array_equal(out.predictions, model.predict(X))
    np.testing.assert_array_equal(out.loss, (model.predict(X) != y).astype(float))
    assert out.loss_name == "zero_one"
    # Records are counted, not calls.
    assert fn.sizes == [7, 7, 7, 7, 2]
    assert target.n_queries == 30
    target.reset_queries()
    assert target.n_queries == 0
    assert target.reveals_probabilities is False


def test_labels_outside_the_classes_are_refused(clf):
    X, y, _ = clf
    target = LabelOnlyTarget(lambda Z: np.array(["z"] * len(Z)), classes=["a", "b", "c"],
                             name="api")
    with pytest.raises(ValueError, match=r"target 'api' returned labels that are not among"):
        target.query(X, y)
    with pytest.raises(ValueError, match="one label per record"):
        LabelOnlyTarget(lambda Z: np.zeros((len(Z), 3)), classes=3).query(X[:, :1], np.zeros(30))


def test_budget_exhausted_raises_before_calling_and_keeps_count(clf):
    X, y, model = clf
    fn = Counting(model.predict)
    target = LabelOnlyTarget(fn, classes=model.classes_, max_queries=45)
    target.query(X[:20], y[:20])
    with pytest.raises(QueryBudgetExceededError, match="20 of max_queries=45 already used"):
        target.query(X[:26], y[:26])
    assert fn.sizes == [20]  # the model was not called for the refused query
    assert target.n_queries == 20
    target.query(X[:25], y[:25])  # exactly the rest of the budget
    assert target.n_queries == 45
    with pytest.raises(QueryBudgetExceededError):
        target.query(X[:1], y[:1])


@pytest.mark.parametrize("attack", [ConfidenceAttack, EntropyAttack, ModifiedEntropyAttack])
def test_label_only_target_is_refused_by_probability_attacks(clf, attack):
    X, y, model = clf
    target = LabelOnlyTarget(model.predict, classes=model.classes_)
    labels = np.arange(30) % 2
    with pytest.raises(ValueError, match=r"revealing class probabilities.*label-only"):
        attack().run(target, X, y, labels)
    with pytest.raises(ValueError, match="revealing class probabilities"):
        get_attack(attack.name).score(target, X, y)


def test_loss_attack_works_on_labels_only(clf):
    X, y, model = clf
    target = LabelOnlyTarget(model.predict, classes=model.classes_)
    result = LossAttack().run(target, X, y, np.arange(30) % 2)
    np.testing.assert_array_equal(result.scores, -(model.predict(X) != y).astype(float))
    assert result.raw_statistic_name == "zero_one"


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 40), batch_size=st.integers(1, 50))
def test_query_counting_and_outputs_do_not_depend_on_chunks(clf, n, batch_size):
    X, y, model = clf
    Xn, yn = np.resize(X, (n, 4)), np.resize(y, n)
    a = LabelOnlyTarget(model.predict, classes=model.classes_, batch_size=batch_size)
    b = CallableTarget(model.predict_proba, classes=model.classes_, batch_size=batch_size)
    out_a, out_b = a.query(Xn, yn), b.query(Xn, yn)
    assert a.n_queries == b.n_queries == n
    assert len(out_a) == len(out_b) == n
    if n:
        np.testing.assert_array_equal(out_a.predictions, model.predict(Xn))
        np.testing.assert_allclose(out_b.probabilities, model.predict_proba(Xn))
