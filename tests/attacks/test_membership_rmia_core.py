"""RMIA's numerical core: rmia_scores and tune_rmia_offline_a.

Four layers: the explicit n_x * n_z matrix of pairwise likelihood ratios (and a grid loop
scored with scikit-learn) compared on random inputs; hypothesis properties; hand-worked
numbers; and an end-to-end run with a real (Parzen-window) classifier whose members are
known, reproducing the paper's finding with 1-2 reference models.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score

from privaudit.attacks.membership._lira import lira_scores, logit_confidence
from privaudit.attacks.membership._rmia import (
    RmiaOfflineTuning,
    rmia_scores,
    tune_rmia_offline_a,
)
from privaudit.exceptions import PrivauditWarning
from privaudit.metrics import roc_auc, tpr_at_fpr

TINY = np.finfo(np.float64).tiny

# --------------------------------------------------------------------------- reference


def rmia_reference(px, rx, pz, rz, *, offline_a=None, in_mask_x=None, in_mask_z=None,
                   gamma=1.0):
    """The paper's definition with the explicit pairwise matrix LR[i, k] = LR(x_i, z_k)."""

    def marginal(p_target, ref, mask):
        n_models, n = ref.shape
        out = np.empty(n)
        for j in range(n):
            if offline_a is None:
                out[j] = sum(ref[i, j] for i in range(n_models)) / n_models
            else:
                outs = [ref[i, j] for i in range(n_models) if mask is None or not mask[i, j]]
                p_out = sum(outs) / len(outs)
                out[j] = 0.5 * ((1 + offline_a) * p_out + (1 - offline_a))
        return np.maximum(p_target, TINY) / np.maximum(out, TINY)

    ratio_x = marginal(np.asarray(px, float), np.asarray(rx, float), in_mask_x)
    ratio_z = marginal(np.asarray(pz, float), np.asarray(rz, float), in_mask_z)
    with np.errstate(over="ignore"):  # a ratio of clipped zeros may overflow to inf
        lr = np.array([[ratio_x[i] / ratio_z[k] for k in range(len(ratio_z))]
                       for i in range(len(ratio_x))])
    return (lr >= gamma).mean(axis=1)


def random_inputs(seed, n_models, n_x, n_z, p_in=0.5):
    rng = np.random.default_rng(seed)
    base_x = rng.beta(2, 2, n_x)
    base_z = rng.beta(2, 2, n_z)
    rx = np.clip(base_x * rng.lognormal(0, 0.3, (n_models, n_x)), 0, 1)
    rz = np.clip(base_z * rng.lognormal(0, 0.3, (n_models, n_z)), 0, 1)
    px = np.clip(base_x * rng.lognormal(0.2, 0.3, n_x), 0, 1)
    pz = np.clip(base_z * rng.lognormal(0, 0.3, n_z), 0, 1)
    mx = rng.random((n_models, n_x)) < p_in
    mz = rng.random((n_models, n_z)) < p_in
    # Offline needs an OUT model for every record: make model 0 OUT where none is.
    mx[0, mx.all(axis=0)] = False
    mz[0, mz.all(axis=0)] = False
    return px, rx, pz, rz, mx, mz


# --------------------------------------------------------------------------- layer 1


