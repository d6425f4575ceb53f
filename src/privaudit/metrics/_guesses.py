"""Guess rules on canary scores, shared by the one-run bounds and the Gaussian-DP estimate.

A guess rule is a pair ``(k_in, k_out)``: guess "in" for the ``k_in`` highest scores and
"out" for the ``k_out`` lowest, abstain on the rest. The rules a Bonferroni correction
runs over depend on the number of canaries only (:func:`guess_count_grid`), never on the
scores, so the correction is fixed before the scores are seen.

Ties are broken against the attacker: among canaries of equal score at the edge of the
"in" guesses, the excluded ("out") canaries are taken first, and at the edge of the "out"
guesses the included ones. The counts are thus the fewest correct guesses any ordering of
the tied canaries could give, so a bound computed from them holds for every tie-break the
attacker could have used (the bounds decrease in the number of correct guesses).
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_fraction, check_real_array, param_error

__all__ = [
    "Guesses",
    "RankedCanaries",
    "check_confidence",
    "check_score_pair",
    "explicit_guesses",
    "guess_count_grid",
    "rank_canaries",
]

#: Guess counts of the grid: m * 2**(-j/2) for j = 0, 1, ... down to about m / 100.
_GRID_RATIO = 2**-0.5
_GRID_SMALLEST_SHARE = 0.01


class Guesses(NamedTuple):
    """The outcome of one guess rule on a set of canaries."""

    n_canaries: int
    n_included: int       # canaries that were in (the positives)
    n_guessed_in: int
    n_guessed_out: int
    correct_in: int       # included canaries guessed "in" (true positives)
    correct_out: int      # excluded canaries guessed "out" (true negatives among guesses)
    threshold_in: float   # the lowest score guessed "in" (nan when none)
    threshold_out: float  # the highest score guessed "out" (nan when none)

    @property
    def n_guesses(self) -> int:
        return self.n_guessed_in + self.n_guessed_out

    @property
    def n_correct(self) -> int:
        return self.correct_in + self.correct_out


def check_confidence(confidence: Any, func: str) -> float:
    """``confidence`` must be a real number in (0, 1)."""
    return check_fraction(confidence, param="confidence", func=func)


def _check_scores(values: Any, param: str, func: str) -> NDArray[Any]:
    arr = check_real_array(values, func=func, param=param)
    if arr.ndim != 1:
        raise param_error(param, func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        n_bad = int(np.sum(~np.isfinite(arr)))
        raise param_error(param, func, "finite (no NaN or inf)", f"<{n_bad} non-finite values>")
    return arr


def check_score_pair(
    in_scores: ArrayLike, out_scores: ArrayLike, func: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Check the scores of the included and excluded canaries; return them as float64.

    Both must be 1-D, numeric, finite and of the SAME dtype (scores of one attack computed
    two ways, float32 and float64, rank differently), with at least 2 canaries in all.
    One side may be empty (every canary included, or none, happens by chance).
    """
    in_arr = _check_scores(in_scores, "in_scores", func)
    out_arr = _check_scores(out_scores, "out_scores", func)
    if in_arr.size and out_arr.size and in_arr.dtype != out_arr.dtype:
        raise param_error(
            "out_scores", func, f"of the same dtype as 'in_scores' ({in_arr.dtype})",
            f"<array of dtype {out_arr.dtype}>", error=TypeError,
        )
    if in_arr.size + out_arr.size < 2:
        raise param_error(
            "in_scores", func, "with 'out_scores', the scores of at least 2 canaries",
            f"<{in_arr.size + out_arr.size} canaries>",
        )
    # Integers beyond 2**53 may round to equal floats: ties, broken against the attacker
    # (module doc), so the bounds stay valid.
    return in_arr.astype(np.float64), out_arr.astype(np.float64)


def check_count(value: Any, param: str, func: str, low: int, high: int | None = None) -> int:
    """An integer in [low, high] (booleans and floats refused)."""
    expected = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise param_error(param, func, expected, value, error=TypeError)
    if int(value) < low or (high is not None and int(value) > high):
        raise param_error(param, func, expected, value)
    return int(value)


