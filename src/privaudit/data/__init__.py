"""Offline datasets and membership splits.

Loaders return a :class:`TabularData` (numpy ``X``, ``y``, feature names, provenance)
after one documented, deterministic preprocessing; :func:`membership_split` draws
disjoint members / non-members / population, and :func:`check_disjoint` refuses
overlapping index sets.
"""

from privaudit.data._splits import MembershipSplit, check_disjoint, membership_split
from privaudit.data._tabular import (
    LOANS_DROPPED_COLUMNS,
    TV16_DROPPED_COLUMNS,
    TabularData,
    load_cps1988,
    load_digits,
    load_loans,
    load_tv16,
    make_preprocessor,
)

__all__ = [
    "LOANS_DROPPED_COLUMNS",
    "TV16_DROPPED_COLUMNS",
    "MembershipSplit",
    "TabularData",
    "check_disjoint",
    "load_cps1988",
    "load_digits",
    "load_loans",
    "load_tv16",
    "make_preprocessor",
    "membership_split",
]
