"""OpacusRecipe (privaudit.dp): claims, seeds, Dirac canaries inside DP-SGD, noise_scale."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from privaudit.dp import (
    DPTrainingRun,
    OpacusRecipe,
    check_training_run,
    draw_inclusion,
    make_canaries,
    score_canaries,
)

# Opacus and torch are imported by the tests, not at collection: every xdist worker
# collects this module, one runs it (5.7 s of CPU for the import).
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("opacus") is None or importlib.util.find_spec("torch") is None,
    reason="needs privaudit's dp extra (torch, opacus)")


def _data(n: int = 300, d: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(np.int64) + 1  # labels 1, 2
    return X, y


def _dirac_run(recipe: OpacusRecipe, m: int = 200, seed: int = 0):
    """One run with ``m`` Dirac canaries in the recipe's slots, half of them included."""
    data = _data()
    canaries = make_canaries("dirac-gradient", m, n_parameters=recipe.n_parameters(data),
                             parameter_indices=recipe.dirac_coordinates(data),
                             random_state=seed)
    inc = draw_inclusion(m, random_state=seed + 1)
    run = recipe(data, canaries.subset(inc), random_state=seed + 2)
    check_training_run(run, canaries.subset(inc), func=recipe)
    return score_canaries(run, canaries), inc, run


def test_claimed_epsilon_close_to_the_target_for_both_accountants() -> None:
    recipe = OpacusRecipe(target_epsilon=4.0, delta=1e-5, sample_rate=0.1, epochs=5)
    claims = recipe.claimed_epsilon(recipe.sigma(), recipe.n_steps)
    assert set(claims) == {"rdp", "prv"}
    assert claims["prv"] == pytest.approx(4.0, rel=0.02)  # the calibration accountant
    assert 4.0 <= claims["rdp"] <= 4.0 * 1.3  # RDP's bound on the same sigma: looser
    by_rdp = OpacusRecipe(target_epsilon=4.0, sample_rate=0.1, epochs=5,
                          calibration_accountant="rdp")
    claims_rdp = by_rdp.claimed_epsilon(by_rdp.sigma(), by_rdp.n_steps)
    assert claims_rdp["rdp"] == pytest.approx(4.0, rel=0.02)
    assert by_rdp.sigma() > recipe.sigma()  # PRV is tighter: less noise for the same claim


def test_the_run_reports_its_claims_and_a_fixed_sigma_recipe_the_accountants_numbers() -> None:
    X, y = _data()
    canaries = make_canaries("flipped-label", 20, features=X, labels=y, random_state=0)
    recipe = OpacusRecipe(noise_multiplier=1.0, sample_rate=0.1, epochs=2,
                          accountants=("rdp", "prv", "gdp"))
    with pytest.warns(UserWarning, match="GDP accounting is experimental"):  # Opacus's own
        run = recipe((X, y), canaries, random_state=0)
    assert isinstance(run, DPTrainingRun)
    assert run.noise_multiplier == 1.0 and run.n_steps == 20 and run.delta == 1e-5
    assert set(run.claimed_epsilon) == {"rdp", "prv", "gdp"}
    assert run.claimed_epsilon == recipe.claimed_epsilon(1.0, 20)  # cached: no new warning
    assert 0 < run.claimed_epsilon["prv"] < run.claimed_epsilon["rdp"]
    assert np.array_equal(run.canary_ids, canaries.ids) and run.train_seconds > 0
    assert run.model.predict_proba(X[:3]).shape == (3, 2)
    assert set(run.model.classes_) == {1, 2}


def test_same_seed_same_model_other_seed_another() -> None:
    recipe = OpacusRecipe(noise_multiplier=1.0, sample_rate=0.1, epochs=2, dirac_slots=40,
                          accountants=("rdp",))
    a = _dirac_run(recipe, m=20)[2]
    b = _dirac_run(recipe, m=20)[2]
    assert np.array_equal(a.final_parameters, b.final_parameters)
    assert np.array_equal(a.initial_parameters, b.initial_parameters)
    data = _data()
    canaries = make_canaries("dirac-gradient", 20, n_parameters=recipe.n_parameters(data),
                             random_state=0)
    c = recipe(data, canaries, random_state=99)
    assert not np.array_equal(a.initial_parameters, c.initial_parameters)
    assert not np.array_equal(a.final_parameters, c.final_parameters)


def test_included_dirac_canaries_move_their_coordinate_excluded_ones_do_not() -> None:
    # q = 0.5, 20 steps, sigma = 1: an included canary is sampled about 10 times, each time
    # adding C / expected_batch to its score; the noise adds sqrt(20) sigma C / batch.
    recipe = OpacusRecipe(noise_multiplier=1.0, sample_rate=0.5, epochs=10, dirac_slots=300,
                          accountants=("rdp",))
    scores, inc, run = _dirac_run(recipe, m=300)
    batch = 0.5 * (300 + inc.sum())
    noise_sd = np.sqrt(run.n_steps) / batch
    assert scores[inc].mean() == pytest.approx(0.5 * run.n_steps / batch, abs=4 * noise_sd
                                               / np.sqrt(inc.sum()))
    assert abs(scores[~inc].mean()) < 4 * noise_sd / np.sqrt((~inc).sum())
    assert scores[~inc].std() == pytest.approx(noise_sd, rel=0.2)


