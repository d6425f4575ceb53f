"""Targets: the audited artefact behind one small protocol.

Adapters: :class:`SklearnTarget` (fitted scikit-learn estimators), :class:`TorchTarget`
(PyTorch modules, with white-box per-sample losses and gradient norms),
:class:`CallableTarget` (a function returning probabilities) and :class:`LabelOnlyTarget`
(a function returning predicted labels only). torch is imported only when a torch target is
built.

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
from privaudit.targets._callable import CallableTarget, LabelOnlyTarget
from privaudit.targets._io import (
    UntrustedTypesError,
    load_sklearn_model,
    save_sklearn_model,
    trusted_sklearn_types,
)
from privaudit.targets._sklearn import SklearnTarget, as_target
from privaudit.targets._torch import TorchTarget, load_torch_model, save_torch_model

__all__ = [
    "BaseTarget",
    "CallableTarget",
    "LabelOnlyTarget",
    "ModelOutputs",
    "QueryBudgetExceededError",
    "SklearnTarget",
    "Target",
    "Task",
    "TorchTarget",
    "UntrustedTypesError",
    "as_target",
    "label_indices",
    "load_sklearn_model",
    "load_torch_model",
    "save_sklearn_model",
    "save_torch_model",
    "trusted_sklearn_types",
]
