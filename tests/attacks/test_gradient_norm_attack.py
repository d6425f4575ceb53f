import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from torch import nn

from privaudit.attacks import get_attack
from privaudit.attacks.membership._gradient import GradientNormAttack
from privaudit.metrics import roc_auc
from privaudit.targets import LabelOnlyTarget, QueryBudgetExceededError, TorchTarget
from privaudit.training import TorchMLPRecipe


@pytest.fixture(scope="module")
def overfit_digits():
    """A torch MLP trained to zero training loss on 150 digits; all other digits held out."""
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(X))
    mem, non = perm[:150], perm[150:]
    net = TorchMLPRecipe((64,), epochs=200, batch_size=32).train(X[mem], y[mem], random_state=0)
    Xa = np.concatenate([X[mem], X[non]])
    ya = np.concatenate([y[mem], y[non]])
    labels = np.r_[np.ones(len(mem)), np.zeros(len(non))].astype(int)
    return net, Xa, ya, labels


def small_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()


@pytest.mark.slow
def test_members_have_smaller_gradients(overfit_digits):
    net, X, y, labels = overfit_digits
    target = TorchTarget(net)
    result = GradientNormAttack().run(target, X, y, labels)
    auc = roc_auc(labels, result.scores)
    # Measured: AUC 0.686 for the gradient norm and 0.687 for the loss (test accuracy 0.92).
    assert auc > 0.6
    assert result.extra["loss_auc"] > 0.6  # the loss agrees in direction
    assert abs(auc - result.extra["loss_auc"]) < 0.05
    assert result.attack == "gradient-norm"
    assert result.raw_statistic_name == "gradient_norm"
    np.testing.assert_array_equal(result.scores, -result.raw_statistic)
    feats = GradientNormAttack().features(target, X, y)
    np.testing.assert_array_equal(feats.gradient_norm, result.raw_statistic)
    assert spearmanr(feats.gradient_norm, feats.loss).statistic > 0.9
    # Members' median gradient is smaller than non-members'.
    g = feats.gradient_norm
    assert np.median(g[labels == 1]) < np.median(g[labels == 0])
    # One pass per record: the loss comes with the gradients.
    assert target.n_queries == 2 * len(y)


def test_scores_are_minus_the_targets_gradient_norms():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=12)
    target = TorchTarget(small_net())
    np.testing.assert_array_equal(GradientNormAttack().score(target, X, y),
                                  -target.per_sample_gradient_norms(X, y))
    last = ["2.weight", "2.bias"]
    np.testing.assert_array_equal(GradientNormAttack(params=last).score(target, X, y),
                                  -target.per_sample_gradient_norms(X, y, params=last))
    # A module in eval mode is wrapped automatically; one in train mode is refused.
    net = small_net()
    np.testing.assert_array_equal(GradientNormAttack().score(net, X, y),
                                  -target.per_sample_gradient_norms(X, y))
    with pytest.raises(ValueError, match=r"model\.eval\(\)"):
        GradientNormAttack().score(net.train(), X, y)


def test_regression_targets_work():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(10, 4)).astype(np.float32)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 1)).eval()
    result = GradientNormAttack().run(TorchTarget(net, task="regression"), X, rng.normal(size=10),
                                      np.arange(10) % 2)
    assert np.all(result.raw_statistic >= 0) and len(result.scores) == 10


def test_non_torch_targets_are_refused_clearly():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 4))
    y = rng.integers(0, 2, size=20)
    model = LogisticRegression().fit(X, y)
    for target in (model, LabelOnlyTarget(model.predict, classes=2)):
        with pytest.raises(TypeError, match=r"'target' parameter of GradientNormAttack.run must "
                                            "be a TorchTarget"):
            GradientNormAttack().run(target, X, y, y)
    with pytest.raises(TypeError, match="'outputs' parameter"):
        GradientNormAttack().score(outputs=object())
    with pytest.raises(TypeError, match="'X' parameter"):
        GradientNormAttack().score(TorchTarget(small_net()))
    with pytest.raises(ValueError, match="'labels' parameter"):
        GradientNormAttack().run(TorchTarget(small_net()), X[:, :4].astype(np.float32),
                                 y % 3, labels=[1, 0])


def test_budget_is_checked_before_computing():
    X = np.zeros((10, 4), dtype=np.float32)
    y = np.zeros(10, dtype=int)
    target = TorchTarget(small_net(), max_queries=9)
    with pytest.raises(QueryBudgetExceededError):
        GradientNormAttack().run(target, X, y, np.arange(10) % 2)
    assert target.n_queries == 0


def test_registered():
    attack = get_attack("gradient-norm", params=["2.weight"])
    assert isinstance(attack, GradientNormAttack) and attack.params == ["2.weight"]
