import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf
from scipy.stats import norm
from sklearn.linear_model import LinearRegression, LogisticRegression

from privaudit.attacks.membership import (
    GaussianThresholdAttack,
    gaussian_advantage,
    gaussian_threshold,
)
from privaudit.exceptions import DegenerateInputWarning, NotFittedError
from privaudit.metrics import roc_auc
from privaudit.targets import ModelOutputs


def theorem3_as_stated(sigma_s, sigma_d):
    """Yeom et al.'s Theorem 3, written as the source states it (r = sigma_D / sigma_S)."""
    r = sigma_d / sigma_s
    k = math.sqrt(math.log(r) / (r * r - 1))
    return math.erf(r * k) - math.erf(k)


def gaussian_outputs(rng, n_members, n_non_members, sigma_s, sigma_d):
    """Regression outputs whose errors are N(0, sigma_S^2) / N(0, sigma_D^2)."""
    err = np.r_[rng.normal(0, sigma_s, n_members), rng.normal(0, sigma_d, n_non_members)]
    y = rng.normal(size=err.size) * 10
    labels = np.r_[np.ones(n_members, dtype=int), np.zeros(n_non_members, dtype=int)]
    return ModelOutputs.from_regression(y, y - err), labels


def test_hand_computed_value():
    # sigma_S = 1, sigma_D = 2: t = 2 sqrt(2 ln 2 / 3) = 1.35956,
    # Adv = erf(t / sqrt 2) - erf(t / (2 sqrt 2)) = 0.82620 - 0.50353 = 0.32267.
    t = gaussian_threshold(1.0, 2.0)
    assert t == pytest.approx(2 * math.sqrt(2 * math.log(2) / 3))
    assert t == pytest.approx(1.3595559868917)
    assert gaussian_advantage(1.0, 2.0) == pytest.approx(0.3226745688347688, abs=1e-12)
    assert gaussian_advantage(1.0, 2.0) == pytest.approx(
        erf(t / math.sqrt(2)) - erf(t / (2 * math.sqrt(2)))
    )


@settings(max_examples=50, deadline=None)
@given(s=st.floats(0.01, 100.0), ratio=st.floats(1.001, 1000.0))
def test_closed_form_matches_theorem_3_and_densities_cross_at_t(s, ratio):
    d = s * ratio
    adv = gaussian_advantage(s, d)
    assert adv == pytest.approx(theorem3_as_stated(s, d), abs=1e-9)
    t = gaussian_threshold(s, d)
    assert norm.pdf(t, scale=s) == pytest.approx(norm.pdf(t, scale=d), rel=1e-6)
    # The adversary's advantage: P(|e| < t | member) - P(|e| < t | non-member).
    direct = (2 * norm.cdf(t / s) - 1) - (2 * norm.cdf(t / d) - 1)
    assert adv == pytest.approx(direct, abs=1e-9)
    # Symmetric in the two sigmas (the adversary flips its decision region).
    assert gaussian_advantage(d, s) == pytest.approx(adv, abs=1e-12)
    assert 0 < adv < 1


def test_advantage_limits_and_monotonicity():
    ratios = [1.0, 1.01, 1.5, 2, 5, 20, 1e4]
    advs = [gaussian_advantage(1.0, r) for r in ratios]
    assert advs[0] == 0.0
    assert all(b > a for a, b in itertools.pairwise(advs))
    assert advs[-1] > 0.99
    assert math.isnan(gaussian_threshold(2.0, 2.0))


@pytest.mark.parametrize(("sigma_s", "sigma_d"), [(1.0, 2.0), (0.5, 3.0), (2.0, 1.2)])
def test_theoretical_advantage_matches_monte_carlo(sigma_s, sigma_d):
    rng = np.random.default_rng(42)
    n = 200_000
    outputs, labels = gaussian_outputs(rng, n, n, sigma_s, sigma_d)
    attack = GaussianThresholdAttack(sigma_member=sigma_s, sigma_non_member=sigma_d)
    result = attack.run(outputs=outputs, labels=labels)
    theory = result.extra["theoretical_advantage"]
    assert theory == pytest.approx(gaussian_advantage(sigma_s, sigma_d))
    # Standard error of TPR - FPR is below sqrt(0.5/n) ~ 0.0016: 0.01 is > 6 SE.
    assert result.extra["empirical_advantage"] == pytest.approx(theory, abs=0.01)
    # Fitting the sigmas from the same data gives the same picture.
    fitted = GaussianThresholdAttack().fit(outputs=outputs, labels=labels)
    assert fitted.sigma_member_ == pytest.approx(sigma_s, rel=0.01)
    assert fitted.sigma_non_member_ == pytest.approx(sigma_d, rel=0.01)
    r2 = fitted.run(outputs=outputs, labels=labels)
    assert r2.extra["empirical_advantage"] == pytest.approx(theory, abs=0.01)


