"""Small memorisation results (an LLM audit's extraction checks and canaries), built real.

The extraction result's comparisons come from the function the audit uses
(:func:`privaudit.llm._extraction.comparison`: Wilson rates and Newcombe's difference for
k-extractability, bootstrap intervals for extraction strength); the canaries' exposures
from their ranks in a secret space of 10 000 (``log2 |R| - log2 rank``, Carlini et al.
2019) and their one-run epsilon from :func:`privaudit.metrics.canary_epsilon_lower_bound`,
as ``audit_llm(..., checks=["canaries"])`` computes them. Imported by the integrations'
tests too (``from policy.memorisation_results import ...``).
"""

from __future__ import annotations

import math

import numpy as np

from privaudit.metrics import canary_epsilon_lower_bound
from privaudit.results import AuditInfo, MemorisationResult

#: The canaries' secret space: 4-digit PINs.
SPACE_SIZE = 10_000


def extraction_result(member_hits: int = 8, held_out_hits: int = 1, n: int = 20, *,
                      confidence: float = 0.95, target: str = "tiny-lm",
                      n_bootstrap: int = 100) -> MemorisationResult:
    """``n`` member and ``n`` held-out texts; so many of each extracted verbatim."""
    from privaudit.llm._extraction import comparison

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(n), np.zeros(n)].astype(np.int8)
    extracted = np.zeros(2 * n)
    extracted[:member_hits] = extracted[n:n + held_out_hits] = 1.0
    strength = np.clip(rng.uniform(0, 0.7, 2 * n) + 0.3 * labels, 0, 1)
    values = {"k-extractability": extracted, "extraction-strength": strength}
    comparisons = {name: comparison(name, labels, v, n_bootstrap=n_bootstrap,
                                    confidence=confidence, rng=rng)
                   for name, v in values.items()}
    texts = [f"text number {i}" for i in range(2 * n)]
    return MemorisationResult(
        check="extraction", labels=labels, values=values, comparisons=comparisons,
        prefixes=[t[:4] for t in texts], continuations=[t[4:] for t in texts],
        suffixes=[t[4:] for t in texts], matched_tokens=(6 * extracted).astype(int),
        suffix_tokens=np.full(2 * n, 6), confidence=confidence, attack="extraction",
        target=target, dataset="toy-texts",
        parameters={"prefix_length": 3, "suffix_length": 6}, audit=AuditInfo(kind="llm"))


def canary_result(ranks: list[int], repetitions: list[int], *,
                  included: list[bool] | None = None, target: str = "tiny-lm",
                  delta: float = 1e-5) -> MemorisationResult:
    """One canary per rank (1 = its secret ranked first); ``included``: at random."""
    exposures = [math.log2(SPACE_SIZE) - math.log2(rank) for rank in ranks]
    rows = [{"format": "my pin is {}", "secret": f"{i:04d}", "repetitions": reps,
             "exposure": exposure, "rank": float(rank), "log_perplexity": 1.0,
             "method": "enumerate", "space_size": SPACE_SIZE,
             "included": None if included is None else bool(included[i]),
             "score": exposure}
            for i, (rank, reps, exposure) in enumerate(zip(ranks, repetitions, exposures,
                                                           strict=True))]
    bound = None
    if included is not None:
        scores, chosen = np.asarray(exposures), np.asarray(included)
        bound = canary_epsilon_lower_bound(scores[chosen], scores[~chosen], delta=delta,
                                           confidence=0.95, random_state=0)
    return MemorisationResult(
        check="canaries", canaries=rows, epsilon=bound,
        delta=delta if included is not None else None, attack="canaries", target=target,
        dataset="toy-texts", parameters={"space_size": SPACE_SIZE},
        audit=AuditInfo(kind="llm"))


def exposed_canaries(n: int = 12, seed: int = 0) -> MemorisationResult:
    """``n`` canaries inserted 1, 4 or 16 times: the more copies, the lower the rank."""
    rng = np.random.default_rng(seed)
    repetitions = [(1, 4, 16)[i % 3] for i in range(n)]
    ranks = [int(rng.integers(1, SPACE_SIZE // reps ** 2 + 2)) for reps in repetitions]
    return canary_result(ranks, repetitions)


def random_canaries(m: int = 80, seed: int = 0) -> MemorisationResult:
    """``m`` canaries included at random: the included ones ranked near the top."""
    rng = np.random.default_rng(seed)
    included = rng.random(m) < 0.5
    ranks = [int(rng.integers(1, 20)) if keep else int(rng.integers(1, SPACE_SIZE))
             for keep in included]
    return canary_result(ranks, [4] * m, included=list(included))
