import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from privaudit.targets import (
    QueryBudgetExceededError,
    Target,
    TorchTarget,
    load_torch_model,
    save_torch_model,
)


def make_net(seed: int = 0, n_in: int = 5, n_out: int = 3) -> nn.Module:
    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Linear(n_in, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, n_out)
    )
    # Non-trivial running statistics, so eval-mode batch norm is not the identity.
    with torch.no_grad():
        net[1].running_mean.uniform_(-0.5, 0.5)
        net[1].running_var.uniform_(0.5, 2.0)
    return net.eval()


class SmallConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.relu(self.conv(x.reshape(-1, 1, 4, 4)))
        return self.fc(z.flatten(1))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5)).astype(np.float32)
    y = rng.integers(0, 3, size=40)
    return X, y


def slow_grad_norms(net, X, y, loss_fn, names=None):
    """Reference: one loss.backward() per record, norms over the chosen parameters."""
    out = []
    for i in range(len(y)):
        net.zero_grad()
        pred = net(torch.as_tensor(X[i:i + 1]))
        loss = loss_fn(pred, torch.as_tensor(y[i:i + 1]))
        loss.backward()
        total = 0.0
        for name, p in net.named_parameters():
            if names is None or name in names:
                total += float((p.grad.double() ** 2).sum())
        out.append(np.sqrt(total))
    net.zero_grad()
    return np.array(out)


def test_is_a_target_and_infers_classes(data):
    target = TorchTarget(make_net())
    assert isinstance(target, Target)
    np.testing.assert_array_equal(target.classes_, [0, 1, 2])
    assert target.n_classes == 3
    assert target.name == "Sequential"
    net = make_net()
    net.classes_ = np.array(["a", "b", "c"])
    assert list(TorchTarget(net).classes_) == ["a", "b", "c"]
    assert list(TorchTarget(make_net(), classes=[5, 7, 9]).classes_) == [5, 7, 9]


@pytest.mark.parametrize("method", ["query", "per_sample_loss", "per_sample_gradient_norms"])
def test_train_mode_is_refused_at_query_time(data, method):
    X, y = data
    net = make_net()
    target = TorchTarget(net, max_queries=1000)
    net.train()  # after wrapping: the check happens when the module is run
    with pytest.raises(ValueError, match=r"training mode.*model\.eval\(\)"):
        getattr(target, method)(X, y)
    assert target.n_queries == 0
    net[3].train()  # one submodule left in training mode is enough to be refused
    net[0].eval()
    net.eval()
    net[3].train()
    with pytest.raises(ValueError, match="training mode"):
        target.query(X, y)
    net.eval()
    assert len(target.query(X, y)) == len(y)


def test_probabilities_are_a_float64_softmax_of_the_logits(data):
    X, y = data
    net = make_net()
    out = TorchTarget(net).query(X, y)
    with torch.no_grad():
        logits = net(torch.as_tensor(X)).double()
    expected = torch.softmax(logits, dim=1).numpy()
    np.testing.assert_allclose(out.probabilities, expected, rtol=1e-12, atol=1e-15)
    assert out.probabilities.dtype == np.float64
    np.testing.assert_allclose(out.loss, F.cross_entropy(logits, torch.as_tensor(y),
                                                         reduction="none").numpy(), rtol=1e-6)
    np.testing.assert_array_equal(out.predictions, logits.argmax(1).numpy())


def test_confident_records_keep_a_positive_loss():
    # A float32 softmax rounds p = 1 - 2e-9 to 1 (loss 0); float64 keeps it.
    net = nn.Linear(1, 2, bias=False).eval()
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[20.0], [0.0]]))
    out = TorchTarget(net).query(np.ones((1, 1), dtype=np.float32), np.array([0]))
    assert torch.softmax(torch.tensor([[20.0, 0.0]]), 1)[0, 0].item() == 1.0
    np.testing.assert_allclose(out.loss, [np.log1p(np.exp(-20.0))], rtol=1e-6)


