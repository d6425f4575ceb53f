"""Results of attacks: what every attack returns and every report consumes.

An :class:`AttackResult` holds the labels (1 = member), scores (higher = more likely member),
record ids and provenance of one attack run, plus the typed :class:`AuditInfo` the audit
stamps on it (run key, :class:`BaselineCheck`, :class:`SliceSummary`) and free-form
attack details in ``extra``; it computes its metrics with confidence intervals by calling
:mod:`privaudit.metrics` (the metric policy), and saves to / loads from a folder
(``result.json`` + ``scores.csv`` or ``scores.parquet``) with atomic writes (the disk
format). Three modules, one per concern.
Loading is defensive: a damaged or tampered result raises :class:`ResultFileError` naming
the file, and only files inside a result's own folder are read. Every saved file carries
a SHA-256 in the result's JSON (and the JSON a digest of its own content): a result edited
after it was written is refused with :class:`ModifiedResultError`, naming the files; one
written before digests loads with an :class:`UnsealedResultWarning`. Every CSV file privaudit
writes goes through :func:`write_csv` (cells never start a formula), and every result
folder is named by :func:`result_folder_name` (unique per target and attack name).

A :class:`ProximityResult` holds one closeness value per synthetic row (distance to the
closest training record, distance ratio, copy or not) beside the same per unseen holdout
row, summarised with distribution-free intervals. A :class:`RiskResult` holds the counts
of a count-based risk (attack, baseline and control successes, anonymeter style) with
Wilson intervals and the residual risk. An :class:`AttributeResult` holds an attribute
inference attack's guesses on a model's members and non-members beside model-free guesses
(Yeom et al.'s attribute advantages, with Newcombe intervals). Results files are strict JSON;
:func:`mark_non_finite` / :func:`restore_non_finite` keep infinity apart from
undefined (both ``null``) with a ``<key>_status`` key. The file helpers (:func:`atomic_write`,
:func:`dump_json`...) and the checks of report settings (:func:`check_fprs`,
:func:`check_n_bootstrap`) are public for the reports.

The four classes are one family (:class:`ResultFamily`, :class:`Result`): each has the
header ``target``, ``attack``, ``dataset``, ``generator``, ``kind`` (what it infers),
``parameters``, ``provenance`` and ``audit`` (with ``audit_kind``, the audit that made
it), and a class attribute ``RESULT_TYPE`` (``"attack"``, ``"attribute"``, ``"risk"``,
``"proximity"``; :func:`result_type_of` for any object) that reports dispatch on. The
numbers a report reads beside the metrics (a study's tag, Apollo's heatmap...) are typed
attributes, saved under ``"details"``; results that kept them in ``extra`` still load.

Layering: DESIGN.md places results beside the reports, but attacks build results and may
not import :mod:`privaudit.report`; this package therefore sits just above
:mod:`privaudit.metrics` (the only privaudit module it imports), and reports only consume it.
"""

from privaudit.results._attack_result import AttackResult, Convention, ScoreView, load_results
from privaudit.results._attribute import AttributeResult
from privaudit.results._audit_info import AuditInfo, BaselineCheck, Finding, SliceSummary
from privaudit.results._dp_audit import DPAuditResult
from privaudit.results._family import RESULT_TYPES, Result, ResultFamily, result_type_of
from privaudit.results._integrity import ModifiedResultError, UnsealedResultWarning
from privaudit.results._io import (
    DamagedResultWarning,
    ResultFileError,
    atomic_write,
    atomic_write_text,
    csv_safe_cell,
    csv_safe_frame,
    dump_json,
    file_name_part,
    mark_non_finite,
    restore_csv_cell,
    restore_non_finite,
    result_folder_name,
    to_jsonable,
    write_csv,
)
from privaudit.results._memorisation import MemorisationResult
from privaudit.results._metric_policy import (
    DEFAULT_FPRS,
    check_fprs,
    check_n_bootstrap,
    fpr_key,
)
from privaudit.results._proximity import ProximityResult, quantile_interval
from privaudit.results._risk import RiskResult
from privaudit.results._slicing import SLICE_TYPES, slice_metrics, vulnerability_ranking
from privaudit.results._store import (
    DEFAULT_REPORT_SETTINGS,
    RESULT_KINDS,
    ResultsStore,
    load_all_results,
    load_result,
    read_report_manifest,
    report_settings,
    result_folder_names,
)

__all__ = [
    "DEFAULT_FPRS",
    "DEFAULT_REPORT_SETTINGS",
    "RESULT_KINDS",
    "RESULT_TYPES",
    "SLICE_TYPES",
    "AttackResult",
    "AttributeResult",
    "AuditInfo",
    "BaselineCheck",
    "Convention",
    "DPAuditResult",
    "DamagedResultWarning",
    "Finding",
    "MemorisationResult",
    "ModifiedResultError",
    "ProximityResult",
    "Result",
    "ResultFamily",
    "ResultFileError",
    "ResultsStore",
    "RiskResult",
    "ScoreView",
    "SliceSummary",
    "UnsealedResultWarning",
    "atomic_write",
    "atomic_write_text",
    "check_fprs",
    "check_n_bootstrap",
    "csv_safe_cell",
    "csv_safe_frame",
    "dump_json",
    "file_name_part",
    "fpr_key",
    "load_all_results",
    "load_result",
    "load_results",
    "mark_non_finite",
    "quantile_interval",
    "read_report_manifest",
    "report_settings",
    "restore_csv_cell",
    "restore_non_finite",
    "result_folder_name",
    "result_folder_names",
    "result_type_of",
    "slice_metrics",
    "to_jsonable",
    "vulnerability_ranking",
    "write_csv",
]
