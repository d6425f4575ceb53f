"""Fingerprints: a digest of what an audited artefact is, stable across loads and processes.

An audit keys its saved results on the fingerprint of its target, so a rerun reuses a
finished result only when the target is the same. Each adapter computes its own
(``Target.fingerprint()``); the helpers here read a fitted scikit-learn estimator
(:func:`estimator_fingerprint`), a torch module (:func:`module_fingerprint`) and combine
them with the adapter's own settings (``privaudit._digest.state_digest``).
"""

from __future__ import annotations

import inspect
from typing import Any

from privaudit._digest import DIGITS, Hasher, qualname
from privaudit._validation import param_error

__all__ = [
    "callable_identity",
    "estimator_fingerprint",
    "module_fingerprint",
    "target_fingerprint",
]

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
    try:
        return Hasher().feed(estimator).hexdigest(DIGITS)
    except (TypeError, ValueError, AttributeError, RecursionError):
        return None


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

    h = Hasher()
    try:
        for sub_name, sub in module.named_modules():
            settings = {k: v for k, v in vars(sub).items()
                        if not k.startswith("_") and k not in _NOT_SETTINGS and _is_plain(v)}
            h.feed((sub_name, type(sub), settings))
        for key, tensor in sorted(module.state_dict().items()):
            t = tensor.detach().cpu().contiguous()
            h.update(f"{key}:{t.dtype}{tuple(t.shape)}:".encode())
            # Bytes through uint8: also works for bfloat16, which numpy cannot hold.
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    except (TypeError, ValueError, AttributeError, RuntimeError, NotImplementedError):
        return None
    return h.hexdigest(DIGITS)


#: Module attributes that are not what the module computes: its mode, and where it was
#: loaded from (Hugging Face models keep their folder in ``name_or_path``).
_NOT_SETTINGS = frozenset({"training", "name_or_path"})


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
        return ("function", qualname(fn), code.co_code, repr(code.co_consts))
    if hasattr(fn, "named_modules"):
        return ("module", module_fingerprint(fn))
    return ("object", qualname(type(fn)), repr(getattr(fn, "__dict__", None)))


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
