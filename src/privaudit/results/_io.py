"""Atomic file writes and strict-JSON conversion shared by results and reports.

Everything privaudit writes to disk goes through :func:`atomic_write`: the content is
written to a temporary file in the destination folder, flushed to disk, then moved over the
destination with :func:`os.replace`. A run that is killed mid-write therefore leaves either
the old file or the new one, never a truncated file that a later ``load`` would misread.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_write", "atomic_write_text", "dump_json", "to_jsonable"]


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Write ``path`` atomically.

    Parameters
    ----------
    path : path-like
        Destination. Its parent folder is created if needed.
    write : callable
        ``write(tmp_path)`` writes the whole content to ``tmp_path`` (a file in the same
        folder as ``path``, so that the final rename stays on one file system).

    Returns
    -------
    pathlib.Path
        The destination path.
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # A fresh unique name, not mkstemp: the writer creates the file itself, with the usual
    # permissions (0666 minus the umask) rather than mkstemp's private 0600.
    tmp = dest.parent / f".{dest.name}.{uuid.uuid4().hex}.tmp"
    try:
        write(tmp)
        # fsync so that the rename cannot reach the disk before the data does.
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return dest


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def to_jsonable(obj: Any, *, where: str = "value") -> Any:
    """Convert ``obj`` to plain JSON types, for strict JSON (no NaN/Infinity tokens).

    numpy scalars and arrays become Python numbers and lists, tuples become lists, and
    non-finite floats become ``None`` (``null``): the JSON standard has no NaN or
    infinity, and files with such tokens break ``JSON.parse`` and ``jq``.

    Raises
    ------
    TypeError
        If ``obj`` contains something JSON cannot represent; ``where`` names the place.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v, where=where) for v in obj.tolist()]
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"{where} must have string keys to be written as JSON. "
                    f"Got the key {key!r} of type {type(key).__name__} instead."
                )
            out[key] = to_jsonable(value, where=f"{where}[{key!r}]")
        return out
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, where=f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(
        f"{where} must be JSON-serialisable (numbers, strings, booleans, None, lists, dicts). "
        f"Got an object of type {type(obj).__name__} instead."
    )


def dump_json(obj: Any, path: str | os.PathLike[str], *, where: str = "value") -> Path:
    """Write ``obj`` as strict, indented JSON to ``path`` atomically."""
    text = json.dumps(to_jsonable(obj, where=where), indent=2, allow_nan=False,
                      ensure_ascii=False)
    return atomic_write_text(path, text + "\n")