def test_score_is_the_log_likelihood_ratio_and_predictions_use_t():
    rng = np.random.default_rng(0)
    outputs, labels = gaussian_outputs(rng, 300, 300, 1.0, 3.0)
    attack = GaussianThresholdAttack().fit(outputs=outputs, labels=labels)
    s, d = attack.sigma_member_, attack.sigma_non_member_
    err = outputs.y - outputs.predictions
    expected = norm.logpdf(err, scale=s) - norm.logpdf(err, scale=d)
    result = attack.run(outputs=outputs, labels=labels)
    np.testing.assert_allclose(result.scores, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(result.predictions, np.abs(err) < attack.threshold_)
    np.testing.assert_allclose(result.raw_statistic, np.abs(err))
    assert result.raw_statistic_name == "absolute_error"
    # Monotone in -|e| when sigma_S < sigma_D: same AUC as the loss attack.
    assert roc_auc(labels, result.scores) == pytest.approx(roc_auc(labels, -outputs.loss))
    assert result.extra["threshold"] == pytest.approx(gaussian_threshold(s, d))
    assert result.extra["sigma_ratio"] == pytest.approx(d / s)


def test_fit_from_a_fitted_regressor():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = X @ np.array([1.0, 2.0, -1.0]) + rng.normal(size=200)
    model = LinearRegression().fit(X[:100], y[:100])
    labels = np.r_[np.ones(100, dtype=int), np.zeros(100, dtype=int)]
    attack = GaussianThresholdAttack()
    assert attack.fit(model, X, y, labels) is attack
    res = model.predict(X) - y
    assert attack.sigma_member_ == pytest.approx(np.sqrt(np.mean(res[:100] ** 2)))
    result = attack.run(model, X, y, labels, dataset="toy")
    assert result.attack == "gaussian-threshold" and result.target == "LinearRegression"


def test_errors_and_degenerate_cases():
    rng = np.random.default_rng(0)
    outputs, labels = gaussian_outputs(rng, 50, 50, 1.0, 2.0)
    with pytest.raises(NotFittedError, match="not fitted"):
        GaussianThresholdAttack().score(outputs=outputs)
    with pytest.raises(NotFittedError):
        GaussianThresholdAttack(sigma_member=1.0).run(outputs=outputs, labels=labels)
    with pytest.raises(ValueError, match=r"'labels' parameter of GaussianThresholdAttack.fit"):
        GaussianThresholdAttack().fit(outputs=outputs)
    with pytest.raises(ValueError, match=r"'labels' parameter of GaussianThresholdAttack.fit"):
        GaussianThresholdAttack().fit(outputs=outputs, labels=np.ones(100, dtype=int))
    with pytest.raises(ValueError, match="'sigma_member' parameter"):
        GaussianThresholdAttack(sigma_member=-1.0, sigma_non_member=1.0).fit()
    with pytest.raises(ValueError, match="'sigma_non_member' parameter of gaussian_advantage"):
        gaussian_advantage(1.0, 0.0)
    # Both sigmas given: fit needs no data; one given, the other is estimated.
    assert GaussianThresholdAttack(sigma_member=1.0, sigma_non_member=2.0).fit() is not None
    half = GaussianThresholdAttack(sigma_member=0.9).fit(outputs=outputs, labels=labels)
    assert half.sigma_member_ == 0.9
    # A classifier is refused, naming the parameter.
    X = rng.normal(size=(20, 2))
    clf = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))
    with pytest.raises(ValueError, match=r"'target' parameter of GaussianThresholdAttack.run "
                                         "must be a regression target"):
        GaussianThresholdAttack(sigma_member=1.0, sigma_non_member=2.0).run(
            clf, X, (X[:, 0] > 0).astype(int), np.ones(20, dtype=int)
        )
    # Equal sigmas: every likelihood ratio is 1; warned, advantage 0.
    equal = GaussianThresholdAttack(sigma_member=1.0, sigma_non_member=1.0)
    with pytest.warns(DegenerateInputWarning):
        result = equal.run(outputs=outputs, labels=labels)
    assert result.extra["theoretical_advantage"] == 0.0
    assert "threshold" not in result.extra


def test_a_regressor_that_interpolates_its_members_is_the_limit_not_an_error():
    """sigma_member = 0 (1-NN, a deep tree): the likelihood ratio's limit, and the audit kept.

    Members at error 0 are called members (the ratio is infinite there), the rest ranked
    by their error's size, as every small sigma_member would rank them; Theorem 3's
    advantage is its limit, 1.
    """
    from sklearn.neighbors import KNeighborsRegressor

    import privaudit

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(120, 4)), rng.normal(size=120)
    labels = np.r_[np.ones(60), np.zeros(60)].astype(int)
    model = KNeighborsRegressor(1).fit(X[:60], y[:60])
    with pytest.warns(DegenerateInputWarning, match="sigma_member = 0"):
        report = privaudit.audit_model(model, X, y, labels, random_state=0)
    by_attack = {r.attack: r for r in report}
    assert set(by_attack) == {"loss", "gaussian-threshold"}
    result = by_attack["gaussian-threshold"]
    assert roc_auc(labels, result.scores) == 1.0
    np.testing.assert_array_equal(result.predictions, labels)
    assert result.theoretical_advantage == 1.0 and result.extra["threshold"] == 0.0
    # every error 0 on both sides (a constant target): no information, equal scores
    constant = ModelOutputs.from_regression(np.full(10, 3.0), np.full(10, 3.0))
    both = np.r_[np.ones(5), np.zeros(5)].astype(int)
    with pytest.warns(DegenerateInputWarning):
        flat = GaussianThresholdAttack().fit(outputs=constant, labels=both).run(
            outputs=constant, labels=both)
    assert np.all(flat.scores == flat.scores[0]) and flat.theoretical_advantage == 0.0
