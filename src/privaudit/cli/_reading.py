"""Reading a configuration file: YAML without duplicate keys, then a typed schema.

:func:`read_config` serves every audit kind: given the kind's schema (a subclass of
:class:`privaudit.cli._sections.AuditFile`), it returns the validated sections or raises
one :class:`ConfigError` line naming the key and the file.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from privaudit._yaml import load_yaml_text
from privaudit.cli._errors import RESAVE_UTF8, ConfigError, KeyProblem, key_error, not_utf8
from privaudit.cli._sections import Section, as_written, move_renamed_keys

__all__ = ["read_config", "read_yaml", "schema_error"]

_Schema = TypeVar("_Schema", bound=BaseModel)


def _yaml_text(path: Path, source: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        where = not_utf8(path.read_bytes())
        raise ConfigError(f"The audit configuration {source} is not a text (UTF-8) YAML "
                          "file" + (f": {where} {RESAVE_UTF8}." if where else ".")) from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the audit configuration {source}: "
                          f"{exc.strerror or exc}.") from None


def read_yaml(path: Path, source: str) -> Any:
    """The YAML document in ``path``: syntax errors and duplicate keys name the line."""
    return load_yaml_text(_yaml_text(path, source), describe=source, error=ConfigError,
                          what="The audit configuration")


_EXPECTED = {
    "model_type": "a mapping (indented 'key: value' lines)",
    "model_attributes_type": "a mapping (indented 'key: value' lines)",
    "dict_type": "a mapping (indented 'key: value' lines)",
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
    "too_short": "a non-empty list",
    "string_too_short": "a non-empty string",
}


def _section_keys(schema: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys ``schema`` allows in the section at ``loc``."""
    model: Any = schema
    for part in loc:
        annotation = model.model_fields[part].annotation
        candidates = [annotation, *typing.get_args(annotation)]
        model = next(c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel))
    return sorted(model.model_fields)


def _dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _error_text(err: Any, schema: type[BaseModel], source: str,
                written: Mapping[str, str]) -> str:
    loc, kind = tuple(err["loc"]), err["type"]
    key = as_written(_dotted(loc), written)
    if kind == "extra_forbidden":
        return (f"The {key!r} key of {source} is not known; expected one of "
                f"{_section_keys(schema, loc[:-1])}.")
    if kind == "missing":
        return f"The {key!r} key of {source} is missing; it is required."
    if kind == "value_error" and isinstance(err.get("ctx", {}).get("error"), KeyProblem):
        problem = err["ctx"]["error"]
        where = (*loc, problem.key) if problem.key else loc
        return str(key_error(as_written(_dotted(where), written), problem.expected,
                             problem.got, source))
    expected = _EXPECTED.get(kind) or err["msg"].removeprefix("Input should be ")
    return str(key_error(key, expected, err.get("input"), source))


def schema_error(exc: ValidationError, schema: type[BaseModel], source: str,
                 written: Mapping[str, str] | None = None) -> ConfigError:
    """One line for the first problem pydantic found (and how many others).

    An unknown key comes first: a misspelled required key is also reported missing, and
    the unknown key's message names the key it could have meant. ``written`` (new key ->
    the old key the file wrote, :func:`~privaudit.cli._sections.move_renamed_keys`) names
    a moved key as the file wrote it.
    """
    errors = exc.errors(include_url=False)
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    text = _error_text(first, schema, source, written or {})
    more = len(errors) - 1
    return ConfigError(text + (f" ({more} more problem{'s' * (more > 1)} after this one.)"
                               if more else ""))


def read_config(path: str | Path, schema: type[_Schema]) -> _Schema:
    """Read the YAML file at ``path`` and validate it with ``schema``.

    Relative paths in the file are checked against the file's folder. Old keys the
    schema declares (``renamed_keys``) are read as their new keys, with a
    :class:`FutureWarning` each (:func:`~privaudit.cli._sections.move_renamed_keys`); the
    returned schema's ``written_key`` names them as written. Raises :class:`ConfigError`
    (one line naming the key and the file) on any problem.
    """
    path = Path(path)
    source = str(path)
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise ConfigError(f"The audit configuration {source} {what}.")
    raw = read_yaml(path, source)
    if not isinstance(raw, dict):
        raise ConfigError(f"The audit configuration {source} must be a YAML mapping of "
                          f"sections (target, data, ...). Got {type(raw).__name__} instead.")
    renamed: Mapping[str, str] = getattr(schema, "renamed_keys", {})
    raw, written = move_renamed_keys(raw, renamed, source)
    try:
        config = schema.model_validate(raw, context={"base": path.parent})
    except ValidationError as exc:
        raise schema_error(exc, schema, source, written) from None
    if isinstance(config, Section):
        config.remember_written(written)
    return config
