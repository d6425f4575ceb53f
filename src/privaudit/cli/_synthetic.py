"""``privaudit audit synthetic``: the tables, the configuration file form, the run.

Tables are CSV or Parquet files with the same columns; the metadata (optional) is a JSON
file in SDV's single-table form. Every problem names the file (and the key).

The configuration file form (``--config``) has these sections::

    tables: {target: S.csv, original: O.csv, holdout: H.csv, control: C.csv}
    metadata: M.json                           # optional: inferred from the original
    name: my-generator                         # the synthetic table's name in the report
    checks: [exact-matches, ims, dcr, nndr, distinguishability, singling-out-univariate,
             singling-out-multivariate, linkability, inference]
    check_params: {dcr: {quantile: 0.05}, inference: {secrets: [income]}}
    random_state: 0
    executor: {name: local, n_jobs: 2}         # where the nearest-neighbour scans run
    cache_dir: CACHE                           # the text checks' embeddings, computed once
    report: {out: DIR, n_bootstrap: 1000}

The names are the API's (:func:`privaudit.audit_synthetic`): the synthetic table is the
``target``; check names are kebab-case. The old names (``tables.synthetic``,
``exact_matches``, ``singling_out_univariate``...) still work, in the file and in
``--checks``, with a one-line warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from privaudit.cli._errors import ConfigError
from privaudit.cli._sections import (
    ExecutorSection,
    InputFile,
    Name,
    OutputDir,
    ReportSection,
    Section,
    Seed,
)

if TYPE_CHECKING:  # pandas and the synthetic engines load when a command runs
    import pandas as pd

    from privaudit.synthetic import TableMetadata

__all__ = ["SyntheticAuditFile", "SyntheticRun", "load_synthetic_config", "run_synthetic_audit",
           "synthetic_run"]


class TablesSection(Section):
    """``tables``: the synthetic table (``target``), its training data, unseen records."""

    target: InputFile
    original: InputFile
    holdout: InputFile | None = None
    control: InputFile | None = None



class SyntheticAuditFile(Section):
    """The configuration of ``privaudit audit synthetic``."""

    #: Old key -> the API's name (read with a FutureWarning by ``read_config``).
    renamed_keys: ClassVar[Mapping[str, str]] = {"tables.synthetic": "tables.target"}

    tables: TablesSection
    metadata: InputFile | None = None
    name: Name | None = None
    checks: list[Name] | None = None
    check_params: dict[Name, dict[Name, Any]] = Field(default_factory=dict)
    random_state: Seed = 0
    executor: ExecutorSection = Field(default_factory=ExecutorSection)
    cache_dir: OutputDir | None = None
    report: ReportSection = Field(default_factory=ReportSection)


@dataclass
class SyntheticRun:
    """What ``privaudit audit synthetic`` runs, from its options or its configuration."""

    tables: dict[str, Path]
    metadata: Path | None = None
    name: str | None = None
    checks: list[str] | None = None
    check_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    random_state: int = 0
    out: Path = Path("synthetic-audit-report")
    n_bootstrap: int = 1000
    executor: str = "local"
    n_jobs: int | None = None
    address: str | None = None
    cache_dir: Path | None = None


def load_synthetic_config(path: str | Path) -> SyntheticRun:
    """Read and check the configuration file of ``privaudit audit synthetic``."""
    from privaudit.cli._reading import read_config

    path = Path(path)
    cfg = read_config(path, SyntheticAuditFile)
    base = path.parent

    def at(value: str) -> Path:
        return Path(value) if Path(value).is_absolute() else base / value

    tables = {("synthetic" if k == "target" else k): at(v)  # the --synthetic option's key
              for k, v in cfg.tables.model_dump().items() if v is not None}
    return SyntheticRun(
        tables=tables, metadata=None if cfg.metadata is None else at(cfg.metadata),
        name=cfg.name,
        checks=None if cfg.checks is None else _check_names(cfg.checks, f"checks (in {path})"),
        check_params=_check_param_names(cfg.check_params, f"check_params (in {path})"),
        random_state=cfg.random_state,
        out=at(cfg.report.out or "synthetic-audit-report"), n_bootstrap=cfg.report.n_bootstrap,
        executor=cfg.executor.name, n_jobs=cfg.executor.n_jobs, address=cfg.executor.address,
        cache_dir=None if cfg.cache_dir is None else at(cfg.cache_dir))


def synthetic_run(config: Path | None, *, tables: dict[str, Path | None],
                  metadata: Path | None, checks: str | None) -> SyntheticRun:
    """The run the command-line options (or ``--config``) describe; one-line errors."""
    given = {k: v for k, v in tables.items() if v is not None}
    if config is not None:
        if given or metadata is not None:
            raise ConfigError("Give either --config or the tables, not both.")
        return load_synthetic_config(config)
    for key in ("synthetic", "original"):
        if key not in given:
            raise ConfigError(f"Missing option --{key} (a CSV or Parquet file), or --config.")
    names = None if checks is None else _check_names(checks.split(","), "--checks")
    return SyntheticRun(tables=given, metadata=metadata, checks=names)


def _canonical(names: list[str], where: str) -> list[str]:
    """``names`` in kebab-case; an old name warns once (one line), naming ``where``."""
    from privaudit._validation import canonical_names

    return canonical_names(names, param=where, func="privaudit audit synthetic")


def _check_param_names(params: dict[str, dict[str, Any]], where: str
                       ) -> dict[str, dict[str, Any]]:
    """``check_params`` keyed by the checks' kebab-case names (old names warn)."""
    keys = _canonical(list(params), where)
    return dict(zip(keys, params.values(), strict=True))


