"""The report's synthetic-data section: closeness checks, fidelity apart from verdicts."""

import json

import numpy as np
import pytest

from privaudit.report import build_report
from privaudit.results import AttackResult, ProximityResult, load_all_results


def _results():
    rng = np.random.default_rng(0)
    holdout = rng.uniform(0.05, 0.4, 300)
    leaky = [
        ProximityResult("exact_matches", "share", synthetic=np.r_[np.ones(60), np.zeros(240)],
                        baseline=np.zeros(300), higher_is_safer=False, target="leaky",
                        extra={"original_duplication_rate": 0.01}),
        ProximityResult("dcr", "quantile", synthetic=np.r_[np.zeros(60), holdout[:240]],
                        baseline=holdout, target="leaky",
                        extra={"closer_to_train_share": {"value": 0.64, "low": 0.6,
                                                         "high": 0.68, "n_per_set": 300}}),
        ProximityResult("nndr", "quantile", synthetic=rng.uniform(0, 1, 300), target="alone"),
    ]
    labels = np.r_[np.ones(200), np.zeros(200)].astype(int)
    fidelity = AttackResult(labels=labels, scores=labels + rng.normal(0, 1, 400),
                            attack="distinguishability", target="leaky",
                            extra={"synthetic_confidence": 0.7, "original_confidence": 0.3})
    fidelity.audit.role = "fidelity"
    return [*leaky, fidelity]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    build_report(_results(), out, n_bootstrap=50)
    return out


def test_page_has_the_closeness_table_and_histograms_and_no_leak_verdict(report):
    html = (report / "index.html").read_text()
    assert 'id="proximity-table"' in html and 'id="fidelity-table"' in html
    assert "closer to the training records than unseen real records are" in html
    assert "undecided: no holdout baseline" in html  # the NNDR without a holdout
    assert html.count("data:image/png;base64") == 2  # DCR and NNDR histograms
    # The distinguisher is fidelity: no membership metrics table, no leakage verdict.
    assert 'id="metrics"' not in html and "leakage" not in html.lower().split(
        'id="synthetic"')[0]


def test_results_json_and_saved_folders_hold_every_result(report):
    doc = json.loads((report / "results.json").read_text())
    assert [e["metric"] for e in doc["proximity"]] == ["exact_matches", "dcr", "nndr"]
    assert doc["proximity"][0]["passed"] is False and doc["proximity"][2]["passed"] is None
    assert doc["fidelity"][0]["attack"] == "distinguishability"
    assert doc["fidelity"][0]["metrics"]["auc"]["value"] > 0.6
    assert all(e["folder"].startswith("results/") for e in doc["proximity"] + doc["fidelity"])
    again = load_all_results(report / "results")
    assert sorted(type(r).__name__ for r in again) == ["AttackResult"] + ["ProximityResult"] * 3
    assert next(r for r in again if isinstance(r, AttackResult)).audit.role == "fidelity"


def test_a_report_rebuilt_from_the_saved_folders_says_the_same(report, tmp_path):
    build_report(load_all_results(report / "results"), tmp_path, n_bootstrap=50)
    first = json.loads((report / "results.json").read_text())
    second = json.loads((tmp_path / "results.json").read_text())
    def by_check(doc):
        return sorted(({k: v for k, v in e.items() if k != "folder"} for e in doc["proximity"]),
                      key=lambda e: (e["target"], e["metric"]))

    assert by_check(first) == by_check(second)
