"""audit_model on the audit template (issue 21): ModelSettings checked before any work, the
executor resolved once, jobs planned from the attacks' tags, an AuditReport returned, old
names accepted with a warning and the same numbers, saved results reused."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier

import privaudit.training
from privaudit._validation import RENAMED_ATTACKS
from privaudit.attacks import available_attacks, get_attack, get_tags
from privaudit.audits._model import _RUNNERS, ModelAudit, ModelSettings, audit_model
from privaudit.audits._plan import RUN_ORDER
from privaudit.audits._template import RunOptions
from privaudit.report import AuditReport
from privaudit.training import LocalExecutor, ReferenceSpec


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=360, n_features=6, random_state=1)
    X_audit, y_audit, X_pop, y_pop = X[:160], y[:160], X[160:], y[160:]
    labels = np.r_[np.ones(80, int), np.zeros(80, int)]
    model = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X_audit[:80], y_audit[:80])
    return {"model": model, "X": X_audit, "y": y_audit, "labels": labels,
            "population": (X_pop, y_pop)}


def _audit(d, **kwargs):
    args = {"attacks": ["loss"], "slices": False, **kwargs}
    return audit_model(d["model"], d["X"], d["y"], d["labels"], **args)


# --- settings refused before any work --------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "param", "error"), [
    ({"random_state": "abc"}, "random_state", TypeError),
    ({"random_state": -3}, "random_state", ValueError),
    ({"executor": "bogus"}, "executor", ValueError),
    ({"n_jobs": 0}, "n_jobs", ValueError),
    ({"slices": "yes"}, "slices", TypeError),
    ({"check_fidelity": 1}, "check_fidelity", TypeError),
    ({"attacks": "loss"}, "attacks", TypeError),
    ({"attacks": []}, "attacks", TypeError),
    ({"attack_params": ["loss"]}, "attack_params", TypeError),
    ({"augmentations": [3]}, "augmentations", TypeError),
    ({"augmentations": "shift"}, "augmentations", TypeError),
    ({"cache_dir": 5}, "cache_dir", TypeError),
])
def test_bad_settings_are_refused_before_any_work(data, kwargs, param, error):
    said = []
    with pytest.raises(error, match=rf"'{param}' parameter of audit_model"):
        _audit(data, progress=said.append, **kwargs)
    assert said == []  # nothing was queried or trained


@pytest.mark.parametrize(("field", "value"), [
    ("reference", {"n_models": 2}), ("slices", None), ("check_fidelity", "no"),
    ("attacks", ()), ("attack_params", 3), ("augmentations", (1, 2)),
])
def test_model_settings_check_every_field(field, value):
    settings = ModelSettings(**{"reference": ReferenceSpec(), field: value})
    with pytest.raises((TypeError, ValueError), match=rf"'{field}' parameter of audit_model"):
        settings.check("audit_model")


def test_no_setting_enters_the_audit_key_each_attack_carries_its_own():
    # Every field is declared, and every one is out of the audit's key: the pool and the
    # attack parameters are in each attack's key, the rest cannot change a number.
    fields = {f.name for f in dataclasses.fields(ModelSettings)}
    assert set(ModelSettings.CONSTRAINTS) == fields == ModelSettings.NOT_IN_KEY
    assert ModelSettings(reference=ReferenceSpec()).key_items() == []


# --- the executor resolved once -----------------------------------------------------------------


def test_executor_name_is_resolved_once(data, monkeypatch):
    calls = []
    real = privaudit.training.get_executor

    def counting(executor, **kwargs):
        calls.append(executor)
        return real(executor, **kwargs)

    monkeypatch.setattr(privaudit.training, "get_executor", counting)
    _audit(data, attacks=["loss", "lira-offline", "rmia"], population=data["population"],
           reference=ReferenceSpec(n_models=2), check_fidelity=False)
    by_name = [c for c in calls if isinstance(c, str)]
    assert by_name == ["local"]  # RunOptions.checked; later calls pass its object through
    assert all(isinstance(c, LocalExecutor) for c in calls[1:])


# --- the plan, from the attacks' tags -------------------------------------------------------------


def test_every_membership_attack_has_a_runner():
    for name in available_attacks():
        tags = get_tags(get_attack(name))
        group = ("reference" if tags.needs_reference_models
                 else "cross-fitted" if tags.cross_fitted else "direct")
        assert group in _RUNNERS and group in RUN_ORDER, name


def test_pool_is_trained_once_after_the_attacks_that_need_none(data):
    said = []
    report = _audit(data, attacks=["rmia", "loss", "lira-offline", "trained-lr"],
                    population=data["population"], reference=ReferenceSpec(n_models=2),
                    check_fidelity=False, progress=said.append)
    assert [r.attack for r in report] == ["rmia", "loss", "lira-offline", "trained-lr"]
    training = [i for i, m in enumerate(said) if m.startswith("training 2 reference")]
    assert len(training) == 1
    ran = {m.removeprefix("running ").split(" ")[0]: i for i, m in enumerate(said)
           if m.startswith("running ")}
    assert ran["loss"] < ran["trained-lr"] < training[0] < ran["rmia"] < ran["lira-offline"]
    queried = [m for m in said if m.startswith("querying")]
    assert len(queried) == len(set(queried)) == 2  # audited and population, once each


def test_model_audit_plans_jobs_in_run_order_with_request_order(data):
    options = RunOptions.checked("audit_model")
    audit = ModelAudit(data["model"], data["X"], data["y"], data["labels"],
                       population=data["population"], record_ids=None,
                       settings=ModelSettings(reference=ReferenceSpec(n_models=2),
                                              attacks=("rmia", "entropy", "shadow", "loss")),
                       options=options)
    jobs = audit.plan()
    assert [j.name for j in jobs] == ["entropy", "loss", "rmia", "shadow"]
    assert [j.order for j in jobs] == [1, 3, 0, 2]
    assert jobs[2].key_parts == ({}, (2, "offline", None))


# --- the typed return ----------------------------------------------------------------------------


def test_returns_an_audit_report_with_nothing_apart(data):
    report = _audit(data, attacks=["loss", "entropy"])
    assert isinstance(report, AuditReport)
    assert report.baselines == () and report.compared == ()
    assert [r.attack for r in report] == ["loss", "entropy"]
    assert list(report) == list(report.results)  # the old flat list: the results alone
    assert report[0].audit.kind == "model"
    assert len(report.to_frame()) == 2


# --- old names: a warning, the same numbers ----------------------------------------------------


def test_flat_reference_keywords_warn_and_give_the_same_numbers(data):
    common = {"attacks": ["lira-offline"], "population": data["population"],
              "check_fidelity": False}
    new = _audit(data, reference=ReferenceSpec(n_models=2, mode="offline",
                                               train_fraction=0.3), **common)
    with pytest.warns(DeprecationWarning, match="reference=ReferenceSpec"):
        old = _audit(data, n_reference_models=2, reference_mode="offline",
                     reference_fraction=0.3, **common)
    np.testing.assert_array_equal(new[0].scores, old[0].scores)
    assert new[0].audit.key == old[0].audit.key


@pytest.mark.parametrize("old_name", ["modified_entropy", "Modified-Entropy-old"])
def test_old_attack_names_warn_and_results_carry_the_new(data, monkeypatch, old_name):
    # No membership attack was renamed yet: a renamed entry shows the one table is read.
    monkeypatch.setitem(RENAMED_ATTACKS, old_name, "modified-entropy")
    new = _audit(data, attacks=["loss", "modified-entropy"])
    with pytest.warns(FutureWarning, match=rf"'{old_name}' -> 'modified-entropy'"):
        old = _audit(data, attacks=("loss", old_name))
    assert [r.attack for r in old] == ["loss", "modified-entropy"]
    np.testing.assert_array_equal(new[1].scores, old[1].scores)


def test_new_names_print_no_warning(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        _audit(data, attacks=["loss", "lira-offline"], population=data["population"],
               reference=ReferenceSpec(n_models=2), check_fidelity=False)


# --- reuse through results_dir ------------------------------------------------------------------


def test_results_are_reused_whatever_the_settings_out_of_the_key(data, tmp_path):
    common = {"attacks": ["loss", "rmia"], "population": data["population"],
              "reference": ReferenceSpec(n_models=2), "results_dir": tmp_path}
    first = _audit(data, **common)
    said = []
    again = _audit(data, progress=said.append, check_fidelity=False, slices=True, **common)
    assert [m for m in said if "reusing" in m] and not [m for m in said if "training" in m]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
        assert a.audit.key == b.audit.key
    # The seed is in the key: another seed recomputes.
    other = _audit(data, progress=said.append, **{**common, "random_state": 1})
    assert other[0].audit.key != first[0].audit.key


def test_train_fraction_warning_points_at_the_caller(data):
    small = (data["population"][0][:100], data["population"][1][:100])
    with pytest.warns(Warning, match="at most half") as caught:
        _audit(data, attacks=["lira-offline"], population=small,
               reference=ReferenceSpec(n_models=2), check_fidelity=False)
    assert any(w.filename == __file__ for w in caught if "at most half" in str(w.message))


# --- the CLI configuration: the same names ----------------------------------------------------


@pytest.mark.parametrize("where", ["attacks", "attack_params"])
def test_config_old_attack_names_warn_and_load_as_the_new(tmp_path, monkeypatch, where):
    import yaml

    from privaudit.cli._config import load_audit_config

    monkeypatch.setitem(RENAMED_ATTACKS, "modified_entropy", "modified-entropy")
    (tmp_path / "model.skops").write_bytes(b"placeholder")  # only its existence is read
    (tmp_path / "data.csv").write_text("a,y,m\n1,0,1\n")
    old = "modified_entropy"
    config = {"target": {"path": "model.skops"},
              "data": {"path": "data.csv", "label_column": "y", "membership_column": "m"},
              "attacks": ["loss", old if where == "attacks" else "modified-entropy"],
              "attack_params": {old if where == "attack_params" else "modified-entropy": {}}}
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
    with pytest.warns(FutureWarning, match=rf"{where} of .*audit.yaml.*'{old}' -> "):
        cfg = load_audit_config(tmp_path / "audit.yaml")
    assert cfg.attacks == ["loss", "modified-entropy"]
    assert list(cfg.attack_params) == ["modified-entropy"]


def test_a_crash_in_the_pool_keeps_the_finished_attacks(data, tmp_path, monkeypatch):
    import privaudit.audits._model as model_module

    common = {"attacks": ["rmia", "loss"], "population": data["population"],
              "reference": ReferenceSpec(n_models=2), "results_dir": tmp_path,
              "check_fidelity": False}

    def crash(audit, name, run):
        raise RuntimeError(f"crash in {name}")

    monkeypatch.setitem(model_module._RUNNERS, "reference", crash)
    with pytest.raises(RuntimeError, match="crash in rmia"):
        _audit(data, **common)
    monkeypatch.undo()
    said = []
    resumed = _audit(data, progress=said.append, **common)
    assert "running loss" not in said and any("loss: reusing" in m for m in said)
    assert "running rmia" in said
    assert [r.attack for r in resumed] == ["rmia", "loss"]


@pytest.mark.parametrize(("attacks", "mode", "refused"), [
    (["rmia"], "auto", True),              # auto without an online attack: offline pool
    (["shadow", "lira-offline"], "auto", True),
    (["rmia"], "offline", True),
    (["lira-online", "rmia"], "auto", False),  # online: audited records are candidates too
    (["rmia"], "online", False),
    (["loss"], "offline", False),           # no pool at all
])
def test_config_population_rows_are_counted_for_the_pool_planned(tmp_path, attacks, mode,
                                                                  refused):
    # Three population rows, 40 audited: too few for an offline pool at half of them (4
    # needed), enough with the audited rows as candidates. The pool's mode comes from the
    # attacks' tags, as audit_model plans it, not from their names.
    import pandas as pd

    from privaudit.cli._audit_config import AuditConfig
    from privaudit.cli._datafiles import _check_reference_rows, _Table
    from privaudit.cli._errors import ConfigError

    cfg = AuditConfig(target_path=tmp_path / "m.skops", label_column="y",
                      membership_column="m", data_path=tmp_path / "d.csv", attacks=attacks,
                      reference_mode=mode)
    pop = _Table(pd.DataFrame({"a": range(3)}), tmp_path / "p.csv", "population",
                 "population.path")
    data = _Table(pd.DataFrame({"a": range(40)}), tmp_path / "d.csv", "data", "data.path")
    if refused:
        with pytest.raises(ConfigError, match=r"has 3 row\(s\): too few"):
            _check_reference_rows(pop, data, cfg)
    else:
        _check_reference_rows(pop, data, cfg)


def test_quantile_screen_fits_on_the_population_without_a_pool(data):
    # Issue 24: a direct attack tagged needs_population is fitted on the target's answers
    # on the population, queried once and shared with RMIA; no pool without a reference
    # attack, and the population is required.
    said = []
    report = _audit(data, attacks=["quantile", "loss"], population=data["population"],
                    attack_params={"quantile": {"max_iter": 10}}, progress=said.append)
    assert [r.attack for r in report] == ["quantile", "loss"]
    assert not [m for m in said if m.startswith("training")]
    assert sorted(m.split(" on ")[1] for m in said if m.startswith("querying")) == [
        "160 audited records", "200 population records"]
    assert np.all(np.isfinite(report[0].scores))
    with pytest.raises(ValueError, match="'population' parameter of audit_model"):
        _audit(data, attacks=["quantile"])
