"""Shadow models trained together over stacked parameters (issue 12).

``train_stacked`` must give each model the trajectory ``recipe.train`` gives it alone (same
initialisation, batch order and Adam steps; equal within float rounding), whatever models
share its stack; the pool with ``stack > 1`` must give the same models whatever the number
of workers and whatever was already cached; ``stack=1`` must leave every fingerprint, file
header and run key as it was.
"""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from privaudit.training import LocalExecutor, ReferencePool, TorchCNNRecipe, TorchMLPRecipe
from privaudit.training._pool import _Trainer
from privaudit.training._stacked import train_stacked

MLP = TorchMLPRecipe((32,), epochs=3, batch_size=32, weight_decay=1e-3, classes=np.arange(10))
CNN = TorchCNNRecipe(channels=(4,), hidden=16, epochs=2, batch_size=32, lr=1e-2,
                     classes=np.arange(10))
SIZES = (150, 97, 201, 64, 33, 120, 180, 75)


@pytest.fixture(scope="module")
def digits():
    return load_digits(return_X_y=True)


@pytest.fixture(scope="module")
def datasets(digits):
    X, y = digits
    rng = np.random.default_rng(0)
    out = []
    for n in SIZES:  # unequal sizes: different numbers of batches and last-batch sizes
        rows = rng.choice(len(X), n, replace=False)
        out.append((X[rows], y[rows]))
    return out


SEEDS = [101, 7, 55, 3, 2024, 9, 18, 64]


def weights(net):
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def assert_close(a, b, atol=1e-4):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], atol=atol, rtol=0)


def assert_equal(a, b):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.mark.parametrize("recipe", [MLP, CNN], ids=["mlp", "cnn"])
def test_stacked_models_follow_the_sequential_trajectories(recipe, datasets, digits):
    X_all = digits[0]
    stacked = train_stacked(recipe, datasets[:4], SEEDS[:4])
    for (X, y), seed, net in zip(datasets[:4], SEEDS[:4], stacked, strict=True):
        alone = recipe.train(X, y, random_state=seed)
        assert_close(net, alone)
        torch.testing.assert_close(net.mean, alone.mean, atol=0, rtol=0)
        np.testing.assert_array_equal(net.predict(X_all), alone.predict(X_all))
        np.testing.assert_array_equal(net.classes_, alone.classes_)
        assert not net.training
    # Different seeds, different models: nothing leaks from one model into another.
    assert not torch.equal(stacked[0].state_dict()["mean"], stacked[1].state_dict()["mean"])


@pytest.mark.parametrize("recipe", [MLP, CNN], ids=["mlp", "cnn"])
def test_grouping_changes_nothing(recipe, datasets):
    whole = train_stacked(recipe, datasets, SEEDS)
    for size in (1, 3):
        grouped = []
        for start in range(0, len(SEEDS), size):
            grouped += train_stacked(recipe, datasets[start:start + size],
                                     SEEDS[start:start + size])
        for a, b in zip(whole, grouped, strict=True):
            assert_equal(a, b)  # bit for bit, not only within tolerance


def test_models_with_other_output_sizes_train_in_their_own_stack(datasets):
    recipe = TorchMLPRecipe((16,), epochs=2, batch_size=32)  # classes from the data
    X, y = datasets[2]
    short = (X[y < 9], y[y < 9])  # nine classes: nine logits
    nets = train_stacked(recipe, [datasets[0], short, datasets[1]], [1, 2, 3])
    assert [net.classes_.size for net in nets] == [10, 9, 10]
    assert_close(nets[1], recipe.train(*short, random_state=2))


def test_train_many_stack_one_is_train_and_stack_k_is_stacked(datasets):
    one = MLP.train_many(datasets[:2], random_states=SEEDS[:2])
    for (X, y), seed, net in zip(datasets[:2], SEEDS[:2], one, strict=True):
        assert_equal(net, MLP.train(X, y, random_state=seed))
    three = TorchMLPRecipe(**{**MLP.get_params(), "stack": 3})
    many = three.train_many(datasets[:5], random_states=SEEDS[:5])
    for a, b in zip(many, train_stacked(MLP, datasets[:5], SEEDS[:5]), strict=True):
        assert_equal(a, b)
    with pytest.raises(ValueError, match="'random_states' parameter"):
        three.train_many(datasets[:2], random_states=[1])
    with pytest.raises(ValueError, match="'seeds' parameter of train_stacked"):
        train_stacked(MLP, datasets[:2], [1])


def test_global_random_state_and_threads_untouched(datasets):
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    train_stacked(MLP, datasets[:2], SEEDS[:2])
    np.testing.assert_array_equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads


