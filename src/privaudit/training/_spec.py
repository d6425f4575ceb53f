"""``ReferenceSpec``: how an audit trains its reference models, as one parameter object."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
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

    One object for what :func:`privaudit.audit_model` needs to train "models like the
    target" (``audit_model(..., reference=ReferenceSpec(...))``), checked when it is made,
    so a bad value is refused before any query or training.

    Parameters
    ----------
    recipe : TrainingRecipe, scikit-learn estimator or callable, optional
        How to train a model "like the target" (see :func:`privaudit.training.as_recipe`).
        Default: for a scikit-learn target, an unfitted clone of it.
    n_models : int, default=16
        Size of the pool, shared by every reference attack.
    mode : {"auto", "online", "offline"}, default="auto"
        ``online``: each model trains on a random part of the audited records and the
        population, each audited record IN for about half of the models (Carlini et al.
        2022); ``offline``: on the population only; ``auto``: online when an attack needs
        it (``lira-online``), else offline.
    train_fraction : float in (0, 1), optional
        Fraction of the candidate records (audited + population online, population
        offline) each model trains on. Default: the fraction that gives the models as many
        training records as the target had (at most one half), since a size mismatch
        silently weakens reference-model attacks.
    to_target : callable, optional
        Turns a trained reference model into a :class:`~privaudit.targets.Target` (default
        :func:`privaudit.targets.as_target`); picklable when models train in worker
        processes.

    Raises
    ------
    TypeError, ValueError
        A field of the wrong type or out of range, named in the message (``"The
        'n_models' parameter of ReferenceSpec must be a positive integer. Got 0
        instead."``).

    See Also
    --------
    privaudit.training.ReferencePool : trains and caches the models.

    References
    ----------
    .. [1] Shokri, R., Stronati, M., Song, C., Shmatikov, V. "Membership Inference Attacks
       Against Machine Learning Models." IEEE S&P 2017.
    .. [2] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A., Tramèr, F. "Membership
       Inference Attacks From First Principles." IEEE S&P 2022.

    Examples
    --------
    >>> from privaudit.training import ReferenceSpec
    >>> ReferenceSpec(n_models=8, mode="offline")
    ReferenceSpec(n_models=8, mode='offline')
    >>> ReferenceSpec()
    ReferenceSpec()
    """

    recipe: Any = None
    n_models: int = 16
    mode: str = "auto"
    train_fraction: float | None = None
    to_target: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.recipe is not None:
            from privaudit.training._recipes import as_recipe

            as_recipe(self.recipe, func=_FUNC)
        N_REFERENCE_MODELS.check(self.n_models, param="n_models", func=_FUNC)
        REFERENCE_MODES.check(self.mode, param="mode", func=_FUNC)
        if self.train_fraction is not None:
            check_fraction(self.train_fraction, param="train_fraction", func=_FUNC)
        if self.to_target is not None and not callable(self.to_target):
            raise param_error("to_target", _FUNC, "None or a callable", self.to_target,
                              error=TypeError)

    def __repr__(self) -> str:
        """Only the fields set away from their defaults (as scikit-learn prints)."""
        shown = [f"{f.name}={_readable(getattr(self, f.name))}" for f in fields(self)
                 if getattr(self, f.name) is not f.default
                 and not _same(getattr(self, f.name), f.default)]
        return f"{type(self).__name__}({', '.join(shown)})"


def _same(value: Any, default: Any) -> bool:
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:  # an object whose == is not a bool (an array)
        return False


def _readable(value: Any) -> str:
    """A function by its dotted name, anything else by its repr."""
    name = getattr(value, "__qualname__", None)
    if callable(value) and name is not None and not isinstance(value, type):
        return f"{getattr(value, '__module__', '')}.{name}".lstrip(".")
    return repr(value)
