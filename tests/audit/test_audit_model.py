"""End-to-end tests of privaudit.audit_model on real offline data (sklearn digits)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

import privaudit
from privaudit.metrics import roc_auc
from privaudit.training import ReferenceSpec


@pytest.fixture(scope="module")
def digits_setup():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(X))
    audited, population = perm[:600], perm[600:1200]
    labels = np.zeros(600, dtype=int)
    labels[:300] = 1
    members = audited[:300]
    # Memorises its training set: strong per-record signal at a small size.
    model = MLPClassifier((64,), alpha=0.0, max_iter=300, random_state=0)
    model.fit(X[members], y[members])
    return {
        "X": X[audited], "y": y[audited], "labels": labels, "model": model,
        "population": (X[population], y[population]),
        "recipe": MLPClassifier((64,), alpha=0.0, max_iter=300, random_state=0),
    }


def test_black_box_attacks_are_aligned_with_rows(digits_setup):
    s = digits_setup
    results = privaudit.audit_model(s["model"], s["X"], s["y"], s["labels"],
                                    record_ids=np.arange(600) + 1000, dataset="digits")
    assert [r.attack for r in results] == list(privaudit.audits.DEFAULT_ATTACKS)
    for r in results:
        np.testing.assert_array_equal(r.labels, s["labels"])
        np.testing.assert_array_equal(r.record_ids, np.arange(600) + 1000)
        assert r.dataset == "digits"
        assert r.scores.shape == (600,)
    loss = results[0]
    # LOSS score is minus the per-record cross-entropy of the audited model, row by row.
    proba = s["model"].predict_proba(s["X"])
    expected = np.log(np.clip(proba[np.arange(600), s["y"]], 1e-300, None))
    np.testing.assert_allclose(loss.scores, expected, rtol=1e-6, atol=1e-9)


def test_reference_attacks_beat_chance_and_are_reproducible(digits_setup, tmp_path):
    s = digits_setup
    kwargs = dict(population=s["population"],
                  reference=ReferenceSpec(recipe=s["recipe"], n_models=4),
                  attacks=["loss", "lira-online", "lira-offline", "rmia"],
                  attack_params={"lira-online": {"fix_variance": True},
                                 "lira-offline": {"fix_variance": True}},
                  random_state=3, check_fidelity=False)
    messages: list[str] = []
    first = privaudit.audit_model(s["model"], s["X"], s["y"], s["labels"], n_jobs=1,
                                  results_dir=tmp_path / "res", progress=messages.append,
                                  **kwargs)
    assert [r.attack for r in first] == ["loss", "lira-online", "lira-offline", "rmia"]
    for r in first:
        assert roc_auc(r.labels, r.scores) > 0.55, r.attack
    assert first[1].extra["n_reference_models"] == 4
    assert any("training 4 reference models (online, each on 25% of 1200" in m
               for m in messages)
    # Same seed, two workers: identical numbers.
    second = privaudit.audit_model(s["model"], s["X"], s["y"], s["labels"], n_jobs=2, **kwargs)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
    # A rerun into the same results_dir reuses every finished attack.
    messages.clear()
    third = privaudit.audit_model(s["model"], s["X"], s["y"], s["labels"], n_jobs=1,
                                  results_dir=tmp_path / "res", progress=messages.append,
                                  **kwargs)
    assert sum("reusing" in m for m in messages) == 4
    assert not any("training" in m for m in messages)
    for a, b in zip(first, third, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)


def test_results_dir_is_not_reused_for_other_inputs(digits_setup, tmp_path):
    s = digits_setup
    privaudit.audit_model(s["model"], s["X"], s["y"], s["labels"], attacks=["loss"],
                          results_dir=tmp_path)
    flipped = 1 - s["labels"]
    messages: list[str] = []
    res = privaudit.audit_model(s["model"], s["X"], s["y"], flipped, attacks=["loss"],
                                results_dir=tmp_path, progress=messages.append)
    assert not any("reusing" in m for m in messages)
    np.testing.assert_array_equal(res[0].labels, flipped)


def test_population_overlapping_audited_records_is_refused(digits_setup):
    s = digits_setup
    X_pop = np.vstack([s["population"][0], s["X"][:3]])
    y_pop = np.concatenate([s["population"][1], s["y"][:3]])
    with pytest.raises(ValueError, match=r"'population' parameter of audit_model.*3 audited"):
        privaudit.audit_model(s["model"], s["X"], s["y"], s["labels"], attacks=["rmia"],
                              population=(X_pop, y_pop),
                              reference=ReferenceSpec(recipe=s["recipe"]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labels": np.ones(10)}, r"'labels' parameter of audit_model must be one membership"),
        ({"attacks": ["nope"]}, r"'attacks' parameter of audit_model must be names among"),
        ({"attacks": ["rmia"]}, r"'population' parameter of audit_model must be given for rmia"),
        ({"attacks": ["loss"], "attack_params": {"rmia": {}}}, r"'attack_params'"),
        ({"attacks": ["lira-online"], "reference": ReferenceSpec(mode="offline"),
          "population": "USE"}, r"'reference_mode'"),
        ({"attacks": "loss"}, r"'attacks' parameter"),
    ],
)
def test_bad_input_is_named(digits_setup, kwargs, message):
    s = digits_setup
    args = {"labels": s["labels"]}
    args.update(kwargs)
    if args.get("population") == "USE":
        args["population"] = s["population"]
    labels = args.pop("labels")
    with pytest.raises((ValueError, TypeError), match=message):
        privaudit.audit_model(s["model"], s["X"], s["y"], labels, **args)


def test_non_sklearn_target_needs_a_recipe(digits_setup):
    from privaudit.targets import ModelOutputs

    s = digits_setup
    model = s["model"]

    class Wrapped:
        name = "wrapped"
        task = "classification"
        classes_ = model.classes_
        n_classes = len(model.classes_)
        n_queries = 0

        def query(self, X, y):
            return ModelOutputs.from_probabilities(y, model.predict_proba(X), model.classes_)

    with pytest.raises(ValueError, match=r"'recipe' parameter of audit_model must be given"):
        privaudit.audit_model(Wrapped(), s["X"], s["y"], s["labels"], attacks=["lira-offline"],
                              population=s["population"])


def test_logistic_regression_target_leaks_little(digits_setup):
    # A strongly regularised linear model: the audit must not report a leak that is not there.
    s = digits_setup
    X, y, labels = s["X"], s["y"], s["labels"]
    model = LogisticRegression(C=0.01, max_iter=500).fit(X[labels == 1], y[labels == 1])
    results = privaudit.audit_model(model, X, y, labels, attacks=["loss"])
    assert abs(roc_auc(labels, results[0].scores) - 0.5) < 0.08


def test_label_only_target(digits_setup):
    from privaudit.targets import LabelOnlyTarget

    s = digits_setup
    target = LabelOnlyTarget(s["model"].predict, classes=s["model"].classes_, name="labels")
    with pytest.raises(ValueError, match=r"'attacks' parameter of audit_model.*'confidence'"):
        privaudit.audit_model(target, s["X"], s["y"], s["labels"], attacks=["confidence"])
    assert target.n_queries == 0  # refused before spending any query
    results = privaudit.audit_model(target, s["X"], s["y"], s["labels"],
                                    attacks=["label-only"], random_state=0)
    assert results[0].attack == "label-only"
    assert roc_auc(s["labels"], results[0].scores) > 0.5


def test_torch_module_is_wrapped_and_attacked_white_box():
    import torch  # in the dev extra: a missing torch must fail, not skip

    from privaudit.targets import TorchTarget, as_target

    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    gen = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 10))
    torch.nn.init.normal_(net[0].weight, generator=gen)
    net.eval()
    assert isinstance(as_target(net), TorchTarget)
    labels = np.r_[np.ones(50, int), np.zeros(50, int)]
    results = privaudit.audit_model(net, X[:100], y[:100], labels,
                                    attacks=["loss", "gradient-norm"])
    assert [r.attack for r in results] == ["loss", "gradient-norm"]
    # Untrained weights: nothing was learnt, so neither attack may claim a leak.
    for r in results:
        assert abs(roc_auc(labels, r.scores) - 0.5) < 0.2


def test_class_the_target_never_saw_is_refused(digits_setup):
    s = digits_setup
    y = s["y"].copy()
    y[0] = 11  # a class the target has no probability for
    with pytest.raises(ValueError, match=r"'y' parameter"):
        privaudit.audit_model(s["model"], s["X"], y, s["labels"], attacks=["loss"])


def test_reference_model_missing_a_class_gives_it_probability_zero(digits_setup):
    # Reference models trained without class 9 are legitimate models giving it probability
    # 0: their outputs are spread over every audited class (never a misaligned column),
    # with one warning counting them.
    from privaudit.attacks.membership import collect_reference_outputs
    from privaudit.exceptions import DegenerateInputWarning

    s = digits_setup
    keep = s["population"][1] != 9
    with pytest.warns(DegenerateInputWarning, match=r"2 of the 2 reference models"):
        ref = collect_reference_outputs(
            LogisticRegression(max_iter=200), s["X"], s["y"], mode="offline",
            X_population=s["population"][0][keep], y_population=s["population"][1][keep],
            n_models=2, random_state=0,
        )
    for o in ref.audited:
        assert o.classes.tolist() == list(range(10))
        assert np.all(o.probabilities[:, 9] == 0)
        np.testing.assert_allclose(o.probabilities.sum(axis=1), 1.0)
    nines = s["y"] == 9
    assert np.all(np.isfinite(ref.signal("logit_confidence")))
    assert np.all(ref.signal("cross_entropy")[:, nines] > 30)  # saturated, clipped


def _rare_class_data(rare_label, n_rare):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    y = rng.integers(0, 2, 240)
    y[[0, 1, 60, 61]] = 2 if rare_label == 2 else y[[0, 1, 60, 61]]
    model = LogisticRegression().fit(X[:60], y[:60])
    labels = np.r_[np.ones(60), np.zeros(60)].astype(int)
    y_pop = y[120:].copy() if rare_label == 2 else np.zeros(120, int)
    y_pop[:n_rare] = rare_label
    return model, X[:120], y[:120], labels, (X[120:], y_pop)


@pytest.mark.parametrize("rare_label", [1, 2])
@pytest.mark.parametrize("attack", ["lira-offline", "lira-online", "shadow", "rmia"])
def test_rare_class_in_population_keeps_every_result(rare_label, attack):
    # 2 population records of a class: some reference models would train without it
    # (rare_label=2: a third class they cannot be queried on) or on one class only
    # (rare_label=1: unfittable); the audit keeps every attack's result.
    model, X, y, labels, population = _rare_class_data(rare_label, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = privaudit.audit_model(model, X, y, labels, population=population,
                                        attacks=["loss", attack], n_reference_models=4,
                                        random_state=0)
    assert [r.attack for r in results] == ["loss", attack]
    assert all(np.isfinite(roc_auc(labels, r.scores)) for r in results)


_TRAINED: list[int] = []


def _counting_recipe(X, y, *, random_state=None):
    # Records each model it trains, to show that a refusal comes before any training.
    _TRAINED.append(len(y))
    return LogisticRegression().fit(X, y)


def test_one_class_population_is_refused_before_training():
    model, X, y, labels, population = _rare_class_data(1, 0)
    _TRAINED.clear()
    with pytest.raises(ValueError, match=r"'population'.*1 class\(es\).*at least 2"):
        privaudit.audit_model(model, X, y, labels, population=population,
                              attacks=["loss", "lira-offline"], random_state=0,
                              reference=ReferenceSpec(recipe=_counting_recipe, n_models=4))
    assert _TRAINED == []


def test_saved_result_of_another_model_is_not_reused(tmp_path):
    # Same name, same data, another model: the saved result must not be reused.
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_digits(return_X_y=True)
    labels = np.r_[np.ones(300, int), np.zeros(300, int)]
    X, y = X[:600], y[:600]
    deep = DecisionTreeClassifier(random_state=0).fit(X[:300], y[:300])
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X[:300], y[:300])
    first = privaudit.audit_model(deep, X, y, labels, attacks=["loss"], results_dir=tmp_path)
    messages: list[str] = []
    second = privaudit.audit_model(stump, X, y, labels, attacks=["loss"],
                                   results_dir=tmp_path, progress=messages.append)
    assert not any("reusing" in m for m in messages)
    assert not np.array_equal(first[0].scores, second[0].scores)


def test_overlap_is_found_across_dtypes(digits_setup):
    s = digits_setup
    X_int = np.round(s["X"] * 16).astype(int)
    X_pop = np.vstack([np.round(s["population"][0] * 16), X_int[:2].astype(float)])
    y_pop = np.concatenate([s["population"][1], s["y"][:2]]).astype(str)
    with pytest.raises(ValueError, match=r"2 audited rows also in the population"):
        privaudit.audit_model(s["model"], X_int / 16, s["y"], s["labels"], attacks=["rmia"],
                              population=(X_pop / 16, y_pop),
                              reference=ReferenceSpec(recipe=s["recipe"]))


def test_regressor_defaults_and_gaussian_threshold():
    from sklearn.datasets import load_diabetes
    from sklearn.tree import DecisionTreeRegressor

    X, y = load_diabetes(return_X_y=True)
    labels = np.r_[np.ones(200, int), np.zeros(200, int)]
    model = DecisionTreeRegressor(min_samples_leaf=2, random_state=0).fit(X[:200], y[:200])
    results = privaudit.audit_model(model, X[:400], y[:400], labels)
    assert [r.attack for r in results] == ["loss", "gaussian-threshold"]
    for r in results:
        assert roc_auc(labels, r.scores) > 0.75  # leaves of two memorise their records
    assert "theoretical_advantage" in results[1].extra


def test_small_population_keeps_every_record_out_of_some_models(digits_setup):
    # More members than half the population: the reference models are capped at half of it
    # (with a warning) so RMIA and offline LiRA still have OUT models for every record.
    from privaudit.exceptions import FidelityWarning

    s = digits_setup
    X_pop, y_pop = s["population"][0][:400], s["population"][1][:400]
    with pytest.warns(FidelityWarning, match="at most half"):
        results = privaudit.audit_model(
            s["model"], s["X"], s["y"], s["labels"], attacks=["rmia", "lira-offline"],
            population=(X_pop, y_pop),
            reference=ReferenceSpec(recipe=LogisticRegression(max_iter=200), n_models=4),
            check_fidelity=False,
        )
    assert all(np.isfinite(r.scores).all() for r in results)


def test_label_only_audit_spends_only_the_attack_queries(digits_setup):
    from privaudit.attacks import get_attack
    from privaudit.targets import LabelOnlyTarget

    s = digits_setup
    planned = get_attack("label-only").planned_queries(len(s["X"]), s["X"].shape[1])
    target = LabelOnlyTarget(s["model"].predict, classes=s["model"].classes_,
                             max_queries=planned)
    privaudit.audit_model(target, s["X"], s["y"], s["labels"], attacks=["label-only"])
    assert target.n_queries <= planned


def test_attack_no_better_than_random_says_so(digits_setup):
    from privaudit.exceptions import BaselineWarning

    s = digits_setup
    rng = np.random.default_rng(5)
    shuffled = rng.permutation(s["labels"])  # membership unrelated to the model
    with pytest.warns(BaselineWarning, match="no better than random"):
        results = privaudit.audit_model(s["model"], s["X"], s["y"], shuffled,
                                        attacks=["loss"])
    assert results[0].audit.baseline.passed is False
    strong = privaudit.audit_model(s["model"], s["X"], s["y"], s["labels"], attacks=["loss"])
    assert strong[0].audit.baseline.passed is True
