"""What each column of a table is, for the synthetic-data checks.

The checks need to know which columns are compared as numbers, which as categories, which
hold free text (read by the text checks, never by distances) and which are identifiers
(left out everywhere: a row id makes every row unique and every distance large). The
metadata is SDV's single-table form, ``{"columns": {name: {"sdtype": ...}}}`` with
``sdtype`` one of ``numerical``, ``categorical``, ``boolean``, ``datetime``, ``text``,
``id`` (SDV's ``ordinal`` is numerical, any other PII sdtype such as ``email`` is
categorical), or is inferred from the original table when not given.

References
----------
.. [1] SDV (the Synthetic Data Vault) single-table metadata,
   https://docs.sdv.dev/sdv/single-table-data/data-preparation/single-table-metadata-api
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from privaudit._validation import param_error

__all__ = ["SDTYPES", "TableMetadata"]

SDTYPES = ("numerical", "categorical", "boolean", "datetime", "text", "id")
_ALIASES = {"ordinal": "numerical"}
_FUNC = "TableMetadata"


@dataclass(frozen=True)
class TableMetadata:
    """Each column's sdtype (see the module).

    Parameters
    ----------
    sdtypes : mapping of str to str
        Column name to sdtype, one of :data:`SDTYPES`.
    """

    sdtypes: Mapping[str, str]

    def __post_init__(self) -> None:
        for column, sdtype in self.sdtypes.items():
            if sdtype not in SDTYPES:
                raise param_error(f"metadata['columns'][{column!r}]['sdtype']", _FUNC,
                                  f"one of {list(SDTYPES)}", sdtype)

    # ------------------------------------------------------------------ views
    def columns(self, *sdtypes: str) -> list[str]:
        """The columns of these sdtypes, in order."""
        return [c for c, t in self.sdtypes.items() if t in sdtypes]

    @property
    def tabular(self) -> list[str]:
        """Columns compared by the tabular checks (all but text and ids)."""
        return self.columns("numerical", "categorical", "boolean", "datetime")

    @property
    def categorical(self) -> list[str]:
        """Columns compared as categories."""
        return self.columns("categorical", "boolean")

    @property
    def text(self) -> list[str]:
        """Free-text columns."""
        return self.columns("text")

    def numeric_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame``'s tabular columns, datetimes as seconds since the epoch."""
        out = frame[self.tabular].copy()
        for column in self.columns("datetime"):
            stamps = pd.to_datetime(out[column], errors="coerce", utc=True)
            out[column] = (stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
        return out

    # ------------------------------------------------------------------ building
    @classmethod
    def from_dict(cls, metadata: Any, *, source: str = "metadata") -> TableMetadata:
        """From SDV's single-table form (``{"columns": {name: {"sdtype": ...}}}``)."""
        if not isinstance(metadata, Mapping) or not isinstance(metadata.get("columns"),
                                                               Mapping):
            raise param_error(source, _FUNC, "a dict with a 'columns' mapping "
                              "({name: {'sdtype': ...}})", metadata, error=TypeError)
        sdtypes = {}
        for column, spec in metadata["columns"].items():
            if not isinstance(spec, Mapping) or not isinstance(spec.get("sdtype"), str):
                raise param_error(f"{source}['columns'][{column!r}]", _FUNC,
                                  "a dict with an 'sdtype' string", spec)
            sdtype = _ALIASES.get(spec["sdtype"], spec["sdtype"])
            sdtypes[str(column)] = sdtype if sdtype in SDTYPES else "categorical"
        key = metadata.get("primary_key")
        if isinstance(key, str) and key in sdtypes:
            sdtypes[key] = "id"
        return cls(sdtypes)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TableMetadata:
        """From a JSON file in SDV's single-table form."""
        path = Path(path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise param_error("metadata", _FUNC, "a readable JSON file", f"<{path}: {exc}>",
                              error=ValueError) from None
        return cls.from_dict(doc, source=str(path))

    @classmethod
    def infer(cls, frame: pd.DataFrame) -> TableMetadata:
        """Guess each column's sdtype from ``frame`` (the original data).

        Booleans and two-valued columns are boolean/categorical; numbers are numerical;
        datetimes datetime; strings are text when most values are distinct and long
        (a mean of more than 30 characters or 5 words), ids when every value is distinct
        and the column's name ends in "id", else categorical.
        """
        return cls({str(c): _infer(frame[c], str(c)) for c in frame.columns})

    def check_frame(self, frame: pd.DataFrame, param: str) -> None:
        """Refuse a table without every column this metadata names."""
        missing = [c for c in self.sdtypes if c not in frame.columns]
        if missing:
            raise param_error(param, "PrivacyEvaluator", "a table with the metadata's "
                              f"columns (missing: {missing[:5]})", f"<columns "
                              f"{list(frame.columns)[:8]}>")


def _infer(series: pd.Series, name: str) -> str:
    values = series.dropna()
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    all_distinct = len(values) > 1 and values.nunique() == len(values)
    if all_distinct and name.lower().removesuffix("_").endswith("id"):
        return "id"
    if pd.api.types.is_numeric_dtype(series):
        return "numerical"
    text = values.astype(str)
    if len(text) and text.nunique() > 0.5 * len(text) and (
            text.str.len().mean() > 30 or text.str.split().str.len().mean() > 5):
        return "text"
    return "categorical"
