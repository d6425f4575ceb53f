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
    with pytest.raises(ValueError, match=r"metadata name.*synthetic table.*missing.*'b'"):
        TableMetadata({"a": "numerical", "b": "numerical"}).check_frame(
            pd.DataFrame({"a": [1]}), "synthetic table")


def test_an_unknown_sdtype_is_refused_naming_the_column_and_the_valid_ones():
    with pytest.raises(ValueError, match=r"column 'age'.*'banana'.*numerical"):
        TableMetadata.from_dict({"columns": {"age": {"sdtype": "banana"}}})


def test_a_list_is_refused_as_metadata_naming_the_file(tmp_path):
    (tmp_path / "m.json").write_text("[1, 2]")
    with pytest.raises(TypeError, match=r"m\.json' must be a JSON object.*list"):
        TableMetadata.read(tmp_path / "m.json")


@pytest.mark.parametrize(("column", "values", "says"), [
    ("age", [1, "abc"], r"'age'.*holds text \('abc'.*numerical according to the metadata"),
    ("city", [["a"], ["b"]], r"'city'.*holds lists")])
def test_text_in_a_number_column_or_lists_are_refused_naming_the_column(column, values, says):
    meta = TableMetadata({"age": "numerical", "city": "categorical"})
    frame = pd.DataFrame({"age": [1, 2], "city": ["a", "b"]}).assign(**{column: values})
    with pytest.raises(ValueError, match=says):
        meta.check_values(frame, "synthetic table")
