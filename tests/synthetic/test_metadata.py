"""TableMetadata: SDV's single-table form, inference, and clear errors."""

import json

import numpy as np
import pandas as pd
import pytest

from privaudit.synthetic._metadata import TableMetadata


def test_reads_sdv_metadata_with_aliases_and_primary_key(tmp_path):
    doc = {"primary_key": "user", "columns": {
        "user": {"sdtype": "categorical"}, "age": {"sdtype": "numerical"},
        "grade": {"sdtype": "ordinal"}, "mail": {"sdtype": "email"},
        "joined": {"sdtype": "datetime"}, "review": {"sdtype": "text"}}}
    (tmp_path / "m.json").write_text(json.dumps(doc))
    meta = TableMetadata.read(tmp_path / "m.json")
    assert dict(meta.sdtypes) == {"user": "id", "age": "numerical", "grade": "numerical",
                                  "mail": "categorical", "joined": "datetime",
                                  "review": "text"}
    assert meta.tabular == ["age", "grade", "mail", "joined"]
    assert meta.categorical == ["mail"] and meta.text == ["review"]


def test_infers_kinds_from_the_original_table():
    n = 40
    frame = pd.DataFrame({
        "record_id": np.arange(n), "age": np.arange(n) % 7, "flag": [True, False] * 20,
        "city": ["Rome", "Oslo"] * 20,
        "note": [f"a long free text number {i} written by someone about something" for i in
                 range(n)],
        "when": pd.date_range("2020-01-01", periods=n)})
    assert dict(TableMetadata.infer(frame).sdtypes) == {
        "record_id": "id", "age": "numerical", "flag": "boolean", "city": "categorical",
        "note": "text", "when": "datetime"}


def test_datetimes_compare_as_seconds():
    meta = TableMetadata({"when": "datetime"})
    out = meta.numeric_frame(pd.DataFrame({"when": ["1970-01-01", "1970-01-02", None]}))
    assert out["when"].tolist()[:2] == [0.0, 86400.0] and np.isnan(out["when"].iloc[2])


@pytest.mark.parametrize("bad", [[1, 2], {"columns": [1]}, {"columns": {"a": "numerical"}},
                                 {"columns": {"a": {"type": "x"}}}])
def test_malformed_metadata_names_what_is_wrong(bad):
    with pytest.raises((TypeError, ValueError), match="metadata"):
        TableMetadata.from_dict(bad)


def test_unknown_sdtype_in_the_constructor_is_refused():
    with pytest.raises(ValueError, match="sdtype"):
        TableMetadata({"a": "number"})


def test_unreadable_file_is_named(tmp_path):
    (tmp_path / "m.json").write_text("{oops")
    with pytest.raises(ValueError, match=r"m\.json"):
        TableMetadata.read(tmp_path / "m.json")


def test_a_table_missing_a_column_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"'synthetic_data'.*missing.*'b'"):
        TableMetadata({"a": "numerical", "b": "numerical"}).check_frame(
            pd.DataFrame({"a": [1]}), "synthetic_data")
