"""Reproducible studies built from privaudit's pieces (``privaudit demo`` runs one)."""

from privaudit.studies._demo import DEMO_PARTS, run_demo_parts
from privaudit.studies._overfitting import OVERFITTING_TARGETS, run_overfitting_study
from privaudit.studies._reference import REFERENCE_STUDY_ATTACKS, run_reference_study

__all__ = [
    "DEMO_PARTS",
    "OVERFITTING_TARGETS",
    "REFERENCE_STUDY_ATTACKS",
    "run_demo_parts",
    "run_overfitting_study",
    "run_reference_study",
]
