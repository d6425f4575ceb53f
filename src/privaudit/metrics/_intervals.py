"""Confidence intervals: Clopper-Pearson, Wilson, bootstrap (contract)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike


class Estimate(NamedTuple):
    """A point estimate with the bounds of its confidence interval."""

    value: float
    low: float
    high: float


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> Estimate:
    """Exact (Clopper-Pearson) interval of a binomial proportion k/n."""
    raise NotImplementedError


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> Estimate:
    """Wilson score interval of a binomial proportion k/n."""
    raise NotImplementedError


def bootstrap_ci(
    metric: Callable[..., float],
    labels: ArrayLike,
    scores: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> Estimate:
    """Bootstrap (percentile) interval of ``metric(labels, scores)``."""
    raise NotImplementedError
