"""The terminal's answer after a report is written: one row per audited artefact.

The report opens with its overview (:attr:`privaudit.report.HtmlReport.overview`: per
audited artefact, the strongest finding the data can support, with its attack, metric and
interval); the terminal prints the same rows as one table, so that the answer a reviewer
reads in the page and the one the user reads in the terminal are the same
(:func:`overview_table`). The detailed tables stay behind ``--verbose``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SEVERITY_STYLES", "finding_from_entry", "overview_table", "report_overview"]

#: How each severity's answer is drawn: leakage levels from red to green; the notes that
#: are not leakage (a baseline about the data split, an artefact of the audit, nothing
#: measurable) in colours no level uses.
SEVERITY_STYLES: dict[str, str] = {
    "critical": "bold red",
    "high": "red",
    "moderate": "yellow",
    "low": "green",
    "minimal": "green",
    "baseline": "cyan",
    "artefact": "magenta",
    "undefined": "dim",
}

#: The columns of the overview, as the report's overview table names them.
_COLUMNS = ("artefact", "answer", "attack", "metric", "interval")


def finding_from_entry(entry: Mapping[str, Any]) -> Any:
    """A :class:`~privaudit.report.Finding` from its ``results.json`` form (a dict).

    Keys the entry lacks take an empty value (a ``strength`` of 0), so an entry written
    with fewer fields still reads; a null ``strength`` (a non-finite number) reads as NaN.
    """
    from privaudit.report import Finding

    values: dict[str, Any] = {name: str(entry.get(name) or "") for name in Finding._fields
                              if name != "strength"}
    strength = entry.get("strength", 0.0)
    values["strength"] = math.nan if strength is None else float(strength)
    return Finding(**values)


def report_overview(out: Path, *, results: Sequence[Any] | None = None,
                    random_state: Any = 0, progress: Any = None) -> list[Any]:
    """The overview rows of the report written to ``out``, in the page's order.

    Parameters
    ----------
    out : Path
        The report folder (it holds ``results.json``).
    results : sequence, optional
        The results the report was built from; by default those saved in ``out/results``.
        Read only when ``results.json`` does not record the overview.
    random_state : int, optional
        The seed the report's bootstrap used, for the same case.
    progress : None, bool, callable(str) or Progress
        Shows the bootstrap of that case (:mod:`privaudit._progress`).

    Returns
    -------
    list of Finding
        From ``results.json``'s ``overview`` when the report recorded it; otherwise
        computed again from the results with the report's settings (the same
        :attr:`~privaudit.report.HtmlReport.overview`, the same intervals).
    """
    from privaudit.results import restore_non_finite

    data = restore_non_finite(json.loads((out / "results.json").read_text()))
    if "overview" in data:
        return [finding_from_entry(entry) for entry in data["overview"]]
    return _computed_overview(out, data.get("settings") or {}, results, random_state,
                              progress)


def _computed_overview(out: Path, settings: Mapping[str, Any], results: Sequence[Any] | None,
                       random_state: Any, progress: Any) -> list[Any]:
    """:attr:`HtmlReport.overview` of the results, with the settings ``results.json`` names."""
    from privaudit.report import HtmlReport
    from privaudit.results import load_all_results

    if results is None:
        folder = out / "results"
        results = load_all_results([folder]) if folder.is_dir() else []
    if not results:
        return []
    options = {key: settings[key] for key in ("n_bootstrap", "confidence", "fprs")
               if key in settings}
    return list(HtmlReport(results, random_state=random_state, progress=progress,
                           **options).overview)


def overview_table(findings: Sequence[Any]) -> Any:
    """The overview as a rich table: artefact, answer, attack, metric, interval.

    Names are never cut: a long artefact name wraps (and a word longer than its column
    folds) instead of ending in an ellipsis. Every cell is plain text (a name from the
    user's files is never read as markup, and its control characters are escaped).
    """
    from rich.table import Table
    from rich.text import Text

    from privaudit.cli._warnings import plain

    table = Table(title="Overview: one answer per audited artefact", title_justify="left")
    for column in _COLUMNS:
        table.add_column(column, overflow="fold",
                         min_width=12 if column in ("artefact", "metric") else None)
    for finding in findings:
        answer = Text(finding.label or finding.severity,
                      style=SEVERITY_STYLES.get(finding.severity, ""))
        table.add_row(plain(finding.artefact), answer, plain(finding.attack),
                      plain(finding.metric), plain(finding.interval or "—"))
    return table
