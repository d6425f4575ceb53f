"""``privaudit audit generator``: the configuration file and the run.

The configuration (``--config``, YAML) has these sections::

    data: {path: population.csv}        # the auxiliary data (CSV or Parquet)
    targets: {path: targets.csv}        # optional: the target records; or
    targets: {rows: [3, 17]}            # their row positions in the data; default: the
                                        # n_targets most vulnerable rows
    n_targets: 5                        # default 5; left out when targets are given
    generators:                         # one or more, of distinct names; each audited on
                                        # the same game
      - {name: dp, builtin: dp-bayes, params: {epsilon: 1.0}, claimed_epsilon: 1.0}
      - {name: copula, builtin: gaussian-copula}
      - {name: mine, callable: my_generators:train_and_sample}   # module:function,
                                        # run from its own file my_generators.py beside
                                        # the config (the folder is never on sys.path): a
                                        # function
                                        # or a generator object (fit/sample, fit/generate)
    reference: {n_models: 100}          # the shadow runs the attacks learn from (even)
    game: {n_train_rows: 1000, n_synthetic_rows: 1000, n_test_runs: 100,
           knowledge: auxiliary, reserved_fraction: 0.2}
    attacks: [groundhog, closest-distance, local-neighbourhood, domias]
    attack_params: {groundhog: {feature_sets: [naive, histogram]}}
    sensitive: income                   # optional: attribute inference of this column
    candidates: [low, high]             # its two values (default: the two most frequent)
    executor: {name: local, n_jobs: 2}  # or ray
    cache_dir: .privaudit-cache         # every synthetic table, reused by a rerun
    random_state: 0
    report: {out: generator-report, n_bootstrap: 1000}

Naming code (``callable``) is how the user opts in to running it; nothing is unpickled.
The keys are the API's names (issue 21's one vocabulary); the old keys
``game.n_shadow_runs``, ``game.reference_fraction``, ``secret`` and ``secret_values`` are
read as the new ones (``renamed_keys``) with a :class:`FutureWarning`, and errors name
the key the file wrote.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from privaudit.cli._errors import ConfigError, KeyProblem
from privaudit.cli._sections import (
    ExecutorSection,
    InputFile,
    Name,
    OutputDir,
    ReportSection,
    Section,
    Seed,
)

__all__ = ["GeneratorAuditFile", "load_generator_config", "run_generator_audit"]

TwoValues = Annotated[list[Any], Field(min_length=2, max_length=2)]
BuiltinName = Literal["independent-marginals", "gaussian-copula", "copying", "dp-bayes"]
#: Upper bounds of the game's sizes: beyond them a run takes days or the memory, with no
#: output; a mistyped 1000000000 is refused at once instead.
MAX_RUNS, MAX_ROWS = 100_000, 10_000_000
Runs = Annotated[int, Field(ge=2, le=MAX_RUNS, multiple_of=2)]
Rows = Annotated[int, Field(ge=1, le=MAX_ROWS)]
Fraction = Annotated[float, Field(ge=0.0, lt=1.0)]

#: The configuration key of each checked parameter of the API, by its name in
#: privaudit's one error template ("The 'p' parameter of F must be ...").
_PARAM_KEYS = {"auxiliary_data": "data.path", "targets": "targets", "n_targets": "n_targets",
               "n_train_rows": "game.n_train_rows",
               "n_synthetic_rows": "game.n_synthetic_rows", "n_runs": "game",
               "n_test_runs": "game.n_test_runs", "reference": "reference.n_models",
               "reserved_fraction": "game.reserved_fraction", "sensitive": "sensitive",
               "candidates": "candidates", "generator_params": "generators[{i}].params"}
#: The API parameters whose configuration keys were renamed (issue 21): their new keys.
_RENAMED_PARAMS = {"reference": "reference.n_models",
                   "reserved_fraction": "game.reserved_fraction",
                   "sensitive": "sensitive", "candidates": "candidates"}
#: Keys read together: param -> (its pair, its old key), for a file in the old words.
_OLD_PAIRS = {"candidates": ("sensitive", "secret_values"),
              "sensitive": ("candidates", "secret")}
#: Shadow runs when the file leaves them out (the API's DEFAULT_SHADOW_RUNS).
_DEFAULT_SHADOW_RUNS = 100
#: Functions whose parameters are a built-in generator's (``generators[i].params.<p>``).
_GENERATOR_FUNCS = ("DPBayesianNetwork", "copying_generator", "gaussian_copula",
                    "independent_marginals")


def _exactly_one(section: Any, first: str, second: str) -> Any:
    """``section`` if exactly one of its keys ``first`` and ``second`` is given."""
    if (getattr(section, first) is None) == (getattr(section, second) is None):
        raise ValueError(f"give exactly one of {first!r} and {second!r}")
    return section


class DataPath(Section):
    """``data``: the auxiliary data."""

    path: InputFile


class TargetsSection(Section):
    """``targets``: a table of target records, or row positions in the data."""

    path: InputFile | None = None
    rows: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> TargetsSection:
        rows = self.rows or []
        repeated = sorted({r for r in rows if rows.count(r) > 1})
        if repeated:
            raise KeyProblem("rows", f"distinct row positions (repeated: {repeated})", rows)
        return _exactly_one(self, "path", "rows")


class GeneratorEntry(Section):
    """One generator: a built-in name with its parameters, or ``module:function``."""

    name: Name
    builtin: BuiltinName | None = None
    callable: Name | None = None
    params: dict[Name, Any] = Field(default_factory=dict)
    claimed_epsilon: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> GeneratorEntry:
        return _exactly_one(self, "builtin", "callable")


class GameSection(Section):
    """``game``: the sizes of TAPAS's game."""

    n_train_rows: Rows | None = None
    n_synthetic_rows: Rows | None = None
    n_test_runs: Runs = 100
    knowledge: Literal["auxiliary", "exact"] = "auxiliary"
    reserved_fraction: Fraction = 0.2


