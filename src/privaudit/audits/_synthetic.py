"""``audit_synthetic``: the privacy checks of a synthetic table, on the audit template.

:class:`SyntheticAudit` is the kind and :func:`~privaudit.audits._template.drive` its
loop: the run options and :class:`SyntheticSettings` are checked before any work, then the
tables; each check's result is keyed (the tables' digests, the metadata, the seed and the
check's own parameters), reused from the results store by a rerun, compared with its
baseline (:class:`SyntheticBaseline`: the holdout for the closeness checks, the control
set for the anonymeter risks, a coin flip for distinguishability), and saved atomically as
it finishes. The checks themselves are the kind's registry,
:data:`~privaudit.audits._synthetic_risks.SYNTHETIC_REGISTRY`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import (
    MAPPING,
    NAMES,
    NONE,
    STR,
    canonical_name,
    canonical_names,
    check_fraction,
    param_error,
    renamed,
)
from privaudit.audits._baselines import RandomGuessBaseline
from privaudit.audits._run import AuditRun
from privaudit.audits._synthetic_risks import (
    SYNTHETIC_REGISTRY,
    CheckResult,
    SyntheticTables,
    check_of,
    inference_secrets,
)
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive
from privaudit.results import BaselineCheck, ProximityResult

if TYPE_CHECKING:  # pandas (and pyarrow behind it) load when an audit runs
    import pandas as pd

    from privaudit.report import AuditReport
    from privaudit.synthetic import TableMetadata

    #: How metadata may be given: the object, SDV's single-table dict, a path to its JSON.
    MetadataLike = TableMetadata | Mapping[str, Any] | str | os.PathLike[str] | None

__all__ = [
    "DEFAULT_SYNTHETIC_CHECKS",
    "SYNTHETIC_CHECKS",
    "SyntheticAudit",
    "SyntheticBaseline",
    "SyntheticSettings",
    "audit_synthetic",
]

_FUNC = "audit_synthetic"

#: Every check audit_synthetic runs, in report order (kebab-case; the old snake_case
#: names are accepted with a FutureWarning).
SYNTHETIC_CHECKS: tuple[str, ...] = tuple(SYNTHETIC_REGISTRY)
#: Run when ``checks`` is None (text-memorization only when the table has text columns).
DEFAULT_SYNTHETIC_CHECKS = SYNTHETIC_CHECKS


class SyntheticBaseline:
    """Each synthetic-data result against the baseline its check declares.

    - ``"holdout"`` (the closeness checks, :class:`~privaudit.results.ProximityResult`):
      the holdout (real records the generator never saw); the check "beats the baseline"
      (a leak) when the synthetic rows are closer to the training rows than the holdout
      rows are. Undecided without a holdout.
    - ``"control"`` (the anonymeter risks, :class:`~privaudit.results.RiskResult`): the
      control set; a leak when the residual risk's interval lies above 0 (without a
      control: the attack beats random guessing).
    - ``"random-guess"`` (distinguishability, and any result of another name): a coin
      flip, as :class:`RandomGuessBaseline`.

    The check is found from the result's name (:data:`SYNTHETIC_REGISTRY`).
    """

    name = "holdout-or-control"

    def __init__(self, n_bootstrap: int = 200) -> None:
        self.random_guess = RandomGuessBaseline(n_bootstrap=n_bootstrap)

    def check(self, result: Any, random_state: int) -> BaselineCheck | None:
        check = SYNTHETIC_REGISTRY.get(canonical_name(check_of(str(result.attack))))
        baseline = "random-guess" if check is None else check.baseline
        if baseline == "holdout":
            base = result.baseline_value()
            return BaselineCheck(
                "holdout", None if result.passed is None else not result.passed,
                {"baseline_value": None if base is None else base._asdict()})
        if baseline == "control":
            if result.control_rate is None:
                return BaselineCheck("random-guess", result.better_than_baseline,
                                     {"baseline_rate": result.baseline_rate._asdict()})
            return BaselineCheck("control", bool(result.risk().low > 0),
                                 {"control_rate": result.control_rate._asdict()})
        return self.random_guess.check(result, random_state)


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class SyntheticSettings(AuditSettings):
    """What a synthetic-data audit does, checked before any work.

    ``checks`` are kebab-case names of :data:`SYNTHETIC_CHECKS` (None: every check that
    applies); ``check_params`` overrides each check's defaults; ``name`` names the
    audited synthetic table (the target) in results and reports.
    """

    checks: tuple[str, ...] | None = None
    check_params: Mapping[str, Mapping[str, Any]] | None = None
    name: str = "synthetic"

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "checks": [NONE, NAMES], "check_params": [NONE, MAPPING], "name": [STR]}
    #: None changes a number: each result's own key holds its check's name and
    #: parameters (changing one check's parameters reuses the others' results), and
    #: ``name`` only says where the results are filed.
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({"checks", "check_params", "name"})

    def check(self, func: str) -> None:
        """The declared rules, then the names and parameters of the checks."""
        super().check(func)
        if self.checks is not None:
            _check_names(list(self.checks), func)
        _check_params(self.checks, dict(self.check_params or {}), func)

    def planned(self, has_text: bool) -> dict[str, dict[str, Any]]:
        """The checks to run, in order, each with its parameters (defaults overridden)."""
        names = self.checks
        if names is None:
            names = tuple(c for c, check in SYNTHETIC_REGISTRY.items()
                          if has_text or not check.needs_text)
        given = dict(self.check_params or {})
        return {n: {**SYNTHETIC_REGISTRY[n].defaults, **given.get(n, {})} for n in names}


def _check_names(names: list[str], func: str) -> None:
    for name in names:
        if name not in SYNTHETIC_REGISTRY:
            raise param_error("checks", func, f"names among {list(SYNTHETIC_CHECKS)}", name)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise param_error("checks", func, "each check named once", repeated)


def _check_params(checks: Sequence[str] | None, given: dict[str, Any], func: str) -> None:
    """Each check's parameters: known keys, of checks that run, fractions in (0, 1)."""
    stray = sorted(set(given) - set(SYNTHETIC_REGISTRY if checks is None else checks))
    if stray:
        raise param_error("check_params", func, "parameters of the checks run only", stray)
    for name, own in given.items():
        param = f"check_params[{name!r}]"
        if not isinstance(own, Mapping):
            raise param_error(param, func, "a mapping of parameter to value", own,
                              error=TypeError)
        check = SYNTHETIC_REGISTRY[name]
        unknown = set(own) - set(check.defaults)
        if unknown:
            raise param_error(param, func, f"keys among {sorted(check.defaults)}",
                              sorted(unknown))
        for key in check.fractions:
            if key in own:
                check_fraction(own[key], param=f"{param}[{key!r}]", func=func)


