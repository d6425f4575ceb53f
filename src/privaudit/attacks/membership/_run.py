"""Run several membership attacks on one query of the target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numpy.typing import ArrayLike

from privaudit._validation import param_error
from privaudit.attacks._tags import get_tags
from privaudit.attacks.membership._base import MembershipAttack, resolve_outputs
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs

__all__ = ["run_attacks"]


def run_attacks(
    target: Any,
    X: Any,
    y: ArrayLike | None,
    labels: ArrayLike,
    attacks: Sequence[MembershipAttack | str],
    *,
    outputs: ModelOutputs | None = None,
    record_ids: ArrayLike | None = None,
    dataset: str = "",
    target_name: str | None = None,
) -> list[AttackResult]:
    """Query ``target`` once on ``(X, y)`` and run every attack on the same outputs.

    Parameters
    ----------
    target : Target or fitted scikit-learn estimator
        The audited model (may be ``None`` when ``outputs`` and ``target_name`` are given).
    X, y : array-like
        Audited records and their true labels/targets.
    labels : array-like of 0/1
        Ground truth, 1 = member.
    attacks : sequence of MembershipAttack or str
        Attack instances (already fitted when they need it) or registry names (see
        :func:`privaudit.attacks.get_attack`), created with default parameters.
    outputs : ModelOutputs, optional
        Precomputed outputs; the target is then not queried.
    record_ids : array-like, optional
        Identifiers of the audited records.
    dataset : str
        Dataset name for provenance.
    target_name : str, optional
        Overrides the target's name in the results.

    Returns
    -------
    list of AttackResult
        One per attack, in order.
    """
    from privaudit.attacks._registry import get_attack

    func = "run_attacks"
    if isinstance(attacks, (str, MembershipAttack)) or not isinstance(attacks, Sequence):
        raise param_error(
            "attacks", func, "a list of attacks or attack names", attacks, error=TypeError
        )
    instances = [get_attack(a) if isinstance(a, str) else a for a in attacks]
    for a in instances:
        if not isinstance(a, MembershipAttack):
            raise param_error(
                "attacks", func, "a list of MembershipAttack instances or names",
                f"<{type(a).__name__}>", error=TypeError,
            )
    tasks = tuple({t for a in instances for t in get_tags(a).tasks})
    out, resolved = resolve_outputs(target, X, y, outputs, func=func, tasks=tasks)
    name = target_name if target_name is not None else (resolved.name if resolved else "")
    return [
        a.run(outputs=out, labels=labels, record_ids=record_ids, dataset=dataset,
              target_name=name)
        for a in instances
    ]
