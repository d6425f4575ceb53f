"""Attribute inference against a model: guess a record's sensitive attribute from the model.

Each record is expanded into its *siblings*, one per candidate value of the sensitive
attribute, and the model is queried once on all of them (:func:`query_siblings`); the
attacks (:data:`ATTRIBUTE_ATTACKS`) read those answers: Yeom et al.'s Adversary 4 / model
inversion, Zhao et al.'s attacks through membership inference (confidence, loss target,
any fitted membership attack), a direct classifier, and the model-free guesses every
attack is compared with (the prior, a classifier on the known features).
"""

from privaudit.attacks.attribute._attacks import (
    ATTRIBUTE_ATTACKS,
    AttributeAttack,
    ConfidenceAttributeAttack,
    DirectAttributeAttack,
    KnownFeaturesGuess,
    LossTargetAttributeAttack,
    MembershipAttributeAttack,
    ModelInversionAttack,
    PriorGuess,
    get_attribute_attack,
)
from privaudit.attacks.attribute._siblings import (
    SensitiveAttribute,
    SiblingOutputs,
    candidate_order,
    known_features,
    make_siblings,
    query_siblings,
)

__all__ = [
    "ATTRIBUTE_ATTACKS",
    "AttributeAttack",
    "ConfidenceAttributeAttack",
    "DirectAttributeAttack",
    "KnownFeaturesGuess",
    "LossTargetAttributeAttack",
    "MembershipAttributeAttack",
    "ModelInversionAttack",
    "PriorGuess",
    "SensitiveAttribute",
    "SiblingOutputs",
    "candidate_order",
    "get_attribute_attack",
    "known_features",
    "make_siblings",
    "query_siblings",
]
