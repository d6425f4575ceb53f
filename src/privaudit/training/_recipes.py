"""Training recipes: how to retrain "a model like the target" on a subset of records.

A recipe is the unit the reference-model pool works with. It must be picklable (it is sent
to worker processes or Ray workers), deterministic given ``random_state``, and able to say
what it is (:meth:`TrainingRecipe.fingerprint`) so that the on-disk cache never hands back a
model trained by a different recipe.

Extension point: a recipe for another framework (the built-in PyTorch MLP/CNN recipes, for
example) implements the four methods of :class:`TrainingRecipe` and the ``suffix`` attribute,
saving with a format that loads without executing code (safetensors ``state_dict`` for
torch), and is added to :func:`as_recipe` if it should be picked automatically.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from privaudit._digest import sha256_hex
from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.training._hashing import callable_fingerprint, canonical, sha256_json

__all__ = ["CallableRecipe", "SklearnRecipe", "TrainingRecipe", "as_recipe"]

# Bump when the way a recipe turns (estimator, seed, data) into a model changes, so that
# caches written by older code are not reused.
RECIPE_CODE_VERSION = 1

# Parameter names that hold a seed in scikit-learn and in libraries with a scikit-learn API
# (XGBoost, LightGBM, CatBoost).
_SEED_PARAMS = frozenset({"random_state", "random_seed", "seed"})


@runtime_checkable
class TrainingRecipe(Protocol):
    """What the reference-model pool needs from a way of training models.

    Attributes
    ----------
    suffix : str
        File-name suffix of a saved model (e.g. ``".skops"``), used by the cache.

    Notes
    -----
    ``train`` must be a pure function of ``(X, y, random_state)``: the pool's promise of
    identical models with 1 worker, 2 workers or Ray rests on it. ``fingerprint`` must
    change whenever anything that changes the trained model changes, and only then.
    """

    suffix: str

    def fingerprint(self) -> str:
        """Stable hex digest identifying everything that changes the trained model."""
        ...

    def train(self, X: Any, y: Any, *, random_state: int) -> Any:
        """Train one model on ``(X, y)`` with the given seed and return it."""
        ...

    def save(self, model: Any, path: str | os.PathLike[str]) -> None:
        """Write ``model`` to ``path`` (the pool makes the write atomic)."""
        ...

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Read back a model written by :meth:`save`, without executing stored code."""
        ...


def _seed_for(key: str, seed: int) -> int:
    """A deterministic seed for a nested estimator, distinct per parameter path."""
    digest = int.from_bytes(bytes.fromhex(sha256_hex(key.encode())[:8]), "little")
    return int(np.random.SeedSequence([seed, digest]).generate_state(1, dtype=np.uint32)[0])


def _skops() -> Any:
    return import_optional("skops.io", extra="safe",
                           purpose="Caching scikit-learn reference models")


