"""Targets: the audited artefact behind one small protocol.

Adapters: :class:`SklearnTarget` (fitted scikit-learn estimators), :class:`TorchTarget`
(PyTorch modules, with white-box per-sample losses and gradient norms),
:class:`CallableTarget` (a function returning probabilities) and :class:`LabelOnlyTarget`
(a function returning predicted labels only). torch is imported only when a torch target is
built.

Every adapter follows :class:`Target`: the audit-facing :class:`AuditedArtifact` (``name``,
``task``, ``fingerprint()``, ``n_queries``, ``reveals_probabilities``), which text and table
artefacts satisfy too, plus ``classes_``/``n_classes`` and ``query(X, y) -> ModelOutputs``
(one query per record; the per-record loss computed once). :func:`as_target` wraps a fitted
scikit-learn estimator or a torch module; :func:`target_fingerprint` reads any artefact's
fingerprint for a result key. :func:`load_causal_lm` reads a Hugging Face folder after
:func:`check_model_folder` has checked every file transformers will open in it, or a peft
LoRA adapter folder over a local base model (the base inside an allowed root, the
adapter's weights from safetensors only, its configuration checked key by key).
"""

from privaudit.targets._base import (
    AuditedArtifact,
    BaseTarget,
    ModelOutputs,
    QueryBudgetExceededError,
    Target,
    Task,
    label_indices,
)
from privaudit.targets._callable import CallableTarget, LabelOnlyTarget
from privaudit.targets._causal_lm import CausalLMTarget, load_causal_lm
from privaudit.targets._dispatch import as_target
from privaudit.targets._fingerprint import (
    estimator_fingerprint,
    module_fingerprint,
    target_fingerprint,
)
from privaudit.targets._hf_folder import check_model_folder
from privaudit.targets._io import (
    UntrustedTypesError,
    load_sklearn_model,
    save_sklearn_model,
    trusted_sklearn_types,
)
from privaudit.targets._sklearn import SklearnTarget
from privaudit.targets._torch import (
    TorchTarget,
    import_torch,
    load_torch_model,
    save_torch_model,
)

__all__ = [
    "AuditedArtifact",
    "BaseTarget",
    "CallableTarget",
    "CausalLMTarget",
    "LabelOnlyTarget",
    "ModelOutputs",
    "QueryBudgetExceededError",
    "SklearnTarget",
    "Target",
    "Task",
    "TorchTarget",
    "UntrustedTypesError",
    "as_target",
    "check_model_folder",
    "estimator_fingerprint",
    "import_torch",
    "label_indices",
    "load_causal_lm",
    "load_sklearn_model",
    "load_torch_model",
    "module_fingerprint",
    "save_sklearn_model",
    "save_torch_model",
    "target_fingerprint",
    "trusted_sklearn_types",
]
