import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from privaudit.attacks import get_attack, run_attacks
from privaudit.attacks.membership._label_only import LabelOnlyAttack, _translate
from privaudit.metrics import roc_auc
from privaudit.targets import (
    CallableTarget,
    LabelOnlyTarget,
    ModelOutputs,
    QueryBudgetExceededError,
    SklearnTarget,
)


class Counting:
    def __init__(self, fn):
        self.fn = fn
        self.sizes = []
        self.inputs = []

    def __call__(self, X):
        self.sizes.append(len(X))
        self.inputs.append(X)
        return self.fn(X)


@pytest.fixture(scope="module")
def digits_audit():
    """A 1-nearest-neighbour classifier (memorises its training set) on half of digits."""
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(X))
    h = len(X) // 2
    mem, non = perm[:h], perm[h:2 * h]
    model = KNeighborsClassifier(1).fit(X[mem], y[mem])
    Xa = np.concatenate([X[mem], X[non]])
    ya = np.concatenate([y[mem], y[non]])
    labels = np.r_[np.ones(h), np.zeros(h)].astype(int)
    return model, Xa, ya, labels


def threshold_rule(X):
    """1-D classifier: label 1 iff the first feature is > 0."""
    return (np.asarray(X)[:, 0] > 0).astype(int)


@pytest.mark.slow
def test_members_of_a_memorising_model_score_higher(digits_audit):
    model, X, y, labels = digits_audit
    target = LabelOnlyTarget(model.predict, classes=np.arange(10))
    clean = (model.predict(X) == y).astype(float)
    clean_auc = roc_auc(labels, clean)  # 1-NN is right on members *and* most non-members
    noise = LabelOnlyAttack(noise_scale=1.0, random_state=0).run(target, X, y, labels)
    boundary = LabelOnlyAttack("boundary", random_state=0).run(target, X, y, labels)
    # Measured: clean correctness 0.508, noise robustness 0.683, boundary distance 0.645.
    assert clean_auc < 0.55
    assert roc_auc(labels, noise.scores) > 0.6
    assert roc_auc(labels, boundary.scores) > 0.6
    assert noise.attack == boundary.attack == "label-only"
    assert noise.raw_statistic_name == "perturbed_accuracy"
    assert boundary.raw_statistic_name == "boundary_distance"
    n = len(y)
    assert noise.extra["queries_used"] == noise.extra["queries_planned"] == n * 17
    assert boundary.extra["queries_used"] <= boundary.extra["queries_planned"] == n * (1 + 8 * 9)
    assert target.n_queries == noise.extra["queries_used"] + boundary.extra["queries_used"]


def test_planned_queries_by_hand():
    assert LabelOnlyAttack(n_noise=4).planned_queries(10, 64) == 10 + 10 * 4
    assert LabelOnlyAttack(n_noise=4).planned_queries(10, 64, clean_query=False) == 40
    # 3 x 3 translations minus the identity = 8, with flips 17, plus noise.
    assert LabelOnlyAttack(n_noise=0, image_shape=(8, 8)).planned_queries(10, 64) == 10 + 80
    assert LabelOnlyAttack(n_noise=2, image_shape=(1, 8, 8), flips=True).planned_queries(
        10, 64) == 10 + 10 * 19
    assert LabelOnlyAttack(n_noise=0, image_shape=(8, 8), max_shift=2).planned_queries(
        1, 64) == 1 + 24
    assert LabelOnlyAttack("boundary", n_directions=3, n_steps=5).planned_queries(10, 4) == \
        10 + 10 * 3 * 6


def test_budget_too_small_raises_before_any_query(digits_audit):
    model, X, y, labels = digits_audit
    X, y, labels = X[:20], y[:20], labels[:20]
    fn = Counting(model.predict)
    attack = LabelOnlyAttack(n_noise=4, random_state=0)
    target = LabelOnlyTarget(fn, classes=np.arange(10), max_queries=99)
    with pytest.raises(QueryBudgetExceededError, match=r"needs up to 100 .*Nothing was queried"):
        attack.run(target, X, y, labels)
    assert fn.sizes == [] and target.n_queries == 0
    boundary = LabelOnlyAttack("boundary", n_directions=2, n_steps=3)
    with pytest.raises(QueryBudgetExceededError):
        boundary.score(target, X, y)
    assert fn.sizes == []
    # Exactly enough budget: the attack runs and uses all of it.
    target = LabelOnlyTarget(fn, classes=np.arange(10), max_queries=100)
    result = attack.run(target, X, y, labels)
    assert target.n_queries == 100 == result.extra["queries_used"]
    # Copies are sent in few large queries, not one per record.
    assert fn.sizes == [20, 80]


