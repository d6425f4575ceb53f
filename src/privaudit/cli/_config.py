"""The YAML configuration of ``privaudit audit model``.

Example (every key but ``target.path``, ``data.path``, ``data.label_column`` and
``data.membership_column`` is optional)::

    target:
      path: model.skops            # a scikit-learn model saved with skops (never pickle)
      name: credit-model
      trusted: []                  # extra types to trust in the skops file, after checking
      # or a PyTorch model: weights (safetensors, or a state dict read with
      # weights_only=True) loaded into the module that `factory` builds
      # type: torch
      # path: model.safetensors
      # factory: my_models:build_net   # module:function, imported from the config's folder
      # output: logits                 # or probabilities
    data:
      path: audited.csv            # CSV or Parquet: the audited records
      label_column: default        # the model's target column
      membership_column: member    # 1 = in the model's training set, 0 = not
      id_column: customer_id       # unique per record
      feature_columns: [age, income, ...]   # default: every other column
    population:
      path: population.parquet     # same columns; records the model did not train on
    attacks: [loss, entropy, lira-online, lira-offline, rmia, shadow]
    attack_params:
      lira-online: {fix_variance: true}
    reference:
      n_models: 16
      mode: auto                   # auto | online | offline
      recipe:                      # how to train reference models like the target
        type: clone                # clone (scikit-learn targets: an unfitted copy)
                                   # torch-mlp / torch-cnn (built-in, keys = their params)
                                   # callable (train: module:function, fn(X, y, *, random_state))
    executor:
      name: local                  # local | ray
      n_jobs: 2                    # a positive integer, or -1 for every CPU
      address: null                # a running Ray cluster, e.g. "ray://head:10001"
    cache_dir: .privaudit-cache    # trained reference models, reused by a rerun
    random_state: 0
    report:
      out: audit-report
      n_bootstrap: 1000

Relative paths are read relative to the configuration file.

The file is read with a typed schema (pydantic, one model per section, strict types, no
unknown keys): a misspelled key (``reference: {n_model: 2}``) or a key given twice is an
error naming the key, its section and the file, never a silent default. The sections
``target``, ``data``, ``reference``, ``executor`` and ``report`` are meant to be shared by
the configurations of the other audit kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

__all__ = ["AuditConfig", "ConfigError", "load_audit_config", "run_audit_config"]


class ConfigError(ValueError):
    """A configuration key or a data file is wrong; the message names the key or file."""


def _short(value: Any) -> str:
    # Cut in the middle: the end of a long value is a path's file name, the part to read.
    text = repr(value)
    return text if len(text) <= 100 else text[:30] + "..." + text[-67:]


def _key_error(key: str, expected: str, got: Any, source: str = "the audit configuration",
               ) -> ConfigError:
    return ConfigError(f"The {key!r} key of {source} must be {expected}. "
                       f"Got {_short(got)} instead.")


# --- The schema: one model per section --------------------------------------------------


class _KeyProblem(ValueError):
    """Raised inside a section's validator: names the key, as a field error would."""

    def __init__(self, key: str, expected: str, got: Any) -> None:
        super().__init__(f"{key} must be {expected}")
        self.key, self.expected, self.got = key, expected, got


_Name = Annotated[str, Field(min_length=1)]


def _resolve(value: str, info: ValidationInfo) -> Path | None:
    base = (info.context or {}).get("base")
    if base is None:
        return None
    path = Path(value)
    return path if path.is_absolute() else base / path


def _existing_file(value: str, info: ValidationInfo) -> str:
    path = _resolve(value, info)
    if path is not None and not path.is_file():
        what = "a file, not a directory" if path.is_dir() else "an existing file"
        raise _KeyProblem("", what, str(path))
    return value


def _directory_path(value: str, info: ValidationInfo) -> str:
    from privaudit._validation import check_directory

    path = _resolve(value, info)
    if path is not None:
        try:
            check_directory(path, param="", func="")
        except ValueError:
            raise _KeyProblem("", "a directory, or a path where one can be created (not a "
                              "file)", str(path)) from None
    return value