def test_fingerprint_header_and_repr_unchanged_for_stack_one(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.0.0")
    # Worked out with the recipe code from before `stack` existed (same torch version).
    assert TorchMLPRecipe().fingerprint() == (
        "cea7e09b37682f539b3d2f5f9c289200dc230bc38c4146192e9e16831b4874da")
    assert TorchCNNRecipe(stack=1).fingerprint() == (
        "a0e9ce9656b6bcfcd16324965c1f4091c1fda3d22f141cba27c0f52e24ad67e3")
    prints = {TorchMLPRecipe(stack=k).fingerprint() for k in (1, 4, 8)}
    assert len(prints) == 3
    assert "stack" not in repr(TorchMLPRecipe()) and "stack" not in MLP._params_json()
    assert repr(TorchMLPRecipe(stack=4)).endswith("num_threads=1, stack=4)")
    assert TorchMLPRecipe(stack=4).get_params()["stack"] == 4


def test_stacked_model_files_load(tmp_path, datasets):
    sixteen = TorchMLPRecipe(**{**MLP.get_params(), "stack": 16})
    net = sixteen.train_many(datasets[:2], random_states=SEEDS[:2])[0]
    sixteen.save(net, tmp_path / "m.safetensors")
    for recipe in (sixteen, MLP):  # the same network whichever way it was trained
        assert_equal(recipe.load(tmp_path / "m.safetensors"), net)
    with pytest.raises(ValueError, match="other hyperparameters"):
        TorchMLPRecipe((32,), epochs=4, stack=16).load(tmp_path / "m.safetensors")


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_bad_stack_names_the_parameter(bad):
    with pytest.raises(ValueError, match="The 'stack' parameter of TorchMLPRecipe"):
        TorchMLPRecipe(stack=bad)
    with pytest.raises(ValueError, match="The 'stack' parameter of TorchCNNRecipe"):
        TorchCNNRecipe(stack=bad)


class _Workers:
    def __init__(self, n_workers):
        self.n_workers = n_workers


@pytest.mark.parametrize(("stack", "workers", "n_todo", "sizes"), [
    (8, 2, 7, [4, 3]), (2, 2, 7, [2, 2, 2, 1]), (8, 1, 5, [5]), (1, 2, 5, None),
])
def test_chunks_keep_every_worker_busy(stack, workers, n_todo, sizes):
    recipe = TorchMLPRecipe(stack=stack)
    trainer = _Trainer(_Workers(workers), recipe, np.zeros(9, dtype=np.int64), [], None, None,
                       np.zeros(9))
    chunks = trainer._chunks(list(range(n_todo)))
    assert (None if chunks is None else [len(c) for c in chunks]) == sizes
    if chunks is not None:
        assert [i for chunk in chunks for i in chunk] == list(range(n_todo))


def proba(model, X, y):
    return model.predict_proba(X)


def _pool(recipe, **kwargs):
    return ReferencePool(recipe, n_models=6, random_state=3, **kwargs)


def test_pool_with_stack_matches_sequential_pool(digits):
    X, y = digits[0][:400], digits[1][:400]
    plain = _pool(MLP).fit(X, y)
    stacked = _pool(TorchMLPRecipe(**{**MLP.get_params(), "stack": 4})).fit(X, y)
    np.testing.assert_array_equal(stacked.in_mask_, plain.in_mask_)
    np.testing.assert_array_equal(stacked.seeds_, plain.seeds_)
    for a, b in zip(stacked.models_, plain.models_, strict=True):
        assert_close(a, b)
    rows = stacked.train_indices_[5]  # trained by train_stacked, not by train
    assert_equal(stacked.models_[5], train_stacked(MLP, [(X[rows], y[rows])],
                                                   [int(stacked.seeds_[5])])[0])
    assert np.all(np.isfinite(stacked.train_seconds_))
    with LocalExecutor(n_jobs=2) as ex:  # chunks of 3 on two workers: the same bits
        two = _pool(TorchMLPRecipe(**{**MLP.get_params(), "stack": 4}), executor=ex).fit(X, y)
        np.testing.assert_array_equal(two.map(proba, X), stacked.map(proba, X))


def test_stacked_pool_resumes_from_its_cache(tmp_path, digits):
    X, y = digits[0][:400], digits[1][:400]
    recipe = TorchMLPRecipe(**{**MLP.get_params(), "stack": 4})
    first = _pool(recipe, cache_dir=tmp_path).fit(X, y)
    expected = first.map(proba, X)
    for i in (1, 4):  # as if the run had been killed before these were saved
        first._cache.model_path(i).unlink()
        first._cache.manifest_path(i).unlink()
    again = _pool(recipe, cache_dir=tmp_path).fit(X, y)
    assert again.n_trained_ == 2 and again.cache_path_ == first.cache_path_
    np.testing.assert_array_equal(again.map(proba, X), expected)
    # A sequential recipe never reuses the stacked models (another fingerprint).
    plain = _pool(MLP, cache_dir=tmp_path).fit(X, y)
    assert plain.n_trained_ == 6 and plain.cache_path_ != first.cache_path_