def test_budget_running_out_mid_attack_gives_no_result(digits_audit):
    model, X, y, labels = digits_audit

    class Flaky:
        """A target without a declared budget whose provider cuts it off after one call."""

        name, task, classes_, n_classes, n_queries = "flaky", "classification", np.arange(10), \
            10, 0

        def query(self, X, y):
            self.n_queries += len(X)
            if self.n_queries > len(X):
                raise QueryBudgetExceededError("provider budget exhausted")
            return ModelOutputs.from_labels(y, model.predict(X), self.classes_)

    with pytest.raises(QueryBudgetExceededError, match="provider budget"):
        LabelOnlyAttack(random_state=0).run(Flaky(), X[:10], y[:10], labels[:10])


def test_same_seed_same_scores(digits_audit):
    model, X, y, _ = digits_audit
    target = LabelOnlyTarget(model.predict, classes=np.arange(10))
    X, y = X[::8], y[::8]
    for method in ("augmentation", "boundary"):
        a = LabelOnlyAttack(method, random_state=3, noise_scale=1.0).score(target, X, y)
        b = LabelOnlyAttack(method, random_state=3, noise_scale=1.0).score(target, X, y)
        c = LabelOnlyAttack(method, random_state=4, noise_scale=1.0).score(target, X, y)
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_augmentation_matches_a_slow_per_record_loop():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(25, 3))
    y = threshold_rule(X + rng.normal(scale=0.5, size=X.shape))
    k, sigma = 6, 0.7
    attack = LabelOnlyAttack(n_noise=k, noise_scale=sigma, random_state=11)
    result = attack.run(LabelOnlyTarget(threshold_rule, classes=2), X, y, np.arange(25) % 2)
    # Reference: the same draws (one block, copy-major), then one record and one copy at
    # a time.
    noise = np.random.default_rng(11).standard_normal((k, 25, 3)) * sigma * X.std(axis=0)
    expected = np.empty(25)
    for i in range(25):
        clean = threshold_rule(X[i:i + 1])[0] == y[i]
        robust = np.mean([threshold_rule(X[i:i + 1] + noise[j, i])[0] == y[i]
                          for j in range(k)])
        expected[i] = clean + robust / 2
    np.testing.assert_allclose(result.scores, expected)
    # Correctness first: every misclassified record ranks below every correct one.
    correct = threshold_rule(X) == y
    assert result.scores[~correct].max() < result.scores[correct].min()


def test_boundary_distance_pinned_on_a_threshold_rule():
    # One feature, boundary at 0, population std 1: the distance is |x| for correct records.
    X = np.array([[1.0], [2.0], [3.0], [-1.5], [0.5]])
    y = np.array([1, 1, 1, 1, 1])  # the fourth record is misclassified
    attack = LabelOnlyAttack("boundary", n_directions=16, n_steps=12, max_distance=4.0,
                             random_state=0).fit(X=np.array([[-1.0], [1.0]]))
    np.testing.assert_array_equal(attack.feature_scale_, [1.0])
    scores = attack.score(LabelOnlyTarget(threshold_rule, classes=2), X, y)
    np.testing.assert_allclose(scores, [1.0, 2.0, 3.0, 0.0, 0.5], atol=4.0 / 2**12)
    assert np.all(scores[[0, 1, 2, 4]] >= [1.0, 2.0, 3.0, 0.5])  # bisection keeps the flip side
    # Beyond the search radius the distance is censored at max_distance.
    far = attack.set_params(max_distance=2.5).score(LabelOnlyTarget(threshold_rule, classes=2),
                                                    X, y)
    np.testing.assert_allclose(far, [1.0, 2.0, 2.5, 0.0, 0.5], atol=2.5 / 2**12)


