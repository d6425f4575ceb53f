"""The one error of the configuration files, and how its messages name a key."""

from __future__ import annotations

from typing import Any

__all__ = [
    "RESAVE_UTF8",
    "ConfigError",
    "KeyProblem",
    "command_in_traceback",
    "crash_line",
    "file_in_traceback",
    "is_crash",
    "key_error",
    "not_utf8",
    "one_line",
]


class ConfigError(ValueError):
    """A configuration key or a data file is wrong; the message names the key or file."""


def _short(value: Any) -> str:
    # Cut in the middle: the end of a long value is a path's file name, the part to read.
    text = repr(value)
    return text if len(text) <= 100 else text[:30] + "..." + text[-67:]


def key_error(key: str, expected: str, got: Any, source: str = "the audit configuration",
              ) -> ConfigError:
    """The error naming a key: "The 'k' key of SOURCE must be EXPECTED. Got V instead."."""
    return ConfigError(f"The {key!r} key of {source} must be {expected}. "
                       f"Got {_short(got)} instead.")


class KeyProblem(ValueError):
    """Raised inside a section's validator: names the key, as a field error would.

    ``key`` is relative to the section being validated (``""``: the field itself).
    """

    def __init__(self, key: str, expected: str, got: Any) -> None:
        super().__init__(f"{key} must be {expected}")
        self.key, self.expected, self.got = key, expected, got


def not_utf8(data: bytes) -> str | None:
    """Where ``data`` stops being UTF-8 text: ``"byte 0xe9 at offset 88 (line 3)"``.

    ``None`` when it is UTF-8 text, or binary (a NUL byte in its first 8 KiB): not text in
    another encoding.
    """
    if b"\x00" in data[:8192]:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return f"byte {data[exc.start]:#04x} at offset {exc.start} (line {line})"
    return None


#: What a file that is not UTF-8 most likely is, and how to fix it.
RESAVE_UTF8 = "is not UTF-8 (a Latin-1 or Windows-1252 file?). Re-save it as UTF-8"


def one_line(exc: BaseException) -> str:
    """An exception's message on one line of at most 300 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# ------------------------------------------------------------------ a library's crash

# A local variable of a frame that names the file being read: ``path``, ``tokenizer_file``...
_FILE_LOCAL = ("file", "path", "name", "src", "source", "folder", "dir")


def is_crash(exc: BaseException) -> bool:
    """Whether ``exc`` is a library's crash on an input rather than a bug or an interrupt.

    A panic in a Rust extension (``pyo3_runtime.PanicException``, a ``BaseException``),
    any other ``BaseException`` that is not an ``Exception``, and ``RecursionError`` or
    ``MemoryError`` (an input nested too deeply, or too large). ``KeyboardInterrupt``,
    ``SystemExit`` and ``GeneratorExit`` are not crashes: they keep their own behaviour.
    """
    if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
        return False
    return not isinstance(exc, Exception) or isinstance(exc, (RecursionError, MemoryError))


def _as_file(value: Any) -> str | None:
    import os

    if not isinstance(value, (str, os.PathLike)):
        return None
    try:
        text = os.fspath(value)
        return text if isinstance(text, str) and len(text) < 4096 and os.path.isfile(text) \
            else None
    except (OSError, ValueError, TypeError):
        return None


def file_in_traceback(exc: BaseException) -> str | None:
    """The file the innermost frame of ``exc``'s traceback was reading, if a local names one.

    Looks, from the innermost frame out, for a local variable whose name says it is a
    file or a path (``path``, ``tokenizer_file``...) and whose value is an existing file.
    """
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for name, value in list(frame.f_locals.items()):
            if any(hint in name.lower() for hint in _FILE_LOCAL):
                found = _as_file(value)
                if found is not None:
                    return found
    return None


def command_in_traceback(exc: BaseException, default: str = "privaudit") -> str:
    """The command that was running (``privaudit audit llm``): its innermost click context."""
    path = default
    tb = exc.__traceback__
    while tb is not None:  # outermost first: the last context found is the innermost
        for value in list(tb.tb_frame.f_locals.values()):
            # click's Context, or the copy typer vendors (typer._click): by duck type.
            if type(value).__name__ == "Context" and isinstance(
                    getattr(value, "command_path", None), str) and value.command_path:
                path = value.command_path
        tb = tb.tb_next
    return path


def crash_line(exc: BaseException) -> str:
    """One line for a library's crash (see :func:`is_crash`): the command, the file, why."""
    if isinstance(exc, RecursionError):
        what = "an input is nested too deeply to be read"
    elif isinstance(exc, MemoryError):
        what = "it ran out of memory"
    else:
        what = "a library crashed on its input"
    where = file_in_traceback(exc)
    text = (f"{command_in_traceback(exc)} stopped: {what} ({type(exc).__name__}: "
            f"{one_line(exc)})")
    if where is not None:
        text += f" while reading {where!r}"
    return (text + ". The file may be malformed or crafted (privaudit --debug ... shows the "
            "traceback).")
