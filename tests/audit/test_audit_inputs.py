"""audit_model's inputs (issue 6): settings refused before any work, pandas inputs aligned
on their index, unique record ids, and a target fingerprint stable across loads."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import yaml
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

import privaudit
from privaudit.targets import estimator_fingerprint
from privaudit.training import LocalExecutor, ReferenceSpec

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


@pytest.fixture(scope="module")
def setup():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X, y = X.iloc[:, :5], y
    perm = np.random.default_rng(0).permutation(len(X))
    members, non_members, pop = perm[:100], perm[100:200], perm[200:300]
    model = DecisionTreeClassifier(random_state=0).fit(X.iloc[members], y.iloc[members])
    rows = np.r_[members, non_members]
    return {
        "model": model,
        "X": X.iloc[rows].reset_index(drop=True),
        "y": y.iloc[rows].reset_index(drop=True),
        "labels": pd.Series(np.r_[np.ones(100, int), np.zeros(100, int)]),
        "population": (X.iloc[pop].reset_index(drop=True), y.iloc[pop].reset_index(drop=True)),
    }


def _auc(result) -> float:
    return privaudit.metrics.roc_auc(result.labels, result.scores)


def _audit(s, **kwargs):
    args = {"attacks": ["loss"], "slices": False, **kwargs}
    X, y, labels = args.pop("X", s["X"]), args.pop("y", s["y"]), args.pop("labels", s["labels"])
    return privaudit.audit_model(s["model"], X, y, labels, **args)


# --- Settings refused before any work ------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": -2}, "n_jobs"),
        ({"n_jobs": 1.5}, "n_jobs"),
        ({"n_jobs": True}, "n_jobs"),
        ({"random_state": -1}, "random_state"),
        ({"random_state": "0"}, "random_state"),
        ({"reference": {"n_models": 4}}, "reference"),
        ({"executor": "gpu"}, "executor"),
        ({"executor": 3}, "executor"),
        ({"address": "ray://head:10001"}, "address"),
        ({"executor": LocalExecutor(1), "n_jobs": 2}, "n_jobs"),
        ({"executor": LocalExecutor(1), "address": "ray://head:10001"}, "address"),
        ({"slices": "yes"}, "slices"),
        ({"check_fidelity": None}, "check_fidelity"),
        ({"progress": 5}, "progress"),
        ({"dataset": 3}, "dataset"),
    ],
)
def test_bad_settings_are_refused_before_any_work(setup, kwargs, param):
    said = []
    with pytest.raises((ValueError, TypeError), match=rf"'{param}' parameter of audit_model"):
        _audit(setup, progress=kwargs.pop("progress", said.append), **kwargs)
    assert said == []  # nothing was queried or trained


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"n_reference_models": 0}, "n_reference_models"),
        ({"n_reference_models": 2.0}, "n_reference_models"),
        ({"reference_mode": "sideways"}, "reference_mode"),
        ({"reference_fraction": 0.0}, "reference_fraction"),
        ({"reference_fraction": 1.5}, "reference_fraction"),
        ({"wrap": 3}, "wrap"),
        ({"recipe": 3}, "recipe"),
    ],
)
def test_bad_deprecated_reference_keywords_keep_their_names(setup, kwargs, param):
    # The old keywords still work for one release: a bad value is named as the caller wrote
    # it (not as the ReferenceSpec field it maps to), after the deprecation warning.
    said = []
    with (pytest.warns(DeprecationWarning, match=param),
          pytest.raises((ValueError, TypeError), match=rf"'{param}' parameter of audit_model")):
        _audit(setup, progress=said.append, **kwargs)
    assert said == []


@pytest.mark.parametrize(
    ("attack_params", "message", "error"),
    [
        # A parameter the attack does not have: the valid ones are listed (as in a config).
        ({"rmia": {"gama": 2.0}}, r"'attack_params' parameter of audit_model must be one "
         r"of \['break_ties', 'gamma', .*'offline_a'\] \(at 'rmia\.gama'\)", ValueError),
        ({"rmia": {"online": True}}, r"one of \[.*\] \(at 'rmia\.online'\)", ValueError),
        # Parameters of an attack that does not run.
        ({"loss": {"threshold": 0.5}}, r"an attack listed in 'attacks' \(\['rmia'\]\) "
         r"\(at 'loss'\)", ValueError),
        # A value that is not a mapping of parameters, and no mapping at all.
        ({"rmia": ["gamma", 2.0]}, r"a mapping of parameter names to values \(at 'rmia'\)",
         ValueError),
        (["rmia"], r"'attack_params' parameter of audit_model must be a dict", TypeError),
    ],
)
def test_attack_params_get_the_check_of_every_audit(setup, attack_params, message, error):
    # The same check as a configuration's (privaudit._validation.check_attack_params),
    # before any reference model trains.
    said = []
    with pytest.raises(error, match=message):
        _audit(setup, attacks=["rmia"], attack_params=attack_params,
               population=setup["population"], reference=ReferenceSpec(n_models=2),
               progress=said.append)
    assert said == []


def test_attack_param_values_are_checked_before_any_work(setup):
    # RMIA used to check gamma only when scoring, after the reference models trained.
    said = []
    with pytest.raises(ValueError, match=r"'gamma' parameter of RMIAAttack must be a "
                       r"positive real number.*\(at 'rmia'\)"):
        _audit(setup, attacks=["rmia"], attack_params={"rmia": {"gamma": -1.0}},
               population=setup["population"], reference=ReferenceSpec(n_models=2),
               progress=said.append)
    assert said == []


@pytest.mark.parametrize("name", ["lira-online", "lira-offline"])
def test_the_name_fixes_lira_online(setup, name):
    # online: false under "lira-online" would run offline LiRA under the other name.
    said = []
    with pytest.raises(ValueError, match=rf"one of \['eps', 'fix_variance', 'min_models'\] "
                       rf"\(at '{name}\.online'\)"):
        _audit(setup, attacks=[name], attack_params={name: {"online": name != "lira-online"}},
               population=setup["population"], reference=ReferenceSpec(n_models=2),
               progress=said.append)
    assert said == []


@pytest.mark.parametrize("param", ["cache_dir", "results_dir"])
def test_output_folder_that_is_a_file(setup, tmp_path, param):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=rf"'{param}' parameter of audit_model.*a file"):
        _audit(setup, **{param: tmp_path / "file" / "below"})


def test_n_jobs_minus_one_is_every_cpu(setup):
    assert len(_audit(setup, n_jobs=-1)) == 1


# --- Record ids ------------------------------------------------------------------------------


def test_duplicated_record_ids_are_named(setup):
    ids = [f"r{i}" for i in range(200)]
    ids[7] = ids[3] = "r42"
    with pytest.raises(ValueError, match=r"'record_ids' parameter.*unique.*'r42'"):
        _audit(setup, record_ids=ids)


def test_record_ids_of_another_length(setup):
    with pytest.raises(ValueError, match=r"'record_ids' parameter.*one id per row"):
        _audit(setup, record_ids=np.arange(5))


# --- pandas inputs are aligned on their index -------------------------------------------


def test_shuffled_frame_is_aligned_on_its_index(setup):
    s = setup
    expected = _auc(_audit(s)[0])
    order = np.random.default_rng(1).permutation(200)
    # X and y shuffled together; labels and ids left in the original order.
    result = _audit(s, X=s["X"].iloc[order], y=s["y"].iloc[order],
                    record_ids=pd.Series([f"r{i}" for i in range(200)]))[0]
    assert expected > 0.55
    assert _auc(result) == pytest.approx(expected)
    np.testing.assert_array_equal(result.labels, s["labels"].to_numpy()[order])
    assert list(result.record_ids[:3]) == [f"r{i}" for i in order[:3]]


def test_indexes_holding_other_labels_are_refused(setup):
    s = setup
    labels = s["labels"].copy()
    labels.index = labels.index + 1000
    with pytest.raises(ValueError, match=r"'labels' parameter of audit_model.*same unique"):
        _audit(s, labels=labels)


def test_pandas_disagreeing_with_plain_arrays_is_refused(setup):
    s = setup
    order = np.random.default_rng(2).permutation(200)
    with pytest.raises(ValueError, match=r"'y' parameter of audit_model.*plain arrays"):
        _audit(s, X=s["X"].iloc[order], y=s["y"], labels=s["labels"].to_numpy()[order])


def test_plain_arrays_keep_positions(setup):
    s = setup
    expected = _auc(_audit(s)[0])
    result = _audit(s, X=s["X"].to_numpy(), y=s["y"].to_numpy(),
                    labels=s["labels"].to_numpy())[0]
    assert _auc(result) == pytest.approx(expected)


def test_population_pair_is_aligned(setup):
    s = setup
    X_pop, y_pop = s["population"]
    order = np.random.default_rng(3).permutation(len(X_pop))
    with pytest.raises(ValueError, match=r"'population\[1\]' parameter"):
        other = y_pop.copy()
        other.index = other.index + 5000
        _audit(s, population=(X_pop, other))
    # Same labels, another order: aligned, so no row is mislabelled.
    assert len(_audit(s, population=(X_pop.iloc[order], y_pop))) == 1


def test_population_overlap_names_the_rows(setup):
    s = setup
    X_pop = pd.concat([s["population"][0], s["X"].iloc[[5]]], ignore_index=True)
    y_pop = pd.concat([s["population"][1], s["y"].iloc[[5]]], ignore_index=True)
    with pytest.raises(ValueError, match=r"1 audited rows also in the population, e.g. "
                                         r"audited row 5 = population row 100"):
        _audit(s, attacks=["rmia"], population=(X_pop, y_pop),
               reference=ReferenceSpec(n_models=2))


# --- A fingerprint stable across loads and processes ----------------------------------------

FINGERPRINT_SCRIPT = """
import json, sys
import skops.io as sio
from privaudit.targets import estimator_fingerprint
out = {}
for path in sys.argv[1:]:
    model = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    out[path] = estimator_fingerprint(model)
