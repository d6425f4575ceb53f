"""The report's generator section: generators side by side and DP claims put to the test."""

import numpy as np
import pytest

from privaudit.metrics import effective_epsilon_lower_bound
from privaudit.report import build_report
from privaudit.report._sections_generator import claim_checks
from privaudit.results import AttackResult

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


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


def test_claims_compare_the_largest_corrected_bound_of_each_generator_with_its_claim():
    results = _results()
    rows = {row["generator"]: row for row in claim_checks(results, confidence=0.95)}
    assert set(rows) == {"leaky", "dp"}  # "plain" claims nothing
    leaky = rows["leaky"]
    assert leaky["broken"] and leaky["target"] == "record 1"
    assert leaky["attack"] == "closest-distance"
    # Two targets x one attack: each bound at 1 - 0.05 / 2, the headline is the largest.
    assert leaky["correction"] == "Bonferroni" and leaky["n_bounds"] == 2
    assert leaky["level"] == pytest.approx(0.975)
    assert leaky["bound"] == max(b["bound"] for b in leaky["bounds"]) > 2.0
    (alone,) = effective_epsilon_lower_bound(
        results[0].labels, results[0].scores, validation_split=0.1,
        confidence_levels=(0.975,), random_state=0)
    assert leaky["bound"] == pytest.approx(alone.epsilon_low)
    assert not rows["dp"]["broken"] and rows["dp"]["bound"] < 1.0


def _mechanism_results(rng, epsilon, n_targets, attacks, n_runs=200):
    """Results of an epsilon-DP mechanism: what any attack can see of one membership bit.

    Each test run's label is whether the target trained it; an attack sees the bit
    through randomized response (kept with probability e^eps / (1 + e^eps)) or through
    the Laplace mechanism (the bit plus Laplace noise of scale 1 / eps). Both are exactly
    eps-DP, so any valid bound exceeds eps only by chance.
    """
    labels = np.r_[np.ones(n_runs // 2), np.zeros(n_runs // 2)].astype(int)
    keep = np.exp(epsilon) / (1 + np.exp(epsilon))
    out = []
    for t in range(n_targets):
        for attack in attacks:
            if attack == "randomized-response":
                scores = np.where(rng.random(n_runs) < keep, labels, 1 - labels)
            else:
                scores = labels + rng.laplace(0.0, 1.0 / epsilon, n_runs)
            result = AttackResult(labels=labels, scores=scores.astype(float),
                                  attack=attack, target=f"record {t}", generator="dp",
                                  record_ids=np.arange(n_runs),
                                  parameters={"claimed_epsilon": epsilon})
            result.audit.kind = "generator"
            out.append(result)
    return out


def _refutation_rate(true_epsilon, claimed, n_audits, seed):
    rng = np.random.default_rng(seed)
    refuted = 0
    for audit in range(n_audits):
        results = _mechanism_results(rng, true_epsilon, 5, ("randomized-response", "laplace"))
        for r in results:
            r.parameters["claimed_epsilon"] = claimed
        (row,) = claim_checks(results, confidence=0.95, random_state=audit)
        assert row["n_bounds"] == 10 and row["level"] == pytest.approx(0.995)
        refuted += row["broken"]
    return refuted / n_audits


def test_a_dp_mechanism_is_refuted_at_most_at_the_nominal_rate():
    """Five targets x two attacks: 200 audits of an exactly 1-DP mechanism claiming 1.

    The headline is the largest of ten bounds: each at 1 - 0.05 / 10, so that a true
    claim is refuted in at most 5% of audits (the union bound).
    """
    assert _refutation_rate(1.0, 1.0, 200, seed=19) <= 0.05


def test_the_correction_keeps_the_power_to_refute_a_false_claim():
    """A 3-DP mechanism claiming 1 is still refuted in nearly every audit."""
    assert _refutation_rate(3.0, 1.0, 30, seed=20) >= 0.9


def test_page_has_the_claims_and_the_generators_side_by_side(tmp_path):
    build_report(_results(), tmp_path, n_bootstrap=50)
    html = (tmp_path / "index.html").read_text()
    section = html.split('id="generator"')[1].split("</section>")[0]
    assert "claim refuted: the generator is not 1.00-DP" in section
    assert section.count("not refuted by these attacks") == 1
    header = section.split('class="generator-compare"')[1].split("</thead>")[0]
    assert [h in header for h in ("leaky", "dp", "plain")] == [True] * 3
    compare = section.split('class="generator-compare"')[1].split("</table>")[0]
    assert compare.count("<tr><td class=\"name\">record") == 2  # one row per target, attack
    # The correction has its own column, and every bound behind the headline is listed.
    claims = section.split('class="generator-claims"')[1].split("</table>")[0]
    assert "<th>Correction</th>" in claims
    assert claims.count("largest of 2 target × attack bounds, Bonferroni: each at 97.50%") == 2
    bounds = section.split('class="generator-bounds"')
    assert len(bounds) == 3  # one list per generator with a claim
    assert all(b.split("</table>")[0].count("<tr><td class=\"name\">record") == 2
               for b in bounds[1:])
    assert "picks the attack" not in section
