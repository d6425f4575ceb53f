"""Membership inference attacks (estimator style: ``fit`` / ``score`` / ``run``).

Black-box attacks reading one per-record signal of the target's outputs:
:class:`LossAttack` (Yeom et al.), :class:`ConfidenceAttack`, :class:`EntropyAttack`,
:class:`ModifiedEntropyAttack` (Song & Mittal) and, for regression,
:class:`GaussianThresholdAttack` (Yeom et al.'s Adversary 2 and Theorem 3).
"""

from privaudit.attacks.membership._base import MembershipAttack, ThresholdAttack
from privaudit.attacks.membership._gaussian import (
    GaussianThresholdAttack,
    gaussian_advantage,
    gaussian_threshold,
)
from privaudit.attacks.membership._run import run_attacks
from privaudit.attacks.membership._threshold import (
    ConfidenceAttack,
    EntropyAttack,
    LossAttack,
    ModifiedEntropyAttack,
)

__all__ = [
    "ConfidenceAttack",
    "EntropyAttack",
    "GaussianThresholdAttack",
    "LossAttack",
    "MembershipAttack",
    "ModifiedEntropyAttack",
    "ThresholdAttack",
    "gaussian_advantage",
    "gaussian_threshold",
    "run_attacks",
]