print(json.dumps(out))
"""


def _models(seed: int) -> dict:
    X, y = load_digits(return_X_y=True)
    X, y = X[:200], y[:200]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "mlp": MLPClassifier((8,), max_iter=5, random_state=seed).fit(X, y),
            "forest": RandomForestClassifier(n_estimators=3, random_state=seed).fit(X, y),
            "pipeline": make_pipeline(StandardScaler(),
                                      LogisticRegression(max_iter=20 + seed)).fit(X, y),
        }


def _load(path):
    return sio.load(path, trusted=sio.get_untrusted_types(file=path))


def test_fingerprint_is_stable_across_loads_and_processes(tmp_path):
    paths = {}
    for name, model in _models(0).items():
        paths[name] = str(tmp_path / f"{name}.skops")
        sio.dump(model, paths[name])
    here = {name: (estimator_fingerprint(_load(p)), estimator_fingerprint(_load(p)))
            for name, p in paths.items()}
    other = json.loads(subprocess.run(
        [sys.executable, "-c", FINGERPRINT_SCRIPT, *paths.values()], capture_output=True,
        text=True, check=True, timeout=600).stdout)
    for name, path in paths.items():
        first, second = here[name]
        assert first is not None and first == second == other[path], name


def test_fingerprint_follows_the_fitted_parameters():
    first, second = _models(0), _models(1)
    for name in first:
        assert estimator_fingerprint(first[name]) != estimator_fingerprint(second[name]), name
    mlp = first["mlp"]
    before = estimator_fingerprint(mlp)
    mlp.coefs_[0][0, 0] += 1e-12
    assert estimator_fingerprint(mlp) != before
    mlp._random_state = np.random.RandomState(123)  # runtime state: not part of the model
    mlp.coefs_[0][0, 0] -= 1e-12
    assert estimator_fingerprint(mlp) == before


def test_rerun_on_an_mlp_skops_reuses_every_finished_attack(tmp_path):
    from privaudit.cli import app
    from privaudit.targets import save_sklearn_model

    X, y = load_digits(return_X_y=True, as_frame=True)
    X, y = X.iloc[:120], y.iloc[:120]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MLPClassifier((8,), solver="lbfgs", max_iter=30, random_state=0)
        model.fit(X.iloc[:60], y.iloc[:60])
    save_sklearn_model(model, tmp_path / "mlp.skops")
    data = X.copy()
    data["digit"] = y
    data["member"] = np.r_[np.ones(60, int), np.zeros(60, int)]
    data.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump({
        "target": {"path": "mlp.skops", "name": "mlp"},
        "data": {"path": "data.csv", "label_column": "digit", "membership_column": "member"},
        "attacks": ["loss", "confidence"],
        "report": {"out": "report", "n_bootstrap": 0},
    }))
    runner = CliRunner()
    command = ["audit", "model", "--config", str(tmp_path / "audit.yaml")]
    first = runner.invoke(app, command)
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, command)
    assert again.exit_code == 0, again.output
    assert "loss: reusing" in again.output
    assert "confidence: reusing" in again.output
