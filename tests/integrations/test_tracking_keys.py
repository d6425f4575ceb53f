"""The keys both trackers log: valid MLflow names, one prefix per result, never shared."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from integration_data import N_BOOTSTRAP

from privaudit.integrations import ResultMetrics, metric_key, read_audit, tracking_items
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
