"""What each column of a table is, for the synthetic-data checks.

The checks need to know which columns are compared as numbers, which as categories, which
hold free text (read by the text checks, never by distances) and which are identifiers
(left out everywhere: a row id makes every row unique and every distance large). The
metadata is SDV's single-table form, ``{"columns": {name: {"sdtype": ...}}}`` with
``sdtype`` one of ``numerical``, ``categorical``, ``boolean``, ``datetime``, ``text``,
``id`` (SDV's ``ordinal`` is numerical, its PII sdtypes such as ``email`` are
categorical, any other sdtype is refused), or is inferred from the original table when
not given.

References
----------
.. [1] SDV (the Synthetic Data Vault) single-table metadata,
   https://docs.sdv.dev/sdv/single-table-data/data-preparation/single-table-metadata-api
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from privaudit._validation import param_error

__all__ = ["SDTYPES", "TableMetadata", "first_non_numeric"]

SDTYPES = ("numerical", "categorical", "boolean", "datetime", "text", "id")
_ALIASES = {"ordinal": "numerical"}
#: SDV's personal-data sdtypes, compared as categories.
PII_SDTYPES = ("email", "phone_number", "address", "street_address", "city", "state",
               "state_abbr", "country", "country_code", "postcode", "zipcode", "name",
               "first_name", "last_name", "ssn", "credit_card_number", "iban", "swift11",
               "swift8", "license_plate", "ipv4_address", "ipv6_address", "mac_address",
               "url", "company", "job", "unknown")
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
    #: Where the sdtypes come from, as errors name it.
    source: str = field(default="the metadata", compare=False)

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
    def from_dict(cls, metadata: Any, *, source: str = "the metadata") -> TableMetadata:
        """From SDV's single-table form (``{"columns": {name: {"sdtype": ...}}}``).

        ``source`` names the metadata in errors (e.g. "the metadata file 'm.json'").
        """
        form = '{"columns": {name: {"sdtype": ...}}}'
        if not isinstance(metadata, Mapping) or not isinstance(metadata.get("columns"),
                                                               Mapping):
            raise TypeError(f"{source.capitalize()} must be a JSON object {form}; got "
                            f"{_kind(metadata)}.")
        sdtypes = {}
        for column, spec in metadata["columns"].items():
            if not isinstance(spec, Mapping) or not isinstance(spec.get("sdtype"), str):
                raise ValueError(f"{source.capitalize()} gives column {column!r} no "
                                 f"'sdtype' string (each column is {{\"sdtype\": ...}}).")
            sdtypes[str(column)] = _sdtype(spec["sdtype"], str(column), source)
        key = metadata.get("primary_key")
        if isinstance(key, str) and key in sdtypes:
            sdtypes[key] = "id"
        return cls(sdtypes, source)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TableMetadata:
        """From a JSON file in SDV's single-table form."""
        path = Path(path)
        source = f"the metadata file {str(path)!r}"
        if path.is_dir():
            raise ValueError(f"{source.capitalize()} is a folder; give a JSON file.")
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{source.capitalize()} is not readable JSON ({exc}).") from None
        return cls.from_dict(doc, source=source)

    @classmethod
    def infer(cls, frame: pd.DataFrame) -> TableMetadata:
        """Guess each column's sdtype from ``frame`` (the original data).

        Booleans and two-valued columns are boolean/categorical; numbers are numerical;
        datetimes datetime; strings are text when most values are distinct and long
        (a mean of more than 30 characters or 5 words), ids when every value is distinct
        and the column's name ends in "id", else categorical.
        """
        return cls({str(c): _infer(frame[c], str(c)) for c in frame.columns},
                   "the column types inferred from the original table")

    def check_frame(self, frame: pd.DataFrame, table: str) -> None:
        """Refuse a table without every column this metadata names, blaming the metadata.

        ``table`` names the table in the error (e.g. "'synthetic' table").
        """
        missing = [c for c in self.sdtypes if c not in frame.columns]
        if missing:
            raise ValueError(f"{self.source.capitalize()} name(s) column(s) the {table} "
                             f"does not have (missing: {missing[:5]}; it has "
                             f"{list(map(str, frame.columns))[:8]}): fix the column names.")

    def check_values(self, frame: pd.DataFrame, table: str) -> None:
        """Refuse, before any work, cells holding lists, and text in a numerical column.

        ``table`` names the table in the error (e.g. "'synthetic' table").
        """
        for column in frame.columns:
            if frame[column].dtype != object:  # only object columns hold lists
                continue
            nested = frame[column].map(_is_nested).to_numpy(dtype=bool)
            if nested.any():
                raise ValueError(f"Column {str(column)!r} of the {table} holds lists (first "
                                 f"at row {int(nested.argmax())} from 0); privaudit reads "
                                 "flat columns: one value per cell.")
        for column in self.columns("numerical"):
            bad = first_non_numeric(frame[column])
            if bad is not None:
                raise ValueError(f"Column {column!r} of the {table} holds text ({bad[1]!r} at "
                                 f"row {bad[0]} from 0) but is numerical according to "
                                 f"{self.source}: fix the table, or declare the column "
                                 "categorical in the metadata.")


def first_non_numeric(series: pd.Series) -> tuple[int, Any] | None:
    """The position and value of ``series``' first non-missing non-number (None if none)."""
    values = pd.to_numeric(series, errors="coerce")
    bad = series.notna().to_numpy() & values.isna().to_numpy()
    if not bad.any():
        return None
    i = int(bad.argmax())
    return i, series.iloc[i]


def _is_nested(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (list, tuple, dict, set, np.ndarray))


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object without a 'columns' object"
    return f"a JSON {type(value).__name__} ({str(value)[:40]})"


def _sdtype(sdtype: str, column: str, source: str) -> str:
    sdtype = _ALIASES.get(sdtype, sdtype)
    if sdtype in SDTYPES:
        return sdtype
    if sdtype in PII_SDTYPES:
        return "categorical"
    raise ValueError(f"{source.capitalize()} gives column {column!r} the sdtype {sdtype!r}; "
                     f"expected one of {list(SDTYPES)}, 'ordinal', or an SDV personal-data "
                     f"sdtype ({', '.join(PII_SDTYPES[:6])}, ...).")


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
