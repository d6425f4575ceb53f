"""audit_llm on the audit template (issue 21): settings checked before any work, old
statistic names accepted with a FutureWarning and giving the same numbers, a typed
report with the blind baseline and the compared models apart, reuse through results_dir.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import privaudit
import privaudit.llm
from privaudit.audits import BlindBaselineWarning
from privaudit.audits._llm import (
    DEFAULT_LLM_STATISTICS,
    LLM_STATISTIC_REGISTRY,
    LLM_STATISTICS,
    LLMSettings,
    planned_statistics,
)
from privaudit.report import AuditReport

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")


def _tiny_models_module():
    """The LLM tests' tiny models (tests/llm/conftest.py), loaded by path."""
    path = Path(__file__).parents[1] / "llm" / "conftest.py"
    spec = importlib.util.spec_from_file_location("llm_tiny_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tiny():
    m = _tiny_models_module()
    texts = m.corpus()
    tokenizer = m.make_tokenizer(texts)
    return {"texts": texts, "tokenizer": tokenizer, "model": m.make_model(tokenizer),
            "other": m.make_model(tokenizer, seed=2)}


def _forbid_work(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(privaudit.llm, "score_texts", fail)
    monkeypatch.setattr(privaudit.llm.BlindBaseline, "fit_score", fail)


@contextmanager
def _quiet():
    """Without the blind baseline's warning (random models: it matches every statistic)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BlindBaselineWarning)
        yield


# --- settings checked before any work --------------------------------------------------

@pytest.mark.parametrize(("kwargs", "param"), [
    ({"k": 0}, "k"), ({"k": 1.5}, "k"), ({"k": "0.2"}, "k"),
    ({"p": 3}, "p"), ({"p": True}, "p"),
    ({"batch_size": 0}, "batch_size"), ({"max_length": 2.5}, "max_length"),
    ({"compat": "other"}, "compat"), ({"recall_prefix": 3}, "recall_prefix"),
    ({"blind_baseline": "yes"}, "blind_baseline"), ({"subgroups": None}, "subgroups"),
    ({"forget_accuracy": 1.5}, "forget_accuracy"), ({"retain_accuracy": -0.1},
                                                    "retain_accuracy"),
    ({"red_flag_thresholds": [0.5]}, "red_flag_thresholds"),
    ({"attacks": ["loss", "perplexity"]}, "attacks"), ({"attacks": []}, "attacks"),
    ({"attacks": 5}, "attacks"), ({"attacks": [["loss"]]}, "attacks"),
    ({"random_state": "abc"}, "random_state"), ({"random_state": 1.5}, "random_state"),
    ({"executor": "bogus"}, "executor"), ({"n_jobs": 0}, "n_jobs"),
    ({"address": "ray://x"}, "address"), ({"dataset": 3}, "dataset"),
])
def test_each_bad_setting_is_refused_naming_it_before_any_model_is_read(kwargs, param,
                                                                       monkeypatch):
    _forbid_work(monkeypatch)
    # The target is not a model at all: the settings are refused before it is read.
    with pytest.raises((ValueError, TypeError), match=rf"'{param}' parameter of audit_llm"):
        privaudit.audit_llm(object(), members=["a", "b"], non_members=["c", "d"], **kwargs)


@pytest.mark.parametrize(("attacks", "missing"), [
    (["reference"], "reference_model"), (["dc-pdd"], "token_frequencies"),
    (["recall"], "recall_prefix"), (["loss", "dc_pdd"], "token_frequencies"),
])
def test_a_statistic_without_its_input_is_refused_naming_the_input(tiny, attacks, missing,
                                                                   monkeypatch):
    _forbid_work(monkeypatch)
    with (pytest.raises(ValueError, match=rf"'{missing}' parameter"),
          warnings.catch_warnings()):
        warnings.simplefilter("ignore", FutureWarning)
        privaudit.audit_llm((tiny["model"], tiny["tokenizer"]), members=tiny["texts"][:4],
                            non_members=tiny["texts"][4:8], attacks=attacks)


def test_the_plan_comes_from_the_registry():
    nothing = dict.fromkeys(("reference_model", "token_frequencies", "recall_prefix"))
    assert planned_statistics(None, nothing) == DEFAULT_LLM_STATISTICS
    everything = dict.fromkeys(nothing, "given")
    assert planned_statistics(None, everything) == tuple(
        n for n in LLM_STATISTICS if n != "gradnorm")  # GradNorm only when asked
    assert set(LLM_STATISTICS) == set(LLM_STATISTIC_REGISTRY)
    assert all(n == n.lower() and "_" not in n for n in LLM_STATISTICS)  # kebab-case
    assert planned_statistics(("gradnorm",), nothing) == ("gradnorm",)


def test_only_fields_that_change_numbers_enter_the_key():
    keyed = dict(LLMSettings().key_items())
    # dtype changes the numbers (bfloat16 scoring differs from float32 in the 3rd digit);
    # the device does not.
    assert set(keyed) == {"k", "p", "max_length", "compat", "recall_prefix", "dtype"}
    for same in ({"batch_size": 64}, {"subgroups": False}, {"forget_accuracy": 0.3},
                 {"attacks": ("loss",)}, {"blind_baseline": False}, {"device": "cpu"}):
        assert LLMSettings(**same).key_items() == LLMSettings().key_items(), same
    assert LLMSettings(p="inf").key_items() == LLMSettings(p=math.inf).key_items()
    assert LLMSettings(k=0.3).key_items() != LLMSettings().key_items()
    # Options added later enter the key only when given: older results are still reused.
    for given in ({"stride": 64}, {"window": 128, "stride": 64}, {"chat_template": True},
                  {"chat_template": True, "system_prompt": "Be brief."}):
        items = dict(LLMSettings(**given).key_items())
        assert items.items() >= keyed.items() and set(items) - set(keyed) == set(given)
    assert (LLMSettings(compat="open-unlearning").key_items()
            != LLMSettings().key_items())


# --- old names, same numbers -----------------------------------------------------------

def test_old_statistic_names_warn_once_and_give_the_same_numbers(tiny):
    args = {"members": tiny["texts"][:12], "non_members": tiny["texts"][12:24],
            "token_frequencies": np.ones(len(tiny["tokenizer"])), "blind_baseline": False,
            "subgroups": False}
    target = (tiny["model"], tiny["tokenizer"])
    with pytest.warns(FutureWarning, match="min_k_plus_plus' -> 'min-k-plus-plus'") as seen:
        old = privaudit.audit_llm(target, attacks=["min_k", "min_k_plus_plus", "dc_pdd"],
                                  **args)
    assert sum(issubclass(w.category, FutureWarning) for w in seen) == 1
    assert seen[0].filename == __file__  # the warning points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = privaudit.audit_llm(target, attacks=["min-k", "min-k-plus-plus", "dc-pdd"],
                                  **args)
    assert [r.attack for r in old] == [r.attack for r in new] == [
        "min-k", "min-k-plus-plus", "dc-pdd"]
    assert [r.raw_statistic_name for r in new] == ["min-k", "min-k-plus-plus", "dc-pdd"]
    for a, b in zip(old, new, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
    # The engine's own columns are those numbers, under the same names.
    frame = privaudit.llm.score_texts(tiny["model"], tiny["tokenizer"],
                                      args["members"] + args["non_members"],
                                      attacks=["min-k"])
    np.testing.assert_array_equal(new[0].raw_statistic, frame["min-k"].to_numpy())


# --- the typed report ------------------------------------------------------------------

def test_the_report_keeps_the_blind_baseline_and_the_compared_models_apart(tiny):
    with _quiet():
        report = privaudit.audit_llm(
            (tiny["model"], tiny["tokenizer"]), forget=tiny["texts"][:10],
            holdout=tiny["texts"][10:20], attacks=["loss", "zlib"],
            compare={"other": (tiny["other"], tiny["tokenizer"])},
            retrained=(tiny["other"], tiny["tokenizer"]), subgroups=False)
    assert isinstance(report, AuditReport) and (report.kind, report.func) == ("llm",
                                                                            "audit_llm")
    assert [(r.target, r.attack) for r in report.results] == [
        ("GPT2LMHeadModel", "loss"), ("GPT2LMHeadModel", "zlib")]
    assert [(r.target, r.attack) for r in report.baselines] == [
        ("texts-only", "blind-baseline")]
    assert [(r.target, r.attack) for r in report.compared] == [
        ("other", "loss"), ("other", "zlib"), ("retrained", "loss"), ("retrained", "zlib")]
    # Iterated as the old flat list: the target's, the blind baseline, the compared.
    assert list(report) == [*report.results, *report.baselines, *report.compared]
    assert all(r.audit.kind == "llm" for r in report)
    assert all(r.audit.baseline is not None for r in report.results)
    assert all(r.audit.baseline is None for r in (*report.baselines, *report.compared))
    assert all(any(f.code == "privleak" for f in r.audit.findings) for r in report.results)


# --- reuse through results_dir ---------------------------------------------------------

def _audit(tiny, directory, **kwargs):
    kwargs.setdefault("attacks", ["loss", "min-k", "zlib"])
    with _quiet():
        return privaudit.audit_llm(
            (tiny["model"], tiny["tokenizer"]), members=tiny["texts"][:10],
            non_members=tiny["texts"][10:20], results_dir=directory, **kwargs)


def test_a_rerun_reuses_every_result_and_settings_out_of_the_key_never_rescore(
        tiny, tmp_path, monkeypatch):
    first = _audit(tiny, tmp_path)
    _forbid_work(monkeypatch)
    for changed in ({}, {"batch_size": 3}, {"subgroups": False}, {"n_jobs": 1}):
        again = _audit(tiny, tmp_path, **changed)
        for a, b in zip(first, again, strict=True):
            np.testing.assert_array_equal(a.scores, b.scores)
            assert a.audit.key == b.audit.key, changed


def test_only_the_missing_statistics_are_scored_and_the_blind_baseline_is_kept(
        tiny, tmp_path, monkeypatch):
    first = _audit(tiny, tmp_path)
    store = privaudit.results.ResultsStore(tmp_path)
    shutil.rmtree(store.path_for("GPT2LMHeadModel", "min-k"))
    asked = []
    score_texts = privaudit.llm.score_texts

    def spy(*args, **kwargs):
        asked.append(tuple(kwargs["attacks"]))
        return score_texts(*args, **kwargs)

    monkeypatch.setattr(privaudit.llm, "score_texts", spy)
    again = _audit(tiny, tmp_path)
    assert asked == [("min-k",)]  # one pass, for the one missing statistic
    np.testing.assert_array_equal(first[1].scores, again[1].scores)
    # Another k rescores every statistic but reuses the blind baseline (it reads no k).
    monkeypatch.setattr(privaudit.llm.BlindBaseline, "fit_score",
                        lambda *a, **k: pytest.fail("blind baseline refitted"))
    asked.clear()
    other_k = _audit(tiny, tmp_path, k=0.5)
    assert asked == [("loss", "min-k", "zlib")]
    assert other_k.baselines[0].audit.key == first.baselines[0].audit.key


# --- the CLI configuration --------------------------------------------------------------

def test_old_statistic_names_in_the_cli_config_warn_and_are_renamed(tmp_path):
    from privaudit.cli._llm import llm_run

    (tmp_path / "model").mkdir()
    for name in ("m.txt", "n.txt"):
        (tmp_path / name).write_text("a text\nanother text\n", encoding="utf-8")
    config = tmp_path / "audit.yaml"
    config.write_text("target: {path: model}\n"
                      "texts: {members: m.txt, non_members: n.txt}\n"
                      "attacks: [loss, min_k, min_k_plus_plus]\n", encoding="utf-8")
    with pytest.warns(FutureWarning, match="'min_k' -> 'min-k'"):
        run = llm_run(config, model=None, texts={}, text_column="text", reference=None,
                      retrained=None, attacks=None)
    assert run.attacks == ["loss", "min-k", "min-k-plus-plus"]
    texts = {"members": tmp_path / "m.txt", "non_members": tmp_path / "n.txt"}
    with pytest.warns(FutureWarning, match="--attacks"):
        run = llm_run(None, model=tmp_path / "model", texts=texts, text_column="text",
                      reference=None, retrained=None, attacks="loss,min_k")
    assert run.attacks == ["loss", "min-k"]


@pytest.mark.parametrize(("scoring", "expected"), [
    ("{compat: mimir, recall_prefix: [one shot, another]}",
     {"compat": "mimir", "recall_prefix": ["one shot", "another"]}),
    ("{compat: open-unlearning, recall_prefix: a prefix}",
     {"compat": "open-unlearning", "recall_prefix": "a prefix"}),
])
def test_the_cli_config_takes_every_compat_mode_and_recall_shots(tmp_path, scoring,
                                                                 expected):
    from privaudit.cli._llm import llm_run

    (tmp_path / "model").mkdir()
    for name in ("m.txt", "n.txt"):
        (tmp_path / name).write_text("a text\nanother text\n", encoding="utf-8")
    config = tmp_path / "audit.yaml"
    config.write_text("target: {path: model}\n"
                      "texts: {members: m.txt, non_members: n.txt}\n"
                      f"scoring: {scoring}\n", encoding="utf-8")
    run = llm_run(config, model=None, texts={}, text_column="text", reference=None,
                  retrained=None, attacks=None)
    assert {k: run.scoring[k] for k in expected} == expected


def test_the_run_options_shard_the_scoring_without_changing_a_number(tiny, tmp_path):
    args = {"members": tiny["texts"][:10], "non_members": tiny["texts"][10:20],
            "attacks": ["loss", "min-k"], "blind_baseline": False, "subgroups": False}
    target = (tiny["model"], tiny["tokenizer"])
    plain = privaudit.audit_llm(target, **args)
    sharded = privaudit.audit_llm(target, **args, executor="local", n_jobs=1,
                                  cache_dir=tmp_path / "shards")
    assert list((tmp_path / "shards").glob("shard-*.npz"))  # scored shard by shard
    for a, b in zip(plain, sharded, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)


# --- revisions, compatibility modes and ReCaLL's shots (issue 23) ------------------------

def test_a_revised_statistic_gets_a_new_key_and_the_others_keep_theirs(
        tiny, tmp_path, monkeypatch):
    """ReCaLL's revision (the first token after the prefix is scored) enters its result's
    key, so a result saved before it is recomputed; unrevised statistics are reused."""
    prefix = tiny["texts"][40]
    first = _audit(tiny, tmp_path, attacks=["loss", "recall"], recall_prefix=prefix)
    asked = []
    score_texts = privaudit.llm.score_texts

    def spy(*args, **kwargs):
        asked.append(tuple(kwargs["attacks"]))
        return score_texts(*args, **kwargs)

    monkeypatch.setattr(privaudit.llm, "score_texts", spy)
    monkeypatch.setitem(privaudit.llm.STATISTIC_REVISIONS, "recall",
                        privaudit.llm.STATISTIC_REVISIONS["recall"] + 1)
    again = _audit(tiny, tmp_path, attacks=["loss", "recall"], recall_prefix=prefix)
    assert asked == [("recall",)]
    assert again[0].audit.key == first[0].audit.key
    assert again[1].audit.key != first[1].audit.key
    np.testing.assert_array_equal(first[1].scores, again[1].scores)  # same code, same numbers


@pytest.mark.parametrize("compat", [None, "open-unlearning", "mimir"])
def test_every_compatibility_mode_is_accepted_and_enters_the_key(tiny, tmp_path, compat):
    report = _audit(tiny, tmp_path / str(compat), compat=compat)
    assert all(r.parameters["compat"] == compat for r in report.results)
    keys = {r.audit.key for r in report.results}
    other = _audit(tiny, tmp_path / f"{compat}-other",
                   compat="mimir" if compat != "mimir" else None)
    assert keys.isdisjoint({r.audit.key for r in other.results})


def test_recall_takes_a_list_of_shots_as_the_engine_does(tiny, tmp_path):
    shots = tiny["texts"][40:43]
    report = _audit(tiny, tmp_path, attacks=["recall"], recall_prefix=shots)
    with _quiet():
        direct = privaudit.llm.score_texts(tiny["model"], tiny["tokenizer"],
                                           tiny["texts"][:20], attacks=["recall"],
                                           recall_prefix=shots)
    by_text = dict(zip(tiny["texts"][:20], direct["recall"], strict=True))
    expected = [by_text[t] for t in tiny["texts"][:20]]
    np.testing.assert_allclose(np.sort(report[0].raw_statistic), np.sort(expected),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="recall_prefix"):
        _audit(tiny, tmp_path / "bad", attacks=["recall"], recall_prefix=[shots[0], 3])
