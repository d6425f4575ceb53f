"""Tamper evidence of saved results: a SHA-256 of every file, and of the JSON document itself.

Every result kind's JSON file (``result.json``, ``risk.json``, ``proximity.json``,
``attribute.json``) carries, under ``"integrity"``, the SHA-256 of each other file of the
result (``scores.csv``, ``proximity.npz``...) and a digest of the document's own content:
its canonical JSON (sorted keys, no whitespace, ASCII) with ``integrity.document`` left
out. A result whose file or document no longer matches was edited after it was written (a
label flipped, a row added, ``kind`` or ``audit.role`` changed): it is refused with
:class:`ModifiedResultError`, which names the files, so ``privaudit report`` skips it with a
warning and an audit recomputes it instead of reusing it. Results written before digests
existed load with an :class:`UnsealedResultWarning`, except where a verified result is
required (an audit's reuse step).

The digests detect edits by hand or by a tool that does not know the format; they are not a
signature: someone who can write the folder can also recompute them (docs/security.md).

Every file is read through :mod:`privaudit._files` (inside the result's folder, never
through a link, size-bounded for JSON), and hashed from the very bytes that are parsed.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from privaudit._digest import sha256_hex
from privaudit._files import (
    JSON_MAX_BYTES,
    parse_json,
    read_bytes_inside,
    read_limited_inside,
    sha256_inside,
)
from privaudit.exceptions import OutsideFolderError, PrivauditWarning

__all__ = ["INTEGRITY_KEY", "IntegrityCheck", "ModifiedResultError", "ResultFileError",
           "UnsafeResultFileError",
           "UnsealedResultWarning", "read_json_file", "read_owned", "seal"]

#: The key of the digests in a result's JSON document.
INTEGRITY_KEY = "integrity"
#: The first privaudit version that wrote digests (named by the note on older results).
DIGESTS_SINCE = "0.1.0"


class ResultFileError(ValueError):
    """A saved result (``result.json`` or its scores file) is damaged, tampered or unsafe.

    The message names the file and what is wrong with it. A ``ValueError``, so code that
    catches bad input keeps working.
    """


class ModifiedResultError(ResultFileError):
    """A saved result's file no longer matches the digest written with it.

    ``files`` names the files that changed (the JSON document itself included).
    """

    def __init__(self, message: str, files: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.files = list(files)


class UnsafeResultFileError(ResultFileError, OutsideFolderError):
    """A result's file leads out of its folder (a link, ``..``): both error kinds at once."""


class UnsealedResultWarning(PrivauditWarning):
    """A saved result without digests (written by an older privaudit) was loaded unchecked."""