@pytest.mark.parametrize("offline_a", [None, 0.0, 0.3, 1.0])
@pytest.mark.parametrize("gamma", [1.0, 0.5, 2.0])
@pytest.mark.parametrize("use_masks", [False, True])
def test_matches_pairwise_matrix(offline_a, gamma, use_masks):
    for seed in range(4):
        px, rx, pz, rz, mx, mz = random_inputs(seed, [1, 2, 4, 7][seed], 60, 45)
        masks = {"in_mask_x": mx, "in_mask_z": mz} if use_masks else {}
        fast = rmia_scores(px, rx, pz, rz, offline_a=offline_a, gamma=gamma, **masks)
        slow = rmia_reference(px, rx, pz, rz, offline_a=offline_a, gamma=gamma, **masks)
        np.testing.assert_array_equal(fast, slow)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_models=st.integers(1, 6),
    n_x=st.integers(1, 30),
    n_z=st.integers(1, 30),
    offline_a=st.one_of(st.none(), st.floats(0, 1)),
    gamma=st.floats(0.1, 5),
    grid=st.sampled_from([None, 4, 20]),
)
def test_matches_pairwise_matrix_hypothesis(seed, n_models, n_x, n_z, offline_a, gamma, grid):
    px, rx, pz, rz, mx, mz = random_inputs(seed, n_models, n_x, n_z)
    if grid is not None:
        # Coarse probabilities make exact ties between x and z ratios common.
        px, rx, pz, rz = (np.round(a * grid) / grid for a in (px, rx, pz, rz))
        gamma = 1.0
    fast = rmia_scores(px, rx, pz, rz, offline_a=offline_a, in_mask_x=mx, in_mask_z=mz,
                       gamma=gamma)
    slow = rmia_reference(px, rx, pz, rz, offline_a=offline_a, in_mask_x=mx, in_mask_z=mz,
                          gamma=gamma)
    if grid is None:
        np.testing.assert_array_equal(fast, slow)
    else:
        # With exact ties r_x == r_z the matrix divides and the fast path does not: the two
        # may disagree only on pairs whose ratio is within rounding of gamma.
        np.testing.assert_allclose(fast, slow, atol=_near_ties(px, rx, pz, rz, offline_a,
                                                               mx, mz) / n_z + 1e-12)


def _near_ties(px, rx, pz, rz, a, mx, mz):
    fx = rmia_reference(px, rx, pz, rz, offline_a=a, in_mask_x=mx, in_mask_z=mz,
                        gamma=1.0 - 1e-12)
    fy = rmia_reference(px, rx, pz, rz, offline_a=a, in_mask_x=mx, in_mask_z=mz,
                        gamma=1.0 + 1e-12)
    return np.max(np.round((fx - fy) * len(pz)))


def tune_reference(ref, mask, refz, grid, n_pseudo):
    """Grid search scored with scikit-learn, one pseudo-target and grid value at a time."""
    aucs = []
    for a in grid:
        per_target = []
        for t in range(n_pseudo):
            others = [i for i in range(ref.shape[0]) if i != t]
            keep = [j for j in range(ref.shape[1]) if any(not mask[i, j] for i in others)]
            s = rmia_reference(ref[t, keep], ref[others][:, keep], refz[t], refz[others],
                               offline_a=a, in_mask_x=mask[others][:, keep])
            per_target.append(roc_auc_score(mask[t, keep], s))
        aucs.append(np.mean(per_target))
    return grid[int(np.argmax(aucs))], np.array(aucs)


@pytest.mark.parametrize("n_pseudo", [1, 3])
def test_tuning_matches_grid_loop_with_sklearn(n_pseudo):
    rng = np.random.default_rng(5)
    n_models, n = 5, 120
    base = rng.beta(2, 3, n)
    mask = rng.random((n_models, n)) < 0.5
    ref = np.clip(base * rng.lognormal(0, 0.3, (n_models, n)) * np.where(mask, 1.6, 1.0), 0, 1)
    refz = np.clip(rng.beta(2, 3, 40) * rng.lognormal(0, 0.3, (n_models, 40)), 0, 1)
    grid = np.arange(11) / 10
    result = tune_rmia_offline_a(ref, mask, refz, n_pseudo_targets=n_pseudo)
    best, aucs = tune_reference(ref, mask, refz, grid, n_pseudo)
    assert isinstance(result, RmiaOfflineTuning)
    np.testing.assert_allclose(result.auc, aucs, rtol=1e-12)
    assert result.a == best
    np.testing.assert_array_equal(result.grid, grid)


# --------------------------------------------------------------------------- layer 3


inputs = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 25),
                   st.integers(1, 25))


