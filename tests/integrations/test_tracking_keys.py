"""The keys both trackers log: valid MLflow names, one prefix per result, never shared."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from integration_data import N_BOOTSTRAP

from privaudit.integrations import (
    AuditSummary,
    ResultMetrics,
    metric_key,
    read_audit,
    tracking_items,
)
from privaudit.integrations._tracking import result_prefixes

#: MLflow's rule for metric, parameter and tag names (mlflow.utils.validation).
_VALID = re.compile(r"^[0-9A-Za-z_\-. :/]{1,250}$")


@given(st.lists(st.text(max_size=300), min_size=1, max_size=3))
def test_every_key_is_a_valid_mlflow_name(parts):
    assert _VALID.match(metric_key(*parts))


def _result(target: str, attack: str, role: str = "result") -> ResultMetrics:
    return ResultMetrics(target=target, attack=attack, dataset="", role=role, kind="",
                         metrics={})


@given(st.lists(st.tuples(st.sampled_from(["m|1", "m_1", "m<1", "m/1", "x" * 300, ""]),
                          st.sampled_from(["loss", "lira", "l|ira"]),
                          st.sampled_from(["result", "baseline", "compared"])),
                min_size=1, max_size=12))
def test_prefixes_are_unique_even_when_names_collide(triples):
    """``m|1`` and ``m_1`` sanitise alike; the same target and attack twice: still unique."""
    prefixes = result_prefixes(tuple(_result(*t) for t in triples))
    assert len(set(prefixes)) == len(prefixes)
    assert all(_VALID.match(p) for p in prefixes)


def test_items_hold_every_metric_the_verdict_and_the_settings(results):
    summary = read_audit(results, n_bootstrap=N_BOOTSTRAP)
    items = tracking_items(summary)
    assert len(items.metrics) == sum(len(r.metrics) for r in summary.results)
    # the two loss results on model|v2 keep apart; the odd target is sanitised
    assert items.metrics["model_v2/loss/auc"] != items.metrics["model_v2/loss-2/auc"]
    assert "b_model _ ___b_/lira-online/auc_low" in items.metrics
    assert items.tags["privaudit.verdict"] == summary.verdict.label
    assert items.tags["privaudit.verdict.severity"] == summary.verdict.severity
    assert items.params["privaudit.n_bootstrap"] == str(N_BOOTSTRAP)
    assert items.params["model_v2/loss/tag"] == "a|b"
    assert all(_VALID.match(key) for part in items for key in part)


def test_a_slash_in_a_name_adds_no_level():
    assert metric_key("team/model", "loss") == "team_model/loss"
    assert metric_key("a", "b/c", "auc").count("/") == 2


@given(st.lists(st.text(max_size=40), min_size=1, max_size=3))
def test_no_part_of_a_key_starts_with_an_underscore(parts):
    """W&B takes ``_step``, ``_runtime``... for its own: a logged key never looks like one."""
    assert not any(part.startswith("_") for part in metric_key(*parts).split("/"))


def test_a_prefix_is_never_another_results_own():
    """The second ``model/loss`` is not ``model/loss-2`` when a result's attack is ``loss-2``."""
    results = (_result("model", "loss"), _result("model", "loss"), _result("model", "loss-2"))
    assert result_prefixes(results) == ["model/loss", "model/loss-3", "model/loss-2"]
    # sanitised alike (a|b, a_b), a -N target or attack besides: still one prefix each
    tangled = (_result("a|b", "loss"), _result("a_b", "loss"), _result("a_b", "loss-2"),
               _result("a_b", "loss-3"), _result("a|b", "loss-2"))
    assert len(set(result_prefixes(tangled))) == len(tangled)


def test_a_long_target_is_cut_and_the_attack_kept():
    target = "t" * 200
    prefixes = result_prefixes((_result(target, "loss"), _result(target, "lira-online"),
                                _result(target, "loss"), _result(target, "loss", "baseline")))
    assert [p.rsplit("/", 1)[1] for p in prefixes] == ["loss", "lira-online", "loss-2",
                                                      "loss"]
    assert prefixes[3].startswith("baseline/t") and all(len(p) <= 180 for p in prefixes)


@given(st.lists(st.tuples(st.sampled_from(["m", "m|1", "m_1", "t" * 200, "..", ""]),
                          st.sampled_from(["loss", "loss-2", "loss-3", "a" * 300]),
                          st.sampled_from(["result", "baseline"])),
                min_size=1, max_size=10))
def test_prefixes_are_unique_and_keep_the_attack(triples):
    """Unique after the -N numbers; the attack stays in the key (cut only if itself long)."""
    prefixes = result_prefixes(tuple(_result(*t) for t in triples))
    assert len(set(prefixes)) == len(prefixes)
    for (_, attack, _), prefix in zip(triples, prefixes, strict=True):
        assert _VALID.match(prefix) and len(prefix) <= 180
        assert prefix.rsplit("/", 1)[1].startswith(attack[:80])


def test_names_cut_to_mlflow_length_are_not_merged():
    """Two parameter names equal in their first 250 characters: two keys, two values."""
    result = ResultMetrics(target="m", attack="loss", dataset="", role="result", kind="",
                           metrics={"auc": 0.5},
                           parameters={"p" * 300 + "a": 1, "p" * 300 + "b": 2})
    items = tracking_items(AuditSummary(results=(result,), overview=(), verdict=None,
                                        settings={}))
    logged = [k for k in items.params if k.startswith("m/loss/")]
    assert len(logged) == 2 and all(_VALID.match(k) for k in logged)
    assert sorted(items.params[k] for k in logged) == ["1", "2"]
