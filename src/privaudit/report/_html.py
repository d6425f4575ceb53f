"""One self-contained HTML report: metrics with CIs, ROC curves, histograms, epsilon."""

from __future__ import annotations

import datetime as _dt
import math
import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit._validation import check_fraction
from privaudit.report._binary import BinaryLabelAttackReport, sensitive_attribute
from privaudit.report._common import (
    PREDICTION_METRICS,
    check_results,
    figure_png,
    format_fpr,
    metric_label,
    png_data_uri,
)
from privaudit.report._epsilon import effective_epsilon_by_target
from privaudit.report._interpret import AUC_SCALE, AucReading, interpret_auc
from privaudit.report._plots import histogram_figure, roc_figure
from privaudit.report._verdict import Verdict, attack_verdict, target_verdict
from privaudit.results import DEFAULT_FPRS, AttackResult, fpr_key
from privaudit.results._io import atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["HtmlReport", "write_html_report"]

TEMPLATE = "report.html"


def _fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell: fixed decimals, an em dash for missing, ∞ for infinity."""
    if value is None:
        return "—"
    value = float(value)
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}f}"


def _cell(estimate: dict[str, float] | None, digits: int = 3) -> dict[str, str]:
    if estimate is None:
        return {"value": "—", "ci": ""}
    low, high = estimate["low"], estimate["high"]
    if math.isnan(low) and math.isnan(high):
        return {"value": _fmt(estimate["value"], digits), "ci": ""}
    ci = f"[{_fmt(low, digits)}, {_fmt(high, digits)}]"
    return {"value": _fmt(estimate["value"], digits), "ci": ci}


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


def _number(value: Any) -> float:
    """A stored number as a float: ``None`` (NaN written to JSON) and junk become NaN."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _row_estimate(row: dict[str, Any], name: str) -> dict[str, float]:
    return {"value": _number(row.get(name)), "low": _number(row.get(f"{name}_low")),
            "high": _number(row.get(f"{name}_high"))}


def _slice_tpr_key(rows: list[dict[str, Any]]) -> tuple[str, float] | None:
    """Column and rate of the TPR shown: 1% FPR if present, else the lowest rate stored."""
    rates = []
    for key in rows[0]:
        if key.startswith("tpr_at_fpr_") and not key.endswith(("_low", "_high")):
            rate = _number(key[len("tpr_at_fpr_"):])
            if math.isfinite(rate):
                rates.append((key, rate))
    if not rates:
        return None
    preferred = [kr for kr in rates if kr[0] == f"tpr_at_fpr_{fpr_key(_SLICE_FPR)}"]
    return preferred[0] if preferred else min(rates, key=lambda kr: kr[1])


def _valid_rows(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(row, dict) for row in value):
        return None
    return value


