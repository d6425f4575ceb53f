"""The quantile-regression screen (Bertran et al., NeurIPS 2023): references, calibration,
end to end on scikit-learn and torch targets, the function-level API, bad input."""

import numpy as np
import pytest
from sklearn.model_selection import KFold
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from privaudit.attacks import get_attack, get_tags
from privaudit.attacks.membership import QuantileAttack, fit_quantile_model, quantile_scores
from privaudit.attacks.membership._quantile import (
    LARGE_POPULATION,
    record_features,
    target_statistic,
)
from privaudit.attacks.membership._trained import derive_seeds
from privaudit.exceptions import DegenerateInputWarning, NotFittedError
from privaudit.metrics import roc_auc
from privaudit.targets import LabelOnlyTarget, SklearnTarget


# --- slow, obvious references beside the fast path --------------------------------------
def _conformal_by_sorting(margins, alpha):
    """The ceil((n + 1)(1 - alpha))-th smallest margin, by sorting a list."""
    ordered = sorted(margins)
    rank = int(np.ceil((len(ordered) + 1) * (1 - alpha)))
    return ordered[rank - 1] if rank <= len(ordered) else float("inf")


def _folds_by_hand(s, seed, n_folds=5):
    """The folds: each record is predicted by the model fitted on the other folds."""
    seeds = derive_seeds(seed, 2 * n_folds + 3, func="t")
    folds = KFold(n_folds, shuffle=True, random_state=int(seeds[0]))
    return list(folds.split(np.zeros((len(s), 1))))


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.3])
@pytest.mark.parametrize("seed", [0, 1])
def test_pinball_with_a_constant_feature_averages_the_folds_empirical_quantiles(alpha, seed):
    s = np.random.default_rng(seed).normal(size=237)
    x = np.zeros((237, 1))
    model = fit_quantile_model(x, s, alpha=alpha, method="pinball", max_iter=5,
                               random_state=seed)
    q = -model.margin(x[:1], np.zeros(1))[0]  # margin = s - q(x)
    low, high = [], []
    for fit_rows, _ in _folds_by_hand(s, seed):  # each fold model: its (1 - alpha) order stat
        ordered = sorted(s[fit_rows].tolist())
        k = int(np.ceil((1 - alpha) * len(ordered))) - 1
        low.append(ordered[k - 1])
        high.append(ordered[min(k + 1, len(ordered) - 1)])
    assert sum(low) / len(low) <= q <= sum(high) / len(high)
    assert abs(sum(v > q for v in s.tolist()) - alpha * len(s)) <= 2


@pytest.mark.parametrize("alpha", [0.01, 0.2])
def test_gaussian_with_a_constant_feature_is_standardised_by_out_of_fold_sd(alpha):
    s = np.random.default_rng(3).gamma(2.0, size=150)
    x = np.ones((150, 2))
    model = fit_quantile_model(x, s, alpha=alpha, max_iter=5, random_state=7)
    folds = _folds_by_hand(s, 7)
    held_mean, held_var = np.empty(150), np.empty(150)
    for fit_rows, held_rows in folds:
        held_mean[held_rows] = sum(s[fit_rows].tolist()) / len(fit_rows)
    squares = [(v - m) ** 2 for v, m in zip(s, held_mean, strict=True)]
    for fit_rows, held_rows in folds:
        held_var[held_rows] = sum(squares[i] for i in fit_rows) / len(fit_rows)
    np.testing.assert_allclose(model.margin(x, s), (s - s.mean()) / np.sqrt(np.mean(squares)),
                               rtol=1e-9)
    expected = _conformal_by_sorting(((s - held_mean) / np.sqrt(held_var)).tolist(), alpha)
    assert model.threshold == pytest.approx(expected, rel=1e-9)
    assert model.threshold_at(0.001) == float("inf")  # 150 records cannot certify 0.1%


