"""The section of the HTML report for count-based risks (:class:`RiskResult`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privaudit.report._common import artefact_name
from privaudit.report._format import cell, fmt_int
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import severity_label, share_level
from privaudit.results import RiskResult, result_type_of

__all__ = ["RiskSection"]


#: Badge text of a risk's level: a re-identification risk, worded as such.
RISK_LABELS = {"critical": "Severe risk", "high": "High risk", "moderate": "Moderate risk",
               "low": "Low risk", "minimal": "No risk measured"}


def risk_row(risk: RiskResult) -> dict[str, Any]:
    """The cells of one risk result: counts, the three rates and the residual risk."""
    control = risk.control_rate
    return {
        "target": risk.target or "—",
        "attack": risk.attack or "—",
        "kind": risk.kind,
        "n_attacks": fmt_int(risk.n_attacks),
        "attack_rate": cell(risk.attack_rate._asdict()),
        "baseline_rate": cell(risk.baseline_rate._asdict()),
        "control_rate": cell(None if control is None else control._asdict()),
        "risk": cell(risk.risk()._asdict()),
        "risk_label": "residual risk" if control is not None else "attack success rate",
        "better_than_baseline": risk.better_than_baseline,
        "confidence": f"{risk.confidence:.0%}",
    }


class RiskSection(ReportSection):
    """Attack, baseline and control success rates and anonymeter's residual risk."""

    name, title, order = "risks", "Risks", 45

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(result_type_of(r) == "risk" for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"risk_rows": [risk_row(r) for r in report.risk_results]}

    def findings(self, report: ReportView) -> list[Finding]:
        """One finding per risk: its level from the lower end of the risk's interval.

        The residual risk (or the attack's success rate without a control) is read on
        :data:`~privaudit.report._verdict.SHARE_SCALE`; an attack no better than its baseline is
        ``minimal`` (anonymeter's sanity check failed: nothing is measured). Without a
        control set the finding is ``undefined`` ("No control set"): a success rate is no
        residual risk.
        """
        out = []
        for risk in report.risk_results:
            row, estimate = risk_row(risk), risk.risk()
            severity = (share_level(estimate.low, estimate.value)
                        if risk.better_than_baseline else "minimal")
            label = RISK_LABELS.get(severity, severity_label(severity))
            if risk.control_rate is None:
                # Without control records the success rate includes what the attack
                # guesses from the population alone (an independent table "links" 0.66
                # of its targets): no level can be read from it (Giomi et al., Sec. 4).
                severity, label = "undefined", "No control set"
            out.append(Finding(
                artefact=artefact_name(risk), kind="synthetic", severity=severity,
                label=label,
                attack=risk.attack or risk.kind,
                metric=f"{row['risk_label']} {row['risk']['value']}",
                interval=row["risk"]["ci"],
                text=(f"{risk.attack or risk.kind}: {row['risk_label']} "
                      f"{row['risk']['value']} {row['risk']['ci']}"
                      + ("" if risk.better_than_baseline
                         else "; the attack does no better than its baseline")
                      + ("; no control records (a holdout) to subtract what it guesses "
                         "from the population alone, so this is not a residual risk"
                         if risk.control_rate is None else "")),
                section=self.name,
                strength=estimate.value if estimate.value == estimate.value else 0.0))
        return out
