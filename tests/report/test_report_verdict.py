import math

import numpy as np
import pytest

from privaudit.report._verdict import LIFT_SCALE, attack_verdict, target_verdict
from privaudit.results import AttackResult

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


def _m(auc, auc_ci, tprs):
    return {
        "auc": {"value": auc, "low": auc_ci[0], "high": auc_ci[1]},
        "tpr_at_fpr": {k: {"value": v[0], "low": v[1], "high": v[2]} for k, v in tprs.items()},
    }


def test_low_fpr_identification_outranks_a_modest_auc():
    # The demo's digits LiRA: AUC 0.64, 3% of members at 0.1% FPR (30x a guess).
    v = attack_verdict("lira-online", _m(0.642, (0.61, 0.67),
                                         {"0.001": (0.030, 0.015, 0.045),
                                          "0.01": (0.060, 0.040, 0.080)}))
    assert v.severity == "high"
    assert v.lift == pytest.approx(30.0)
    assert v.fpr == 0.001
    assert "3.0% of members at 0.1% FPR" in v.text and "30x" in v.text


def test_a_high_auc_without_confident_identification_is_capped():
    # AUC 0.90 but the TPR at 0.1% is not distinguishable from the FPR, and 2% at 1% FPR:
    # lift 2 (low), raised one level by the AUC, not to "high".
    v = attack_verdict("loss", _m(0.90, (0.88, 0.92),
                                  {"0.001": (0.004, 0.0, 0.01), "0.01": (0.02, 0.012, 0.03)}))
    assert v.severity == "moderate"
    assert v.fpr == 0.01 and v.lift == pytest.approx(2.0)
    assert "overstates" not in v.text and "on average" in v.text


def test_random_auc_raises_nothing():
    v = attack_verdict("loss", _m(0.52, (0.48, 0.56), {"0.001": (0.001, 0.0, 0.003)}))
    assert v.severity == "minimal"
    assert math.isnan(v.lift)


def test_lift_scale_thresholds_are_inclusive():
    for threshold, level in LIFT_SCALE:
        tpr = threshold * 0.001 * 1.0001
        low = max(tpr * 0.99, 0.001 * 1.00001)  # significant: the interval clears the FPR
        v = attack_verdict("a", _m(0.5, (0.49, 0.51), {"0.001": (tpr, low, tpr)}))
        assert v.severity == level


def test_without_intervals_the_point_estimate_counts():
    v = attack_verdict("a", _m(0.7, (math.nan, math.nan),
                               {"0.001": (0.2, math.nan, math.nan)}))
    assert v.severity == "critical" and v.lift == pytest.approx(200.0)


def test_undefined_when_nothing_was_computed():
    v = attack_verdict("a", _m(math.nan, (math.nan, math.nan), {"0.001": (math.nan,) * 3}))
    assert v.severity == "undefined"


def test_target_verdict_picks_the_strongest_attack():
    weak = attack_verdict("loss", _m(0.9, (0.88, 0.92), {"0.001": (0.001, 0.0, 0.002)}))
    strong = attack_verdict("rmia", _m(0.7, (0.68, 0.72), {"0.001": (0.05, 0.03, 0.07)}))
    assert target_verdict([weak, strong]).attack == "rmia"
    assert target_verdict([]).severity == "undefined"


def test_verdict_on_a_real_result_metrics():
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(2000), np.zeros(2000)].astype(int)
    scores = rng.normal(size=4000)
    scores[:200] += 10  # 10% of members perfectly exposed
    result = AttackResult(labels=labels, scores=scores, attack="toy", target="t")
    v = attack_verdict("toy", result.metrics(n_bootstrap=200, random_state=0))
    assert v.severity == "critical"
    assert v.lift >= 100


def test_html_summary_shows_one_verdict_per_target(tmp_path):
    from privaudit.report import HtmlReport

    rng = np.random.default_rng(1)
    labels = np.r_[np.ones(1500), np.zeros(1500)].astype(int)
    exposed = rng.normal(size=3000)
    exposed[:60] += 8  # 4% of members far out: ~40x a guess at 0.1% FPR, AUC ~0.52
    shifted = rng.normal(size=3000) + 0.9 * labels  # AUC ~0.74, nobody far out
    results = [
        AttackResult(labels=labels, scores=exposed, attack="lira-online", target="digits"),
        AttackResult(labels=labels, scores=rng.normal(size=3000), attack="loss",
                     target="digits"),
        AttackResult(labels=labels, scores=shifted, attack="loss", target="tv16"),
    ]
    report = HtmlReport(results, n_bootstrap=100, random_state=0)
    heads = {item["target"]: item["verdict"] for item in report.target_verdicts()}
    assert heads["digits"].attack == "lira-online"
    assert heads["digits"].severity == "high"
    assert heads["tv16"].severity in ("low", "moderate")
    html = report.render()
    assert html.count('class="reading verdict') == 2
    assert "High leakage" in html
