"""Reference and shadow models: training recipes, the reference pool, executors, cache.

Reference-model attacks (Shokri et al.'s shadow models, LiRA, RMIA) need many models
"like the target", each trained on a known random part of the data. This package trains
them once, in parallel (local processes or Ray, one code path), writes each to disk as it
finishes so that an interrupted run resumes (two runs sharing a cache lock each model, so
each is trained once), and checks that they resemble the target. The same seed gives
bit-identical models whatever the executor and ``n_jobs``.

Built-in recipes: :class:`SklearnRecipe` (``clone().fit``), :class:`CallableRecipe` (a
user's training function, e.g. a torch loop), :class:`TorchMLPRecipe` and
:class:`TorchCNNRecipe` (PyTorch classifiers saved as safetensors).

:class:`GeneratorRuns` does the same for a synthetic-data generator: shadow training sets
drawn from auxiliary data, each target in half of them, every synthetic table cached as it
finishes (TAPAS's threat model).

Nothing here imports Ray, torch or skops at module level.
"""

from privaudit.training._colluding import ColludingKeys, ColludingRecipe
from privaudit.training._executors import Executor, LocalExecutor, RayExecutor, get_executor
from privaudit.training._fidelity import FidelityReport, FidelityWarning, check_fidelity
from privaudit.training._generator_runs import KNOWLEDGE, GeneratorRecipe, GeneratorRuns
from privaudit.training._hashing import data_fingerprint
from privaudit.training._pool import ReferencePool, balanced_in_mask
from privaudit.training._recipes import CallableRecipe, SklearnRecipe, TrainingRecipe, as_recipe
from privaudit.training._spec import ReferenceSpec
from privaudit.training._torch_recipes import TorchCNNRecipe, TorchMLPRecipe

__all__ = [
    "KNOWLEDGE",
    "CallableRecipe",
    "ColludingKeys",
    "ColludingRecipe",
    "Executor",
    "FidelityReport",
    "FidelityWarning",
    "GeneratorRecipe",
    "GeneratorRuns",
    "LocalExecutor",
    "RayExecutor",
    "ReferencePool",
    "ReferenceSpec",
    "SklearnRecipe",
    "TorchCNNRecipe",
    "TorchMLPRecipe",
    "TrainingRecipe",
    "as_recipe",
    "balanced_in_mask",
    "check_fidelity",
    "data_fingerprint",
    "get_executor",
]
