"""Metrics of membership and attribute inference: the numerical core of privaudit.

Pure numpy/scipy, no other dependency. Convention everywhere: ``labels`` 1 = member
(or forgotten record), 0 = non-member; ``scores`` higher = more likely member.
Every function has the form ``f(labels, scores, *, option=...)`` and returns a float or a
small named tuple whose shape never depends on the options, except the closed forms of
Yeom et al. (2018) (``dp_membership_advantage_bound``, ``gaussian_*``, ...), which take
the paper's quantities and return the advantage theory predicts, to print beside a
measured one.
"""

from privaudit.metrics._binary import BinaryMetrics, binary_metrics, privacy_gain
from privaudit.metrics._epsilon import (
    EpsilonBound,
    effective_epsilon,
    effective_epsilon_lower_bound,
)
from privaudit.metrics._gdp import GdpEstimate, gdp_epsilon, gdp_epsilon_estimate, gdp_mu
from privaudit.metrics._intervals import (
    Estimate,
    bootstrap_ci,
    bootstrap_cis,
    clopper_pearson,
    newcombe_interval,
    wilson_interval,
)
from privaudit.metrics._one_run import (
    CanaryBound,
    canary_epsilon_lower_bound,
    one_run_epsilon_lower_bound,
    top_k_epsilon_lower_bound,
)
from privaudit.metrics._resolution import (
    false_positives_allowed,
    fpr_is_resolvable,
    lift_p_value,
    smallest_resolvable_fpr,
)
from privaudit.metrics._roc import RocCurve, advantage, roc_auc, roc_curve, tpr_at_fpr
from privaudit.metrics._theory import (
    attribute_advantage_from_membership,
    bounded_loss_membership_advantage,
    bounded_loss_membership_advantage_from_losses,
    dp_membership_advantage_bound,
    gaussian_attribute_advantage,
    gaussian_membership_advantage,
    gaussian_membership_advantage_at_threshold,
    gaussian_membership_advantage_from_ratio,
    gaussian_membership_threshold,
)

__all__ = [
    "BinaryMetrics",
    "CanaryBound",
    "EpsilonBound",
    "Estimate",
    "GdpEstimate",
    "RocCurve",
    "advantage",
    "attribute_advantage_from_membership",
    "binary_metrics",
    "bootstrap_ci",
    "bootstrap_cis",
    "bounded_loss_membership_advantage",
    "bounded_loss_membership_advantage_from_losses",
    "canary_epsilon_lower_bound",
    "clopper_pearson",
    "dp_membership_advantage_bound",
    "effective_epsilon",
    "effective_epsilon_lower_bound",
    "false_positives_allowed",
    "fpr_is_resolvable",
    "gaussian_attribute_advantage",
    "gaussian_membership_advantage",
    "gaussian_membership_advantage_at_threshold",
    "gaussian_membership_advantage_from_ratio",
    "gaussian_membership_threshold",
    "gdp_epsilon",
    "gdp_epsilon_estimate",
    "gdp_mu",
    "lift_p_value",
    "newcombe_interval",
    "one_run_epsilon_lower_bound",
    "privacy_gain",
    "roc_auc",
    "roc_curve",
    "smallest_resolvable_fpr",
    "top_k_epsilon_lower_bound",
    "tpr_at_fpr",
    "wilson_interval",
]
