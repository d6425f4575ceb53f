"""Results of attacks: what every attack returns and every report consumes.

An :class:`AttackResult` holds the labels (1 = member), scores (higher = more likely member),
record ids and provenance of one attack run; it computes its metrics with confidence
intervals by calling :mod:`privaudit.metrics`, and saves to / loads from a folder
(``result.json`` + ``scores.csv`` or ``scores.parquet``) with atomic writes.
Loading is defensive: a damaged or tampered result raises :class:`ResultFileError` naming
the file, and only files inside a result's own folder are read. Every CSV file privaudit
writes goes through :func:`write_csv` (cells never start a formula), and every result
folder is named by :func:`result_folder_name` (unique per target and attack name).

Layering: DESIGN.md places results beside the reports, but attacks build results and may
not import :mod:`privaudit.report`; this package therefore sits just above
:mod:`privaudit.metrics` (the only privaudit module it imports), and reports only consume it.
"""

from privaudit.results._attack_result import (
    DEFAULT_FPRS,
    AttackResult,
    Convention,
    ScoreView,
    fpr_key,
    load_results,
)
from privaudit.results._io import (
    DamagedResultWarning,
    ResultFileError,
    csv_safe_cell,
    csv_safe_frame,
    file_name_part,
    restore_csv_cell,
    result_folder_name,
    write_csv,
)
from privaudit.results._slicing import SLICE_TYPES, slice_metrics, vulnerability_ranking

__all__ = [
    "DEFAULT_FPRS",
    "SLICE_TYPES",
    "AttackResult",
    "Convention",
    "DamagedResultWarning",
    "ResultFileError",
    "ScoreView",
    "csv_safe_cell",
    "csv_safe_frame",
    "file_name_part",
    "fpr_key",
    "load_results",
    "restore_csv_cell",
    "result_folder_name",
    "slice_metrics",
    "vulnerability_ranking",
    "write_csv",
]
