"""The checks of ``audit_synthetic``: the kind's registry, each check's work for one result.

:data:`SYNTHETIC_REGISTRY` maps every check name (kebab-case) to a :class:`SyntheticCheck`:
its parameters and their defaults, the baseline its results are read against, whether its
results carry per-row labels, whether it gives one result per secret column, and the work
that computes one result. The audit (:class:`~privaudit.audits._synthetic.SyntheticAudit`)
plans its jobs from these declarations and keeps no list of names.

The closeness checks (exact matches, IMS, DCR, NNDR, text memorisation) compare the
synthetic rows with the training rows beside unseen holdout rows. The anonymeter risks
(singling out, linkability, inference) run with privaudit's evaluators
(:mod:`privaudit.synthetic`, anonymeter's definitions, seeded) against the control set when
there is one, and become :class:`~privaudit.results.RiskResult` objects (Wilson rates,
anonymeter's residual risk [1]_).

References
----------
.. [1] Giomi, M. et al. "A Unified Framework for Quantifying Privacy Risk in Synthetic
   Data." PoPETs 2023 (anonymeter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from privaudit._validation import param_error
from privaudit.results import AttackResult, ProximityResult, RiskResult

if TYPE_CHECKING:  # pandas (and pyarrow behind it) load when an audit runs
    import pandas as pd

    from privaudit.synthetic import (
        InferenceEvaluator,
        LinkabilityEvaluator,
        SinglingOutEvaluator,
        TableMetadata,
    )

    #: The anonymeter evaluators a risk's counts come from.
    RiskEvaluator = SinglingOutEvaluator | LinkabilityEvaluator | InferenceEvaluator

__all__ = ["SYNTHETIC_REGISTRY", "MinRows", "SyntheticCheck", "SyntheticTables", "SyntheticWork",
           "check_of", "default_aux_cols", "inference_secrets"]

#: One result of a check.
CheckResult = ProximityResult | AttackResult | RiskResult
#: What a check's result is read against (see :class:`SyntheticBaseline`).
BaselineName = Literal["holdout", "control", "random-guess"]


@dataclass
class SyntheticTables:
    """The audit's tables, checked, and their metadata (inferred when not given).

    ``control`` is the control set given, else the holdout (``control_source`` says
    which); None without either.
    """

    synthetic: pd.DataFrame
    original: pd.DataFrame
    holdout: pd.DataFrame | None
    control: pd.DataFrame | None
    metadata: TableMetadata
    control_source: str = "control"

    def digest(self) -> tuple[Any, ...]:
        """The tables' digests and the metadata's column kinds (the audit's identity)."""
        from privaudit._rows import table_digest

        tables = (self.synthetic, self.original, self.holdout, self.control)
        digests = [None if t is None else table_digest(t) for t in tables]
        return (*digests, sorted(self.metadata.sdtypes.items()))


class SyntheticWork(Protocol):
    """What a check reads of the audit: its tables, provenance, seed and workers."""

    tables: SyntheticTables

    @property
    def provenance(self) -> dict[str, str]: ...

    @property
    def random_state(self) -> int: ...

    @property
    def parallel(self) -> dict[str, Any]: ...

    @property
    def cache_dir(self) -> str | Path | None: ...

    def closeness(self, quantile: float) -> Sequence[ProximityResult]: ...


#: ``run(audit, params, secret) -> result``: the work of one result of a check.
Runner = Callable[[SyntheticWork, Mapping[str, Any], "str | None"], CheckResult]


@dataclass(frozen=True)
class MinRows:
    """The rows a check needs in one table: ``minimum``, or its parameter ``param``'s value.

    ``why`` says why, in the user's terms (the error quotes it).
    """

    table: Literal["synthetic", "original"]
    minimum: int
    why: str
    param: str | None = None


_FOLDS = "one row per cross-validation fold (n_splits)"


@dataclass(frozen=True)
class SyntheticCheck:
    """One check of ``audit_synthetic``, declared once.

    Parameters
    ----------
    run : callable
        ``run(audit, params, secret)``: the check's result (one per secret column for a
        ``per_secret`` check, ``secret`` None otherwise).
    defaults : mapping
        The check's parameters and their defaults (``check_params`` overrides them).
    baseline : {"holdout", "control", "random-guess"}
        What a result is read against: unseen real rows, anonymeter's control set, or a
        coin flip.
    labelled : bool
        Its results carry per-row labels (synthetic 1, original 0): a saved one is reused
        only with the audited tables' labels.
    per_secret : bool
        One result per secret column (named ``"<check>:<column>"``).
    needs_text : bool
        Runs only on tables with text columns (and only then by default).
    fractions : tuple of str
        Its parameters that are fractions in (0, 1).
    min_rows : tuple of MinRows
        The rows it needs in a table, checked before any work.
    """

    run: Runner
    defaults: Mapping[str, Any] = field(default_factory=dict)
    baseline: BaselineName = "holdout"
    labelled: bool = False
    per_secret: bool = False
    needs_text: bool = False
    fractions: tuple[str, ...] = ()
    min_rows: tuple[MinRows, ...] = ()


def check_of(result_name: str) -> str:
    """The check behind a result's name (``"inference:age"`` -> ``"inference"``)."""
    return result_name.partition(":")[0]


# --------------------------------------------------------------------------- closeness


def _columns(audit: SyntheticWork) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    t = audit.tables
    cols = t.metadata.tabular + t.metadata.text
    return t.synthetic[cols], t.original[cols], None if t.holdout is None else t.holdout[cols]


def _exact_matches(audit: SyntheticWork, params: Mapping[str, Any],
                   secret: str | None) -> ProximityResult:
    from privaudit.synthetic import exact_matches

    return exact_matches(*_columns(audit), attack="exact-matches", **audit.provenance)


def _ims(audit: SyntheticWork, params: Mapping[str, Any],
         secret: str | None) -> ProximityResult:
    from privaudit.synthetic import identical_match_share

    return identical_match_share(*_columns(audit), attack="ims", **audit.provenance)


def _closeness(which: int) -> Runner:
    def run(audit: SyntheticWork, params: Mapping[str, Any],
            secret: str | None) -> ProximityResult:
        return audit.closeness(params["quantile"])[which]

    return run


def _distinguishability(audit: SyntheticWork, params: Mapping[str, Any],
                        secret: str | None) -> AttackResult:
    from privaudit.synthetic import Distinguisher

    t = audit.tables
    result = Distinguisher(**params, random_state=audit.random_state).fit_score(
        t.synthetic, t.original, metadata=t.metadata)
    result.target, result.dataset = audit.provenance["target"], audit.provenance["dataset"]
    return result


def _text_memorization(audit: SyntheticWork, params: Mapping[str, Any],
                       secret: str | None) -> ProximityResult:
    """Each synthetic text's distance (1 - cosine) to its closest training text.

    Per text column, beside the holdout's; one result pools the text columns. The texts'
    embeddings are cached in the audit's ``cache_dir`` (same numbers, computed once).
    """
    from privaudit.synthetic import text_distances

    t = audit.tables
    syn, held = text_distances(t.synthetic, t.original, t.holdout, t.metadata.text,
                               cache_dir=audit.cache_dir)
    return ProximityResult(
        "text_memorization", "quantile", synthetic=syn, baseline=held,
        quantile=params["quantile"], parameters={**params, "columns": t.metadata.text},
        extra={"memorized_share": float((syn <= 1 - params["similarity"]).mean())
               if len(syn) else float("nan")}, attack="text-memorization",
        **audit.provenance)


# --------------------------------------------------------------------------- anonymeter


def default_aux_cols(columns: list[str]) -> tuple[list[str], list[str]]:
    """The attacker's two column sets for linkability: the columns halved, in order."""
    half = max(1, len(columns) // 2)
    return columns[:half], columns[half:]


def _as_risk(audit: SyntheticWork, evaluator: RiskEvaluator, attack: str, kind: str,
             parameters: dict[str, Any], **extra: Any) -> RiskResult:
    control = audit.tables.control
    source = audit.tables.control_source if control is not None else None
    return evaluator.results().to_result(
        attack=attack, kind=kind, parameters=parameters,
        extra={"control_source": source, **extra}, **audit.provenance)


def _tabular(audit: SyntheticWork) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    t = audit.tables
    cols = t.metadata.tabular
    return (t.original[cols], t.synthetic[cols],
            None if t.control is None else t.control[cols])


def _singling_out(mode: str) -> Runner:
    def run(audit: SyntheticWork, params: Mapping[str, Any],
            secret: str | None) -> RiskResult:
        from privaudit.synthetic import SinglingOutEvaluator

        ori, syn, control = _tabular(audit)
        kwargs = {"n_attacks": params["n_attacks"]}
        if mode == "multivariate":
            kwargs["n_cols"] = params["n_cols"]
        evaluator = SinglingOutEvaluator(ori, syn, control=control,
                                         random_state=audit.random_state, **kwargs)
        evaluator.evaluate(mode=mode)
        return _as_risk(audit, evaluator, f"singling-out-{mode}", "singling_out",
                        dict(params))

    return run


def _n_attacks(params: Mapping[str, Any], ori: pd.DataFrame,
               control: pd.DataFrame | None) -> int:
    """At most one attack per original (and control) record."""
    return min(params["n_attacks"], len(ori), len(control) if control is not None
               else len(ori))


def _linkability(audit: SyntheticWork, params: Mapping[str, Any],
                 secret: str | None) -> RiskResult:
    from privaudit.synthetic import LinkabilityEvaluator

    ori, syn, control = _tabular(audit)
    aux = params["aux_cols"] or default_aux_cols(list(ori.columns))
    evaluator = LinkabilityEvaluator(ori, syn, aux_cols=aux,
                                     n_attacks=_n_attacks(params, ori, control),
                                     n_neighbors=params["n_neighbors"], control=control,
                                     random_state=audit.random_state, **audit.parallel)
    evaluator.evaluate(n_neighbors=params["n_neighbors"])
    return _as_risk(audit, evaluator, "linkability", "linkability",
                    {**params, "aux_cols": [list(a) for a in aux]})


def _inference(audit: SyntheticWork, params: Mapping[str, Any],
               secret: str | None) -> RiskResult:
    """The inference risk of one secret column (each evaluator seeded alike)."""
    from privaudit.synthetic import InferenceEvaluator

    if secret is None:
        raise TypeError("the inference check runs once per secret column")
    ori, syn, control = _tabular(audit)
    aux = [c for c in (params["aux_cols"] or ori.columns) if c != secret]
    evaluator = InferenceEvaluator(ori, syn, aux_cols=aux, secret=secret,
                                   n_attacks=_n_attacks(params, ori, control),
                                   control=control, random_state=audit.random_state,
                                   **audit.parallel)
    evaluator.evaluate()
    return _as_risk(audit, evaluator, f"inference:{secret}", "inference",
                    {**params, "aux_cols": aux, "secret": secret}, secret_column=secret)


def inference_secrets(tables: SyntheticTables, params: Mapping[str, Any]) -> list[str]:
    """The columns the inference risk attacks: ``params['secrets']``, or every column."""
    secrets = params.get("secrets")
    columns = tables.metadata.tabular
    if secrets is None:
        return list(columns)
    secrets = [secrets] if isinstance(secrets, str) else list(secrets)
    for s in secrets:
        if s not in columns:
            raise param_error("check_params['inference']['secrets']", "audit_synthetic",
                              f"columns among {columns}", s)
    return secrets


#: Every check of audit_synthetic, in report order: the kind's registry.
SYNTHETIC_REGISTRY: dict[str, SyntheticCheck] = {
    "exact-matches": SyntheticCheck(_exact_matches),
    "ims": SyntheticCheck(_ims),
    "dcr": SyntheticCheck(
        _closeness(0), {"quantile": 0.05}, fractions=("quantile",),
        min_rows=(MinRows("original", 2, "its baseline is each training row's distance to "
                          "its closest OTHER training row"),)),
    "nndr": SyntheticCheck(
        _closeness(1), {"quantile": 0.05}, fractions=("quantile",),
        min_rows=(MinRows("original", 2, "it divides the distance to the closest training "
                          "row by the second closest"),)),
    "distinguishability": SyntheticCheck(
        _distinguishability, {"n_estimators": 100, "n_splits": 5, "max_text_features": 1000},
        baseline="random-guess", labelled=True,
        min_rows=(MinRows("synthetic", 1, _FOLDS, "n_splits"),
                  MinRows("original", 1, _FOLDS, "n_splits"))),
    "singling-out-univariate": SyntheticCheck(
        _singling_out("univariate"), {"n_attacks": 500}, baseline="control"),
    "singling-out-multivariate": SyntheticCheck(
        _singling_out("multivariate"), {"n_attacks": 500, "n_cols": 3}, baseline="control"),
    "linkability": SyntheticCheck(
        _linkability, {"n_attacks": 500, "aux_cols": None, "n_neighbors": 10},
        baseline="control",
        min_rows=(MinRows("synthetic", 1, "it links two pieces of a record through their "
                          "n_neighbors nearest synthetic rows", "n_neighbors"),)),
    "inference": SyntheticCheck(
        _inference, {"n_attacks": 500, "secrets": None, "aux_cols": None},
        baseline="control", per_secret=True),
    "text-memorization": SyntheticCheck(
        _text_memorization, {"quantile": 0.05, "similarity": 0.95}, needs_text=True,
        fractions=("quantile",)),
}
