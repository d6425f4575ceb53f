"""Membership splits: members / non-members / population, checked to be disjoint."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_random_state, param_error

__all__ = ["MembershipSplit", "check_disjoint", "membership_split"]


def _as_index(values: ArrayLike, param: str, func: str) -> NDArray[np.intp]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise param_error(param, func, "a 1-D array of indices", f"<array of shape {arr.shape}>")
    if arr.size == 0:
        return arr.astype(np.intp)
    if arr.dtype.kind not in "iu":
        raise param_error(
            param, func, "an array of integer indices", f"<array of dtype {arr.dtype}>",
            error=TypeError,
        )
    return arr.astype(np.intp, copy=False)


def check_disjoint(**index_sets: ArrayLike) -> None:
    """Check that named index sets share no index (and none repeats an index).

    Overlapping member and non-member sets, or a reference population that contains
    members, silently invalidate an audit; this refuses them.

    Parameters
    ----------
    **index_sets : array-like of int
        The sets by name, e.g. ``check_disjoint(members=m, non_members=n)``.

    Raises
    ------
    ValueError
        Naming the two overlapping sets and a few shared indices, e.g. "The
        'non_members' parameter of check_disjoint must be disjoint from 'members'. Got
        <2 shared indices such as [3, 7]> instead."

    Examples
    --------
    >>> check_disjoint(members=[0, 1], non_members=[2, 3])
    """
    func = "check_disjoint"
    arrays = {name: _as_index(v, name, func) for name, v in index_sets.items()}
    for name, arr in arrays.items():
        uniq, counts = np.unique(arr, return_counts=True)
        if np.any(counts > 1):
            dup = uniq[counts > 1][:5].tolist()
            raise param_error(
                name, func, "free of repeated indices", f"<repeated indices such as {dup}>"
            )
    for (name_a, a), (name_b, b) in combinations(arrays.items(), 2):
        shared = np.intersect1d(a, b, assume_unique=True)
        if shared.size:
            raise param_error(
                name_b, func, f"disjoint from {name_a!r}",
                f"<{shared.size} shared indices such as {shared[:5].tolist()}>",
            )


@dataclass(frozen=True)
class MembershipSplit:
    """Indices of the members, non-members and remaining population of a dataset.

    Parameters
    ----------
    members : ndarray of int
        Rows the target is trained on (label 1).
    non_members : ndarray of int
        Held-out rows audited beside the members (label 0).
    population : ndarray of int
        Other rows, available to the adversary (e.g. to train reference models); never
        members or audited non-members.
    """

    members: NDArray[np.intp]
    non_members: NDArray[np.intp]
    population: NDArray[np.intp]

    def __post_init__(self) -> None:
        func = "MembershipSplit"
        for name in ("members", "non_members", "population"):
            object.__setattr__(self, name, _as_index(getattr(self, name), name, func))
        check_disjoint(
            members=self.members, non_members=self.non_members, population=self.population
        )

    @property
    def audit_indices(self) -> NDArray[np.intp]:
        """Members then non-members: the audited rows."""
        return np.concatenate([self.members, self.non_members])

    @property
    def audit_labels(self) -> NDArray[np.int8]:
        """1 for each member, 0 for each non-member, aligned with :attr:`audit_indices`."""
        return np.concatenate([
            np.ones(self.members.size, dtype=np.int8),
            np.zeros(self.non_members.size, dtype=np.int8),
        ])


def _check_count(value: Any, param: str, func: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise param_error(param, func, "a non-negative integer", value, error=TypeError)
    if value < 0:
        raise param_error(param, func, "a non-negative integer", value)
    return int(value)


def membership_split(
    n: int,
    n_members: int,
    n_non_members: int | None = None,
    *,
    n_population: int | None = None,
    random_state: int | np.random.Generator | None = None,
) -> MembershipSplit:
    """Draw disjoint members, non-members and population uniformly from ``n`` rows.

    Members and non-members come from the same distribution (one random permutation),
    the condition under which membership advantage measures leakage rather than a
    distribution shift.

    Parameters
    ----------
    n : int
        Number of rows in the dataset.
    n_members : int
        Number of members (training rows of the target).
    n_non_members : int, optional
        Number of audited non-members (default: ``n_members``, a balanced audit).
    n_population : int, optional
        Number of population rows (default: all remaining rows).
    random_state : int, Generator or None
        Seeds the permutation.

    Returns
    -------
    MembershipSplit
        Each index array sorted.

    References
    ----------
    .. [1] Yeom et al., CSF 2018, Experiment 1 (members drawn from ``D^n``, the challenge
       point from ``S`` or ``D`` with probability 1/2).
    """
    func = "membership_split"
    n = _check_count(n, "n", func)
    n_members = _check_count(n_members, "n_members", func)
    n_non = n_members if n_non_members is None else _check_count(
        n_non_members, "n_non_members", func
    )
    rest = n - n_members - n_non
    if rest < 0:
        raise param_error(
            "n_non_members", func, f"at most n - n_members = {n - n_members}", n_non
        )
    n_pop = rest if n_population is None else _check_count(n_population, "n_population", func)
    if n_pop > rest:
        raise param_error(
            "n_population", func, f"at most n - n_members - n_non_members = {rest}", n_pop
        )
    rng = check_random_state(random_state, func=func)
    perm = rng.permutation(n)
    members = np.sort(perm[:n_members])
    non_members = np.sort(perm[n_members:n_members + n_non])
    population = np.sort(perm[n_members + n_non:n_members + n_non + n_pop])
    return MembershipSplit(members=members, non_members=non_members, population=population)
