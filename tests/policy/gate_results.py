"""Small results of every kind the gate reads, built through their public APIs.

The model result comes from a real audit (``audit_model``: an overfit tree, the LOSS
attack); the others from their classes' constructors on small data with a known signal:
an LLM's and an unlearning audit's attack results, anonymeter-style risk counts, an
attribute attack's guesses and a DP audit's canary bounds.
"""

from __future__ import annotations

import numpy as np

from privaudit.metrics import canary_epsilon_lower_bound
from privaudit.results import AttackResult, AttributeResult, AuditInfo, DPAuditResult, RiskResult

#: Bootstrap resamples the tests read: few, so that the tests stay cheap.
N_BOOTSTRAP = 100


def attack_result(kind: str, *, signal: float = 1.0, n: int = 100, target: str = "",
                  attack: str = "loss", seed: int = 0, role: str | None = None,
                  out_of_fold: bool = False) -> AttackResult:
    """``n`` members scoring ``signal`` above ``n`` non-members (unit normal noise)."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n), np.zeros(n)]
    return AttackResult(labels=labels, scores=rng.normal(size=2 * n) + signal * labels,
                        attack=attack, target=target or f"{kind}-target",
                        out_of_fold=out_of_fold, audit=AuditInfo(kind=kind, role=role))


def risk_result(n_success: int = 40, *, n_control: int = 20, target: str = "synthetic"
                ) -> RiskResult:
    return RiskResult(n_attacks=200, n_success=n_success, n_baseline=10, n_control=n_control,
                      n_baseline_attacks=200, n_control_attacks=200, attack="linkability",
                      target=target, audit=AuditInfo(kind="synthetic"))


def attribute_result(n: int = 60, member_hits: int = 50, non_member_hits: int = 30
                     ) -> AttributeResult:
    """``n`` members and ``n`` non-members, with so many right guesses of each."""
    truth = np.array([0, 1] * n)
    guesses = 1 - truth
    guesses[:member_hits] = truth[:member_hits]
    guesses[n:n + non_member_hits] = truth[n:n + non_member_hits]
    return AttributeResult(candidates=["f", "m"], guesses=guesses, truth=truth,
                           members=np.r_[np.ones(n), np.zeros(n)].astype(int),
                           posteriors=np.full((2 * n, 2), 0.5),
                           model_free={"prior": np.zeros(2 * n, dtype=int)},
                           attack="model-inversion", target="attribute-target",
                           sensitive_attribute="sex", audit=AuditInfo(kind="attribute"))


def dp_result(signal: float = 4.0, claim: float = 1.0, m: int = 300) -> DPAuditResult:
    """One run of ``m`` canaries, the included ones scoring ``signal`` higher."""
    rng = np.random.default_rng(0)
    included = rng.random((1, m)) < 0.5
    scores = signal * included + rng.normal(size=(1, m))
    bounds = [{method: canary_epsilon_lower_bound(
        scores[0][included[0]], scores[0][~included[0]], delta=1e-5, confidence=0.975,
        method=method, two_sided=True) for method in ("steinke", "fdp")}]
    return DPAuditResult(canary_ids=[f"canary-{i:05d}" for i in range(m)], scores=scores,
                         included=included, claimed_epsilon={"rdp": claim}, delta=1e-5,
                         bounds=bounds, attack="dirac-gradient-canaries",
                         target="dp-target", audit=AuditInfo(kind="dp"))
