"""Registry of attacks by name: ``get_attack("loss", threshold=0.3)``."""

from __future__ import annotations

import importlib
from typing import Any

from privaudit._validation import param_error

__all__ = ["available_attacks", "get_attack", "register_attack"]

# name -> class, or "module:Class" imported on first use (keeps heavy attacks lazy).
_REGISTRY: dict[str, Any] = {
    "loss": "privaudit.attacks.membership._threshold:LossAttack",
    "confidence": "privaudit.attacks.membership._threshold:ConfidenceAttack",
    "entropy": "privaudit.attacks.membership._threshold:EntropyAttack",
    "modified-entropy": "privaudit.attacks.membership._threshold:ModifiedEntropyAttack",
    "gaussian-threshold": "privaudit.attacks.membership._gaussian:GaussianThresholdAttack",
    "gap": "privaudit.attacks.membership._gap:GapAttack",
    "label-only": "privaudit.attacks.membership._label_only:LabelOnlyAttack",
    "gradient-norm": "privaudit.attacks.membership._gradient:GradientNormAttack",
    "lira-online": "privaudit.attacks.membership._likelihood:LiRAAttack",
    "lira-offline": "privaudit.attacks.membership._likelihood:lira_offline",
    "rmia": "privaudit.attacks.membership._likelihood:RMIAAttack",
    "shadow": "privaudit.attacks.membership._shadow:ShadowModelAttack",
    "trained-lr": "privaudit.attacks.membership._trained:TrainedLRAttack",
    "trained-mlp": "privaudit.attacks.membership._trained:TrainedMLPAttack",
    "trained-rf": "privaudit.attacks.membership._trained:TrainedRFAttack",
    "trained-knn": "privaudit.attacks.membership._trained:TrainedKNNAttack",
    "trained-gb": "privaudit.attacks.membership._trained:TrainedGBAttack",
    "colluding": "privaudit.attacks.membership._colluding:ColludingAttack",
    "quantile": "privaudit.attacks.membership._quantile:QuantileAttack",
}


def register_attack(name: str, cls: Any, *, overwrite: bool = False) -> None:
    """Register an attack class (or a lazy ``"module:Class"`` path) under ``name``."""
    if not isinstance(name, str) or not name:
        raise param_error("name", "register_attack", "a non-empty string", name, error=TypeError)
    if name in _REGISTRY and not overwrite:
        raise param_error(
            "name", "register_attack", "a name not registered yet (or overwrite=True)", name
        )
    _REGISTRY[name] = cls


def available_attacks() -> tuple[str, ...]:
    """Names accepted by :func:`get_attack`, sorted."""
    return tuple(sorted(_REGISTRY))


def _resolve(name: str) -> Any:
    entry = _REGISTRY[name]
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(module), attr)
        _REGISTRY[name] = entry
    return entry


def get_attack(name: str, **params: Any) -> Any:
    """Create the attack registered as ``name`` with ``params``.

    Parameters
    ----------
    name : str
        One of :func:`available_attacks` (``"loss"``, ``"confidence"``, ``"entropy"``,
        ``"modified-entropy"``, ``"gaussian-threshold"``, ...).
    **params
        Constructor parameters of the attack.

    Returns
    -------
    MembershipAttack
        An unfitted attack.
    """
    if name not in _REGISTRY:
        raise param_error("name", "get_attack", f"one of {list(available_attacks())}", name)
    cls = _resolve(name)
    try:
        return cls(**params)
    except TypeError as exc:
        raise param_error(
            "params", "get_attack", f"constructor parameters of {cls.__name__} ({exc})",
            f"<{sorted(params)}>", error=TypeError,
        ) from None
