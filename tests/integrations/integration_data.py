"""Small audits for the integrations: results of several kinds, in memory and as a report.

Names carry the characters a key or a Markdown table must survive (``|``, ``<``, ``&``,
``ε``), and two results share a target and an attack (their keys must still differ).
"""

from __future__ import annotations

import math

import numpy as np

from privaudit.metrics import canary_epsilon_lower_bound
from privaudit.results import AttackResult, AuditInfo, DPAuditResult, RiskResult

#: Bootstrap resamples: few, so that the tests stay cheap.
N_BOOTSTRAP = 50


def membership(target: str, signal: float, *, seed: int, attack: str = "loss",
               reference_models: int | None = None, n: int = 80) -> AttackResult:
    """``n`` members scoring ``signal`` above ``n`` non-members (unit normal noise)."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n), np.zeros(n)]
    extra = {} if reference_models is None else {"n_reference_models": reference_models}
    return AttackResult(labels=labels, scores=rng.normal(size=2 * n) + signal * labels,
                        attack=attack, target=target, dataset="toy|data", extra=extra,
                        parameters={"threshold": None, "tag": "a|b"},
                        audit=AuditInfo(kind="model"))


def dp_audit(claim: float, m: int = 200) -> DPAuditResult:
    """One run of ``m`` canaries, the included ones scoring 3 higher."""
    rng = np.random.default_rng(1)
    included = rng.random((1, m)) < 0.5
    scores = 3.0 * included + rng.normal(size=(1, m))
    bounds = [{method: canary_epsilon_lower_bound(
        scores[0][included[0]], scores[0][~included[0]], delta=1e-5, confidence=0.975,
        method=method, two_sided=True) for method in ("steinke", "fdp")}]
    return DPAuditResult(canary_ids=[f"c{i}" for i in range(m)], scores=scores,
                         included=included, claimed_epsilon={"rdp": claim}, delta=1e-5,
                         bounds=bounds, attack="dirac-gradient-canaries", target="dp <model>",
                         audit=AuditInfo(kind="dp"))


def audit_results() -> list:
    """Five results of three kinds; two share the target ``model|v2`` and attack ``loss``."""
    return [membership("model|v2", 2.0, seed=0),
            membership("model|v2", 0.0, seed=1),
            membership("<b>model & ε</b>", 1.0, seed=2, attack="lira-online",
                       reference_models=4),
            RiskResult(n_attacks=200, n_success=40, n_baseline=10, n_control=20,
                       n_baseline_attacks=200, n_control_attacks=200, attack="linkability",
                       target="synthetic|table", audit=AuditInfo(kind="synthetic")),
            dp_audit(claim=1.0)]


def same_number(a: float, b: float) -> bool:
    """Equal floats, NaN equal to NaN (an undefined part of a metric)."""
    return (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=1e-12)
