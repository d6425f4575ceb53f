"""Fingerprints: a digest of what an audited artefact is, stable across loads and processes.

An audit keys its saved results on the fingerprint of its target, so a rerun reuses a
finished result only when the target is the same. Each adapter computes its own
(``Target.fingerprint()``); the helpers here read a fitted scikit-learn estimator
(:func:`estimator_fingerprint`), a torch module (:func:`module_fingerprint`) and combine
them with the adapter's own settings (:func:`digest_parts`).
"""

from __future__ import annotations

import copyreg
import hashlib
import inspect
from typing import Any

import numpy as np

from privaudit._validation import param_error

__all__ = [
    "callable_identity",
    "digest_parts",
    "estimator_fingerprint",
    "module_fingerprint",
    "target_fingerprint",
]

#: Hex digits kept from a SHA-256 digest (80 bits: no accidental collision in a store).
_DIGITS = 20

#: Attributes that hold runtime state, not the fitted model: a random generator is
#: re-seeded by every load (skops rebuilds ``MLPClassifier._random_state`` afresh), so
#: ``joblib.hash`` of the same file differed from one load to the next.
_VOLATILE_ATTRIBUTES = frozenset({"_random_state"})


def estimator_fingerprint(estimator: Any) -> str | None:
    """Digest of a fitted scikit-learn estimator's state, stable across loads and processes.

    Built from what the estimator is, not from its pickled bytes: its class, then every
    attribute (hyperparameters and fitted attributes, public or private: a
    ``HistGradientBoosting`` keeps its trees in ``_predictors``), arrays by dtype, shape
    and bytes, nested estimators, lists and dicts recursively, compiled objects such as
    ``sklearn.tree._tree.Tree`` by their pickled state. Random generators are left out: a
    load re-seeds them and they do not change what the fitted model predicts. Two loads of
    one file give the same digest; a refit with another seed gives another.

    Parameters
    ----------
    estimator : fitted scikit-learn estimator
        Pipelines and meta-estimators included.

    Returns
    -------
    str or None
        20 hex digits, or None when some part of the estimator cannot be read (the audit
        then identifies the model by its answers).

    References
    ----------
    .. [1] scikit-learn developers, "Model persistence" (why pickled bytes are not a stable
       identity: https://scikit-learn.org/stable/model_persistence.html).
    """
    h = hashlib.sha256()
    try:
        _hash_state(estimator, h, set(), 0)
    except (TypeError, ValueError, AttributeError, RecursionError):
        return None
    return h.hexdigest()[:_DIGITS]


def digest_parts(*parts: Any) -> str:
    """Digest of plain values and arrays (str, numbers, None, tuples, dicts, ndarrays).

    Canonical like :func:`estimator_fingerprint`: the same values give the same 20 hex
    digits in every process; ``(1, 2)`` and ``(12,)`` or ``[[1], 2]`` differ.
    """
    h = hashlib.sha256()
    _hash_state(tuple(parts), h, set(), 0)
    return h.hexdigest()[:_DIGITS]


def module_fingerprint(module: Any) -> str | None:
    """Digest of a torch module: its architecture, settings and state dict, or None.

    Every tensor of ``module.state_dict()`` is read by name, dtype, shape and bytes (a
    reshaped or re-typed tensor with the same bytes differs); each submodule adds its class
    and its plain settings (``p`` of a dropout, ``negative_slope``, ``stride``, a user
    ``temperature``): two networks with equal weights but another activation differ.

    Returns
    -------
    str or None
        20 hex digits, or None when a tensor cannot be read (meta or sparse tensors).
    """
    import torch

    h = hashlib.sha256()
    try:
        for sub_name, sub in module.named_modules():
            settings = {k: v for k, v in vars(sub).items()
                        if not k.startswith("_") and k != "training" and _is_plain(v)}
            _hash_state((sub_name, type(sub), settings), h, set(), 0)
        for key, tensor in sorted(module.state_dict().items()):
            t = tensor.detach().cpu().contiguous()
            h.update(f"{key}:{t.dtype}{tuple(t.shape)}:".encode())
            # Bytes through uint8: also works for bfloat16, which numpy cannot hold.
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    except (TypeError, ValueError, AttributeError, RuntimeError, NotImplementedError):
        return None
    return h.hexdigest()[:_DIGITS]


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, tuple):
        return all(_is_plain(v) for v in value)
    return False


