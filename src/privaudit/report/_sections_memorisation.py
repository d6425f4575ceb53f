"""The section of the HTML report for memorisation checks (:class:`MemorisationResult`).

Per audited language model: the extraction checks' members-vs-held-out comparison (each
check's mean or rate on both sides with its interval, their difference and the check's
AUC as a membership score), the texts greedy decoding gave back with the span that
matches the true suffix highlighted (every text HTML-escaped by the template), and the
canaries' exposure against their repetitions (Carlini et al. 2019) with the one-run
epsilon lower bound when the canaries were included at random. The findings read the
share of member texts extracted beyond the held-out ones, and the share of inserted
canaries whose secret the model ranks first among every candidate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privaudit.report._common import artefact_name, figure_png, new_figure, png_data_uri
from privaudit.report._format import EPSILON_DIGITS, fmt, fmt_int
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import severity_label, share_level
from privaudit.results import result_type_of

__all__ = ["MemorisationSection", "exposure_rows", "extracted_texts", "extraction_rows",
           "memorisation_results"]

#: Extracted texts shown per result: the members with the longest verbatim match first,
#: then the held-out texts that matched at all (a held-out text extracted is a warning
#: that the texts are not memorised but predictable).
_SHOWN_TEXTS = 12
_REPETITION_COLOR, _CAP_COLOR = "#30638e", "#888888"


def memorisation_results(results: Sequence[Any], check: str | None = None) -> list[Any]:
    """The memorisation results among ``results`` (of one ``check`` kind when given)."""
    return [r for r in results if result_type_of(r) == "memorisation"
            and (check is None or r.check == check)]


def _estimate(e: dict[str, Any], share: bool) -> dict[str, str]:
    """An estimate's value and interval, as a percentage for a rate."""
    def show(x: Any) -> str:
        x = float(x)
        return "—" if not math.isfinite(x) else (f"{x:.1%}" if share else fmt(x, 3))
    return {"value": show(e["value"]), "interval": f"[{show(e['low'])}, {show(e['high'])}]"}


def extraction_rows(result: Any) -> list[dict[str, Any]]:
    """One table row per extraction check: both sides, their difference, the AUC."""
    rows = []
    for name, c in result.comparisons.items():
        share = c.get("interval") == "wilson"
        rows.append({"check": name, "rate": share,
                     "members": _estimate(c["member_mean"], share),
                     "held_out": _estimate(c["held_out_mean"], share),
                     "difference": _estimate(c["difference"], share),
                     "auc": _estimate(c["auc"], False), "method": c.get("interval", "")})
    return rows


def extracted_texts(result: Any, limit: int = _SHOWN_TEXTS) -> list[dict[str, Any]]:
    """The texts whose continuation matched its true suffix, longest match first.

    Each as ``prefix``, ``matched`` (the continuation's characters equal to the suffix's,
    from the start), ``rest`` (the rest of the continuation) and ``suffix``: plain
    strings, escaped by the template, never joined into HTML here.
    """
    chars = result.matched_chars
    order = sorted((i for i in range(len(chars)) if result.matched_tokens[i] > 0),
                   key=lambda i: (-int(result.labels[i]), -int(result.matched_tokens[i]), i))
    out = []
    for i in order[:limit]:
        continuation = result.continuations[i]
        out.append({"side": "member" if result.labels[i] == 1 else "held-out",
                    "id": str(result.record_ids[i]), "prefix": result.prefixes[i],
                    "matched": continuation[:chars[i]], "rest": continuation[chars[i]:],
                    "suffix": result.suffixes[i],
                    "tokens": f"{int(result.matched_tokens[i])} / "
                              f"{int(result.suffix_tokens[i])}",
                    "full": bool(result.matched_tokens[i] == result.suffix_tokens[i])})
    return out


def exposure_rows(result: Any) -> list[dict[str, Any]]:
    """One row per canary: its format, secret, repetitions, exposure and rank."""
    return [{"format": r["format"], "secret": r["secret"],
             "repetitions": fmt_int(r["repetitions"]), "exposure": fmt(r["exposure"], 2),
             "rank": fmt(r["rank"], 1) if r["method"] == "fit" else fmt_int(int(r["rank"])),
             "method": r["method"], "space": fmt_int(r["space_size"]),
             "included": {None: "inserted", True: "included", False: "left out"}[
                 r["included"]]} for r in result.canaries]


def _exposure_figure(results: Sequence[Any]) -> bytes:
    """Exposure (bits) of each inserted canary against its repetitions, per model."""
    fig = new_figure(5.6, 3.0)
    ax = fig.subplots()
    markers = "osD^v"
    for j, result in enumerate(results):
        by = result.exposure_by_repetitions()
        reps = [r for r, values in by.items() for _ in values]
        values = [v for vs in by.values() for v in vs]
        ax.scatter(reps, values, s=24, marker=markers[j % len(markers)], zorder=3,
                   color=_REPETITION_COLOR, alpha=0.8, label=artefact_name(result))
        ax.plot(list(by), [float(np.median(v)) for v in by.values()],
                color=_REPETITION_COLOR, alpha=0.5)
        ax.axhline(result.max_exposure, color=_CAP_COLOR, linestyle="--", linewidth=0.8,
                   label="largest possible (log2 |R|)" if j == 0 else None)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("repetitions of the canary in the training data")
    ax.set_ylabel("exposure (bits)")
    ax.legend(fontsize=7, frameon=False)
    return figure_png(fig, dpi=90)


