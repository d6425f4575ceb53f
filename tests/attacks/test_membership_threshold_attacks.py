import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.metrics import roc_auc_score
from sklearn.neural_network import MLPClassifier

from privaudit import signals
from privaudit.attacks import (
    ConfidenceAttack,
    EntropyAttack,
    GaussianThresholdAttack,
    LossAttack,
    MembershipAttack,
    ModifiedEntropyAttack,
    available_attacks,
    get_attack,
    register_attack,
    run_attacks,
)
from privaudit.metrics import advantage, binary_metrics, roc_auc
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs, SklearnTarget

CLASSIFICATION_ATTACKS = [LossAttack, ConfidenceAttack, EntropyAttack, ModifiedEntropyAttack]


def make_overfit(seed=0, n=150):
    """Noisy 3-class problem (40% random labels): a wide MLP memorises its members."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, 8))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    y[X[:, 2] > 1] = 2
    flip = rng.random(2 * n) < 0.4
    y[flip] = rng.integers(0, 3, size=int(flip.sum()))
    model = MLPClassifier(hidden_layer_sizes=(128,), alpha=0.0, max_iter=600,
                          random_state=seed)
    model.fit(X[:n], y[:n])
    labels = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]
    return model, X, y, labels


@pytest.fixture(scope="module")
def overfit():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_overfit()


@pytest.fixture(scope="module")
def outputs(overfit):
    model, X, y, _ = overfit
    return SklearnTarget(model, name="mlp").query(X, y)


@pytest.mark.parametrize("cls", CLASSIFICATION_ATTACKS)
def test_members_of_an_overfit_model_score_higher(cls, overfit, outputs):
    _, _, _, labels = overfit
    scores = cls().score(outputs=outputs)
    assert scores[labels == 1].mean() > scores[labels == 0].mean()
    floor = 0.55 if cls is EntropyAttack else 0.7
    assert roc_auc(labels, scores) > floor


def test_scores_are_the_documented_signals(outputs):
    p, idx = outputs.probabilities, outputs.y_index
    np.testing.assert_array_equal(LossAttack().score(outputs=outputs), -outputs.loss)
    np.testing.assert_array_equal(
        ConfidenceAttack().score(outputs=outputs), signals.true_class_confidence(p, idx)
    )
    np.testing.assert_array_equal(EntropyAttack().score(outputs=outputs), -signals.entropy(p))
    np.testing.assert_array_equal(
        ModifiedEntropyAttack().score(outputs=outputs), -signals.modified_entropy(p, idx)
    )


@pytest.mark.parametrize("cls", [*CLASSIFICATION_ATTACKS, GaussianThresholdAttack])
def test_estimator_contract(cls):
    attack = cls()
    # __init__ stores parameters only: no learned state.
    assert not [k for k in vars(attack) if k.endswith("_")]
    params = attack.get_params()
    assert set(params) == set(vars(attack))
    assert repr(attack) == f"{cls.__name__}()"
    assert attack.set_params(**params) is attack
    with pytest.raises(ValueError, match="'params' parameter"):
        attack.set_params(nonsense=1)
    assert isinstance(get_attack(cls.name), cls)


def test_repr_shows_non_default_params():
    assert repr(LossAttack(threshold=0.5)) == "LossAttack(threshold=0.5)"
    assert repr(get_attack("gaussian-threshold", sigma_member=1.0)) == (
        "GaussianThresholdAttack(sigma_member=1.0)"
    )


def test_fit_returns_self_and_calibrates(overfit, outputs):
    model, X, y, labels = overfit
    attack = LossAttack()
    assert attack.fit(model, X[labels == 1], y[labels == 1]) is attack
    # Yeom et al.'s threshold: the average training loss.
    assert attack.threshold_ == pytest.approx(outputs.loss[labels == 1].mean())
    result = attack.run(outputs=outputs, labels=labels)
    np.testing.assert_array_equal(result.predictions, outputs.loss <= attack.threshold_)
    assert result.extra["threshold"] == attack.threshold_
    # With labels, only the members' losses count.
    same = LossAttack().fit(outputs=outputs, labels=labels)
    assert same.threshold_ == pytest.approx(attack.threshold_)


@pytest.mark.parametrize("cls", [ConfidenceAttack, EntropyAttack, ModifiedEntropyAttack])
def test_calibrated_threshold_reaches_the_best_advantage(cls, outputs, overfit):
    _, _, _, labels = overfit
    attack = cls().fit(outputs=outputs, labels=labels)
    result = attack.run(outputs=outputs, labels=labels)
    best = advantage(labels, result.scores)
    assert binary_metrics(labels, result.predictions).advantage == pytest.approx(best)
    with pytest.raises(ValueError, match="'labels' parameter"):
        cls().fit(outputs=outputs, labels=np.ones(len(labels), dtype=int))


def test_fixed_threshold_gives_predictions_without_fit(outputs, overfit):
    _, _, _, labels = overfit
    result = ConfidenceAttack(threshold=0.9).run(outputs=outputs, labels=labels)
    conf = outputs.signal("true_class_confidence")
    np.testing.assert_array_equal(result.predictions, (conf >= 0.9).astype(int))
    assert LossAttack().run(outputs=outputs, labels=labels).predictions is None


def test_run_result_fields_and_both_conventions(overfit):
    model, X, y, labels = overfit
    ids = np.arange(100, 100 + len(y))
    result = LossAttack().run(model, X, y, labels, record_ids=ids, dataset="synthetic")
    assert isinstance(result, AttackResult)
    assert (result.attack, result.target, result.dataset) == ("loss", "MLPClassifier",
                                                              "synthetic")
    assert result.raw_statistic_name == "cross_entropy"
    np.testing.assert_array_equal(result.record_ids, ids)
    assert result.parameters == {"threshold": None}
    # The raw loss (lower = member) and the score give the same AUC.
    assert roc_auc(labels, result.scores) == pytest.approx(
        roc_auc_score(1 - labels, result.raw_statistic)
    )


def test_run_attacks_queries_once(overfit):
    model, X, y, labels = overfit
    target = SklearnTarget(model, name="t")
    results = run_attacks(target, X, y, labels,
                          ["loss", ConfidenceAttack(), "entropy", "modified-entropy"],
                          dataset="d")
    assert target.n_queries == len(y)
    assert [r.attack for r in results] == ["loss", "confidence", "entropy",
                                           "modified-entropy"]
    assert {r.target for r in results} == {"t"}
    # Same numbers as querying separately.
    alone = ModifiedEntropyAttack().score(model, X, y)
    np.testing.assert_array_equal(results[3].scores, alone)


def test_same_seed_same_scores():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = make_overfit(seed=3, n=80)
        b = make_overfit(seed=3, n=80)
    for cls in CLASSIFICATION_ATTACKS:
        np.testing.assert_array_equal(cls().score(*a[:3]), cls().score(*b[:3]))


def test_bad_input_names_the_parameter(overfit, outputs):
    model, X, y, labels = overfit
    with pytest.raises(ValueError, match=r"'labels' parameter of LossAttack.run"):
        LossAttack().run(model, X, y, labels[:-1])
    with pytest.raises(TypeError, match=r"'labels' parameter of LossAttack.run"):
        LossAttack().run(model, X, y)
    with pytest.raises(ValueError, match=r"'labels' parameter of LossAttack.run"):
        LossAttack().run(model, X, y, labels * 2)
    with pytest.raises(TypeError, match=r"'target' parameter of LossAttack.score"):
        LossAttack().score(X=X, y=y)
    with pytest.raises(TypeError, match=r"'outputs' parameter of LossAttack.score"):
        LossAttack().score(outputs={"loss": 1})
    rng = np.random.default_rng(0)
    Xr = rng.normal(size=(20, 2))
    reg = LinearRegression().fit(Xr, Xr[:, 0])
    for cls in (ConfidenceAttack, EntropyAttack, ModifiedEntropyAttack):
        with pytest.raises(ValueError, match=r"'target' parameter of .*must be a "
                                             r"classification target.*regression"):
            cls().run(reg, Xr, Xr[:, 0], np.ones(20, dtype=int))
    label_only = ModelOutputs.from_labels(y, model.predict(X), model.classes_)
    with pytest.raises(ValueError, match="class probabilities"):
        ConfidenceAttack().score(outputs=label_only)
    # The loss attack works on label-only outputs (0-1 loss).
    assert LossAttack().run(outputs=label_only, labels=labels).raw_statistic_name == "zero_one"


def test_registry(monkeypatch):
    import privaudit.attacks._registry as registry

    # The attack registered below must not outlive this test: other tests list the
    # registry's attacks (e.g. those that work on a regression target).
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    assert set(available_attacks()) >= {"loss", "confidence", "entropy", "modified-entropy",
                                        "gaussian-threshold"}
    with pytest.raises(ValueError, match="'name' parameter of get_attack"):
        get_attack("no-such-attack")
    with pytest.raises(TypeError, match="'params' parameter of get_attack"):
        get_attack("loss", sigma=3)
    with pytest.raises(ValueError, match="'name' parameter of register_attack"):
        register_attack("loss", LossAttack)

    class Custom(LossAttack):
        name = "custom-loss-for-test"

    register_attack("custom-loss-for-test", Custom)
    assert isinstance(get_attack("custom-loss-for-test"), MembershipAttack)