@pytest.mark.parametrize(("schedule", "n_folds", "rate"), [
    ({}, 5, 0.1), ({"n_folds": 3, "learning_rate": 0.2}, 3, 0.2),
    ({"n_folds": 7}, 7, 0.1)])
def test_new_records_get_the_average_of_the_fold_models_fitted_by_hand(schedule, n_folds,
                                                                        rate):
    from sklearn.ensemble import HistGradientBoostingRegressor

    x, s, _ = _heteroscedastic(400, 4)
    fresh_x, fresh_s, _ = _heteroscedastic(50, 5)
    model = fit_quantile_model(x[:300], s[:300], max_iter=10, random_state=2, **schedule)
    assert (model.n_folds, model.learning_rate) == (n_folds, rate)
    seeds = derive_seeds(2, 2 * n_folds + 3, func="t")

    def fold_model(loss, k, fit_rows, target):
        return HistGradientBoostingRegressor(loss=loss, max_iter=10, early_stopping=False,
                                             learning_rate=rate, random_state=int(seeds[k])
                                             ).fit(x[:300][fit_rows], target[fit_rows])

    folds = _folds_by_hand(s[:300], 2, n_folds)
    held_mean = np.empty(300)
    means, variances = [], []
    for k, (fit_rows, held_rows) in enumerate(folds, start=1):
        fitted = fold_model("squared_error", k, fit_rows, s[:300])
        held_mean[held_rows] = fitted.predict(x[:300][held_rows])
        means.append(fitted.predict(fresh_x).tolist())
    for k, (fit_rows, _) in enumerate(folds, start=n_folds + 2):
        fitted = fold_model("poisson", k, fit_rows, (s[:300] - held_mean) ** 2)
        variances.append(fitted.predict(fresh_x).tolist())
    mean = [sum(col) / n_folds for col in zip(*means, strict=True)]
    var = [max(sum(col) / n_folds, model.floor) for col in zip(*variances, strict=True)]
    by_hand = [(v - m) / np.sqrt(w) for v, m, w in zip(fresh_s, mean, var, strict=True)]
    np.testing.assert_allclose(model.margin(fresh_x, fresh_s), by_hand, rtol=1e-9)


def _fences_by_hand(values):
    """Tukey's far-out fences from the quartiles (``statistics``' inclusive method)."""
    import statistics

    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1 - 3 * (q3 - q1), q3 + 3 * (q3 - q1)


@pytest.mark.parametrize("method", ["gaussian", "pinball"])
def test_regressors_fit_the_statistic_clipped_at_tukeys_far_out_fences(method):
    x, s, _ = _heteroscedastic(600, 8)
    s[:6], s[6:9] = -1e3, 80.0  # confidently wrong answers, and a few far above
    low, high = _fences_by_hand(s.tolist())
    clipped = np.array([min(max(v, low), high) for v in s.tolist()])
    assert clipped[0] == low and clipped[6] == high and np.all(clipped[:9] != s[:9])
    fresh_x, fresh_s, _ = _heteroscedastic(50, 9)
    raw = fit_quantile_model(x, s, method=method, max_iter=20, random_state=3)
    by_hand = fit_quantile_model(x, clipped, method=method, max_iter=20, random_state=3)
    np.testing.assert_allclose(raw.margin(fresh_x, fresh_s), by_hand.margin(fresh_x, fresh_s),
                               rtol=1e-12)
    # The threshold reads the raw margins: the planted records keep their own.
    assert np.sum(raw.calibration < by_hand.calibration.min()) >= 6


def test_a_few_confidently_wrong_population_records_do_not_blind_the_screen():
    x, s, _ = _heteroscedastic(6000, 10)
    members = s[3000:4000] + 3.0  # above the non-members' quantile
    fresh = s[4000:]
    polluted = s[:3000].copy()
    polluted[:30] = -1e4  # 1% confidently wrong answers
    tprs = []
    for population in (s[:3000], polluted):
        model = fit_quantile_model(x[:3000], population, alpha=0.05, random_state=0)
        called = model.margin(x[3000:4000], members) > model.threshold
        assert np.mean(model.margin(x[4000:], fresh) > model.threshold) <= 0.07
        tprs.append(called.mean())
    assert tprs[1] >= tprs[0] - 0.05 and tprs[0] > 0.5, tprs