class GeneratorReference(Section):
    """``reference``: the shadow runs the attacks learn from (the API's ReferenceSpec).

    Only their count: the game fixes the rest (each run trains the audited generator on
    ``game.n_train_rows`` rows, each target in half of the runs).
    """

    n_models: Runs = _DEFAULT_SHADOW_RUNS


class GeneratorAuditFile(Section):
    """The configuration of ``privaudit audit generator``."""

    #: Old keys, read as the new ones with a FutureWarning (issue 21's one vocabulary).
    renamed_keys: ClassVar[Mapping[str, str]] = {
        "game.n_shadow_runs": "reference.n_models",
        "game.reference_fraction": "game.reserved_fraction",
        "secret": "sensitive", "secret_values": "candidates"}

    data: DataPath
    targets: TargetsSection | None = None
    n_targets: Annotated[int, Field(ge=1)] | None = None
    generators: Annotated[list[GeneratorEntry], Field(min_length=1)]
    reference: GeneratorReference = Field(default_factory=GeneratorReference)
    game: GameSection = Field(default_factory=GameSection)
    attacks: list[Name] | None = None
    attack_params: dict[Name, dict[Name, Any]] = Field(default_factory=dict)
    sensitive: Name | None = None
    candidates: TwoValues | None = None
    executor: ExecutorSection = Field(default_factory=ExecutorSection)
    cache_dir: OutputDir | None = None
    random_state: Seed = 0
    report: ReportSection = Field(default_factory=ReportSection)

    @model_validator(mode="after")
    def _consistent(self) -> GeneratorAuditFile:
        names = [g.name for g in self.generators]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise KeyProblem("generators", "generators of distinct names (results are "
                             f"filed by name; repeated: {repeated})", names)
        if self.targets is not None and self.n_targets is not None:
            raise KeyProblem("n_targets", "left out when 'targets' is given (the targets "
                             "are then those records)", self.n_targets)
        self._check_attack_params()
        if self.candidates is not None and self.sensitive is None:
            raise KeyProblem("candidates", "left out unless 'sensitive' is given",
                             self.candidates)
        return self

    def written_keys(self) -> dict[str, str]:
        """The key the file wrote for each API parameter of a renamed key: old or new.

        A file in the old words (``secret``) is answered in them, its pair included
        (``secret_values``, even when left out), unless it wrote the pair's new key.
        """
        keys = {param: self.written_key(key) for param, key in _RENAMED_PARAMS.items()}
        for param, (other, old) in _OLD_PAIRS.items():
            if keys[other] != _RENAMED_PARAMS[other] and param not in self.model_fields_set:
                keys[param] = old
        return keys

    def _check_attack_params(self) -> None:
        """Known attack names; ``attack_params`` by the API's one check, named as keys."""
        from privaudit._validation import attack_params_problem
        from privaudit.attacks.generator import GENERATOR_ATTACKS
        from privaudit.audits import DEFAULT_GENERATOR_ATTACKS

        for i, name in enumerate(self.attacks or []):
            if name not in GENERATOR_ATTACKS:
                raise KeyProblem(f"attacks[{i}]", f"one of {sorted(GENERATOR_ATTACKS)}", name)
        problem = attack_params_problem(list(self.attacks or DEFAULT_GENERATOR_ATTACKS),
                                        self.attack_params, GENERATOR_ATTACKS.__getitem__)
        if problem is not None:
            raise KeyProblem(f"attack_params.{problem.key}", problem.expected, problem.got)


