"""Safe loading of scikit-learn models: skops with an explicit list of trusted types."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from privaudit._validation import param_error

__all__ = ["UntrustedTypesError", "load_sklearn_model", "save_sklearn_model"]


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
    try:
        import skops.io as sio
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "Loading scikit-learn models safely needs skops: pip install 'privaudit[safe]'"
        ) from exc
    return sio


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


def _is_sklearn_type(name: str) -> bool:
    return name.startswith("sklearn.") and not name.endswith((".function", ".partial"))


def load_sklearn_model(
    path: str | os.PathLike[str], trusted: Sequence[str] | None = None
) -> Any:
    """Load a scikit-learn model saved with skops, refusing types nobody trusted.

    skops trusts scikit-learn's estimators and numpy/scipy containers itself; any other type
    in the file (a custom class, a function, an optimiser object) must be named in
    ``trusted``, after the caller has checked it. Pickle is never used: unpickling a file
    executes arbitrary code.

    Parameters
    ----------
    path : path-like
        A file written by ``skops.io.dump`` (or :func:`save_sklearn_model`).
    trusted : sequence of str, optional
        Fully qualified type names the caller trusts, e.g.
        ``["sklearn.neural_network._stochastic_optimizers.AdamOptimizer"]``.

    Returns
    -------
    object
        The estimator.

    Raises
    ------
    UntrustedTypesError
        If the file contains types not in ``trusted``; the message lists them.
    """
    func = "load_sklearn_model"
    if isinstance(trusted, (str, bool)) or (
        trusted is not None and not all(isinstance(t, str) for t in trusted)
    ):
        raise param_error(
            "trusted", func, "None or a list of type names (str)", trusted, error=TypeError
        )
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise param_error("path", func, "an existing skops file", path)
    sio = _import_skops()
    untrusted = list(sio.get_untrusted_types(file=path))
    allowed = set(trusted or ())
    # scikit-learn's own compiled types (e.g. sklearn.tree._tree.Tree, the loss objects)
    # are data containers rebuilt by skops' loader, not callables: trusting them executes
    # nothing a user did not write. Functions and classes from anywhere else still need
    # an explicit `trusted`.
    refused = [t for t in untrusted if t not in allowed and not _is_sklearn_type(t)]
    if refused:
        raise UntrustedTypesError(
            f"Refusing to load {path!r}: it contains types that are not trusted: "
            f"{refused}. Inspect them, and if you trust them pass "
            f"trusted={refused!r} to {func}.",
            refused,
        )
    return sio.load(path, trusted=untrusted)
