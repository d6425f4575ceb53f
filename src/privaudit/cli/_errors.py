"""The one error of the configuration files, and how its messages name a key."""

from __future__ import annotations

from typing import Any

__all__ = ["ConfigError", "KeyProblem", "key_error", "one_line"]


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


def one_line(exc: BaseException) -> str:
    """An exception's message on one line of at most 300 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