@settings(max_examples=60, deadline=None)
@given(prob=inputs, offline_a=st.one_of(st.none(), st.floats(0, 1)), gamma=st.floats(0.05, 20))
def test_scores_are_fractions_of_z(prob, offline_a, gamma):
    px, rx, pz, rz, _, _ = random_inputs(*prob)
    s = rmia_scores(px, rx, pz, rz, offline_a=offline_a, gamma=gamma)
    assert s.shape == px.shape
    assert np.all((s >= 0) & (s <= 1))
    np.testing.assert_allclose(s * len(pz), np.round(s * len(pz)), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(prob=inputs, offline_a=st.one_of(st.none(), st.floats(0, 1)), bump=st.floats(0, 1))
def test_monotone_in_the_target_probability(prob, offline_a, bump):
    px, rx, pz, rz, _, _ = random_inputs(*prob)
    higher = px + bump * (1 - px)
    assert np.all(rmia_scores(px, rx, pz, rz, offline_a=offline_a)
                  <= rmia_scores(higher, rx, pz, rz, offline_a=offline_a))


@settings(max_examples=60, deadline=None)
@given(prob=inputs, g1=st.floats(0.05, 20), g2=st.floats(0.05, 20))
def test_non_increasing_in_gamma(prob, g1, g2):
    px, rx, pz, rz, _, _ = random_inputs(*prob)
    lo, hi = sorted((g1, g2))
    assert np.all(rmia_scores(px, rx, pz, rz, gamma=lo) >= rmia_scores(px, rx, pz, rz, gamma=hi))


@settings(max_examples=60, deadline=None)
@given(prob=inputs, power=st.integers(1, 6))
def test_invariant_to_a_common_rescaling(prob, power):
    # Scaling every target probability (x and z) by c, or every reference probability
    # (online), multiplies all ratios alike: each LR(x, z) is unchanged. Powers of two
    # keep the floating-point arithmetic exact.
    px, rx, pz, rz, _, _ = random_inputs(*prob)
    c = 2.0**-power
    base = rmia_scores(px, rx, pz, rz)
    np.testing.assert_array_equal(rmia_scores(c * px, rx, c * pz, rz), base)
    np.testing.assert_array_equal(rmia_scores(px, c * rx, pz, c * rz), base)


@settings(max_examples=40, deadline=None)
@given(prob=inputs, offline_a=st.one_of(st.none(), st.floats(0, 1)))
def test_permutations(prob, offline_a):
    px, rx, pz, rz, mx, mz = random_inputs(*prob)
    rng = np.random.default_rng(prob[0])
    kw = {"offline_a": offline_a, "in_mask_x": mx, "in_mask_z": mz}
    base = rmia_scores(px, rx, pz, rz, **kw)
    px_perm, z_perm, m_perm = (rng.permutation(n) for n in (len(px), len(pz), rx.shape[0]))
    np.testing.assert_array_equal(
        rmia_scores(px[px_perm], rx[:, px_perm], pz, rz, offline_a=offline_a,
                    in_mask_x=mx[:, px_perm], in_mask_z=mz),
        base[px_perm],
    )
    np.testing.assert_array_equal(
        rmia_scores(px, rx, pz[z_perm], rz[:, z_perm], offline_a=offline_a, in_mask_x=mx,
                    in_mask_z=mz[:, z_perm]),
        base,
    )
    # Reordering models changes the summation order only.
    np.testing.assert_allclose(
        rmia_scores(px, rx[m_perm], pz, rz[m_perm], offline_a=offline_a,
                    in_mask_x=mx[m_perm], in_mask_z=mz[m_perm]),
        base, atol=1.5 / len(pz),
    )


@settings(max_examples=40, deadline=None)
@given(prob=inputs)
def test_masks_matter_offline_only_and_a_one_is_the_plain_mean(prob):
    px, rx, pz, rz, mx, mz = random_inputs(*prob)
    online = rmia_scores(px, rx, pz, rz)
    np.testing.assert_array_equal(rmia_scores(px, rx, pz, rz, in_mask_x=mx, in_mask_z=mz),
                                  online)
    # a = 1 without masks: Pr(x) = ((1 + 1) Pr_OUT + 0) / 2 = the mean over all models.
    np.testing.assert_array_equal(rmia_scores(px, rx, pz, rz, offline_a=1.0), online)


# --------------------------------------------------------------------------- layer 4: pinned


def test_pinned_online():
    # Pr(x) = mean of the two reference models: (0.4+0.6)/2 = 0.5, (0.5+0.1)/2 = 0.3,
    # (0.2+0.4)/2 = 0.3, so r_x = 0.8/0.5, 0.3/0.3, 0.6/0.3 = 1.6, 1.0, 2.0.
    # Pr(z) = 0.5, 0.2, 0.6, 0.3, so r_z = 0.5/0.5, 0.2/0.2, 0.9/0.6, 0.45/0.3
    #       = 1.0, 1.0, 1.5, 1.5.
    # gamma = 1: x0 (1.6) dominates all four z -> 1; x1 (1.0) ties the two 1.0 (LR = 1 >= 1)
    # -> 2/4; x2 (2.0) -> 1.
    # gamma = 1.5: r_z <= r_x / 1.5 = 1.067, 0.667, 1.333 -> 2/4, 0, 2/4.
    px = [0.8, 0.3, 0.6]
    rx = [[0.4, 0.5, 0.2], [0.6, 0.1, 0.4]]
    pz = [0.5, 0.2, 0.9, 0.45]
    rz = [[0.5, 0.1, 0.6, 0.3], [0.5, 0.3, 0.6, 0.3]]
    assert rmia_scores(px, rx, pz, rz).tolist() == [1.0, 0.5, 1.0]
    assert rmia_scores(px, rx, pz, rz, gamma=1.5).tolist() == [0.5, 0.0, 0.5]


def test_pinned_offline_a_changes_the_score():
    # One OUT reference model. a = 1: Pr = Pr_OUT, r_x = 0.9/0.6 = 1.5,
    # r_z = 0.5/0.2 = 2.5 and 0.2/0.6 = 0.333: x dominates one z of two -> 0.5.
    # a = 0.5: Pr = ((1.5) Pr_OUT + 0.5) / 2 = 0.75 Pr_OUT + 0.25, so Pr(x) = 0.7,
    # r_x = 1.286; Pr(z) = 0.4, 0.7, r_z = 1.25, 0.286: x dominates both -> 1.
    # a = 0: Pr = (Pr_OUT + 1) / 2: Pr(x) = 0.8, r_x = 1.125; Pr(z) = 0.6, 0.8,
    # r_z = 0.833, 0.25 -> 1.
    args = ([0.9], [[0.6]], [0.5, 0.2], [[0.2, 0.6]])
    assert rmia_scores(*args, offline_a=1.0).tolist() == [0.5]
    assert rmia_scores(*args, offline_a=0.5).tolist() == [1.0]
    assert rmia_scores(*args, offline_a=0.0).tolist() == [1.0]


def test_pinned_offline_uses_out_models_only():
    # x is IN model 0 (0.9) and OUT model 1 (0.3): Pr_OUT(x) = 0.3, a = 1: r_x = 0.6/0.3 = 2.
    # Without the mask Pr(x) would be 0.6 and r_x = 1. z: r_z = 0.4/0.4 = 1 and
    # 0.3/0.2 = 1.5 -> with the mask x dominates both (1.0), without it one (0.5).
    args = ([0.6], [[0.9], [0.3]], [0.4, 0.3], [[0.4, 0.2], [0.4, 0.2]])
    mask = np.array([[True], [False]])
    assert rmia_scores(*args, offline_a=1.0, in_mask_x=mask).tolist() == [1.0]
    assert rmia_scores(*args, offline_a=1.0).tolist() == [0.5]


def test_zero_probabilities_do_not_make_nan():
    # 0 / 0 reads as ratio 1 (both clipped at the smallest normal float).
    s = rmia_scores([0.0, 0.5], [[0.0, 0.5]], [0.0, 0.5], [[0.0, 0.5]])
    assert s.tolist() == [1.0, 1.0]


def test_linear_time_and_memory():
    # 200k x 200k pairs would be a 320 GB matrix; sorting takes well under a second.
    rng = np.random.default_rng(0)
    n = 200_000
    px, pz = rng.random(n), rng.random(n)
    rx, rz = rng.random((2, n)), rng.random((2, n))
    start = time.perf_counter()
    s = rmia_scores(px, rx, pz, rz)
    assert time.perf_counter() - start < 5.0
    assert s.shape == (n,) and 0.3 < s.mean() < 0.7


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"target_prob_x": [1.5, 0.5]}, ValueError, r"'target_prob_x'.*\[0, 1\]"),
        ({"target_prob_x": [[0.5, 0.5]]}, ValueError, "'target_prob_x'"),
        ({"reference_prob_x": [[0.5, 0.5, 0.5]]}, ValueError, "'reference_prob_x'"),
        ({"reference_prob_z": [[0.5], [0.5]]}, ValueError, "'reference_prob_z'"),
        ({"target_prob_z": []}, ValueError, "non-empty"),
        ({"target_prob_z": [np.nan]}, ValueError, "'target_prob_z'"),
        ({"gamma": 0.0}, ValueError, "'gamma'"),
        ({"gamma": "1"}, TypeError, "'gamma'"),
        ({"offline_a": 1.5}, ValueError, "'offline_a'"),
        ({"offline_a": True}, TypeError, "'offline_a'"),
        ({"offline_a": 0.5, "in_mask_x": [[True, False]]}, ValueError, "OUT reference model"),
        ({"in_mask_x": [[True]]}, ValueError, "'in_mask_x'"),
        ({"in_mask_z": [[2]]}, ValueError, "'in_mask_z'"),
    ],
)
def test_rejects_bad_input(kwargs, error, match):
    args = {"target_prob_x": [0.5, 0.5], "reference_prob_x": [[0.5, 0.5]],
            "target_prob_z": [0.5], "reference_prob_z": [[0.5]]}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        rmia_scores(**args)


