"""The report's generator section: generators side by side and DP claims put to the test."""

import numpy as np
import pytest

from privaudit.report import build_report
from privaudit.report._epsilon import effective_epsilon_by_target
from privaudit.report._sections_generator import claim_checks
from privaudit.results import AttackResult


def _result(generator, target, separation, claimed, seed):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(150), np.zeros(150)].astype(int)
    result = AttackResult(labels=labels, scores=separation * labels + rng.normal(0, 1, 300),
                          attack="closest-distance", target=target, generator=generator,
                          dataset="tv16", record_ids=np.arange(300),
                          parameters={"claimed_epsilon": claimed, "n_train_rows": 200,
                                      "n_synthetic_rows": 200, "knowledge": "auxiliary",
                                      "n_shadow_runs": 40, "n_test_runs": 300})
    result.audit.kind = "generator"
    return result


def _results():
    return [_result("leaky", "record 1", 20.0, 1.0, 0), _result("leaky", "record 2", 0.0, 1.0, 1),
            _result("dp", "record 1", 0.0, 1.0, 2), _result("dp", "record 2", 0.0, 1.0, 3),
            _result("plain", "record 1", 1.0, None, 4)]


def test_claims_compare_the_largest_bound_of_each_generator_with_its_claim():
    results = _results()
    frame = effective_epsilon_by_target(results, confidence_levels=(0.95,))
    rows = {row["generator"]: row for row in claim_checks(results, frame, 0.95)}
    assert set(rows) == {"leaky", "dp"}  # "plain" claims nothing
    assert rows["leaky"]["broken"] and rows["leaky"]["target"] == "record 1"
    leaky = frame[(frame.generator == "leaky") & (frame.target == "record 1")]
    assert rows["leaky"]["bound"] == pytest.approx(leaky["epsilon_low"].max())
    assert rows["leaky"]["bound"] > 2.0
    assert not rows["dp"]["broken"] and rows["dp"]["bound"] < 1.0


def test_page_has_the_claims_and_the_generators_side_by_side(tmp_path):
    build_report(_results(), tmp_path, n_bootstrap=50)
    html = (tmp_path / "index.html").read_text()
    section = html.split('id="generator"')[1].split("</section>")[0]
    assert "claim refuted: the generator is not 1.00-DP" in section
    assert section.count("not refuted by these attacks") == 1
    header = section.split('class="generator-compare"')[1].split("</thead>")[0]
    assert [h in header for h in ("leaky", "dp", "plain")] == [True] * 3
    assert section.count("<tr><td class=\"name\">record") == 2  # one row per target, attack
