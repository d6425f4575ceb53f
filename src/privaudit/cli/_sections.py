"""The configuration sections every audit kind shares, as typed (pydantic) models.

An audit kind's file schema subclasses :class:`AuditFile`, which holds the shared
sections (``target``, ``data``, ``population``, ``reference``, ``executor``, ``report``,
``cache_dir``, ``random_state``), and adds its own keys; a kind whose target or data
differ overrides that field with its own section (built from :class:`Section` and the
constrained types here). Value rules that the API checks too (``n_jobs``,
``random_state``, the number of reference models, executor names, reference modes) come
from :mod:`privaudit._validation`, so a rule is written once.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    model_validator,
)

from privaudit._validation import (
    EXECUTOR_NAMES,
    N_BOOTSTRAP,
    N_JOBS,
    N_REFERENCE_MODELS,
    RANDOM_STATE,
    REFERENCE_MODES,
    REMOTE_EXECUTORS,
    ChoiceRule,
    IntRule,
    check_directory,
)
from privaudit.cli._errors import ConfigError, KeyProblem, key_error

__all__ = [
    "MAX_N_BOOTSTRAP",
    "MAX_N_MODELS",
    "AuditFile",
    "DataSection",
    "ExecutorName",
    "ExecutorSection",
    "InputFile",
    "NBootstrap",
    "NJobs",
    "NModels",
    "Name",
    "OutputDir",
    "PopulationSection",
    "RecipeSection",
    "ReferenceMode",
    "ReferenceSection",
    "ReportSection",
    "Section",
    "Seed",
    "TargetSection",
    "as_written",
    "at_most",
    "given_keys",
    "move_renamed_keys",
    "rule",
]

#: Upper bounds of the counts a configuration or an option may ask for. Beyond them a run
#: would last days (10,000 reference models trained; 100,000 bootstrap resamples of every
#: metric already fix a 95% interval to its third decimal): an extra zero is a typo,
#: refused before any work.
MAX_N_MODELS = 10_000
MAX_N_BOOTSTRAP = 100_000


def rule(shared: IntRule | ChoiceRule) -> AfterValidator:
    """A pydantic validator applying a rule of :mod:`privaudit._validation` to a key."""

    def check(value: Any) -> Any:
        if not shared.ok(value):
            raise KeyProblem("", shared.expected, value)
        return value

    return AfterValidator(check)


def at_most(high: int) -> AfterValidator:
    """A pydantic validator refusing a count above ``high``, naming the key and the limit."""

    def check(value: Any) -> Any:
        if value > high:
            raise KeyProblem("", f"at most {high:,} (privaudit's limit)", value)
        return value

    return AfterValidator(check)


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
        raise KeyProblem("", what, str(path))
    return value


def _directory_path(value: str, info: ValidationInfo) -> str:
    path = _resolve(value, info)
    if path is not None:
        try:
            check_directory(path, param="", func="")
        except ValueError:
            raise KeyProblem("", "a directory, or a path where one can be created (not a "
                             "file)", str(path)) from None
    return value


Name = Annotated[str, Field(min_length=1)]
#: Paths are checked when the schema reads them (relative to the file's folder), so a
#: missing input is reported in the order of the file, before any other section.
InputFile = Annotated[str, Field(min_length=1), AfterValidator(_existing_file)]
OutputDir = Annotated[str, Field(min_length=1), AfterValidator(_directory_path)]
NModels = Annotated[int, rule(N_REFERENCE_MODELS), at_most(MAX_N_MODELS)]
NJobs = Annotated[int, rule(N_JOBS)]
Seed = Annotated[int, rule(RANDOM_STATE)]
NBootstrap = Annotated[int, rule(N_BOOTSTRAP), at_most(MAX_N_BOOTSTRAP)]
ExecutorName = Annotated[str, rule(EXECUTOR_NAMES)]
ReferenceMode = Annotated[str, rule(REFERENCE_MODES)]


class Section(BaseModel):
    """A configuration section: strict types, no unknown keys.

    A file's top-level schema may declare ``renamed_keys``: old dotted key -> its new
    dotted key (``{"game.n_shadow_runs": "reference.n_models", "secret": "sensitive"}``).
    :func:`~privaudit.cli._reading.read_config` reads an old key as its new one, with a
    :class:`FutureWarning` naming both (:func:`move_renamed_keys`), so the schema holds
    the new keys only; a problem in such a value names the key the file wrote, and
    :meth:`written_key` gives it for the messages raised later (an API error mapped back
    to the file's key).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    #: Old dotted keys of a file (top-level schema) -> their new dotted keys.
    renamed_keys: ClassVar[Mapping[str, str]] = {}
    #: New dotted key -> the old key the file wrote for it (set by read_config).
    _written: dict[str, str] = PrivateAttr(default_factory=dict)

    def written_key(self, key: str) -> str:
        """The key the file wrote for the dotted ``key``: its old name, or ``key``."""
        return as_written(key, self._written)

    def remember_written(self, written: Mapping[str, str]) -> None:
        """Keep which old keys the file wrote (new key -> old key), for :meth:`written_key`."""
        self._written = dict(written)


class TargetSection(Section):
    """``target``: the audited model's file and how to read it."""

    path: InputFile
    name: Name | None = None
    type: Literal["sklearn", "torch"] = "sklearn"
    trusted: list[Name] = Field(default_factory=list)
    factory: Name | None = None
    output: Literal["logits", "probabilities"] | None = None

    @model_validator(mode="after")
    def _torch_keys(self) -> TargetSection:
        if self.type == "torch":
            if self.factory is None or ":" not in self.factory:
                raise KeyProblem("factory", "'module:function' when 'type' is torch",
                                 self.factory)
        else:
            for key in ("factory", "output"):
                if getattr(self, key) is not None:
                    raise KeyProblem(key, "left out unless 'type' is torch",
                                     getattr(self, key))
        return self


class DataSection(Section):
    """``data``: the audited records and their columns."""

    path: InputFile
    label_column: Name
    membership_column: Name
    id_column: Name | None = None
    feature_columns: Annotated[list[Name], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _distinct_columns(self) -> DataSection:
        if self.membership_column == self.label_column:
            raise KeyProblem("membership_column", "another column than 'label_column'",
                             self.membership_column)
        if self.id_column in (self.label_column, self.membership_column):
            raise KeyProblem("id_column", "another column than the label and membership "
                             "columns", self.id_column)
        features = self.feature_columns or []
        repeated = sorted({c for c in features if features.count(c) > 1})
        clash = sorted(set(features) & {self.label_column, self.membership_column,
                                        self.id_column})
        if repeated or clash:
            raise KeyProblem("feature_columns", "a list of distinct columns other than the "
                             "label, membership and id columns", repeated or clash)
        return self


class PopulationSection(Section):
    """``population``: records the model did not train on, with the same columns."""

    path: InputFile


class RecipeSection(BaseModel):
    """``reference.recipe``: a ``type`` and that recipe's own parameters."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["clone", "torch-mlp", "torch-cnn", "callable"] = "clone"


class ReferenceSection(Section):
    """``reference``: the pool of reference models."""

    n_models: NModels = 16
    mode: ReferenceMode = "auto"
    train_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None
    recipe: RecipeSection | None = None


class ExecutorSection(Section):
    """``executor``: where reference models train."""

    name: ExecutorName = "local"
    n_jobs: NJobs | None = None
    address: Name | None = None

    @model_validator(mode="after")
    def _address(self) -> ExecutorSection:
        if self.address is not None and self.name not in REMOTE_EXECUTORS:
            raise KeyProblem("address", f"left out unless 'name' is "
                             f"{' or '.join(REMOTE_EXECUTORS)}", self.address)
        return self


class ReportSection(Section):
    """``report``: where the report goes and its bootstrap."""

    out: OutputDir | None = None
    n_bootstrap: NBootstrap = 1000


class AuditFile(Section):
    """The sections every audit kind's configuration file shares.

    A kind subclasses it, adds its keys and may override a section with its own model.
    Optional sections left empty in the file (every key commented out reads as null) keep
    their defaults.
    """

    #: Top-level keys whose ``null`` means "the defaults".
    optional_sections: ClassVar[tuple[str, ...]] = ("reference", "executor", "report")

    target: TargetSection
    data: DataSection
    population: PopulationSection | None = None
    reference: ReferenceSection = Field(default_factory=ReferenceSection)
    executor: ExecutorSection = Field(default_factory=ExecutorSection)
    cache_dir: OutputDir | None = None
    random_state: Seed = 0
    report: ReportSection = Field(default_factory=ReportSection)

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, raw: Any) -> Any:
        if isinstance(raw, dict):
            optional = cls.optional_sections
            raw = {k: v for k, v in raw.items() if not (k in optional and v is None)}
        return raw


def given_keys(schema: BaseModel, *names: str) -> dict[str, Any]:
    """The keys of the top-level entries ``names`` written in the file, with their values.

    A section gives its own keys (``reference.n_models``), a plain key itself
    (``cache_dir``); defaults the file left out are not listed. For refusing keys that a
    run would not read.
    """
    out: dict[str, Any] = {}
    for name in names:
        if name not in schema.model_fields_set:
            continue
        value = getattr(schema, name)
        if isinstance(value, BaseModel):
            out.update({f"{name}.{k}": getattr(value, k) for k in type(value).model_fields
                        if k in value.model_fields_set})
        else:
            out[name] = value
    return out


def as_written(key: str, written: Mapping[str, str]) -> str:
    """``key`` (dotted, maybe below a moved key) as the file wrote it.

    ``written`` maps a new key to the old key the file used (:func:`move_renamed_keys`):
    ``reference.n_models`` is named ``game.n_shadow_runs`` when the file wrote that, and so
    is anything below it (``x.y[0]`` below a moved ``x.y``).
    """
    for new, old in written.items():
        if key == new or key.startswith((f"{new}.", f"{new}[")):
            return old + key[len(new):]
    return key


def _locate(raw: dict[str, Any], dotted: str) -> tuple[Any, str]:
    """The mapping holding ``dotted``'s last key (None if a step is missing), that key."""
    *path, last = dotted.split(".")
    node: Any = raw
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return (node if isinstance(node, dict) else None), last


def _place(raw: dict[str, Any], dotted: str, value: Any, source: str) -> None:
    """Write ``value`` at ``dotted``, making its sections (an empty one reads as null)."""
    *path, last = dotted.split(".")
    node = raw
    for i, part in enumerate(path):
        if node.get(part) is None:
            node[part] = {}
        if not isinstance(node[part], dict):
            raise key_error(".".join(path[:i + 1]), "a mapping (indented 'key: value' "
                            "lines)", node[part], source)
        node = node[part]
    node[last] = value


def move_renamed_keys(raw: dict[str, Any], renamed: Mapping[str, str], source: str
                      ) -> tuple[dict[str, Any], dict[str, str]]:
    """A file's mapping with each old key moved to its new key, and what was moved.

    Parameters
    ----------
    raw : dict
        The file's top-level mapping (not modified).
    renamed : mapping
        Old dotted key -> new dotted key (a schema's ``renamed_keys``).
    source : str
        The file, for the messages.

    Returns
    -------
    (dict, dict)
        The mapping with the new keys; new key -> the old key the file wrote.

    Raises
    ------
    ConfigError
        A file that writes both an old key and its new one.

    Each old key found warns once (:class:`FutureWarning`, "The 'secret' key of FILE is
    now called 'sensitive'"), for one release, as the API's renamed parameters do.
    """
    out = copy.deepcopy(raw)
    written: dict[str, str] = {}
    for old, new in renamed.items():
        holder, key = _locate(out, old)
        if holder is None or key not in holder:
            continue
        target, new_key = _locate(out, new)
        if target is not None and new_key in target:
            raise ConfigError(f"The {old!r} key of {source} is the old name of {new!r}, "
                              f"which is given too; keep {new!r} only.")
        warnings.warn(f"The {old!r} key of {source} is now called {new!r}; the old key "
                      "will be removed.", FutureWarning, stacklevel=3)
        _place(out, new, holder.pop(key), source)
        written[new] = old
    return out, written
