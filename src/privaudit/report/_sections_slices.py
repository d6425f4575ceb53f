"""The slice and most-exposed-record sections of the HTML report (``extra`` of audits)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from privaudit.metrics import fpr_is_resolvable
from privaudit.report._common import format_fpr, is_inference_result
from privaudit.report._format import cell, fmt, fmt_int, number
from privaudit.report._section import ReportSection, ReportView
from privaudit.results import AttackResult, fpr_key

__all__ = ["ExposedSection", "SlicesSection"]

_SLICE_TYPE_LABELS = {
    "entire": "Entire dataset",
    "class": "Class",
    "correctness": "Prediction",
    "loss_percentile": "Loss percentile",
}
_SLICE_STATUS_LABELS = {
    "too_small": "too few records",
    "one_class": "one class only",
    "empty": "empty",
}
# The TPR column of the slice tables: 1% FPR when the slices have it.
_SLICE_FPR = 0.01


def _row_estimate(row: dict[str, Any], name: str) -> dict[str, float]:
    return {"value": number(row.get(name)), "low": number(row.get(f"{name}_low")),
            "high": number(row.get(f"{name}_high"))}


def _slice_tpr_key(rows: list[dict[str, Any]]) -> tuple[str, float] | None:
    """Column and rate of the TPR shown: 1% FPR if present, else the lowest rate stored."""
    rates = []
    for key in rows[0]:
        if key.startswith("tpr_at_fpr_") and not key.endswith(("_low", "_high")):
            rate = number(key[len("tpr_at_fpr_"):])
            if math.isfinite(rate):
                rates.append((key, rate))
    if not rates:
        return None
    preferred = [kr for kr in rates if kr[0] == f"tpr_at_fpr_{fpr_key(_SLICE_FPR)}"]
    return preferred[0] if preferred else min(rates, key=lambda kr: kr[1])


def _slice_tpr_cell(row: dict[str, Any], tpr: tuple[str, float] | None) -> dict[str, str]:
    """A slice's TPR cell; "unresolvable" when the slice has too few non-members.

    A slice of 40 non-members cannot measure a TPR at 1% FPR (no false positive fits):
    the number would be the TPR at FPR 0 under another name.
    """
    if tpr is None:
        return cell(None)
    n_neg = number(row.get("n_non_members"))
    if math.isfinite(n_neg) and n_neg > 0 and not fpr_is_resolvable(tpr[1], int(n_neg)):
        return {"value": "—", "ci": "unresolvable",
                "title": f"{int(n_neg):,} non-members cannot resolve an FPR of "
                         f"{format_fpr(tpr[1])}."}
    return cell(_row_estimate(row, tpr[0]))


def _valid_rows(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(row, dict) for row in value):
        return None
    return value


def slice_sections(results: Sequence[AttackResult]) -> list[dict[str, Any]]:
    """The per-result slice tables of the page, for results with ``audit.slices``.

    A slice is *highlighted* when the lower end of its AUC interval lies above the upper end
    of the entire dataset's AUC interval (both from the same bootstrap settings): the
    attack separates members from non-members clearly better there than on average.
    Empty slices (e.g. loss percentiles collapsed by tied losses) are counted, not shown.
    """
    sections = []
    for i, result in enumerate(results):
        summary = result.audit.slices
        rows = _valid_rows(summary.rows) if summary is not None else None
        if not rows or not all("slice_type" in row for row in rows):
            continue
        entire = next((row for row in rows if row.get("slice_type") == "entire"), None)
        entire_high = number(entire.get("auc_high")) if entire is not None else math.nan
        tpr = _slice_tpr_key(rows)
        table = []
        n_empty = 0
        for row in rows:
            status = str(row.get("status", "ok"))
            if status == "empty":
                n_empty += 1
                continue
            slice_type = str(row["slice_type"])
            auc = _row_estimate(row, "auc")
            hot = (slice_type != "entire" and status == "ok"
                   and math.isfinite(auc["low"]) and math.isfinite(entire_high)
                   and auc["low"] > entire_high)
            sub = ""
            if slice_type == "loss_percentile":
                low, high = number(row.get("loss_low")), number(row.get("loss_high"))
                if math.isfinite(low) and math.isfinite(high):
                    # + 0.0 turns the -0.0 of a zero loss into 0.0 for display.
                    sub = f"loss {low + 0.0:.3g} – {high + 0.0:.3g}"
            table.append({
                "type": _SLICE_TYPE_LABELS.get(slice_type, slice_type),
                "value": str(row.get("slice_value", "")),
                "sub": sub,
                "n_members": fmt_int(row.get("n_members")),
                "n_non_members": fmt_int(row.get("n_non_members")),
                "status": _SLICE_STATUS_LABELS.get(status, "" if status == "ok" else status),
                "auc": cell(auc),
                "tpr": _slice_tpr_cell(row, tpr),
                "advantage": cell(_row_estimate(row, "advantage")),
                "hot": hot,
                "entire": slice_type == "entire",
            })
        hot_names = [f"{r['type'].lower()} {r['value']}" for r in table if r["hot"]]
        sections.append({
            "anchor": f"slices-{i + 1}",
            "name": result.name,
            "rows": table,
            "n_slices": len(rows),
            "n_scored": sum(str(row.get("status", "ok")) == "ok" for row in rows),
            "n_empty": n_empty,
            "n_hot": len(hot_names),
            "hot_names": hot_names,
            "tpr_header": f"TPR @ {format_fpr(tpr[1])} FPR" if tpr else "TPR",
        })
    return sections


def exposed_sections(results: Sequence[AttackResult]) -> list[dict[str, Any]]:
    """The per-result tables of most exposed records (``audit.slices.most_exposed``)."""
    sections = []
    for i, result in enumerate(results):
        summary = result.audit.slices
        rows = _valid_rows(summary.most_exposed) if summary is not None else None
        if not rows:
            continue
        table = []
        for position, row in enumerate(rows, start=1):
            score = number(row.get("score"))
            rank = number(row.get("rank"))
            table.append({
                # Ties share a rank (1, 1, 3): the list order among them is record order.
                "rank": fmt_int(rank) if math.isfinite(rank) else str(position),
                "record_id": str(row.get("record_id", "—")),
                "score": f"{score:.4g}" if math.isfinite(score) else "—",
                "detection_fpr": fmt(number(row.get("detection_fpr")), 4),
            })
        best = number(rows[0].get("detection_fpr"))
        n_tied = summary.most_exposed_tied
        sections.append({
            "anchor": f"exposed-{i + 1}",
            "name": result.name,
            "rows": table,
            "n_members": f"{result.n_members:,}",
            "best": fmt(best, 4),
            "last": table[-1]["detection_fpr"],
            # More members than listed reach the last detection FPR: the list is cut in a tie.
            "n_tied": f"{n_tied:,}" if n_tied > len(table) else "",
        })
    return sections


def _attack_results(results: Sequence[Any]) -> list[AttackResult]:
    return [r for r in results if is_inference_result(r)]


def slice_bootstrap(results: Sequence[AttackResult]) -> str:
    """How the slice intervals were computed, when all sliced results agree."""
    settings = {
        (r.audit.slices.settings.get("n_bootstrap"), r.audit.slices.settings.get("confidence"))
        for r in results
        if r.audit.slices is not None and r.audit.slices.settings
    }
    if len(settings) != 1:
        return ""
    n_boot, conf = settings.pop()
    if not isinstance(n_boot, int) or not isinstance(conf, float) or n_boot <= 0:
        return ""
    return f"{conf:.0%} bootstrap intervals, {n_boot} resamples stratified by label"


class SlicesSection(ReportSection):
    """Each attack's metrics per slice of the records (``audit.slices``), highlighted."""

    name, title, order = "slices", "Slices", 80

    def applies_to(self, results: Sequence[Any]) -> bool:
        return bool(slice_sections(_attack_results(results)))

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"slice_sections": slice_sections(report.results),
                "slice_bootstrap": slice_bootstrap(report.results)}


class ExposedSection(ReportSection):
    """The members each attack exposes most (``audit.slices.most_exposed``)."""

    name, title, order = "exposed", "Most exposed records", 90

    def applies_to(self, results: Sequence[Any]) -> bool:
        return bool(exposed_sections(_attack_results(results)))

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"exposed_sections": exposed_sections(report.results)}
