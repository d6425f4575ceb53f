"""Reproducible studies built from privaudit's pieces (``privaudit demo`` runs one)."""

from privaudit.studies._demo import DEMO_PARTS, run_demo_parts
from privaudit.studies._overfitting import OVERFITTING_TARGETS, run_overfitting_study
from privaudit.studies._reference import REFERENCE_STUDY_ATTACKS, run_reference_study
from privaudit.studies._unlearning_study import (
    UNLEARNING_ALGORITHMS,
    UNLEARNING_HYPERPARAMETERS,
    UNLEARNING_QUICK_SETTING,
    UNLEARNING_SETTING,
    UnlearningSetting,
    run_unlearning_study,
    study_tables,
)

__all__ = [
    "DEMO_PARTS",
    "OVERFITTING_TARGETS",
    "REFERENCE_STUDY_ATTACKS",
    "UNLEARNING_ALGORITHMS",
    "UNLEARNING_HYPERPARAMETERS",
    "UNLEARNING_QUICK_SETTING",
    "UNLEARNING_SETTING",
    "UnlearningSetting",
    "run_demo_parts",
    "run_overfitting_study",
    "run_reference_study",
    "run_unlearning_study",
    "study_tables",
]