def test_chunked_equals_unchunked(data):
    X, y = data
    net = make_net()
    small = TorchTarget(net, batch_size=7)
    whole = TorchTarget(net, batch_size=4096)
    np.testing.assert_allclose(small.query(X, y).probabilities,
                               whole.query(X, y).probabilities, rtol=1e-6)
    np.testing.assert_allclose(small.per_sample_loss(X, y), whole.per_sample_loss(X, y),
                               rtol=1e-5)
    np.testing.assert_allclose(whole.per_sample_gradient_norms(X, y, batch_size=3),
                               whole.per_sample_gradient_norms(X, y), rtol=1e-5)
    # DataFrames and tensors are accepted and give the same numbers.
    frame = pd.DataFrame(X, columns=list("abcde"))
    np.testing.assert_allclose(small.query(frame, y).probabilities,
                               whole.query(torch.as_tensor(X), y).probabilities, rtol=1e-6)


def test_per_sample_loss_matches_query_and_torch(data):
    X, y = data
    net = make_net()
    target = TorchTarget(net)
    with torch.no_grad():
        expected = F.cross_entropy(net(torch.as_tensor(X)), torch.as_tensor(y),
                                   reduction="none").numpy()
    np.testing.assert_allclose(target.per_sample_loss(X, y), expected, rtol=1e-5)
    np.testing.assert_allclose(target.per_sample_loss(X, y), target.query(X, y).loss, rtol=1e-5)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12))
def test_gradient_norms_equal_a_loop_of_backward(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = rng.integers(0, 3, size=n)
    net = make_net(seed)
    fast, loss = TorchTarget(net).per_sample_gradient_norms(X, y, return_loss=True)
    np.testing.assert_allclose(fast, slow_grad_norms(net, X, y, F.cross_entropy), rtol=1e-4)
    np.testing.assert_allclose(loss, TorchTarget(net).per_sample_loss(X, y), rtol=1e-5)


def test_gradient_norms_of_selected_parameters_and_conv_nets():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(9, 16)).astype(np.float32)
    y = rng.integers(0, 3, size=9)
    torch.manual_seed(1)
    conv = SmallConv().eval()
    target = TorchTarget(conv, classes=[0, 1, 2])
    np.testing.assert_allclose(target.per_sample_gradient_norms(X, y),
                               slow_grad_norms(conv, X, y, F.cross_entropy), rtol=1e-4)
    names = ["fc.weight", "fc.bias"]
    np.testing.assert_allclose(target.per_sample_gradient_norms(X, y, params=names),
                               slow_grad_norms(conv, X, y, F.cross_entropy, names), rtol=1e-4)
    # Frozen parameters are left out of "all".
    conv.conv.weight.requires_grad_(False)
    conv.conv.bias.requires_grad_(False)
    np.testing.assert_allclose(target.per_sample_gradient_norms(X, y),
                               slow_grad_norms(conv, X, y, F.cross_entropy, names), rtol=1e-4)
    with pytest.raises(ValueError, match=r"'params' parameter .*unknown names \['nope'\]"):
        target.per_sample_gradient_norms(X, y, params=["nope"])


def test_probability_outputs_and_custom_loss(data):
    X, y = data
    net = nn.Sequential(make_net(), nn.Softmax(dim=1)).eval()
    target = TorchTarget(net, output="probabilities", classes=[0, 1, 2])
    out = target.query(X, y)
    with torch.no_grad():
        p = net(torch.as_tensor(X)).double().numpy()
    np.testing.assert_allclose(out.probabilities, p, rtol=1e-12)

    def nll(pred, t):
        return F.nll_loss(torch.log(pred), t)

    np.testing.assert_allclose(target.per_sample_gradient_norms(X, y),
                               slow_grad_norms(net, X, y, nll), rtol=1e-4)
    # A custom loss is used by the white-box methods.
    smooth = nn.CrossEntropyLoss(label_smoothing=0.1)
    custom = TorchTarget(make_net(), loss=smooth)
    np.testing.assert_allclose(custom.per_sample_gradient_norms(X, y),
                               slow_grad_norms(make_net(), X, y, smooth), rtol=1e-4)
    # Logits declared as probabilities are caught.
    with pytest.raises(ValueError, match="output='logits'"):
        TorchTarget(make_net(), output="probabilities").query(X, y)


def test_regression_module():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 4)).astype(np.float32)
    y = rng.normal(size=15)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).eval()
    target = TorchTarget(net, task="regression")
    out = target.query(X, y)
    with torch.no_grad():
        pred = net(torch.as_tensor(X))[:, 0].double().numpy()
    np.testing.assert_allclose(out.predictions, pred, rtol=1e-6)
    np.testing.assert_allclose(out.loss, (y - pred) ** 2, rtol=1e-6)

    def mse(p, t):
        return F.mse_loss(p.reshape(-1), t.reshape(-1).float())

    np.testing.assert_allclose(target.per_sample_gradient_norms(X, y),
                               slow_grad_norms(net, X, y.astype(np.float32), mse), rtol=1e-4)