# --- calibration: on fresh non-members the FPR is close to alpha -------------------------
def _heteroscedastic(n, seed):
    """Scores whose mean and spread both depend on the record: one global threshold fails."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 2))
    sd = np.where(x[:, 1] > 0.5, 3.0, 0.3)
    return x, 4 * x[:, 0] + sd * rng.normal(size=n), x[:, 1] > 0.5


@pytest.mark.parametrize(("method", "max_iter", "n"), [
    ("gaussian", 100, 1500), ("pinball", 30, 1500),
    ("gaussian", 50, LARGE_POPULATION)])  # "auto": 3 folds, step 0.2
def test_fpr_on_fresh_non_members_is_close_to_alpha(method, max_iter, n):
    x, s, noisy = _heteroscedastic(n + 3000, 0)
    model = fit_quantile_model(x[:n], s[:n], alpha=0.05, method=method,
                               max_iter=max_iter, random_state=0)
    called = model.margin(x[n:], s[n:]) > model.threshold
    assert 0.035 <= called.mean() <= 0.07, (method, called.mean())  # conformal: marginal
    if method == "gaussian":  # the conditional model: about alpha in each region too
        for region in (noisy[n:], ~noisy[n:]):
            assert 0.02 <= called[region].mean() <= 0.1, called[region].mean()
    # One global quantile is miscalibrated per region (what conditioning buys).
    global_q = np.quantile(s[:n], 0.95)
    assert (s[n:][~noisy[n:]] > global_q).mean() < 0.02


@pytest.mark.parametrize("method", ["gaussian", "pinball"])
def test_every_level_is_read_from_one_model(method):
    x, s, _ = _heteroscedastic(6000, 2)
    model = fit_quantile_model(x[:2000], s[:2000], alpha=0.05, method=method, max_iter=30,
                               random_state=0)
    margin = model.margin(x[2000:], s[2000:])
    for alpha in (0.01, 0.1, 0.3):
        fpr = np.mean(margin > model.threshold_at(alpha))
        assert abs(fpr - alpha) <= 0.35 * alpha + 0.005, (method, alpha, fpr)


# --- end to end: finds members of an overfit model, not of a model without them ----------
@pytest.fixture(scope="module")
def noisy_labels():
    from sklearn.datasets import make_classification

    X, y = make_classification(1200, n_features=6, n_informative=4, flip_y=0.3,
                               random_state=0)
    return X, y


@pytest.mark.parametrize("method", ["gaussian", "pinball"])
def test_finds_members_of_an_overfit_model_and_not_of_one_without_them(noisy_labels, method):
    X, y = noisy_labels
    members, non_members, pop = np.arange(300), np.arange(300, 600), np.arange(600, 1200)
    audited, labels = np.r_[members, non_members], np.r_[np.ones(300), np.zeros(300)]
    for trained_on, low, high in ((members, 0.6, 1.0), (np.arange(900, 1200), 0.4, 0.6)):
        tree = DecisionTreeClassifier(min_samples_leaf=2, random_state=0)
        target = SklearnTarget(tree.fit(X[trained_on], y[trained_on]))
        pop_rows = np.setdiff1d(pop, trained_on)
        attack = QuantileAttack(method=method, max_iter=30, random_state=0)
        result = attack.fit(target, X[pop_rows], y[pop_rows]).run(
            target, X[audited], y[audited], labels.astype(int))
        auc = roc_auc(result.labels, result.scores)
        assert low <= auc <= high, (method, auc)
        assert result.attack == "quantile" and result.raw_statistic_name == "logit_confidence"
        assert set(np.unique(result.predictions)) <= {0, 1}
        assert (result.extra["n_folds"], result.extra["learning_rate"]) == (5, 0.1)


def test_regressor_members_found_through_their_negated_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=900)
    target = SklearnTarget(DecisionTreeRegressor(random_state=0).fit(X[:300], y[:300]))
    attack = QuantileAttack(max_iter=30, random_state=0).fit(target, X[600:], y[600:])
    labels = np.r_[np.ones(300), np.zeros(300)].astype(int)
    result = attack.run(target, X[:600], y[:600], labels)
    assert result.raw_statistic_name == "negated_squared_error"
    assert roc_auc(labels, result.scores) > 0.75


def test_torch_classifier_scores_equal_the_function_level_api():
    torch = pytest.importorskip("torch")
    from privaudit.targets import TorchTarget

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                              torch.nn.Linear(8, 3)).eval()
    target = TorchTarget(net)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(160, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=160)
    scores = QuantileAttack(max_iter=10, random_state=4).fit(target, X[:100], y[:100]).score(
        target, X[100:], y[100:])
    pop, aud = target.query(X[:100], y[:100]), target.query(X[100:], y[100:])
    by_hand = quantile_scores(record_features(X[:100], pop), target_statistic(pop)[0],
                              record_features(X[100:], aud), target_statistic(aud)[0],
                              max_iter=10, random_state=4)
    np.testing.assert_array_equal(scores, by_hand)


def test_llm_statistic_per_text_with_text_features():
    # What score_texts gives per text (a loss) with text features (length, compressibility):
    # members' losses are lowered by memorisation, and the loss depends on the length.
    rng = np.random.default_rng(5)
    n = 1500
    length = rng.integers(10, 400, size=n).astype(float)
    zlib_ratio = rng.uniform(0.3, 0.9, size=n)
    loss = 1.5 + 2.0 * zlib_ratio - 0.002 * length + 0.4 * rng.normal(size=n)
    member = np.arange(n) < 250
    loss[member] -= 0.8
    features = np.column_stack([length, zlib_ratio])
    pop, aud = np.arange(500, n), np.arange(500)
    scores = quantile_scores(features[pop], -loss[pop], features[aud], -loss[aud],
                             max_iter=30, random_state=0)
    assert roc_auc(member[aud].astype(int), scores) > 0.8
    assert roc_auc(member[aud].astype(int), -loss[aud]) < roc_auc(member[aud].astype(int),
                                                                  scores)


# --- the estimator contract ----------------------------------------------------------------
def test_registered_with_population_tag_and_no_reference_models():
    tags = get_tags("quantile")
    assert tags.needs_population and not tags.needs_reference_models
    assert set(tags.tasks) == {"classification", "regression"}
    assert isinstance(get_attack("quantile", alpha=0.05), QuantileAttack)


def test_same_seed_same_scores_other_seed_other_folds(noisy_labels):
    X, y = noisy_labels
    target = SklearnTarget(DecisionTreeClassifier(random_state=0).fit(X[:300], y[:300]))

    def scores(seed):
        attack = QuantileAttack(max_iter=10, random_state=seed).fit(target, X[600:], y[600:])
        return attack.score(target, X[:600], y[:600])

    np.testing.assert_array_equal(scores(3), scores(3))
    assert not np.array_equal(scores(3), scores(4))


def test_constant_statistic_gives_nan_and_a_warning():
    x = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.warns(DegenerateInputWarning, match="same on every population record"):
        out = quantile_scores(x, np.ones(40), x[:5], np.arange(5.0))
    assert out.shape == (5,) and np.all(np.isnan(out))


@pytest.mark.parametrize("n", [LARGE_POPULATION - 1, LARGE_POPULATION])
def test_auto_schedule_switches_to_three_folds_and_larger_steps_at_ten_thousand(n):
    """And an explicit ``n_folds`` or ``learning_rate`` overrides its part."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 2))
    model = fit_quantile_model(x, x[:, 0] + rng.normal(size=n), max_iter=5, random_state=0)
    large = n >= LARGE_POPULATION
    assert (model.n_folds, model.learning_rate) == ((3, 0.3) if large else (5, 0.1))
    assert len(model.center.members) == len(model.spread.members) == model.n_folds
    regressors = (*model.center.members, *model.spread.members)
    assert {m.learning_rate for m in regressors} == {model.learning_rate}
    assert {m.max_leaf_nodes for m in model.center.members} == {63 if large else 31}
    assert {m.max_iter for m in model.center.members} == {5}
    assert {m.max_iter for m in model.spread.members} == {2 if large else 5}  # 40% of 5
    mine = fit_quantile_model(x, x[:, 0] + rng.normal(size=n), max_iter=5, n_folds=4,
                              learning_rate=0.05, random_state=0)
    assert (mine.n_folds, mine.learning_rate, len(mine.center.members)) == (4, 0.05, 4)


