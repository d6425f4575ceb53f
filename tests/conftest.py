from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privaudit.results import AttackResult


def gaussian_result(
    n_members: int = 200,
    n_non_members: int = 200,
    shift: float = 1.0,
    *,
    seed: int = 0,
    predictions: bool = False,
    raw: bool = False,
    **provenance: Any,
) -> AttackResult:
    """Members' scores ~ N(shift, 1), non-members' ~ N(0, 1); seeded."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_members, dtype=int), np.zeros(n_non_members, dtype=int)]
    scores = np.r_[rng.normal(shift, 1, n_members), rng.normal(0, 1, n_non_members)]
    kwargs: dict[str, Any] = {"attack": "loss", "target": "model", **provenance}
    if predictions:
        kwargs["predictions"] = (scores > shift / 2).astype(int)
    if raw:
        kwargs["raw_statistic"] = -scores
        kwargs["raw_statistic_name"] = "loss"
    return AttackResult(labels=labels, scores=scores, **kwargs)


@pytest.fixture(scope="session")
def make_result():
    return gaussian_result
