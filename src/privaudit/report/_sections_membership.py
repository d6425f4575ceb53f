"""The sections of the HTML report for membership (and attribute) inference results."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privaudit.report._binary import sensitive_attribute
from privaudit.report._common import (
    PREDICTION_METRICS,
    artefact_name,
    format_fpr,
    is_inference_result,
    metric_label,
    png_data_uri,
)
from privaudit.report._epsilon import epsilon_section_context
from privaudit.report._format import EPSILON_DIGITS, cell, fmt
from privaudit.report._interpret import AUC_SCALE
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import Verdict
from privaudit.results import fpr_key

__all__ = [
    "EpsilonSection",
    "HistogramSection",
    "MethodsSection",
    "MetricsSection",
    "PredictionsSection",
    "ReadingSection",
    "RocSection",
    "SummarySection",
]


class _AttackSection(ReportSection):
    """A section shown whenever there is at least one attack result (scores and labels)."""

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(is_inference_result(r) for r in results)


def epsilon_cell(headline: dict[str, Any], confidence: float) -> dict[str, str]:
    """The headline-epsilon cell: the bound, or an em dash with the reason."""
    value = headline["value"]
    if math.isnan(value):
        reason = headline["note"]
        short = "not valid: scored out of fold" if "out of fold" in reason else "not computed"
        return {"value": "—", "ci": short, "title": reason}
    return {"value": fmt(value, EPSILON_DIGITS), "ci": "",
            "title": f"Clopper–Pearson lower bound at {confidence:.0%} (Jagielski et al.)"}


def tpr_cell(metrics: dict[str, Any], fpr: float) -> dict[str, str]:
    """The TPR at ``fpr`` with its interval, or "unresolvable" when the sample cannot tell.

    A rate below ``1 / n_non_members`` admits no false positive: the number there would
    be the TPR at FPR 0 printed under another rate, so it is not shown.
    """
    key = fpr_key(fpr)
    resolvable = (metrics.get("fpr_resolution") or {}).get("resolvable", {}).get(key, True)
    n_neg = metrics.get("n_non_members") or 0
    if not resolvable and fpr > 0 and n_neg > 0:  # no non-member: the TPR is NaN anyway
        return {"value": "—", "ci": "unresolvable",
                "title": f"An FPR of {format_fpr(fpr)} needs at least "
                         f"{math.ceil(1 / fpr):,} non-members; this result has {n_neg:,} "
                         f"(smallest FPR it resolves: {format_fpr(1 / n_neg)})."}
    return cell(metrics["tpr_at_fpr"].get(key))


def metric_rows(report: ReportView) -> list[dict[str, Any]]:
    """One row per attack result: names, counts, metric cells, reading and verdict."""
    rows = []
    for i, (r, m, reading, verdict, eps) in enumerate(zip(
        report.results, report.metric_dicts, report.readings, report.verdicts,
        report.headline_epsilons, strict=True,
    )):
        cells = [cell(m["auc"])]
        cells += [tpr_cell(m, f) for f in report.fprs]
        # One ε per result (issue 20): the headline bound. TAPAS's point estimate is not a
        # bound and stays in metrics.csv / results.json only.
        cells += [cell(m["advantage"]), epsilon_cell(eps, report.confidence)]
        rows.append({
            "anchor": f"result-{i + 1}", "target": r.target or "—", "attack": r.attack or "—",
            "dataset": r.dataset or "—", "generator": r.generator or "",
            "sensitive_attribute": sensitive_attribute(r) or "—", "kind": r.kind,
            "n_members": f"{m['n_members']:,}", "n_non_members": f"{m['n_non_members']:,}",
            "cells": cells, "reading": reading, "verdict": verdict,
            "flag_short": ("worse than random" if reading.random_flag.startswith("Worse")
                           else "no better than random" if reading.random_flag else ""),
            "name": r.name, "auc": cell(m["auc"]),
        })
    return rows


class SummarySection(_AttackSection):
    """One verdict per target from its strongest attack, and a few headline numbers."""

    name, title, order = "summary", "Summary", 10

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"target_verdicts": report.target_verdicts(),
                "summary": summary_cards(report, metric_rows(report))}


def verdict_metric(verdict: Verdict, metrics: dict[str, Any]) -> tuple[str, str, float]:
    """The number a verdict rests on, its interval and its strength (for a Finding).

    A lift: ``"TPR 12.0% at 1% FPR (12x)"`` with the TPR's interval, strength the lift.
    Otherwise the AUC with its interval, strength the AUC.
    """
    if math.isfinite(verdict.lift):
        smallest = (metrics.get("fpr_resolution") or {}).get("smallest") or {}
        estimate = metrics["tpr_at_fpr"].get(fpr_key(verdict.fpr)) or (
            smallest.get("tpr", {}) if smallest.get("fpr") == verdict.fpr else {})
        text = (f"TPR {verdict.tpr:.1%} at {verdict.fpr * 100:.3g}% FPR "
                f"({verdict.lift:.0f}x)")
        low, high = estimate.get("low", math.nan), estimate.get("high", math.nan)
        interval = f"[{low:.1%}, {high:.1%}]" if math.isfinite(low) else ""
        return text, interval, verdict.lift
    auc = metrics["auc"]
    interval = (f"[{fmt(auc['low'])}, {fmt(auc['high'])}]" if math.isfinite(auc["low"])
                else "")
    return f"AUC {fmt(auc['value'])}", interval, auc["value"]


def result_finding(result: Any, metrics: dict[str, Any], verdict: Verdict,
                   section: str) -> Finding:
    """One attack result's :class:`Finding`: its verdict, the number and interval behind it."""
    metric, interval, strength = verdict_metric(verdict, metrics)
    return Finding(artefact=artefact_name(result), kind=result.kind,
                   severity=verdict.severity, label=verdict.label, attack=verdict.attack,
                   metric=metric, interval=interval, text=verdict.text, section=section,
                   strength=strength if math.isfinite(strength) else 0.0)


