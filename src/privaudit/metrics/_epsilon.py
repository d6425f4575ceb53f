"""Effective epsilon: point estimate and Jagielski et al.'s lower bound (contract)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike


class EpsilonBound(NamedTuple):
    """One row of the effective-epsilon lower bound, for one confidence level."""

    confidence: float
    epsilon_low: float
    epsilon_high: float
    attack: str
    threshold: float
    n_validation: int
    n_test: int


def effective_epsilon(labels: ArrayLike, scores: ArrayLike, *, min_count: int = 10) -> float:
    """Point estimate of the effective epsilon of an attack (TAPAS summary)."""
    raise NotImplementedError


def effective_epsilon_lower_bound(
    labels: ArrayLike,
    scores: ArrayLike | Mapping[str, ArrayLike],
    *,
    validation_split: float = 0.1,
    confidence_levels: Sequence[float] = (0.9, 0.95, 0.99),
    random_state: int | np.random.Generator | None = None,
) -> tuple[EpsilonBound, ...]:
    """Statistically valid effective epsilon (Jagielski et al., TAPAS report)."""
    raise NotImplementedError
