"""The disk format of an :class:`~privaudit.results.AttackResult`: ``result.json`` + scores.

Written atomically (the scores first, ``result.json`` last) and read defensively: a damaged
or tampered result raises :class:`~privaudit.results.ResultFileError` naming the file and
the key, and only files inside a result's own folder are read.

Schema history: 1 kept the audit's facts as loose ``extra`` keys; 2 (current) writes them
under ``audit`` (see :class:`~privaudit.results.AuditInfo`) and ``out_of_fold`` and
``raw_advantage`` as their own keys. Schema-1 files are still read.
"""

from __future__ import annotations

import io
import math
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.exceptions import DegenerateInputWarning
from privaudit.results._audit_info import AuditInfo, split_legacy_extra
from privaudit.results._family import details_from
from privaudit.results._integrity import IntegrityCheck, read_json_file, read_owned
from privaudit.results._io import (
    ResultFileError,
    atomic_write,
    csv_safe_cell,
    dump_json,
    restore_csv_cell,
    write_csv,
)

__all__ = ["RESULT_FILE", "SCHEMA_VERSION", "find_result_files", "read_result", "write_result"]

#: Version of the on-disk layout written by :func:`write_result`.
SCHEMA_VERSION = 2

RESULT_FILE = "result.json"
_SCORES_FILES = {"csv": "scores.csv", "parquet": "scores.parquet"}


def write_result(
    result: Any,
    directory: str | os.PathLike[str],
    *,
    format: Literal["csv", "parquet"] = "csv",
    n_bootstrap: int = 0,
    random_state: int | np.random.Generator | None = 0,
) -> Path:
    """Write ``result`` to ``directory``: see :meth:`AttackResult.save`."""
    func = "AttackResult.save"
    if format not in _SCORES_FILES:
        raise param_error("format", func, "'csv' or 'parquet'", format)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    frame = result.to_frame()
    scores_file = _SCORES_FILES[format]
    if format == "csv":
        # repr-precision floats and "NaN" for missing raw values read back exactly;
        # text cells (string ids, the raw statistic's name) never start a formula.
        write_csv(frame, directory / scores_file, na_rep="NaN", root=directory)
    else:
        _require_pyarrow()
        atomic_write(
            directory / scores_file,
            lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False), root=directory,
        )
    with warnings.catch_warnings():
        # Saving is not analysing: a one-class result is saved as is, and its NaN
        # metrics warn when someone computes them.
        warnings.simplefilter("ignore", DegenerateInputWarning)
        doc = result.to_dict(n_bootstrap=n_bootstrap, random_state=random_state)
    doc = {
        "privaudit_result": SCHEMA_VERSION,
        "privaudit_version": _version(),
        **doc,
        "files": {
            "scores": scores_file,
            "record_id_type": "int" if result.record_ids.dtype.kind == "i" else "str",
            "has_predictions": result.predictions is not None,
            # Text cells of scores.csv are written by csv_safe_cell: undone on load.
            "csv_escaped": format == "csv",
        },
    }
    # The digests of scores and of result.json itself (written last): see _integrity.
    path = dump_json(doc, directory / RESULT_FILE, where="result", seal=[scores_file])
    for other in _SCORES_FILES.values():
        if other != scores_file and os.path.lexists(directory / other):
            # A stale file of the other format would be misleading beside the new one.
            (directory / other).unlink()
    return path