def test_error_message_follows_the_template():
    with pytest.raises(ValueError) as info:
        rmia_scores([0.5], [[0.5]], [0.5], [[0.5]], gamma=-1)
    assert str(info.value) == (
        "The 'gamma' parameter of rmia_scores must be a positive real number. "
        "Got -1 instead."
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"reference_prob": [[0.5, 0.4]], "in_mask": [[True, False]],
          "reference_prob_z": [[0.5]]}, "at least 2 models"),
        ({"n_pseudo_targets": 3}, "'n_pseudo_targets'"),
        ({"grid": [0.5, 1.5]}, "'grid'"),
        ({"grid": []}, "'grid'"),
        # Two models with complementary halves: a pseudo-target's records that keep an OUT
        # model among the others are all its members, so the AUC is undefined.
        ({"in_mask": [[True, False], [False, True]]}, "members and non-members"),
        ({"reference_prob_z": [[0.5]]}, "'reference_prob_z'"),
    ],
)
def test_tuning_rejects_bad_input(kwargs, match):
    args = {"reference_prob": [[0.5, 0.4], [0.3, 0.6]], "in_mask": [[True, False], [True, False]],
            "reference_prob_z": [[0.5], [0.4]]}
    args.update(kwargs)
    ref = args.pop("reference_prob")
    mask = args.pop("in_mask")
    refz = args.pop("reference_prob_z")
    with pytest.raises(ValueError, match=match):
        tune_rmia_offline_a(ref, mask, refz, **args)


