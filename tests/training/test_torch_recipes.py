import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from privaudit.targets import TorchTarget
from privaudit.training import (
    ReferencePool,
    TorchCNNRecipe,
    TorchMLPRecipe,
    TrainingRecipe,
    as_recipe,
)

FAST = {"epochs": 3, "batch_size": 32}


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:300], y[:300]


def proba(model, X, y):
    # Module level: the pool's worker processes unpickle it by name.
    return model.predict_proba(X)


def same_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("recipe", [TorchMLPRecipe((32,), **FAST),
                                    TorchCNNRecipe(channels=(4,), hidden=16, lr=1e-2, **FAST)])
def test_same_seed_same_weights_other_seed_other_weights(digits, recipe):
    X, y = digits
    assert isinstance(recipe, TrainingRecipe) and as_recipe(recipe) is recipe
    a = recipe.train(X, y, random_state=7)
    b = recipe.train(X, y, random_state=7)
    c = recipe.train(X, y, random_state=8)
    assert same_weights(a, b)
    assert not same_weights(a, c)
    assert not a.training
    np.testing.assert_array_equal(a.classes_, np.arange(10))
    # It learned something: far above the 10% of guessing on its training data.
    assert np.mean(a.predict(X) == y) > 0.5


def test_training_leaves_the_global_torch_state_alone(digits):
    X, y = digits
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    TorchMLPRecipe((8,), epochs=1).train(X, y, random_state=0)
    np.testing.assert_array_equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads


def test_fingerprint_covers_every_hyperparameter_and_torch(monkeypatch):
    base = TorchMLPRecipe()
    assert base.fingerprint() == TorchMLPRecipe().fingerprint()
    variants = [TorchMLPRecipe((128,)), TorchMLPRecipe(epochs=51), TorchMLPRecipe(lr=2e-3),
                TorchMLPRecipe(weight_decay=1e-4), TorchMLPRecipe(batch_size=32),
                TorchMLPRecipe(classes=np.arange(10)), TorchMLPRecipe(num_threads=None),
                TorchCNNRecipe()]
    prints = {v.fingerprint() for v in variants}
    assert len(prints) == len(variants) and base.fingerprint() not in prints
    cnn = TorchCNNRecipe()
    assert cnn.fingerprint() != TorchCNNRecipe(channels=(8, 16)).fingerprint()
    assert cnn.fingerprint() != TorchCNNRecipe(hidden=32).fingerprint()
    before = base.fingerprint()
    monkeypatch.setattr(torch, "__version__", "0.0.1")
    assert TorchMLPRecipe().fingerprint() != before


def test_save_load_round_trip_is_safetensors_with_json_header(tmp_path, digits):
    X, y = digits
    recipe = TorchMLPRecipe((16,), classes=np.arange(10), **FAST)
    net = recipe.train(X, y, random_state=1)
    path = tmp_path / "m.safetensors"
    recipe.save(net, path)
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    meta = json.loads(header["__metadata__"]["privaudit"])
    assert meta["recipe"] == "TorchMLPRecipe" and meta["params"]["hidden"] == [16]
    loaded = recipe.load(path)
    assert same_weights(net, loaded)
    np.testing.assert_array_equal(loaded.predict_proba(X), net.predict_proba(X))
    np.testing.assert_array_equal(loaded.classes_, net.classes_)
    # Another recipe's file is refused.
    with pytest.raises(ValueError, match="other hyperparameters"):
        TorchMLPRecipe((16,), epochs=4, batch_size=32, classes=np.arange(10)).load(path)
    with pytest.raises(ValueError, match="other hyperparameters"):
        TorchCNNRecipe().load(path)


