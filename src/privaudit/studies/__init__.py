"""Reproducible studies built from privaudit's pieces (``privaudit demo`` runs one)."""

from privaudit.studies._overfitting import OVERFITTING_TARGETS, run_overfitting_study
from privaudit.studies._reference import REFERENCE_STUDY_ATTACKS, run_reference_study

__all__ = [
    "OVERFITTING_TARGETS",
    "REFERENCE_STUDY_ATTACKS",
    "run_overfitting_study",
    "run_reference_study",
]