def _slice_sections(results: Sequence[AttackResult]) -> list[dict[str, Any]]:
    """The per-result slice tables of the page, for results with ``extra["slices"]``.

    A slice is *highlighted* when the lower end of its AUC interval lies above the upper end
    of the entire dataset's AUC interval (both from the same bootstrap settings): the
    attack separates members from non-members clearly better there than on average.
    Empty slices (e.g. loss percentiles collapsed by tied losses) are counted, not shown.
    """
    sections = []
    for i, result in enumerate(results):
        rows = _valid_rows(result.extra.get("slices"))
        if rows is None or not all("slice_type" in row for row in rows):
            continue
        entire = next((row for row in rows if row.get("slice_type") == "entire"), None)
        entire_high = _number(entire.get("auc_high")) if entire is not None else math.nan
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
                low, high = _number(row.get("loss_low")), _number(row.get("loss_high"))
                if math.isfinite(low) and math.isfinite(high):
                    # + 0.0 turns the -0.0 of a zero loss into 0.0 for display.
                    sub = f"loss {low + 0.0:.3g} – {high + 0.0:.3g}"
            table.append({
                "type": _SLICE_TYPE_LABELS.get(slice_type, slice_type),
                "value": str(row.get("slice_value", "")),
                "sub": sub,
                "n_members": _fmt_int(row.get("n_members")),
                "n_non_members": _fmt_int(row.get("n_non_members")),
                "status": _SLICE_STATUS_LABELS.get(status, "" if status == "ok" else status),
                "auc": _cell(auc),
                "tpr": _cell(_row_estimate(row, tpr[0])) if tpr else _cell(None),
                "advantage": _cell(_row_estimate(row, "advantage")),
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


def _exposed_sections(results: Sequence[AttackResult]) -> list[dict[str, Any]]:
    """The per-result tables of most exposed records, for results with ``extra["most_exposed"]``."""
    sections = []
    for i, result in enumerate(results):
        rows = _valid_rows(result.extra.get("most_exposed"))
        if rows is None:
            continue
        table = []
        for position, row in enumerate(rows, start=1):
            score = _number(row.get("score"))
            rank = _number(row.get("rank"))
            table.append({
                # Ties share a rank (1, 1, 3): the list order among them is record order.
                "rank": _fmt_int(rank) if math.isfinite(rank) else str(position),
                "record_id": str(row.get("record_id", "—")),
                "score": f"{score:.4g}" if math.isfinite(score) else "—",
                "detection_fpr": _fmt(_number(row.get("detection_fpr")), 4),
            })
        best = _number(rows[0].get("detection_fpr"))
        tied = result.extra.get("most_exposed_tied")
        n_tied = int(tied) if isinstance(tied, int) and not isinstance(tied, bool) else 0
        sections.append({
            "anchor": f"exposed-{i + 1}",
            "name": result.name,
            "rows": table,
            "n_members": f"{result.n_members:,}",
            "best": _fmt(best, 4),
            "last": table[-1]["detection_fpr"],
            # More members than listed reach the last detection FPR: the list is cut in a tie.
            "n_tied": f"{n_tied:,}" if n_tied > len(table) else "",
        })
    return sections


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


class HtmlReport:
    """A single self-contained HTML page reporting a set of attack results.

    The page (``index.html``) holds, in order: a summary; the metrics table with
    confidence intervals (AUC, TPR at each FPR, advantage, effective epsilon) per target
    and attack, with a plain-language reading of each AUC and a flag when its interval
    contains 0.5; the metrics of hard predictions when there are any; ROC curves on linear
    and log-log axes; histograms of member and non-member scores per result; the
    effective-epsilon lower bounds; for results that carry them (``extra["slices"]`` and
    ``extra["most_exposed"]``, added by :func:`privaudit.audit_model`), the metrics per
    slice of the records, with the subgroups more exposed than the whole highlighted, and
    the most exposed records, each result in a collapsible block; and the methods. Figures
    are PNG images embedded as base64 ``data:`` URIs and the style sheet is inline: the file
    needs no network and no other file, and can be mailed or archived as is.

    Parameters
    ----------
    results : sequence of AttackResult
    title : str
        Title of the page.
    n_bootstrap : int
        Bootstrap resamples for the confidence intervals (0 disables them).
    fprs : sequence of float
        False-positive rates at which the TPR is reported.
    confidence : float
        Confidence level of the intervals.
    validation_split, confidence_levels
        Of the effective-epsilon bound (see :class:`EffectiveEpsilonReport`).
    random_state : int, Generator or None
        Seeds the bootstrap and the effective-epsilon split.
    description : str, optional
        A paragraph under the title (e.g. what was audited and why).

    Notes
    -----
    The report computes nothing itself: metrics come from :meth:`AttackResult.metrics`
    and :mod:`privaudit.metrics`. matplotlib (Agg, without pyplot) and jinja2 are imported
    when the report is rendered.

    References
    ----------
    .. [1] Houssiau, F., et al. "TAPAS: a Toolbox for Adversarial Privacy Auditing of
       Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    .. [2] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022.
    .. [3] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private
       Machine Learning: How Private is Private SGD?" NeurIPS 2020.
    """

    def __init__(
        self,
        results: Sequence[AttackResult],
        *,
        title: str = "Privacy audit report",
        n_bootstrap: int = 1000,
        fprs: Sequence[float] = DEFAULT_FPRS,
        confidence: float = 0.95,
        validation_split: float = 0.1,
        confidence_levels: Sequence[float] = (0.9, 0.95, 0.99),
        random_state: int | np.random.Generator | None = 0,
        description: str | None = None,
    ) -> None:
        func = "HtmlReport"
        self.results = check_results(results, func)
        self.title = str(title)
        self.description = description
        self.confidence = check_fraction(confidence, param="confidence", func=func)
        self.validation_split = validation_split
        self.confidence_levels = tuple(confidence_levels)
        self.random_state = random_state
        self.metrics_report = BinaryLabelAttackReport(
            self.results, n_bootstrap=n_bootstrap, fprs=fprs, confidence=confidence,
            random_state=random_state,
        )
        self.n_bootstrap = self.metrics_report.n_bootstrap
        self.fprs = self.metrics_report.fprs

    # ------------------------------------------------------------------ pieces
    @property
    def metric_dicts(self) -> list[dict[str, Any]]:
        """The metrics of every result, computed once (shared with other outputs)."""
        return self.metrics_report.metric_dicts

    def metrics_frame(self) -> pd.DataFrame:
        """The metrics table (see :meth:`BinaryLabelAttackReport.metrics_frame`)."""
        return self.metrics_report.metrics_frame()

    @cached_property
    def epsilon_frame(self) -> pd.DataFrame:
        """Effective-epsilon bounds per target (see ``effective_epsilon_by_target``)."""
        return effective_epsilon_by_target(
            self.results, validation_split=self.validation_split,
            confidence_levels=self.confidence_levels, random_state=self.random_state,
        )

    @cached_property
    def readings(self) -> list[AucReading]:
        """The plain-language reading of each result's AUC."""
        return [
            interpret_auc(m["auc"]["value"], m["auc"]["low"], m["auc"]["high"], kind=r.kind,
                          confidence=self.confidence)
            for r, m in zip(self.results, self.metric_dicts, strict=True)
        ]

    @cached_property
    def verdicts(self) -> list[Verdict]:
        """The verdict on each result: TPR at low FPR first, then the AUC (``_verdict``)."""
        return [attack_verdict(r.attack or r.name, m, kind=r.kind)
                for r, m in zip(self.results, self.metric_dicts, strict=True)]

    def target_verdicts(self) -> list[dict[str, Any]]:
        """One headline verdict per audited (dataset, target), from its strongest attack."""
        groups: dict[tuple[str, str], list[Verdict]] = {}
        for r, v in zip(self.results, self.verdicts, strict=True):
            groups.setdefault((r.dataset, r.target), []).append(v)
        return [
            {"target": target or "—", "dataset": dataset, "verdict": target_verdict(vs)}
            for (dataset, target), vs in groups.items()
        ]

    @cached_property
    def roc_png(self) -> bytes:
        """The ROC figure (linear and log-log panels) as PNG bytes."""
        aucs = [m["auc"]["value"] for m in self.metric_dicts]
        return figure_png(roc_figure(self.results, aucs=aucs))

    @cached_property
    def roc_groups(self) -> list[tuple[str, bytes]]:
        """One ROC figure per audited artefact (dataset, target), when there are several.

        Twenty curves of five targets on one pair of axes cannot be read; attacks are
        compared against each other on the same target, so that is how they are grouped.
        With a single target this is the one figure of :attr:`roc_png`.
        """
        groups: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(self.results):
            groups.setdefault((r.dataset, r.target), []).append(i)
        if len(groups) == 1:
            return [("", self.roc_png)]
        out = []
        for (dataset, target), idx in groups.items():
            aucs = [self.metric_dicts[i]["auc"]["value"] for i in idx]
            title = f"{target} ({dataset})" if dataset else target
            figure = roc_figure([self.results[i] for i in idx], aucs=aucs, title=title)
            out.append((title, figure_png(figure)))
        return out

    def histogram_pngs(self) -> list[bytes]:
        """Member/non-member score histograms, one PNG per result."""
        return [
            figure_png(histogram_figure(r, auc=m["auc"]["value"]), dpi=100)
            for r, m in zip(self.results, self.metric_dicts, strict=True)
        ]

    # ------------------------------------------------------------------ rendering
    def context(self) -> dict[str, Any]:
        """Everything the template shows, as plain strings and lists."""
        from privaudit import __version__

        results, metrics = self.results, self.metric_dicts
        # A dimension with one value goes in the page header, not in a table column.
        datasets = sorted({r.dataset for r in results})
        generators = sorted({r.generator for r in results})
        show = {
            "dataset": len(datasets) > 1,
            "generator": len(generators) > 1,
            "sensitive_attribute": any(r.kind == "attribute" for r in results),
        }
        common = []
        if len(datasets) == 1 and datasets[0]:
            common.append(f"dataset {datasets[0]}")
        if len(generators) == 1 and generators[0]:
            common.append(f"generator {generators[0]}")
        headers = ["AUC", *(f"TPR @ {format_fpr(f)} FPR" for f in self.fprs),
                   "Advantage", "Effective ε"]
        rows = []
        for i, (r, m, reading, verdict) in enumerate(
            zip(results, metrics, self.readings, self.verdicts, strict=True)
        ):
            cells = [_cell(m["auc"])]
            cells += [_cell(m["tpr_at_fpr"][fpr_key(f)]) for f in self.fprs]
            cells += [_cell(m["advantage"]), _cell(m["effective_epsilon"], 2)]
            rows.append({
                "anchor": f"result-{i + 1}",
                "target": r.target or "—",
                "attack": r.attack or "—",
                "dataset": r.dataset or "—",
                "generator": r.generator or "—",
                "sensitive_attribute": sensitive_attribute(r) or "—",
                "kind": r.kind,
                "n_members": f"{m['n_members']:,}",
                "n_non_members": f"{m['n_non_members']:,}",
                "cells": cells,
                "reading": reading,
                "verdict": verdict,
                "flag_short": (
                    "worse than random" if reading.random_flag.startswith("Worse")
                    else "no better than random" if reading.random_flag else ""
                ),
                "name": r.name,
                "auc": _cell(m["auc"]),
            })

        prediction_rows = []
        for r, m in zip(results, metrics, strict=True):
            if r.predictions is None:
                continue
            prediction_rows.append({
                "target": r.target or "—",
                "attack": r.attack or "—",
                "cells": [_cell(m.get(name)) for name in PREDICTION_METRICS],
            })

        scale = []
        upper = "1.00"
        for band in AUC_SCALE:
            scale.append({"range": f"{band.low:.2f} – {upper}", "label": band.label,
                          "severity": band.severity,
                          "text": band.text.format(pos="members", neg="non-members",
                                                   Pos="Members")})
            upper = f"{band.low:.2f}"

        # One row per mechanism, one column per confidence level: easier to read than the
        # long format of effective_epsilon.csv.
        epsilon_rows: list[dict[str, Any]] = []
        levels = list(dict.fromkeys(self.epsilon_frame["confidence"].tolist()))
        for key, group in self.epsilon_frame.groupby(
            ["dataset", "generator", "target", "candidates"], sort=False, dropna=False
        ):
            first = group.iloc[0]
            by_level = {row["confidence"]: row for row in group.to_dict("records")}
            epsilon_rows.append({
                "dataset": key[0] or "—",
                "generator": key[1] or "—",
                "target": key[2] or "—",
                "candidates": key[3],
                "attack": first["attack"] if isinstance(first["attack"], str)
                and first["attack"] else "—",
                "threshold": _fmt(first["threshold"], 4),
                "n_validation": _fmt_int(first["n_validation"]),
                "n_test": _fmt_int(first["n_test"]),
                "note": first["note"],
                "bounds": [
                    {"low": _fmt(by_level[c]["epsilon_low"], 3),
                     "high": _fmt(by_level[c]["epsilon_high"], 3)} if c in by_level
                    else {"low": "—", "high": "—"}
                    for c in levels
                ],
            })

        histograms = [
            {"name": r.name, "uri": png_data_uri(png), "anchor": f"hist-{i + 1}"}
            for i, (r, png) in enumerate(zip(results, self.histogram_pngs(), strict=True))
        ]
        return {
            "title": self.title,
            "description": self.description,
            "created": _now(),
            "version": __version__,
            "n_bootstrap": self.n_bootstrap,
            "confidence": f"{self.confidence:.0%}",
            "random_state": repr(self.random_state)
            if not isinstance(self.random_state, np.random.Generator) else "a Generator",
            "validation_split": f"{self.validation_split:g}",
            "show": show,
            "common": common,
            "headers": headers,
            "rows": rows,
            "prediction_headers": [metric_label(n) for n in PREDICTION_METRICS],
            "prediction_rows": prediction_rows,
            "scale": scale,
            "roc_figures": [
                {"title": title, "uri": png_data_uri(png)} for title, png in self.roc_groups
            ],
            "histograms": histograms,
            "epsilon_rows": epsilon_rows,
            "epsilon_levels": [f"{c:.0%}" for c in levels],
            "summary": self._summary(rows),
            "target_verdicts": self.target_verdicts(),
            "kinds": sorted({r.kind for r in results}),
            "slice_sections": _slice_sections(results),
            "exposed_sections": _exposed_sections(results),
            "slice_bootstrap": self._slice_bootstrap(),
        }

    def _slice_bootstrap(self) -> str:
        """How the slice intervals were computed, when all sliced results agree."""
        settings = {
            (r.extra["slice_settings"].get("n_bootstrap"),
             r.extra["slice_settings"].get("confidence"))
            for r in self.results
            if isinstance(r.extra.get("slice_settings"), dict)
        }
        if len(settings) != 1:
            return ""
        n_boot, conf = settings.pop()
        if not isinstance(n_boot, int) or not isinstance(conf, float) or n_boot <= 0:
            return ""
        return f"{conf:.0%} bootstrap intervals, {n_boot} resamples stratified by label"

    def _summary(self, rows: list[dict[str, Any]]) -> list[dict[str, str]]:
        """The few headline numbers shown above the tables."""
        results, metrics = self.results, self.metric_dicts
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
            row = rows[best]
            cards.append({
                "label": "Highest AUC",
                "value": row["auc"]["value"],
                "detail": f"{results[best].name} · {row['reading'].label}",
                "severity": row["reading"].severity,
            })
        low_fprs = [f for f in self.fprs if f > 0]
        if low_fprs:
            fpr = min(low_fprs)
            tprs = [m["tpr_at_fpr"][fpr_key(fpr)]["value"] for m in metrics]
            if any(math.isfinite(t) for t in tprs):
                best = int(np.nanargmax(tprs))
                ratio = tprs[best] / fpr
                cards.append({
                    "label": f"Highest TPR @ {format_fpr(fpr)} FPR",
                    "value": f"{tprs[best]:.1%}",
                    "detail": f"{results[best].name} · {ratio:.1f}× a random guess",
                    "severity": "",
                })
        flags = [m["better_than_random"] for m in metrics]
        if self.n_bootstrap and all(f is not None for f in flags):
            n_better = sum(bool(f) for f in flags)
            cards.append({
                "label": "Better than random",
                "value": f"{n_better} of {len(flags)}",
                "detail": f"AUC {self.confidence:.0%} interval above 0.5",
                "severity": "",
            })
        return cards

    def render(self) -> str:
        """The HTML page as a string."""
        env = _environment()
        return env.get_template(TEMPLATE).render(**self.context())

    def write(
        self, directory: str | os.PathLike[str], *, filename: str = "index.html"
    ) -> Path:
        """Write the page to ``directory/filename`` (atomically) and return its path."""
        return atomic_write_text(Path(directory) / filename, self.render())

    publish = write


def _fmt_int(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{int(value):,}"


def _environment() -> Any:
    try:
        import jinja2
    except ImportError:  # pragma: no cover - jinja2 is in the report extra
        raise ImportError("The HTML report needs jinja2: pip install 'privaudit[report]'") \
            from None
    return jinja2.Environment(
        loader=jinja2.PackageLoader("privaudit.report", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def write_html_report(
    results: Sequence[AttackResult],
    directory: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Write the self-contained ``index.html`` of ``results`` into ``directory``.

    Parameters
    ----------
    results : sequence of AttackResult
    directory : path-like
        Created if needed.
    **options
        Passed to :class:`HtmlReport` (``title``, ``n_bootstrap``, ``fprs``,
        ``confidence``, ``validation_split``, ``confidence_levels``, ``random_state``,
        ``description``).

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.
    """
    return HtmlReport(results, **options).write(directory)
