"""The section of the HTML report for LLM audits (``result.audit.kind == "llm"``).

Per audited model, one row per statistic: the AUC and TPR at low FPR with intervals, the
blind baseline beside it, MUSE's PrivLeak when a retrained model was scored, and the
findings (a blind baseline as good as the attack, the guide's red flags) in words. A second
table puts every scored model side by side (target, retrained, original, random init), as
the MIA metrics guide's best practices ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privaudit._validation import canonical_name
from privaudit.report._format import cell, fmt
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._sections_membership import result_finding, tpr_cell
from privaudit.report._verdict import result_verdict
from privaudit.results import AttackResult, result_type_of

__all__ = ["LLMSection", "llm_context"]

#: How the statistics are named on the page (by their kebab-case names; results saved
#: under an older name are read through :func:`~privaudit._validation.canonical_name`).
STATISTIC_LABELS = {"loss": "LOSS", "min-k": "Min-K%", "min-k-plus-plus": "Min-K%++",
                    "zlib": "zlib", "reference": "Reference", "gradnorm": "GradNorm",
                    "dc-pdd": "DC-PDD", "recall": "ReCaLL"}


def statistic_label(name: str) -> str:
    """The page's name of LLM statistic ``name`` (old names too), else ``name`` itself."""
    return STATISTIC_LABELS.get(canonical_name(name), name)
BLIND = "blind-baseline"


def _is_llm(result: Any) -> bool:
    return result_type_of(result) == "attack" and result.audit_kind == "llm"


def _tpr(metrics: dict[str, Any], fpr: float) -> dict[str, str]:
    if fpr not in _read_fprs(metrics):
        return cell(None)
    return tpr_cell(metrics, fpr)


def _read_fprs(metrics: dict[str, Any]) -> set[float]:
    return {float(key) for key in metrics.get("tpr_at_fpr", {})}


def _is_blind(result: AttackResult) -> bool:
    return result.audit.role == "baseline" or result.attack == BLIND


def _row(result: AttackResult, metrics: dict[str, Any]) -> dict[str, Any]:
    baseline = result.audit.baseline
    leak = next((f.value for f in result.audit.findings if f.code == "privleak"), None)
    return {
        "statistic": statistic_label(result.attack),
        "auc": cell(metrics["auc"]), "tpr1": _tpr(metrics, 0.01),
        "tpr01": _tpr(metrics, 0.001),
        "blind": fmt(baseline.details.get("blind_auc")) if baseline else "—",
        "beats_blind": None if baseline is None else baseline.passed,
        "privleak": "—" if leak is None else f"{leak:+.1%}",
        "n": f"{result.n_members:,} / {result.n_non_members:,}",
        "verdict": result_verdict(result, metrics),
    }


def llm_context(results: Sequence[Any], metric_dicts: Sequence[dict[str, Any]]
                ) -> dict[str, Any]:
    """The template variables: one table per model, the side-by-side AUCs, the blind AUC."""
    pairs = [(r, m) for r, m in zip(results, metric_dicts, strict=True) if _is_llm(r)]
    models: dict[tuple[str, str, str], list[tuple[AttackResult, dict[str, Any]]]] = {}
    blind, blinds = None, []
    for r, m in pairs:
        if _is_blind(r):
            blind = cell(m["auc"])
            verdict = result_verdict(r, m)
            blinds.append({"target": r.target, "dataset": r.dataset, "auc": blind,
                           "text": verdict.text, "severity": verdict.severity,
                           "label": verdict.label})
        else:
            sets = r.parameters.get("sets") or ["members", "non-members"]
            models.setdefault((r.target, r.dataset, " vs ".join(sets[:2])), []).append((r, m))
    tables = []
    for (target, dataset, sets), rows in models.items():
        findings = {(f.severity, f.message) for r, _ in rows for f in r.audit.findings
                    if f.code != "privleak"}
        tables.append({"target": target, "sets": f"{sets} · {dataset}" if dataset else sets,
                       "rows": [_row(r, m) for r, m in rows],
                       "findings": [{"severity": s, "message": msg}
                                    for s, msg in sorted(findings, reverse=True)]})
    statistics = list(dict.fromkeys(r.attack for rows in models.values() for r, _ in rows))
    side_by_side = [{"statistic": statistic_label(s), "cells": [
        next((cell(m["auc"]) for r, m in models[name] if r.attack == s), cell(None))
        for name in models]} for s in statistics]
    return {"llm_tables": tables, "llm_models": [key[0] for key in models],
            "llm_side_by_side": side_by_side,
            "llm_blind": blind, "llm_blinds": blinds}


class LLMSection(ReportSection):
    """Membership inference on a language model's texts, with its blind baseline."""

    name, title, order = "llm", "Language model", 35

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(_is_llm(r) for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        return llm_context(report.results, report.metric_dicts)

    def findings(self, report: ReportView) -> list[Finding]:
        """One finding per LLM result: its verdict, the blind baseline as ``baseline``.

        The blind baseline attacks no model: its finding says whether the two text sets
        can be told apart without one (severity ``baseline``, never a leakage level), and
        never becomes the model's answer (:func:`~privaudit.report.strongest_finding`
        prefers any leakage level).
        """
        return [result_finding(r, m, result_verdict(r, m), self.name)
                for r, m in zip(report.results, report.metric_dicts, strict=True)
                if _is_llm(r)]