# --------------------------------------------------------------------------- tables


def _check_table(table: Any, param: str) -> pd.DataFrame | None:
    import pandas as pd

    if table is None and param in ("holdout", "control"):
        return None
    if not isinstance(table, pd.DataFrame):
        raise param_error(param, _FUNC, "a pandas DataFrame", f"<{type(table).__name__}>",
                          error=TypeError)
    if len(table) == 0:
        raise param_error(param, _FUNC, "a table with rows", "<an empty table>")
    return table.reset_index(drop=True)


def _metadata(metadata: MetadataLike, original: pd.DataFrame) -> TableMetadata:
    from privaudit.synthetic import TableMetadata

    if metadata is None:
        return TableMetadata.infer(original)
    if isinstance(metadata, TableMetadata):
        return metadata
    if isinstance(metadata, (str, os.PathLike)):
        return TableMetadata.read(metadata)
    return TableMetadata.from_dict(metadata)


def _check_disjoint(table: pd.DataFrame | None, original: pd.DataFrame, param: str) -> None:
    """Refuse a holdout or control set that is mostly training rows."""
    from privaudit._rows import rows_found_in

    if table is None:
        return
    shared = float(rows_found_in(table, original).mean())
    if shared > 0.5:
        raise param_error(param, _FUNC, "real records NOT used to train the generator (a "
                          "baseline made of training rows would let any copy pass)",
                          f"<{shared:.0%} of its rows are training rows>")


