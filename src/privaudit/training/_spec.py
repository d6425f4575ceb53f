"""``ReferenceSpec``: how an audit trains its reference models, as one parameter object."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from privaudit._validation import (
    N_REFERENCE_MODELS,
    REFERENCE_MODES,
    check_fraction,
    param_error,
)

__all__ = ["ReferenceSpec"]

_FUNC = "ReferenceSpec"


@dataclass(frozen=True)
class ReferenceSpec:
    """The reference models of an audit: how to train them, how many, on what.

    Parameters
    ----------
    recipe : TrainingRecipe or scikit-learn estimator, optional
        How to train a model "like the target" (default for a scikit-learn target: an
        unfitted clone of it; see :func:`privaudit.training.as_recipe`).
    n_models : int, default=16
        Size of the pool, shared by every reference attack.
    mode : {"auto", "online", "offline"}, default="auto"
        ``online``: each model trains on a random part of the audited records and the
        population (each record IN for half the models); ``offline``: on the population
        only; ``auto``: online when an attack needs it (``lira-online``).
    train_fraction : float in (0, 1), optional
        Fraction of the candidate records each model trains on. Default: the fraction that
        gives the models as many training records as the target had.
    to_target : callable, optional
        Turns a trained reference model into a :class:`~privaudit.targets.Target` (default
        :func:`privaudit.targets.as_target`).

    Examples
    --------
    >>> from privaudit.training import ReferenceSpec
    >>> ReferenceSpec(n_models=8, mode="offline")
    ReferenceSpec(recipe=None, n_models=8, mode='offline', train_fraction=None, to_target=None)
    """

    recipe: Any = None
    n_models: int = 16
    mode: str = "auto"
    train_fraction: float | None = None
    to_target: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        N_REFERENCE_MODELS.check(self.n_models, param="n_models", func=_FUNC)
        REFERENCE_MODES.check(self.mode, param="mode", func=_FUNC)
        if self.train_fraction is not None:
            check_fraction(self.train_fraction, param="train_fraction", func=_FUNC)
        if self.to_target is not None and not callable(self.to_target):
            raise param_error("to_target", _FUNC, "None or a callable", self.to_target,
                              error=TypeError)
