"""audit_generator on the audit template (issue 21): settings checked before any work, one
vocabulary (old names warn, give the same numbers and are named in errors), the typed
return, reuse through results_dir, results filed per target record (TargetRuns)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from privaudit.audits import _generator as generator_module
from privaudit.audits import audit_generator
from privaudit.audits._generator import EVEN_RUNS, GeneratorSettings
from privaudit.report import AuditReport
from privaudit.results import ResultsStore
from privaudit.training import KNOWLEDGE, GeneratorRuns, ReferenceSpec

GAME = {"n_train_rows": 60, "n_test_runs": 6, "n_targets": 2, "random_state": 0,
        "attacks": ["closest-distance"]}
SHADOWS = ReferenceSpec(n_models=6)


@pytest.fixture(scope="module")
def population():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 80, 300),
                          "city": rng.choice(["a", "b", "c"], 300)})
    frame.loc[0] = [99, "z"]
    return frame


def copier(train, n_rows, *, random_state):
    return train.sample(n_rows, replace=True, random_state=random_state % 2**32)


@pytest.fixture
def no_work(monkeypatch):
    """Any work (the neighbours scan, a generator run) fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("work started before the settings were checked")

    monkeypatch.setattr(generator_module, "vulnerable_records", refuse)
    monkeypatch.setattr(GeneratorRuns, "run", refuse)


@pytest.mark.parametrize("kwargs, param, error", [
    ({"n_test_runs": 3}, "n_test_runs", ValueError),
    ({"n_test_runs": "4"}, "n_test_runs", TypeError),
    ({"reference": ReferenceSpec(n_models=3)}, "reference", ValueError),
    ({"reference": ReferenceSpec(n_models=4, mode="offline")}, "reference", ValueError),
    ({"reference": ReferenceSpec(n_models=4, train_fraction=0.5)}, "reference", ValueError),
    ({"reference": 8}, "reference", TypeError),
    ({"reserved_fraction": 1.0}, "reserved_fraction", ValueError),
    ({"claimed_epsilon": 0}, "claimed_epsilon", ValueError),
    ({"claimed_epsilon": float("nan")}, "claimed_epsilon", ValueError),
    ({"knowledge": "everything"}, "knowledge", ValueError),
    ({"name": ""}, "name", TypeError),
    ({"n_targets": 0}, "n_targets", ValueError),
    ({"candidates": "ab", "sensitive": "city"}, "candidates", TypeError),
    ({"attack_params": ["x"]}, "attack_params", TypeError),
    ({"random_state": "abc"}, "random_state", TypeError),
    ({"executor": "bogus"}, "executor", ValueError),
    ({"n_jobs": 0}, "n_jobs", ValueError),
    ({"dataset": 3}, "dataset", TypeError),
])
def test_bad_settings_are_refused_before_any_work(population, no_work, kwargs, param,
                                                  error):
    args = {"reference": SHADOWS, **GAME, **kwargs}
    with pytest.raises(error, match=rf"'{param}' parameter of audit_generator"):
        audit_generator(copier, population, **args)


def test_the_knowledge_rule_is_the_runs_own():
    assert GeneratorSettings.CONSTRAINTS["knowledge"][0].choices == KNOWLEDGE


@pytest.mark.parametrize("value, ok", [(2, True), (100, True), (0, False), (3, False),
                                       (True, False), (4.0, False)])
def test_a_count_of_runs_is_even(value, ok):
    from privaudit._validation import check_declared

    if ok:
        assert check_declared(value, [EVEN_RUNS], param="n", func="f") == value
    else:
        with pytest.raises((TypeError, ValueError), match="'n' parameter of f"):
            check_declared(value, [EVEN_RUNS], param="n", func="f")


OLD = {"generator": copier, "n_shadow_runs": 6, "reference_fraction": 0.3,
       "secret": "city", "secret_values": ["a", "b"]}
NEW = {"target": copier, "reference": SHADOWS, "reserved_fraction": 0.3,
       "sensitive": "city", "candidates": ["a", "b"]}


