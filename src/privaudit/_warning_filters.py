"""A process's warning filters, sent to worker processes without importing anything there.

A command silences third-party notices with warning filters (a category, a message, a
module); a spawned worker starts without them. Sending the filters as they are would
unpickle each category, importing every module that defines one: the parent's libraries
register filters when imported (Ray, torch, SymPy), so each worker of a process that had
imported torch and Ray spent about 4 CPU-s importing them, to run a task that needs
neither. Here each category travels by name and is looked up only when a warning is
matched. Used by the training executors and the demo's workers.
"""

from __future__ import annotations

import pickle
import sys
import warnings
from typing import Any

__all__ = ["install_warning_filters", "portable_warning_filters"]


class _NamedCategoryType(type):
    """The type of a warning category known by name, matched once its module is loaded.

    A worker receives its parent's warning filters. Unpickling their categories would
    import every module that defines one: the parent's libraries register filters when
    imported (Ray, torch, SymPy), so each worker of a process that imported torch and Ray
    spent about 4 CPU-s importing them (a two-worker pool: 10.2 CPU-s, 2.3 without), to
    run a task that needs neither. A category
    whose module the worker has not imported cannot be the class of any warning there,
    so a stand-in that looks the category up in ``sys.modules`` when a warning is
    matched (``issubclass(warning_class, stand_in)``) applies the filter exactly as the
    class would, from the moment the task imports that module.
    """

    category_name: tuple[str, str]

    def __subclasscheck__(cls, subclass: type) -> bool:
        category = _loaded_category(*cls.category_name)
        return category is not None and issubclass(subclass, category)


def _loaded_category(module: str, qualname: str) -> type | None:
    """The class ``module.qualname`` if that module is loaded here (nothing imported)."""
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) else None


def _category_name(category: type) -> tuple[str, str]:
    if isinstance(category, _NamedCategoryType):
        return category.category_name
    return category.__module__, category.__qualname__


def portable_warning_filters() -> list[tuple[Any, ...]]:
    """The warning filters of this process, for worker processes: each category by name.

    See :func:`install_warning_filters`. A filter on a class defined inside a function
    (which no other process can name) is left out.
    """
    out = []
    for action, message, category, module, lineno in warnings.filters:
        entry = (action, message, _category_name(category), module, lineno)
        if "<locals>" in entry[2][1]:
            continue
        try:
            pickle.dumps(entry)
        except Exception:  # an unpicklable pattern: leave it out
            continue
        out.append(entry)
    return out


def install_warning_filters(filters: list[tuple[Any, ...]]) -> None:
    """Make ``filters`` (from :func:`portable_warning_filters`) this process's filters.

    A category whose module is loaded here is itself; any other is a stand-in that
    matches its subclasses once the module is imported (:class:`_NamedCategoryType`).
    """
    installed = []
    for action, message, (module, qualname), module_pattern, lineno in filters:
        category = _loaded_category(module, qualname) or _NamedCategoryType(
            qualname, (Warning,), {"category_name": (module, qualname)})
        installed.append((action, message, category, module_pattern, lineno))
    warnings.filters[:] = installed
