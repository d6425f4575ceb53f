"""The configuration sections every audit kind shares (issue 7, sections 1 and 3).

A new audit kind composes its schema from the shared sections in a few lines; the value
rules the API checks too are written once (privaudit._validation) and agree everywhere.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import pytest
from pydantic import Field

import privaudit
from privaudit._validation import (
    EXECUTOR_NAMES,
    N_JOBS,
    N_REFERENCE_MODELS,
    RANDOM_STATE,
    REFERENCE_MODES,
)
from privaudit.audits import RunOptions
from privaudit.audits._inputs import check_attack_names
from privaudit.cli._config import ConfigError, load_audit_config
from privaudit.cli._reading import read_config
from privaudit.cli._sections import AuditFile, InputFile, Name, Section

# --- A second audit kind, composed from the shared sections ------------------------------


class TextsSection(Section):
    path: InputFile
    text_column: Name


class ToyLLMAuditFile(AuditFile):
    """A toy ``kind: llm`` schema: its own data section, the shared rest."""

    optional_sections: ClassVar[tuple[str, ...]] = (*AuditFile.optional_sections, "metrics")

    kind: Literal["llm"]
    data: TextsSection  # type: ignore[assignment]
    metrics: Annotated[list[Name], Field(min_length=1)] = Field(
        default_factory=lambda: ["loss"])


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "model.skops").write_bytes(b"placeholder")
    (tmp_path / "texts.csv").write_text("text,member\nhello,1\n")
    (tmp_path / "data.csv").write_text("a,y,m\n1,0,1\n")
    return tmp_path


_LLM = """\
kind: llm
target: {path: model.skops, name: tiny-gpt}
data: {path: texts.csv, text_column: text}
reference: {n_models: 2, mode: offline}
executor: {name: local, n_jobs: -1}
random_state: 3
report:
"""


def _read_llm(folder, text: str) -> ToyLLMAuditFile:
    (folder / "llm.yaml").write_text(text)
    return read_config(folder / "llm.yaml", ToyLLMAuditFile)


def test_second_kind_is_composed_from_the_shared_sections(folder):
    cfg = _read_llm(folder, _LLM)
    assert cfg.kind == "llm" and cfg.data.text_column == "text"
    assert (cfg.reference.n_models, cfg.reference.mode, cfg.executor.n_jobs) == (2, "offline", -1)
    assert cfg.random_state == 3 and cfg.report.n_bootstrap == 1000  # empty report: defaults
    assert cfg.metrics == ["loss"] and cfg.target.name == "tiny-gpt"


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (_LLM.replace("text_column: text", "text_colum: text"), "'data.text_colum'",
         ["not known", "text_column"]),  # the kind's own section names its keys
        (_LLM.replace("n_jobs: -1", "n_jobs: 0"), "'executor.n_jobs'", [N_JOBS.expected]),
        (_LLM.replace("mode: offline", "mode: later"), "'reference.mode'",
         [REFERENCE_MODES.expected]),
        (_LLM.replace("kind: llm", "kind: synthetic"), "'kind'", ["'synthetic'"]),
        (_LLM.replace("texts.csv", "nowhere.csv"), "'data.path'", ["nowhere.csv"]),
        (_LLM + "metrics: []\n", "'metrics'", ["non-empty list"]),
        (_LLM.replace("random_state: 3", "random_state: -3"), "'random_state'",
         [RANDOM_STATE.expected]),
    ],
)
def test_second_kind_errors_name_key_and_file(folder, text, key, words):
    with pytest.raises(ConfigError) as info:
        _read_llm(folder, text)
    message = str(info.value)
    assert f"{key} key of" in message and "llm.yaml" in message and "\n" not in message
    for word in words:
        assert word in message


def test_second_kind_refuses_the_model_audit_data_section(folder):
    text = _LLM.replace("{path: texts.csv, text_column: text}",
                        "{path: data.csv, label_column: y, membership_column: m}")
    with pytest.raises(ConfigError, match=r"'data\.label_column' key of .* is not known"):
        _read_llm(folder, text)


# --- One rule, two entry points -----------------------------------------------------------


def _config_accepts(folder, section: str | None, key: str, value) -> bool:
    config = ("target: {path: model.skops}\n"
              "data: {path: data.csv, label_column: y, membership_column: m}\n")
    config += f"{key}: {value}\n" if section is None else f"{section}: {{{key}: {value}}}\n"
    (folder / "audit.yaml").write_text(config)
    try:
        load_audit_config(folder / "audit.yaml")
    except ConfigError as exc:
        assert f"'{key if section is None else f'{section}.{key}'}' key of" in str(exc)
        return False
    return True


_SETTINGS = dict(random_state=0, n_jobs=None, executor="local", address=None)


def check_settings(**options):
    """The API's own check of the run options, as every audit runs it."""
    return RunOptions.checked("audit_model", **options)


