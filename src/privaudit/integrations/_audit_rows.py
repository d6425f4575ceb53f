"""One reader of an audit for every integration: its results' metrics, flat, and its verdict.

The trackers (:func:`~privaudit.integrations.log_mlflow`,
:func:`~privaudit.integrations.log_wandb`) and the model card read an audit the same way,
through :func:`read_audit`: one :class:`ResultMetrics` per result (its header and every
metric as ``<name>``, ``<name>_low``, ``<name>_high``) and the report's overview and
verdict. The numbers are the report's own, never computed a second way:

- an :class:`~privaudit.report.AuditReport` (or a list of results) is read by
  :meth:`AuditReport.to_frame <privaudit.report.AuditReport.to_frame>` (the rows of
  ``metrics.csv``) and :attr:`AuditReport.verdict <privaudit.report.AuditReport.verdict>`;
- a report folder written by :func:`~privaudit.report.build_report` is read from its
  files: ``metrics.csv`` for the attack results, ``results.json`` for the settings and the
  overview, and the other results (risks, closeness, attributes, DP audits...) loaded from
  their folders and read as ``to_frame`` reads them, so nothing is bootstrapped again;
- a folder of saved results without a report is loaded and read as a report.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._files import JSON_MAX_BYTES, read_json_inside, read_limited_inside
from privaudit._validation import param_error
from privaudit.report import AuditReport, Finding, HtmlReport, strongest_finding
from privaudit.results import load_all_results, load_result, restore_non_finite

__all__ = ["AuditSummary", "ResultMetrics", "read_audit"]

#: The header of a row of ``to_frame`` / ``metrics.csv``: who, not how much.
_HEADER = ("target", "attack", "dataset", "generator", "kind", "role", "result_kind",
           "sensitive_attribute")
#: Where the number of reference (shadow) models of an attack is recorded, in that order.
_REFERENCE_KEYS = ("n_reference_models", "n_shadow_models", "n_shadows")
#: The report settings a report folder records in ``results.json``.
_SETTINGS = ("n_bootstrap", "confidence", "fprs")


@dataclass(frozen=True)
class ResultMetrics:
    """One result of an audit as the integrations read it.

    Attributes
    ----------
    target, attack, dataset, role, kind : str
        The result's header; ``role`` is ``"result"``, ``"baseline"`` or ``"compared"``
        (:data:`privaudit.report.AuditReport.role`), ``kind`` what it infers
        (``"membership"``, ``"singling_out"``, ``"dp-training"``...).
    metrics : dict of str to float
        Every number of its row in the report's table: ``auc``, ``auc_low``,
        ``auc_high``, ``tpr_at_fpr_0.001``... A cell the table leaves empty because the
        metric belongs to another kind of result is left out; an undefined value beside a
        defined one (an infinite ε with an undefined interval) is kept as NaN.
    parameters : dict
        The attack's parameters.
    reference_models : int or None
        How many reference (shadow) models the attack trained, when it trained any.
    """

    target: str
    attack: str
    dataset: str
    role: str
    kind: str
    metrics: dict[str, float]
    parameters: dict[str, Any] = field(default_factory=dict)
    reference_models: int | None = None


@dataclass(frozen=True)
class AuditSummary:
    """An audit as the integrations read it (:func:`read_audit`).

    Attributes
    ----------
    results : tuple of ResultMetrics
    overview : tuple of Finding
        The report's one answer per audited artefact
        (:attr:`privaudit.report.HtmlReport.overview`).
    verdict : Finding or None
        The strongest of those answers (:func:`privaudit.report.strongest_finding`),
        compared artefacts left out: :attr:`privaudit.report.AuditReport.verdict`.
    settings : dict
        ``n_bootstrap``, ``confidence`` and ``fprs`` of the report.
    title : str
    html : pathlib.Path or None
        The report's ``index.html`` when the audit was read from a report folder.
    page : HtmlReport or None
        The page of an audit read in memory (or from saved results): the report whose
        numbers these are, rendered when a tracker attaches it
        (:meth:`HtmlReport.write <privaudit.report.HtmlReport.write>`). None for a report
        folder (its ``index.html`` is attached) and an empty audit.
    """

    results: tuple[ResultMetrics, ...]
    overview: tuple[Finding, ...]
    verdict: Finding | None
    settings: dict[str, Any]
    title: str = ""
    html: Path | None = None
    page: HtmlReport | None = field(default=None, compare=False, repr=False)


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a real number (numpy's too, not a bool), else None."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


def row_metrics(row: Mapping[str, Any]) -> dict[str, float]:
    """The numbers of one row of the report's table, empty cells of other kinds left out.

    A NaN is kept when the same metric has a defined value, lower or upper bound (it is
    that metric's undefined part), dropped otherwise (the column is another kind's).
    """
    numbers = {key: _number(value) for key, value in row.items() if key not in _HEADER}
    numbers = {key: value for key, value in numbers.items() if value is not None}

    def defined(name: str) -> bool:
        return any(not math.isnan(numbers.get(f"{name}{end}", math.nan))
                   for end in ("", "_low", "_high"))

    return {key: value for key, value in numbers.items()
            if not math.isnan(value) or defined(key.removesuffix("_low").removesuffix("_high"))}


def _reference_models(*sources: Mapping[str, Any] | None) -> int | None:
    for source in sources:
        for key in _REFERENCE_KEYS:
            value = (source or {}).get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _from_row(row: Mapping[str, Any], parameters: Mapping[str, Any] | None,
              extra: Mapping[str, Any] | None) -> ResultMetrics:
    def text(key: str) -> str:
        value = row.get(key)
        return "" if value is None or (isinstance(value, float) and math.isnan(value)) \
            else str(value)

    return ResultMetrics(
        target=text("target"), attack=text("attack"), dataset=text("dataset"),
        role=text("role") or "result", kind=text("result_kind") or text("kind"),
        metrics=row_metrics(row), parameters=dict(parameters or {}),
        reference_models=_reference_models(parameters, extra))


def _from_report(report: AuditReport, settings: Mapping[str, Any]) -> AuditSummary:
    """Read an in-memory report with ``settings`` (those of :meth:`AuditReport.to_frame`).

    The table, the verdict and the page are one page's (:meth:`AuditReport.page`, cached
    per settings): a Generator seed is drawn from once, as an int, so that they are not
    three bootstraps of their own.
    """
    report = report.with_settings(**settings) if settings else report
    seed = report.settings["random_state"]
    if isinstance(seed, np.random.Generator):
        report = report.with_settings(random_state=int(seed.integers(2**32)))
    frame = report.to_frame()
    results = tuple(
        _from_row(row, getattr(result, "parameters", None), getattr(result, "extra", None))
        for row, result in zip(frame.to_dict("records"), report.all_results, strict=True))
    page = report.page() if len(report) else None
    return AuditSummary(results=results, overview=tuple(page.overview) if page else (),
                        verdict=report.verdict,
                        settings={k: report.settings[k] for k in _SETTINGS},
                        title=getattr(report, "title", "") or report.func, page=page)


def _finding(entry: Mapping[str, Any]) -> Finding:
    """A :class:`~privaudit.report.Finding` from its ``results.json`` form."""
    strength = entry.get("strength")
    return Finding(**{name: str(entry.get(name) or "") for name in Finding._fields
                      if name != "strength"},
                   strength=math.nan if strength is None else float(strength))


def _other_results(folder: Path, doc: Mapping[str, Any]) -> list[Any]:
    """The results of a report folder that are not rows of ``metrics.csv``."""
    entries = [entry for key, part in doc.items() if key not in ("results", "overview")
               and isinstance(part, list) for entry in part
               if isinstance(entry, Mapping) and "folder" in entry]
    return [load_result(folder / entry["folder"], root=folder) for entry in entries]


def _report_file(folder: Path, name: str) -> Path | None:
    """``folder / name`` when it is a regular file of the folder, never a link.

    A report folder may come from someone else: its ``index.html`` linked to a file
    elsewhere (a key, a credential) would be uploaded to the tracker as the report.
    """
    path = folder / name
    return path if path.is_file() and not path.is_symlink() else None


def _report_doc(folder: Path) -> dict[str, Any]:
    """``results.json`` of a report folder, its parts of the types the report writes."""
    doc = restore_non_finite(read_json_inside(folder, "results.json",
                                              what="the report's results.json"))
    problem = None if isinstance(doc, dict) else f"the document is a {type(doc).__name__}"
    for key, kind in (("settings", dict), ("results", list), ("overview", list)):
        part = doc.get(key, kind()) if problem is None else None
        if problem is None and not (isinstance(part, kind) and (
                kind is dict or all(isinstance(entry, dict) for entry in part))):
            problem = f"its {key!r} is not the report's"
    folders = [] if problem else [entry["folder"] for part in doc.values()
                                  if isinstance(part, list) for entry in part
                                  if isinstance(entry, dict) and "folder" in entry]
    if not all(isinstance(name, str) for name in folders):
        problem = "a result's 'folder' is not a path"
    if problem is not None:
        raise param_error("report", "read_audit", "a report folder whose results.json is "
                          "the report's (settings an object; results and overview lists "
                          "of objects)", f"<{folder / 'results.json'}: {problem}>")
    return doc


def _same_setting(given: Any, own: Any) -> bool:
    """Whether a setting given equals the report folder's own (``fprs``: a JSON list)."""
    if isinstance(own, list):
        return (isinstance(given, Sequence) and not isinstance(given, str)
                and [_number(v) for v in given] == [_number(v) for v in own])
    return _number(given) is not None and _number(given) == _number(own)


