"""Attacks against audited artefacts: membership inference (attribute and unlearning follow).

``get_attack(name, **params)`` creates any registered attack by name.
"""

from privaudit.attacks._registry import available_attacks, get_attack, register_attack
from privaudit.attacks.membership import (
    ConfidenceAttack,
    EntropyAttack,
    GaussianThresholdAttack,
    GradientNormAttack,
    LabelOnlyAttack,
    LiRAAttack,
    LossAttack,
    MembershipAttack,
    ModifiedEntropyAttack,
    RMIAAttack,
    ShadowModelAttack,
    TrainedAttack,
    run_attacks,
)

__all__ = [
    "ConfidenceAttack",
    "EntropyAttack",
    "GaussianThresholdAttack",
    "GradientNormAttack",
    "LabelOnlyAttack",
    "LiRAAttack",
    "LossAttack",
    "MembershipAttack",
    "ModifiedEntropyAttack",
    "RMIAAttack",
    "ShadowModelAttack",
    "TrainedAttack",
    "available_attacks",
    "get_attack",
    "register_attack",
    "run_attacks",
]
