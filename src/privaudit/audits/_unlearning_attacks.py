"""The four unlearning attacks of :func:`audit_unlearning`, each on the shadows it reads."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["run_unlearning_attack"]


def _u_lira(audit: Any, params: dict[str, Any], progress: Any) -> Any:
    from privaudit.attacks.membership import ReferenceOutputs
    from privaudit.attacks.unlearning import ULiRAAttack

    i = audit.inputs
    pool = audit.online_pool(progress)
    n = len(i.y)
    outputs = pool.map(_query, i.X, i.y, stack=False, progress=progress,
                       description="querying the unlearned shadows")
    reference = ReferenceOutputs(audited=tuple(outputs), audited_in=pool.in_mask_[:, :n],
                                 mode="online", pool=pool)
    return ULiRAAttack(**params).fit(reference).run(
        outputs=audit.target_outputs(), labels=i.labels, target_name=audit.target.name)


def _apollo(audit: Any, online: bool, params: dict[str, Any], progress: Any,
            trajectories: bool) -> Any:
    from privaudit.attacks.unlearning import ApolloAttack

    i = audit.inputs
    pool = audit.online_pool(progress) if online else audit.offline_pool(progress)
    attack = ApolloAttack(online=online, **params)
    calibration = None
    if not online and attack.kind == "auto":
        calibration = _calibration(audit, pool, progress)
    attack.fit(pool, audited=np.arange(len(i.y)), calibration=calibration)
    return attack.run(audit.target, i.X, i.y, i.labels, trajectories=trajectories)


def _calibration(audit: Any, pool: Any, progress: Any) -> dict[str, Any]:
    """Offline Apollo's check of which artefact to look for: U-MIA's surrogate."""
    i = audit.inputs
    model, forget, heldout = _surrogate(audit, progress)
    rows = np.r_[forget, heldout]
    return {"model": model, "X": i.X_pop[rows], "y": i.y_pop[rows],
            "labels": np.r_[np.ones(forget.size, np.int8), np.zeros(heldout.size, np.int8)],
            "in_mask": pool.in_mask_[:, len(i.y) + rows]}


def _surrogate(audit: Any, progress: Any) -> tuple[Any, Any, Any]:
    """U-MIA's surrogate: the first offline shadow, unlearning a share of its records.

    Made once per audit (U-MIA and offline Apollo's calibration share it).
    """
    if getattr(audit, "surrogate_", None) is None:
        audit.surrogate_ = _make_surrogate(audit, progress)
    return audit.surrogate_


def _make_surrogate(audit: Any, progress: Any) -> tuple[Any, Any, Any]:
    from privaudit.unlearn import unlearn

    i, s = audit.inputs, audit.shadows
    pool = audit.offline_pool(progress)
    n = len(i.y)
    rows = np.asarray(pool.train_indices_[0]) - n  # population rows it trained on
    fraction = s["forget_fraction"]
    if fraction is None:
        fraction = float(np.sum(i.labels == 1)) / i.train_size
    rng = np.random.default_rng([int(s["random_state"]), 0x75D1A])
    n_forget = int(np.clip(round(fraction * rows.size), 1, rows.size - 1))
    chosen = rng.permutation(rows)
    forget, retain = chosen[:n_forget], chosen[n_forget:]
    unseen = np.setdiff1d(np.arange(len(i.y_pop)), rows)
    heldout = rng.permutation(unseen)[:n_forget]
    model = unlearn(pool.models_[0], (i.X_pop[forget], i.y_pop[forget]),
                    (i.X_pop[retain], i.y_pop[retain]), method=s["method"],
                    random_state=int(s["random_state"]), **s["params"])
    return model, forget, heldout


def _u_mia(audit: Any, params: dict[str, Any], progress: Any, seed: int) -> Any:
    from privaudit.attacks.unlearning import UMIAAttack

    i = audit.inputs
    model, forget, heldout = _surrogate(audit, progress)
    attack = UMIAAttack(**{"random_state": seed, **params}).fit(
        _query(model, i.X_pop[forget], i.y_pop[forget]),
        _query(model, i.X_pop[heldout], i.y_pop[heldout]))
    return attack.run(audit.target_outputs(), i.labels, target_name=audit.target.name)


def run_unlearning_attack(audit: Any, name: str, params: dict[str, Any], progress: Any,
                          trajectories: bool) -> Any:
    """Run attack ``name`` of the audit; return its :class:`AttackResult`."""
    if name == "u-lira":
        return _u_lira(audit, params, progress)
    if name in ("apollo", "apollo-offline"):
        return _apollo(audit, name == "apollo", params, progress, trajectories)
    return _u_mia(audit, params, progress, int(audit.shadows["random_state"]))


def _query(model: Any, X: Any, y: Any) -> Any:
    # Module level: worker processes and Ray unpickle it.
    from privaudit.targets import as_target

    return as_target(model).query(X, y)
