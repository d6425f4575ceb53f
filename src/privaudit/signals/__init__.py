"""Per-record signals (pure numpy): computed once from a target's outputs, read by attacks.

Convention of each signal's direction: ``cross_entropy``, ``squared_error``,
``absolute_error``, ``entropy`` and ``modified_entropy`` are lower for members;
``true_class_confidence``, ``logit_confidence`` and ``correctness`` are higher for members.
"""

from privaudit.signals._signals import (
    EPS,
    absolute_error,
    correctness,
    cross_entropy,
    entropy,
    logit_confidence,
    modified_entropy,
    residual,
    squared_error,
    true_class_confidence,
)

__all__ = [
    "EPS",
    "absolute_error",
    "correctness",
    "cross_entropy",
    "entropy",
    "logit_confidence",
    "modified_entropy",
    "residual",
    "squared_error",
    "true_class_confidence",
]