def test_bad_input_is_a_clear_error(data):
    X, y = data
    with pytest.raises(TypeError, match="'module' parameter of TorchTarget must be a torch"):
        TorchTarget(object())
    with pytest.raises(ValueError, match="'output' parameter"):
        TorchTarget(make_net(), output="scores")
    # Mismatched class counts: four classes declared, three outputs.
    target = TorchTarget(make_net(), classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="has 4 classes"):
        target.query(X, y)
    # Unknown labels are refused before any query is spent.
    target = TorchTarget(make_net(), max_queries=100)
    with pytest.raises(ValueError, match=r"'y' parameter of TorchTarget.query"):
        target.query(X, y + 5)
    with pytest.raises(ValueError, match="'y' parameter"):
        target.query(X, y[:-1])
    assert target.n_queries == 0
    with pytest.raises(ValueError, match="'classes' parameter"):
        TorchTarget(nn.ReLU())


def test_budget_counts_records_and_stops_before_running(data):
    X, y = data
    calls = []
    net = make_net()
    net.register_forward_hook(lambda *args: calls.append(1))
    target = TorchTarget(net, max_queries=50, batch_size=16)
    target.query(X, y)
    assert target.n_queries == 40 and len(calls) == 3
    for method in ("query", "per_sample_loss", "per_sample_gradient_norms"):
        with pytest.raises(QueryBudgetExceededError, match="max_queries=50"):
            getattr(target, method)(X[:11], y[:11])
    assert target.n_queries == 40 and len(calls) == 3
    target.per_sample_loss(X[:10], y[:10])
    assert target.n_queries == 50


def test_safetensors_round_trip(tmp_path, data):
    X, y = data
    net = make_net(4)
    path = tmp_path / "model.safetensors"
    save_torch_model(net, path)
    loaded = load_torch_model(path, lambda: make_net(99))
    assert not loaded.training
    np.testing.assert_array_equal(TorchTarget(loaded).query(X, y).probabilities,
                                  TorchTarget(net).query(X, y).probabilities)
    # An architecture that does not fit is a clear error.
    with pytest.raises(ValueError, match="do not fit"):
        load_torch_model(path, lambda: make_net(0, n_out=4))
    with pytest.raises(ValueError, match="'key' parameter"):
        load_torch_model(path, make_net, key="state_dict")


def test_pt_files_load_with_weights_only(tmp_path, data):
    X, y = data
    net = make_net(5)
    expected = TorchTarget(net).query(X, y).probabilities
    state = tmp_path / "state.pt"
    torch.save(net.state_dict(), state)
    np.testing.assert_array_equal(
        TorchTarget(load_torch_model(state, make_net)).query(X, y).probabilities, expected)
    ckpt = tmp_path / "ckpt.pt"
    torch.save({"state_dict": net.state_dict(), "epoch": 3}, ckpt)
    with pytest.raises(ValueError, match="pass key="):
        load_torch_model(ckpt, make_net)
    np.testing.assert_array_equal(
        TorchTarget(load_torch_model(ckpt, make_net, key="state_dict")).query(X, y)
        .probabilities, expected)
    # A whole pickled module would execute code when loaded: always refused; its
    # state dict, saved by its owner, loads to the same model.
    whole = tmp_path / "whole.pt"
    torch.save(net, whole)
    with pytest.raises(ValueError, match="unpickle"):
        load_torch_model(whole, make_net)
    with pytest.raises(ValueError, match="'allow_pickle' parameter"):
        load_torch_model(whole, None, allow_pickle=True)
    converted = tmp_path / "converted.pt"
    torch.save(net.state_dict(), converted)
    np.testing.assert_array_equal(
        TorchTarget(load_torch_model(converted, make_net)).query(X, y).probabilities,
        expected)
    with pytest.raises(ValueError, match="'path' parameter"):
        load_torch_model(tmp_path / "missing.pt", make_net)


def test_importing_privaudit_targets_does_not_import_torch():
    code = ("import sys, privaudit.targets, privaudit.training, privaudit.attacks; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_missing_torch_names_the_extra():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ImportError('No module named torch')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from privaudit.targets import TorchTarget\n"
        "try:\n    TorchTarget(object())\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "pip install 'privaudit[torch]'" in out
