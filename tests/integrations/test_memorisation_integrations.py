"""An LLM audit's memorisation results in the trackers and the model card; every type too.

The memorisation results are built as the audit builds them
(``tests/policy/memorisation_results.py``): extraction checks with Wilson rates and
Newcombe's difference, canaries with exposures and a one-run epsilon bound. They are read
from memory and from a written report folder, logged to a real MLflow file store and
read back, and carded (the metadata parsed back). Then the sweep: one result of every
type in ``RESULT_TYPES`` is logged and carded, or named as left out.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml
from integration_data import N_BOOTSTRAP, audit_results, same_number

from policy.gate_results import attribute_result
from policy.memorisation_results import exposed_canaries, extraction_result, random_canaries
from privaudit.integrations import markdown_escape, model_card, read_audit, tracking_items
from privaudit.integrations._card import headline
from privaudit.integrations._tracking import result_prefixes
from privaudit.results import RESULT_TYPES, ProximityResult


@pytest.fixture(scope="module")
def memorisation():
    return [extraction_result(member_hits=8, held_out_hits=1), exposed_canaries(n=12),
            random_canaries(m=80)]


@pytest.fixture(scope="module")
def memorisation_report(tmp_path_factory, memorisation):
    from privaudit.report import build_report

    out = tmp_path_factory.mktemp("memorisation-report")
    build_report(memorisation, out, n_bootstrap=N_BOOTSTRAP, title="tiny lm")
    return out


def _expected_numbers(result) -> dict[str, float]:
    """The reference: the result's own comparisons and exposures, read field by field."""
    if result.check == "extraction":
        return {f"{check}_{side}{end}": float(c[side][key])
                for check, c in result.comparisons.items()
                for side in ("member_mean", "held_out_mean", "difference")
                for end, key in (("", "value"), ("_low", "low"), ("_high", "high"))}
    out = {f"exposure_r{reps}": float(np.median(values))
           for reps, values in result.exposure_by_repetitions().items()}
    if result.epsilon is not None:
        out["epsilon_lower_bound"] = float(result.epsilon.epsilon)
    return out


@pytest.mark.parametrize("source", ["memory", "folder"])
def test_the_trackers_log_extraction_rates_with_intervals_and_exposures(
        memorisation, memorisation_report, source):
    audit = memorisation if source == "memory" else memorisation_report
    items = tracking_items(read_audit(audit, n_bootstrap=N_BOOTSTRAP))
    prefixes = ["tiny-lm/extraction", "tiny-lm/canaries", "tiny-lm/canaries-2"]
    for result, prefix in zip(memorisation, prefixes, strict=True):
        for name, value in _expected_numbers(result).items():
            assert same_number(items.metrics[f"{prefix}/{name}"], value), (prefix, name)
    assert "privaudit.not_logged" not in items.tags


def test_mlflow_holds_the_memorisation_numbers(memorisation_report, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    from privaudit.integrations import log_mlflow

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    store = f"file:{tmp_path / 'mlruns'}"
    run = mlflow.MlflowClient(store).get_run(log_mlflow(memorisation_report,
                                                        tracking_uri=store))
    rates = run.data.metrics
    difference = extraction_result().comparisons["k-extractability"]["difference"]
    assert rates["tiny-lm/extraction/k-extractability_difference_low"] == pytest.approx(
        difference["low"])
    assert rates["tiny-lm/canaries/exposure_r16"] > rates["tiny-lm/canaries/exposure_r1"]


def _front_matter(card: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", card, flags=re.S)
    assert match, "the card opens with YAML front matter"
    return yaml.safe_load(match.group(1))


def test_the_card_shows_extraction_rates_exposures_and_the_canaries_bound(
        memorisation, memorisation_report):
    card = model_card(memorisation_report, claimed_epsilon=0.5)
    (model,) = _front_matter(card)["model-index"]
    (entry,) = [r for r in model["results"] if r["task"]["type"] == "memorisation"]
    logged = {m["type"]: m["value"] for m in entry["metrics"]
              if " of extraction on tiny-lm" in m["name"]}
    expected = _expected_numbers(memorisation[0])
    assert set(logged) == set(expected)
    assert all(same_number(logged[name], value) for name, value in expected.items())
    body = card.split("\n---\n", 1)[1]
    rate = memorisation[0].comparisons["k-extractability"]["member_mean"]
    assert (f"| tiny-lm | extraction | k-extractability\\_member\\_mean | "
            f"{rate['value']:.4g} | \\[{rate['low']:.4g}, {rate['high']:.4g}\\] |") in body
    assert "| tiny-lm | canaries | exposure\\_r16 |" in body
    bound = memorisation[2].epsilon.epsilon
    assert f"| tiny-lm | canaries | {bound:.4g} | 0.5 |" in body


def _one_of_each_type() -> list:
    rng = np.random.default_rng(0)
    closeness = ProximityResult("dcr", "quantile", synthetic=rng.uniform(0, 1, 60),
                                baseline=rng.uniform(0, 1, 60), target="synthetic")
    return [*audit_results(), attribute_result(), closeness, extraction_result(),
            random_canaries()]


def test_every_registered_result_type_is_logged_and_carded_or_named():
    results = _one_of_each_type()
    assert {type(r).RESULT_TYPE for r in results} == set(RESULT_TYPES), (
        "a result type was added: log and card it (or name it as left out), and add it here")
    summary = read_audit(results, n_bootstrap=N_BOOTSTRAP)
    items = tracking_items(summary)
    not_logged = items.tags.get("privaudit.not_logged", "")
    card = model_card(results, n_bootstrap=N_BOOTSTRAP)
    for result, prefix in zip(summary.results, result_prefixes(summary.results), strict=True):
        logged = any(key.startswith(prefix + "/") for key in items.metrics)
        assert logged or prefix in not_logged, prefix
        rows = [f"| {markdown_escape(result.target)} | {markdown_escape(result.attack)} | "
                f"{markdown_escape(metric)} |" for metric in headline(result)]
        named = f"- {markdown_escape(result.attack)} on {markdown_escape(result.target)}"
        assert (rows and all(row in card for row in rows)) or named in card, prefix
    carded = {type(r).RESULT_TYPE for r, s in zip(results, summary.results, strict=True)
              if headline(s)}
    assert carded == set(RESULT_TYPES)   # today every type has a headline number