def read_result(path: str | os.PathLike[str], *, require_digest: bool = False
                ) -> tuple[dict[str, Any], Path]:
    """The constructor arguments of the result saved at ``path``, and its scores file.

    See :meth:`AttackResult.load`; the scores file names the culprit when the arrays it
    holds are refused by the constructor. With ``require_digest``, a result without
    digests (written by an older privaudit) is refused instead of loaded with a note.
    """
    path = Path(path)
    json_path = path if path.is_file() or path.is_symlink() else path / RESULT_FILE
    if not os.path.lexists(json_path):
        raise FileNotFoundError(
            f"No {RESULT_FILE} in {path}: is it a folder written by AttackResult.save?"
        )
    doc, check = _read_result_json(json_path, require_digest)
    files = doc["files"]
    scores_path = _scores_path(json_path, files["scores"])
    raw_name = doc.get("raw_statistic_name") or ""
    data = check.file(scores_path.name, read_owned(
        json_path, scores_path.name, what=f"the scores file (key 'files.scores' of {json_path})"))
    frame = _read_scores(scores_path, data, doc, raw_name)
    check.finish()
    return {
        "labels": frame["label"].to_numpy(),
        "scores": frame["score"].to_numpy(),
        "record_ids": frame["record_id"].to_numpy(),
        "attack": doc.get("attack", ""),
        "target": doc.get("target", ""),
        "dataset": doc.get("dataset", ""),
        "generator": doc.get("generator", ""),
        "kind": doc.get("kind", "membership"),
        "predictions": (frame["prediction"].to_numpy()
                        if files.get("has_predictions") else None),
        "raw_statistic": frame[raw_name].to_numpy() if raw_name else None,
        "raw_statistic_name": raw_name,
        "parameters": doc.get("parameters") or {},
        **_audit_fields(doc, json_path),
    }, scores_path


def _audit_fields(doc: dict[str, Any], json_path: Path) -> dict[str, Any]:
    """``audit``, ``out_of_fold``, ``raw_advantage`` and ``extra``, from either schema.

    ``extra`` carries the typed details too (saved under ``"details"``, or in ``extra``
    by older versions): the constructor moves them to their attributes.
    """
    extra = details_from(doc)
    if doc["privaudit_result"] < 2:
        audit, extra = split_legacy_extra(extra)
        out_of_fold = extra.pop("out_of_fold", False)
        raw_advantage = extra.pop("raw_advantage", None)
    else:
        try:
            audit = AuditInfo.from_dict(doc.get("audit") or {})
        except (TypeError, ValueError) as exc:
            raise ResultFileError(f"{json_path} is damaged: {exc}") from None
        out_of_fold = doc.get("out_of_fold", False)
        raw_advantage = doc.get("raw_advantage")
    if not isinstance(out_of_fold, bool):
        raise _damaged(json_path, "out_of_fold", "true or false", repr(out_of_fold))
    return {"audit": audit, "out_of_fold": out_of_fold, "raw_advantage": raw_advantage,
            "extra": extra}


