"""What a result or a report shows in a notebook: the verdict, the metrics, the ROC curves.

Jupyter calls ``_repr_html_`` on the last value of a cell. :class:`AuditReport` answers
with :func:`report_html`, and every result class with the view of the report of that one
result (so that the two read the same): a heading, the verdict of the report's overview
(:attr:`AuditReport.verdict`, the answer the HTML report opens with), one answer per
artefact when there are several, the metrics with their intervals (the numbers of
``metrics.csv`` and ``results.json``, :meth:`AuditReport.to_frame`), and the page's ROC
figures (:attr:`HtmlReport.roc_groups`) as inline PNGs. matplotlib is optional: without it
the view is the tables alone. Every name comes from the user's files, so every text is
HTML-escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from privaudit.report._common import (
    artefact_name,
    metric_label,
    png_data_uri,
    require_matplotlib,
)
from privaudit.report._format import fmt

__all__ = ["FIGURE_LIMIT", "FOLD_ROWS", "MetricRow", "metric_rows", "report_html"]

#: Numeric columns of :meth:`AuditReport.to_frame` that are settings, not metrics.
_SETTINGS = frozenset({"confidence", "bound_confidence", "quantile", "delta"})
#: Labels of the metrics :func:`~privaudit.report._common.metric_label` does not name.
_LABELS = {
    "effective_epsilon_lower_bound": "Effective ε lower bound",
    "epsilon_lower_bound": "ε lower bound",
    "claimed_epsilon": "Claimed ε",
    "risk": "Residual risk",
    "value": "Closeness of the synthetic rows",
    "baseline_value": "Closeness of the holdout rows",
    "smallest_resolvable_fpr": "Smallest resolvable FPR (1 / non-members)",
}
#: The page's badge colours (background, text) per severity (templates/report.html).
_BADGES = {
    "critical": ("#fde2e1", "#9b1c1c"), "high": ("#feecdc", "#9a3412"),
    "moderate": ("#fef3c7", "#854d0e"), "low": ("#dcfce7", "#166534"),
    "minimal": ("#d1fae5", "#065f46"),
}
_NEUTRAL = ("#eef0f3", "#374151")
#: Displayed width of a ROC figure in pixels (its two panels side by side stay readable).
FIGURE_WIDTH = 760
#: Above this many metric lines, the metrics table of a report starts folded.
FOLD_ROWS = 12
#: ROC figures shown inline at most (one per artefact): the demo's two dozen would weigh
#: a megabyte in the notebook; the HTML report has them all.
FIGURE_LIMIT = 4


class MetricRow(NamedTuple):
    """One line of the metrics table, as text."""

    artefact: str
    attack: str
    metric: str
    value: str
    interval: str


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _number(value: Any) -> float:
    """``value`` as a float; NaN for anything that is not a number (text, None)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return math.nan


def _is_metric(column: str, value: Any) -> bool:
    """A metric column: a number, neither an interval bound, a count, a setting nor a detail."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and column not in _SETTINGS and not column.endswith(("_low", "_high"))
            and not column.startswith(("n_", "details_")))


def _interval(low: float, high: float) -> str:
    """``[low, high]``, or an em dash when the metric has no interval."""
    if math.isnan(low) and math.isnan(high):
        return "—"
    return f"[{fmt(low)}, {fmt(high)}]"


def _label(column: str) -> str:
    """A metric's name in words: the report's label, else its column with spaces."""
    label = _LABELS.get(column) or metric_label(column)
    return label.replace("_", " ") if label == column else label


def _metric_lines(row: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(metric, value, interval)`` of each metric of one row of ``to_frame``.

    A metric undefined for this result (NaN without an interval) is left out.
    """
    out = []
    for column, value in row.items():
        if not _is_metric(column, value):
            continue
        interval = _interval(_number(row.get(f"{column}_low")),
                             _number(row.get(f"{column}_high")))
        if math.isnan(value) and interval == "—":
            continue
        note = row.get(f"{column}_note")
        shown = fmt(value) + (f" ({note})" if isinstance(note, str) and note else "")
        out.append((_label(column), shown, interval))
    return out