class MetricsSection(_AttackSection):
    """The metrics table with confidence intervals, the headline ε and the verdicts."""

    name, title, order = "metrics", "Metrics", 20

    def context(self, report: ReportView) -> dict[str, Any]:
        headers = ["AUC", *(f"TPR @ {format_fpr(f)} FPR" for f in report.fprs), "Advantage",
                   f"ε lower bound ({report.confidence:.0%})"]
        return {"headers": headers, "rows": metric_rows(report)}

    def findings(self, report: ReportView) -> list[Finding]:
        """One finding per membership or attribute attack result (LLM results excepted).

        The finding is the result's verdict (:func:`result_verdict`): a leakage level from
        the lift at a resolvable low FPR and the AUC, ``baseline`` for a blind baseline,
        ``artefact`` for an AUC wholly below 0.5, ``undefined`` when not interpretable.
        LLM and unlearning results are their own sections' findings (the unlearning section
        judges each unlearned model against exact retraining, its reference).
        """
        return [result_finding(r, m, v, self.name) for r, m, v in zip(
            report.results, report.metric_dicts, report.verdicts, strict=True)
            if is_inference_result(r) and r.audit.kind not in ("llm", "unlearning")]


class ReadingSection(_AttackSection):
    """A plain-language reading of each AUC and the scale it is read on."""

    name, title, order = "reading", "Reading", 30

    def context(self, report: ReportView) -> dict[str, Any]:
        scale = []
        upper = "1.00"
        for band in AUC_SCALE:
            scale.append({"range": f"{band.low:.2f} – {upper}", "label": band.label,
                          "severity": band.severity,
                          "text": band.text.format(pos="members", neg="non-members",
                                                   Pos="Members")})
            upper = f"{band.low:.2f}"
        return {"rows": metric_rows(report), "scale": scale}


class PredictionsSection(ReportSection):
    """Metrics of the hard member / non-member guesses, for results that have them."""

    name, title, order = "predictions", "Predictions", 40

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(is_inference_result(r) and r.predictions is not None for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        rows = [
            {"target": r.target or "—", "attack": r.attack or "—",
             "cells": [cell(m.get(name)) for name in PREDICTION_METRICS]}
            for r, m in zip(report.results, report.metric_dicts, strict=True)
            if r.predictions is not None
        ]
        return {"prediction_headers": [metric_label(n) for n in PREDICTION_METRICS],
                "prediction_rows": rows}


class _FigureSection(_AttackSection):
    """A section of figures of attack results, those of unlearning audits excepted.

    The unlearning section draws those (:attr:`HtmlReport.figure_indices`).
    """

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(is_inference_result(r) and r.audit.kind != "unlearning"
                   for r in results)


class RocSection(_FigureSection):
    """ROC curves on linear and log-log axes, one figure per audited target."""

    name, title, order = "roc", "ROC curves", 50

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"roc_figures": [{"title": title, "uri": png_data_uri(png)}
                                for title, png in report.roc_groups]}


