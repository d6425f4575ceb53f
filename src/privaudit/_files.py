"""Atomic file writes, the one implementation every privaudit package uses.

Everything privaudit writes to disk (results, reports, cached reference models and their
manifests) goes through :func:`atomic_write`: the content is written to a temporary file in
the destination folder, flushed to disk, then moved over the destination with
:func:`os.replace`. A run killed mid-write leaves either the old file or the new one, never
a truncated file that a later load would misread.

It also holds the one rule for paths: every file privaudit reads or writes resolves inside
the folder it belongs to (:func:`path_inside`, :func:`open_inside`, :func:`mkdir_inside`).

A root helper: it imports only ``privaudit.exceptions`` (and ``privaudit._digest`` when it
hashes a file).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "check_inside",
    "mkdir_inside",
    "open_inside",
    "parse_json",
    "path_inside",
    "read_bytes_inside",
    "read_json_inside",
    "read_limited_inside",
    "read_text_inside",
    "sha256_inside",
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

    Raises
    ------
    IsADirectoryError, OSError
        If ``path`` is a folder, or a block device or a socket (checked before writing).

    Notes
    -----
    A ``path`` under ``/dev`` or ``/proc`` (``/dev/null``, ``/dev/stdout``) or a named
    pipe (a FIFO a CI step reads), ``root`` not given, is written to directly, never
    renamed over (:func:`_is_stream`).
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
    if root is None and _is_stream(dest):
        return _write_stream(dest, write)
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


def _is_stream(dest: Path) -> bool:
    """Whether ``dest`` is to be written in place, never renamed over; checked first.

    A rename replaces the node itself: ``--junit /dev/null`` run as root turned the
    system's ``/dev/null`` into a regular file, and ``/dev/stdout`` (a link to
    ``/proc/self/fd/1``) would become one too. So a path under ``/dev`` or ``/proc`` is
    written in place, links followed (a pipe, a terminal, or the file behind a
    descriptor), and so is a named pipe (FIFO) elsewhere. Any other link is still
    replaced, never followed (a link planted in a results folder). A folder, a block
    device, a socket or a device node outside ``/dev`` is refused, naming the path,
    before anything is written.
    """
    system = os.path.abspath(dest).startswith(("/dev/", "/proc/"))
    try:
        mode = (os.stat if system else os.lstat)(dest).st_mode
    except OSError:  # absent (or a dangling link): an ordinary new file
        return False
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"Cannot write {dest}: it is a folder. Name a file in it.")
    if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and not system):
        raise OSError(f"Cannot write {dest}: it is a device or a socket, not a file.")
    return system or stat.S_ISFIFO(mode)


def _write_stream(dest: Path, write: Callable[[Path], None]) -> Path:
    """Write to a device or pipe the user named (``/dev/null``, ``/dev/stdout``, a FIFO).

    The writer fills a private temporary file (it may need a real path: ``numpy.save``),
    whose bytes are then copied into ``dest`` opened for writing: no rename, no atomicity
    to keep (a stream has no old content to preserve).
    """
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="privaudit-") as folder:
        tmp = Path(folder) / f"stream{dest.suffix}"
        write(tmp)
        with tmp.open("rb") as src, open(dest, "wb") as sink:
            shutil.copyfileobj(src, sink)
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
    with _open_regular(root, parts, what) as handle:
        return handle.read()


def _open_regular(root: str | os.PathLike[str], parts: tuple[str | os.PathLike[str], ...],
                  what: str) -> Any:
    """A binary handle on a regular file inside ``root``: never a link, FIFO or device.

    Opened with ``O_NONBLOCK`` so that a FIFO planted in place of the file cannot block
    the open, then refused unless ``fstat`` says it is a regular file.
    """
    fd = open_inside(root, *parts, flags=os.O_RDONLY | getattr(os, "O_NONBLOCK", 0),
                     what=what)
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        path = Path(os.fspath(root), *map(os.fspath, parts))
        raise ValueError(f"{what} {path} is not a regular file.")
    return handle


def read_text_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                     what: str = "the file") -> str:
    """The UTF-8 text of a file inside ``root`` (see :func:`open_inside`)."""
    return read_bytes_inside(root, *parts, what=what).decode("utf-8")


# ------------------------------------------------------------ bounded reads and JSON
#
# Files in a folder privaudit owns are read whole, so each read has a size limit checked
# on the open descriptor before anything is read (a 1 GB result.json is refused at once),
# and every JSON document is parsed with limits: nesting depth (a 200,000-deep array would
# otherwise raise RecursionError, here or in any later walk of the document), no NaN or
# Infinity token, no number that overflows to infinity (1e999).

#: Largest JSON document privaudit reads from a folder it owns (results, manifests).
JSON_MAX_BYTES = 64 << 20
#: Deepest nesting of arrays and objects accepted in such a document.
JSON_MAX_DEPTH = 64


def read_limited_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                        max_bytes: int, what: str = "the file") -> bytes:
    """The bytes of a file inside ``root`` (see :func:`open_inside`), at most ``max_bytes``.

    Raises
    ------
    privaudit.exceptions.OutsideFolderError
        If the file leads out of ``root`` or is a link.
    ValueError
        If the file is larger than ``max_bytes`` (checked before reading), naming it.
    """
    with _open_regular(root, parts, what) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(max_bytes + 1) if size <= max_bytes else b""
        if size > max_bytes or len(data) > max_bytes:
            path = Path(os.fspath(root), *map(os.fspath, parts))
            raise ValueError(f"{what} {path} is {max(size, len(data)):,} bytes long, more "
                             f"than the {max_bytes:,} bytes privaudit reads from such a file.")
    return data


def parse_json(data: bytes | str, *, what: str = "the file",
               max_depth: int = JSON_MAX_DEPTH) -> Any:
    """Strict JSON with limits: the value, or a ValueError saying what is wrong.

    Refused: text that is not UTF-8 or not JSON, the non-standard tokens ``NaN``,
    ``Infinity`` and ``-Infinity``, numbers that overflow a float (``1e999``) or have more
    digits than Python converts (``sys.get_int_max_str_digits``), and arrays or objects
    nested more than ``max_depth`` deep. Never raises RecursionError.
    """
    def refuse(token: str) -> Any:
        raise ValueError(f"the non-standard token {token}")

    def finite(text: str) -> float:
        value = float(text)
        if value in (float("inf"), float("-inf")):
            raise ValueError(f"the number {text:.40} overflows a float")
        return value

    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        doc = json.loads(text, parse_constant=refuse, parse_float=finite)
    except RecursionError:
        raise ValueError(f"{what} is nested more than {max_depth} levels deep") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{what} is not valid JSON ({exc})") from None
    if _depth(doc, max_depth) > max_depth:
        raise ValueError(f"{what} is nested more than {max_depth} levels deep")
    return doc


def _depth(doc: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value, walked without recursion (stops past ``limit``)."""
    deepest = 0
    stack = [(doc, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if not isinstance(value, list):
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            break
        stack.extend((item, level + 1) for item in value)
    return deepest


def read_json_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                     what: str = "the file", max_bytes: int = JSON_MAX_BYTES,
                     max_depth: int = JSON_MAX_DEPTH) -> Any:
    """A JSON file inside ``root``, read by :func:`read_limited_inside` and :func:`parse_json`.

    Raises
    ------
    privaudit.exceptions.OutsideFolderError
        If the file leads out of ``root`` or is a link.
    ValueError
        If it is too large, not JSON or too deep; the message names the file.
    """
    data = read_limited_inside(root, *parts, max_bytes=max_bytes, what=what)
    path = Path(os.fspath(root), *map(os.fspath, parts))
    return parse_json(data, what=f"{what} {path}", max_depth=max_depth)


def sha256_inside(root: str | os.PathLike[str], *parts: str | os.PathLike[str],
                  what: str = "the file") -> str:
    """Hex SHA-256 of a file inside ``root``, opened without following a link."""
    from privaudit._digest import Hasher  # the one home of SHA-256

    digest = Hasher()
    with _open_regular(root, parts, what) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
