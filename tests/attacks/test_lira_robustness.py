"""LiRA on statistics a Gaussian describes badly: trees (probabilities of exactly 0 or 1),
a saturated network, and regressors (which it cannot read at all).

Issue 6: on a random forest, the pooled variance of ``fix_variance="auto"`` (below 64
models) was dominated by the few records whose statistic saturates on some trees, and
online LiRA found fewer members at 1% FPR than LOSS while its AUC looked fine.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.datasets import load_diabetes, load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import Ridge
from sklearn.neural_network import MLPClassifier

from privaudit.attacks import GaussianFitWarning
from privaudit.attacks.membership import (
    LiRAAttack,
    LossAttack,
    ReferenceOutputs,
    RMIAAttack,
    collect_reference_outputs,
    fit_lira_gaussians,
    lira_scores,
    rmia_scores,
    saturation_bound,
)
from privaudit.metrics import tpr_at_fpr
from privaudit.signals import logit_confidence
from privaudit.targets import ModelOutputs, SklearnTarget

TINY = float(np.finfo(np.float64).tiny)


def quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def tpr1(labels, scores):
    return tpr_at_fpr(labels, scores, fpr=0.01)


# --------------------------------------------------------------------------- a forest


@pytest.fixture(scope="module")
def forest():
    """RandomForest(30) on 200 digits; 8 reference forests; 200 members + 200 others."""
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(X))
    aud, pop = perm[:400], perm[400:800]

    def rf():
        return RandomForestClassifier(30, random_state=0)

    target = SklearnTarget(rf().fit(X[aud[:200]], y[aud[:200]]), name="rf")
    pool = quiet(collect_reference_outputs, rf(), X[aud], y[aud], X_population=X[pop],
                 y_population=y[pop], n_models=8, train_fraction=1 / 3, random_state=0,
                 n_jobs=1)
    return {"pool": pool, "out": target.query(X[aud], y[aud]),
            "pop_out": target.query(X[pop], y[pop]),
            "labels": np.r_[np.ones(200, int), np.zeros(200, int)]}


def test_forest_statistics_saturate(forest):
    stats = forest["pool"].signal("logit_confidence")
    assert np.isclose(stats.max(), saturation_bound(TINY))  # a probability of exactly 1


def test_online_lira_on_a_forest_beats_loss_clearly(forest):
    out, labels = forest["out"], forest["labels"]
    loss = tpr1(labels, LossAttack().score(outputs=out))
    with pytest.warns(GaussianFitWarning, match="saturated"):
        lira = tpr1(labels, LiRAAttack().fit(forest["pool"]).score(outputs=out))
    assert lira >= loss + 0.1 and lira >= 1.5 * loss, (lira, loss)


def test_pooling_every_record_still_collapses_and_says_so(forest):
    # The former default, still reachable: the saturated records dominate the pool.
    out, labels = forest["out"], forest["labels"]
    with pytest.warns(GaussianFitWarning, match="fix_variance='auto'"):
        pooled = LiRAAttack(fix_variance=True).fit(forest["pool"]).score(outputs=out)
    robust = quiet(LiRAAttack().fit(forest["pool"]).score, outputs=out)
    assert tpr1(labels, pooled) < tpr1(labels, LossAttack().score(outputs=out))
    assert tpr1(labels, robust) > 3 * tpr1(labels, pooled)


def test_offline_lira_on_a_forest_is_not_worse(forest):
    out, labels = forest["out"], forest["labels"]
    pooled = quiet(LiRAAttack(online=False, fix_variance=True).fit(forest["pool"]).score,
                   outputs=out)
    robust = quiet(LiRAAttack(online=False).fit(forest["pool"]).score, outputs=out)
    assert tpr1(labels, robust) >= tpr1(labels, pooled) - 0.02
    assert tpr1(labels, robust) > tpr1(labels, LossAttack().score(outputs=out))


def test_result_reports_the_saturated_records(forest):
    result = quiet(LiRAAttack().fit(forest["pool"]).run, outputs=forest["out"],
                   labels=forest["labels"])
    assert result.extra["variance_rule"] == "auto"
    assert result.extra["fixed_variance"] is True
    assert result.extra["n_saturated_records"] > 0


def test_rmia_reads_exact_zeros_and_ones_of_a_forest(forest):
    scores = RMIAAttack().fit(forest["pool"], forest["pop_out"]).score(outputs=forest["out"])
    assert np.all(np.isfinite(scores))
    assert tpr1(forest["labels"], scores) > tpr1(forest["labels"],
                                                 LossAttack().score(outputs=forest["out"]))


def test_rmia_core_with_exact_zero_and_one_probabilities():
    # x0: target certain (1) where every reference model says 0: dominates every z.
    # x1: 0 / 0 reads as a ratio of 1, never NaN. x2: target 0 where references say 1.
    # The z ratios are 0.4, 1 and 1.8.
    s = rmia_scores([1.0, 0.0, 0.0], [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]], [0.2, 0.5, 0.9],
                    [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]])
    np.testing.assert_allclose(s, [1.0, 2 / 3, 0.0])


# --------------------------------------------------------------------------- a saturated MLP


@pytest.fixture(scope="module")
def sharp_mlp():
    """MLPs on digits with logits scaled by 100: most confidences round to exactly 1."""
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(X))[:600]
    Xa, ya = X[perm] / 16.0, y[perm]

    def outputs(model):
        logp = np.log(np.maximum(model.predict_proba(Xa), 1e-300))
        return ModelOutputs.from_probabilities(ya, softmax(100.0 * logp, axis=1),
                                               model.classes_)

    def mlp(seed):
        return MLPClassifier((64,), alpha=0.0, max_iter=200, random_state=seed)

    rng = np.random.default_rng(1)
    mask = np.zeros((8, 600), dtype=bool)
    for j in range(600):
        mask[rng.permutation(8)[:4], j] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refs = tuple(outputs(mlp(i + 1).fit(Xa[mask[i]], ya[mask[i]])) for i in range(8))
        target = outputs(mlp(0).fit(Xa[:300], ya[:300]))
    return {"pool": ReferenceOutputs(audited=refs, audited_in=mask, mode="online"),
            "out": target, "labels": np.r_[np.ones(300, int), np.zeros(300, int)]}


def test_saturated_mlp_is_flagged_and_scored(sharp_mlp):
    pool, out, labels = sharp_mlp["pool"], sharp_mlp["out"], sharp_mlp["labels"]
    assert np.mean(pool.audited[0].probabilities.max(axis=1) == 1.0) > 0.5
    with pytest.warns(GaussianFitWarning, match="saturated"):
        scores = LiRAAttack().fit(pool).score(outputs=out)
    assert np.all(np.isfinite(scores))
    pooled = quiet(LiRAAttack(fix_variance=True).fit(pool).score, outputs=out)
    # "auto" keeps the pooled variance for a network's records (the paper's choice with
    # few models) instead of handing noisy per-record variances to every saturated one.
    assert tpr1(labels, scores) >= tpr1(labels, pooled)
    assert tpr1(labels, scores) > tpr1(labels, LossAttack().score(outputs=out)) + 0.03


def test_default_clipping_keeps_sharp_confidences_apart(sharp_mlp):
    # Carlini et al.'s code clips at 1e-45 (|statistic| <= 103.6): on this network that
    # ties most records at the bound and loses members at low FPR.
    pool, out, labels = sharp_mlp["pool"], sharp_mlp["out"], sharp_mlp["labels"]
    default = quiet(LiRAAttack().fit(pool).score, outputs=out)
    coarse = quiet(LiRAAttack(eps=1e-45).fit(pool).score, outputs=out)
    assert tpr1(labels, default) > tpr1(labels, coarse)


# --------------------------------------------------------------------------- the core


def _regular_plus_one_saturated():
    rng = np.random.default_rng(0)
    ref = rng.normal(0.0, 1.0, size=(8, 40))
    ref[:3, 0] = saturation_bound(TINY)  # record 0: exactly 1 on three models, not others
    mask = np.zeros((8, 40), dtype=bool)
    return ref, mask


def test_auto_keeps_outliers_out_of_the_pooled_variance():
    ref, mask = _regular_plus_one_saturated()
    fits = quiet(fit_lira_gaussians, ref, mask, fix_variance="auto", online=False)
    own = ref[:, 1:].var(axis=0, ddof=1)
    np.testing.assert_allclose(fits.sigma_out[1:, 0] ** 2, own.mean(), rtol=1e-12)
    np.testing.assert_allclose(fits.sigma_out[0, 0] ** 2, ref[:, 0].var(ddof=1), rtol=1e-12)
    pooled = quiet(fit_lira_gaussians, ref, mask, fix_variance=True, online=False)
    assert pooled.sigma_out[1, 0] > 50 * fits.sigma_out[1, 0]


def test_saturation_and_domination_warnings():
    ref, mask = _regular_plus_one_saturated()
    with pytest.warns(GaussianFitWarning, match="1 of 40 records"):
        fit_lira_gaussians(ref, mask, online=False, fix_variance="auto",
                           saturation=saturation_bound(TINY))
    with pytest.warns(GaussianFitWarning, match="hold 100% of the pooled OUT variance"):
        lira_scores(ref[0], ref, mask, online=False, fix_variance=True)


def test_auto_uses_per_record_variances_from_64_models():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(64, 30))
    mask = rng.random((64, 30)) < 0.5
    phi = rng.normal(size=30)
    np.testing.assert_array_equal(lira_scores(phi, ref, mask, fix_variance="auto"),
                                  lira_scores(phi, ref, mask, fix_variance=False))


def test_saturation_bound_matches_the_statistic():
    assert math.isclose(saturation_bound(1e-45), -math.log(1e-45), rel_tol=1e-12)
    top = logit_confidence([[1.0, 0.0], [0.0, 1.0]], [0, 0])
    np.testing.assert_allclose(top, [saturation_bound(TINY), -saturation_bound(TINY)])


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"fix_variance": "sometimes"}, "fix_variance"),
    ({"saturation": -1.0}, "saturation"),
])
def test_core_parameters_are_checked(kwargs, param):
    with pytest.raises(ValueError, match=f"'{param}' parameter of lira_scores"):
        lira_scores([0.0], [[0.0], [1.0]], [[True], [False]], **kwargs)


@pytest.mark.parametrize(("eps", "error"), [(0.0, ValueError), (1.5, ValueError),
                                            ("tiny", TypeError)])
def test_attack_eps_is_checked(forest, eps, error):
    with pytest.raises(error, match=r"'eps' parameter of LiRAAttack must"):
        LiRAAttack(eps=eps).fit(forest["pool"])


# --------------------------------------------------------------------------- a regressor


def test_lira_on_a_regressor_says_which_attacks_work():
    X, y = load_diabetes(return_X_y=True)
    pool = quiet(collect_reference_outputs, Ridge(), X[:100], y[:100], n_models=2,
                 random_state=0, n_jobs=1)
    for attack in (LiRAAttack(), LiRAAttack(online=False)):
        with pytest.raises(ValueError,
                           match=r"regression target: gaussian-threshold, loss, quantile\)"):
            attack.fit(pool)
