"""Reproducible studies built from privaudit's pieces (``privaudit demo`` runs one).

The names are imported on first use (PEP 562): a demo worker that runs one part imports
only that part's study, not every study's libraries (the overfitting study alone pulls in
scikit-learn, 2.3 s of CPU per worker process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover
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

#: Each public name, and the module it comes from.
_LAZY_NAMES: dict[str, str] = {
    **dict.fromkeys(("DEMO_PARTS", "run_demo_parts"), "privaudit.studies._demo"),
    **dict.fromkeys(("OVERFITTING_TARGETS", "run_overfitting_study"),
                    "privaudit.studies._overfitting"),
    **dict.fromkeys(("REFERENCE_STUDY_ATTACKS", "run_reference_study"),
                    "privaudit.studies._reference"),
    **dict.fromkeys(("UNLEARNING_ALGORITHMS", "UNLEARNING_HYPERPARAMETERS",
                     "UNLEARNING_QUICK_SETTING", "UNLEARNING_SETTING", "UnlearningSetting",
                     "run_unlearning_study", "study_tables"),
                    "privaudit.studies._unlearning_study"),
}

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


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES)
