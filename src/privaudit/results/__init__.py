"""Results of attacks: what every attack returns and every report consumes.

An :class:`AttackResult` holds the labels (1 = member), scores (higher = more likely member),
record ids and provenance of one attack run; it computes its metrics with confidence
intervals by calling :mod:`privaudit.metrics`, and saves to / loads from a folder
(``result.json`` + ``scores.csv`` or ``scores.parquet``) with atomic writes.

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
from privaudit.results._slicing import SLICE_TYPES, slice_metrics, vulnerability_ranking

__all__ = [
    "DEFAULT_FPRS",
    "SLICE_TYPES",
    "AttackResult",
    "Convention",
    "ScoreView",
    "fpr_key",
    "load_results",
    "slice_metrics",
    "vulnerability_ranking",
]
