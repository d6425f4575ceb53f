"""Atomic file writes, the one implementation every privaudit package uses.

Everything privaudit writes to disk (results, reports, cached reference models and their
manifests) goes through :func:`atomic_write`: the content is written to a temporary file in
the destination folder, flushed to disk, then moved over the destination with
:func:`os.replace`. A run killed mid-write leaves either the old file or the new one, never
a truncated file that a later load would misread.

A root helper: it imports nothing of privaudit.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_text"]


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Write ``path`` atomically: ``write(tmp)`` to a temporary file, then rename it.

    Parameters
    ----------
    path : path-like
        Destination. Its parent folder is created if needed.
    write : callable
        ``write(tmp_path)`` writes the whole content to ``tmp_path``: a file in the same
        folder as ``path`` (a rename across file systems is not atomic) whose name ends
        with the destination's suffix (writers such as ``numpy.save`` or a recipe's
        ``save`` check or add it). The writer creates the file itself, so it gets the
        usual permissions (0666 minus the umask), not ``mkstemp``'s private 0600.

    Returns
    -------
    pathlib.Path
        The destination path.

    Notes
    -----
    The temporary file is flushed with ``fsync`` before the rename, so that the rename
    cannot reach the disk before the data does; on any failure (an exception in
    ``write``, a full disk, ``KeyboardInterrupt``) it is removed and the destination is
    left as it was.

    References
    ----------
    .. [1] Python documentation, ``os.replace``: "If successful, the renaming will be an
       atomic operation (this is a POSIX requirement)."
    """
    dest = Path(os.fspath(path))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.stem}.{uuid.uuid4().hex}.tmp{dest.suffix}")
    try:
        write(tmp)
        _fsync(tmp)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return dest


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
