"""Membership inference attacks (estimator style: ``fit`` / ``score`` / ``run``).

Black-box attacks reading one per-record signal of the target's outputs:
:class:`LossAttack` (Yeom et al.), :class:`ConfidenceAttack`, :class:`EntropyAttack`,
:class:`ModifiedEntropyAttack` (Song & Mittal) and, for regression,
:class:`GaussianThresholdAttack` (Yeom et al.'s Adversary 2 and Theorem 3).

Reference-model attacks read a :class:`ReferenceOutputs` collected once by
:func:`collect_reference_outputs`: :class:`LiRAAttack` (Carlini et al., online and
offline, optionally with augmented queries: :func:`image_shifts`,
:func:`horizontal_flip`), :class:`RMIAAttack` (Zarifzadeh et al.) and :class:`ShadowModelAttack`
(Shokri et al.). :class:`TrainedAttack` learns membership from output features with
cross-fitting (TensorFlow Privacy's trained attacks); :class:`LabelOnlyAttack`
(Choquette-Choo et al.) needs predicted labels only; :class:`GradientNormAttack` is
white-box (torch targets). :class:`QuantileAttack` (Bertran et al.) needs the population
but no reference model: a cheap screen (:func:`quantile_scores` for any statistic, e.g. an
LLM's per-text loss).
"""

from privaudit.attacks.membership._augment import (
    HorizontalFlip,
    ImageShift,
    check_augmentations,
    horizontal_flip,
    image_shifts,
    query_augmented,
)
from privaudit.attacks.membership._base import (
    MembershipAttack,
    ReferenceAttack,
    SignalAttack,
    ThresholdAttack,
)
from privaudit.attacks.membership._colluding import ColludingAttack
from privaudit.attacks.membership._gap import GapAttack
from privaudit.attacks.membership._gaussian import (
    GaussianThresholdAttack,
    gaussian_advantage,
    gaussian_threshold,
)
from privaudit.attacks.membership._gradient import GradientNormAttack, WhiteBoxFeatures
from privaudit.attacks.membership._label_only import LabelOnlyAttack
from privaudit.attacks.membership._likelihood import LiRAAttack, RMIAAttack
from privaudit.attacks.membership._lira import (
    GaussianFitWarning,
    fit_lira_gaussians,
    lira_scores,
    saturation_bound,
)
from privaudit.attacks.membership._quantile import (
    FitSchedule,
    QuantileAttack,
    QuantileModel,
    fit_quantile_model,
    fit_schedule,
    quantile_scores,
)
from privaudit.attacks.membership._reference import (
    ReferenceOutputs,
    collect_reference_outputs,
)
from privaudit.attacks.membership._registry import SET_BY_NAME, membership_attack_class
from privaudit.attacks.membership._rmia import rmia_scores, tune_rmia_offline_a
from privaudit.attacks.membership._run import run_attacks
from privaudit.attacks.membership._shadow import ShadowModelAttack
from privaudit.attacks.membership._threshold import (
    ConfidenceAttack,
    EntropyAttack,
    LossAttack,
    ModifiedEntropyAttack,
)
from privaudit.attacks.membership._trained import (
    TrainedAttack,
    TrainedGBAttack,
    TrainedKNNAttack,
    TrainedLRAttack,
    TrainedMLPAttack,
    TrainedRFAttack,
    output_features,
)

__all__ = [
    "SET_BY_NAME",
    "ColludingAttack",
    "ConfidenceAttack",
    "EntropyAttack",
    "FitSchedule",
    "GapAttack",
    "GaussianFitWarning",
    "GaussianThresholdAttack",
    "GradientNormAttack",
    "HorizontalFlip",
    "ImageShift",
    "LabelOnlyAttack",
    "LiRAAttack",
    "LossAttack",
    "MembershipAttack",
    "ModifiedEntropyAttack",
    "QuantileAttack",
    "QuantileModel",
    "RMIAAttack",
    "ReferenceAttack",
    "ReferenceOutputs",
    "ShadowModelAttack",
    "SignalAttack",
    "ThresholdAttack",
    "TrainedAttack",
    "TrainedGBAttack",
    "TrainedKNNAttack",
    "TrainedLRAttack",
    "TrainedMLPAttack",
    "TrainedRFAttack",
    "WhiteBoxFeatures",
    "check_augmentations",
    "collect_reference_outputs",
    "fit_lira_gaussians",
    "fit_quantile_model",
    "fit_schedule",
    "gaussian_advantage",
    "gaussian_threshold",
    "horizontal_flip",
    "image_shifts",
    "lira_scores",
    "membership_attack_class",
    "output_features",
    "quantile_scores",
    "query_augmented",
    "rmia_scores",
    "run_attacks",
    "saturation_bound",
    "tune_rmia_offline_a",
]