def find_result_files(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> list[Path]:
    """Every ``result.json`` under ``paths``, deduplicated, in a machine-independent order."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist.")
        if path.is_file():
            found.append(path)
        else:
            found.extend(sorted(path.rglob(RESULT_FILE)))
    # Deduplicated on the absolute path, not the resolved one: a result.json that is a link
    # is refused by AttackResult.load, not silently replaced by the file it points to.
    unique = list(dict.fromkeys(Path(os.path.abspath(p)) for p in found))
    if not unique:
        shown = ", ".join(str(p) for p in paths)
        raise FileNotFoundError(
            f"No {RESULT_FILE} found under {shown}: save results with AttackResult.save."
        )
    return unique


# --- Reading saved results defensively --------------------------------------------------

#: Keys of result.json checked on load: (key, accepted types, required).
_DOC_KEYS: tuple[tuple[str, tuple[type, ...], bool], ...] = (
    ("n_records", (int,), True),
    ("files", (dict,), True),
    ("attack", (str,), False),
    ("target", (str,), False),
    ("dataset", (str,), False),
    ("generator", (str,), False),
    ("kind", (str,), False),
    ("raw_statistic_name", (str, type(None)), False),
    ("parameters", (dict, type(None)), False),
    ("extra", (dict, type(None)), False),
    ("audit", (dict, type(None)), False),
    ("out_of_fold", (bool,), False),
    ("raw_advantage", (int, float, type(None)), False),
)
_FILES_KEYS: tuple[tuple[str, tuple[type, ...], bool], ...] = (
    ("scores", (str,), True),
    ("record_id_type", (str,), True),
    ("has_predictions", (bool,), False),
    ("csv_escaped", (bool,), False),
)


def _damaged(json_path: Path, key: str, expected: str, got: Any) -> ResultFileError:
    return ResultFileError(
        f"{json_path} is damaged: the key {key!r} must be {expected}. Got {got} instead."
    )


def _check_keys(doc: dict[str, Any], spec: Any, json_path: Path, prefix: str = "") -> None:
    for key, types, required in spec:
        if key not in doc:
            if required:
                raise _damaged(json_path, prefix + key, "present", "a file without it")
            continue
        value = doc[key]
        # bool is an int in Python, but never a count.
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise _damaged(json_path, prefix + key, f"of type {names}",
                           f"{value!r:.60} ({type(value).__name__})")


def _read_result_json(json_path: Path, require_digest: bool) -> tuple[dict[str, Any], Any]:
    """Parse and check ``result.json``: strict JSON, the keys :meth:`load` uses, their types.

    Read inside the result's folder, never through a link, size- and depth-bounded; returns
    the document and its :class:`~privaudit.results._integrity.IntegrityCheck`.
    """
    doc, _ = read_json_file(json_path)
    if not isinstance(doc, dict) or "privaudit_result" not in doc:
        raise ResultFileError(f"{json_path} is not a privaudit result file.")
    version = doc["privaudit_result"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _damaged(json_path, "privaudit_result", "a positive integer", repr(version))
    if version > SCHEMA_VERSION:
        raise ResultFileError(
            f"{json_path} was written by a newer privaudit (result schema {version}); "
            f"this version reads schema {SCHEMA_VERSION}."
        )
    check = IntegrityCheck(json_path, doc, require=require_digest)
    _check_keys(doc, _DOC_KEYS, json_path)
    _check_keys(doc["files"], _FILES_KEYS, json_path, prefix="files.")
    if doc["n_records"] < 1:
        raise _damaged(json_path, "n_records", "a positive integer", repr(doc["n_records"]))
    if doc.get("kind", "membership") not in ("membership", "attribute"):
        raise _damaged(json_path, "kind", "'membership' or 'attribute'", repr(doc["kind"]))
    if doc["files"]["record_id_type"] not in ("int", "str"):
        raise _damaged(json_path, "files.record_id_type", "'int' or 'str'",
                       repr(doc["files"]["record_id_type"]))
    _check_values(doc, json_path)
    return doc, check


def _check_values(doc: dict[str, Any], json_path: Path) -> None:
    """Refuse values no audit can have written, naming the key."""
    epsilon = (doc.get("parameters") or {}).get("claimed_epsilon")
    if epsilon is not None and (isinstance(epsilon, bool) or not isinstance(
            epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0):
        raise _damaged(json_path, "parameters.claimed_epsilon", "null or a finite number > 0",
                       f"{epsilon!r:.60}")
    advantage = doc.get("raw_advantage")
    if advantage is not None and not -1.0 <= advantage <= 1.0:
        raise _damaged(json_path, "raw_advantage", "null or a number in [-1, 1]",
                       f"{advantage!r:.60}")


def _scores_path(json_path: Path, name: str) -> Path:
    """The scores file named by ``files.scores``, refused unless it lies in the folder."""
    folder = json_path.parent
    allowed = " or ".join(repr(v) for v in _SCORES_FILES.values())
    if name not in _SCORES_FILES.values():
        raise ResultFileError(
            f"{json_path}: the key 'files.scores' must be {allowed}, a file inside the "
            f"result's own folder. Got {name!r:.100} instead: only files inside a result's "
            "folder are read."
        )
    path = folder / name
    if not os.path.lexists(path):
        raise ResultFileError(
            f"{json_path} is damaged: its scores file {path} (key 'files.scores') is missing."
        )
    return path


def _read_scores(scores_path: Path, data: bytes, doc: dict[str, Any], raw_name: str) -> Any:
    """The per-record frame, checked: readable, its columns present, ``n_records`` rows.

    ``data`` is the bytes of ``scores_path`` (read once: hashed and parsed alike).
    """
    files = doc["files"]
    id_is_str = files["record_id_type"] == "str"
    escaped = bool(files.get("csv_escaped"))
    try:
        if scores_path.suffix == ".parquet":
            _require_pyarrow()
            import pandas as pd

            frame = pd.read_parquet(io.BytesIO(data), engine="pyarrow")
        else:
            frame = _read_scores_csv(data, id_is_str, raw_name, escaped)
    except (ValueError, OverflowError, OSError) as exc:
        raise ResultFileError(f"{scores_path} cannot be read: {exc}") from None
    columns = ["record_id", "label", "score"]
    if files.get("has_predictions"):
        columns.append("prediction")
    if raw_name:
        columns.append(raw_name)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ResultFileError(f"{scores_path} is damaged: it has no column {missing[0]!r}.")
    if len(frame) != doc["n_records"]:
        raise ResultFileError(
            f"{scores_path} is damaged: it has {len(frame)} rows, but 'n_records' in "
            f"{RESULT_FILE} is {doc['n_records']} (rows were removed or added)."
        )
    ids = frame["record_id"]
    if id_is_str != (ids.dtype.kind not in "iu"):
        raise ResultFileError(
            f"{scores_path} is damaged: its record ids are not of the type "
            f"'files.record_id_type' says ({files['record_id_type']!r})."
        )
    return frame


def _read_scores_csv(data: bytes, id_is_str: bool, raw_name: str, escaped: bool) -> Any:
    """Read ``scores.csv`` (its bytes) with exact types; on a bad cell, a ValueError naming it."""
    import pandas as pd

    crlf = data.split(b"\n", 1)[0].endswith(b"\r")
    # Files are written with "\n" line ends, so a "\r" inside a quoted id is data; a file
    # saved again with "\r\n" line ends (by an editor) is still read.
    options: dict[str, Any] = {"keep_default_na": False, "encoding": "utf-8"}
    if not crlf:
        options["lineterminator"] = "\n"
    kinds: dict[str, Any] = {"label": np.int64, "prediction": np.int64, "score": np.float64,
                             "record_id": object if id_is_str else np.int64}
    if raw_name:
        kinds[raw_name] = np.float64
    on_disk = csv_safe_cell if escaped else str
    # pandas < 3 parses floats exactly only with float_precision="round_trip";
    # pandas 3 does by default and deprecates the option.
    if int(pd.__version__.split(".")[0]) < 3:
        options["float_precision"] = "round_trip"
    try:
        frame = pd.read_csv(
            io.BytesIO(data), dtype={on_disk(k): v for k, v in kinds.items()},
            na_values={on_disk(raw_name): ["NaN"]} if raw_name else None, **options)
    except pd.errors.EmptyDataError:
        raise ValueError("the file is empty") from None
    except (ValueError, OverflowError):
        options.pop("float_precision", None)
        text = pd.read_csv(io.BytesIO(data), dtype=str, **options)
        for column, kind in kinds.items():
            if kind is not object and on_disk(column) in text.columns:
                _parse_column(text[on_disk(column)].to_numpy(dtype=str), column, kind)
        raise
    if escaped:
        frame.columns = [restore_csv_cell(c) for c in frame.columns]
        if id_is_str and "record_id" in frame.columns:
            frame["record_id"] = frame["record_id"].map(restore_csv_cell)
    return frame


def _parse_column(values: NDArray[np.str_], column: str, dtype: Any) -> NDArray[Any]:
    """``values`` as ``dtype`` (numpy parses floats exactly), or a ValueError naming a cell."""
    try:
        return values.astype(dtype)
    except (ValueError, OverflowError):
        convert = int if dtype is np.int64 else float
        what = "an integer" if dtype is np.int64 else "a number"
        for line, value in enumerate(values.tolist(), start=2):
            try:
                dtype(convert(value))
            except (ValueError, OverflowError):
                raise ValueError(
                    f"the column {column!r} holds {value!r:.40} on line {line}, which is "
                    f"not {what}"
                ) from None
        raise


def _version() -> str:
    from privaudit._version import __version__

    return __version__


def _require_pyarrow() -> None:
    import_optional("pyarrow", extra="report", purpose="Reading or writing parquet")
