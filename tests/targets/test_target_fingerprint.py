"""Each target's own fingerprint(): stable across loads and processes, sensitive to the model.

A result store keys finished results on the fingerprint: a digest that moves between two
loads of one file loses every saved result; one that misses a change reuses a stale result.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from privaudit.targets import (
    CallableTarget,
    LabelOnlyTarget,
    SklearnTarget,
    estimator_fingerprint,
    load_sklearn_model,
    save_sklearn_model,
    target_fingerprint,
)

pytestmark = pytest.mark.filterwarnings("ignore", category=ConvergenceWarning)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:300], y[:300]


def _models(seed: int) -> dict:
    return {
        "mlp": MLPClassifier(hidden_layer_sizes=(16,), max_iter=30, random_state=seed),
        "rf": RandomForestClassifier(n_estimators=5, random_state=seed),
        "pipeline": make_pipeline(
            StandardScaler(), MLPClassifier(hidden_layer_sizes=(8,), max_iter=30,
                                            random_state=seed)),
    }


def _fingerprints_in_subprocess(paths) -> list[str]:
    code = (
        "import sys\n"
        "from privaudit.targets import SklearnTarget, load_sklearn_model\n"
        "for path in sys.argv[1:]:\n"
        "    print(SklearnTarget(load_sklearn_model(path)).fingerprint())\n"
    )
    return subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True,
                          text=True, check=True).stdout.split()


@pytest.fixture(scope="module")
def saved_models(digits, tmp_path_factory):
    """Each kind fitted and saved, and its fingerprint as another process reads it.

    One process reads all three files: a process costs about 5 s of CPU to import
    scikit-learn and skops, the fingerprints a fraction of a second.
    """
    X, y = digits
    folder = tmp_path_factory.mktemp("fingerprints")
    paths = {kind: folder / f"{kind}.skops" for kind in _models(0)}
    for kind, model in _models(0).items():
        save_sklearn_model(model.fit(X, y), paths[kind])
    read = _fingerprints_in_subprocess(paths.values())
    return paths, dict(zip(paths, read, strict=True))


@pytest.mark.parametrize("kind", ["mlp", "rf", "pipeline"])
def test_sklearn_fingerprint_stable_across_loads_and_processes(kind, saved_models):
    paths, in_another_process = saved_models
    first = SklearnTarget(load_sklearn_model(paths[kind])).fingerprint()
    second = SklearnTarget(load_sklearn_model(paths[kind])).fingerprint()
    assert isinstance(first, str) and len(first) == 20
    assert first == second
    assert in_another_process[kind] == first


@pytest.mark.parametrize("kind", ["mlp", "rf", "pipeline"])
def test_sklearn_fingerprint_changes_with_parameters(kind, digits):
    X, y = digits
    model = _models(0)[kind].fit(X, y)
    before = SklearnTarget(model).fingerprint()
    assert SklearnTarget(_models(1)[kind].fit(X, y)).fingerprint() != before
    assert SklearnTarget(_models(0)[kind].fit(X[:200], y[:200])).fingerprint() != before
    model.set_params(**{next(k for k in model.get_params() if k.endswith("random_state")): 7})
    assert SklearnTarget(model).fingerprint() != before  # a hyperparameter counts too


def test_sklearn_fingerprint_moved_to_targets(digits):
    X, y = digits
    model = _models(0)["rf"].fit(X, y)
    assert estimator_fingerprint(model) == estimator_fingerprint(model)
    import privaudit.targets

    assert "estimator_fingerprint" in privaudit.targets.__all__
    # The task a target is audited for is part of its fingerprint.
    assert SklearnTarget(model).fingerprint() != SklearnTarget(
        model, task="regression").fingerprint()


def test_callable_targets_have_no_fingerprint_unless_given(digits):
    X, y = digits
    model = _models(0)["rf"].fit(X, y)
    assert CallableTarget(model.predict_proba, classes=model.classes_).fingerprint() is None
    assert LabelOnlyTarget(model.predict, classes=model.classes_).fingerprint() is None
    a = CallableTarget(model.predict_proba, classes=model.classes_, fingerprint="rf-v1")
    b = CallableTarget(model.predict_proba, classes=model.classes_, fingerprint="rf-v2")
    c = LabelOnlyTarget(model.predict, classes=model.classes_, fingerprint="rf-v1")
    fps = {a.fingerprint(), b.fingerprint(), c.fingerprint()}
    assert len(fps) == 3 and all(isinstance(f, str) for f in fps)
    # Other column labels: the same string, but other answers per record.
    d = CallableTarget(model.predict_proba, classes=model.classes_[::-1], fingerprint="rf-v1")
    assert d.fingerprint() != a.fingerprint()


@pytest.mark.parametrize("bad", [3, b"v1", ""])
def test_callable_fingerprint_must_be_a_string(bad):
    with pytest.raises(TypeError, match="'fingerprint' parameter of CallableTarget"):
        CallableTarget(lambda X: X, classes=2, fingerprint=bad)
    with pytest.raises(TypeError, match="'fingerprint' parameter of LabelOnlyTarget"):
        LabelOnlyTarget(lambda X: X, classes=2, fingerprint=bad)


def test_target_fingerprint_checks_what_an_artefact_returns():
    class Legacy:  # a target written before fingerprint() existed
        name, task, n_queries = "legacy", "classification", 0

    class Bad:
        name, task, n_queries, reveals_probabilities = "bad", "classification", 0, True

        def fingerprint(self):
            return 12345

    assert target_fingerprint(Legacy()) is None
    with pytest.raises(TypeError, match="non-empty str or None"):
        target_fingerprint(Bad())


# ----------------------------------------------------------------------------- torch
def _net(seed: int = 0, activation=None):
    torch.manual_seed(seed)
    act = activation if activation is not None else torch.nn.ReLU()
    return torch.nn.Sequential(torch.nn.Linear(4, 8), act, torch.nn.Linear(8, 3)).eval()


def _torch_target(module, **kwargs):
    from privaudit.targets import TorchTarget

    return TorchTarget(module, **kwargs)


def test_torch_fingerprint_stable_across_loads_and_processes(tmp_path):
    from privaudit.targets import load_torch_model, save_torch_model

    path = tmp_path / "net.safetensors"
    save_torch_model(_net(0), path)
    first = _torch_target(load_torch_model(path, lambda: _net(5))).fingerprint()
    second = _torch_target(load_torch_model(path, lambda: _net(6))).fingerprint()
    assert isinstance(first, str) and first == second
    code = (
        "import sys, torch\n"
        "from privaudit.targets import TorchTarget, load_torch_model\n"
        "net = lambda: torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),"
        " torch.nn.Linear(8, 3))\n"
        "print(TorchTarget(load_torch_model(sys.argv[1], net)).fingerprint())\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == first


def test_torch_fingerprint_changes_with_parameters():
    net = _net(0)
    before = _torch_target(net).fingerprint()
    assert _torch_target(_net(1)).fingerprint() != before
    with torch.no_grad():
        net[2].bias[0] += 1e-6
    assert _torch_target(net).fingerprint() != before


def test_torch_fingerprint_sees_architecture_and_settings():
    # Same weights, another activation or slope: other answers, so another fingerprint.
    relu = _torch_target(_net(0)).fingerprint()
    assert _torch_target(_net(0, torch.nn.Tanh())).fingerprint() != relu
    leaky = [_torch_target(_net(0, torch.nn.LeakyReLU(s))).fingerprint() for s in (0.01, 0.2)]
    assert leaky[0] != leaky[1]
    # Target settings that change what a query returns.
    net = _net(0)
    assert _torch_target(net, classes=[7, 8, 9]).fingerprint() != relu
    assert _torch_target(net, output="probabilities").fingerprint() != relu


def test_torch_fingerprint_sees_shapes_and_reads_bfloat16():
    from privaudit.targets import module_fingerprint

    a, b = torch.nn.Linear(6, 1, bias=False), torch.nn.Linear(3, 2, bias=False)
    with torch.no_grad():
        a.weight.copy_(torch.arange(6.0).reshape(1, 6))
        b.weight.copy_(torch.arange(6.0).reshape(2, 3))
    state_a = {k: v.numpy().tobytes() for k, v in a.state_dict().items()}
    state_b = {k: v.numpy().tobytes() for k, v in b.state_dict().items()}
    assert state_a == state_b  # same names, same bytes: only the shapes differ
    assert module_fingerprint(a) != module_fingerprint(b)
    half = _net(0).to(torch.bfloat16)
    assert isinstance(module_fingerprint(half), str)
    assert module_fingerprint(half) != module_fingerprint(_net(0))


def test_torch_fingerprint_sees_the_white_box_loss():
    net = _net(0)
    default = _torch_target(net).fingerprint()
    smooth = _torch_target(net, loss=torch.nn.CrossEntropyLoss(label_smoothing=0.1))
    plain = _torch_target(net, loss=torch.nn.CrossEntropyLoss())
    assert len({default, smooth.fingerprint(), plain.fingerprint()}) == 3
    assert plain.fingerprint() == _torch_target(net, loss=torch.nn.CrossEntropyLoss()) \
        .fingerprint()
