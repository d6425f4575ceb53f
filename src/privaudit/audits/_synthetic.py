"""``audit_synthetic``: the privacy checks of a synthetic table, on the audit spine.

Validate -> plan -> loop, as every audit kind: the tables and settings are checked before
any work, each check's result is keyed (the tables' digests, the metadata, the seed and
the check's own parameters), reused from the results store by a rerun, compared with its
baseline (:class:`SyntheticBaseline`: the holdout for the closeness checks, the control
set for the anonymeter risks, a coin flip for distinguishability), and saved atomically as
it finishes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit._validation import check_fraction, param_error
from privaudit.audits._baselines import RandomGuessBaseline
from privaudit.audits._run import AuditRun
from privaudit.results import AttackResult, BaselineCheck, ProximityResult, RiskResult

if TYPE_CHECKING:  # pandas (and pyarrow behind it) load when an audit runs
    import pandas as pd

__all__ = [
    "DEFAULT_SYNTHETIC_CHECKS",
    "SYNTHETIC_CHECKS",
    "SyntheticBaseline",
    "audit_synthetic",
]

_FUNC = "audit_synthetic"

#: Every check audit_synthetic runs, in report order.
SYNTHETIC_CHECKS = ("exact_matches", "ims", "dcr", "nndr", "distinguishability",
                    "singling_out_univariate", "singling_out_multivariate", "linkability",
                    "inference", "text_memorization")
#: Run when ``checks`` is None (text_memorization only when the table has text columns).
DEFAULT_SYNTHETIC_CHECKS = SYNTHETIC_CHECKS

#: Each check's parameters and their defaults (``check_params`` overrides them).
_DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "exact_matches": {}, "ims": {},
    "dcr": {"quantile": 0.05}, "nndr": {"quantile": 0.05},
    "distinguishability": {"n_estimators": 100, "n_splits": 5, "max_text_features": 1000},
    "singling_out_univariate": {"n_attacks": 500},
    "singling_out_multivariate": {"n_attacks": 500, "n_cols": 3},
    "linkability": {"n_attacks": 500, "aux_cols": None, "n_neighbors": 10},
    "inference": {"n_attacks": 500, "secrets": None, "aux_cols": None},
    "text_memorization": {"quantile": 0.05, "similarity": 0.95},
}


class SyntheticBaseline:
    """Each synthetic-data result against the baseline its kind calls for.

    - :class:`~privaudit.results.ProximityResult`: the holdout (real records the generator
      never saw); the check "beats the baseline" (a leak) when the synthetic rows are
      closer to the training rows than the holdout rows are. Undecided without a holdout.
    - :class:`~privaudit.results.RiskResult`: the control set; a leak when the residual
      risk's interval lies above 0 (without a control: the attack beats random guessing).
    - :class:`~privaudit.results.AttackResult` (distinguishability): a coin flip, as
      :class:`RandomGuessBaseline`.
    """

    name = "holdout-or-control"

    def __init__(self, n_bootstrap: int = 200) -> None:
        self.random_guess = RandomGuessBaseline(n_bootstrap=n_bootstrap)

    def check(self, result: Any, random_state: int) -> BaselineCheck | None:
        if isinstance(result, ProximityResult):
            base = result.baseline_value()
            return BaselineCheck(
                "holdout", None if result.passed is None else not result.passed,
                {"baseline_value": None if base is None else base._asdict()})
        if isinstance(result, RiskResult):
            risk = result.risk()
            if result.control_rate is None:
                return BaselineCheck("random-guess", result.better_than_baseline,
                                     {"baseline_rate": result.baseline_rate._asdict()})
            return BaselineCheck("control", bool(risk.low > 0),
                                 {"control_rate": result.control_rate._asdict()})
        return self.random_guess.check(result, random_state)


# --------------------------------------------------------------------------- inputs


@dataclass
class _Tables:
    synthetic: pd.DataFrame
    original: pd.DataFrame
    holdout: pd.DataFrame | None
    control: pd.DataFrame | None
    metadata: Any
    control_source: str = "control"

    def digest(self) -> tuple:
        from privaudit._rows import table_digest

        tables = (self.synthetic, self.original, self.holdout, self.control)
        digests = [None if t is None else table_digest(t) for t in tables]
        return (*digests, sorted(self.metadata.sdtypes.items()))


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


def _metadata(metadata: Any, original: pd.DataFrame) -> Any:
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


def check_tables(synthetic: Any, original: Any, holdout: Any, control: Any,
                 metadata: Any) -> _Tables:
    """The audit's tables, checked, with their metadata (inferred when not given)."""
    tables = {name: _check_table(t, name) for name, t in (
        ("synthetic", synthetic), ("original", original), ("holdout", holdout),
        ("control", control))}
    meta = _metadata(metadata, tables["original"])
    for name, table in tables.items():
        if table is not None:
            meta.check_frame(table, f"{name} table")
            meta.check_values(table, f"{name} table")
            _check_finite(table, name)
    for name in ("holdout", "control"):
        _check_disjoint(tables[name], tables["original"], name)
    control_source = "control" if tables["control"] is not None else "holdout"
    return _Tables(tables["synthetic"], tables["original"], tables["holdout"],
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


#: The rows a check needs in a table: (check, table, parameter or None, fixed minimum, why).
_MIN_ROWS = (
    ("linkability", "synthetic", "n_neighbors", 1,
     "it links two pieces of a record through their n_neighbors nearest synthetic rows"),
    ("distinguishability", "synthetic", "n_splits", 1,
     "one row per cross-validation fold (n_splits)"),
    ("distinguishability", "original", "n_splits", 1,
     "one row per cross-validation fold (n_splits)"),
    ("dcr", "original", None, 2,
     "its baseline is each training row's distance to its closest OTHER training row"),
    ("nndr", "original", None, 2,
     "it divides the distance to the closest training row by the second closest"),
)


def check_sizes(tables: _Tables, names: Sequence[str], params: dict[str, dict]) -> None:
    """Refuse, before any work, a table too small for a check: in the user's terms."""
    for check, table, param, minimum, why in _MIN_ROWS:
        if check not in names:
            continue
        need = max(minimum, int(params[check][param]) if param else minimum)
        rows = len(getattr(tables, table))
        if rows < need:
            fix = (f"lower check_params[{check!r}][{param!r}], " if param else "")
            raise ValueError(f"The {table} table has {rows} row{'s' * (rows != 1)}; {check} "
                             f"needs at least {need} ({why}): give a larger table, {fix}or "
                             f"leave {check} out of the checks.")


def plan_checks(checks: Any, check_params: Any, *, has_text: bool = True
                ) -> tuple[list[str], dict[str, dict]]:
    """The checks to run and each one's parameters (defaults overridden)."""
    if checks is None:
        names = [c for c in DEFAULT_SYNTHETIC_CHECKS
                 if c != "text_memorization" or has_text]
    else:
        names = [checks] if isinstance(checks, str) else list(checks)
        for name in names:
            if name not in SYNTHETIC_CHECKS:
                raise param_error("checks", _FUNC, f"names among {list(SYNTHETIC_CHECKS)}",
                                  name)
        if not names:
            raise param_error("checks", _FUNC, "at least one check", "<an empty list>")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise param_error("checks", _FUNC, "each check named once", repeated)
    given = check_params or {}
    if not isinstance(given, Mapping):
        raise param_error("check_params", _FUNC, "a mapping of check name to parameters",
                          given, error=TypeError)
    params = {}
    for name in names:
        own = given.get(name, {})
        unknown = set(own) - set(_DEFAULT_PARAMS[name])
        if unknown:
            raise param_error(f"check_params[{name!r}]", _FUNC,
                              f"keys among {sorted(_DEFAULT_PARAMS[name])}", sorted(unknown))
        params[name] = {**_DEFAULT_PARAMS[name], **own}
    stray = set(given) - set(names)
    if stray:
        raise param_error("check_params", _FUNC, "parameters of the checks run only",
                          sorted(stray))
    for name in ("dcr", "nndr", "text_memorization"):
        if name in params:
            check_fraction(params[name]["quantile"], param=f"check_params[{name!r}]"
                           "['quantile']", func=_FUNC)
    return names, params


# --------------------------------------------------------------------------- the loop


@dataclass
class _SyntheticAudit:
    tables: _Tables
    params: dict[str, dict[str, Any]]
    run: AuditRun
    name: str
    parallel: dict[str, Any]
    done: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def provenance(self) -> dict[str, str]:
        return {"target": self.name, "dataset": self.run.dataset}

    def results(self, name: str) -> list[Any]:
        """The results of one check (inference: one per secret column), reused or run."""
        names = self._result_names(name)
        saved = [self.run.reuse(n, self._parts(name), self._consistent) for n in names]
        if all(s is not None for s in saved):
            return saved
        self.run.say(f"{self.name}: {name}")
        fresh = _RUNNERS[name](self, self.params[name])
        return [self.run.finish(n, self._parts(name), r)
                for n, r in zip(names, fresh, strict=True)]

    def _result_names(self, name: str) -> list[str]:
        if name != "inference":
            return [name]
        from privaudit.audits._synthetic_risks import inference_secrets

        return [f"inference:{c}" for c in inference_secrets(self.tables, self.params[name])]

    def _parts(self, name: str) -> tuple:
        params = self.params[name]
        return (*sorted((k, repr(v)) for k, v in params.items()), self.tables.control_source)

    def _consistent(self, saved: Any) -> bool:
        if isinstance(saved, AttackResult):
            n_syn, n_ori = len(self.tables.synthetic), len(self.tables.original)
            return bool(np.array_equal(saved.labels, np.r_[np.ones(n_syn), np.zeros(n_ori)]))
        return True  # counts and per-row arrays: the run key already names the tables


# --------------------------------------------------------------------------- runners


def _run_matches(audit: _SyntheticAudit, params: dict[str, Any], fn: Callable) -> list[Any]:
    t = audit.tables
    cols = t.metadata.tabular + t.metadata.text
    return [fn(t.synthetic[cols], t.original[cols],
               None if t.holdout is None else t.holdout[cols], **audit.provenance)]


def _run_closeness(audit: _SyntheticAudit, params: dict[str, Any], which: int) -> list[Any]:
    from privaudit.synthetic import closeness_checks

    key = "dcr+nndr"
    if key not in audit.done:
        t = audit.tables
        audit.done[key] = closeness_checks(
            t.synthetic, t.original, t.holdout, metadata=t.metadata,
            quantile=params["quantile"], random_state=audit.run.random_state,
            progress=audit.run.progress, **audit.parallel, **audit.provenance)
    return [audit.done[key][which]]


def _run_distinguish(audit: _SyntheticAudit, params: dict[str, Any]) -> list[Any]:
    from privaudit.synthetic import Distinguisher

    t = audit.tables
    result = Distinguisher(**params, random_state=audit.run.random_state).fit_score(
        t.synthetic, t.original, metadata=t.metadata)
    result.target, result.dataset = audit.name, audit.run.dataset
    return [result]


def _run_text_memorization(audit: _SyntheticAudit, params: dict[str, Any]) -> list[Any]:
    """Each synthetic text's distance (1 - cosine) to its closest training text.

    Per text column, beside the holdout's; one result pools the text columns.
    """
    from privaudit.synthetic import text_distances

    t = audit.tables
    if not t.metadata.text:
        raise param_error("checks", _FUNC, "text_memorization only with text columns in the "
                          "metadata", "text_memorization")
    syn, held = text_distances(t.synthetic, t.original, t.holdout, t.metadata.text)
    return [ProximityResult(
        "text_memorization", "quantile", synthetic=syn, baseline=held,
        quantile=params["quantile"], parameters={**params, "columns": t.metadata.text},
        extra={"memorized_share": float((syn <= 1 - params["similarity"]).mean())
               if len(syn) else float("nan")}, **audit.provenance)]


def _runners() -> dict[str, Callable[[_SyntheticAudit, dict[str, Any]], list[Any]]]:
    from privaudit.synthetic import exact_matches, identical_match_share

    return {
        "exact_matches": lambda a, p: _run_matches(a, p, exact_matches),
        "ims": lambda a, p: _run_matches(a, p, identical_match_share),
        "dcr": lambda a, p: _run_closeness(a, p, 0),
        "nndr": lambda a, p: _run_closeness(a, p, 1),
        "distinguishability": _run_distinguish,
        "text_memorization": _run_text_memorization,
        **_anonymeter_runners(),
    }


class _LazyRunners(dict):  # type: ignore[type-arg]
    """The runners, built on first use (they import the synthetic package)."""

    def __missing__(self, key: str) -> Any:
        self.update(_runners())
        return dict.__getitem__(self, key)


_RUNNERS: dict[str, Any] = _LazyRunners()


def _anonymeter_runners() -> dict[str, Callable[[_SyntheticAudit, dict[str, Any]], list[Any]]]:
    from privaudit.audits._synthetic_risks import risk_runners

    return risk_runners()


def audit_synthetic(
    synthetic: pd.DataFrame,
    original: pd.DataFrame,
    *,
    holdout: pd.DataFrame | None = None,
    control: pd.DataFrame | None = None,
    metadata: Any = None,
    checks: Sequence[str] | None = None,
    check_params: Mapping[str, Mapping[str, Any]] | None = None,
    name: str = "synthetic",
    dataset: str = "",
    random_state: int = 0,
    executor: Any = None,
    n_jobs: int | None = None,
    results_dir: str | Path | None = None,
    progress: Any = None,
) -> list[Any]:
    """Audit a synthetic table against the records it was generated from.

    Parameters
    ----------
    synthetic : DataFrame
        The synthetic table.
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
        Among :data:`SYNTHETIC_CHECKS` (default: all).
    check_params : mapping, optional
        Per check, parameters overriding the defaults (e.g. ``{"dcr": {"quantile": 0.01},
        "linkability": {"aux_cols": [["age"], ["zip"]]}}``).
    name : str, default="synthetic"
        Name of the synthetic table in results and reports.
    dataset : str
        Name of the source data, for provenance.
    random_state : int, default=0
        Seeds every check: same seed, same numbers, whatever ``n_jobs``.
    executor, n_jobs
        Where the nearest-neighbour scans run (see
        :func:`~privaudit.synthetic.nearest_neighbors`).
    results_dir : path, optional
        Each finished check is saved there and reused by a rerun of the same audit.
    progress : None, callable(str) or Progress
        Progress messages and bars.

    Returns
    -------
    list
        :class:`~privaudit.results.ProximityResult` (exact matches, IMS, DCR, NNDR),
        :class:`~privaudit.results.AttackResult` (distinguishability) and
        :class:`~privaudit.results.RiskResult` (singling out, linkability, one inference
        per secret column), in the order of ``checks``.
    """
    from privaudit.results import ResultsStore

    tables = check_tables(synthetic, original, holdout, control, metadata)
    names, params = plan_checks(checks, check_params, has_text=bool(tables.metadata.text))
    for label, value in (("name", name), ("dataset", dataset)):
        if not isinstance(value, str):
            raise param_error(label, _FUNC, "a str", value, error=TypeError)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise param_error("random_state", _FUNC, "an integer", random_state, error=TypeError)
    check_sizes(tables, names, params)
    run = AuditRun(func=_FUNC, target_name=name, identity=(_FUNC, *tables.digest(),
                                                           int(random_state)),
                   random_state=int(random_state),
                   store=None if results_dir is None else ResultsStore(results_dir),
                   baseline=SyntheticBaseline(), progress=progress, dataset=dataset,
                   kind="synthetic")
    audit = _SyntheticAudit(tables, params, run, name,
                            {"executor": executor, "n_jobs": n_jobs})
    out: list[Any] = []
    with run.tracking(sum(len(audit._result_names(n)) for n in names), "Checks"):
        for check in names:
            out.extend(audit.results(check))
    return out
