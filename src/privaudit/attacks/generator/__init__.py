"""Membership inference against synthetic-data generators (TAPAS's threat model).

Each attack learns from shadow runs of the generator
(:class:`privaudit.training.GeneratorRuns`: training sets with and without each target)
and scores new synthetic tables for every target at once:

- :class:`GroundhogAttack` (Stadler et al. 2022): summary statistics of the whole table
  and a classifier per target;
- :class:`ClosestDistanceAttack`: how close the nearest synthetic row comes to the target;
- :class:`LocalNeighbourhoodAttack`: how many synthetic rows fall near the target;
- :class:`DensityRatioAttack` (DOMIAS, van Breugel et al. 2023): the synthetic density at
  the target over the density of reference data disjoint from the training sets.

``get_generator_attack(name, **params)`` creates one by name (:data:`GENERATOR_ATTACKS`).
They are kept apart from the model attacks' registry: a generator attack reads tables,
not a model's answers, and no model audit can plan it.
"""

from typing import Any

from privaudit._validation import param_error
from privaudit.attacks.generator._base import GeneratorAttack, TargetDistances, best_thresholds
from privaudit.attacks.generator._distance import (
    ClosestDistanceAttack,
    DensityRatioAttack,
    LocalNeighbourhoodAttack,
)
from privaudit.attacks.generator._groundhog import FEATURE_SETS, GroundhogAttack, table_features

#: The generator attacks by name.
GENERATOR_ATTACKS: dict[str, type[GeneratorAttack]] = {
    "groundhog": GroundhogAttack,
    "closest-distance": ClosestDistanceAttack,
    "local-neighbourhood": LocalNeighbourhoodAttack,
    "domias": DensityRatioAttack,
}


def get_generator_attack(name: str, **params: Any) -> GeneratorAttack:
    """The generator attack ``name`` (a key of :data:`GENERATOR_ATTACKS`) with ``params``."""
    if name not in GENERATOR_ATTACKS:
        raise param_error("attacks", "get_generator_attack",
                          f"names among {list(GENERATOR_ATTACKS)}", name)
    return GENERATOR_ATTACKS[name](**params)


__all__ = [
    "FEATURE_SETS",
    "GENERATOR_ATTACKS",
    "ClosestDistanceAttack",
    "DensityRatioAttack",
    "GeneratorAttack",
    "GroundhogAttack",
    "LocalNeighbourhoodAttack",
    "TargetDistances",
    "best_thresholds",
    "get_generator_attack",
    "table_features",
]