def guess_count_grid(n_canaries: int) -> NDArray[np.int64]:
    """The numbers of guesses a Bonferroni correction runs over, from ``n_canaries`` only.

    ``round(m * 2**(-j/2))`` for ``j = 0, 1, ...`` while at least ``max(1, m / 100)``:
    a geometric grid from all ``m`` canaries down to 1% of them (15 counts for
    ``m >= 100``; for small ``m``, down to 1 guess), in decreasing order, without repeats.
    """
    smallest = max(1.0, _GRID_SMALLEST_SHARE * n_canaries)
    counts = []
    value = float(n_canaries)
    while round(value) >= smallest - 1e-9 and value >= 0.5:
        counts.append(round(value))
        value *= _GRID_RATIO
    return np.unique(np.array(counts, dtype=np.int64))[::-1]


class RankedCanaries(NamedTuple):
    """Cumulative correct counts for every number of "in" and "out" guesses."""

    n_canaries: int
    n_included: int
    hits_in: NDArray[np.int64]    # [k]: included canaries among the k guessed "in"
    hits_out: NDArray[np.int64]   # [k]: excluded canaries among the k guessed "out"
    scores_desc: NDArray[np.float64]
    scores_asc: NDArray[np.float64]

    def guesses(self, k_in: int, k_out: int) -> Guesses:
        """The rule "in" for the ``k_in`` highest, "out" for the ``k_out`` lowest scores."""
        return Guesses(
            self.n_canaries, self.n_included, k_in, k_out,
            int(self.hits_in[k_in]), int(self.hits_out[k_out]),
            float(self.scores_desc[k_in - 1]) if k_in else float("nan"),
            float(self.scores_asc[k_out - 1]) if k_out else float("nan"),
        )


def rank_canaries(
    in_scores: NDArray[np.float64], out_scores: NDArray[np.float64]
) -> RankedCanaries:
    """Rank the canaries for guess rules, ties broken against the attacker (module doc)."""
    scores = np.concatenate([in_scores, out_scores])
    included = np.concatenate([np.ones(in_scores.size, np.int64),
                               np.zeros(out_scores.size, np.int64)])
    # "In" guesses: highest score first; at equal score the excluded canary first.
    order_in = np.lexsort((included, -scores))
    # "Out" guesses: lowest score first; at equal score the included canary first.
    order_out = np.lexsort((-included, scores))
    zero = np.zeros(1, np.int64)
    return RankedCanaries(
        int(scores.size), int(in_scores.size),
        np.concatenate([zero, np.cumsum(included[order_in])]),
        np.concatenate([zero, np.cumsum(1 - included[order_out])]),
        scores[order_in], scores[order_out],
    )


def explicit_guesses(
    in_scores: NDArray[np.float64], out_scores: NDArray[np.float64],
    threshold_in: float, threshold_out: float | None = None,
) -> Guesses:
    """Guess "in" at or above ``threshold_in``; "out" at or below ``threshold_out``.

    A score that meets both is guessed "in" (the "out" guesses are those strictly below
    ``threshold_in``), so the two sets never overlap.
    """
    in_guessed_in = in_scores >= threshold_in
    out_guessed_in = out_scores >= threshold_in
    if threshold_out is None:
        in_guessed_out = np.zeros(in_scores.size, bool)
        out_guessed_out = np.zeros(out_scores.size, bool)
    else:
        in_guessed_out = (in_scores <= threshold_out) & ~in_guessed_in
        out_guessed_out = (out_scores <= threshold_out) & ~out_guessed_in
    n_in = int(in_guessed_in.sum() + out_guessed_in.sum())
    n_out = int(in_guessed_out.sum() + out_guessed_out.sum())
    return Guesses(
        int(in_scores.size + out_scores.size), int(in_scores.size), n_in, n_out,
        int(in_guessed_in.sum()), int(out_guessed_out.sum()),
        float(threshold_in),
        float("nan") if threshold_out is None else float(threshold_out),
    )