def test_translations_and_flips():
    img = np.arange(9.0).reshape(1, 1, 3, 3)
    np.testing.assert_array_equal(_translate(img, 1, 0)[0, 0],
                                  [[0, 0, 0], [0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(_translate(img, 0, -1)[0, 0],
                                  [[1, 2, 0], [4, 5, 0], [7, 8, 0]])
    np.testing.assert_array_equal(_translate(img, 0, 0), img)
    # The queried copies are exactly the shifted (and flipped) images.
    fn = Counting(lambda Z: np.zeros(len(Z), dtype=int))
    X = np.arange(2 * 9.0).reshape(2, 9)
    LabelOnlyAttack(n_noise=0, image_shape=(3, 3), flips=True).score(
        LabelOnlyTarget(fn, classes=2), X, np.zeros(2, dtype=int))
    copies = fn.inputs[1].reshape(-1, 2, 3, 3)
    assert copies.shape[0] == 17
    images = X.reshape(2, 3, 3)
    expected = {(dy, dx, f) for f in (False, True) for dy in (-1, 0, 1) for dx in (-1, 0, 1)}
    expected.discard((0, 0, False))
    got = {tuple(c.ravel()) for c in copies[:, 0]}
    want = {tuple(_translate((images[:1, None, :, ::-1] if f else images[:1, None]), dy, dx)
                  .ravel()) for dy, dx, f in expected}
    assert got == want


def test_constant_features_are_never_perturbed_and_dataframes_stay_dataframes():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.normal(size=30), "const": 5.0, "b": rng.normal(size=30)})
    y = (frame["a"] > 0).astype(int).to_numpy()
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(frame, y)
    seen = Counting(model.predict)
    for method in ("augmentation", "boundary"):
        LabelOnlyAttack(method, random_state=0, n_directions=2, n_steps=2).score(
            LabelOnlyTarget(seen, classes=[0, 1]), frame, y)
    for batch in seen.inputs:
        assert isinstance(batch, pd.DataFrame) and list(batch.columns) == ["a", "const", "b"]
        assert np.all(batch["const"] == 5.0)


def test_fit_calibrates_the_scale_on_the_population():
    X = np.array([[0.0, 0.0], [2.0, 10.0]])
    attack = LabelOnlyAttack().fit(X=X)
    np.testing.assert_array_equal(attack.feature_scale_, [1.0, 5.0])
    with pytest.raises(ValueError, match="records of 2 values, as the population"):
        attack.score(LabelOnlyTarget(threshold_rule, classes=2), np.ones((3, 3)),
                     np.ones(3, dtype=int))


def test_works_on_probability_targets_and_reuses_clean_outputs(digits_audit):
    model, X, y, labels = digits_audit
    X, y, labels = X[:40], y[:40], labels[:40]
    target = SklearnTarget(model, max_queries=10_000)
    clean = target.query(X, y)
    a = LabelOnlyAttack(n_noise=3, random_state=1)
    with_outputs = a.run(target, X, y, labels, outputs=clean)
    assert with_outputs.extra["queries_used"] == 40 * 3
    fresh = a.score(target, X, y)
    np.testing.assert_array_equal(with_outputs.scores, fresh)
    prob = CallableTarget(model.predict_proba, classes=np.arange(10))
    np.testing.assert_array_equal(a.score(prob, X, y), fresh)


def test_registered_and_bad_input():
    assert isinstance(get_attack("label-only", method="boundary"), LabelOnlyAttack)
    target = LabelOnlyTarget(threshold_rule, classes=2)
    X, y = np.ones((4, 2)), np.ones(4, dtype=int)
    with pytest.raises(ValueError, match=r"'method' parameter of LabelOnlyAttack must"):
        LabelOnlyAttack("hopskipjump").score(target, X, y)
    with pytest.raises(ValueError, match="'n_noise' parameter"):
        LabelOnlyAttack(n_noise=-1).score(target, X, y)
    with pytest.raises(ValueError, match="'image_shape' parameter"):
        LabelOnlyAttack(image_shape=(3, 3)).score(target, X, y)
    with pytest.raises(ValueError, match="'noise_scale' parameter"):
        LabelOnlyAttack(noise_scale=0).score(target, X, y)
    with pytest.raises(TypeError, match="outputs= alone is not enough"):
        LabelOnlyAttack().score(outputs=target.query(X, y))
    with pytest.raises(ValueError, match="no feature varies"):
        LabelOnlyAttack().fit(X=np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"'X' parameter of LabelOnlyAttack.fit"):
        LabelOnlyAttack().fit(target)
    with pytest.raises(ValueError, match="'labels' parameter"):
        LabelOnlyAttack().run(target, X, y, labels=[1, 0])
    regressor = CallableTarget(lambda Z: Z[:, 0], task="regression")
    with pytest.raises(ValueError, match="a classification target"):
        LabelOnlyAttack().score(regressor, X, np.ones(4))
    with pytest.raises(ValueError, match=r"fit\(X=population\)"):
        LabelOnlyAttack().score(target, X, y)  # one record repeated: nothing to scale by
    LabelOnlyAttack().fit(X=np.eye(2)).score(target, X, y)  # a population fixes it
    with pytest.raises(TypeError, match="numeric records"):
        LabelOnlyAttack().score(target, np.array([["a", "b"]] * 4), y)
    # run_attacks queries once and hands out outputs only: the attack says it needs more.
    with pytest.raises(TypeError, match="label-only attack queries the target"):
        run_attacks(target, X, y, [1, 0, 1, 0], ["label-only"])


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 15), k=st.integers(1, 5))
def test_score_ranges(seed, n, k):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 2, size=n)
    target = LabelOnlyTarget(threshold_rule, classes=2)
    correct = threshold_rule(X) == y
    aug = LabelOnlyAttack(n_noise=k, random_state=seed).score(target, X, y)
    # c + j / (2k) for j correct copies out of k.
    np.testing.assert_allclose((aug - correct) * 2 * k, np.round((aug - correct) * 2 * k),
                               atol=1e-9)
    assert np.all((aug >= correct) & (aug <= correct + 0.5))
    bd = LabelOnlyAttack("boundary", n_directions=3, n_steps=4, max_distance=2.0,
                         random_state=seed).score(target, X, y)
    assert np.all(bd[~correct] == 0)
    assert np.all((bd[correct] > 0) & (bd[correct] <= 2.0))