@dataclass
class GeneratorRun:
    """A checked configuration and the folder its relative paths are read from."""

    config: GeneratorAuditFile
    base: Path
    out: Path


def load_generator_config(path: str | Path) -> GeneratorRun:
    """Read and check the configuration file of ``privaudit audit generator``."""
    from privaudit.cli._reading import read_config

    path = Path(path)
    cfg = read_config(path, GeneratorAuditFile)
    return GeneratorRun(cfg, path.parent, _at(path.parent, cfg.report.out or "generator-report"))


def _at(base: Path, value: str) -> Path:
    return Path(value) if Path(value).is_absolute() else base / value


def _generator(entry: GeneratorEntry, base: Path, i: int) -> Any:
    from privaudit.cli._run import _import_object

    if entry.builtin is not None:
        return entry.builtin
    if entry.params:
        raise ConfigError(f"generators[{i}].params: only a built-in generator takes params "
                          "(bind a callable's own parameters in its module).")
    found = _import_object(entry.callable or "", base, f"generators[{i}].callable")
    from privaudit.training import GeneratorRecipe

    try:
        GeneratorRecipe(found, 1)  # the one check of what a generator may be
    except TypeError:
        if callable(found):
            raise ConfigError(f"generators[{i}].callable names {entry.callable!r}, which "
                              f"takes {_signature(found)}; expected a function "
                              "(train, n_rows, *, random_state) returning a DataFrame.") from None
        raise ConfigError(f"generators[{i}].callable names {entry.callable!r}, which is "
                          "neither callable nor an object with fit and sample (SDV) or fit "
                          "and generate (TAPAS).") from None
    return found


def _signature(function: Any) -> str:
    import inspect

    return str(inspect.signature(function))


def _as_key_error(exc: Exception, i: int, written: Mapping[str, str]) -> Exception:
    """An API check's error named by its configuration key (``_PARAM_KEYS``), or ``exc``.

    ``written`` maps each renamed parameter to the key the file wrote (old or new): the
    error, and the parameters its text quotes, are named so.
    """
    import re

    found = re.match(r"The '([\w\[\]'.]+)' parameter of (\w+) must be (.*)\. Got (.*) "
                     r"instead\.$", str(exc), flags=re.S)
    if found is None:
        return exc
    param, func, expected, got = found.groups()
    if func in _GENERATOR_FUNCS:
        key = f"generators[{i}].params.{param}"
    elif param in _PARAM_KEYS:
        key = written.get(param, _PARAM_KEYS[param]).format(i=i)
    else:
        return exc
    for renamed, as_written in written.items():
        expected = expected.replace(f"'{renamed}'", f"'{as_written}'")
    return ConfigError(f"The {key!r} key of the audit configuration must be {expected}. "
                       f"Got {got} instead.")


