"""Shadow models for U-LiRA: train like the target, then unlearn the candidates seen.

Hayes et al.'s U-LiRA compares, for each record under test, the target's output with the
outputs of shadow models that trained on the record and then unlearned it (the same
algorithm as the audited model) and of shadow models that never saw it. A
:class:`UnlearningRecipe` makes those shadows out of privaudit's reference-model pool: each
pool model trains on its half of the candidate and population records, then unlearns the
candidate records among them. The pool's balanced IN/OUT masks, executors (local
processes, Ray), cache and resumption then serve unlearning audits unchanged, and online
LiRA on the pool's outputs is U-LiRA.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from privaudit._rows import rows_found_in
from privaudit._validation import param_error
from privaudit.training import as_recipe, data_fingerprint
from privaudit.unlearn._api import check_method_params, unlearn

__all__ = ["UnlearningRecipe"]


class UnlearningRecipe:
    """A training recipe whose models unlearn the candidate records they trained on.

    Parameters
    ----------
    recipe : TrainingRecipe
        How the audited model was trained (e.g. ``TorchMLPRecipe``): its models are the
        ones unlearned.
    candidates : (X, y)
        The records under test (forget candidates). In a trained model's data, the rows
        equal to one of them (features compared exactly) are forgotten, the rest retained.
    method : str, default="GA"
        The unlearning algorithm (:data:`privaudit.unlearn.METHODS`), the audited one.
    params : dict, optional
        Its hyperparameters, checked at once
        (:func:`~privaudit.unlearn.check_method_params`).

    References
    ----------
    .. [1] Hayes, J., Shumailov, I., Triantafillou, E., Khalifa, A. and Papernot, N.
       "Inexact Unlearning Needs More Careful Evaluations to Avoid a False Sense of
       Privacy." 2024 (U-LiRA).
    .. [2] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022 (LiRA).
    """

    def __init__(self, recipe: Any, candidates: tuple[Any, Any], *, method: str = "GA",
                 params: dict[str, Any] | None = None) -> None:
        # Before any model trains: a bad hyperparameter would fail in every shadow.
        check_method_params(method, params, func="UnlearningRecipe", param="params")
        if not isinstance(candidates, tuple) or len(candidates) != 2:
            raise param_error("candidates", "UnlearningRecipe", "a pair (X, y)",
                              f"<{type(candidates).__name__}>", error=TypeError)
        self.recipe = as_recipe(recipe, func="UnlearningRecipe")
        self.candidates = (np.asarray(candidates[0]), np.asarray(candidates[1]))
        self.method = method
        self.params = dict(params or {})
        self.suffix = getattr(self.recipe, "suffix", ".bin")
        #: Models the pool trains together (the base recipe's ``stack``, e.g. torch.func).
        self.stack = getattr(self.recipe, "stack", 1)

    def __repr__(self) -> str:
        return (f"UnlearningRecipe({self.recipe!r}, method={self.method!r}, "
                f"{len(self.candidates[1])} candidates)")

    def fingerprint(self) -> str:
        """The base recipe's, the method, its parameters and the candidates."""
        from privaudit._digest import run_digest

        return run_digest("UnlearningRecipe", self.recipe.fingerprint(), self.method,
                          sorted((k, repr(v)) for k, v in self.params.items()),
                          data_fingerprint(*self.candidates))

    def train(self, X: Any, y: Any, *, random_state: int) -> Any:
        """Train on ``(X, y)``, then unlearn the candidate rows among them (same seed)."""
        model = self.recipe.train(X, y, random_state=random_state)
        return self._unlearn(model, X, y, random_state)

    def train_many(self, datasets: list[tuple[Any, Any]], *,
                   random_states: list[int]) -> list[Any]:
        """Train with the base recipe's ``train_many`` (stacked), then unlearn each."""
        models = self.recipe.train_many(datasets, random_states=random_states)
        return [self._unlearn(m, X, y, s)
                for m, (X, y), s in zip(models, datasets, random_states, strict=True)]

    def _unlearn(self, model: Any, X: Any, y: Any, random_state: int) -> Any:
        forget = rows_found_in(X, self.candidates[0])
        if not forget.any() or forget.all():
            return model  # nothing to forget (or nothing left to retain)
        X, y = np.asarray(X), np.asarray(y)
        return unlearn(model, forget=(X[forget], y[forget]), retain=(X[~forget], y[~forget]),
                       method=self.method, random_state=random_state, **self.params)

    def save(self, model: Any, path: str | os.PathLike[str]) -> None:
        """The base recipe's format (an unlearned model is a model of the same kind)."""
        self.recipe.save(model, path)

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Read back a model written by :meth:`save`."""
        return self.recipe.load(path)