def test_old_names_warn_once_each_and_give_the_same_numbers(population):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new names never warn
        new = audit_generator(auxiliary_data=population, **NEW, **GAME)
    with pytest.warns(FutureWarning) as caught:
        old = audit_generator(auxiliary_data=population, **OLD, **GAME)
    said = " ".join(str(w.message) for w in caught if w.category is FutureWarning)
    for name in OLD:
        assert f"'{name}'" in said
    assert len(old) == len(new) == 2
    for a, b in zip(old, new, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
        assert (a.target, a.attack, a.kind) == (b.target, b.attack, b.kind) == (
            a.target, "closest-distance", "attribute")
        assert a.parameters == b.parameters  # saved names kept: "n_shadow_runs" etc.
        assert a.parameters["n_shadow_runs"] == 6


@pytest.mark.parametrize("old, new, bad, match", [
    ("n_shadow_runs", "reference", 3, "'n_shadow_runs' parameter"),
    ("reference_fraction", "reserved_fraction", 1.0, "'reference_fraction' parameter"),
    ("secret", "sensitive", "nope", "'secret' parameter"),
    ("generator", "target", "ctgan", "'generator' parameter"),
])
def test_an_error_names_the_keyword_the_caller_used(population, no_work, old, new, bad,
                                                    match):
    args = {**NEW, **GAME, "sensitive": None, "candidates": None}
    del args[new]
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match=match):
        audit_generator(auxiliary_data=population, **args, **{old: bad})


def test_an_old_and_a_new_name_together_are_refused(population, no_work):
    with pytest.raises(ValueError, match=r"'secret' parameter.*left out when 'sensitive'"):
        audit_generator(copier, population, reference=SHADOWS, sensitive="city",
                        secret="city", **GAME)
    with pytest.raises(ValueError, match=r"'n_shadow_runs' parameter.*left out when "
                                         "'reference'"):
        audit_generator(copier, population, reference=SHADOWS, n_shadow_runs=6, **GAME)


def test_the_return_is_an_audit_report_with_no_baselines_or_compared(population):
    report = audit_generator(copier, population, reference=SHADOWS, **{
        **GAME, "attacks": ["closest-distance", "domias"]})
    assert isinstance(report, AuditReport)
    assert report.kind == "generator" and report.func == "audit_generator"
    assert list(report.baselines) == [] and list(report.compared) == []
    # The old flat order: attack by attack, each attack's targets in order.
    assert [r.attack for r in report] == ["closest-distance"] * 2 + ["domias"] * 2
    assert [r.target for r in report][:2] == [r.target for r in report][2:]
    assert all(r.audit.kind == "generator" and r.audit.baseline is not None
               for r in report)


def test_results_are_filed_per_target_and_reused_without_any_run(population, tmp_path,
                                                                 monkeypatch):
    args = {**GAME, "reference": SHADOWS, "results_dir": tmp_path, "name": "copier"}
    first = audit_generator(copier, population, **args)
    store = ResultsStore(tmp_path)
    for r in first:  # one folder per target record, "<generator>--<attack>" in it
        assert store.has(r.target, "copier--closest-distance")
    runs = []
    original = GeneratorRuns.run
    monkeypatch.setattr(GeneratorRuns, "run",
                        lambda self, **kw: runs.append(self) or original(self, **kw))
    messages: list[str] = []
    again = audit_generator(copier, population, progress=messages.append, **args)
    assert runs == [] and sum("reusing the finished result" in m for m in messages) == 2
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
        assert a.audit.key == b.audit.key
    # Another attack: the runs are made again (no cache_dir), the saved one is reused.
    more = audit_generator(copier, population, **{
        **args, "attacks": ["closest-distance", "local-neighbourhood"]})
    assert len(runs) == 2  # the shadow and the test runs, once for the new attack
    np.testing.assert_array_equal(more[0].scores, first[0].scores)
    # What changes a result changes the key: the claim is stored with every result.
    claimed = audit_generator(copier, population, claimed_epsilon=2.0, **args)
    assert all(r.parameters["claimed_epsilon"] == 2.0 for r in claimed)
    assert claimed[0].audit.key != first[0].audit.key