@contextmanager
def _named_by_keys(i: int, entry: GeneratorEntry,
                   written: Mapping[str, str]) -> Iterator[None]:
    """Errors of the audit of ``generators[i]`` named by the configuration's keys."""
    from privaudit.training import GeneratorRecipe

    try:
        yield
    except GeneratorRecipe.Failed as exc:
        raise ConfigError(f"generators[{i}].callable ({entry.callable or entry.builtin!r}) "
                          f"failed on {exc}") from exc
    except (TypeError, ValueError) as exc:
        named = _as_key_error(exc, i, written)
        if named is exc:
            raise
        raise named from exc


def _check_sizes(cfg: GeneratorAuditFile, n_rows: int) -> None:
    """Refuse a game the data cannot hold, in the data's and the keys' terms."""
    rows = cfg.targets.rows if cfg.targets is not None else None
    if rows and max(rows) >= n_rows:
        outside = [r for r in rows if r >= n_rows][:5]
        raise ConfigError(f"targets.rows: data.path has {n_rows} rows (positions 0.."
                          f"{n_rows - 1}); got the positions {outside}.")
    in_data = 0 if cfg.targets is not None and rows is None else (
        len(rows) if rows else cfg.n_targets or 5)
    rest = n_rows - in_data
    fraction = cfg.game.reserved_fraction
    pool = rest - round(fraction * rest)
    need = cfg.game.n_train_rows or 1
    key = cfg.written_keys()["reserved_fraction"]
    if n_rows < 4 or pool < max(need, 1):
        raise ConfigError(f"data.path has {n_rows} rows; the game needs {in_data} target "
                          f"row{'s' if in_data != 1 else ''} plus {key}={fraction} of the "
                          f"rest plus game.n_train_rows={need} training rows (more rows, or "
                          f"smaller game.n_train_rows, n_targets or {key}).")


def run_generator_audit(run: GeneratorRun, *, progress: Any = None) -> Path:
    """Read the data, audit every generator on the same game, write one report."""
    from privaudit.audits import audit_generator
    from privaudit.cli._datafiles import _read_table
    from privaudit.report import build_report
    from privaudit.training import ReferenceSpec, get_executor

    cfg, base = run.config, run.base
    executor = get_executor(cfg.executor.name, n_jobs=cfg.executor.n_jobs,
                            address=cfg.executor.address, func="audit generator")
    data_path = _at(base, cfg.data.path)
    data = _read_table(data_path, role="data", key="data.path").frame
    targets: Any = None
    if cfg.targets is not None and cfg.targets.path is not None:
        targets = _read_table(_at(base, cfg.targets.path), role="targets",
                              key="targets.path").frame
    elif cfg.targets is not None:
        targets = cfg.targets.rows
    _check_sizes(cfg, len(data))
    generators = [_generator(entry, base, i) for i, entry in enumerate(cfg.generators)]
    game, written = cfg.game, cfg.written_keys()
    results: list[Any] = []
    for i, (entry, generator) in enumerate(zip(cfg.generators, generators, strict=True)):
        with _named_by_keys(i, entry, written):
            results += audit_generator(
                generator, data, targets=targets, n_targets=cfg.n_targets,
                reference=ReferenceSpec(n_models=cfg.reference.n_models),
                n_train_rows=game.n_train_rows, n_synthetic_rows=game.n_synthetic_rows,
                n_test_runs=game.n_test_runs, knowledge=game.knowledge,
                reserved_fraction=game.reserved_fraction, attacks=cfg.attacks,
                attack_params=cfg.attack_params or None,
                generator_params=entry.params or None, claimed_epsilon=entry.claimed_epsilon,
                sensitive=cfg.sensitive, candidates=cfg.candidates,
                name=entry.name, dataset=data_path.name, random_state=cfg.random_state,
                executor=executor,
                cache_dir=None if cfg.cache_dir is None else _at(base, cfg.cache_dir),
                results_dir=run.out / "results", progress=progress)
    names = ", ".join(e.name for e in cfg.generators)
    # The audits saved every result once in out/results (one folder per generator,
    # target and attack, reused by a rerun): the report does not file them again.
    return build_report(results, run.out, n_bootstrap=cfg.report.n_bootstrap,
                        progress=progress, random_state=cfg.random_state,
                        title=f"Privacy audit of the generators {names}",
                        save_results=False)
