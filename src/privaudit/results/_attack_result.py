"""``AttackResult``: labels, scores, record ids and provenance of one attack run.

(Skeleton: fields fixed; methods ``metrics``, ``to_dict``, ``save``/``load`` to be filled in.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray


@dataclass(eq=False)
class AttackResult:
    """Outcome of one attack against one target on one set of audited records.

    Parameters
    ----------
    labels : ndarray of shape (n_records,)
        Ground truth, 1 = member (or forgotten record), 0 = non-member.
    scores : ndarray of shape (n_records,)
        Attack scores, higher = more likely member.
    record_ids : ndarray of shape (n_records,), optional
        Identifiers of the audited records (defaults to ``0..n-1``).
    attack, target, dataset, generator : str
        Provenance: names of the attack, the audited artefact, the dataset and (for
        synthetic data) the generator.
    kind : {"membership", "attribute"}
        Which inference the labels answer.
    predictions : ndarray of shape (n_records,), optional
        Hard 0/1 guesses, when the attack makes them (e.g. at a calibrated threshold).
    raw_statistic : ndarray of shape (n_records,), optional
        The statistic before it was turned into a score (e.g. the per-record loss, for
        which lower = more likely member). Kept so both sign conventions can be printed.
    raw_statistic_name : str
        Name of ``raw_statistic`` (e.g. ``"loss"``).
    parameters : dict
        The attack's parameters (JSON-serialisable).
    extra : dict
        Attack-specific numbers reported beside the metrics (e.g. the theoretical advantage
        of Yeom et al.'s Theorem 3).
    """

    labels: NDArray[np.int8]
    scores: NDArray[np.float64]
    record_ids: NDArray[Any] | None = None
    attack: str = ""
    target: str = ""
    dataset: str = ""
    generator: str = ""
    kind: Literal["membership", "attribute"] = "membership"
    predictions: NDArray[np.int8] | None = None
    raw_statistic: NDArray[np.float64] | None = None
    raw_statistic_name: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
