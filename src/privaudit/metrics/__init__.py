"""Metrics of membership and attribute inference: the numerical core of privaudit.

Pure numpy/scipy, no other dependency. Convention everywhere: ``labels`` 1 = member
(or forgotten record), 0 = non-member; ``scores`` higher = more likely member.
Every function has the form ``f(labels, scores, *, option=...)`` and returns a float or a
small named tuple whose shape never depends on the options.
"""

from privaudit.metrics._binary import BinaryMetrics, binary_metrics, privacy_gain
from privaudit.metrics._epsilon import (
    EpsilonBound,
    effective_epsilon,
    effective_epsilon_lower_bound,
)
from privaudit.metrics._intervals import (
    Estimate,
    bootstrap_ci,
    bootstrap_cis,
    clopper_pearson,
    wilson_interval,
)
from privaudit.metrics._roc import RocCurve, advantage, roc_auc, roc_curve, tpr_at_fpr

__all__ = [
    "BinaryMetrics",
    "EpsilonBound",
    "Estimate",
    "RocCurve",
    "advantage",
    "binary_metrics",
    "bootstrap_ci",
    "bootstrap_cis",
    "clopper_pearson",
    "effective_epsilon",
    "effective_epsilon_lower_bound",
    "privacy_gain",
    "roc_auc",
    "roc_curve",
    "tpr_at_fpr",
    "wilson_interval",
]
