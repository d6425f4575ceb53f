"""The section of the HTML report for attribute inference on a model (:class:`AttributeResult`).

One row per attack: accuracy on members and on non-members, Yeom et al.'s attribute
advantage (Definition 5) and the advantage over the best model-free simulator
(Definition 6), each with its interval, the theory's prediction when the audit computed
one; then, per result, the accuracy per candidate value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privaudit.report._common import artefact_name
from privaudit.report._format import cell, fmt, fmt_int
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import severity_label, share_level
from privaudit.results import AttributeResult, result_type_of

__all__ = ["AttributeSection", "attribute_row"]

#: Most candidate values listed per result (a pixel has 17, a grid up to 256).
_MAX_VALUES = 30


def attribute_row(result: AttributeResult) -> dict[str, Any]:
    """The cells of one attribute result."""
    best = result.best_model_free
    theory = result.theory or {}
    check = result.audit.baseline
    return {
        "target": result.target or "—", "attack": result.attack or "—",
        "attribute": result.sensitive_attribute or "—",
        "n_values": fmt_int(len(result.candidates)),
        "approximate": None if result.alpha is None else fmt(result.alpha),
        "n_members": fmt_int(result.n_members),
        "n_non_members": fmt_int(result.n_non_members),
        "accuracy_members": cell(result.accuracy()._asdict()),
        "accuracy_non_members": cell(result.accuracy(members=False)._asdict()),
        "advantage": cell(result.advantage()._asdict()),
        "simulator": best or "—",
        "simulator_accuracy": cell(None if best is None else
                                   result.model_free_accuracy(best, members=False)._asdict()),
        "simulator_advantage": cell(result.simulator_advantage()._asdict()),
        "predicted": None if not theory else fmt(theory.get("predicted_advantage")),
        "beats_model_free": None if check is None else check.passed,
    }


def value_rows(result: AttributeResult) -> list[dict[str, Any]]:
    """Accuracy per true candidate value (the most common values first, at most 30)."""
    rows = sorted(result.per_value(), key=lambda r: -(r["n_members"] + r["n_non_members"]))
    return [{"value": str(r["value"]), "n_members": fmt_int(r["n_members"]),
             "n_non_members": fmt_int(r["n_non_members"]),
             "accuracy_members": cell(r["accuracy_members"]._asdict()),
             "accuracy_non_members": cell(r["accuracy_non_members"]._asdict())}
            for r in rows[:_MAX_VALUES]]


def attribute_finding(result: AttributeResult) -> Finding:
    """The finding of an attribute result: its advantage over the best model-free guess.

    Yeom et al.'s Definition 6 isolates what the model adds to what the population
    already tells; the lower end of its interval is read on
    :data:`~privaudit.report._verdict.SHARE_SCALE` (``minimal`` when it reaches 0).
    """
    advantage = result.simulator_advantage()
    severity = share_level(advantage.low, advantage.value)
    row = attribute_row(result)
    return Finding(
        artefact=artefact_name(result), kind="attribute", severity=severity,
        label=severity_label(severity), attack=result.attack or "—",
        metric=f"advantage over a model-free guess {row['simulator_advantage']['value']}",
        interval=row["simulator_advantage"]["ci"],
        text=(f"{result.attack or 'the attack'} guesses {row['attribute']} with an advantage "
              f"of {row['simulator_advantage']['value']} {row['simulator_advantage']['ci']} "
              f"over the best model-free guess ({row['simulator']})."),
        section="attribute",
        strength=advantage.value if advantage.value == advantage.value else 0.0)


class AttributeSection(ReportSection):
    """Attribute inference: guesses on members and non-members beside model-free guesses."""

    name, title, order = "attribute", "Attribute inference", 42

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(result_type_of(r) == "attribute" for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        results = report.attribute_results
        return {"attribute_rows": [attribute_row(r) for r in results],
                "attribute_values": [{"name": r.name, "attribute": r.sensitive_attribute,
                                      "rows": value_rows(r)} for r in results]}

    def findings(self, report: ReportView) -> list[Finding]:
        """One finding per attribute result (:func:`attribute_finding`)."""
        return [attribute_finding(r) for r in report.attribute_results]
