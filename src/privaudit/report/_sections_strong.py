"""Strong membership inference: the attack's AUC as a function of the neighbours' radius.

For results of :func:`privaudit.audits.strong_membership_inference` (attack names
``strong-<attack>[r=...]``, ``parameters["radius"]``): per target and attack, the AUC with
its interval at each radius beside ordinary membership inference (radius infinity), as a
table and one curve. Zhao et al.: attribute inference needs the model to tell a member
from its close neighbours, which is what the small radii measure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from privaudit.report._common import figure_png, new_figure, png_data_uri
from privaudit.report._format import cell
from privaudit.report._section import ReportSection, ReportView
from privaudit.results import result_type_of

__all__ = ["StrongMembershipSection", "strong_curves"]


def _is_strong(result: Any) -> bool:
    return (result_type_of(result) == "attack" and result.attack.startswith("strong-")
            and "radius" in result.parameters)


def strong_curves(results: Sequence[Any], metric_dicts: Sequence[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    """One curve per (target, attack): radii ascending (inf last) and the AUC estimates."""
    groups: dict[tuple[str, str], list[tuple[float, dict[str, Any]]]] = {}
    for result, metrics in zip(results, metric_dicts, strict=True):
        if not _is_strong(result):
            continue
        radius = result.parameters["radius"]
        key = (result.target, str(result.parameters.get("attack", result.attack)))
        groups.setdefault(key, []).append(
            (math.inf if radius is None else float(radius), metrics["auc"]))
    return [{"target": t, "attack": a, "points": sorted(points, key=lambda p: p[0])}
            for (t, a), points in groups.items()]


def _figure(curve: dict[str, Any]) -> bytes:
    fig = new_figure(5.0, 3.2)
    ax = fig.add_subplot()
    finite = [(r, auc) for r, auc in curve["points"] if math.isfinite(r)]
    if finite:
        radii = [r for r, _ in finite]
        ax.plot(radii, [a["value"] for _, a in finite], marker="o", color="#1f4e8c",
                label="members vs neighbours within r")
        ax.fill_between(radii, [a["low"] for _, a in finite], [a["high"] for _, a in finite],
                        color="#1f4e8c", alpha=0.15, linewidth=0)
        ax.set_xscale("log")
    ordinary = [a for r, a in curve["points"] if not math.isfinite(r)]
    if ordinary:
        ax.axhline(ordinary[0]["value"], color="#b03a2e", linestyle="--",
                   label="ordinary MI (random non-members)")
    ax.axhline(0.5, color="grey", linewidth=0.8)
    ax.set_xlabel("radius r (feature standard deviations)")
    ax.set_ylabel("AUC")
    ax.set_title(f"{curve['target']}: {curve['attack']}")
    ax.legend(fontsize=8, loc="lower right")
    return figure_png(fig)


class StrongMembershipSection(ReportSection):
    """Zhao et al.'s strong membership inference, AUC against the radius."""

    name, title, order = "strong", "Strong membership inference", 47

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(_is_strong(r) for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        curves = strong_curves(report.results, report.metric_dicts)
        return {"strong_curves": [{
            "target": c["target"], "attack": c["attack"],
            "rows": [{"radius": "∞ (ordinary MI)" if not math.isfinite(r) else f"{r:g}",
                      "auc": cell(auc)} for r, auc in c["points"]],
            "src": png_data_uri(_figure(c))} for c in curves]}
