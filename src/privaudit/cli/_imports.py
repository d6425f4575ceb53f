"""Importing the code a configuration names (``module:function``) without trusting its folder.

A configuration names code to run in keys such as ``target.factory``,
``reference.recipe.train`` and ``generators[i].callable``. Naming it is how the user opts
in to running that one module; nothing else in the configuration's folder is trusted.

:func:`import_named` resolves ``module:attribute`` against a folder as follows:

- ``mod`` is the file ``<folder>/mod.py`` and ``pkg.mod`` the file ``<folder>/pkg/mod.py``;
  the file must resolve inside the folder (no link out). Its bytes are read once and run
  as a module of a private name (``_privaudit_config_<name>_<hash of the content>``). The
  folder is **never** put on ``sys.path``: the module's own imports (``import sklearn``)
  come from the installed packages only, so a ``sklearn.py`` or ``ctgan.py`` planted
  beside the configuration is never run. The other side of this: a module's imports of
  its siblings in the folder (``import helpers``) and relative imports do not resolve;
  the error says so when the missing module is a file in the folder (keep the code in
  the one file, or install it as a package).
- When the folder has no such file, ``mod`` is imported as an installed module
  (``torchvision.models:resnet18``).
- A name that is both a file in the folder and a different installed module is refused:
  the folder's file would shadow the library.

The module loaded from a file is registered with cloudpickle to be pickled by value, so its
functions and classes travel to local worker processes and Ray workers (which cannot import
it by name) as code: the code a worker runs is the code the parent read, checked and ran,
and no worker reads the file again (it may be on another machine).

It lives in the CLI, the only reader of configuration files; it imports the root helpers
``privaudit._files`` and ``privaudit._digest`` (and cloudpickle when a file is loaded).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from privaudit._digest import sha256_hex
from privaudit._files import path_inside, read_bytes_inside

__all__ = ["import_named"]

_PREFIX = "_privaudit_config_"


class _SourceLoader(importlib.abc.Loader):
    """Runs source bytes already read (and hashed) as a module: the file is read once."""

    def __init__(self, source: bytes, path: Path) -> None:
        self.source, self.path = source, path

    def create_module(self, spec: Any) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        code = compile(self.source, str(self.path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # the module the configuration names

    def get_source(self, fullname: str) -> str:
        """The source, for ``inspect.getsource`` (cache keys hash a function's source)."""
        return self.source.decode("utf-8", errors="replace")


def _split(spec: str, key: str) -> tuple[list[str], list[str]]:
    module, sep, attribute = spec.partition(":")
    parts, attrs = module.split("."), attribute.split(".")
    if not sep or not all(p.isidentifier() for p in parts + attrs):
        raise ImportError(f"The {key!r} key must be 'module:function' (dotted Python "
                          f"names, e.g. my_models:build_net). Got {spec!r} instead.")
    return parts, attrs


def _installed_origin(name: str) -> str | None:
    """Where the installed top-level module ``name`` lives (None: not installed)."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    return found.origin or next(iter(found.submodule_search_locations or []), None) or name


def _module_file(parts: list[str], folder: Path, key: str) -> Path | None:
    """The folder's file for ``parts`` (checked inside the folder), or None."""
    candidate = folder.joinpath(*parts[:-1], parts[-1] + ".py")
    if not os.path.lexists(candidate):
        return None
    path = path_inside(folder, *parts[:-1], parts[-1] + ".py",
                       what=f"The module file named by {key!r},")
    origin = _installed_origin(parts[0])
    if origin is not None and not _is_own(origin, folder, parts[0]):
        raise ImportError(
            f"The {key!r} key names module {'.'.join(parts)!r}, which is both the file "
            f"{path} in the configuration's folder and an installed module ({origin}): "
            "privaudit will not let a file beside the configuration shadow a library. "
            "Rename the file.")
    return path


def _is_own(origin: str, folder: Path, top: str) -> bool:
    """Whether the installed ``top`` is the folder's own file (the folder is on sys.path)."""
    real = os.path.realpath(origin)
    return real == os.path.realpath(folder / f"{top}.py") or real.startswith(
        os.path.realpath(folder / top) + os.sep)


def _sibling_hint(exc: ImportError, folder: Path) -> str:
    missing = (getattr(exc, "name", None) or "").split(".")[0]
    if missing and (os.path.lexists(folder / f"{missing}.py")
                    or os.path.isdir(folder / missing)):
        return (f" {missing!r} is a file in the configuration's folder, which is never "
                "on the import path: the module named in the configuration is imported "
                "from its own file only, and its imports come from the installed packages "
                "(so that a file planted beside the configuration cannot replace a "
                "library). Keep that code in the named module's file, or install it as "
                "a package.")
    if "relative import" in str(exc):
        return (" Relative imports do not resolve: the module is imported from its own "
                "file only.")
    return ""


def _load_file(path: Path, parts: list[str], folder: Path, key: str) -> ModuleType:
    source = read_bytes_inside(folder, *parts[:-1], parts[-1] + ".py",
                               what=f"The module file named by {key!r},")
    digest = sha256_hex(source)[:12]
    name = f"{_PREFIX}{'_'.join(parts)}_{digest}"
    if name in sys.modules:  # the same content, already run in this process
        return sys.modules[name]
    spec = importlib.util.spec_from_loader(name, _SourceLoader(source, path),
                                           origin=str(path))
    assert spec is not None  # spec_from_loader returns a spec for a loader
    spec.has_location = True  # sets __file__
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses, pickling and inspect look it up by name
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException as exc:
        del sys.modules[name]
        if not isinstance(exc, Exception):
            raise
        hint = _sibling_hint(exc, folder) if isinstance(exc, ImportError) else ""
        raise ImportError(f"The {key!r} key names module {'.'.join(parts)!r} ({path}), "
                          f"which fails when it runs: {type(exc).__name__}: "
                          f"{_short(exc)}.{hint}") from exc
    _pickle_by_value(module)
    return module


def _pickle_by_value(module: ModuleType) -> None:
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - a dependency of joblib's loky
        return
    cloudpickle.register_pickle_by_value(module)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def import_named(spec: str, folder: str | os.PathLike[str], *, key: str) -> Any:
    """The object ``module:attribute`` names, its module read from ``folder`` or installed.

    Parameters
    ----------
    spec : str
        ``module:attribute``, both dotted Python names (``my_models:build_net``,
        ``pkg.mod:Class.method``).
    folder : path-like
        The configuration's folder: ``mod`` is ``<folder>/mod.py``, ``pkg.mod`` is
        ``<folder>/pkg/mod.py``. It is never put on ``sys.path`` (see the module's
        documentation for what this means for the module's own imports).
    key : str
        The configuration key, as the errors name it (``"target.factory"``).

    Returns
    -------
    object
        The attribute. Functions and classes of a module loaded from the folder are
        pickled by value (cloudpickle), so worker processes and Ray run them.

    Raises
    ------
    ImportError
        A malformed ``spec``; no such file and no such installed module; a file that
        shadows an installed module; a module that fails when it runs (the message says
        when the missing import is a file in the folder, which does not resolve).
    AttributeError
        The module has no such attribute.
    privaudit.exceptions.OutsideFolderError
        The module's file is a link (or under a folder link) that leads out of ``folder``.
    """
    folder = Path(os.fspath(folder))
    parts, attrs = _split(spec, key)
    path = _module_file(parts, folder, key)
    if path is not None:
        module = _load_file(path, parts, folder, key)
    else:
        module = _import_installed(parts, folder, key)
    found: Any = module
    for i, attr in enumerate(attrs):
        if not hasattr(found, attr):
            raise AttributeError(f"The {key!r} key names {spec!r}, but "
                                 f"{'.'.join([*parts, *attrs[:i]])!r} has no {attr!r}.")
        found = getattr(found, attr)
    return found


def _import_installed(parts: list[str], folder: Path, key: str) -> ModuleType:
    name = ".".join(parts)
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if getattr(exc, "name", None) in {parts[0], name}:
            raise ImportError(
                f"The {key!r} key names module {name!r}, but there is no file "
                f"{folder.joinpath(*parts[:-1], parts[-1] + '.py')} and no installed module "
                f"of that name.") from None
        raise ImportError(f"The {key!r} key names the installed module {name!r}, which "
                          f"cannot be imported ({type(exc).__name__}: {_short(exc)}).") from exc
