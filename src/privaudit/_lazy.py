"""Public names imported on first use (PEP 562), for a package's ``__init__``.

``import privaudit`` stays light (no torch, pandas, scikit-learn, matplotlib at import
time) and a worker process imports only what it runs: a package lists the names it
exports lazily and takes its module-level ``__getattr__`` and ``__dir__`` from
:func:`lazy_attributes`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, names: Mapping[str, str], subpackages: Iterable[str] = ()
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (PEP 562).

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : mapping of str to str
        Each lazily exported name and the module defining it; the first lookup imports
        the module and stores the value in the package, so later lookups are plain.
    subpackages : iterable of str, optional
        Subpackages reachable as attributes (``privaudit.metrics``) without an import.

    Returns
    -------
    (__getattr__, __dir__)
    """
    subs = frozenset(subpackages)

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
            setattr(sys.modules[package], name, value)  # later lookups skip this function
            return value
        if name in subs:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        module = sys.modules[package]
        return sorted(set(vars(module)) | set(getattr(module, "__all__", ())) | subs)

    return __getattr__, __dir__
