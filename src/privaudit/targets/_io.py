"""Safe loading of scikit-learn models: skops with an explicit allow-list of types.

The one implementation used for every scikit-learn model privaudit reads: a user's model
file and the reference-model cache (:class:`privaudit.training.SklearnRecipe`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import warnings
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.exceptions import PrivauditWarning
from privaudit.targets._skops_types import (
    FORBIDDEN_PARTS,
    FORBIDDEN_ROOTS,
    FUNCTION_REFERENCES,
    HELPER_CLASSES,
)

__all__ = [
    "UntrustedTypesError",
    "is_forbidden_type",
    "load_sklearn_model",
    "save_sklearn_model",
    "trusted_sklearn_types",
]


class UntrustedTypesError(ValueError):
    """A skops file contains types the caller has not trusted; nothing was executed.

    Attributes
    ----------
    types : list of str
        The untrusted type names found in the file.
    """

    def __init__(self, message: str, types: Sequence[str]) -> None:
        super().__init__(message)
        self.types = list(types)


def _import_skops() -> Any:
    return import_optional("skops.io", extra="safe",
                           purpose="Loading scikit-learn models safely")


def save_sklearn_model(estimator: Any, path: str | os.PathLike[str]) -> None:
    """Write a scikit-learn estimator with ``skops.io.dump`` (never pickle).

    Parameters
    ----------
    estimator : scikit-learn estimator
        The model to save.
    path : path-like
        Destination (conventionally ``*.skops``).
    """
    sio = _import_skops()
    sio.dump(estimator, os.fspath(path))


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@functools.lru_cache(maxsize=1)
def _default_classes() -> frozenset[str]:
    from sklearn.utils import all_estimators

    estimators = {
        _type_name(cls) for _, cls in all_estimators() if cls.__module__.startswith("sklearn.")
    }
    return frozenset(estimators | set(HELPER_CLASSES))


def trusted_sklearn_types() -> frozenset[str]:
    """The type names :func:`load_sklearn_model` trusts beyond skops' own defaults.

    The estimator classes of ``sklearn.utils.all_estimators()``, the helper classes they
    hold (trees, optimisers, losses, kernels, distance metrics, splitters, numpy/scipy
    containers) and a few pure numerical functions admitted only as references (score
    functions, metrics of scorers). Written down explicitly in
    ``privaudit/targets/_skops_types.py``; never a namespace prefix.

    Returns
    -------
    frozenset of str
        Fully qualified names.
    """
    return _default_classes() | frozenset(FUNCTION_REFERENCES)


def is_forbidden_type(name: str) -> bool:
    """Whether ``name`` lies in a module that is never trusted, even when asked.

    ``builtins``, ``os``, ``subprocess``, ``operator``, ``functools``, ``importlib``,
    ``runpy``, ``pickle`` and similar modules that run code, and any ``_testing`` or
    ``testing`` module.
    """
    parts = name.split(".")
    return parts[0] in FORBIDDEN_ROOTS or any(p in FORBIDDEN_PARTS for p in parts)


# skops loaders that only import a name and hand it back; every other loader calls the
# named object (ReduceNode, LossNode, ConstructorFromReduceNode, NdArrayNode) or builds an
# instance of it (ObjectNode).
_REFERENCE_LOADERS = frozenset({"FunctionNode", "TypeNode"})

_Uses = dict[str, set[tuple[str, str, str]]]


def _schema_uses(path: str) -> _Uses:
    """Every ``module.class`` a skops file names, with the loaders that would use it."""
    with zipfile.ZipFile(path) as zf:
        schema = json.loads(zf.read("schema.json"))
    uses: _Uses = {}
    stack: list[Any] = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if {"__loader__", "__module__", "__class__"} <= item.keys():
                mod, cls = str(item["__module__"]), str(item["__class__"])
                uses.setdefault(f"{mod}.{cls}", set()).add((str(item["__loader__"]), mod, cls))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return uses


def _read_types(path: str) -> tuple[list[str], _Uses]:
    sio = _import_skops()
    try:
        return list(sio.get_untrusted_types(file=path)), _schema_uses(path)
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, AttributeError,
            RecursionError, OSError) as exc:
        raise ValueError(
            f"{path!r} is not a readable skops file ({type(exc).__name__}: {exc}). Save "
            "models with privaudit.targets.save_sklearn_model or skops.io.dump; privaudit "
            "never unpickles a model file."
        ) from exc


def _only_references(uses: set[tuple[str, str, str]]) -> bool:
    return bool(uses) and all(loader in _REFERENCE_LOADERS for loader, _, _ in uses)


def _user_type_ok(name: str, uses: set[tuple[str, str, str]]) -> bool:
    """A type the caller trusted: accept classes; functions only as references."""
    if not uses:  # e.g. a bound method "module.Class.method": the caller named it exactly
        return True
    for _, mod, cls in uses:
        try:
            obj = getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError, ValueError, TypeError):
            return False
        if not inspect.isclass(obj):
            if not _only_references(uses):
                return False
            warnings.warn(
                f"Trusting the function {name}: the loaded estimator may call it on your "
                "data. Make sure you have read it.", PrivauditWarning, stacklevel=4,
            )
    return True


def _refused(untrusted: Sequence[str], uses: _Uses, user: set[str]) -> list[str]:
    classes = _default_classes()
    refused = []
    for name in untrusted:
        found = uses.get(name, set())
        if name in classes and not is_forbidden_type(name):
            continue
        if name in FUNCTION_REFERENCES and _only_references(found):
            continue
        if name in user and not is_forbidden_type(name) and _user_type_ok(name, found):
            continue
        refused.append(name)
    return refused


def _check_trusted(trusted: Any, func: str) -> set[str]:
    if isinstance(trusted, (str, bool)) or (
        trusted is not None and not all(isinstance(t, str) for t in trusted)
    ):
        raise param_error(
            "trusted", func, "None or a list of type names (str)", trusted, error=TypeError
        )
    forbidden = [t for t in trusted or () if is_forbidden_type(t)]
    if forbidden:
        raise param_error(
            "trusted", func, "free of names from builtins, os, subprocess, operator, "
            "functools, importlib, runpy, pickle and test modules (loading them runs code)",
            forbidden,
        )
    return set(trusted or ())


def load_sklearn_model(
    path: str | os.PathLike[str], trusted: Sequence[str] | None = None
) -> Any:
    """Load a scikit-learn model saved with skops, refusing every type not allow-listed.

    No code from the file runs: pickle is never used, and every type the file names must
    be one skops trusts by itself (numpy arrays, builtin containers...) or on the explicit
    list of :func:`trusted_sklearn_types` (scikit-learn's estimator classes, the helper
    classes they hold, and a few numerical functions taken only as references, never
    called while loading). Functions, utility modules and anything under ``builtins``,
    ``os``, ``subprocess``, ``operator``, ``functools``, ``importlib``, ``runpy`` or a
    ``_testing`` module are refused.

    Parameters
    ----------
    path : path-like
        A file written by ``skops.io.dump`` (or :func:`save_sklearn_model`).
    trusted : sequence of str, optional
        Further fully qualified names the caller has read and trusts (e.g. their own
        estimator class). Each is imported while loading. A class is accepted; a function
        only if the file merely refers to it (a warning says the estimator may call it);
        names from the forbidden modules above are refused even here.

    Returns
    -------
    object
        The estimator.

    Raises
    ------
    UntrustedTypesError
        If the file contains types that are not trusted; the message lists them.
    ValueError
        If ``path`` is not a readable skops file, or ``trusted`` names a forbidden module.

    References
    ----------
    .. [1] skops.io documentation, "Secure persistence with skops".
    .. [2] OWASP, "Deserialization of untrusted data".
    """
    func = "load_sklearn_model"
    user = _check_trusted(trusted, func)
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise param_error("path", func, "an existing skops file", path)
    untrusted, uses = _read_types(path)
    refused = _refused(untrusted, uses, user)
    if refused:
        hint = ("" if all(is_forbidden_type(t) for t in refused) else
                " Inspect them, and if they are classes you trust pass "
                f"trusted={[t for t in refused if not is_forbidden_type(t)]!r} to {func}.")
        raise UntrustedTypesError(
            f"Refusing to load {path!r}: it contains types that are not trusted: "
            f"{refused}. Nothing was executed.{hint}",
            refused,
        )
    model = _import_skops().load(path, trusted=untrusted)
    _check_tree_structures(model, path)
    return model


# ------------------------------------------------------------ content of trusted types

def _bad_structure(path: str, what: str) -> ValueError:
    return ValueError(
        f"Refusing to load {path!r}: {what}. scikit-learn would index outside its memory "
        "(or loop forever) at prediction time; the file is damaged or crafted."
    )


def _check_tree(tree: Any, limit: int | None, path: str) -> None:
    """A decision tree whose children point forward inside it and features exist."""
    n = int(tree.node_count)
    if not 0 < n <= int(tree.capacity):
        raise _bad_structure(path, f"a tree has {n} nodes for a capacity of {tree.capacity}")
    left, right, feature = tree.children_left, tree.children_right, tree.feature
    n_features = int(tree.n_features) if limit is None else min(int(tree.n_features), limit)
    _check_nodes(left, right, feature, left == -1, n_features, path)
    if np.any(right[left == -1] != -1):
        raise _bad_structure(path, "a tree leaf has one child")


def _check_nodes(left: Any, right: Any, feature: Any, leaf: Any, n_features: int,
                 path: str) -> None:
    idx = np.arange(len(left))
    ok = ((left > idx) & (left < len(left)) & (right > idx) & (right < len(left))
          & (feature >= 0) & (feature < n_features))
    if not np.all(ok | leaf):
        raise _bad_structure(path, "a tree has node or feature indices out of range")


def _check_predictor(pred: Any, limit: int | None, path: str) -> None:
    """A histogram-gradient-boosting tree: the same checks on its node records."""
    nodes = pred.nodes
    leaf = nodes["is_leaf"].astype(bool)
    _check_nodes(nodes["left"].astype(np.int64), nodes["right"].astype(np.int64),
                 nodes["feature_idx"].astype(np.int64), leaf,
                 np.iinfo(np.int64).max if limit is None else limit, path)
    cat = nodes["is_categorical"].astype(bool) & ~leaf
    n_bitsets = min(len(pred.raw_left_cat_bitsets), len(pred.binned_left_cat_bitsets))
    if np.any(nodes["bitset_idx"][cat] >= n_bitsets):
        raise _bad_structure(path, "a tree has category bitset indices out of range")


def _check_tree_structures(model: Any, path: str) -> None:
    """Check every Tree and TreePredictor in ``model``: skops checks types, not content."""
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.tree._tree import Tree

    seen: set[int] = set()
    stack: list[tuple[Any, int | None]] = [(model, None)]
    while stack:
        obj, limit = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, str, bytes, int, float)):
            continue
        seen.add(id(obj))
        if isinstance(obj, Tree):
            _check_tree(obj, limit, path)
        elif isinstance(obj, TreePredictor):
            _check_predictor(obj, limit, path)
        elif isinstance(obj, dict):
            stack.extend((v, limit) for v in obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend((v, limit) for v in obj)
        elif isinstance(obj, np.ndarray) and obj.dtype == object:
            stack.extend((v, limit) for v in obj.ravel())
        elif hasattr(obj, "__dict__"):
            own = vars(obj).get("n_features_in_")
            limit = int(own) if isinstance(own, (int, np.integer)) else limit
            stack.extend((v, limit) for v in vars(obj).values())