#: Paths are checked when the schema reads them (relative to the file's folder), so a
#: missing input is reported in the order of the file, before any other section.
_InputFile = Annotated[str, Field(min_length=1), AfterValidator(_existing_file)]
_OutputDir = Annotated[str, Field(min_length=1), AfterValidator(_directory_path)]
_PositiveInt = Annotated[int, Field(ge=1)]
_Seed = Annotated[int, Field(ge=0)]


class _Section(BaseModel):
    """A configuration section: strict types, no unknown keys."""

    model_config = ConfigDict(extra="forbid", strict=True)


class TargetSection(_Section):
    """``target``: the audited model's file and how to read it."""

    path: _InputFile
    name: _Name | None = None
    type: Literal["sklearn", "torch"] = "sklearn"
    trusted: list[_Name] = Field(default_factory=list)
    factory: _Name | None = None
    output: Literal["logits", "probabilities"] | None = None

    @model_validator(mode="after")
    def _torch_keys(self) -> TargetSection:
        if self.type == "torch":
            if self.factory is None or ":" not in self.factory:
                raise _KeyProblem("factory", "'module:function' when 'type' is torch",
                                  self.factory)
        else:
            for key in ("factory", "output"):
                if getattr(self, key) is not None:
                    raise _KeyProblem(key, "left out unless 'type' is torch",
                                      getattr(self, key))
        return self


class DataSection(_Section):
    """``data``: the audited records and their columns."""

    path: _InputFile
    label_column: _Name
    membership_column: _Name
    id_column: _Name | None = None
    feature_columns: Annotated[list[_Name], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _distinct_columns(self) -> DataSection:
        if self.membership_column == self.label_column:
            raise _KeyProblem("membership_column", "another column than 'label_column'",
                              self.membership_column)
        if self.id_column in (self.label_column, self.membership_column):
            raise _KeyProblem("id_column", "another column than the label and membership "
                              "columns", self.id_column)
        features = self.feature_columns or []
        repeated = sorted({c for c in features if features.count(c) > 1})
        clash = sorted(set(features) & {self.label_column, self.membership_column,
                                        self.id_column})
        if repeated or clash:
            raise _KeyProblem("feature_columns", "a list of distinct columns other than the "
                              "label, membership and id columns", repeated or clash)
        return self


class PopulationSection(_Section):
    """``population``: records the model did not train on, with the same columns."""

    path: _InputFile


class RecipeSection(BaseModel):
    """``reference.recipe``: a ``type`` and that recipe's own parameters."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["clone", "torch-mlp", "torch-cnn", "callable"] = "clone"


class ReferenceSection(_Section):
    """``reference``: the pool of reference models."""

    n_models: _PositiveInt = 16
    mode: Literal["auto", "online", "offline"] = "auto"
    recipe: RecipeSection | None = None


class ExecutorSection(_Section):
    """``executor``: where reference models train."""

    name: Literal["local", "ray"] = "local"
    n_jobs: int | None = None
    address: _Name | None = None

    @model_validator(mode="after")
    def _n_jobs(self) -> ExecutorSection:
        if self.n_jobs is not None and self.n_jobs < 1 and self.n_jobs != -1:
            raise _KeyProblem("n_jobs", "a positive integer, or -1 for every CPU", self.n_jobs)
        if self.address is not None and self.name != "ray":
            raise _KeyProblem("address", "left out unless 'name' is ray", self.address)
        return self


class ReportSection(_Section):
    """``report``: where the report goes and its bootstrap."""

    out: _OutputDir | None = None
    n_bootstrap: Annotated[int, Field(ge=0)] = 1000


_DEFAULT_ATTACKS = ["loss", "confidence", "entropy", "modified-entropy"]


class ModelAuditFile(_Section):
    """A whole ``privaudit audit model`` configuration file."""

    target: TargetSection
    data: DataSection
    population: PopulationSection | None = None
    attacks: Annotated[list[_Name], Field(min_length=1)] = Field(
        default_factory=lambda: list(_DEFAULT_ATTACKS))
    attack_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    reference: ReferenceSection = Field(default_factory=ReferenceSection)
    executor: ExecutorSection = Field(default_factory=ExecutorSection)
    cache_dir: _OutputDir | None = None
    random_state: _Seed = 0
    report: ReportSection = Field(default_factory=ReportSection)

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, raw: Any) -> Any:
        # `report:` with every key commented out reads as null: the defaults apply.
        if isinstance(raw, dict):
            optional = ("reference", "executor", "report", "attack_params")
            raw = {k: v for k, v in raw.items() if not (k in optional and v is None)}
        return raw


# --- Reading the file: YAML without duplicate keys, then the schema ----------------------


def _check_duplicates(node: Any, where: tuple[str, ...], source: str, seen: set[int]) -> None:
    """Refuse a mapping that repeats a key (YAML would silently keep the last one)."""
    import yaml

    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicates(item, (*where, f"[{i}]"), source, seen)
    if not isinstance(node, yaml.MappingNode):
        return
    lines: dict[tuple[str, str], int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
            continue
        key = (key_node.tag, key_node.value)
        dotted = ".".join((*where, key_node.value)).replace(".[", "[")
        line = key_node.start_mark.line + 1
        if key in lines:
            raise ConfigError(f"The {dotted!r} key of {source} is given twice (lines "
                              f"{lines[key]} and {line}); keep one.")
        lines[key] = line
        _check_duplicates(value_node, (*where, key_node.value), source, seen)


def _read_yaml(path: Path, source: str) -> Any:
    """The YAML document in ``path``: syntax errors and duplicate keys name the line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"The audit configuration {source} is not a text (UTF-8) YAML "
                          "file.") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the audit configuration {source}: "
                          f"{exc.strerror or exc}.") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_duplicates(node, (), source, set())
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"The audit configuration {source} is not valid YAML: "
                          f"{' '.join(str(problem).split())}{where}.") from None
    finally:
        loader.dispose()


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


