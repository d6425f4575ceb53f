"""The anonymeter risks of ``audit_synthetic``: each evaluator's counts as a RiskResult.

Singling out (univariate, multivariate), linkability and inference (one result per secret
column) run with privaudit's evaluators (:mod:`privaudit.synthetic`, anonymeter's
definitions, seeded), against the control set when there is one. Their counts become
:class:`~privaudit.results.RiskResult` objects: Wilson rates, anonymeter's residual risk,
and a file format every report reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from privaudit._validation import param_error
from privaudit.results import RiskResult

__all__ = ["default_aux_cols", "inference_secrets", "risk_runners"]


def default_aux_cols(columns: list[str]) -> tuple[list[str], list[str]]:
    """The attacker's two column sets for linkability: the columns halved, in order."""
    half = max(1, len(columns) // 2)
    return columns[:half], columns[half:]


def _as_risk(audit: Any, evaluator: Any, attack: str, kind: str,
             parameters: dict[str, Any], **extra: Any) -> RiskResult:
    control = audit.tables.control
    source = audit.tables.control_source if control is not None else None
    return evaluator.results().to_result(
        attack=attack, kind=kind, parameters=parameters,
        extra={"control_source": source, **extra}, **audit.provenance)


def _tabular(audit: Any) -> tuple[Any, Any, Any]:
    t = audit.tables
    cols = t.metadata.tabular
    return (t.original[cols], t.synthetic[cols],
            None if t.control is None else t.control[cols])


def _singling_out(mode: str) -> Callable[[Any, dict[str, Any]], list[RiskResult]]:
    def run(audit: Any, params: dict[str, Any]) -> list[RiskResult]:
        from privaudit.synthetic import SinglingOutEvaluator

        ori, syn, control = _tabular(audit)
        kwargs = {"n_attacks": params["n_attacks"]}
        if mode == "multivariate":
            kwargs["n_cols"] = params["n_cols"]
        evaluator = SinglingOutEvaluator(ori, syn, control=control,
                                         random_state=audit.run.random_state, **kwargs)
        evaluator.evaluate(mode=mode)
        return [_as_risk(audit, evaluator, f"singling_out_{mode}", "singling_out", params)]

    return run


def _linkability(audit: Any, params: dict[str, Any]) -> list[RiskResult]:
    from privaudit.synthetic import LinkabilityEvaluator

    ori, syn, control = _tabular(audit)
    aux = params["aux_cols"] or default_aux_cols(list(ori.columns))
    n_attacks = min(params["n_attacks"], len(ori), len(control) if control is not None
                    else len(ori))
    evaluator = LinkabilityEvaluator(ori, syn, aux_cols=aux, n_attacks=n_attacks,
                                     n_neighbors=params["n_neighbors"], control=control,
                                     random_state=audit.run.random_state, **audit.parallel)
    evaluator.evaluate(n_neighbors=params["n_neighbors"])
    return [_as_risk(audit, evaluator, "linkability", "linkability",
                     {**params, "aux_cols": [list(a) for a in aux]})]


def _inference(audit: Any, params: dict[str, Any]) -> list[RiskResult]:
    from privaudit.synthetic import InferenceEvaluator

    ori, syn, control = _tabular(audit)
    out = []
    for secret in inference_secrets(audit.tables, params):
        aux = [c for c in (params["aux_cols"] or ori.columns) if c != secret]
        n_attacks = min(params["n_attacks"], len(ori),
                        len(control) if control is not None else len(ori))
        evaluator = InferenceEvaluator(ori, syn, aux_cols=aux, secret=secret,
                                       n_attacks=n_attacks, control=control,
                                       random_state=audit.run.random_state, **audit.parallel)
        evaluator.evaluate()
        out.append(_as_risk(audit, evaluator, f"inference:{secret}", "inference",
                            {**params, "aux_cols": aux, "secret": secret},
                            secret_column=secret))
    return out


def risk_runners() -> dict[str, Callable[[Any, dict[str, Any]], list[RiskResult]]]:
    """The runner of each anonymeter check, by check name."""
    return {"singling_out_univariate": _singling_out("univariate"),
            "singling_out_multivariate": _singling_out("multivariate"),
            "linkability": _linkability, "inference": _inference}


def inference_secrets(tables: Any, params: dict[str, Any]) -> list[str]:
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