def metric_rows(results: Sequence[Any], frame: Any) -> list[MetricRow]:
    """The metrics of each result, one line per metric, in the order of the results.

    Parameters
    ----------
    results : sequence of results
        :attr:`AuditReport.all_results`.
    frame : pandas.DataFrame
        :meth:`AuditReport.to_frame` of the same report: one row per result, in that order.
    """
    return [MetricRow(artefact_name(result), result.attack or "—", *line)
            for result, row in zip(results, frame.to_dict("records"), strict=True)
            for line in _metric_lines(row)]


def _badge(finding: Any) -> str:
    background, color = _BADGES.get(finding.severity, _NEUTRAL)
    return (f'<span style="background:{background};color:{color};padding:1px 6px;'
            f'border-radius:3px;font-weight:600">{_esc(finding.label)}</span>')


def _verdict_html(verdict: Any) -> str:
    """The report's answer: its badge, the artefact, and why."""
    if verdict is None:
        return "<p>Verdict: none (no finding applies to these results).</p>"
    return (f"<p>Verdict: {_badge(verdict)} <strong>{_esc(verdict.artefact)}</strong>: "
            f"{_esc(verdict.text)}</p>")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _overview_table(report: Any, page: Any) -> str:
    """One answer per artefact (the page's overview), with its role in the report."""
    roles = {artefact_name(r): report.role(r) for r in reversed(report.all_results)}
    rows = [(f.artefact, roles.get(f.artefact, "result"), f.attack or "—",
             f"{f.metric} {f.interval}".strip() or "—", f.label) for f in page.overview]
    return _table(("Artefact", "Role", "Attack", "Metric", "Verdict"), rows)


def _metrics_table(rows: Sequence[MetricRow], *, single: bool) -> str:
    """The metrics table: without the artefact and attack columns for a single result."""
    if single:
        return _table(("Metric", "Value", "Interval"), [r[2:] for r in rows])
    table = _table(MetricRow._fields, rows)
    if len(rows) <= FOLD_ROWS:
        return table
    return f"<details><summary>All metrics ({len(rows)} lines)</summary>{table}</details>"


def _figures_html(page: Any) -> str:
    """The page's first :data:`FIGURE_LIMIT` ROC figures as inline PNGs, then a count.

    Nothing without matplotlib; the count says how many more the HTML report has.
    """
    try:
        require_matplotlib()
    except ImportError:
        return ""
    groups = page.roc_groups
    images = "".join(f'<img alt="ROC curves {_esc(title)}" width="{FIGURE_WIDTH}" '
                     f'src="{png_data_uri(png)}">' for title, png in groups[:FIGURE_LIMIT])
    more = len(groups) - FIGURE_LIMIT
    if more > 0:
        images += (f"<p>{more} more ROC figure{'s' if more > 1 else ''} in the HTML report "
                   "(<code>report.report(folder)</code>).</p>")
    return images


def _heading(report: Any) -> str:
    """What is shown: the result (with its attack and artefact) or the report's counts."""
    if len(report.all_results) == 1:
        result = report.all_results[0]
        what = f"{report.func or type(result).__name__}: {result.attack or 'attack'} on " \
               f"{artefact_name(result)}"
        return f"<p><strong>{_esc(what)}</strong></p>"
    title = _esc(report.func or "AuditReport") + (
        f" ({_esc(report.kind)})" if report.kind else "")
    return f"<p><strong>{title}</strong>: {_esc(report._counts())}.</p>"


def report_html(report: Any) -> str:
    """The notebook view of an :class:`AuditReport` (a result's: of its one-result report).

    The heading, the verdict, one answer per artefact (for several results), the metrics
    with their intervals (folded beyond :data:`FOLD_ROWS` lines for several results) and
    the ROC figures, read at the report's :attr:`~AuditReport.settings`.

    Parameters
    ----------
    report : AuditReport

    Returns
    -------
    str
        An HTML fragment; every text in it escaped.
    """
    if not len(report):
        return f"<div>{_heading(report)}<p>No result.</p></div>"
    page = report.page()
    single = len(report.all_results) == 1
    parts = [_heading(report), _verdict_html(report.verdict)]
    if not single:
        parts.append(_overview_table(report, page))
    rows = metric_rows(report.all_results, report.to_frame())
    parts += [_metrics_table(rows, single=single), _figures_html(page)]
    return "<div>" + "".join(parts) + "</div>"