def test_settings_that_cannot_change_a_result_stay_out_of_the_key():
    assert GeneratorSettings.NOT_IN_KEY == {"attacks", "attack_params"}
    spec = GeneratorSettings(reference=SHADOWS, attacks=("domias",))
    items = dict(spec.key_items())
    assert "attacks" not in items and items["reference"] == 6


def test_candidates_without_a_sensitive_column_are_refused_before_any_work(population,
                                                                          no_work):
    with pytest.raises(ValueError, match=r"'candidates' parameter.*unless 'sensitive'"):
        audit_generator(copier, population, reference=SHADOWS, candidates=["a", "b"],
                        **GAME)


# --- the configuration of ``privaudit audit generator`` -------------------------------------

def _config(folder, body):
    path = folder / "audit.yaml"
    path.write_text("data: {path: population.csv}\ngenerators: [{name: c, builtin: copying}]"
                    "\ntargets: {rows: [0]}\nattacks: [closest-distance]\n"
                    "report: {n_bootstrap: 0}\n" + body)
    return path


OLD_KEYS = ("game: {n_train_rows: 40, n_test_runs: 4, n_shadow_runs: 4, "
            "reference_fraction: 0.3}\nsecret: city\nsecret_values: [a, b]\n")
NEW_KEYS = ("reference: {n_models: 4}\ngame: {n_train_rows: 40, n_test_runs: 4, "
            "reserved_fraction: 0.3}\nsensitive: city\ncandidates: [a, b]\n")


def test_old_configuration_keys_warn_and_read_as_the_new(population, tmp_path):
    from privaudit.cli._generator import load_generator_config

    population.to_csv(tmp_path / "population.csv", index=False)
    with pytest.warns(FutureWarning) as caught:
        old = load_generator_config(_config(tmp_path, OLD_KEYS)).config
    said = " ".join(str(w.message) for w in caught)
    for key, new in (("game.n_shadow_runs", "reference.n_models"),
                     ("game.reference_fraction", "game.reserved_fraction"),
                     ("secret", "sensitive"), ("secret_values", "candidates")):
        assert f"'{key}' key" in said and f"'{new}'" in said
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = load_generator_config(_config(tmp_path, NEW_KEYS)).config
    assert (old.reference.n_models, old.game.reserved_fraction, old.sensitive,
            old.candidates) == (new.reference.n_models, new.game.reserved_fraction,
                                new.sensitive, new.candidates) == (4, 0.3, "city", ["a", "b"])
    assert old.written_keys()["candidates"] == "secret_values"
    assert new.written_keys()["candidates"] == "candidates"


@pytest.mark.parametrize("body, key", [
    ("reference: {n_models: 4}\ngame: {n_shadow_runs: 4}\n", "game.n_shadow_runs"),
    ("game: {reserved_fraction: 0.1, reference_fraction: 0.1}\n", "game.reference_fraction"),
    ("sensitive: city\nsecret: city\n", "secret"),
])
def test_an_old_and_a_new_configuration_key_together_are_refused(population, tmp_path, body,
                                                                 key):
    from privaudit.cli._errors import ConfigError
    from privaudit.cli._generator import load_generator_config

    population.to_csv(tmp_path / "population.csv", index=False)
    with pytest.raises(ConfigError, match=rf"'{key}' key.*old name of"):
        load_generator_config(_config(tmp_path, body))


def test_a_configuration_in_old_keys_gives_the_same_numbers(population, tmp_path):
    import json

    from privaudit.cli._generator import load_generator_config, run_generator_audit

    population.to_csv(tmp_path / "population.csv", index=False)
    scores = {}
    for label, body in (("old", OLD_KEYS), ("new", NEW_KEYS)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_generator_config(_config(tmp_path, body))
            run.out = tmp_path / label
            run_generator_audit(run)
        doc = json.loads((tmp_path / label / "results.json").read_text())
        scores[label] = [(e["target"], e["attack"], e["kind"]) for e in doc["results"]]
        scores[label + "-files"] = sorted(p.relative_to(tmp_path / label).as_posix() for p in
                                          (tmp_path / label / "results").glob("*/*.json"))
    assert scores["old"] == scores["new"] and scores["old-files"] == scores["new-files"]