def _section_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the schema allows in the section at ``loc``."""
    import typing

    model: Any = ModelAuditFile
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


def _schema_error(exc: ValidationError, source: str) -> ConfigError:
    """One line for the first problem pydantic found (and how many others)."""
    errors = exc.errors(include_url=False)
    err = errors[0]
    loc, kind = tuple(err["loc"]), err["type"]
    key = _dotted(loc)
    if kind == "extra_forbidden":
        text = (f"The {key!r} key of {source} is not known; expected one of "
                f"{_section_keys(loc[:-1])}.")
    elif kind == "missing":
        text = f"The {key!r} key of {source} is missing; it is required."
    elif kind == "value_error" and isinstance(err.get("ctx", {}).get("error"), _KeyProblem):
        problem = err["ctx"]["error"]
        where = (*loc, problem.key) if problem.key else loc
        text = str(_key_error(_dotted(where), problem.expected, problem.got, source))
    else:
        expected = _EXPECTED.get(kind) or err["msg"].removeprefix("Input should be ")
        text = str(_key_error(key, expected, err.get("input"), source))
    more = len(errors) - 1
    return ConfigError(text + (f" ({more} more problem{'s' * (more > 1)} after this one.)"
                               if more else ""))


def _check_attacks(schema: ModelAuditFile, source: str) -> None:
    """Attack names the registry knows; parameters their constructors take."""
    import inspect

    from privaudit.attacks import available_attacks, get_attack

    known = sorted(available_attacks())
    for i, name in enumerate(schema.attacks):
        if name not in known:
            raise _key_error(f"attacks[{i}]", f"one of {known}", name, source)
        if name in schema.attacks[:i]:
            raise _key_error(f"attacks[{i}]", "an attack not listed before", name, source)
    for name, params in schema.attack_params.items():
        if name not in schema.attacks:
            raise _key_error(f"attack_params.{name}", f"an attack listed in 'attacks' "
                             f"({schema.attacks})", name, source)
        allowed = sorted(inspect.signature(type(get_attack(name))).parameters)
        for param in params:
            if param not in allowed:
                raise ConfigError(f"The 'attack_params.{name}.{param}' key of {source} is "
                                  f"not known; expected one of {allowed}.")
        try:
            get_attack(name, **params)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"The 'attack_params.{name}' key of {source} is wrong: "
                              f"{exc}") from None


def _check_recipe(schema: ModelAuditFile, source: str) -> None:
    """A recipe's keys must be parameters of that recipe (``callable``: of ``train``)."""
    import inspect

    recipe = schema.reference.recipe
    if recipe is None:
        return
    params = dict(recipe.model_extra or {})
    if recipe.type == "callable":
        train = params.get("train")
        if not isinstance(train, str) or ":" not in train:
            raise _key_error("reference.recipe.train", "'module:function' for a callable "
                             "recipe", train, source)
        return
    allowed: list[str] = []
    if recipe.type != "clone":
        from privaudit.training import TorchCNNRecipe, TorchMLPRecipe

        cls = TorchMLPRecipe if recipe.type == "torch-mlp" else TorchCNNRecipe
        allowed = sorted(inspect.signature(cls).parameters)
    for key in params:
        if key not in allowed:
            raise ConfigError(f"The 'reference.recipe.{key}' key of {source} is not known "
                              f"for a {recipe.type} recipe; expected one of "
                              f"{['type', *allowed]}.")