def _canonical_digest(doc: Mapping[str, Any]) -> str:
    """SHA-256 of ``doc``'s canonical JSON, ``integrity.document`` left out."""
    body = dict(doc)
    integrity = body.get(INTEGRITY_KEY)
    if isinstance(integrity, Mapping):
        body[INTEGRITY_KEY] = {k: v for k, v in integrity.items() if k != "document"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return sha256_hex(text.encode("ascii"))


def seal(doc: Mapping[str, Any], folder: Path, names: Sequence[str]) -> dict[str, Any]:
    """``doc`` (already JSON-ready) plus the digests of ``folder / names`` and of itself."""
    files = {name: sha256_inside(folder, name, what="the result file") for name in names}
    out = {k: v for k, v in doc.items() if k != INTEGRITY_KEY}
    out[INTEGRITY_KEY] = {"algorithm": "sha256", "files": files}
    out[INTEGRITY_KEY]["document"] = _canonical_digest(out)
    return out


def read_owned(json_path: Path, name: str, *, max_bytes: int | None = None,
               what: str = "the result file") -> bytes:
    """The bytes of the result file ``name`` beside ``json_path``, read safely.

    Raises
    ------
    UnsafeResultFileError
        If it is a link or leads out of the result's folder.
    ResultFileError
        If it is missing, not a regular file or larger than ``max_bytes``.
    """
    folder = json_path.parent
    try:
        if max_bytes is None:
            return read_bytes_inside(folder, name, what=what)
        return read_limited_inside(folder, name, max_bytes=max_bytes, what=what)
    except OutsideFolderError as exc:
        raise UnsafeResultFileError(str(exc)) from None
    except FileNotFoundError:
        raise ResultFileError(f"{json_path} is damaged: its file {folder / name} is "
                              "missing.") from None
    except (OSError, ValueError) as exc:
        raise ResultFileError(f"{folder / name} cannot be read: {exc}") from None


def read_json_file(json_path: Path) -> tuple[Any, bytes]:
    """A result's JSON document (parsed with limits) and its bytes; ResultFileError if bad."""
    data = read_owned(json_path, json_path.name, max_bytes=JSON_MAX_BYTES)
    try:
        return parse_json(data, what="it"), data
    except ValueError as exc:
        raise ResultFileError(f"{json_path} is damaged: {exc}.") from None


class IntegrityCheck:
    """The digests of one saved result, compared with the files as they are read.

    Parameters
    ----------
    json_path : pathlib.Path
        The result's JSON document.
    doc : dict
        That document as parsed (before any decoding of its values).
    require : bool
        Refuse a result without digests (an audit reuses only verified results);
        otherwise it is loaded with an :class:`UnsealedResultWarning`.
    """

    def __init__(self, json_path: Path, doc: Mapping[str, Any], *, require: bool = False
                 ) -> None:
        self.json_path = json_path
        self.modified: list[str] = []
        integrity = doc.get(INTEGRITY_KEY)
        self.files: dict[str, str] | None = None
        if integrity is None:
            self._unsealed(require)
            return
        self.files = _checked_integrity(integrity, json_path)
        if integrity["document"] != _canonical_digest(doc):
            self.modified.append(json_path.name)

    def _unsealed(self, require: bool) -> None:
        note = (f"{self.json_path}: no digest (written before privaudit {DIGESTS_SINCE}), so "
                "edits to its files cannot be detected")
        if require:
            raise ResultFileError(f"{note}; only a result whose digests match is reused.")
        warnings.warn(f"{note}.", UnsealedResultWarning, stacklevel=4)

    def file(self, name: str, data: bytes) -> bytes:
        """Compare ``data`` (the bytes of ``name`` as read) with its digest; return it."""
        if self.files is None:
            return data
        expected = self.files.get(name)
        if expected is None:
            raise ResultFileError(f"{self.json_path} is damaged: the key "
                                  f"'{INTEGRITY_KEY}.files' has no digest of {name!r}.")
        if sha256_hex(data) != expected:
            self.modified.append(name)
        return data

    def finish(self) -> None:
        """Raise :class:`ModifiedResultError` if any file differed from its digest."""
        if self.modified:
            names = ", ".join(dict.fromkeys(self.modified))
            raise ModifiedResultError(
                f"{self.json_path.parent} was modified after it was written: {names} (its "
                f"SHA-256 differs from the digest in {self.json_path.name}). It is not used: "
                "rerun the audit to write it again, or delete it.", self.modified)


def _checked_integrity(integrity: Any, json_path: Path) -> dict[str, str]:
    """The ``files`` digests of a well-formed ``integrity`` entry, else ResultFileError."""
    def hex64(value: Any) -> bool:
        return (isinstance(value, str) and len(value) == 64
                and all(c in "0123456789abcdef" for c in value))

    files = integrity.get("files") if isinstance(integrity, dict) else None
    if (not isinstance(integrity, dict) or integrity.get("algorithm") != "sha256"
            or not hex64(integrity.get("document")) or not isinstance(files, dict)
            or not all(isinstance(k, str) and hex64(v) for k, v in files.items())):
        raise ResultFileError(
            f"{json_path} is damaged: the key '{INTEGRITY_KEY}' must be "
            "{'algorithm': 'sha256', 'files': {name: hex digest}, 'document': hex digest}.")
    return dict(files)
