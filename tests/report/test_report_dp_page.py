"""The whole page with DP-training results (needs report/_html.py to group them: the patch)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.metrics import canary_epsilon_lower_bound
from privaudit.report import AuditReport, build_report
from privaudit.results import AttackResult, AuditInfo, DPAuditResult, load_all_results

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


def _result(signal: float, target: str) -> DPAuditResult:
    rng = np.random.default_rng(0)
    included = rng.random((1, 300)) < 0.5
    scores = signal * included + rng.normal(size=(1, 300))
    bounds = [{"steinke": canary_epsilon_lower_bound(scores[0][included[0]],
                                                     scores[0][~included[0]], delta=1e-5,
                                                     two_sided=True)}]
    return DPAuditResult(canary_ids=[f"c{i}" for i in range(300)], scores=scores,
                         included=included, claimed_epsilon={"rdp": 1.0}, delta=1e-5,
                         bounds=bounds, attack="canaries", target=target,
                         canaries="dirac-gradient", audit=AuditInfo(kind="dp"))


def test_the_page_and_the_audit_report_read_dp_results_beside_attacks(tmp_path):
    refuted, kept = _result(8.0, "no-dp"), _result(0.0, "dp")
    attack = AttackResult(labels=np.r_[np.ones(50), np.zeros(50)],
                          scores=np.random.default_rng(1).normal(size=100), target="model",
                          attack="loss")
    report = AuditReport([refuted, kept], kind="dp", func="audit_dp_training")
    assert report.verdict.label == "Claim refuted" and report.verdict.artefact == "no-dp"
    index = build_report([refuted, kept, attack], tmp_path / "out", n_bootstrap=0)
    html = index.read_text()
    assert 'id="dp"' in html and "Claim refuted" in html
    assert "Consistent with the claim" in html
    saved = load_all_results(tmp_path / "out")
    assert sorted(r.result_type for r in saved) == ["attack", "dp", "dp"]
    again = build_report(saved, tmp_path / "again", n_bootstrap=0)
    assert 'id="dp"' in again.read_text()
    frame = report.to_frame(n_bootstrap=0)
    assert list(frame["epsilon_lower_bound"] > 1.0) == [True, False]


def test_audit_dp_writes_the_report_of_a_configuration(tmp_path):
    import pandas as pd
    import yaml
    from typer.testing import CliRunner

    from privaudit.cli import app

    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.normal(size=150), "b": rng.choice(["x", "y"], 150),
                  "label": rng.integers(0, 2, 150)}).to_csv(tmp_path / "t.csv", index=False)
    config = {"dataset": {"path": "t.csv", "label_column": "label"},
              "recipe": {"noise_multiplier": 0.0, "epochs": 1, "sample_rate": 0.2,
                         "hidden": [16], "accountants": ["rdp"]},
              "claimed_epsilon": 1.0, "delta": 1e-5,
              "canaries": {"kind": "dirac-gradient", "n": 60},
              "report": {"out": "out", "n_bootstrap": 0}}
    (tmp_path / "dp.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(app, ["audit", "dp", "--config", str(tmp_path / "dp.yaml")])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "out" / "index.html").read_text()
    assert 'id="dp"' in html and ("Claim refuted" in html or "Consistent" in html)
    assert len(list((tmp_path / "out" / "results").rglob("dp_audit.json"))) == 1
