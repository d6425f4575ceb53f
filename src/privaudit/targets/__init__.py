"""Targets: the audited artefact behind one small protocol.

Every adapter exposes ``name``, ``task``, ``classes_``/``n_classes``, ``n_queries`` and
``query(X, y) -> ModelOutputs`` (one query per record; the per-record loss computed once).
"""

from privaudit.targets._base import (
    BaseTarget,
    ModelOutputs,
    QueryBudgetExceededError,
    Target,
    Task,
    label_indices,
)
from privaudit.targets._io import UntrustedTypesError, load_sklearn_model, save_sklearn_model
from privaudit.targets._sklearn import SklearnTarget, as_target

__all__ = [
    "BaseTarget",
    "ModelOutputs",
    "QueryBudgetExceededError",
    "SklearnTarget",
    "Target",
    "Task",
    "UntrustedTypesError",
    "as_target",
    "label_indices",
    "load_sklearn_model",
    "save_sklearn_model",
]