class HistogramSection(_FigureSection):
    """Member and non-member score histograms, one per result."""

    name, title, order = "histograms", "Score distributions", 60

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"histograms": [
            {"name": _named(report.results[i]), "uri": png_data_uri(png),
             "anchor": f"hist-{i + 1}"}
            for i, png in zip(report.figure_indices, report.histogram_pngs(), strict=True)
        ]}


class EpsilonSection(_AttackSection):
    """Effective-epsilon lower bounds per target, over all its valid attacks."""

    name, title, order = "epsilon", "Effective ε", 70

    def context(self, report: ReportView) -> dict[str, Any]:
        return epsilon_section_context(report)


class MethodsSection(_AttackSection):
    """Conventions, metric definitions, intervals and references."""

    name, title, order = "methods", "Methods", 1000

    def context(self, report: ReportView) -> dict[str, Any]:
        from privaudit.report._sections_slices import exposed_sections, slice_sections

        return {"sliced": bool(slice_sections(report.results)
                               or exposed_sections(report.results))}


def summary_cards(report: ReportView, rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The few headline numbers shown above the tables."""
    results, metrics = report.results, report.metric_dicts
    cards = [{
        "label": "Audited",
        "value": f"{len(results)} result" + ("s" if len(results) != 1 else ""),
        "detail": f"{len({r.target for r in results})} target(s) · "
                  f"{len({r.attack for r in results})} attack(s)",
        "severity": "",
    }]
    aucs = [m["auc"]["value"] for m in metrics]
    if any(math.isfinite(a) for a in aucs):
        best = int(np.nanargmax(aucs))
        cards.append({"label": "Highest AUC", "value": rows[best]["auc"]["value"],
                      "detail": f"{_named(results[best])} · {rows[best]['reading'].label}",
                      "severity": rows[best]["reading"].severity})
    lowest = _lowest_resolvable_tprs(metrics)
    if lowest:
        tpr, fpr, best = max(lowest, key=lambda t: t[0] / t[1])
        cards.append({"label": "Highest TPR at the lowest resolvable FPR",
                      "value": f"{tpr:.1%}",
                      "detail": f"{_named(results[best])} · at {format_fpr(fpr)} FPR · "
                                f"{tpr / fpr:.1f}× a random guess", "severity": ""})
    bounds = [e["value"] for e in report.headline_epsilons]
    if any(math.isfinite(b) for b in bounds):
        best = int(np.nanargmax(bounds))
        cards.append({"label": f"Highest ε lower bound ({report.confidence:.0%})",
                      "value": fmt(bounds[best], 2),
                      "detail": f"{_named(results[best])} · Clopper–Pearson",
                      "severity": ""})
    flags = [m["better_than_random"] for m in metrics]
    if report.n_bootstrap and all(f is not None for f in flags):
        cards.append({"label": "Better than random",
                      "value": f"{sum(bool(f) for f in flags)} of {len(flags)}",
                      "detail": f"AUC {report.confidence:.0%} interval above 0.5",
                      "severity": ""})
    return cards


def _named(result: Any) -> str:
    """``"<attack> on <artefact>"``, the generator included (:func:`artefact_name`)."""
    return f"{result.attack or 'attack'} on {artefact_name(result)}"


def _lowest_resolvable_tprs(metrics: Sequence[dict[str, Any]]
                            ) -> list[tuple[float, float, int]]:
    """(TPR, FPR, index) of each result at the smallest positive FPR its sample resolves."""
    out = []
    for i, m in enumerate(metrics):
        key = (m.get("fpr_resolution") or {}).get("smallest_resolvable")
        tpr = m["tpr_at_fpr"].get(key, {}).get("value", math.nan) if key else math.nan
        if math.isfinite(tpr):
            out.append((tpr, float(key), i))
    return out
