"""``as_target``: turn what the user passed into a :class:`~privaudit.targets.Target`."""

from __future__ import annotations

import sys
from typing import Any

from privaudit._validation import param_error
from privaudit.targets._base import AuditedArtifact, Target
from privaudit.targets._sklearn import SklearnTarget
from privaudit.targets._torch import TorchTarget

__all__ = ["as_target"]

#: What a model target written before ``fingerprint()`` existed already had.
_MODEL_SURFACE = ("name", "task", "classes_", "n_classes", "n_queries")


def as_target(obj: Any, **kwargs: Any) -> Target:
    """Return ``obj`` if it is a :class:`Target`, or wrap a fitted model in an adapter.

    Parameters
    ----------
    obj : Target, fitted scikit-learn estimator or torch ``nn.Module``
        What to audit: a scikit-learn estimator is wrapped in a ``SklearnTarget``, a torch
        module in a ``TorchTarget`` returning logits. An object with ``query`` and the
        model attributes but no ``fingerprint()`` is accepted as is (it has no
        fingerprint: see :func:`~privaudit.targets.target_fingerprint`).
    **kwargs
        Passed to the adapter when ``obj`` is wrapped (``name``, ``task``...).

    Returns
    -------
    Target

    Raises
    ------
    TypeError
        If ``obj`` is none of these (an artefact that is not queried record by record,
        such as a text or table artefact, included).
    """
    if isinstance(obj, Target) or _has_model_surface(obj):
        if kwargs:
            raise param_error(
                "kwargs", "as_target", "empty when obj is already a Target",
                f"<{sorted(kwargs)}>",
            )
        return obj  # type: ignore[no-any-return]
    if hasattr(obj, "fit") and hasattr(obj, "predict") and hasattr(obj, "get_params"):
        return SklearnTarget(obj, **kwargs)
    torch = sys.modules.get("torch")  # a torch module exists only if torch was imported
    if torch is not None and isinstance(obj, torch.nn.Module):
        return TorchTarget(obj, **kwargs)
    what = "a privaudit Target or a fitted scikit-learn estimator or torch module"
    if isinstance(obj, AuditedArtifact):
        what += " (this artefact has no query(X, y): audit it with its own kind's audit)"
    raise param_error("obj", "as_target", what, f"<{type(obj).__name__}>", error=TypeError)


def _has_model_surface(obj: Any) -> bool:
    return callable(getattr(obj, "query", None)) and all(
        hasattr(obj, attr) for attr in _MODEL_SURFACE
    )