def _folder_settings(folder: Path, doc: Mapping[str, Any],
                     given: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a report folder's numbers: those its ``results.json`` records.

    Its numbers are read, not computed again (``metrics.csv`` and the page it attaches
    were computed with its settings): a setting given that differs from the folder's own
    is refused, since logging it would misstate how the numbers were computed, and
    computing them again would log numbers its page does not show. A setting the folder
    does not record is the one given, else :func:`~privaudit.report.build_report`'s
    default (``n_bootstrap=1000``).
    """
    recorded, defaults = doc.get("settings", {}), AuditReport([]).settings
    chosen = dict(given)  # random_state... apply to the results read again
    for name in _SETTINGS:
        own = recorded.get(name)
        if own is None:
            chosen[name] = given.get(name, defaults[name])
        elif name in given and not _same_setting(given[name], own):
            raise param_error(
                name, "read_audit", f"the report folder's own ({own!r}) or not given: its "
                "numbers were computed with it and are read, not computed again. For other "
                f"settings, read its saved results ({str(folder / 'results')!r}) or "
                "rebuild the report (privaudit report)", given[name])
        else:
            chosen[name] = own
    return chosen


def _from_report_folder(folder: Path, settings: Mapping[str, Any]) -> AuditSummary:
    """Read a report written by :func:`~privaudit.report.build_report` from its files."""
    import io

    import pandas as pd

    doc = _report_doc(folder)
    chosen = _folder_settings(folder, doc, settings)
    entries = doc.get("results", [])
    # a link is refused naming the file (OutsideFolderError), never followed
    rows = (pd.read_csv(io.BytesIO(read_limited_inside(
        folder, "metrics.csv", max_bytes=JSON_MAX_BYTES, what="the report's metrics.csv")))
        .to_dict("records") if entries and os.path.lexists(folder / "metrics.csv") else [])
    if len(rows) != len(entries):
        raise param_error("report", "read_audit", "a report folder whose metrics.csv has "
                          "one row per entry of its results.json",
                          f"<{len(rows)} rows for {len(entries)} results in {folder}>")
    results = [_from_row(row, entry.get("parameters"), entry.get("extra"))
               for row, entry in zip(rows, entries, strict=True)]
    others = _other_results(folder, doc)
    if others:
        results += _from_report(AuditReport(others), chosen).results
    overview = tuple(_finding(entry) for entry in doc.get("overview", []))
    manifest = (read_json_inside(folder, "report.json", what="the report's manifest")
                if (folder / "report.json").is_file() else {})
    title = manifest.get("title") if isinstance(manifest, dict) else None
    return AuditSummary(results=tuple(results), overview=overview,
                        verdict=strongest_finding(list(overview)), settings=chosen,
                        title=title if isinstance(title, str) else "",
                        html=_report_file(folder, "index.html"))


def read_audit(report: Any, **settings: Any) -> AuditSummary:
    """Read an audit's results, metrics and verdict, as its report tabulates them.

    Parameters
    ----------
    report : AuditReport, sequence of results, path-like or AuditSummary
        What an ``audit_*`` function returned; a list of results; a report folder
        written by :func:`~privaudit.report.build_report` (or ``privaudit audit``), read
        from its files; a folder of saved results; or what this function returned
        (returned as it is: an audit read once, logged to several trackers).
    **settings
        ``n_bootstrap``, ``fprs``, ``confidence``, ``random_state`` as
        :meth:`~privaudit.report.AuditReport.to_frame` takes them. A report folder's
        numbers are those its files hold, computed with its own settings (its
        ``results.json``): those are the settings read and logged, and a different
        ``n_bootstrap``, ``fprs`` or ``confidence`` is refused (its saved results, the
        folder's ``results/``, are read with any).

    Returns
    -------
    AuditSummary

    Raises
    ------
    TypeError
        When ``report`` is none of these.
    ValueError
        Naming the setting, when it differs from a report folder's own.
    FileNotFoundError
        When the folder does not exist or holds no saved result.
    """
    if isinstance(report, AuditSummary):  # read once, logged to several trackers
        if settings:
            raise param_error("settings", "read_audit", "none for an AuditSummary (its "
                              "numbers are computed)", sorted(settings), error=TypeError)
        return report
    if isinstance(report, AuditReport):
        return _from_report(report, settings)
    if isinstance(report, (str, os.PathLike)):
        folder = Path(report)
        if not folder.is_dir():
            raise FileNotFoundError(f"The results folder {str(folder)!r} does not exist.")
        if (folder / "results.json").is_file():
            return _from_report_folder(folder, settings)
        saved = load_all_results(folder)
        summary = _from_report(AuditReport(list(saved)), settings)
        return AuditSummary(**{**summary.__dict__, "title": saved.title or ""})
    if isinstance(report, Sequence) and not isinstance(report, (bytes, Mapping)):
        return _from_report(AuditReport(list(report)), settings)
    raise param_error("report", "read_audit", "an AuditReport, a sequence of results or a "
                      "results folder", f"<{type(report).__name__}>", error=TypeError)