@dataclass
class AuditConfig:
    """A validated ``privaudit audit model`` configuration (see the module docstring)."""

    target_path: Path
    label_column: str
    membership_column: str
    data_path: Path
    target_name: str | None = None
    target_type: str = "sklearn"
    factory: str | None = None
    output: str = "logits"
    trusted: list[str] = field(default_factory=list)
    recipe: dict[str, Any] = field(default_factory=dict)
    id_column: str | None = None
    feature_columns: list[str] | None = None
    population_path: Path | None = None
    attacks: list[str] = field(default_factory=lambda: list(_DEFAULT_ATTACKS))
    attack_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    n_reference_models: int = 16
    reference_mode: str = "auto"
    executor: str = "local"
    n_jobs: int | None = None
    address: str | None = None
    cache_dir: Path | None = None
    random_state: int = 0
    out: Path = Path("audit-report")
    n_bootstrap: int = 1000
    config_dir: Path = Path(".")
    #: How messages name the configuration (its path as given).
    source: str = "the audit configuration"


def _at(base: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else base / path


def _to_config(schema: ModelAuditFile, base: Path, source: str) -> AuditConfig:
    target, data, ref, ex, report = (schema.target, schema.data, schema.reference,
                                     schema.executor, schema.report)
    return AuditConfig(
        target_path=_at(base, target.path), data_path=_at(base, data.path),
        label_column=data.label_column, membership_column=data.membership_column,
        target_name=target.name, target_type=target.type, factory=target.factory,
        output=target.output or "logits", trusted=list(target.trusted),
        recipe=ref.recipe.model_dump() if ref.recipe is not None else {},
        id_column=data.id_column, feature_columns=data.feature_columns,
        population_path=None if schema.population is None
        else _at(base, schema.population.path),
        attacks=list(schema.attacks), attack_params=dict(schema.attack_params),
        n_reference_models=ref.n_models, reference_mode=ref.mode, executor=ex.name,
        n_jobs=ex.n_jobs, address=ex.address,
        cache_dir=None if schema.cache_dir is None else _at(base, schema.cache_dir),
        random_state=schema.random_state, out=_at(base, report.out or "audit-report"),
        n_bootstrap=report.n_bootstrap, config_dir=base, source=source,
    )


def load_audit_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit configuration file (YAML).

    Parameters
    ----------
    path : path-like
        The YAML file (see the module docstring for its keys).

    Returns
    -------
    AuditConfig
        Paths resolved against the file's folder and checked (inputs exist, output
        folders can be created).

    Raises
    ------
    ConfigError
        One line naming the key and the file: an unknown or repeated key, a wrong type or
        value, a YAML syntax error, a missing input file.
    """
    path = Path(path)
    source = str(path)
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise ConfigError(f"The audit configuration {source} {what}.")
    raw = _read_yaml(path, source)
    if not isinstance(raw, dict):
        raise ConfigError(f"The audit configuration {source} must be a YAML mapping of "
                          f"sections (target, data, ...). Got {type(raw).__name__} instead.")
    try:
        schema = ModelAuditFile.model_validate(raw, context={"base": path.parent})
    except ValidationError as exc:
        raise _schema_error(exc, source) from None
    _check_attacks(schema, source)
    _check_recipe(schema, source)
    return _to_config(schema, path.parent, source)


# --- Reading and checking the data files, before any work --------------------------------


@dataclass
class _Table:
    """A data file read into a frame, and how messages name it and its rows."""

    frame: Any
    path: Path
    role: str  # "data" or "population"
    key: str  # the configuration key naming the file

    @property
    def name(self) -> str:
        return f"the {self.role} file {str(self.path)!r}"

    def row(self, position: int) -> str:
        # A spreadsheet shows the header on line 1: data row 0 is line 2.
        if self.path.suffix.lower() in (".csv", ".txt"):
            return f"line {position + 2}"
        return f"row {position} (from 0)"


def _check_csv_shape(path: Path, name: str) -> None:
    """Refuse what pandas would silently repair in a CSV file.

    Repeated column names (pandas renames them ``a.1``) and rows with fewer fields than
    the header (pandas fills them with NaN, later reported as "Input X contains NaN").
    """
    import csv

    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        repeated = sorted({c for c in header if header.count(c) > 1})
        if repeated:
            raise ConfigError(f"The header of {name} repeats the column(s) {repeated}: "
                              "rename them so each column has one name.")
        for row in reader:
            if row and len(row) < len(header):
                raise ConfigError(f"Line {reader.line_num} of {name} has {len(row)} "
                                  f"field(s) but the header has {len(header)} "
                                  f"({header[len(row)]!r} and after are missing).")


def _read_table(path: Path, role: str = "data", key: str = "data.path") -> _Table:
    """Read a CSV or Parquet file; an unreadable one is one line naming it."""
    import pandas as pd

    table = _Table(None, path, role, key)
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        elif suffix in (".csv", ".txt"):
            _check_csv_shape(path, table.name)
            frame = pd.read_csv(path)
        else:
            raise ConfigError(f"The {key!r} file {str(path)!r} must be CSV (.csv) or Parquet "
                              "(.parquet).")
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{table.name.capitalize()} ({key}) is empty.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{table.name.capitalize()} ({key}) is not a text CSV file "
                          "(binary content); give a CSV or a Parquet file.") from None
    except (ValueError, OSError) as exc:
        if isinstance(exc, ConfigError):
            raise
        reason = " ".join(str(exc).split())[:200]
        raise ConfigError(f"{table.name.capitalize()} ({key}) cannot be read as "
                          f"{'Parquet' if suffix in ('.parquet', '.pq') else 'CSV'}: "
                          f"{reason}") from None
    if len(frame) == 0:
        raise ConfigError(f"{table.name.capitalize()} ({key}) has no rows.")
    table.frame = frame
    return table


def _column(table: _Table, column: str, key: str) -> Any:
    if column not in table.frame.columns:
        columns = [str(c) for c in table.frame.columns]
        shown = columns[:20] + (["..."] if len(columns) > 20 else [])
        raise ConfigError(f"{table.name.capitalize()} has no column {column!r} ({key}); its "
                          f"columns are {shown}.")
    return table.frame[column]


def _first(table: _Table, mask: Any) -> str:
    import numpy as np

    positions = np.flatnonzero(np.asarray(mask))
    return f"{len(positions)} row{'s' * (len(positions) > 1)}, first at {table.row(positions[0])}"


def _check_labels(table: _Table, column: str, key: str, classes: Any = None) -> Any:
    import numpy as np

    values = _column(table, column, key)
    if values.isna().any():
        raise ConfigError(f"The label column {column!r} of {table.name} has missing values "
                          f"({_first(table, values.isna())}): every record needs its label.")
    if classes is not None:
        unknown = ~values.isin(list(classes)).to_numpy()
        if unknown.any():
            examples = list(dict.fromkeys(values[unknown].tolist()))[:3]
            raise ConfigError(f"The label column {column!r} of {table.name} holds labels the "
                              f"model does not know, e.g. {examples} ({_first(table, unknown)}"
                              f"); its classes are {np.asarray(classes).tolist()[:10]}.")
    return values.to_numpy()


def _check_membership(table: _Table, column: str, key: str) -> Any:
    import numpy as np
    import pandas as pd

    values = _column(table, column, key)
    numeric = pd.to_numeric(values, errors="coerce") if values.dtype != bool else values
    bad = ~np.isin(numeric.to_numpy(dtype=float, na_value=np.nan), (0, 1))
    if bad.any():
        examples = list(dict.fromkeys(values[bad].tolist()))[:3]
        raise ConfigError(f"The membership column {column!r} ({key}) of {table.name} must "
                          f"hold 0/1 (1 = member); it holds {examples} ({_first(table, bad)}).")
    return numeric.to_numpy().astype(np.int8)


def _check_ids(table: _Table, column: str, key: str) -> Any:
    values = _column(table, column, key)
    if values.isna().any():
        raise ConfigError(f"The id column {column!r} ({key}) of {table.name} has missing ids "
                          f"({_first(table, values.isna())}).")
    repeated = values.astype(str).duplicated(keep=False)
    if repeated.any():
        shown = list(dict.fromkeys(values[repeated].tolist()))
        raise ConfigError(f"The id column {column!r} ({key}) of {table.name} repeats "
                          f"{len(shown)} id(s), e.g. {shown[:5]!r} ({_first(table, repeated)}): "
                          "ids must be unique.")
    return values.to_numpy()


@dataclass
class _Accepts:
    """What the audited model takes as input, to check feature columns up front."""

    allow_nan: bool = False
    allow_text: bool = False
    model: str = "the model"
    classes: Any = None  # a classifier's labels, to check the label column against


def _accepted_inputs(target: Any) -> _Accepts:
    """NaN and text are refused unless the model can take them.

    A bare scikit-learn estimator says whether it accepts NaN (its ``allow_nan`` tag) and
    takes numbers only; a pipeline or column transformer may impute and encode, so its
    columns are left for it to judge. Torch modules take finite numbers.
    """
    classes = getattr(target, "classes_", None)
    estimator = getattr(target, "estimator", None)
    if estimator is None:
        return _Accepts(model=f"the {type(target).__name__}", classes=classes)
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.utils import get_tags

    model = f"the model ({type(estimator).__name__})"
    if isinstance(estimator, (Pipeline, ColumnTransformer)):
        return _Accepts(allow_nan=True, allow_text=True, model=model, classes=classes)
    try:
        allow_nan = bool(get_tags(estimator).input_tags.allow_nan)
    except (AttributeError, TypeError, ValueError):
        allow_nan = False
    return _Accepts(allow_nan=allow_nan, model=model, classes=classes)


def _check_feature(table: _Table, column: str, accepts: _Accepts) -> None:
    """Check one feature column: numbers (or text the model encodes), finite, no NaN.

    NaN passes when the model takes it. Messages name the column, the file and the first
    bad row.
    """
    import numpy as np
    import pandas as pd

    values = table.frame[column]
    what = f"The feature column {column!r} of {table.name}"
    if values.dtype.kind in "biuf":
        numeric = values.astype(float)
    else:
        numeric = pd.to_numeric(values, errors="coerce")
        text = numeric.isna() & values.notna()
        if text.any():
            if accepts.allow_text:
                return
            raise ConfigError(f"{what} holds text such as {values[text].iloc[0]!r} "
                              f"({_first(table, text)}); {accepts.model} takes numbers: fix "
                              "the values or leave the column out of data.feature_columns.")
    infinite = np.isinf(numeric.to_numpy(dtype=float, na_value=np.nan))
    if infinite.any():
        raise ConfigError(f"{what} holds infinite values ({_first(table, infinite)}): "
                          "replace them with finite numbers.")
    missing = values.isna()
    if missing.any() and not accepts.allow_nan:
        raise ConfigError(f"{what} has missing values ({_first(table, missing)}); "
                          f"{accepts.model} does not accept them: fill or drop those rows "
                          "(a CSV row with fewer fields than its header reads as missing).")


def _feature_names(table: _Table, cfg: AuditConfig) -> list[str]:
    if cfg.feature_columns is not None:
        return list(cfg.feature_columns)
    roles = {cfg.label_column, cfg.membership_column, cfg.id_column}
    features = [c for c in table.frame.columns if c not in roles]
    if not features:
        raise ConfigError(f"{table.name.capitalize()} has no feature column besides the "
                          f"label, membership and id columns {sorted(r for r in roles if r)}.")
    return features


def _records(
    table: _Table, cfg: AuditConfig, *, membership: bool, features: list[str] | None,
    accepts: _Accepts | None,
) -> tuple:
    """Features, labels, membership and ids of one file, each column checked."""
    y = _check_labels(table, cfg.label_column, "data.label_column",
                      None if accepts is None else accepts.classes)
    labels = (_check_membership(table, cfg.membership_column, "data.membership_column")
              if membership else None)
    ids = None
    if cfg.id_column and (membership or cfg.id_column in table.frame.columns):
        ids = _check_ids(table, cfg.id_column, "data.id_column")
    key = "data.feature_columns"
    if features is None:
        features = _feature_names(table, cfg)
    else:
        key = "a feature column of the data file"
    for column in features:
        _column(table, column, key)
        if accepts is not None:
            _check_feature(table, column, accepts)
    return table.frame[features].reset_index(drop=True), y, labels, ids


def _split_columns(
    frame: Any, cfg: AuditConfig, *, where: str, membership: bool,
    features: list[str] | None = None, accepts: _Accepts | None = None,
) -> tuple:
    """Features (a DataFrame, columns by name), labels, membership and ids of one file.

    The population is read with the audited file's feature list (``features``), by name:
    the same columns in another order, or an extra membership column, must not shift
    what the model sees.
    """
    path = cfg.data_path if where == "data" else (cfg.population_path or Path(where))
    table = _Table(frame, path, where, f"{where}.path")
    return _records(table, cfg, membership=membership, features=features, accepts=accepts)


def _check_disjoint(data: _Table, pop: _Table, cfg: AuditConfig, records: tuple,
                    pop_records: tuple) -> None:
    """The population must hold no audited record: by id, then as the model sees it."""
    from privaudit.audits import population_overlap

    X, y, _, ids = records
    X_pop, y_pop, _, pop_ids = pop_records
    if ids is not None and pop_ids is not None:
        shared = sorted(set(map(str, ids)) & set(map(str, pop_ids)))
        if shared:
            raise ConfigError(f"{pop.name.capitalize()} shares {len(shared)} id(s) "
                              f"({cfg.id_column!r}) with {data.name}, e.g. {shared[:5]}: a "
                              "record is either audited or in the population.")
    n_shared, pop_row, row = population_overlap(X, y, X_pop, y_pop)
    if not n_shared:
        return
    features = list(X.columns)
    others = [c for c in data.frame.columns if c not in features
              and c not in (cfg.label_column, cfg.membership_column, cfg.id_column)]
    subset = (f" Only {len(features)} of the data's {len(features) + len(others)} columns "
              f"are features ({others[:5]} are not), so different records can look the same "
              "to the model: drop those rows from the population, or use more feature "
              "columns." if others
              else " Drop those rows from the population.")
    raise ConfigError(
        f"{pop.name.capitalize()} repeats {n_shared} audited record(s) of {data.name} on "
        f"what the model sees, the feature columns {features[:10]}"
        f"{' ...' if len(features) > 10 else ''} and the label {cfg.label_column!r} (e.g. "
        f"data {data.row(row)} = population {pop.row(pop_row)}): reference models trained "
        f"on them would count as trained on the audited records.{subset}")


def _load_records(cfg: AuditConfig, target: Any) -> tuple:
    """Read and check the data (and population) files before any work is done."""
    accepts = _accepted_inputs(target)
    data = _read_table(cfg.data_path, "data", "data.path")
    records = _records(data, cfg, membership=True, features=None, accepts=accepts)
    if cfg.population_path is None:
        return records, None
    pop = _read_table(cfg.population_path, "population", "population.path")
    pop_records = _records(pop, cfg, membership=False, features=list(records[0].columns),
                           accepts=accepts)
    _check_disjoint(data, pop, cfg, records, pop_records)
    return records, (pop_records[0], pop_records[1])


# --- The model, the recipe, the run -------------------------------------------------------


def _import_object(spec: str, base: Path, key: str) -> Any:
    """Import ``module:attribute``, looking in the configuration's folder first.

    Naming code in the configuration is how the user opts in to running it (as a
    training script would); nothing is ever unpickled from a data or model file.
    """
    import importlib
    import sys

    module_name, _, attribute = spec.partition(":")
    folder = str(base.resolve())
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"The {key!r} key names module {module_name!r}, which cannot be "
                          f"imported ({exc}).") from None
    finally:
        if added:
            sys.path.remove(folder)
    if not hasattr(module, attribute):
        raise ConfigError(f"The {key!r} key names {spec!r}, but {module_name!r} has no "
                          f"{attribute!r}.")
    return getattr(module, attribute)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _load_torch(cfg: AuditConfig, base: Path, name: str, where: str) -> Any:
    from privaudit.targets import TorchTarget, load_torch_model

    factory = _import_object(cfg.factory or "", base, "target.factory")
    try:
        module = load_torch_model(cfg.target_path, factory)
    except ImportError:
        raise
    except Exception as exc:  # safetensors and torch raise their own types
        raise ConfigError(f"{where} cannot be loaded into the module that {cfg.factory} "
                          f"builds: {_one_line(exc)}") from None
    module.eval()
    return TorchTarget(module, output=cfg.output, name=name)  # type: ignore[arg-type]


def _load_sklearn(cfg: AuditConfig, where: str) -> Any:
    import zipfile

    from privaudit.targets import UntrustedTypesError, load_sklearn_model

    try:
        return load_sklearn_model(cfg.target_path, trusted=cfg.trusted or None)
    except UntrustedTypesError as exc:
        raise ConfigError(f"{where} contains types that are not trusted: {exc.types}; "
                          "nothing was run. If you trust them, list them under "
                          f"target.trusted in {cfg.source}.") from None
    except zipfile.BadZipFile:
        raise ConfigError(f"{where} is not a skops file (not a zip archive: a pickle "
                          "renamed .skops?). privaudit never unpickles; save the model with "
                          "privaudit.targets.save_sklearn_model (skops).") from None
    except (ValueError, TypeError, KeyError, OSError, AttributeError) as exc:
        raise ConfigError(f"{where} cannot be read as a skops file: "
                          f"{_one_line(exc)}") from None


def _load_target(cfg: AuditConfig, base: Path) -> Any:
    from privaudit.targets import as_target

    name = cfg.target_name or cfg.target_path.stem
    where = f"The target file {str(cfg.target_path)!r} (target.path)"
    if cfg.target_type == "torch":
        return _load_torch(cfg, base, name, where)
    model = _load_sklearn(cfg, where)
    try:
        return as_target(model, name=name)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} does not hold a model privaudit can audit: "
                          f"{_one_line(exc)}") from None


def _load_recipe(cfg: AuditConfig, base: Path) -> Any:
    """The reference-model recipe the configuration asks for (None: audit_model's default)."""
    spec = dict(cfg.recipe)
    kind = spec.pop("type", "clone")
    if kind == "clone":
        return None
    if kind == "callable":
        from privaudit.training import CallableRecipe

        return CallableRecipe(_import_object(spec.pop("train"), base, "reference.recipe.train"),
                              fn_kwargs=spec or None)
    from privaudit.training import TorchCNNRecipe, TorchMLPRecipe

    cls = TorchMLPRecipe if kind == "torch-mlp" else TorchCNNRecipe
    try:
        return cls(**spec)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"The 'reference.recipe' key of {cfg.source} is wrong for "
                          f"{cls.__name__}: {_one_line(exc)}") from None