@pytest.mark.parametrize(("params", "match"), [
    ({"n_folds": 1}, "'n_folds' parameter of QuantileAttack.*integer >= 2"),
    ({"n_folds": "three"}, "'n_folds' parameter of QuantileAttack"),
    ({"n_folds": 3.0}, "'n_folds' parameter of QuantileAttack"),
    ({"learning_rate": 0.0}, "'learning_rate' parameter of QuantileAttack"),
    ({"learning_rate": 1.5}, "'learning_rate' parameter of QuantileAttack"),
    ({"learning_rate": "fast"}, "'learning_rate' parameter of QuantileAttack"),
    ({"alpha": 0.0}, "'alpha' parameter of QuantileAttack"),
    ({"alpha": 0.7}, "'alpha' parameter of QuantileAttack"),
    ({"method": "normal"}, "'method' parameter of QuantileAttack"),
    ({"max_iter": 0}, "'max_iter' parameter of QuantileAttack"),
    ({"random_state": -1}, "'random_state' parameter of QuantileAttack"),
])
def test_bad_parameters_are_named(params, match):
    with pytest.raises((TypeError, ValueError), match=match):
        QuantileAttack(**params).check_params()


def test_bad_input_is_named(noisy_labels):
    X, y = noisy_labels
    target = SklearnTarget(DecisionTreeClassifier(random_state=0).fit(X[:300], y[:300]))
    with pytest.raises(NotFittedError, match="not fitted"):
        QuantileAttack().score(target, X[:10], y[:10])
    attack = QuantileAttack(max_iter=5, random_state=0).fit(target, X[600:], y[600:])
    with pytest.raises(TypeError, match=r"'X' parameter of QuantileAttack\.score"):
        attack.score(outputs=target.query(X[:10], y[:10]))
    with pytest.raises(ValueError, match=r"'X' parameter of QuantileAttack\.score"):
        attack.score(X=X[:10, :4], outputs=target.query(X[:10], y[:10]))
    with pytest.raises(ValueError, match="at least 10 population records"):
        QuantileAttack().fit(target, X[600:605], y[600:605])
    with pytest.raises(ValueError, match="'statistic' parameter of fit_quantile_model"):
        fit_quantile_model(np.zeros((20, 1)), np.r_[np.nan, np.ones(19)])
    blind = LabelOnlyTarget(target.estimator.predict, classes=target.estimator.classes_)
    with pytest.raises(ValueError, match="revealing class probabilities"):
        attack.score(blind, X[:10], y[:10])


