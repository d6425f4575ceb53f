"""Which audited records an online pool gave shadows on both sides, and what covers them all.

U-LiRA and online Apollo test a record against its own shadows: some that trained on it
and unlearned it, some that never saw it. A pool too small for its training fraction
leaves some records with one side only; the attacks leave those records out of their
result (with a warning naming how many and the count of shadows that covers every
record) rather than fail the whole audit.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import warn_degenerate

__all__ = ["covered", "shadows_for_every_record", "warn_left_out"]


def shadows_for_every_record(train_fraction: float, min_per_side: int = 1) -> int | None:
    """Fewest shadows of an online pool that give every record both sides, or None.

    The pool's balanced split (:func:`~privaudit.training._pool.balanced_in_mask`) puts
    each record IN ``floor(f n)`` or ``ceil(f n)`` of its ``n`` models: every record has
    ``min_per_side`` unlearned and never-trained shadows once ``floor(f n)`` and
    ``n - ceil(f n)`` both reach it (``ceil`` even when no record gets the extra model, so
    the count returned always works). None when no count does (``f`` not in (0, 1)).

    Examples
    --------
    >>> shadows_for_every_record(0.5), shadows_for_every_record(0.22)
    (2, 5)
    """
    f, m = float(train_fraction), int(min_per_side)
    if not 0.0 < f < 1.0:
        return None
    n = max(2, math.floor(max(m / f, m / (1.0 - f))) - 1)
    while math.floor(f * n + 1e-9) < m or n - math.ceil(f * n - 1e-9) < m:
        n += 1
    return n


def covered(in_mask: NDArray[np.bool_], min_per_side: int = 1) -> NDArray[np.bool_]:
    """Records (columns of ``in_mask``) with ``min_per_side`` shadows IN and OUT."""
    n_in = np.asarray(in_mask, dtype=bool).sum(axis=0)
    return (n_in >= min_per_side) & (in_mask.shape[0] - n_in >= min_per_side)


def warn_left_out(func: str, tested: NDArray[np.bool_], min_per_side: int,
                  train_fraction: float | None, *, stacklevel: int = 4) -> None:
    """Say how many records are left out for want of shadows, and what covers them all.

    Nothing when every record is tested. The remedy names the knobs a user has: the
    pool's ``n_models``, which :func:`~privaudit.audits.audit_unlearning` sets from its
    ``reference`` (``n_shadows``).
    """
    n, n_out = tested.size, int(tested.size - tested.sum())
    if n_out == 0:
        return
    needed = (None if train_fraction is None
              else shadows_for_every_record(train_fraction, min_per_side))
    count = "" if needed is None else (
        f" (at least {needed} with this pool's training fraction {float(train_fraction):.2f})")
    sides = ("an unlearned and a never-trained shadow" if min_per_side == 1 else
             f"{min_per_side} unlearned and {min_per_side} never-trained shadows")
    what = ("so the attack has no information: every record gets the score 0 (AUC 0.5)"
            if n_out == n else "they are left out of its result")
    warn_degenerate(
        f"{func}: {n_out} of {n} records lack {sides} (the test is per record); {what}. "
        f"More shadow models cover every record{count}: the pool's n_models, or "
        "audit_unlearning's reference=ReferenceSpec(n_models=...) (n_shadows).",
        stacklevel=stacklevel)