def test_noise_scale_trains_with_that_fraction_of_the_noise() -> None:
    spreads = {}
    for scale in (1.0, 0.25):
        recipe = OpacusRecipe(noise_multiplier=2.0, sample_rate=0.5, epochs=5, dirac_slots=300,
                              noise_scale=scale, accountants=("rdp",))
        scores, inc, run = _dirac_run(recipe, m=300)
        spreads[scale] = scores[~inc].std()  # excluded canaries' slots: the noise alone
        assert run.noise_multiplier == 2.0  # what the accountant is told
        assert run.claimed_epsilon == recipe.claimed_epsilon(2.0, run.n_steps)
    assert spreads[0.25] / spreads[1.0] == pytest.approx(0.25, rel=0.2)


def test_noise_multiplier_zero_trains_without_noise_or_claims() -> None:
    recipe = OpacusRecipe(noise_multiplier=0.0, sample_rate=0.5, epochs=3, dirac_slots=100)
    scores, inc, run = _dirac_run(recipe, m=100)
    assert run.claimed_epsilon == {}
    assert np.all(scores[~inc] == 0)  # nothing but a canary moves a slot
    assert np.all(scores[inc] >= 0) and scores[inc].mean() > 0
    # clipping kept: a sampled canary adds exactly max_grad_norm / expected batch
    batch = 0.5 * (300 + inc.sum())
    times = scores[inc] * batch / recipe.max_grad_norm
    assert np.allclose(times, np.round(times), atol=1e-3)


def _hand_dp_sgd_step(recipe, run, X, y, coords, seed):
    """One DP-SGD step written out: per-example gradients, clip, sum, noise, mean, SGD."""
    import torch

    classes = np.unique(y)
    net = recipe._build(X.shape[1], classes.size)
    net.mean.copy_(torch.from_numpy(X.mean(axis=0)))
    std = X.std(axis=0)
    net.scale.copy_(torch.from_numpy(np.where(std == 0, 1, std).astype(np.float32)))
    params = list(net.parameters())
    torch.nn.utils.vector_to_parameters(torch.from_numpy(run.initial_parameters).float(),
                                        params)
    rows = []
    for xi, yi in zip(X, np.searchsorted(classes, y), strict=True):
        net.zero_grad()
        torch.nn.functional.cross_entropy(net(torch.from_numpy(xi[None])),
                                          torch.tensor([yi])).backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in params]).double())
    for c in coords:
        row = torch.zeros_like(rows[0])
        row[c] = recipe.max_grad_norm
        rows.append(row)
    per_example = torch.stack(rows)
    norms = per_example.norm(dim=1)
    clipped = per_example * (recipe.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)[:, None]
    total = clipped.sum(dim=0)
    noise_seed = int(np.random.default_rng(seed).integers(0, 2**62, size=3)[2])
    gen = torch.Generator().manual_seed(noise_seed)
    noise = torch.cat([torch.normal(0, recipe.noise_multiplier * recipe.max_grad_norm,
                                    size=p.shape, generator=gen).reshape(-1) for p in params])
    grad = (total + noise.double()) / (recipe.sample_rate * len(per_example))
    return run.initial_parameters - recipe.learning_rate * grad.numpy()


@pytest.mark.parametrize("noise_multiplier", [0.0, 0.7])
def test_one_step_equals_a_hand_written_dp_sgd_step(noise_multiplier: float) -> None:
    """Slow reference: sample_rate 1 (every example and canary in the one step)."""
    X, y = _data(n=12, d=3)
    recipe = OpacusRecipe(noise_multiplier=noise_multiplier, sample_rate=1.0, epochs=1,
                          hidden=(4,), learning_rate=0.5, max_grad_norm=0.3)
    n_parameters = recipe.n_parameters((X, y))
    canaries = make_canaries("dirac-gradient", 5, n_parameters=n_parameters, random_state=3)
    run = recipe((X, y), canaries, random_state=11)
    assert run.n_steps == 1
    expected = _hand_dp_sgd_step(recipe, run, X, y, canaries.coordinates, seed=11)
    assert np.allclose(run.final_parameters, expected, atol=2e-6)
    moved = run.final_parameters - run.initial_parameters
    assert np.abs(moved[canaries.coordinates]).min() > 0