# --- a constant statistic: no information, never a crash (review finding 3) ---------------
def _constant_target_data():
    """A model that answers the same for every record, and tiny audited/population sets."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    const = DecisionTreeClassifier(max_depth=1).fit(np.zeros((4, 3)), [0, 0, 1, 1])
    return SklearnTarget(const), X, y, np.r_[np.ones(15), np.zeros(15)].astype(int)


def test_constant_statistic_run_gives_a_result_with_no_information():
    target, X, y, labels = _constant_target_data()
    with pytest.warns(DegenerateInputWarning, match=r"QuantileAttack\.fit: .*same on every"):
        attack = QuantileAttack(max_iter=5, random_state=0).fit(target, X[30:], y[30:])
    assert attack.model_ is None
    with pytest.warns(DegenerateInputWarning, match=r"QuantileAttack\.score: .*NaN"):
        assert np.all(np.isnan(attack.score(target, X[:5], y[:5])))
    with pytest.warns(DegenerateInputWarning, match=r"QuantileAttack\.run: .*no information"):
        result = attack.run(target, X[:30], y[:30], labels)
    assert np.array_equal(result.scores, np.zeros(30)) and result.predictions is None
    assert roc_auc(result.labels, result.scores) == 0.5
    assert "same on every population record" in result.extra["degenerate"]
    assert "threshold" not in result.extra and result.raw_statistic_name == "logit_confidence"


def test_audit_with_a_constant_model_keeps_every_attack_and_builds_its_report(tmp_path):
    import privaudit
    from privaudit.exceptions import BaselineWarning
    from privaudit.report import build_report

    target, X, y, labels = _constant_target_data()
    with pytest.warns(DegenerateInputWarning), pytest.warns(BaselineWarning):
        report = privaudit.audit_model(target.estimator, X[:30], y[:30], labels,
                                       population=(X[30:], y[30:]),
                                       attacks=["loss", "quantile"], random_state=0,
                                       attack_params={"quantile": {"max_iter": 5}},
                                       slices=False)
    assert [r.attack for r in report.results] == ["loss", "quantile"]
    assert "degenerate" in report.results[1].extra
    page = build_report(report.results, tmp_path / "report", n_bootstrap=5)
    assert page.is_file()


# --- errors name the user's call and parameter (review finding 6) -------------------------
@pytest.fixture(scope="module")
def small_target():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    from sklearn.linear_model import LogisticRegression

    return SklearnTarget(LogisticRegression().fit(X, y)), X, y  # confidences vary by record


@pytest.mark.parametrize(("rows", "match"), [
    (slice(0, 0), r"'X' parameter of QuantileAttack\.fit must be at least 10 population "
                  r"records.*Got <0 records>"),
    (slice(0, 6), r"'X' parameter of QuantileAttack\.fit must be at least 10 population "
                  r"records.*Got <6 records>"),
])
def test_too_few_population_records_name_x_of_fit(small_target, rows, match):
    target, X, y = small_target
    with pytest.raises(ValueError, match=match):
        QuantileAttack().fit(target, X[rows], y[rows])


def test_fit_quantile_model_on_no_records_names_its_own_parameter():
    with pytest.raises(ValueError, match="'statistic' parameter of fit_quantile_model"):
        fit_quantile_model(np.empty(0), np.empty(0))


@pytest.mark.parametrize("call", ["fit", "score", "run"])
def test_non_finite_and_non_numeric_records_name_x_of_the_call(small_target, call):
    target, X, y = small_target
    attack = QuantileAttack(max_iter=5, random_state=0).fit(target, X[20:], y[20:])
    out = target.query(X[:20], y[:20])
    extra = {"labels": np.r_[np.ones(10), np.zeros(10)].astype(int)} if call == "run" else {}
    with_nan = X[:20].copy()
    with_nan[3, 1] = np.nan
    words = np.where(X[:20] > 0, "a", "b")
    with pytest.raises(ValueError, match=rf"'X' parameter of QuantileAttack\.{call} must "
                                         r"be finite records.*<1 non-finite values>"):
        getattr(attack, call)(X=with_nan, outputs=out, **extra)
    with pytest.raises(TypeError, match=rf"'X' parameter of QuantileAttack\.{call} must "
                                        r"be numeric records, or a DataFrame"):
        getattr(attack, call)(X=words, outputs=out, **extra)


# --- a DataFrame's non-numeric columns are coded, the same at fit and at score ------------
def _frame(n, seed):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"num": rng.normal(size=n),
                          "colour": rng.choice(["red", "green", "blue"], size=n),
                          "flag": rng.integers(0, 2, size=n).astype(bool)})
    y = (frame["num"] + (frame["colour"] == "red") > 0.5).astype(int).to_numpy()
    return frame, y


def _coded_by_hand(frame, seen):
    """Colour as its rank among the sorted colours seen at fit; -1 when unseen."""
    order = sorted(seen)
    colour = [order.index(c) if c in order else -1 for c in frame["colour"]]
    return np.column_stack([frame["num"], colour, frame["flag"]]).astype(float)


@pytest.fixture(scope="module")
def pipeline_on_a_frame():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame, y = _frame(90, 2)
    encode = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["colour"]),
                                     remainder="passthrough")
    model = make_pipeline(encode, LogisticRegression())  # confidences vary by record
    return SklearnTarget(model.fit(frame[:30], y[:30])), frame, y


def test_a_pipeline_on_a_frame_with_categorical_columns_is_screened(pipeline_on_a_frame):
    target, frame, y = pipeline_on_a_frame
    attack = QuantileAttack(max_iter=5, random_state=0).fit(target, frame[60:], y[60:])
    assert list(attack.categories_) == ["colour"]
    assert attack.categories_["colour"].tolist() == ["blue", "green", "red"]
    result = attack.run(target, frame[:60], y[:60], np.r_[np.ones(30), np.zeros(30)].astype(int))
    assert result.scores.shape == (60,) and np.all(np.isfinite(result.scores))


def test_frame_codes_agree_between_fit_and_score_and_with_codes_by_hand(pipeline_on_a_frame):
    target, frame, y = pipeline_on_a_frame
    pop, audited = frame[60:], frame[:20].copy()
    audited.loc[audited.index[:3], "colour"] = "purple"  # unseen at fit: coded -1
    pop_out, aud_out = target.query(pop, y[60:]), target.query(audited, y[:20])
    attack = QuantileAttack(max_iter=5, random_state=0).fit(X=pop, outputs=pop_out)
    scores = attack.score(X=audited, outputs=aud_out)
    assert attack.model_ is not None and np.all(np.isfinite(scores))
    seen = set(pop["colour"])
    by_hand = quantile_scores(record_features(_coded_by_hand(pop, seen), pop_out),
                              target_statistic(pop_out)[0],
                              record_features(_coded_by_hand(audited, seen), aud_out),
                              target_statistic(aud_out)[0], max_iter=5, random_state=0)
    np.testing.assert_array_equal(scores, by_hand)
    # A record's code does not depend on the other records scored with it.
    greens = np.flatnonzero(audited["colour"].to_numpy() == "green")
    alone = attack.score(X=audited.iloc[greens], outputs=target.query(audited.iloc[greens],
                                                                      y[:20][greens]))
    np.testing.assert_array_equal(alone, scores[greens])


def test_a_frame_at_score_must_have_the_coded_columns(pipeline_on_a_frame):
    target, frame, y = pipeline_on_a_frame
    attack = QuantileAttack(max_iter=5, random_state=0).fit(target, frame[60:], y[60:])
    out = target.query(frame[:10], y[:10])
    with pytest.raises(ValueError, match=r"'X' parameter of QuantileAttack\.score .*column "
                                         r"'colour'"):
        attack.score(X=frame[:10].drop(columns="colour"), outputs=out)
    with pytest.raises(TypeError, match=r"'X' parameter of QuantileAttack\.score must be a "
                                        r"DataFrame, as at fit"):
        attack.score(X=frame[:10].to_numpy(), outputs=out)
