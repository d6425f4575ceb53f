"""The attribute-inference section of the report, and attribute results beside others."""

import json

import numpy as np

from privaudit.report import build_report
from privaudit.results import AttackResult, AttributeResult, BaselineCheck


def _attribute(attack="model-inversion", theory=None):
    truth = np.array([0, 1] * 10)
    guesses = truth.copy()
    guesses[12:18] = 1 - truth[12:18]  # 6 non-member misses: 10/10 vs 4/10
    result = AttributeResult(candidates=["f", "m"], guesses=guesses, truth=truth,
                             members=np.r_[np.ones(10), np.zeros(10)].astype(int),
                             posteriors=np.full((20, 2), 0.5),
                             model_free={"prior": np.zeros(20, dtype=int)}, attack=attack,
                             target="model", sensitive_attribute="sex",
                             extra={"theory": theory} if theory else {})
    result.audit.baseline = BaselineCheck(name="model-free", passed=attack != "direct")
    return result


def test_the_section_shows_both_advantages_and_the_values(tmp_path):
    results = [_attribute(theory={"predicted_advantage": 0.25}), _attribute("direct")]
    index = build_report(results, tmp_path, n_bootstrap=0)
    html = index.read_text()
    assert 'id="attribute"' in html and 'id="attribute-table"' in html
    assert "0.600" in html          # Definition 5: 1.0 - 0.4
    assert "Theorem 5" in html and "0.250" in html
    assert "no better than a model-free guess" in html  # the direct attack's check failed
    assert "accuracy per value of sex" in html
    doc = json.loads((tmp_path / "results.json").read_text())
    assert [e["attack"] for e in doc["attributes"]] == ["model-inversion", "direct"]
    assert doc["attributes"][0]["metrics"]["advantage"]["value"] == 0.6
    assert doc["results"] == []


def test_attribute_results_beside_membership_results(tmp_path):
    member = AttackResult(labels=np.r_[np.ones(20), np.zeros(20)],
                          scores=np.linspace(0, 1, 40), attack="loss", target="model")
    index = build_report([member, _attribute()], tmp_path, n_bootstrap=0)
    html = index.read_text()
    assert 'id="attribute"' in html and 'id="metrics"' in html
    doc = json.loads((tmp_path / "results.json").read_text())
    assert len(doc["results"]) == 1 and len(doc["attributes"]) == 1
    folders = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(folders) == 2


def test_one_vs_rest_results_feed_tapas_aia_report():
    from privaudit.report import AIAttackReport

    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 60)
    posteriors = rng.dirichlet(np.ones(3), 60)
    posteriors[np.arange(60), truth] += 1.0  # an informative attack
    posteriors /= posteriors.sum(1, keepdims=True)
    result = AttributeResult(candidates=["a", "b", "c"], guesses=posteriors.argmax(1),
                             truth=truth, members=np.r_[np.ones(40), np.zeros(20)].astype(int),
                             posteriors=posteriors, attack="direct", target="model",
                             sensitive_attribute="s")
    report = AIAttackReport(result.to_attack_results(), n_bootstrap=0)
    table = report.metrics_frame()
    assert len(table) == 3  # one row per candidate value, on the members
    assert set(table["sensitive_attribute"]) == {"s"}
    assert (table["n_members"] + table["n_non_members"] == 40).all()
    assert (table["auc"] > 0.9).all()  # the true value always has the highest belief