@pytest.mark.parametrize("seed", [5, 6])
def test_input_canaries_are_appended_to_the_data_and_lower_their_loss(seed: int) -> None:
    X, y = _data(n=100, d=20)
    Xp, yp = _data(n=100, d=20, seed=9)  # the population the canaries come from
    canaries = make_canaries("flipped-label", 40, features=Xp, labels=yp, random_state=seed)
    inc = draw_inclusion(40, random_state=seed)
    recipe = OpacusRecipe(noise_multiplier=0.0, sample_rate=1.0, epochs=100, hidden=(32,),
                          max_grad_norm=10.0, learning_rate=1.0)
    run = recipe((X, y), canaries.subset(inc), random_state=0)
    without = recipe((X, y), canaries.subset(np.zeros(40, dtype=bool)), random_state=0)
    assert without.canary_ids.size == 0
    scores = score_canaries(run, canaries)
    gain = scores - score_canaries(without, canaries)  # how much training on them helped
    assert np.median(gain[inc]) > np.median(gain[~inc]) + 1.0
    assert (scores[inc][:, None] > scores[~inc][None, :]).mean() > 0.85  # AUC of the scores


def test_cnn_architecture_trains() -> None:
    X, y = _data(n=80, d=16)
    recipe = OpacusRecipe("cnn", noise_multiplier=1.0, sample_rate=0.25, epochs=1,
                          image_shape=(1, 4, 4), channels=(2,), hidden=(4,), dirac_slots=10)
    canaries = make_canaries("dirac-gradient", 10, n_parameters=recipe.n_parameters((X, y)),
                             parameter_indices=recipe.dirac_coordinates((X, y)),
                             random_state=0)
    run = recipe((X, y), canaries, random_state=0)
    assert run.model.predict(X[:5]).shape == (5,)
    assert not np.array_equal(run.initial_parameters, run.final_parameters)
    with pytest.raises(ValueError, match="'image_shape' parameter of OpacusRecipe"):
        OpacusRecipe("cnn", noise_multiplier=1.0, image_shape=(1, 3, 3)).n_parameters((X, y))


@pytest.mark.parametrize(("kwargs", "param"), [
    ({}, "noise_multiplier"),
    ({"noise_multiplier": 1.0, "target_epsilon": 2.0}, "noise_multiplier"),
    ({"noise_multiplier": -1.0}, "noise_multiplier"),
    ({"target_epsilon": 0.0}, "target_epsilon"),
    ({"target_epsilon": -2.0}, "target_epsilon"),
    ({"noise_multiplier": 1.0, "noise_scale": 0.0}, "noise_scale"),
    ({"noise_multiplier": 1.0, "noise_scale": 1.5}, "noise_scale"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.0}, "sample_rate"),
    ({"noise_multiplier": 1.0, "sample_rate": 1.2}, "sample_rate"),
    ({"noise_multiplier": 1.0, "delta": 1.0}, "delta"),
    ({"noise_multiplier": 1.0, "max_grad_norm": 0}, "max_grad_norm"),
    ({"noise_multiplier": 1.0, "epochs": 0}, "epochs"),
    ({"noise_multiplier": 1.0, "accountants": ("rdp", "moments")}, "accountants"),
    ({"noise_multiplier": 1.0, "accountants": "rdp"}, "accountants"),
    ({"noise_multiplier": 1.0, "architecture": "resnet"}, "architecture"),
    ({"noise_multiplier": 1.0, "hidden": (0,)}, "hidden"),
    ({"noise_multiplier": 1.0, "dirac_slots": -1}, "dirac_slots"),
])
def test_bad_recipe_parameters_refused(kwargs, param) -> None:
    architecture = kwargs.pop("architecture", "mlp")
    with pytest.raises(ValueError, match=f"'{param}' parameter of OpacusRecipe"):
        OpacusRecipe(architecture, **kwargs)


def test_bad_training_input_refused() -> None:
    X, y = _data(n=40)
    recipe = OpacusRecipe(noise_multiplier=1.0, sample_rate=0.5, epochs=1)
    foreign = make_canaries("random-label", 30, features=X, n_classes=3, random_state=0)
    with pytest.raises(ValueError, match="'canaries' parameter of OpacusRecipe must be labels "
                                         "among the dataset's classes"):
        recipe((X, y), foreign, random_state=0)
    ok = make_canaries("flipped-label", 5, features=X, labels=y, random_state=0)
    with pytest.raises(TypeError, match="'dataset' parameter of OpacusRecipe must be a pair"):
        recipe([X, y], ok, random_state=0)
    with pytest.raises(ValueError, match="'dataset' parameter of OpacusRecipe"):
        recipe((X, y[:-1]), ok, random_state=0)
    far = make_canaries("dirac-gradient", 5, n_parameters=10**6, random_state=0)
    with pytest.raises(ValueError, match=r"'canaries' parameter of OpacusRecipe must be "
                                         r"dirac-gradient coordinates in \[0, "):
        recipe((X, y), far, random_state=0)
