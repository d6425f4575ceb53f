"""The sections of the HTML report for membership (and attribute) inference results."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privaudit.report._binary import sensitive_attribute
from privaudit.report._common import (
    PREDICTION_METRICS,
    format_fpr,
    is_inference_result,
    metric_label,
    png_data_uri,
)
from privaudit.report._format import cell, fmt, fmt_int
from privaudit.report._interpret import AUC_SCALE
from privaudit.report._section import ReportSection, ReportView, register_section
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
    return {"value": fmt(value, 2), "ci": "",
            "title": f"Clopper–Pearson lower bound at {confidence:.0%} (Jagielski et al.)"}


def metric_rows(report: ReportView) -> list[dict[str, Any]]:
    """One row per attack result: names, counts, metric cells, reading and verdict."""
    rows = []
    for i, (r, m, reading, verdict, eps) in enumerate(zip(
        report.results, report.metric_dicts, report.readings, report.verdicts,
        report.headline_epsilons, strict=True,
    )):
        cells = [cell(m["auc"])]
        cells += [cell(m["tpr_at_fpr"][fpr_key(f)]) for f in report.fprs]
        cells += [cell(m["advantage"]), epsilon_cell(eps, report.confidence),
                  cell(m["effective_epsilon"], 2)]
        rows.append({
            "anchor": f"result-{i + 1}", "target": r.target or "—", "attack": r.attack or "—",
            "dataset": r.dataset or "—", "generator": r.generator or "—",
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


class MetricsSection(_AttackSection):
    """The metrics table with confidence intervals, the headline ε and the verdicts."""

    name, title, order = "metrics", "Metrics", 20

    def context(self, report: ReportView) -> dict[str, Any]:
        headers = ["AUC", *(f"TPR @ {format_fpr(f)} FPR" for f in report.fprs), "Advantage",
                   f"ε lower bound ({report.confidence:.0%})", "Effective ε (point)"]
        return {"headers": headers, "rows": metric_rows(report)}


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


class RocSection(_AttackSection):
    """ROC curves on linear and log-log axes, one figure per audited target."""

    name, title, order = "roc", "ROC curves", 50

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"roc_figures": [{"title": title, "uri": png_data_uri(png)}
                                for title, png in report.roc_groups]}


class HistogramSection(_AttackSection):
    """Member and non-member score histograms, one per result."""

    name, title, order = "histograms", "Score distributions", 60

    def context(self, report: ReportView) -> dict[str, Any]:
        return {"histograms": [
            {"name": r.name, "uri": png_data_uri(png), "anchor": f"hist-{i + 1}"}
            for i, (r, png) in enumerate(zip(report.results, report.histogram_pngs(),
                                             strict=True))
        ]}


class EpsilonSection(_AttackSection):
    """Effective-epsilon lower bounds per target, over all its valid attacks."""

    name, title, order = "epsilon", "Effective ε", 70

    def context(self, report: ReportView) -> dict[str, Any]:
        # One row per mechanism, one column per confidence level: easier to read than the
        # long format of effective_epsilon.csv.
        frame = report.epsilon_frame
        levels = list(dict.fromkeys(frame["confidence"].tolist()))
        rows: list[dict[str, Any]] = []
        for key, group in frame.groupby(["dataset", "generator", "target", "candidates"],
                                        sort=False, dropna=False):
            first = group.iloc[0]
            by_level = {row["confidence"]: row for row in group.to_dict("records")}
            rows.append({
                "dataset": key[0] or "—", "generator": key[1] or "—", "target": key[2] or "—",
                "candidates": key[3],
                "attack": first["attack"] if isinstance(first["attack"], str)
                and first["attack"] else "—",
                "threshold": fmt(first["threshold"], 4),
                "n_validation": fmt_int(first["n_validation"]),
                "n_test": fmt_int(first["n_test"]),
                "note": first["note"],
                "bounds": [
                    {"low": fmt(by_level[c]["epsilon_low"], 3),
                     "high": fmt(by_level[c]["epsilon_high"], 3),
                     # The largest corrected bound may come from another attack at
                     # another level: say which when it differs from the row's.
                     "attack": by_level[c]["attack"]
                     if by_level[c]["attack"] != first["attack"] else ""} if c in by_level
                    else {"low": "—", "high": "—", "attack": ""}
                    for c in levels
                ],
            })
        return {"epsilon_rows": rows, "epsilon_levels": [f"{c:.0%}" for c in levels]}


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
                      "detail": f"{results[best].name} · {rows[best]['reading'].label}",
                      "severity": rows[best]["reading"].severity})
    low_fprs = [f for f in report.fprs if f > 0]
    if low_fprs:
        fpr = min(low_fprs)
        tprs = [m["tpr_at_fpr"][fpr_key(fpr)]["value"] for m in metrics]
        if any(math.isfinite(t) for t in tprs):
            best = int(np.nanargmax(tprs))
            cards.append({"label": f"Highest TPR @ {format_fpr(fpr)} FPR",
                          "value": f"{tprs[best]:.1%}",
                          "detail": f"{results[best].name} · {tprs[best] / fpr:.1f}× a random "
                                    "guess", "severity": ""})
    bounds = [e["value"] for e in report.headline_epsilons]
    if any(math.isfinite(b) for b in bounds):
        best = int(np.nanargmax(bounds))
        cards.append({"label": f"Highest ε lower bound ({report.confidence:.0%})",
                      "value": fmt(bounds[best], 2),
                      "detail": f"{results[best].name} · Clopper–Pearson", "severity": ""})
    flags = [m["better_than_random"] for m in metrics]
    if report.n_bootstrap and all(f is not None for f in flags):
        cards.append({"label": "Better than random",
                      "value": f"{sum(bool(f) for f in flags)} of {len(flags)}",
                      "detail": f"AUC {report.confidence:.0%} interval above 0.5",
                      "severity": ""})
    return cards


for _section in (SummarySection(), MetricsSection(), ReadingSection(), PredictionsSection(),
                 RocSection(), HistogramSection(), EpsilonSection(), MethodsSection()):
    register_section(_section)