class SklearnRecipe:
    """Retrain a scikit-learn estimator: ``clone(estimator)``, reseed, ``fit``.

    Parameters
    ----------
    estimator : scikit-learn estimator
        The (fitted or unfitted) estimator to imitate. Only its class and parameters are
        used; a fitted target can be passed as is.

    Notes
    -----
    Every parameter named ``random_state`` (also ``random_seed`` / ``seed``), at any depth of
    a pipeline or meta-estimator, is set from the seed the pool gives: the top-level one to
    the seed itself, nested ones to seeds derived from it and the parameter path. These
    parameters are therefore left out of the fingerprint.

    Models are cached with ``skops.io`` and read back by
    :func:`privaudit.targets.load_sklearn_model`, with the same explicit allow-list as a
    user's model plus the exact classes of the estimators this recipe was built with
    (e.g. a third-party estimator class), never what the file itself asks for.

    References
    ----------
    .. [1] Shokri, R., Stronati, M., Song, C., Shmatikov, V. "Membership Inference Attacks
       Against Machine Learning Models." IEEE S&P 2017 (shadow models trained like the
       target).
    .. [2] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022 (reference models for LiRA).
    """

    suffix = ".skops"

    def __init__(self, estimator: Any) -> None:
        if not (hasattr(estimator, "fit") and hasattr(estimator, "get_params")):
            raise param_error(
                "estimator", "SklearnRecipe", "a scikit-learn estimator (with fit and get_params)",
                f"<{type(estimator).__name__}>", error=TypeError,
            )
        from sklearn.base import clone

        self.estimator = clone(estimator)

    def __repr__(self) -> str:
        return f"SklearnRecipe({self.estimator!r})"

    def _seed_param_names(self) -> list[str]:
        params = self.estimator.get_params(deep=True)
        return sorted(k for k in params if k.rsplit("__", 1)[-1] in _SEED_PARAMS)

    def fingerprint(self) -> str:
        """Hash of the estimator class, its parameters (seeds excluded) and library versions.

        The scikit-learn version is included: a newer release may train a different model
        from the same parameters, and may not read an older file.
        """
        import sklearn

        seed_names = set(self._seed_param_names())
        params = {
            k: v for k, v in self.estimator.get_params(deep=True).items() if k not in seed_names
        }
        # Nested estimators appear both as values and through their own "a__b" keys; their
        # canonical form covers their class, so both views agree.
        cls = type(self.estimator)
        return sha256_json(
            {
                "recipe": "SklearnRecipe",
                "code_version": RECIPE_CODE_VERSION,
                "sklearn": sklearn.__version__,
                "class": f"{cls.__module__}.{cls.__qualname__}",
                "params": canonical(params),
            }
        )

    def train(self, X: Any, y: Any, *, random_state: int) -> Any:
        """Clone the estimator, set every seed parameter from ``random_state`` and fit."""
        from sklearn.base import clone

        model = clone(self.estimator)
        seeds = {}
        for name in self._seed_param_names():
            seeds[name] = int(random_state) if "__" not in name else _seed_for(name, random_state)
        if seeds:
            model.set_params(**seeds)
        model.fit(X, y)
        return model

    def save(self, model: Any, path: str | os.PathLike[str]) -> None:
        """Write ``model`` with ``skops.io.dump``."""
        _skops().dump(model, os.fspath(path))

    def _own_classes(self) -> list[str]:
        """Names of the estimator classes this recipe was built with (not from the file)."""
        estimators = [self.estimator] + [
            v for v in self.estimator.get_params(deep=True).values()
            if hasattr(v, "fit") and hasattr(v, "get_params")
        ]
        return sorted({f"{type(e).__module__}.{type(e).__qualname__}" for e in estimators})

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Read a model written by :meth:`save` with the allow-list of user models.

        Raises
        ------
        privaudit.targets.UntrustedTypesError
            If the file contains a type outside the allow-list (it was not written by this
            recipe); nothing from it is executed.
        ValueError
            If the file is not a readable skops file or holds an estimator of another class.
        """
        from privaudit.targets import UntrustedTypesError, load_sklearn_model

        file = os.fspath(path)
        try:
            model = load_sklearn_model(file, trusted=self._own_classes())
        except UntrustedTypesError as exc:
            raise UntrustedTypesError(
                f"The cached model {file} contains types this recipe does not produce "
                f"({', '.join(exc.types[:5])}); refusing to load it, nothing was executed. "
                "Delete the file (or the cache directory) to retrain.", exc.types,
            ) from None
        if type(model) is not type(self.estimator):
            raise ValueError(
                f"The cached model {file} is a {type(model).__name__}, not a "
                f"{type(self.estimator).__name__}; refusing to use it."
            )
        return model


class CallableRecipe:
    """Train with a user-supplied function, e.g. a PyTorch training loop.

    Parameters
    ----------
    fn : callable
        ``fn(X, y, *, random_state, **fn_kwargs) -> model``. Must be importable by name
        (a module-level function) when models are trained in worker processes or on Ray.
    fn_kwargs : mapping, optional
        Extra keyword arguments for ``fn``; part of the fingerprint.
    save : callable, optional
        ``save(model, path)``. Needed only with a cache directory.
    load : callable, optional
        ``load(path) -> model``. Must not execute code from the file (use safetensors or
        ``torch.load(..., weights_only=True)`` for torch).
    suffix : str, default=".bin"
        File-name suffix of saved models.
    version : str, optional
        Bump it to invalidate cached models when something ``fn`` depends on changes
        (the fingerprint covers only the source of ``fn``, ``save`` and ``load``).

    References
    ----------
    .. [1] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        fn_kwargs: Mapping[str, Any] | None = None,
        save: Callable[[Any, str], None] | None = None,
        load: Callable[[str], Any] | None = None,
        suffix: str = ".bin",
        version: str | None = None,
    ) -> None:
        for name, value in (("fn", fn), ("save", save), ("load", load)):
            if value is not None and not callable(value):
                raise param_error(
                    name, "CallableRecipe", "callable", f"<{type(value).__name__}>",
                    error=TypeError,
                )
        if (save is None) != (load is None):
            raise param_error(
                "load" if load is None else "save", "CallableRecipe",
                "given together with the other of 'save'/'load'", None,
            )
        if not isinstance(suffix, str):
            raise param_error("suffix", "CallableRecipe", "a string", suffix, error=TypeError)
        self.fn = fn
        self.fn_kwargs = dict(fn_kwargs or {})
        self._save = save
        self._load = load
        self.suffix = suffix
        self.version = version

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return f"CallableRecipe({name}, fn_kwargs={self.fn_kwargs!r})"

    @property
    def can_save(self) -> bool:
        """Whether this recipe can write models to a cache."""
        return self._save is not None

    def fingerprint(self) -> str:
        """Hash of the function's qualified name and source, its kwargs, save/load, version."""
        return sha256_json(
            {
                "recipe": "CallableRecipe",
                "code_version": RECIPE_CODE_VERSION,
                "fn": callable_fingerprint(self.fn),
                "fn_kwargs": canonical(self.fn_kwargs),
                "save": None if self._save is None else callable_fingerprint(self._save),
                "load": None if self._load is None else callable_fingerprint(self._load),
                "suffix": self.suffix,
                "version": self.version,
            }
        )

    def train(self, X: Any, y: Any, *, random_state: int) -> Any:
        """Call ``fn(X, y, random_state=random_state, **fn_kwargs)``."""
        return self.fn(X, y, random_state=int(random_state), **self.fn_kwargs)

    def save(self, model: Any, path: str | os.PathLike[str]) -> None:
        """Call the user's ``save``."""
        if self._save is None:
            raise ValueError(
                "This CallableRecipe has no 'save'/'load' functions, so its models cannot be "
                "cached; pass save= and load= or use cache_dir=None."
            )
        self._save(model, os.fspath(path))

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Call the user's ``load``."""
        if self._load is None:
            raise ValueError("This CallableRecipe has no 'load' function.")
        return self._load(os.fspath(path))


def as_recipe(obj: Any, *, func: str = "ReferencePool") -> TrainingRecipe:
    """Return ``obj`` as a :class:`TrainingRecipe`.

    A recipe is returned as is, a scikit-learn estimator is wrapped in
    :class:`SklearnRecipe`, and a plain callable in :class:`CallableRecipe`.
    """
    if isinstance(obj, TrainingRecipe):
        return obj
    if hasattr(obj, "fit") and hasattr(obj, "get_params"):
        return SklearnRecipe(obj)
    if callable(obj) and not isinstance(obj, type):
        return CallableRecipe(obj)
    raise param_error(
        "recipe", func, "a TrainingRecipe, a scikit-learn estimator or a training function",
        f"<{type(obj).__name__}>", error=TypeError,
    )