def _api_accepts(**settings) -> bool:
    from privaudit.training import ReferenceSpec

    try:
        if "n_reference_models" in settings:
            ReferenceSpec(n_models=settings["n_reference_models"])
        else:
            check_settings(**{**_SETTINGS, **settings})
    except (TypeError, ValueError):
        return False
    return True


@pytest.mark.parametrize(
    ("section", "key", "api", "values"),
    [
        ("executor", "n_jobs", "n_jobs", [-2, -1, 0, 1, 7]),
        ("reference", "n_models", "n_reference_models", [-1, 0, 1, 16]),
        (None, "random_state", "random_state", [-1, 0, 5]),
        ("executor", "name", "executor", ["local", "ray", "dask", "LOCAL"]),
    ],
)
def test_config_and_api_apply_the_same_rule(folder, section, key, api, values):
    for value in values:
        assert _config_accepts(folder, section, key, value) == _api_accepts(**{api: value}), value


def test_both_entry_points_word_the_rule_alike(folder):
    assert not _config_accepts(folder, "executor", "n_jobs", 0)
    with pytest.raises(ConfigError) as info:
        load_audit_config(folder / "audit.yaml")
    assert N_JOBS.expected in str(info.value)
    with pytest.raises(ValueError, match=re.escape(REFERENCE_MODES.expected)):
        check_attack_names(["loss"], None, "sometimes", "classification")
    with pytest.raises(ValueError,
                       match=re.escape(f"{EXECUTOR_NAMES.expected.replace(' or ', ', ')} or")):
        check_settings(**{**_SETTINGS, "executor": "dask"})
    assert N_REFERENCE_MODELS.ok(1) and not N_REFERENCE_MODELS.ok(0)


# --- Short functions -----------------------------------------------------------------------


def _code_lines(node: ast.FunctionDef) -> int:
    body = node.body
    if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                    ast.Constant):
        body = body[1:]
    return len({n.lineno for b in body for n in ast.walk(b) if hasattr(n, "lineno")})


@pytest.mark.parametrize("module", ["cli", "results/_slicing.py", "training/_fidelity.py"])
def test_functions_fit_on_one_screen(module):
    root = Path(privaudit.__file__).parent / module
    files = sorted(root.glob("*.py")) if root.is_dir() else [root]
    long = [f"{path.name}:{node.name} ({_code_lines(node)})" for path in files
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef) and _code_lines(node) > 60]
    assert not long, long


def test_misspelled_required_key_names_the_key_it_could_be(folder):
    (folder / "audit.yaml").write_text(
        "target: {path: model.skops}\n"
        "data: {path: data.csv, label_colum: y, membership_column: m}\n")
    with pytest.raises(ConfigError) as info:
        load_audit_config(folder / "audit.yaml")
    message = str(info.value)  # not "'data.label_column' ... is missing"
    assert "'data.label_colum' key of" in message and "label_column" in message
    assert "1 more problem" in message


def test_empty_attack_params_section_keeps_its_default(folder):
    (folder / "audit.yaml").write_text(
        "target: {path: model.skops}\n"
        "data: {path: data.csv, label_column: y, membership_column: m}\n"
        "attack_params:\nexecutor:\n")
    cfg = load_audit_config(folder / "audit.yaml")
    assert cfg.attack_params == {} and cfg.executor == "local"
