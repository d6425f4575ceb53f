"""Attacks against audited artefacts: membership inference (attribute and unlearning follow).

``get_attack(name, **params)`` creates any registered attack by name;
``check_attack_plan(attacks, task=..., n_reference_models=...)`` checks up front that they
can run on a target (and says what to change when they cannot).
"""

from privaudit.attacks._base import BaseAttack
from privaudit.attacks._plan import attacks_for, check_attack_plan
from privaudit.attacks._registry import available_attacks, get_attack, register_attack
from privaudit.attacks._tags import AttackTags, get_tags
from privaudit.attacks.membership import (
    ColludingAttack,
    ConfidenceAttack,
    EntropyAttack,
    GapAttack,
    GaussianFitWarning,
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
    "AttackTags",
    "BaseAttack",
    "ColludingAttack",
    "ConfidenceAttack",
    "EntropyAttack",
    "GapAttack",
    "GaussianFitWarning",
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
    "attacks_for",
    "available_attacks",
    "check_attack_plan",
    "get_attack",
    "get_tags",
    "register_attack",
    "run_attacks",
]
