"""The section of the HTML report for the closeness checks of synthetic data.

One table: each check (exact matches, IMS, DCR, NNDR) on the synthetic rows beside the same
on the holdout rows (real records the generator never saw), both with intervals, and what
the comparison says; the training data's own duplication rate and the closer-to-train share
under it. Then the DCR and NNDR histograms, synthetic rows over holdout rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privaudit.report._common import artefact_name, figure_png, png_data_uri
from privaudit.report._format import cell, fmt
from privaudit.report._interpret import closeness_reading, fidelity_reading
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import severity_label
from privaudit.results import AttackResult, ProximityResult, result_type_of

__all__ = ["SyntheticSection", "fidelity_row", "proximity_row"]

CHECK_LABELS = {"exact_matches": "Exact matches", "ims": "Identical match share (IMS)",
                "dcr": "Distance to closest record (DCR)",
                "nndr": "Nearest-neighbour distance ratio (NNDR)",
                "text_memorization": "Closest training text (1 - cosine similarity)"}


def proximity_row(result: ProximityResult) -> dict[str, Any]:
    """The cells of one check: synthetic value, holdout value, verdict, notes."""
    share = result.statistic == "share"
    scale = 100.0 if share else 1.0
    unit = "%" if share else ""

    def scaled(estimate: Any) -> dict[str, str]:
        if estimate is None:
            return cell(None)
        return cell({k: v * scale for k, v in estimate._asdict().items()},
                    digits=1 if share else 3)

    words, css = closeness_reading(result.verdict)
    notes = []
    dup = result.original_duplication_rate
    if dup is not None:
        notes.append(f"training rows duplicated within the training data: {fmt(100 * dup, 1)}%")
    closer = result.closer_to_train_share
    if closer:
        notes.append(f"synthetic rows closer to training than to holdout rows: "
                     f"{fmt(100 * closer['value'], 1)}% [{fmt(100 * closer['low'], 1)}, "
                     f"{fmt(100 * closer['high'], 1)}] (50% without copying)")
    return {
        "target": result.target or "—",
        "check": CHECK_LABELS.get(result.metric, result.metric),
        "statistic": (f"share of rows ({unit})" if share
                      else f"{result.quantile:.0%} quantile (higher is safer)"),
        "synthetic": scaled(result.value()), "holdout": scaled(result.baseline_value()),
        "verdict": words, "css": css, "notes": notes,
        "n": f"{result.synthetic.size:,}" + (
            "" if result.baseline is None else f" / {result.baseline.size:,}"),
    }


def fidelity_row(result: AttackResult, metrics: dict[str, Any],
                 threshold: float = 0.70) -> dict[str, Any]:
    """The cells of a distinguisher: its AUC, the groups' mean confidences, the reading."""
    auc = metrics["auc"]
    reading, css = fidelity_reading(auc, threshold)
    return {
        "target": result.target or "—", "auc": cell(auc),
        # getattr: a result-like stand-in without the typed details shows no confidence.
        "synthetic_confidence": fmt(getattr(result, "synthetic_confidence", None)),
        "original_confidence": fmt(getattr(result, "original_confidence", None)),
        "reading": reading, "css": css,
        "n": f"{result.n_members:,} / {result.n_non_members:,}",
    }


#: Severity of a closeness verdict: rows closer to the training records than unseen real
#: rows are copied or memorised (high); no closer is nothing measured (minimal); an
#: undecided comparison (overlapping intervals, no holdout) is undefined.
CLOSENESS_SEVERITY = {"closer": "high", "not closer": "minimal", "overlap": "undefined",
                      "no holdout": "undefined"}
#: Badge text of a closeness verdict: what was measured, not a membership "leakage".
CLOSENESS_LABEL = {"closer": "Closer than unseen rows", "not closer": "No closer than unseen rows",
                   "overlap": "Undecided", "no holdout": "Undecided"}


def proximity_finding(result: ProximityResult) -> Finding:
    """The finding of one closeness check (severity from :data:`CLOSENESS_SEVERITY`)."""
    row = proximity_row(result)
    severity = CLOSENESS_SEVERITY[result.verdict]
    synthetic, holdout = row["synthetic"], row["holdout"]
    return Finding(
        artefact=artefact_name(result), kind="synthetic", severity=severity,
        label=CLOSENESS_LABEL[result.verdict], attack=row["check"],
        metric=f"{row['check']}: {synthetic['value']} (holdout {holdout['value']})",
        interval=synthetic["ci"], text=f"Synthetic rows are {row['verdict']}.",
        section="synthetic", strength=0.0)


def fidelity_finding(result: AttackResult, metrics: dict[str, Any]) -> Finding | None:
    """The finding of a distinguisher whose AUC is an artefact (below chance), else None.

    Fidelity is not leakage: an ordinary distinguisher AUC gives no finding for the
    overview. One wholly below chance is a flaw of the audit (duplicates across the
    split, copied rows) and is reported as ``artefact``.
    """
    row = fidelity_row(result, metrics)
    if row["css"] != "artefact":
        return None
    return Finding(artefact=artefact_name(result), kind="synthetic", severity="artefact",
                   label=severity_label("artefact"), attack=result.attack or "distinguisher",
                   metric=f"distinguisher AUC {row['auc']['value']}",
                   interval=row["auc"]["ci"], text=f"Distinguisher {row['reading']}.",
                   section="synthetic", strength=0.0)


class SyntheticSection(ReportSection):
    """Closeness of synthetic rows to the training rows, beside unseen real rows."""

    name, title, order = "synthetic", "Synthetic data", 44

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(result_type_of(r) == "proximity" or (
            result_type_of(r) == "attack" and r.audit.role == "fidelity") for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        from privaudit.report._plots import closeness_figure

        near = report.proximity_results
        figures = [{"title": r.name, "src": png_data_uri(figure_png(closeness_figure(r),
                                                                     dpi=100))}
                   for r in near if r.statistic == "quantile"]
        return {"proximity_rows": [proximity_row(r) for r in near],
                "fidelity_rows": [fidelity_row(r, m) for r, m in zip(
                    report.fidelity_results, report.fidelity_metrics, strict=True)],
                "proximity_figures": figures,
                "proximity_findings": sorted({f.message for r in near
                                              for f in r.audit.findings})}

    def findings(self, report: ReportView) -> list[Finding]:
        """One finding per closeness check; distinguishers only when an artefact."""
        found = [proximity_finding(r) for r in report.proximity_results]
        fidelity = (fidelity_finding(r, m) for r, m in zip(
            report.fidelity_results, report.fidelity_metrics, strict=True))
        return found + [f for f in fidelity if f is not None]
