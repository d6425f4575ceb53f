"""Old configuration keys read as their new ones, with a warning (issue 21).

One general way for every audit kind's file: a schema declares ``renamed_keys`` (old
dotted key -> new dotted key); ``read_config`` moves each old key before validation,
warns once naming both, refuses both keys together, and names the key the file wrote in
any later problem (``written_key``).
"""

from __future__ import annotations

import warnings
from typing import ClassVar

import pytest
from pydantic import Field

from privaudit.cli._errors import ConfigError
from privaudit.cli._reading import read_config
from privaudit.cli._sections import NModels, Section, as_written, move_renamed_keys


class Game(Section):
    n_train_rows: int = 10
    reserved_fraction: float = 0.2


class Reference(Section):
    n_models: NModels = 16
    mode: str = "auto"


class ToyFile(Section):
    renamed_keys: ClassVar[dict[str, str]] = {
        "game.n_shadow_runs": "reference.n_models",
        "game.reference_fraction": "game.reserved_fraction",
        "secret": "sensitive",
        "shadows": "reference",  # a whole section renamed
    }

    sensitive: str | None = None
    game: Game = Field(default_factory=Game)
    reference: Reference = Field(default_factory=Reference)


def _read(tmp_path, text):
    path = tmp_path / "audit.yaml"
    path.write_text(text)
    return read_config(path, ToyFile)


@pytest.mark.parametrize(("old_text", "new_text", "old", "new"), [
    ("game: {n_shadow_runs: 8}", "reference: {n_models: 8}", "game.n_shadow_runs",
     "reference.n_models"),
    ("game: {reference_fraction: 0.3}", "game: {reserved_fraction: 0.3}",
     "game.reference_fraction", "game.reserved_fraction"),
    ("secret: income", "sensitive: income", "secret", "sensitive"),
    ("shadows: {n_models: 4, mode: online}", "reference: {n_models: 4, mode: online}",
     "shadows", "reference"),
    ("reference: null\ngame: {n_shadow_runs: 6}", "reference: {n_models: 6}",
     "game.n_shadow_runs", "reference.n_models"),  # into an empty section
])
def test_an_old_key_reads_as_its_new_key_with_one_warning(tmp_path, old_text, new_text,
                                                          old, new):
    with pytest.warns(FutureWarning) as caught:
        from_old = _read(tmp_path, old_text)
    messages = [str(w.message) for w in caught if w.category is FutureWarning]
    assert len(messages) == 1
    assert f"'{old}' key of" in messages[0] and f"now called '{new}'" in messages[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new key: no warning
        from_new = _read(tmp_path, new_text)
    assert from_old.model_dump() == from_new.model_dump()
    assert from_old.written_key(new) == old and from_new.written_key(new) == new


@pytest.mark.parametrize(("text", "old", "new"), [
    ("game: {n_shadow_runs: 8}\nreference: {n_models: 8}", "game.n_shadow_runs",
     "reference.n_models"),
    ("secret: a\nsensitive: b", "secret", "sensitive"),
    ("game: {reference_fraction: 0.3, reserved_fraction: 0.3}", "game.reference_fraction",
     "game.reserved_fraction"),
])
def test_both_keys_are_refused_naming_both(tmp_path, text, old, new):
    with pytest.raises(ConfigError, match=f"'{old}' key of .* old name of '{new}'"):
        _read(tmp_path, text)


@pytest.mark.parametrize(("text", "key"), [
    ("game: {n_shadow_runs: 0}", "game.n_shadow_runs"),
    ("game: {n_shadow_runs: many}", "game.n_shadow_runs"),
    ("secret: 3", "secret"),
    ("shadows: {n_models: 0}", "shadows.n_models"),
    ("shadows: {n_model: 4}", "shadows.n_model"),  # unknown key below a moved section
])
def test_a_bad_value_under_an_old_key_names_the_key_written(tmp_path, text, key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ConfigError, match=f"^The '{key}' key of"):
            _read(tmp_path, text)


def test_a_section_that_is_not_a_mapping_is_named(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ConfigError, match=r"'reference' key of .* must be a mapping"):
            _read(tmp_path, "reference: 3\ngame: {n_shadow_runs: 8}")


def test_moving_keys_leaves_the_file_mapping_untouched():
    raw = {"game": {"n_shadow_runs": 8, "n_train_rows": 5}}
    with pytest.warns(FutureWarning):
        moved, written = move_renamed_keys(raw, ToyFile.renamed_keys, "f.yaml")
    assert raw == {"game": {"n_shadow_runs": 8, "n_train_rows": 5}}
    assert moved == {"game": {"n_train_rows": 5}, "reference": {"n_models": 8}}
    assert written == {"reference.n_models": "game.n_shadow_runs"}
    assert as_written("reference.n_models", written) == "game.n_shadow_runs"
    assert as_written("reference.n_modelsx", written) == "reference.n_modelsx"
    assert as_written("game.n_train_rows", written) == "game.n_train_rows"
    assert as_written("shadows_x", {"reference": "shadows"}) == "shadows_x"
    assert as_written("reference[0]", {"reference": "shadows"}) == "shadows[0]"


def test_a_schema_without_renamed_keys_reads_as_before(tmp_path):
    class Plain(Section):
        secret: str | None = None

    path = tmp_path / "plain.yaml"
    path.write_text("secret: x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = read_config(path, Plain)
    assert config.secret == "x" and config.written_key("secret") == "secret"


def test_a_copy_of_the_schema_keeps_the_keys_written(tmp_path):
    with pytest.warns(FutureWarning):
        config = _read(tmp_path, "secret: income")
    copied = config.model_copy(update={"sensitive": "age"})
    assert copied.written_key("sensitive") == "secret"