def callable_identity(fn: Any) -> Any:
    """A stable description of a callable setting (a loss): its class and code, not its id."""
    if fn is None:
        return None
    if inspect.isfunction(fn):
        code = fn.__code__
        return ("function", _qualname(fn), code.co_code, repr(code.co_consts))
    if hasattr(fn, "named_modules"):
        return ("module", module_fingerprint(fn))
    return ("object", _qualname(type(fn)), repr(getattr(fn, "__dict__", None)))


def target_fingerprint(artifact: Any, *, func: str = "target_fingerprint") -> str | None:
    """The fingerprint of an audited artefact, checked: a string or None.

    Parameters
    ----------
    artifact : AuditedArtifact
        Any object with ``fingerprint() -> str | None`` (every privaudit target, a text or
        table artefact). An object without the method (a target written before it
        existed) has no fingerprint: None, and the audit identifies it by its answers.
    func : str
        Name of the calling function, for the error message.

    Returns
    -------
    str or None

    Raises
    ------
    TypeError
        If ``fingerprint()`` returns something else than a non-empty string or None (a
        number or an object would silently change or collide in a result key).
    """
    method = getattr(artifact, "fingerprint", None)
    if method is None:
        return None
    if not callable(method):
        raise param_error("target", func, "an artefact whose fingerprint is a method",
                          f"<fingerprint of type {type(method).__name__}>", error=TypeError)
    value = method()
    if value is not None and (not isinstance(value, str) or not value):
        raise param_error("target", func, "an artefact whose fingerprint() returns a "
                          "non-empty str or None", f"<{type(value).__name__} {value!r}>",
                          error=TypeError)
    return value


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _hash_state(obj: Any, h: Any, seen: set[int], depth: int) -> None:
    """Feed ``obj``'s state into ``h`` in a canonical order (see estimator_fingerprint)."""
    if depth > 60:
        raise RecursionError("estimator state nested too deeply")
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
        return
    if isinstance(obj, (np.random.RandomState, np.random.Generator,
                        np.random.BitGenerator, np.random.SeedSequence)):
        h.update(b"<rng>;")
        return
    if isinstance(obj, np.generic):
        h.update(f"{obj.dtype.str}:".encode() + obj.tobytes() + b";")
        return
    if isinstance(obj, (type, np.ufunc)) or inspect.isroutine(obj):
        h.update(f"<{_qualname(obj)}>;".encode())
        return
    if isinstance(obj, np.ndarray):
        _hash_array(obj, h, seen, depth)
        return
    if id(obj) in seen:
        h.update(b"<cycle>;")
        return
    seen.add(id(obj))
    try:
        _hash_container(obj, h, seen, depth)
    finally:
        seen.discard(id(obj))


def _hash_array(obj: np.ndarray, h: Any, seen: set[int], depth: int) -> None:
    h.update(f"array{obj.dtype.str}{obj.shape}:".encode())
    if obj.dtype.names:
        # Field by field: a record array's padding bytes (a tree's nodes) are
        # uninitialised memory, different at every load.
        for field in obj.dtype.names:
            _hash_state(np.ascontiguousarray(obj[field]), h, seen, depth + 1)
    elif obj.dtype.hasobject:
        for item in obj.ravel():
            _hash_state(item, h, seen, depth + 1)
    else:
        h.update(np.ascontiguousarray(obj).tobytes())


def _hash_container(obj: Any, h: Any, seen: set[int], depth: int) -> None:
    if isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}]".encode())
        for item in obj:
            _hash_state(item, h, seen, depth + 1)
        return
    if isinstance(obj, (set, frozenset)):
        obj = sorted(obj, key=repr)
        h.update(f"set[{len(obj)}]".encode())
        for item in obj:
            _hash_state(item, h, seen, depth + 1)
        return
    if isinstance(obj, dict):
        h.update(f"dict[{len(obj)}]".encode())
        for key in sorted(obj, key=repr):
            if key in _VOLATILE_ATTRIBUTES:
                continue
            _hash_state(key, h, seen, depth + 1)
            _hash_state(obj[key], h, seen, depth + 1)
        return
    h.update(f"<{_qualname(type(obj))}>".encode())
    state = getattr(obj, "__dict__", None)
    if state is None or not state:
        # Compiled objects (a tree's nodes, a loss) expose their state for pickling;
        # reading it runs no code from a file, the object is already built.
        reduced = obj.__reduce_ex__(4)
        if not isinstance(reduced, tuple) or len(reduced) < 2:
            raise TypeError(f"cannot read the state of {type(obj).__name__}")
        args = reduced[1][1:] if reduced[0] is copyreg.__newobj__ else reduced[1]
        state = {"args": args, "state": reduced[2] if len(reduced) > 2 else None}
    _hash_state(dict(state), h, seen, depth + 1)
