"""File writing shared by results and reports: atomic writes, strict JSON, safe CSV, names.

Everything privaudit writes to disk goes through :func:`atomic_write` (defined once in
``privaudit._files`` and re-exported here): the content is written to a temporary file in
the destination folder, flushed to disk, then moved over the destination with
:func:`os.replace`, so a run killed mid-write leaves the old file or the new one.

Every CSV file goes through :func:`write_csv`, whose text cells never start a spreadsheet
formula (:func:`csv_safe_cell`), and every file or folder name derived from a user's name
(a target, an attack, a dataset) through :func:`file_name_part`, unique per name.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._digest import sha256_hex
from privaudit._files import atomic_write, atomic_write_text
from privaudit.exceptions import PrivauditWarning
from privaudit.results._integrity import (
    IntegrityCheck,
    ResultFileError,
    read_json_file,
    read_owned,
)
from privaudit.results._integrity import seal as seal_doc

__all__ = [
    "DamagedResultWarning",
    "ResultFileError",
    "atomic_write",
    "atomic_write_text",
    "csv_safe_cell",
    "csv_safe_frame",
    "dump_json",
    "file_name_part",
    "mark_non_finite",
    "read_arrays",
    "read_sealed_result",
    "restore_csv_cell",
    "restore_non_finite",
    "result_folder_name",
    "safe_file_name",
    "save_arrays",
    "to_jsonable",
    "write_csv",
]


class DamagedResultWarning(PrivauditWarning):
    """A damaged saved result was skipped (:func:`load_results`) or recomputed (audits)."""


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


#: Suffix of the key that says why a number next to it is ``null`` (:func:`mark_non_finite`).
STATUS_SUFFIX = "_status"
#: The status of a non-finite float written as ``null`` by :func:`mark_non_finite`.
NON_FINITE_STATUS: dict[str, float] = {
    "infinite": math.inf,
    "-infinite": -math.inf,
    "undefined": math.nan,
}


def _status_of(value: float) -> str:
    if math.isnan(value):
        return "undefined"
    return "infinite" if value > 0 else "-infinite"


def mark_non_finite(obj: Any, *, where: str = "value") -> Any:
    """:func:`to_jsonable`, keeping infinity apart from undefined (NaN) in mappings.

    Strict JSON has neither NaN nor infinity, and :func:`to_jsonable` writes both as
    ``null``. Here a non-finite float under a key ``k`` of a mapping is written as
    ``"k": null`` plus a sibling ``"k_status"`` saying which it was: ``"infinite"``,
    ``"-infinite"`` or ``"undefined"`` (NaN, e.g. an interval not computed, a metric of
    one class only). Finite numbers get no status key, so e.g. an estimate is either
    ``{"value": 0.71, "low": 0.66, "high": 0.75}`` or
    ``{"value": null, "value_status": "infinite", "low": 1.2, "high": null,
    "high_status": "infinite"}``. Non-finite numbers inside lists stay a bare ``null``.
    :func:`restore_non_finite` undoes the encoding.
    """
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out[key] = mark_non_finite(value, where=f"{where}[{key!r}]")
            if (isinstance(value, (float, np.floating)) and not math.isfinite(value)
                    and isinstance(key, str)):
                out[key + STATUS_SUFFIX] = _status_of(float(value))
        return to_jsonable(out, where=where)
    if isinstance(obj, (list, tuple)):
        return [mark_non_finite(v, where=f"{where}[{i}]") for i, v in enumerate(obj)]
    return to_jsonable(obj, where=where)


def restore_non_finite(obj: Any) -> Any:
    """Undo :func:`mark_non_finite`: ``null`` with a status becomes inf, -inf or NaN.

    A ``"k": null`` whose sibling ``"k_status"`` is one of ``"infinite"``,
    ``"-infinite"``, ``"undefined"`` becomes the float, and the status key is dropped;
    everything else is returned as read (so files written without statuses load as before).
    """
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if (isinstance(key, str) and key.endswith(STATUS_SUFFIX)
                    and isinstance(value, str) and value in NON_FINITE_STATUS):
                base = key[: -len(STATUS_SUFFIX)]
                if base in obj and obj[base] is None:
                    continue
            status = obj.get(key + STATUS_SUFFIX) if isinstance(key, str) else None
            if value is None and isinstance(status, str) and status in NON_FINITE_STATUS:
                out[key] = NON_FINITE_STATUS[status]
            else:
                out[key] = restore_non_finite(value)
        return out
    if isinstance(obj, list):
        return [restore_non_finite(v) for v in obj]
    return obj


def dump_json(
    obj: Any, path: str | os.PathLike[str], *, where: str = "value",
    keep_non_finite: bool = False, seal: Sequence[str] | None = None,
) -> Path:
    """Write ``obj`` as strict, indented JSON to ``path`` atomically.

    With ``keep_non_finite=True`` non-finite numbers in mappings are written as
    :func:`mark_non_finite` says (``null`` plus a ``_status`` key); otherwise as ``null``.
    With ``seal`` (names of files beside ``path``), the document gets their SHA-256 and
    its own under ``"integrity"`` (:mod:`privaudit.results._integrity`), and is written
    only inside its folder.
    """
    encode = mark_non_finite if keep_non_finite else to_jsonable
    doc = encode(obj, where=where)
    root = None
    if seal is not None:

        root = Path(path).parent
        doc = seal_doc(doc, root, seal)
    text = json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False)
    return atomic_write_text(path, text + "\n", root=root)


# --- CSV cells that never start a formula (OWASP "CSV injection") ------------------------

#: Characters with which a spreadsheet starts a formula (OWASP: ``= + - @``, tab and
#: carriage return), and their full-width forms, which some spreadsheets also accept.
_FORMULA_START = frozenset("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
_ESCAPE = "'"


def csv_safe_cell(text: str) -> str:
    """``text`` made safe for a CSV cell: it never starts a spreadsheet formula.

    A text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (OWASP's
    CSV-injection rule), or their full-width forms, gets a leading ``'``, which makes a
    spreadsheet show it as text. So that the rule can be undone exactly
    (:func:`restore_csv_cell`), a text already starting with ``'`` gets one more. Only
    text is changed: numbers are written as numbers (``-0.5`` stays ``-0.5``).

    References
    ----------
    .. [1] OWASP. "CSV Injection." https://owasp.org/www-community/attacks/CSV_Injection
    """
    if text and (text[0] in _FORMULA_START or text[0] == _ESCAPE):
        return _ESCAPE + text
    return text


def restore_csv_cell(text: str) -> str:
    """Undo :func:`csv_safe_cell`: ``restore_csv_cell(csv_safe_cell(t)) == t``."""
    return text[1:] if text.startswith(_ESCAPE) else text


def csv_safe_frame(frame: Any) -> Any:
    """A copy of a DataFrame whose text cells and column names pass :func:`csv_safe_cell`.

    Numeric, boolean and missing cells are kept as they are, so numbers are written as
    numbers; only ``str`` values (in object, string or categorical columns) change.
    """
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype.kind not in "biufcmM":
            out[column] = series.astype(object).map(
                lambda v: csv_safe_cell(v) if isinstance(v, str) else v)
    out.columns = [csv_safe_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


def write_csv(frame: Any, path: str | os.PathLike[str], *,
              root: str | os.PathLike[str] | None = None, **to_csv: Any) -> Path:
    """Write a DataFrame as CSV atomically, its text cells neutralised (:func:`csv_safe_frame`).

    Every CSV file privaudit writes goes through this function. ``to_csv`` is passed to
    :meth:`pandas.DataFrame.to_csv` (default: no index, Unix line ends, UTF-8); ``root``
    as in :func:`atomic_write`.
    """
    options = {"index": False, "lineterminator": "\n", "encoding": "utf-8", **to_csv}
    safe = csv_safe_frame(frame)
    return atomic_write(path, lambda tmp: safe.to_csv(tmp, **options), root=root)


# --- File and folder names derived from user names ----------------------------------------


def safe_file_name(text: str, default: str = "unnamed", *, max_length: int = 80) -> str:
    """A file-name-safe version of ``text`` (letters, digits, ``.``, ``_``, ``-``).

    Not unique: ``"model v1"`` and ``"model_v1"`` give the same text. Use
    :func:`file_name_part` for names that must not collide.
    """
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return cleaned[:max_length] or default


def file_name_part(text: str, default: str = "unnamed", *, max_length: int = 60) -> str:
    """A file-name-safe part unique to ``text``: its safe form, ``-`` and a short hash.

    ``"model v1"`` and ``"model_v1"`` (or two names sharing their first characters) give
    different parts, also on case-insensitive file systems, since the 10 hexadecimal
    digits of the SHA-256 of the exact name are appended; the name itself stays readable.
    """
    digest = sha256_hex(text.encode("utf-8", "surrogatepass"))[:10]
    return f"{safe_file_name(text, default, max_length=max_length)}-{digest}"


def result_folder_name(target: str, attack: str) -> str:
    """Name of the folder of a saved result: ``<target>-<hash>__<attack>-<hash>``.

    The one function that names result folders (:func:`privaudit.audit_model`'s
    ``results_dir`` and :func:`privaudit.report.build_report`'s ``results/``). Two
    targets, or two attacks, whose names differ give different folders (see
    :func:`file_name_part`); the real names are kept in each ``result.json``.
    """
    return f"{file_name_part(target, 'target')}__{file_name_part(attack, 'attack')}"


def read_strict_json(json_path: Path, expected_format: str, what: str, *,
                     require_digest: bool = False) -> tuple[dict[str, Any], Any]:
    """Read a strict-JSON result file of format ``expected_format``, and its digests.

    The file is read inside its folder, never through a link, size- and depth-bounded
    (:func:`privaudit._files.read_json_inside`); non-finite numbers are restored (see
    :func:`restore_non_finite`).

    Returns
    -------
    doc : dict
        The document.
    check : IntegrityCheck
        Its digests (:mod:`privaudit.results._integrity`): compare the other files with
        it as they are read, then call ``finish``.

    Raises
    ------
    ResultFileError
        When the file cannot be read, is not strict JSON (``NaN`` and ``Infinity`` tokens
        refused), is too large or too deep, or is not a ``what`` (another format).
    """
    doc, _ = read_json_file(Path(json_path))
    if not isinstance(doc, dict) or doc.get("format") != expected_format:
        raise ResultFileError(f"{json_path} is not a privaudit {what} (format "
                              f"{expected_format!r} expected).")
    check = IntegrityCheck(Path(json_path), doc, require=require_digest)
    return restore_non_finite(doc), check


def read_sealed_result(path: str | os.PathLike[str], file_name: str, expected_format: str,
                       what: str, owner: str, *, require_digest: bool = False
                       ) -> tuple[dict[str, Any], Path]:
    """The document of a one-file result (a folder, or its file), its digests checked.

    Shared by the result types saved as one sealed JSON file (``dp_audit.json``,
    ``memorisation.json``): ``path`` is the folder :meth:`save` wrote or the file itself.

    Raises
    ------
    FileNotFoundError
        If there is no ``file_name`` at ``path``.
    ResultFileError
        As :func:`read_strict_json`, and when a digest does not match.
    """
    path = Path(path)
    json_path = path if path.is_file() or path.is_symlink() else path / file_name
    if not os.path.lexists(json_path):
        raise FileNotFoundError(f"No {file_name} in {path}: is it a folder written by "
                                f"{owner}.save?")
    doc, check = read_strict_json(json_path, expected_format, what,
                                  require_digest=require_digest)
    check.finish()
    return doc, json_path


# --------------------------------------------------------------------------- arrays

def _array_digest(values: np.ndarray) -> str:
    return sha256_hex(np.ascontiguousarray(values).tobytes())


def _portable(values: np.ndarray) -> np.ndarray:
    """Little-endian float64, or int64 for integer arrays: one byte layout everywhere."""
    dtype = "<i8" if np.asarray(values).dtype.kind in "iub" else "<f8"
    return np.ascontiguousarray(values, dtype=dtype)


def save_arrays(directory: Path, file_name: str, arrays: Mapping[str, np.ndarray]
                ) -> dict[str, Any]:
    """Write ``arrays`` to ``directory / file_name`` (npz, atomically).

    Returns the entry to put under ``"arrays"`` in the result's JSON: the file's name and
    the SHA-256 of each array, which :func:`read_arrays` checks.
    """
    portable = {k: _portable(v) for k, v in arrays.items()}

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **portable)

    atomic_write(directory / file_name, write, root=directory)
    return {"file": file_name, "sha256": {k: _array_digest(v) for k, v in portable.items()}}


def read_arrays(json_path: Path, doc: Mapping[str, Any], file_name: str,
                check: Any = None) -> dict[str, np.ndarray]:
    """The arrays ``doc["arrays"]`` names, read beside ``json_path`` and checked.

    Read with ``allow_pickle=False`` from the bytes of ``file_name`` in the result's own
    folder (never through a link), whatever the JSON says; ``check`` (an
    ``IntegrityCheck``) compares those bytes with the file's digest.

    Raises
    ------
    ResultFileError
        If the entry is malformed, the file damaged, missing or a link, or an array's
        digest is not the one saved (the file was changed after it was written).
    """
    import io


    spec = doc.get("arrays")
    if not isinstance(spec, dict) or spec.get("file") != file_name or not isinstance(
            spec.get("sha256"), dict):
        raise ResultFileError(f"{json_path} is damaged: the key 'arrays' must name "
                              f"{file_name} and the digests of its arrays.")
    npz = json_path.parent / file_name
    data = read_owned(json_path, file_name)
    if check is not None:
        check.file(file_name, data)
        check.finish()  # an edited file is "modified", before its arrays are parsed
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as loaded:
            arrays = {name: loaded[name] for name in spec["sha256"]}
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise ResultFileError(f"{npz} is damaged or missing ({exc}).") from None
    for name, expected in spec["sha256"].items():
        if _array_digest(arrays[name]) != expected:
            raise ResultFileError(f"{npz} was changed after it was saved: the array "
                                  f"{name!r} does not match its digest in {json_path.name}.")
    return arrays