def run_audit_config(
    cfg: AuditConfig, *, out: Path | None = None, progress: Any = None,
    base: Path | None = None,
) -> Path:
    """Run the audit a configuration describes and write its report; returns index.html.

    Every input is checked before any work: the model file, then each column of the data
    and population files (the messages name the file, the column and the row).
    """
    from privaudit import audit_model
    from privaudit.report import build_report

    base = base if base is not None else cfg.config_dir
    target = _load_target(cfg, base)
    (X, y, labels, ids), population = _load_records(cfg, target)
    recipe = _load_recipe(cfg, base)
    out_dir = out or cfg.out
    results = audit_model(
        target, X, y, labels, population=population, attacks=cfg.attacks,
        attack_params=cfg.attack_params, n_reference_models=cfg.n_reference_models,
        reference_mode=cfg.reference_mode, record_ids=ids, dataset=cfg.data_path.name,
        recipe=recipe,
        random_state=cfg.random_state, n_jobs=cfg.n_jobs, executor=cfg.executor,
        address=cfg.address, cache_dir=cfg.cache_dir, results_dir=out_dir / "results",
        progress=progress,
    )
    return build_report(results, out_dir, n_bootstrap=cfg.n_bootstrap,
                        random_state=cfg.random_state,
                        title=f"Privacy audit of {target.name}")
