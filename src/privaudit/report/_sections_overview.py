"""The overview that opens the report: one answer per audited artefact, then the details.

A reviewer should not scroll through every table to learn whether an artefact leaks: the
page opens with one row per artefact (a model, a synthetic table with its generator, an
unlearned model...), its strongest finding the data can support, with the attack, the
metric and its interval, and a link to the section with the details. The findings come
from the sections themselves (:meth:`ReportSection.findings`); this section only orders
and shows them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import LEVELS, severity_rank

__all__ = ["NOTE_LABELS", "OverviewSection", "overview_rows"]

#: The badge of a finding that is not a leakage level. Such a finding is shown beside the
#: artefact's answer, and is the answer only when nothing was measured at a level.
NOTE_LABELS: dict[str, str] = {
    "baseline": "Baseline",
    "artefact": "Audit artefact",
    "undefined": "Undefined",
}


def _finding_cells(finding: Finding) -> dict[str, str]:
    """What the overview shows of one finding (its badge, attack, number, link...)."""
    label = finding.label or dict(LEVELS).get(finding.severity) or NOTE_LABELS.get(
        finding.severity, finding.severity)
    return {"severity": finding.severity, "label": label, "attack": finding.attack or "—",
            "metric": finding.metric or "—", "interval": finding.interval, "text": finding.text,
            "section": finding.section}


def overview_rows(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """One row per artefact (first-seen order): its answer and the notes beside it.

    The answer is the strongest finding at a leakage level (:data:`LEVELS`), by severity
    then ``strength``. Findings that are not a level (``baseline``: evidence about the data
    split; ``artefact``: a flaw of the audit; ``undefined``) never stand in for a measured
    level; they are listed as notes, and one of them is the answer only when the artefact
    has no measured level at all. Each row also counts the findings it summarises.
    """
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.artefact, []).append(finding)
    rows = []
    for artefact, group in groups.items():
        levels = [f for f in group if severity_rank(f.severity) >= 0]
        pool = levels or group
        answer = max(pool, key=lambda f: (severity_rank(f.severity), _strength(f)))
        notes = [f for f in group if severity_rank(f.severity) < 0 and f is not answer]
        rows.append({"artefact": artefact, "answer": _finding_cells(answer),
                     "notes": [_finding_cells(f) for f in _first_per_kind(notes)],
                     "n_findings": len(group)})
    return rows


def _strength(finding: Finding) -> float:
    strength = float(finding.strength)
    return strength if strength == strength and abs(strength) != float("inf") else 0.0


def _first_per_kind(notes: Sequence[Finding]) -> list[Finding]:
    """The strongest note of each (severity, attack): ten baseline runs are one note."""
    best: dict[tuple[str, str], Finding] = {}
    for note in notes:
        key = (note.severity, note.attack)
        if key not in best or _strength(note) > _strength(best[key]):
            best[key] = note
    return list(best.values())


class OverviewSection(ReportSection):
    """One answer per audited artefact, in a short table, before every other section.

    Shown when at least one section judged the results (registered a :class:`Finding`).
    """

    name, title, order = "overview", "Overview", 5
    fold = "open"

    def applies_to(self, results: Sequence[Any]) -> bool:
        return bool(results)

    def shown(self, report: ReportView) -> bool:
        return bool(report.findings)

    def context(self, report: ReportView) -> dict[str, Any]:
        rows = overview_rows(report.findings)
        return {"overview_rows": rows,
                "overview_counts": _counts(rows)}


def _counts(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """How many artefacts got each answer, worst first (the line above the table)."""
    order = [key for key, _ in LEVELS] + list(NOTE_LABELS)
    counts: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        answer = row["answer"]
        severity = answer["severity"]
        # The answer's own words: a closeness check's "Closer than unseen rows" is not
        # counted as "high leakage" (its severity is only the colour).
        label = answer.get("label") or dict(LEVELS).get(severity) or NOTE_LABELS.get(
            severity, severity)
        entry = counts.setdefault((severity, label),
                                  {"severity": severity, "label": label, "n": 0})
        entry["n"] += 1
    return sorted(counts.values(), key=lambda c: order.index(c["severity"])
                  if c["severity"] in order else len(order))
