"""Everything a finished audit writes: HTML, JSON, CSV, plots and per-result folders."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from privaudit._progress import as_progress
from privaudit.report._binary import write_frame_csv
from privaudit.report._common import check_results
from privaudit.report._epsilon import headline_epsilon
from privaudit.report._html import HtmlReport
from privaudit.results import (
    DEFAULT_FPRS,
    AttackResult,
    ResultsStore,
    RiskResult,
    atomic_write,
    check_fprs,
    check_n_bootstrap,
    dump_json,
)

__all__ = ["build_report", "write_results_json"]

#: The page's title when none is given and the results carry none.
DEFAULT_TITLE = "Privacy audit report"

# Per-slice tables (about 25 rows of 20 numbers per attack) would make results.json some
# ten times longer; they stay in each result's own result.json and in the HTML page.
_AUDIT_NOT_IN_SUMMARY = ("rows",)


def _results_document(
    results: Sequence[AttackResult], metric_dicts: Sequence[dict[str, Any]],
    headlines: Sequence[dict[str, Any]],
    *, n_bootstrap: int, confidence: float, fprs: Sequence[float],
    random_state: Any = None,
    risks: Sequence[RiskResult] = (), proximity: Sequence[Any] = (),
    fidelity: Sequence[tuple[AttackResult, dict[str, Any]]] = (),
    attributes: Sequence[Any] = (),
) -> dict[str, Any]:
    from privaudit._version import __version__

    entries = []
    for result, metrics, headline in zip(results, metric_dicts, headlines, strict=True):
        doc = result.to_dict(metrics=metrics)
        if "slices" in doc["audit"]:
            doc["audit"]["slices"] = {k: v for k, v in doc["audit"]["slices"].items()
                                      if k not in _AUDIT_NOT_IN_SUMMARY}
        # The metrics as computed (floats), so that dump_json(keep_non_finite=True) can
        # tell infinity from undefined; to_dict has already made them null.
        doc["metrics"] = {**metrics, "effective_epsilon_lower_bound": headline}
        entries.append({key: doc[key] for key in (
            "target", "attack", "dataset", "generator", "kind", "parameters", "extra",
            "details", "audit", "out_of_fold", "metrics")})
    out = {
        "privaudit_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        # The seed too, when it is one (a Generator or None cannot be replayed): the gate
        # and the trackers then read the intervals this page shows.
        "settings": {"n_bootstrap": n_bootstrap, "confidence": confidence,
                     "fprs": [float(f) for f in fprs],
                     "random_state": random_state if isinstance(random_state, int)
                     and not isinstance(random_state, bool) else None},
        "results": entries,
    }
    if risks:
        out["risks"] = [risk.to_dict() for risk in risks]
    if proximity:
        out["proximity"] = [near.to_dict() for near in proximity]
    if attributes:
        out["attributes"] = [result.to_dict() for result in attributes]
    if fidelity:
        out["fidelity"] = [{**{k: v for k, v in r.to_dict(metrics=m).items() if k in (
            "target", "attack", "dataset", "generator", "parameters", "extra", "details",
            "audit", "out_of_fold")}, "metrics": m} for r, m in fidelity]
    return out


def write_results_json(
    results: Sequence[AttackResult],
    path: str | os.PathLike[str],
    *,
    n_bootstrap: int = 1000,
    fprs: Sequence[float] = DEFAULT_FPRS,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> Path:
    """Write the metrics of ``results`` as one strict-JSON file.

    The document is ``{"privaudit_version", "created", "settings", "results": [...]}``;
    each entry has ``target``, ``attack``, ``dataset``, ``generator``, ``kind``,
    ``parameters``, ``extra`` (free-form details), ``details`` (the typed ones a report
    reads: ``study``, ``heatmap``...) and ``metrics`` (as :meth:`AttackResult.metrics`: ``auc``,
    ``advantage``, ``effective_epsilon``... each ``{"value", "low", "high"}``,
    ``tpr_at_fpr`` keyed by rate), plus ``effective_epsilon_lower_bound``, the headline
    effective epsilon: ``{"value", "confidence", "note"}``, the Clopper-Pearson lower bound
    of Jagielski et al. on that attack alone (see :attr:`HtmlReport.headline_epsilons`),
    ``value`` null with the reason in ``note`` when there is none (cross-fitted attacks).

    Infinity and undefined are told apart, in strict JSON: a non-finite number is written
    as ``null`` with a sibling ``"<key>_status"`` of ``"infinite"``, ``"-infinite"`` or
    ``"undefined"`` (NaN: an interval not computed, a metric of one class only), e.g.
    ``"effective_epsilon": {"value": null, "value_status": "infinite", "low": null,
    "low_status": "undefined", ...}``; finite numbers have no status key.
    :func:`privaudit.results.restore_non_finite` reads the floats back.

    ``extra`` (attack details), ``audit`` (:class:`~privaudit.results.AuditInfo`: run key,
    baseline check, slices) and ``out_of_fold`` are the result's, except the slice rows
    ``audit.slices.rows`` (the per-slice table that :func:`privaudit.audit_model` adds, some
    ten times the size of the rest of an entry): they stay in each result's own
    ``result.json`` (:meth:`AttackResult.save`, and the ``results/`` folders of
    :func:`build_report`) and in the HTML report. The small ``most_exposed`` list and the
    slice ``settings`` are kept.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    func = "write_results_json"
    results = check_results(results, func)
    n_bootstrap = check_n_bootstrap(n_bootstrap, func)
    fprs = check_fprs(fprs, func)
    metric_dicts = [
        r.metrics(fprs=fprs, n_bootstrap=n_bootstrap, confidence=confidence,
                  random_state=random_state)
        for r in results
    ]
    headlines = [headline_epsilon(r, confidence=confidence, random_state=random_state)
                 for r in results]
    doc = _results_document(results, metric_dicts, headlines, n_bootstrap=n_bootstrap,
                            confidence=confidence, fprs=fprs, random_state=random_state)
    return dump_json(doc, path, where="results", keep_non_finite=True)