def _check_names(names: list[str], where: str) -> list[str]:
    """The checks named (``where`` is the option or key): known, each once, at least one."""
    from privaudit.audits import SYNTHETIC_CHECKS

    names = _canonical([n.strip() for n in names], where)
    known = ", ".join(SYNTHETIC_CHECKS)
    if not any(names):
        raise ConfigError(f"{where} names no check; give one or more of: {known}.")
    for n in names:
        if n not in SYNTHETIC_CHECKS:
            raise ConfigError(f"{where} names {n!r}, not a check; the checks are: {known}.")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"{where} names {repeated} more than once; name each check once.")
    return names


def _read(run: SyntheticRun) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """The tables and how errors name them (e.g. "synthetic file 's.csv'")."""
    from privaudit.cli._datafiles import _read_table, check_finite

    _check_paths(run.tables)
    frames, labels = {}, {}
    for key, path in run.tables.items():
        table = _read_table(path, role=key, key=f"tables.{key}")
        check_finite(table)
        frames[key], labels[key] = table.frame, f"{key} file {str(path)!r}"
    columns = list(frames["original"].columns)
    for key, frame in frames.items():
        if sorted(map(str, frame.columns)) != sorted(map(str, columns)):
            missing = sorted(set(map(str, columns)) - set(map(str, frame.columns)))
            extra = sorted(set(map(str, frame.columns)) - set(map(str, columns)))
            raise ConfigError(f"The {key} table {str(run.tables[key])!r} must have the "
                              f"original table's columns (missing {missing[:5]}, extra "
                              f"{extra[:5]}).")
    return frames, labels


def _check_paths(tables: dict[str, Path]) -> None:
    """Refuse a folder, a missing file, or the holdout / control given as the original."""
    for key, path in tables.items():
        if path.is_dir():
            raise ConfigError(f"--{key} {str(path)!r} is a folder; give a CSV or Parquet file.")
        if not path.is_file():
            raise ConfigError(f"The {key} table {str(path)!r} does not exist.")
    for key in ("holdout", "control"):
        if key in tables and tables[key].resolve() == tables["original"].resolve():
            raise ConfigError(f"--{key} and --original are the same file "
                              f"{str(tables[key])!r}: the {key} must be real records the "
                              "generator never saw.")


def _read_metadata(path: Path | None) -> TableMetadata | None:
    """The metadata file read (None when not given); errors name --metadata."""
    from privaudit.synthetic import TableMetadata

    if path is None:
        return None
    try:
        return TableMetadata.read(path)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"--metadata: {exc}") from None


def _check_columns(metadata: TableMetadata | None, frames: dict[str, pd.DataFrame],
                   labels: dict[str, str]) -> None:
    """Every table against the metadata (or the types inferred from the original)."""
    from privaudit.synthetic import TableMetadata

    meta = metadata or TableMetadata.infer(frames["original"])
    for key, frame in frames.items():
        try:
            meta.check_frame(frame, labels[key])
            meta.check_values(frame, labels[key])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def run_synthetic_audit(run: SyntheticRun, *, progress: Any = None) -> Path:
    """Read the tables, run :func:`privaudit.audit_synthetic`, write the report."""
    from privaudit.audits import audit_synthetic
    from privaudit.report import build_report

    metadata = _read_metadata(run.metadata)
    frames, labels = _read(run)
    _check_columns(metadata, frames, labels)
    name = run.name or run.tables["synthetic"].stem
    results = audit_synthetic(
        frames["synthetic"], frames["original"], holdout=frames.get("holdout"),
        control=frames.get("control"), metadata=metadata, checks=run.checks,
        check_params=run.check_params or None, name=name,
        dataset=run.tables["original"].name, random_state=run.random_state,
        executor=run.executor, n_jobs=run.n_jobs, address=run.address,
        cache_dir=run.cache_dir, results_dir=run.out / "results", progress=progress)
    return build_report(results, run.out, n_bootstrap=run.n_bootstrap, progress=progress,
                        random_state=run.random_state,
                        title=f"Privacy audit of the synthetic table {name}")
