"""Metrics of hard (0/1) membership guesses (contract; see issue 2)."""

from __future__ import annotations

from typing import NamedTuple

from numpy.typing import ArrayLike


class BinaryMetrics(NamedTuple):
    """Accuracy, TPR, FPR, precision and advantage (TPR - FPR) of hard guesses."""

    accuracy: float
    true_positive_rate: float
    false_positive_rate: float
    precision: float
    advantage: float


def binary_metrics(labels: ArrayLike, predictions: ArrayLike) -> BinaryMetrics:
    """Metrics of hard membership guesses (1 = guessed member)."""
    raise NotImplementedError


def privacy_gain(labels: ArrayLike, predictions: ArrayLike, *, raw_advantage: float = 1.0) -> float:
    """Privacy gain of Stadler et al. (see the implementation's docstring)."""
    raise NotImplementedError
