"""Atomic file writes, the one implementation every privaudit package uses.

Everything privaudit writes to disk (results, reports, cached reference models and their
manifests) goes through :func:`atomic_write`: the content is written to a temporary file in
the destination folder, flushed to disk, then moved over the destination with
:func:`os.replace`. A run killed mid-write leaves either the old file or the new one, never
a truncated file that a later load would misread.

It also holds the one rule for paths: every file privaudit reads or writes resolves inside
the folder it belongs to (:func:`path_inside`, :func:`open_inside`, :func:`mkdir_inside`).

A root helper: it imports only ``privaudit.exceptions``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "check_inside",
    "mkdir_inside",
    "open_inside",
    "path_inside",
    "read_bytes_inside",
    "read_text_inside",
]


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None], *,
                 root: str | os.PathLike[str] | None = None) -> Path:
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
    root : path-like, optional
        The folder the file belongs to: its parent folders are created by
        :func:`mkdir_inside`, so a link planted on the way out of ``root`` is refused
        (:class:`~privaudit.exceptions.OutsideFolderError`) before anything is written.
        The rename replaces a link planted at ``path`` itself, never its target.

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
    if root is None:
        dest.parent.mkdir(parents=True, exist_ok=True)
    else:
        rel = os.path.relpath(os.path.abspath(dest.parent), os.path.abspath(root))
        mkdir_inside(root, *([] if rel == "." else [rel]), what=f"the folder of {dest}")
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


def atomic_write_text(path: str | os.PathLike[str], text: str, *,
                      root: str | os.PathLike[str] | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), root=root)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- paths inside a folder
#
# The one rule for every file privaudit reads or writes in a folder it owns (results,
# caches, locks) or that a user named (a model folder): the path, symbolic links followed,
# must stay inside that folder. A link *inside* the folder is harmless and allowed; a link
# (or ``..``, or an absolute path) that leads out is refused with OutsideFolderError. The
# final open adds O_NOFOLLOW where the platform has it, so a link planted between the check
# and the open is not followed either.

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _outside(path: Path, root: Path, what: str, why: str) -> Exception:
    from privaudit.exceptions import OutsideFolderError

    return OutsideFolderError(f"{what} {path} {why}, outside the folder {root}: privaudit "
                              "reads and writes only files inside the folder they belong to.")


def path_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                what: str = "the file") -> Path:
    """``root / parts``, refused unless it resolves inside ``root``.

    Parameters
    ----------
    root : path-like
        The folder the file belongs to (a results folder, a cache, a model folder). It may
        itself be a link: the user named it.
    *parts : str or path-like
        Relative path components, e.g. a name read from a file. An absolute component or a
        ``..`` is refused, whatever it resolves to.
    what : str
        How the error names the file (``"the shard named by model.safetensors.index.json"``).

    Returns
    -------
    pathlib.Path
        ``root / parts`` (not resolved: messages keep the user's spelling).

    Raises
    ------
    privaudit.exceptions.OutsideFolderError
        If a component is absolute or ``..``, or the path, with every symbolic link on the
        way followed (a dangling one included), leads outside ``root``.
    """
    root = Path(os.fspath(root))
    path = root
    for part in parts:
        rel = Path(os.fspath(part))
        if rel.is_absolute() or rel.drive or ".." in rel.parts:
            raise _outside(root / rel, root, what, "is absolute or climbs out with '..'")
        path = path / rel
    check_inside(path, root, what=what)
    return path


def check_inside(path: str | os.PathLike[str], root: str | os.PathLike[str], *,
                 what: str = "the file") -> Path:
    """Refuse ``path`` unless it resolves (links followed) inside ``root``; return it."""
    path, root = Path(os.fspath(path)), Path(os.fspath(root))
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise _outside(path, root, what, f"resolves to {real}")
    return path


def mkdir_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                 what: str = "the folder") -> Path:
    """Create ``root / parts`` (and ``root``) and check that it stays inside ``root``.

    A link planted at any level (``out/results`` pointing elsewhere) is refused before
    anything is created through it.
    """
    root = Path(os.fspath(root))
    root.mkdir(parents=True, exist_ok=True)
    path = path_inside(root, *parts, what=what)
    current = root
    for part in Path(*map(os.fspath, parts)).parts if parts else ():
        current = current / part
        check_inside(current, root, what=what)
        current.mkdir(exist_ok=True)
        check_inside(current, root, what=what)
    return path


def open_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                flags: int = os.O_RDONLY, mode: int = 0o666, what: str = "the file") -> int:
    """``os.open`` a file inside ``root`` without following a link at its last component.

    The path is first checked by :func:`path_inside`; ``O_NOFOLLOW`` then refuses a link
    planted at the file itself after the check (``OSError``, ``ELOOP``), so a lock or data
    file is never created or opened through a link. Returns the descriptor.
    """
    path = path_inside(root, *parts, what=what)
    try:
        return os.open(path, flags | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if os.path.islink(path):
            raise _outside(path, Path(os.fspath(root)), what, "is a symbolic link") from exc
        raise


def read_bytes_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                      what: str = "the file") -> bytes:
    """The bytes of a file inside ``root`` (see :func:`open_inside`)."""
    fd = open_inside(root, *parts, what=what)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def read_text_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                     what: str = "the file") -> str:
    """The UTF-8 text of a file inside ``root`` (see :func:`open_inside`)."""
    return read_bytes_inside(root, *parts, what=what).decode("utf-8")