def check_tables(target: pd.DataFrame | None, original: pd.DataFrame | None,
                 holdout: pd.DataFrame | None, control: pd.DataFrame | None,
                 metadata: MetadataLike) -> SyntheticTables:
    """The audit's tables, checked, with their metadata (inferred when not given).

    ``target`` is the synthetic table; errors name it ``'target'``.
    """
    tables = {name: _check_table(t, name) for name, t in (
        ("target", target), ("original", original), ("holdout", holdout),
        ("control", control))}
    meta = _metadata(metadata, tables["original"])
    for name, table in tables.items():
        if table is not None:
            label = "synthetic" if name == "target" else name
            meta.check_frame(table, f"{label} table")
            meta.check_values(table, f"{label} table")
            _check_finite(table, label)
    for name in ("holdout", "control"):
        _check_disjoint(tables[name], tables["original"], name)
    control_source = "control" if tables["control"] is not None else "holdout"
    return SyntheticTables(
        tables["target"], tables["original"], tables["holdout"],
        tables["control"] if tables["control"] is not None else tables["holdout"],
        meta, control_source)


def _check_finite(table: pd.DataFrame, name: str) -> None:
    """Refuse infinite numbers, naming the table, the column and the first row."""
    for column in table.columns:
        values = table[column]
        if values.dtype.kind != "f":  # only floats hold inf (pandas reads "inf" as one)
            continue
        bad = np.flatnonzero(np.isinf(values.to_numpy(dtype=float, na_value=np.nan)))
        if len(bad):
            raise ValueError(f"The {name} table's column {column!r} holds infinite values "
                             f"({len(bad)} row(s), first at row {bad[0]} from 0): replace "
                             "them with finite numbers or leave them missing.")