def _given_order(given: Any, saved: Sequence[Any], folders: Sequence[str]) -> list[str]:
    """The folders of ``saved`` in the order the results were given to the report.

    The report saves them by kind (attacks, risks, closeness...); the manifest remembers
    the caller's order, so that a rebuild reads them back as they were given.
    """
    folder_of = {id(result): folder for result, folder in zip(saved, folders, strict=True)}
    if not isinstance(given, Sequence) or isinstance(given, (str, bytes)):
        return list(folders)
    ordered = [folder_of.pop(id(result)) for result in given if id(result) in folder_of]
    return ordered + [f for f in folders if f not in ordered]


def build_report(
    results: Sequence[AttackResult],
    directory: str | os.PathLike[str],
    *,
    title: str | None = None,
    n_bootstrap: int = 1000,
    fprs: Sequence[float] = DEFAULT_FPRS,
    confidence: float = 0.95,
    validation_split: float = 0.1,
    confidence_levels: Sequence[float] = (0.9, 0.95, 0.99),
    random_state: int | np.random.Generator | None = 0,
    description: str | None = None,
    scores_format: Literal["csv", "parquet"] = "csv",
    save_results: bool = True,
    progress: Any = None,
) -> Path:
    """Write every output of an audit into ``directory``.

    Files written (each atomically):

    - ``index.html``: the self-contained report (:class:`HtmlReport`);
    - for risk results (:class:`~privaudit.results.RiskResult`), a ``risks`` list in
      ``results.json`` and ``results/<folder>/risk.json``; the files below are written
      when there are attack results;
    - ``results.json``: metrics of every result (:func:`write_results_json`'s layout, plus
      ``folder``, the per-result folder of each entry, and ``overview``: the page's one
      answer per audited artefact, each a :class:`~privaudit.report.Finding` as a dict);
    - ``metrics.csv``: the metrics table (:meth:`BinaryLabelAttackReport.metrics_frame`);
    - ``effective_epsilon.csv``: the effective-epsilon bounds per target;
    - ``roc_curves.png``: ROC curves on linear and log-log axes;
    - ``results/<target>-<hash>__<attack>-<hash>/`` (unless ``save_results=False``,
      named by :func:`privaudit.results.result_folder_name`): each result saved
      with :meth:`AttackResult.save` (``result.json`` + ``scores.csv``), so that the
      report can be rebuilt with ``build_report(load_all_results(directory / "results"),
      ...)``;
    - ``report.json`` (with the folders): the report's title, description and order of
      results (:meth:`~privaudit.results.ResultsStore.write_manifest`), which that rebuild
      keeps.

    The metrics are computed once and shared by all outputs, so the numbers in the HTML,
    JSON and CSV files are identical.

    Parameters
    ----------
    results : sequence of AttackResult or RiskResult
    directory : path-like
        Created if needed.
    title : str, optional
        Title of the page. By default that of the report the results were saved for, when
        they were read back from one (``load_all_results`` returns them with its ``title``
        and ``description``), else ``"Privacy audit report"``.
    n_bootstrap, fprs, confidence, validation_split, confidence_levels, random_state, \
description
        As in :class:`HtmlReport` (``description`` defaults like ``title``).
    scores_format : {"csv", "parquet"}
        Format of the per-record files.
    save_results : bool
        Whether to write the per-result folders.
    progress : None, callable(str) or Progress
        A bar over the bootstrap of the results' metrics (the report's long step):
        ``"Bootstrap of N results"`` advanced as each result's metrics are computed
        (``"Metrics of N results"`` with ``n_bootstrap=0``). The same forms as the audits
        accept (:func:`privaudit._progress.as_progress`): ``None`` (silent), a
        ``callable(str)`` that receives ``"Bootstrap of 3 results: 2/3"``, or a
        :class:`~privaudit._progress.Progress` (the CLI's bar on a terminal, plain log
        lines off one).

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.
    """
    # Refused before any file is written, with this function's name in the message.
    progress = as_progress(progress, func="build_report")
    if title is None:  # a rebuild keeps the saved report's title and description
        title = getattr(results, "title", None) or DEFAULT_TITLE
        if description is None:
            description = getattr(results, "description", None)
    given = results
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    html = HtmlReport(
        results, title=title, n_bootstrap=n_bootstrap, fprs=fprs, confidence=confidence,
        validation_split=validation_split, confidence_levels=confidence_levels,
        random_state=random_state, description=description, progress=progress,
    )
    results, risks, near = html.results, html.risk_results, html.proximity_results
    fidelity, attributes = html.fidelity_results, html.attribute_results
    dp_audits, memorisation = html.dp_results, html.memorisation_results
    # The results store owns the folder layout; the report only links to it.
    store = ResultsStore(directory / "results")
    saved = [*results, *risks, *near, *fidelity, *attributes, *dp_audits, *memorisation]
    folders = ([p.name for p in store.save_all(saved, format=scores_format)]
               if save_results else [])
    doc = _results_document(
        results, html.metric_dicts if results else [], html.headline_epsilons,
        n_bootstrap=html.n_bootstrap, confidence=html.confidence, fprs=html.fprs,
        random_state=random_state, risks=risks,
        proximity=near, fidelity=list(zip(fidelity, html.fidelity_metrics, strict=True)),
        attributes=attributes)
    if dp_audits:
        doc["dp"] = [r.summary() for r in dp_audits]
    if memorisation:
        doc["memorisation"] = [r.summary() for r in memorisation]
    if save_results:
        store.write_manifest(_given_order(given, saved, folders), title=html.title,
                             description=html.description)
        for entry, name in zip([*doc["results"], *doc.get("risks", []),
                                *doc.get("proximity", []), *doc.get("fidelity", []),
                                *doc.get("attributes", []), *doc.get("dp", []),
                                *doc.get("memorisation", [])], folders,
                               strict=True):
            entry["folder"] = f"results/{name}"
    # The page's one answer per artefact, so that the terminal summary reads it rather
    # than bootstrapping every result a second time.
    doc["overview"] = [finding._asdict() for finding in html.overview]
    dump_json(doc, directory / "results.json", where="results", keep_non_finite=True)
    if results:
        write_frame_csv(html.metrics_frame(), directory / "metrics.csv")
        write_frame_csv(html.epsilon_frame, directory / "effective_epsilon.csv")
        png = html.roc_png
        atomic_write(directory / "roc_curves.png", lambda tmp: tmp.write_bytes(png))
    return html.write(directory)