def _canary_block(result: Any) -> dict[str, Any]:
    bound = result.epsilon
    return {"name": artefact_name(result), "rows": exposure_rows(result),
            "n_canaries": fmt_int(len(result.canaries)),
            "max_exposure": fmt(result.max_exposure, 2),
            "recipe": result.parameters.get("recipe", ""),
            "epsilon": None if bound is None else {
                "value": fmt(bound.epsilon, EPSILON_DIGITS), "delta": f"{result.delta:g}",
                "guesses": fmt_int(bound.n_guesses), "correct": fmt_int(bound.n_correct),
                "confidence": f"{result.confidence:.0%}"}}


def _extraction_block(result: Any) -> dict[str, Any]:
    p = result.parameters
    return {"name": artefact_name(result), "rows": extraction_rows(result),
            "texts": extracted_texts(result), "prefix": p.get("prefix_length"),
            "suffix": p.get("suffix_length"),
            "n_members": fmt_int(int(result.labels.sum())),
            "n_held_out": fmt_int(int((result.labels == 0).sum())),
            "confidence": f"{result.confidence:.0%}"}


class MemorisationSection(ReportSection):
    """Extraction members vs held-out with intervals, extracted texts, canary exposure."""

    name, title, order = "memorisation", "Memorisation", 36

    def applies_to(self, results: Sequence[Any]) -> bool:
        return bool(memorisation_results(results))

    def context(self, report: ReportView) -> dict[str, Any]:
        canaries = memorisation_results(report.all_results, "canaries")
        return {
            "extraction_blocks": [_extraction_block(r) for r in
                                  memorisation_results(report.all_results, "extraction")],
            "canary_blocks": [_canary_block(r) for r in canaries],
            "exposure_figure": png_data_uri(_exposure_figure(canaries)) if canaries else None}

    def findings(self, report: ReportView) -> list[Finding]:
        """Per result: the share extracted beyond held-out texts, or of canaries ranked first."""
        out = []
        for r in memorisation_results(report.all_results):
            finding = _extraction_finding(r) if r.check == "extraction" else _canary_finding(r)
            if finding is not None:
                out.append(finding._replace(section=self.name))
        return out


def _extraction_finding(r: Any) -> Finding | None:
    """The k-extractability rate of members beyond held-out texts (Newcombe's interval).

    Read on :data:`~privaudit.report.SHARE_SCALE` by the interval's lower end: a share of
    the members the model recites verbatim, which held-out texts of the same kind do not
    explain.
    """
    c = r.comparisons.get("k-extractability")
    if c is None:
        return None
    diff, members, held = c["difference"], c["member_mean"], c["held_out_mean"]
    severity = share_level(float(diff["low"]), float(diff["value"]))
    p = r.parameters
    return Finding(
        artefact=artefact_name(r), kind="memorisation", severity=severity,
        label=severity_label(severity), attack="k-extractability",
        metric=f"{float(diff['value']):+.1%} members extracted beyond held-out",
        interval=f"[{float(diff['low']):+.1%}, {float(diff['high']):+.1%}]",
        text=(f"Greedy decoding from the first {p.get('prefix_length')} tokens gives back "
              f"the next {p.get('suffix_length')} verbatim for {float(members['value']):.1%} "
              f"of the member texts and {float(held['value']):.1%} of the held-out ones "
              f"(difference {float(diff['value']):+.1%}, {c.get('confidence', 0.95):.0%} "
              "interval shown)."), section="", strength=float(diff["value"]))


def _canary_finding(r: Any) -> Finding | None:
    """The share of inserted canaries whose secret ranks first (Wilson interval)."""
    from privaudit.metrics import wilson_interval

    inserted = [row for row in r.canaries if row["included"] is not False]
    if not inserted:
        return None
    first = sum(1 for row in inserted if float(row["rank"]) <= 1.0)
    share = wilson_interval(first, len(inserted), r.confidence)
    severity = share_level(float(share.low), float(share.value))
    bound = "" if r.epsilon is None else (
        f" The one-run lower bound from the canaries is ε ≥ "
        f"{fmt(r.epsilon.epsilon, EPSILON_DIGITS)} (δ = {r.delta:g}).")
    return Finding(
        artefact=artefact_name(r), kind="memorisation", severity=severity,
        label=severity_label(severity), attack="canary exposure",
        metric=f"{first} of {len(inserted)} canaries ranked first",
        interval=f"[{float(share.low):.1%}, {float(share.high):.1%}]",
        text=(f"{first} of the {len(inserted)} inserted canaries have their secret ranked "
              f"first among all {fmt_int(max(int(row['space_size']) for row in inserted))} "
              "candidates (the largest exposure): the model trained with them can give the "
              f"secret back.{bound}"), section="", strength=float(share.value))