def check_sizes(tables: SyntheticTables, params: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse, before any work, a table too small for a check: in the user's terms."""
    for check in params:
        for need in SYNTHETIC_REGISTRY[check].min_rows:
            n = max(need.minimum, int(params[check][need.param]) if need.param
                    else need.minimum)
            rows = len(getattr(tables, need.table))
            if rows >= n:
                continue
            fix = f"lower check_params[{check!r}][{need.param!r}], " if need.param else ""
            raise ValueError(f"The {need.table} table has {rows} row{'s' * (rows != 1)}; "
                             f"{check} needs at least {n} ({need.why}): give a larger "
                             f"table, {fix}or leave {check} out of the checks.")


# --------------------------------------------------------------------------- the kind


@dataclass(frozen=True)
class SyntheticJob(Job):
    """One result of a check: the check's name, and the secret column of an inference.

    The smallest extension of :class:`~privaudit.audits._template.Job` for a check that
    gives one result per secret column (``inference:<column>``).
    """

    check: str = ""
    secret: str | None = None


class SyntheticAudit(AuditKind):
    """The synthetic-data audit kind: a synthetic table against its training records.

    DCR and NNDR share one nearest-neighbour search (per quantile), made on first use.
    """

    kind = "synthetic"
    func = _FUNC
    Settings = SyntheticSettings
    description = "Checks"

    def __init__(self, target: pd.DataFrame | None, original: pd.DataFrame | None, *,
                 holdout: pd.DataFrame | None, control: pd.DataFrame | None,
                 metadata: MetadataLike, settings: SyntheticSettings,
                 options: RunOptions) -> None:
        super().__init__(settings, options)
        self.settings: SyntheticSettings = settings
        self.tables = check_tables(target, original, holdout, control, metadata)
        has_text = bool(self.tables.metadata.text)
        for name in settings.checks or ():
            if SYNTHETIC_REGISTRY[name].needs_text and not has_text:
                raise param_error("checks", _FUNC, f"{name} only with text columns in the "
                                  "metadata", name)
        self.params = settings.planned(has_text)
        check_sizes(self.tables, self.params)
        self.jobs = self._jobs()  # the secret columns checked here, before any work
        self._closeness: dict[float, Sequence[ProximityResult]] = {}

    # --- what the checks read ----------------------------------------------------------
    @property
    def provenance(self) -> dict[str, str]:
        return {"target": self.settings.name, "dataset": self.options.dataset}

    @property
    def random_state(self) -> int:
        return int(self.options.random_state)

    @property
    def parallel(self) -> dict[str, Any]:
        # The name as given (or the caller's executor object): the neighbour searches
        # start workers only when the work is large enough to be worth them.
        return {"executor": self.options.executor, "n_jobs": self.options.n_jobs}

    @property
    def cache_dir(self) -> str | Path | None:
        return self.options.cache_dir

    def closeness(self, quantile: float) -> Sequence[ProximityResult]:
        """DCR and NNDR at ``quantile``, from one search made on first use."""
        from privaudit.synthetic import closeness_checks

        if quantile not in self._closeness:
            t = self.tables
            self._closeness[quantile] = closeness_checks(
                t.synthetic, t.original, t.holdout, metadata=t.metadata, quantile=quantile,
                random_state=self.random_state, progress=self.options.progress,
                **self.parallel, **self.provenance)
        return self._closeness[quantile]

    # --- the template ------------------------------------------------------------------
    @property
    def labels(self) -> NDArray[np.float64]:
        """A labelled result's labels: synthetic rows 1, original rows 0."""
        t = self.tables
        return np.r_[np.ones(len(t.synthetic)), np.zeros(len(t.original))]

    def consistent(self, job: Job) -> NDArray[np.float64] | Callable[[CheckResult], bool]:
        if isinstance(job, SyntheticJob) and SYNTHETIC_REGISTRY[job.check].labelled:
            return self.labels
        return _any_saved  # counts and per-row arrays: the run key already names the tables

    def target_name(self) -> str:
        return self.settings.name

    def identity(self) -> tuple[Any, ...]:
        return self.tables.digest()

    def baseline(self) -> SyntheticBaseline:
        return SyntheticBaseline()

    def plan(self) -> list[Job]:
        return list(self.jobs)

    def _jobs(self) -> list[Job]:
        """One job per result: per check, or per secret column of a per-secret check."""
        jobs: list[Job] = []
        for check, params in self.params.items():
            parts = (*sorted((k, repr(v)) for k, v in params.items()),
                     self.tables.control_source)
            secrets: list[str | None] = [None]
            if SYNTHETIC_REGISTRY[check].per_secret:
                secrets = list(inference_secrets(self.tables, params))
            for secret in secrets:
                name = check if secret is None else f"{check}:{secret}"
                jobs.append(SyntheticJob(name, params, parts, len(jobs), check, secret))
        return jobs

    def run_job(self, job: Job, run: AuditRun) -> CheckResult:
        if not isinstance(job, SyntheticJob):
            raise TypeError(f"{type(self).__name__} runs SyntheticJob, not "
                            f"{type(job).__name__}")
        run.say(f"{self.settings.name}: {job.name}")
        return SYNTHETIC_REGISTRY[job.check].run(self, job.params, job.secret)

    def report(self, results: list[Any]) -> AuditReport:
        from privaudit.report import AuditReport

        # No baseline artefact of its own: each result carries its baseline's numbers.
        return AuditReport(results, kind=self.kind, func=self.func)


def _any_saved(saved: CheckResult) -> bool:
    return True


# --------------------------------------------------------------------------- the function


def _canonical_checks(checks: Any, check_params: Any) -> tuple[Any, Any]:
    """``checks`` and ``check_params``'s keys in kebab-case (old names: a FutureWarning)."""
    if isinstance(checks, str):
        checks = [checks]
    elif hasattr(checks, "__iter__") and not isinstance(checks, Mapping):
        checks = list(checks)
    checks = canonical_names(checks, param="checks", func=_FUNC, stacklevel=4)
    if isinstance(check_params, Mapping):
        keys = canonical_names(list(check_params), param="check_params", func=_FUNC,
                               stacklevel=4)
        check_params = dict(zip(keys, check_params.values(), strict=True))
    return (tuple(checks) if isinstance(checks, list) else checks), check_params


def audit_synthetic(
    target: pd.DataFrame | None = None,
    original: pd.DataFrame | None = None,
    *,
    holdout: pd.DataFrame | None = None,
    control: pd.DataFrame | None = None,
    metadata: MetadataLike = None,
    checks: Sequence[str] | None = None,
    check_params: Mapping[str, Mapping[str, Any]] | None = None,
    name: str = "synthetic",
    dataset: str = "",
    random_state: int = 0,
    executor: Any = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    cache_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    progress: Any = None,
    synthetic: pd.DataFrame | None = None,
) -> AuditReport:
    """Audit a synthetic table against the records it was generated from.

    Parameters
    ----------
    target : DataFrame
        The synthetic table (the audited artefact).
    original : DataFrame
        The real records the generator was trained on.
    holdout : DataFrame, optional
        Real records from the same source that the generator never saw: the baseline of
        the closeness checks (exact matches, IMS, DCR, NNDR). Without it those checks
        report their numbers undecided (a ``no-holdout`` finding) instead of inventing a
        baseline.
    control : DataFrame, optional
        anonymeter's control set (records not used for training); default: the holdout.
    metadata : TableMetadata, dict (SDV single-table form), path to its JSON, optional
        Column kinds; inferred from ``original`` when not given. Id columns are left out,
        text columns go to the text checks and the distinguisher only.
    checks : sequence of str, optional
        Among :data:`SYNTHETIC_CHECKS` (default: all that apply), kebab-case
        (``"exact-matches"``; the old ``"exact_matches"`` works with a FutureWarning).
    check_params : mapping, optional
        Per check, parameters overriding the defaults (e.g. ``{"dcr": {"quantile": 0.01},
        "linkability": {"aux_cols": [["age"], ["zip"]]}}``).
    name : str, default="synthetic"
        Name of the synthetic table (the target) in results and reports.
    random_state, executor, n_jobs, address, cache_dir, results_dir, dataset, progress
        The run options every audit takes (:class:`~privaudit.audits.RunOptions`): the
        seed (same seed, same numbers, whatever ``n_jobs``), where the nearest-neighbour
        scans run (see :func:`~privaudit.synthetic.nearest_neighbors`), where results are
        saved and reused, the source data's name, where progress goes. Nothing is
        trained: ``cache_dir`` caches the text checks' embeddings.
    synthetic : DataFrame
        Old name of ``target`` (a :class:`FutureWarning`; removed in a later release).

    Returns
    -------
    AuditReport
        :class:`~privaudit.results.ProximityResult` (exact matches, IMS, DCR, NNDR, text
        memorisation), :class:`~privaudit.results.AttackResult` (distinguishability) and
        :class:`~privaudit.results.RiskResult` (singling out, linkability, one inference
        per secret column), in the order of ``checks`` (iterate it as a list). Each
        result carries its baseline's numbers; there is no separate baseline artefact.
    """
    target = renamed(synthetic, "synthetic", target, "target", None, func=_FUNC,
                     category=FutureWarning)
    checks, check_params = _canonical_checks(checks, check_params)
    options = RunOptions.checked(
        _FUNC, random_state=random_state, executor=executor, n_jobs=n_jobs,
        address=address, cache_dir=cache_dir, results_dir=results_dir, progress=progress,
        dataset=dataset)
    settings = SyntheticSettings(checks=checks, check_params=check_params, name=name)
    return drive(SyntheticAudit(target, original, holdout=holdout, control=control,
                                metadata=metadata, settings=settings, options=options))
