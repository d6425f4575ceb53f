"""The four unlearning attacks of :func:`audit_unlearning`, each on the shadows it reads.

:data:`UNLEARNING_RUNNERS` is the kind's registry: each attack name with the work that
computes its result from the audit (:class:`UnlearningAudit`: the pools, surrogate and
target answers it shares), so the audit keeps no list of names.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

import numpy as np

__all__ = ["UNLEARNING_RUNNERS", "UnlearningAudit"]


class UnlearningAudit(Protocol):
    """What the runners read of :class:`privaudit.audits._unlearning.UnlearningAudit`."""

    inputs: Any
    settings: Any
    options: Any
    target: Any
    surrogate_: Any

    def target_outputs(self) -> Any: ...
    def online_pool(self, progress: Any) -> Any: ...
    def offline_pool(self, progress: Any) -> Any: ...


def _u_lira(audit: UnlearningAudit, params: dict[str, Any], progress: Any) -> Any:
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


def _apollo(audit: UnlearningAudit, params: dict[str, Any], progress: Any, *,
            online: bool) -> Any:
    from privaudit.attacks.unlearning import ApolloAttack

    i = audit.inputs
    pool = audit.online_pool(progress) if online else audit.offline_pool(progress)
    attack = ApolloAttack(online=online, **params)
    calibration = None
    if not online and attack.kind == "auto":
        calibration = _calibration(audit, pool, progress)
    attack.fit(pool, audited=np.arange(len(i.y)), calibration=calibration)
    return attack.run(audit.target, i.X, i.y, i.labels,
                      trajectories=audit.settings.trajectories)


def _calibration(audit: UnlearningAudit, pool: Any, progress: Any) -> dict[str, Any]:
    """Offline Apollo's check of which artefact to look for: U-MIA's surrogate."""
    i = audit.inputs
    model, forget, heldout = _surrogate(audit, progress)
    rows = np.r_[forget, heldout]
    return {"model": model, "X": i.X_pop[rows], "y": i.y_pop[rows],
            "labels": np.r_[np.ones(forget.size, np.int8), np.zeros(heldout.size, np.int8)],
            "in_mask": pool.in_mask_[:, len(i.y) + rows]}


def _surrogate(audit: UnlearningAudit, progress: Any) -> tuple[Any, Any, Any]:
    """U-MIA's surrogate: the first offline shadow, unlearning a share of its records.

    Made once per audit (U-MIA and offline Apollo's calibration share it).
    """
    if audit.surrogate_ is None:
        audit.surrogate_ = _make_surrogate(audit, progress)
    return audit.surrogate_


def _make_surrogate(audit: UnlearningAudit, progress: Any) -> tuple[Any, Any, Any]:
    from privaudit.unlearn import unlearn

    i, s = audit.inputs, audit.settings
    seed = int(audit.options.random_state)
    pool = audit.offline_pool(progress)
    n = len(i.y)
    rows = np.asarray(pool.train_indices_[0]) - n  # population rows it trained on
    fraction = s.forget_fraction
    if fraction is None:
        fraction = float(np.sum(i.labels == 1)) / i.train_size
    rng = np.random.default_rng([seed, 0x75D1A])
    n_forget = int(np.clip(round(fraction * rows.size), 1, rows.size - 1))
    chosen = rng.permutation(rows)
    forget, retain = chosen[:n_forget], chosen[n_forget:]
    unseen = np.setdiff1d(np.arange(len(i.y_pop)), rows)
    heldout = rng.permutation(unseen)[:n_forget]
    model = unlearn(pool.models_[0], (i.X_pop[forget], i.y_pop[forget]),
                    (i.X_pop[retain], i.y_pop[retain]), method=s.method,
                    random_state=seed, **dict(s.params or {}))
    return model, forget, heldout


def _u_mia(audit: UnlearningAudit, params: dict[str, Any], progress: Any) -> Any:
    from privaudit.attacks.unlearning import UMIAAttack

    i, seed = audit.inputs, int(audit.options.random_state)
    model, forget, heldout = _surrogate(audit, progress)
    attack = UMIAAttack(**{"random_state": seed, **params}).fit(
        _query(model, i.X_pop[forget], i.y_pop[forget]),
        _query(model, i.X_pop[heldout], i.y_pop[heldout]))
    return attack.run(audit.target_outputs(), i.labels, target_name=audit.target.name)


#: Each unlearning attack's work: ``runner(audit, attack_params, progress) -> result``.
UNLEARNING_RUNNERS: dict[str, Callable[..., Any]] = {
    "u-mia": _u_mia,
    "u-lira": _u_lira,
    "apollo": partial(_apollo, online=True),
    "apollo-offline": partial(_apollo, online=False),
}


def _query(model: Any, X: Any, y: Any) -> Any:
    # Module level: worker processes and Ray unpickle it.
    from privaudit.targets import as_target

    return as_target(model).query(X, y)