def test_tuning_drops_population_samples_in_the_pseudo_target():
    rng = np.random.default_rng(3)
    ref = rng.random((4, 50))
    mask = rng.random((4, 50)) < 0.5
    refz = rng.random((4, 20))
    mz = np.zeros((4, 20), dtype=bool)
    mz[0] = True  # every z trained the pseudo-target: none is usable
    with pytest.raises(ValueError, match="0 z"):
        tune_rmia_offline_a(ref, mask, refz, in_mask_z=mz)
    # z 0-9 trained the pseudo-target (model 0): they are dropped, so tuning sees exactly
    # what it sees when given z 10-19 only.
    mz[0, 10:] = False
    got = tune_rmia_offline_a(ref, mask, refz, in_mask_z=mz)
    expected = tune_rmia_offline_a(ref, mask, refz[:, 10:])
    np.testing.assert_array_equal(got.auc, expected.auc)
    assert got.a == expected.a


# --------------------------------------------------------------------------- layer 4: end to end


def parzen_probabilities(kernel, onehot, train_mask, alpha=1e-3):
    """Parzen-window classifier: p(c | x) proportional to sum of K(x, x_i) over training
    records of class c, plus alpha. A training record contributes K(x, x) = 1 to itself,
    which is how this classic non-parametric learner memorises its members."""
    weights = train_mask[:, :, None] * onehot[None]
    scores = np.einsum("ij,mjc->mic", kernel, weights) + alpha
    return scores / scores.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def parzen_world():
    """3,000 records (4 classes, 10% label noise), half audited, half population.

    The target trains on a random half of the audited records; four offline reference
    models train on random halves of 2/3 of the population; the last 1/3 are the z.
    """
    seed = 0
    X, y = make_classification(3000, 20, n_informative=10, n_classes=4,
                               n_clusters_per_class=2, flip_y=0.1, random_state=seed)
    n = len(y)
    onehot = np.eye(4)[y]
    sq = (X**2).sum(1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0)
    kernel = np.exp(-d2 / (2 * 0.05 * np.median(d2)))
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    audited, population = perm[: n // 2], perm[n // 2:]
    z_idx, pool_idx = population[: len(population) // 3], population[len(population) // 3:]
    labels = rng.random(len(audited)) < 0.5
    target_mask = np.zeros((1, n), dtype=bool)
    target_mask[0, audited[labels]] = True
    p_target = parzen_probabilities(kernel, onehot, target_mask)[0]
    pool_mask = np.zeros((4, n), dtype=bool)
    ranks = rng.random((4, len(pool_idx))).argsort(0).argsort(0)
    pool_mask[:, pool_idx] = ranks < 2
    p_pool = parzen_probabilities(kernel, onehot, pool_mask)
    rows = np.arange(n)
    return {
        "labels": labels.astype(np.int8), "y": y, "audited": audited, "z": z_idx,
        "pool_idx": pool_idx, "pool_mask": pool_mask,
        "target_true": p_target[rows, y], "pool_true": p_pool[:, rows, y],
        "target_phi": logit_confidence(p_target, y), "pool_phi": logit_confidence(p_pool, y),
    }


def run_parzen(w, n_models):
    aud, z = w["audited"], w["z"]
    tuned = tune_rmia_offline_a(w["pool_true"][:, w["pool_idx"]],
                                w["pool_mask"][:, w["pool_idx"]],
                                w["pool_true"][:, z], n_pseudo_targets=2)
    use = slice(0, n_models)
    out = np.zeros((n_models, len(aud)), dtype=bool)  # offline: audited records are OUT
    scores = {
        "loss": w["target_phi"][aud],
        "rmia": rmia_scores(w["target_true"][aud], w["pool_true"][use][:, aud],
                            w["target_true"][z], w["pool_true"][use][:, z],
                            offline_a=tuned.a),
        "rmia_a1": rmia_scores(w["target_true"][aud], w["pool_true"][use][:, aud],
                               w["target_true"][z], w["pool_true"][use][:, z], offline_a=1.0),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivauditWarning)  # 1 model: variance across records
        scores["lira_fix"] = lira_scores(w["target_phi"][aud], w["pool_phi"][use][:, aud], out,
                                         online=False, fix_variance=True)
        if n_models >= 2:
            scores["lira_per"] = lira_scores(w["target_phi"][aud], w["pool_phi"][use][:, aud],
                                             out, online=False)
    labels = w["labels"]
    return tuned, {k: (roc_auc(labels, s), tpr_at_fpr(labels, s, 0.01))
                   for k, s in scores.items()}


def test_rmia_with_one_or_two_reference_models_matches_offline_lira(parzen_world):
    """The paper's finding with 1-2 offline reference models, on a real learner.

    Measured with data/split seeds 0, 1, 2 (AUC): 1 model, RMIA 0.889 / 0.884 / 0.862 vs
    offline LiRA with fixed variance (the only variant with one model) 0.875 / 0.873 /
    0.843; 2 models, RMIA 0.903 / 0.910 / 0.882 vs LiRA fixed variance 0.896 / 0.902 /
    0.866 and LiRA per-record variance 0.861 / 0.848 / 0.843 (TPR@1% 0.20 / 0.32 / 0.14
    vs 0.04 / 0.05 / 0.09). LOSS 0.78 / 0.81 / 0.77; RMIA with a = 1 instead of the tuned
    a (0.7 / 0.7 / 0.6) 0.845 / 0.826 / 0.800 with one model. At TPR@1% offline LiRA with
    fixed variance is level with or above RMIA here (0.24 vs 0.25, 0.27 vs 0.20 for seed
    0). In a pure Gaussian-logit simulation (LiRA's own model, as in
    test_membership_lira_core) offline LiRA with fixed variance beats RMIA: the paper's
    advantage is empirical, and this test only pins it on this learner.
    """
    tuned1, one = run_parzen(parzen_world, 1)
    _, two = run_parzen(parzen_world, 2)
    assert 0.0 < tuned1.a < 1.0
    for res in (one, two):
        assert res["rmia"][0] > res["loss"][0] + 0.1
        assert res["rmia"][0] >= res["rmia_a1"][0]  # tuning a pays off
    assert one["rmia"][0] >= one["lira_fix"][0]
    assert two["rmia"][0] >= two["lira_fix"][0] - 0.005
    assert two["rmia"][0] > two["lira_per"][0] + 0.01
    assert two["rmia"][1] > two["lira_per"][1]
    assert two["rmia"][0] > one["rmia"][0]  # a second reference model helps
