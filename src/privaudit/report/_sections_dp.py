"""The section of the HTML report for DP-training audits (:class:`DPAuditResult`).

Per audited training procedure: the audited epsilon (the lower bound) beside the claimed
one, per run and bound method, as a table and a plot; the canary score histograms of the
included and excluded canaries; and the bound against the number of guesses, which shows
how much of the bound rests on the few most confident guesses. The verdict is "claim
refuted" when a bound exceeds the claim, else "consistent with the claim": an audit finds
leakage, it never proves privacy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privaudit.report._common import artefact_name, figure_png, new_figure, png_data_uri
from privaudit.report._format import EPSILON_DIGITS, fmt, fmt_int
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import DP_CLAIM_LABELS, dp_claim_level
from privaudit.results import result_type_of

__all__ = ["DPTrainingSection", "bound_curve", "dp_rows"]

#: Guess counts drawn in the bound-against-guesses plot (log-spaced, at most this many).
_CURVE_POINTS = 24
IN_COLOR, OUT_COLOR = "#d1495b", "#00798c"
_METHOD_COLORS = {"steinke": "#30638e", "fdp": "#d1495b", "clopper-pearson": "#edae49"}


def dp_results(results: Sequence[Any]) -> list[Any]:
    """The DP-training audit results among ``results``."""
    return [r for r in results if result_type_of(r) == "dp"]


def _eps(value: float) -> str:
    return fmt(value, EPSILON_DIGITS)


def dp_rows(result: Any) -> list[dict[str, Any]]:
    """One table row per run and method: the bound, the claim, the guesses behind it."""
    rows = []
    for run, bounds in enumerate(result.bounds):
        for method, b in bounds.items():
            refuted = b.epsilon > result.claim
            rows.append({
                "run": run + 1, "method": method, "epsilon": _eps(b.epsilon),
                "claim": _eps(result.claim), "accountant": result.claim_accountant,
                "guesses": fmt_int(b.n_guesses), "guessed_in": fmt_int(b.n_guessed_in),
                "guessed_out": fmt_int(b.n_guessed_out), "correct": fmt_int(b.n_correct),
                "abstained": fmt_int(b.n_abstained), "n_canaries": fmt_int(b.n_canaries),
                "confidence": f"{b.confidence:.2%}", "threshold": b.threshold,
                "refuted": refuted})
    return rows


def bound_curve(result: Any, method: str, run: int = 0) -> tuple[list[int], list[float]]:
    """The bound if the attacker had guessed "in" for exactly the top ``k`` canaries.

    For log-spaced ``k``, :func:`~privaudit.metrics.top_k_epsilon_lower_bound`
    of the ``k`` highest-scored canaries of run ``run`` at the result's per-bound
    confidence, for any method of the audit (``"clopper-pearson"`` reads the included
    count too; NaN, left out of the plot, when every canary or none was included). A
    point is the bound of a ``k`` fixed in advance: the audit's own bound chose among the
    counts with a Bonferroni correction, so it sits at or below the curve's peak.
    """
    from privaudit.metrics import top_k_epsilon_lower_bound

    scores, included = result.scores[run], result.included[run]
    order = np.argsort(-scores, kind="stable")
    correct = np.cumsum(included[order])
    m = result.n_canaries
    counts = sorted({int(k) for k in np.unique(np.geomspace(1, m, _CURVE_POINTS).round())})
    n_included = int(included.sum())
    bounds = [top_k_epsilon_lower_bound(m, n_included, k, int(correct[k - 1]),
                                        delta=result.delta,
                                        confidence=result.bound_confidence, method=method)
              for k in counts]
    return counts, [float(b) for b in bounds]


def _claims_figure(results: Sequence[Any]) -> bytes:
    """Audited epsilon per run and method (markers) against each claim (a bar)."""
    fig = new_figure(6.4, 0.6 + 0.55 * max(len(results), 2))
    ax = fig.subplots()
    ax.grid(True, axis="x", color="#e3e3e3", linewidth=0.7)
    for y, result in enumerate(results):
        ax.barh(y, result.claim, color="#dddddd", height=0.6,
                label="claimed ε" if y == 0 else None)
        for j, method in enumerate(result.methods):
            values = [run[method].epsilon for run in result.bounds]
            ax.scatter(values, np.full(len(values), y + (j - 0.5) * 0.18), s=22,
                       color=_METHOD_COLORS.get(method, "#444444"), zorder=3,
                       label=f"ε lower bound ({method})" if y == 0 else None)
    ax.set_yticks(range(len(results)), [artefact_name(r) for r in results], fontsize=8)
    ax.set_xlabel("ε (lower bound per run; bar: claimed)")
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    return figure_png(fig)


def _histogram_figure(result: Any) -> bytes:
    """Scores of the included and the excluded canaries (every run), as shares."""
    inside, outside = result.in_out_scores()
    finite = np.concatenate([inside, outside])
    finite = finite[np.isfinite(finite)]
    low, high = (float(q) for q in np.quantile(finite, [0.0025, 0.9975])) if finite.size \
        else (0.0, 1.0)
    bins = np.linspace(low, high if high > low else low + 1.0, 31)
    fig = new_figure(5.6, 3.0)
    ax = fig.subplots()
    for values, name, color in ((outside, "excluded", OUT_COLOR),
                                (inside, "included", IN_COLOR)):
        values = values[np.isfinite(values)]
        if values.size:
            ax.hist(np.clip(values, bins[0], bins[-1]), bins=bins, color=color, alpha=0.4,
                    weights=np.full(values.size, 1.0 / values.size),
                    label=f"{name} canaries (n={values.size:,})")
    ax.set_xlabel("canary score (higher = more likely included)")
    ax.set_ylabel("share of canaries")
    ax.set_title(f"{artefact_name(result)}: {result.canaries} canaries", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    return figure_png(fig, dpi=90)


def _curve_figure(result: Any) -> bytes:
    """The bound against the number of "in" guesses, per method, with the claim."""
    fig = new_figure(5.6, 3.0)
    ax = fig.subplots()
    for method in result.methods:
        counts, bounds = bound_curve(result, method)
        ax.plot(counts, bounds, marker="o", markersize=3,
                color=_METHOD_COLORS.get(method, "#444444"), label=method)
    ax.axhline(result.claim, color="#888888", linestyle="--",
               label=f"claimed ε = {result.claim:g}")
    ax.set_xscale("log")
    ax.set_xlabel('number of "in" guesses (top-scored canaries)')
    ax.set_ylabel("ε lower bound")
    ax.set_title(f"{artefact_name(result)}, run 1", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    return figure_png(fig, dpi=90)


def _bound_method(result: Any) -> str:
    """The method the verdict read; the undefined ones when no bound was read."""
    if math.isnan(result.epsilon_lower_bound) and result.undefined_methods:
        return ", ".join(result.undefined_methods) + " undefined"
    return str(result.best_method)


def _undefined_note(result: Any) -> str:
    """A sentence naming the methods whose bound is undefined (NaN), or nothing."""
    undefined = result.undefined_methods
    if not undefined:
        return ""
    return (f" The {', '.join(undefined)} bound is undefined (NaN: a diverged run, or "
            "clopper-pearson without both included and excluded canaries) and not read.")


def _block(result: Any) -> dict[str, Any]:
    gdp = result.gdp
    return {
        "name": artefact_name(result), "canaries": result.canaries,
        "n_canaries": fmt_int(result.n_canaries), "n_runs": result.n_runs,
        "delta": f"{result.delta:g}", "verdict": result.verdict, "refuted": result.refuted,
        "bound": _eps(result.epsilon_lower_bound), "method": _bound_method(result),
        "claims": [{"accountant": k, "epsilon": _eps(v)}
                   for k, v in result.claimed_epsilon.items()],
        "confidence": f"{result.confidence:.0%}", "rows": dp_rows(result),
        "gdp": None if gdp is None else {"epsilon": _eps(gdp.epsilon),
                                         "epsilon_point": _eps(gdp.epsilon_point),
                                         "mu": fmt(gdp.mu, 3)},
        "histogram": png_data_uri(_histogram_figure(result)),
        "curve": png_data_uri(_curve_figure(result)),
    }


class DPTrainingSection(ReportSection):
    """Audited epsilon against claimed epsilon, canary scores, bound against guesses."""

    name, title, order = "dp", "DP training", 46

    def applies_to(self, results: Sequence[Any]) -> bool:
        return bool(dp_results(results))

    def context(self, report: ReportView) -> dict[str, Any]:
        results = dp_results(report.all_results)
        return {"dp_blocks": [_block(r) for r in results],
                "dp_claims_figure": png_data_uri(_claims_figure(results))}

    def findings(self, report: ReportView) -> list[Finding]:
        """One finding per audited procedure: its bound read against its claim.

        A refuted claim is ``critical`` and outranks every other finding of the artefact
        (:func:`~privaudit.report._verdict.dp_claim_level`); a bound within the claim is
        ``low`` (leakage measured) or ``minimal`` (none), worded "consistent with the
        claim", never "private".
        """
        out = []
        for r in dp_results(report.all_results):
            bound, claim = r.epsilon_lower_bound, r.claim
            severity, strength = dp_claim_level(bound, claim)
            relation = "exceeds" if r.refuted else "does not exceed"
            out.append(Finding(
                artefact=artefact_name(r), kind="dp-training", severity=severity,
                label=DP_CLAIM_LABELS.get(severity, "Undefined"),
                attack=f"{r.canaries} canaries ({_bound_method(r)})",
                metric=f"ε ≥ {_eps(bound)} vs claimed {_eps(claim)}",
                interval=f"{r.confidence:.0%} confidence",
                text=(f"The audited ε lower bound {_eps(bound)} {relation} the claimed ε "
                      f"{_eps(claim)} ({r.claim_accountant}, δ = {r.delta:g}) at "
                      f"{r.confidence:.0%} confidence: {r.verdict}.{_undefined_note(r)}"),
                section=self.name, strength=strength if math.isfinite(strength) else 0.0))
        return out
