"""Reproducible studies built from privaudit's pieces (``privaudit demo`` runs one)."""

from privaudit.studies._overfitting import OVERFITTING_TARGETS, run_overfitting_study

__all__ = ["OVERFITTING_TARGETS", "run_overfitting_study"]
