"""LiRA's numerical core: logit_confidence, fit_lira_gaussians and lira_scores.

Four layers: a per-record loop straight from the formulas (scipy.stats.norm) compared on
random inputs; hypothesis properties; hand-worked numbers; and a simulation with known
per-record IN/OUT distributions that reproduces the paper's qualitative findings.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import log_softmax, softmax

from privaudit import signals
from privaudit.attacks.membership._lira import (
    LiraGaussians,
    fit_lira_gaussians,
    lira_scores,
    logit_confidence,
)
from privaudit.exceptions import DegenerateInputWarning, PrivauditWarning
from privaudit.metrics import roc_auc, tpr_at_fpr

# --------------------------------------------------------------------------- reference


def lira_reference(phi, ref, mask, *, online=True, fix_variance=False, min_models=2):
    """LiRA one record at a time, straight from Algorithm 1 and the documented rules."""
    phi = np.asarray(phi, dtype=float)
    ref = np.asarray(ref, dtype=float)
    if ref.ndim == 2:
        ref, phi = ref[:, :, None], phi[:, None]
    n_models, n_rec, n_aug = ref.shape
    side_masks = {"in": mask, "out": ~mask}
    mean, count, ss = {}, {}, {}
    for side, m in side_masks.items():
        mean[side] = np.full((n_rec, n_aug), np.nan)
        ss[side] = np.zeros((n_rec, n_aug))
        count[side] = np.zeros(n_rec, dtype=int)
        for j in range(n_rec):
            vals = [ref[i, j, :] for i in range(n_models) if m[i, j]]
            count[side][j] = len(vals)
            if vals:
                v = np.array(vals)
                mean[side][j] = v.mean(axis=0)
                ss[side][j] = ((v - mean[side][j]) ** 2).sum(axis=0)
    pooled = {}
    for side, m in side_masks.items():
        dof = sum(max(count[side][j] - 1, 0) for j in range(n_rec))
        if dof > 0:
            pooled[side] = ss[side].sum(axis=0) / dof
        else:
            pooled[side] = ref[m].var(axis=0, ddof=1)  # the spread across records
    both = [j for j in range(n_rec) if count["in"][j] and count["out"][j]]
    sides = ("in", "out") if online else ("out",)
    missing = [j for j in range(n_rec) if any(count[side][j] == 0 for side in sides)]
    if missing and not both:
        raise ValueError("no record has both sides: nothing to impute from")
    shift = np.mean([mean["in"][j] - mean["out"][j] for j in both], axis=0) if both else None
    scores = np.zeros(n_rec)
    for j in range(n_rec):
        mu, sd = {}, {}
        for side in sides:
            if count[side][j] == 0:
                other = "out" if side == "in" else "in"
                sign = 1.0 if side == "in" else -1.0
                mu[side] = mean[other][j] + sign * shift
            else:
                mu[side] = mean[side][j]
            var = pooled[side].copy()
            if not fix_variance and count[side][j] >= min_models:
                own = ss[side][j] / (count[side][j] - 1)
                var = np.where(own > 0, own, var)
            sd[side] = np.sqrt(var)
        if online:
            scores[j] = sum(
                stats.norm.logpdf(phi[j, a], mu["in"][a], sd["in"][a])
                - stats.norm.logpdf(phi[j, a], mu["out"][a], sd["out"][a])
                for a in range(n_aug)
            )
        else:
            z = sum((phi[j, a] - mu["out"][a]) / sd["out"][a] for a in range(n_aug))
            scores[j] = -stats.norm.logsf(z / math.sqrt(n_aug))
    return scores


def random_problem(seed, n_models, n_rec, n_aug, p_in=0.5):
    rng = np.random.default_rng(seed)
    hardness = rng.normal(0, 2, size=(n_rec, max(n_aug, 1)))
    mask = rng.random((n_models, n_rec)) < p_in
    ref = hardness[None] + rng.normal(size=(n_models, n_rec, max(n_aug, 1)))
    ref = ref + 1.5 * mask[:, :, None]
    phi = hardness + rng.normal(size=(n_rec, max(n_aug, 1)))
    if n_aug == 0:  # no augmentation axis at all
        return phi[:, 0], ref[:, :, 0], mask
    return phi, ref, mask


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", PrivauditWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------- layer 1


@pytest.mark.parametrize("online", [True, False])
@pytest.mark.parametrize("fix_variance", [False, True])
@pytest.mark.parametrize("n_aug", [0, 1, 3])
def test_matches_per_record_reference(online, fix_variance, n_aug):
    for seed in range(6):
        n_models = [2, 3, 4, 8, 16, 5][seed]
        phi, ref, mask = random_problem(seed, n_models, 40, n_aug)
        fast = quiet(lira_scores, phi, ref, mask, online=online, fix_variance=fix_variance)
        slow = quiet(lira_reference, phi, ref, mask, online=online, fix_variance=fix_variance)
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_models=st.integers(1, 10),
    n_rec=st.integers(1, 25),
    n_aug=st.integers(0, 3),
    p_in=st.sampled_from([0.1, 0.5, 0.9]),
    online=st.booleans(),
    fix_variance=st.booleans(),
    min_models=st.integers(2, 5),
)
def test_matches_reference_on_random_masks(
    seed, n_models, n_rec, n_aug, p_in, online, fix_variance, min_models
):
    phi, ref, mask = random_problem(seed, n_models, n_rec, n_aug, p_in)
    kwargs = {"online": online, "fix_variance": fix_variance, "min_models": min_models}
    n_in, n_out = mask.sum(0), (~mask).sum(0)
    missing = (n_out == 0) | ((n_in == 0) if online else False)
    if missing.any() and not np.any((n_in > 0) & (n_out > 0)):
        # Some record lacks a side and no record has both: nothing to impute from.
        with pytest.raises(ValueError, match="no record has"):
            quiet(lira_scores, phi, ref, mask, **kwargs)
        with pytest.raises(ValueError):
            quiet(lira_reference, phi, ref, mask, **kwargs)
        return
    slow = quiet(lira_reference, phi, ref, mask, **kwargs)
    fast = quiet(lira_scores, phi, ref, mask, **kwargs)
    if np.all(np.isfinite(slow)):
        np.testing.assert_allclose(fast, slow, rtol=1e-8, atol=1e-8)
    else:
        assert np.all(np.isnan(fast))  # degenerate: a pooled variance of 0


def test_fit_lira_gaussians_returns_the_fitted_parameters():
    _, ref, mask = balanced(3, 8, 30, 2)
    fits = fit_lira_gaussians(ref, mask)
    assert isinstance(fits, LiraGaussians)
    j = 7
    ins, outs = ref[mask[:, j], j], ref[~mask[:, j], j]
    np.testing.assert_allclose(fits.mu_in[j], ins.mean(0))
    np.testing.assert_allclose(fits.mu_out[j], outs.mean(0))
    np.testing.assert_allclose(fits.sigma_in[j], ins.std(0, ddof=1))
    np.testing.assert_allclose(fits.sigma_out[j], outs.std(0, ddof=1))
    assert fits.n_in[j] == len(ins) and fits.n_out[j] == len(outs)
    offline = fit_lira_gaussians(ref, mask, online=False)
    assert np.all(np.isnan(offline.mu_in)) and np.all(np.isnan(offline.sigma_in))
    np.testing.assert_allclose(offline.mu_out, fits.mu_out)


# --------------------------------------------------------------------------- statistic


def test_logit_confidence_matches_signals_and_formula():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=200)
    y = rng.integers(0, 5, size=200)
    ours = logit_confidence(p, y)
    np.testing.assert_array_equal(ours, signals.logit_confidence(p, y))
    py = p[np.arange(200), y]
    np.testing.assert_allclose(ours, np.log(py / (1 - py)), rtol=1e-10, atol=1e-12)


def test_logit_confidence_from_logits_is_exact_and_stable():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(100, 4)) * 3
    y = rng.integers(0, 4, size=100)
    lp = log_softmax(logits, axis=1)
    expected = lp[np.arange(100), y] - np.log(
        softmax(logits, axis=1).sum(1) - softmax(logits, axis=1)[np.arange(100), y]
    )
    np.testing.assert_allclose(logit_confidence(logits, y, from_logits=True), expected,
                               rtol=1e-9, atol=1e-9)
    # From logits the softmax normaliser cancels: z_y - logsumexp(others), no clipping.
    big = np.array([[800.0, 0.0, 0.0], [0.0, -750.0, 3.0]])
    out = logit_confidence(big, np.array([0, 1]), from_logits=True)
    np.testing.assert_allclose(out, [800.0 - math.log(2.0), -750.0 - 3.0 - math.log1p(
        math.exp(-3.0))], rtol=1e-13)
    # The same outputs as probabilities saturate (p_y rounds to 1): clipped, still finite.
    probs = softmax(big, axis=1)
    clipped = logit_confidence(probs, np.array([0, 1]))
    assert np.all(np.isfinite(clipped)) and clipped[0] > 700 and clipped[1] < -700


def test_logit_confidence_keeps_precision_near_one():
    # p_y = 1 - 1e-20 is 1.0 in float64, but the other class keeps the information.
    p = np.array([[1.0, 1e-20], [1.0, 1e-30]])
    np.testing.assert_allclose(logit_confidence(p, np.array([0, 0])),
                               [20 * math.log(10), 30 * math.log(10)], rtol=1e-12)


def test_logit_confidence_batched_over_models():
    rng = np.random.default_rng(2)
    stacked = rng.dirichlet(np.ones(3), size=(6, 50))  # (n_models, n_records, n_classes)
    y = rng.integers(0, 3, size=50)
    batched = logit_confidence(stacked, y)
    assert batched.shape == (6, 50)
    for i in range(6):
        np.testing.assert_array_equal(batched[i], logit_confidence(stacked[i], y))
    logits = np.log(stacked) + 7.0  # shifted logits of the same probabilities
    np.testing.assert_allclose(logit_confidence(logits, y, from_logits=True), batched,
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    ("outputs", "y", "kwargs", "error", "match"),
    [
        ([0.5, 0.5], [0], {}, ValueError, "'outputs'"),
        ([[1.0]], [0], {}, ValueError, "n_classes >= 2"),
        ([[0.5, np.nan]], [0], {}, ValueError, "finite"),
        ([[1.5, -0.5]], [0], {}, ValueError, "non-negative"),
        ([[0.5, 0.5]], [2], {}, ValueError, r"in \[0, 2\)"),
        ([[0.5, 0.5]], [0.0], {}, TypeError, "integer"),
        ([[0.5, 0.5]], [0, 1], {}, ValueError, "broadcastable"),
        ([[0.5, 0.5]], [0], {"eps": 0.0}, ValueError, "'eps'"),
    ],
)
def test_logit_confidence_rejects_bad_input(outputs, y, kwargs, error, match):
    with pytest.raises(error, match=match):
        logit_confidence(outputs, np.asarray(y), **kwargs)


def test_logit_confidence_accepts_negative_logits():
    assert np.isfinite(logit_confidence([[-3.0, -1.0]], [0], from_logits=True)).all()


# --------------------------------------------------------------------------- layer 3


problem = st.tuples(
    st.integers(0, 2**32 - 1), st.integers(4, 10), st.integers(2, 20), st.integers(0, 2)
)


def balanced(seed, n_models, n_rec, n_aug):
    phi, ref, _ = random_problem(seed, n_models, n_rec, n_aug)
    rng = np.random.default_rng(seed + 1)
    ranks = rng.random((n_models, n_rec)).argsort(0).argsort(0)
    return phi, ref, ranks < n_models // 2  # every record: >= 2 IN and >= 2 OUT models


@settings(max_examples=40, deadline=None)
@given(
    prob=problem, shift=st.floats(-50, 50), scale=st.floats(0.05, 20),
    online=st.booleans(), fix_variance=st.booleans(),
)
def test_invariant_to_affine_rescaling_of_the_statistic(prob, shift, scale, online,
                                                        fix_variance):
    # A common affine change of units cancels in standardised values and in the
    # log-likelihood ratio (each log-density shifts by -log(scale)).
    phi, ref, mask = balanced(*prob)
    kw = {"online": online, "fix_variance": fix_variance}
    base = lira_scores(phi, ref, mask, **kw)
    moved = lira_scores(shift + scale * phi, shift + scale * ref, mask, **kw)
    np.testing.assert_allclose(moved, base, rtol=1e-7, atol=1e-7)


@settings(max_examples=40, deadline=None)
@given(prob=problem, online=st.booleans(), fix_variance=st.booleans())
def test_permuting_models_and_records(prob, online, fix_variance):
    phi, ref, mask = balanced(*prob)
    rng = np.random.default_rng(prob[0])
    pm, pr = rng.permutation(ref.shape[0]), rng.permutation(ref.shape[1])
    kw = {"online": online, "fix_variance": fix_variance}
    base = lira_scores(phi, ref, mask, **kw)
    np.testing.assert_allclose(lira_scores(phi, ref[pm], mask[pm], **kw), base, rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(lira_scores(phi[pr], ref[:, pr], mask[:, pr], **kw), base[pr],
                               rtol=1e-10, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(prob=problem, fix_variance=st.booleans())
def test_swapping_in_and_out_negates_the_online_ratio(prob, fix_variance):
    phi, ref, mask = balanced(*prob)
    a = lira_scores(phi, ref, mask, fix_variance=fix_variance)
    b = lira_scores(phi, ref, ~mask, fix_variance=fix_variance)
    np.testing.assert_allclose(b, -a, rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(prob=problem, fix_variance=st.booleans(), steps=st.lists(
    st.integers(0, 3000), min_size=2, max_size=6, unique=True))
def test_offline_score_increases_with_the_statistic(prob, fix_variance, steps):
    _, ref, mask = balanced(*prob)
    phi0 = ref.mean(axis=0) - 3.0
    previous = None
    for d in sorted(k / 100 for k in steps):
        s = lira_scores(phi0 + d, ref, mask, online=False, fix_variance=fix_variance)
        assert np.all(np.isfinite(s)) and np.all(s >= 0)
        if previous is not None:
            assert np.all(s >= previous)
            # Strictly wherever the score is not the floor 0 (z below about -38, where
            # Pr[Z > phi] rounds to 1); upwards -logsf resolves z up to about 1e150.
            live = previous > 0
            assert np.all(s[live] > previous[live])
        previous = s


@settings(max_examples=40, deadline=None)
@given(
    mu_out=st.floats(-5, 5), gap=st.floats(0.01, 5), spread=st.floats(0.05, 3),
    steps=st.lists(st.integers(-2000, 2000), min_size=2, max_size=8, unique=True),
)
def test_online_score_increases_with_phi_when_mu_in_exceeds_mu_out(mu_out, gap, spread, steps):
    # Equal IN and OUT spreads make the log-likelihood ratio linear in phi with slope
    # (mu_in - mu_out) / sigma^2 > 0.
    phis = [k / 100 for k in steps]
    ref_col = np.array([mu_out - spread, mu_out + spread, mu_out + gap - spread,
                        mu_out + gap + spread])
    n = len(phis)
    ref = np.tile(ref_col[:, None], (1, n))
    mask = np.tile(np.array([False, False, True, True])[:, None], (1, n))
    order = np.argsort(phis)
    s = lira_scores(np.array(phis), ref, mask)[order]
    assert np.all(np.diff(s) > 0)
    sigma2 = 2 * spread**2
    slope = gap / sigma2
    np.testing.assert_allclose(np.diff(s), slope * np.diff(np.array(phis)[order]),
                               rtol=1e-6, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(prob=problem, fix_variance=st.booleans())
def test_augmentations_add_up_online(prob, fix_variance):
    seed, n_models, n_rec, _ = prob
    phi, ref, mask = balanced(seed, n_models, n_rec, 3)
    total = lira_scores(phi, ref, mask, fix_variance=fix_variance)
    parts = sum(
        lira_scores(phi[:, a], ref[:, :, a], mask, fix_variance=fix_variance) for a in range(3)
    )
    np.testing.assert_allclose(total, parts, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- layer 4: pinned

# Two records, four models. Record 0: IN models give 1, 3 (mean 2, sample variance
# ((1-2)^2 + (3-2)^2) / 1 = 2); OUT models give -1, 1 (mean 0, variance 2).
# Record 1: OUT 0, 2 (mean 1, variance 2); IN 4, 8 (mean 6, variance ((4-6)^2+(8-6)^2) = 8).
REF = np.array([[1.0, 0.0], [3.0, 2.0], [-1.0, 4.0], [1.0, 8.0]])
MASK = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=bool)


def test_pinned_online_per_record_variance():
    # Record 0, phi = 2: z_in = 0, z_out^2 = (2 - 0)^2 / 2 = 2, equal sigmas:
    #   LLR = log(sqrt 2) - log(sqrt 2) + (2 - 0) / 2 = 1.
    # Record 1, phi = 6: z_in = 0, z_out^2 = (6 - 1)^2 / 2 = 12.5:
    #   LLR = log sqrt(2) - log sqrt(8) + 12.5 / 2 = 6.25 - log 2.
    np.testing.assert_allclose(lira_scores([2.0, 6.0], REF, MASK), [1.0, 6.25 - math.log(2)],
                               rtol=1e-12)


def test_pinned_online_fixed_variance():
    # Pooled IN variance: (2 + 8) / (1 + 1) = 5; pooled OUT: (2 + 2) / 2 = 2.
    # Record 0: log sqrt(2) - log sqrt(5) + (2 - 0) / 2 = 1 - log(2.5) / 2.
    # Record 1: log sqrt(2) - log sqrt(5) + 12.5 / 2 = 6.25 - log(2.5) / 2.
    expected = [1 - math.log(2.5) / 2, 6.25 - math.log(2.5) / 2]
    np.testing.assert_allclose(lira_scores([2.0, 6.0], REF, MASK, fix_variance=True), expected,
                               rtol=1e-12)


def test_pinned_offline():
    # Record 0: z = (2 - 0) / sqrt 2 = sqrt 2, Pr[Z > phi] = erfc(1) / 2, so the score
    # -log Pr[Z > phi] = log 2 - log erfc(1) (about 2.5428). Record 1: phi = 1 = mu_out,
    # z = 0, score -log(1/2) = log 2. The paper's Lambda = 1 - Pr[Z > phi] ranks the same.
    expected = [math.log(2) - math.log(math.erfc(1.0)), math.log(2)]
    np.testing.assert_allclose(lira_scores([2.0, 1.0], REF, MASK, online=False), expected,
                               rtol=1e-12)
    # With fixed variance the OUT variance is the pooled 2 as well: same numbers.
    np.testing.assert_allclose(
        lira_scores([2.0, 1.0], REF, MASK, online=False, fix_variance=True), expected,
        rtol=1e-12,
    )


def test_pinned_offline_two_augmentations_stouffer():
    # Both augmentations z = sqrt 2: Z = (sqrt 2 + sqrt 2) / sqrt 2 = 2.
    ref = np.stack([REF, REF], axis=2)
    phi = np.array([[2.0, 2.0], [1.0, 1.0]])
    s = lira_scores(phi, ref, MASK, online=False)
    np.testing.assert_allclose(s, [-stats.norm.logsf(2.0), math.log(2)], rtol=1e-12)


def test_pinned_imputation_of_a_missing_side():
    # Record 1 is OUT for all four models: 0, 2, 0, 2 (mean 1, variance 4/3). Its IN mean
    # is imputed as mu_out + shift, shift = mu_in - mu_out of record 0 = 2 - 0 = 2, so 3;
    # its IN variance is the pooled one, from record 0 only: 2 / 1 = 2.
    # phi = 3: z_in = 0, z_out^2 = (3 - 1)^2 / (4/3) = 3:
    #   LLR = log sqrt(4/3) - log sqrt(2) + 3 / 2 = 1.5 + log(2/3) / 2.
    ref = np.array([[1.0, 0.0], [3.0, 2.0], [-1.0, 0.0], [1.0, 2.0]])
    mask = np.array([[1, 0], [1, 0], [0, 0], [0, 0]], dtype=bool)
    with pytest.warns(PrivauditWarning, match="1 of 2 records have no reference model"):
        s = lira_scores([2.0, 3.0], ref, mask)
    np.testing.assert_allclose(s, [1.0, 1.5 + math.log(2 / 3) / 2], rtol=1e-12)
    with pytest.warns(PrivauditWarning):
        fits = fit_lira_gaussians(ref, mask)
    assert fits.imputed_in.tolist() == [False, True]
    assert not fits.imputed_out.any()


def test_records_with_one_model_use_the_pooled_variance():
    # Record 1 has a single IN model (value 5): its IN variance is the pooled one (2, from
    # record 0), mean 5. phi = 5: z_in = 0, OUT (0, 2, 2 -> mean 4/3, var 4/3).
    ref = np.array([[1.0, 5.0], [3.0, 0.0], [-1.0, 2.0], [1.0, 2.0]])
    mask = np.array([[1, 1], [1, 0], [0, 0], [0, 0]], dtype=bool)
    s = lira_scores([2.0, 5.0], ref, mask)
    z_out2 = (5 - 4 / 3) ** 2 / (4 / 3)
    expected = 0.5 * math.log(4 / 3) - 0.5 * math.log(2) + z_out2 / 2
    np.testing.assert_allclose(s[1], expected, rtol=1e-12)


def test_offline_resolves_extreme_members_where_the_papers_lambda_saturates():
    mu, sd = 0.0, 1.0
    ref = np.array([[mu - sd], [mu + sd]]) * np.ones((2, 4))
    mask = np.zeros((2, 4), dtype=bool)
    z = np.array([9.0, 20.0, 40.0, 100.0])
    phi = z * math.sqrt(2.0)  # sample sd of {-1, 1} is sqrt 2
    s = lira_scores(phi, ref, mask, online=False)
    assert np.all(np.diff(s) > 0)
    # Lambda itself (a cdf) is exactly 1.0 for all four, and log Lambda 0 for the last two.
    assert np.all(stats.norm.cdf(z) == 1.0)
    assert stats.norm.logcdf(40.0) == 0.0 == stats.norm.logcdf(100.0)


# --------------------------------------------------------------------------- bad input


def test_no_record_with_both_sides_is_an_error_online_but_fine_offline():
    ref = np.array([[1.0, 2.0, 3.0]])
    mask = np.array([[True, False, False]])
    with pytest.raises(ValueError, match="no record has both IN and OUT"):
        lira_scores([1.0, 2.0, 3.0], ref, mask)
    # Offline with one OUT model per record: the variance comes from across records.
    with pytest.warns(PrivauditWarning, match="across records"):
        s = lira_scores([1.0, 2.0, 3.0], np.array([[0.0, 2.0, 1.0]]),
                        np.zeros((1, 3), dtype=bool), online=False)
    # Global sd = 1 (values 0, 2, 1); z = 1, 0, 2.
    np.testing.assert_allclose(s, -stats.norm.logsf([1.0, 0.0, 2.0]), rtol=1e-12)


def test_constant_statistics_are_degenerate():
    ref = np.ones((4, 3))
    mask = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 0], [0, 1, 0]], dtype=bool)
    with pytest.warns(DegenerateInputWarning, match="pooled variance is 0"):
        s = lira_scores(np.ones(3), ref, mask)
    assert np.all(np.isnan(s))


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (([1.0], np.zeros(3), np.zeros((3,), bool)), {}, ValueError, "'reference_stats'"),
        (([1.0, 2.0], np.zeros((2, 3)), np.zeros((2, 3), bool)), {}, ValueError,
         "'target_stat'"),
        (([1.0, 2.0, 3.0], np.zeros((2, 3)), np.zeros((3, 2), bool)), {}, ValueError,
         "'in_mask'"),
        (([1.0, 2.0, 3.0], np.zeros((2, 3)), np.full((2, 3), 2)), {}, ValueError,
         "'in_mask'"),
        (([1.0, np.inf, 3.0], np.zeros((2, 3)), np.zeros((2, 3), bool)), {}, ValueError,
         "finite"),
        (([1.0, 2.0, 3.0], np.full((2, 3), np.nan), np.zeros((2, 3), bool)), {}, ValueError,
         "finite"),
        (([1.0, 2.0, 3.0], np.zeros((2, 3)), np.zeros((2, 3), bool)), {"min_models": 1},
         ValueError, "'min_models'"),
        (([1.0, 2.0, 3.0], np.zeros((2, 3)), np.zeros((2, 3), bool)), {"min_models": 2.0},
         TypeError, "'min_models'"),
        (([[1.0], [2.0], [3.0]], np.zeros((2, 3)), np.zeros((2, 3), bool)), {}, ValueError,
         "'target_stat'"),
    ],
)
def test_rejects_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        lira_scores(*args, **kwargs)


def test_error_message_follows_the_template():
    with pytest.raises(ValueError) as info:
        lira_scores([1.0], np.zeros((2, 1)), np.zeros((2, 1), bool), min_models=0)
    assert str(info.value) == (
        "The 'min_models' parameter of lira_scores must be an integer >= 2. Got 0 instead."
    )


# --------------------------------------------------------------------------- layer 4: simulation


def simulate(n_models, *, n=20_000, seed=0, sd_spread=0.5):
    """Records of varying hardness with known IN/OUT Gaussians of the logit statistic.

    Per record: mu_out ~ N(1, 2^2) (hard to easy), a membership gap ~ LogNormal(0, 0.8)
    (most records barely move, a few outliers move a lot, as in the paper's Figure 1),
    sigma_out ~ U(1 - sd_spread, 1 + sd_spread), sigma_in = sigma_out * U(0.8, 1).
    Each record is IN for exactly half of the reference models.
    """
    rng = np.random.default_rng(seed)
    mu_out = rng.normal(1.0, 2.0, n)
    mu_in = mu_out + rng.lognormal(0.0, 0.8, n)
    sd_out = rng.uniform(1 - sd_spread, 1 + sd_spread, n)
    sd_in = sd_out * rng.uniform(0.8, 1.0, n)

    def draw(member):
        e = rng.standard_normal(member.shape)
        return np.where(member, mu_in + sd_in * e, mu_out + sd_out * e)

    labels = rng.random(n) < 0.5
    phi = draw(labels)
    mask = rng.random((n_models, n)).argsort(0).argsort(0) < n_models // 2
    return labels.astype(np.int8), phi, draw(mask), mask


def attack_metrics(labels, scores):
    return roc_auc(labels, scores), tpr_at_fpr(labels, scores, 0.001)


@pytest.fixture(scope="module")
def simulations():
    out = {}
    for m in (4, 16, 64):
        labels, phi, ref, mask = simulate(m)
        res = {"loss": attack_metrics(labels, phi)}
        for online in (True, False):
            for fv in (False, True):
                s = lira_scores(phi, ref, mask, online=online, fix_variance=fv)
                res[("online" if online else "offline", fv)] = attack_metrics(labels, s)
        out[m] = res
    return out


def test_simulation_online_lira_beats_a_global_threshold(simulations):
    # Measured (seed 0): LOSS AUC 0.658, TPR@0.1% 0.018; online LiRA with 16 models and
    # fixed variance AUC 0.803, TPR@0.1% 0.081; with 64 models, per-record 0.823 / 0.102.
    loss_auc, loss_tpr = simulations[16]["loss"]
    for m, fv in ((4, True), (16, True), (16, False), (64, False), (64, True)):
        auc, tpr = simulations[m][("online", fv)]
        assert auc > loss_auc + 0.08
        assert tpr > 2.5 * loss_tpr


def test_simulation_online_at_least_as_strong_as_offline(simulations):
    # Offline uses the OUT half of the same models. Measured AUC online vs offline:
    # 16 models fixed variance 0.803 vs 0.768, 64 models per record 0.823 vs 0.780.
    for m, fv in ((4, True), (16, True), (64, False)):
        on_auc, on_tpr = simulations[m][("online", fv)]
        off_auc, off_tpr = simulations[m][("offline", fv)]
        assert on_auc > off_auc + 0.01
        assert on_tpr >= off_tpr
    for m in (16, 64):
        assert simulations[m][("online", False)][0] > simulations[m][("offline", False)][0]


def test_simulation_fixed_variance_wins_with_few_models_per_record_with_many(simulations):
    # 4 models (2 per side): per-record variances from 2 values are noise; measured
    # online AUC 0.660 vs 0.762, TPR@0.1% 0.001 vs 0.063. With 64 models the per-record
    # variance pays off (records differ in spread): AUC 0.823 vs 0.816, TPR@0.1% 0.102
    # vs 0.090 (0.133 vs 0.083 and 0.157 vs 0.111 with seeds 1 and 2).
    per_auc, per_tpr = simulations[4][("online", False)]
    fix_auc, fix_tpr = simulations[4][("online", True)]
    assert fix_auc > per_auc + 0.05
    assert fix_tpr > 5 * per_tpr
    per_auc, per_tpr = simulations[64][("online", False)]
    fix_auc, fix_tpr = simulations[64][("online", True)]
    assert per_auc > fix_auc
    assert per_tpr > fix_tpr


def test_simulation_more_models_help(simulations):
    aucs = [simulations[m][("online", True)][0] for m in (4, 16, 64)]
    assert aucs[0] < aucs[1] < aucs[2]