def test_string_labels_and_fixed_classes(tmp_path, digits):
    X, y = digits
    names = np.array([f"d{k}" for k in range(10)])
    keep = y < 9  # a subset missing class "d9"
    recipe = TorchMLPRecipe((8,), classes=names, **FAST)
    net = recipe.train(X[keep], names[y[keep]], random_state=0)
    assert list(net.classes_) == list(names)  # all ten outputs, "d9" included
    recipe.save(net, tmp_path / "s.safetensors")
    loaded = recipe.load(tmp_path / "s.safetensors")
    np.testing.assert_array_equal(loaded.predict(X), net.predict(X))
    assert TorchTarget(loaded).n_classes == 10
    with pytest.raises(ValueError, match="one class only"):
        TorchMLPRecipe(epochs=1).train(X[:5], np.zeros(5), random_state=0)


def test_cnn_takes_flat_or_shaped_images(digits):
    X, y = digits
    recipe = TorchCNNRecipe(channels=(4,), hidden=8, **FAST)
    flat = recipe.train(X, y, random_state=2)
    shaped = recipe.train(X.reshape(-1, 1, 8, 8), y, random_state=2)
    assert same_weights(flat, shaped)
    np.testing.assert_array_equal(flat.predict_proba(X), flat.predict_proba(X.reshape(-1, 1, 8, 8)))
    with pytest.raises(ValueError, match=r"images of shape \(1, 8, 8\)"):
        recipe.train(X[:, :60], y, random_state=0)
    with pytest.raises(ValueError, match="'image_shape' parameter"):
        TorchCNNRecipe(image_shape=(8, 8))


def test_bad_hyperparameters_raise_template_errors():
    with pytest.raises(ValueError, match="The 'epochs' parameter of TorchMLPRecipe"):
        TorchMLPRecipe(epochs=0)
    with pytest.raises(ValueError, match="The 'lr' parameter of TorchMLPRecipe"):
        TorchMLPRecipe(lr=-1.0)
    with pytest.raises(TypeError, match="The 'hidden' parameter"):
        TorchMLPRecipe(hidden="256")
    with pytest.raises(ValueError, match="The 'classes' parameter"):
        TorchMLPRecipe(classes=[1, 1])


def test_pool_cache_resumes_and_matches_uncached(tmp_path, digits, monkeypatch):
    X, y = digits
    recipe = TorchMLPRecipe((16,), **FAST)
    reference = ReferencePool(recipe, 4, random_state=0).fit(X, y)
    expected = reference.map(proba, X)

    # A run that dies while training its third model.
    original = TorchMLPRecipe.train
    calls = []

    def crashing(self, X, y, *, random_state):
        calls.append(random_state)
        if len(calls) == 3:
            raise RuntimeError("simulated crash")
        return original(self, X, y, random_state=random_state)

    monkeypatch.setattr(TorchMLPRecipe, "train", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        ReferencePool(recipe, 4, random_state=0, cache_dir=tmp_path).fit(X, y)
    monkeypatch.setattr(TorchMLPRecipe, "train", original)

    resumed = ReferencePool(recipe, 4, random_state=0, cache_dir=tmp_path).fit(X, y)
    assert resumed.n_trained_ == 2  # the two finished models came from the cache
    np.testing.assert_array_equal(resumed.map(proba, X), expected)
    again = ReferencePool(recipe, 4, random_state=0, cache_dir=tmp_path).fit(X, y)
    assert again.n_trained_ == 0
    files = sorted(p.name for p in Path(again.cache_path_).glob("model-*.safetensors"))
    assert len(files) == 4
    # A recipe with other hyperparameters never reuses this cache.
    other = ReferencePool(TorchMLPRecipe((16,), epochs=2, batch_size=32), 4, random_state=0,
                          cache_dir=tmp_path).fit(X, y)
    assert other.n_trained_ == 4 and other.cache_path_ != again.cache_path_


def test_two_workers_give_the_same_models_as_one(digits):
    X, y = digits
    recipe = TorchMLPRecipe((16,), **FAST)
    inline = ReferencePool(recipe, 2, random_state=4).fit(X, y)
    parallel = ReferencePool(recipe, 2, random_state=4, n_jobs=2).fit(X, y)
    for a, b in zip(inline.models_, parallel.models_, strict=True):
        assert same_weights(a, b)
