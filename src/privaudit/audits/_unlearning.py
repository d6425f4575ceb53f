"""``audit_unlearning``: did an unlearned model forget its records, on the audit spine.

The audited records are the forgotten ones (label 1) and records the model never trained
on (label 0). Shadows are trained like the original model through the reference pool
(executors, cache, resumption): an online pool whose models unlearn the audited records
they saw with the audited algorithm (U-LiRA, Apollo), and an offline pool of plain models
that never saw an audited record (Apollo offline; U-MIA's surrogate is its first model,
unlearning a share of its own records). One :class:`~privaudit.audits.AuditRun` keys,
reuses, checks against chance and saves every result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_attack_params, param_error
from privaudit.audits._run import AuditRun

__all__ = ["UNLEARNING_ATTACKS", "audit_unlearning"]

_FUNC = "audit_unlearning"
#: Every unlearning attack, in the paper's table order.
UNLEARNING_ATTACKS: tuple[str, ...] = ("u-mia", "u-lira", "apollo", "apollo-offline")
_NEEDS_PROBABILITIES = ("u-mia", "u-lira")


def _pair(value: Any, param: str) -> tuple[NDArray[Any], NDArray[Any]]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise param_error(param, _FUNC, "a pair (X, y)", f"<{type(value).__name__}>",
                          error=TypeError)
    X = np.asarray(value[0].to_numpy() if hasattr(value[0], "to_numpy") else value[0])
    y = np.asarray(value[1])
    if X.ndim < 2 or X.shape[0] == 0 or y.shape != (X.shape[0],):
        raise param_error(param, _FUNC, "a pair (X, y): a non-empty array of records and "
                          "one label per record", f"<X {X.shape}, y {y.shape}>")
    return X.astype(np.float32), y


def _check_disjoint(a: tuple[Any, Any], b: tuple[Any, Any], param: str, other: str,
                    why: str) -> None:
    from privaudit._rows import rows_found_in

    shared = np.flatnonzero(rows_found_in(a[0], b[0]))
    if shared.size:
        raise param_error(param, _FUNC, f"records disjoint from '{other}' ({why})",
                          f"<{shared.size} shared, e.g. row {int(shared[0])}>")


def _check_training_set(training_set: Any, forget: Any, heldout: Any) -> None:
    """Forgotten records were trained on; held-out records were not (else labels lie)."""
    from privaudit._rows import rows_found_in

    train = _pair(training_set, "training_set")[0]
    outside = np.flatnonzero(~rows_found_in(forget[0], train))
    if outside.size:
        raise param_error("forget", _FUNC, "records of the original training set "
                          "('training_set'): the model cannot unlearn what it never saw",
                          f"<{outside.size} outside it, e.g. row {int(outside[0])}>")
    inside = np.flatnonzero(rows_found_in(heldout[0], train))
    if inside.size:
        raise param_error("heldout", _FUNC, "records outside the original training set "
                          "('training_set'): a held-out record must never have been "
                          "trained on", f"<{inside.size} in it, e.g. row {int(inside[0])}>")


def _plan(attacks: Any, target: Any, attack_params: Any = None) -> list[str]:
    from privaudit.attacks.unlearning import SET_BY_AUDIT, unlearning_attack_class

    names = list(UNLEARNING_ATTACKS if attacks is None else attacks)
    unknown = [a for a in names if a not in UNLEARNING_ATTACKS]
    if unknown or not names:
        raise param_error("attacks", _FUNC, f"a non-empty subset of {list(UNLEARNING_ATTACKS)}",
                          unknown or names)
    if len(set(names)) != len(names):
        raise param_error("attacks", _FUNC, "names without repetition", names)
    check_attack_params(names, attack_params, unlearning_attack_class, func=_FUNC,
                        set_by_audit=SET_BY_AUDIT)
    if not getattr(target, "reveals_probabilities", True):
        refused = [a for a in names if a in _NEEDS_PROBABILITIES]
        if refused:
            raise param_error("attacks", _FUNC, "attacks a label-only target can answer "
                              "(apollo, apollo-offline): U-MIA and U-LiRA read probabilities",
                              refused)
    return names


@dataclass
class _Inputs:
    X: NDArray[np.float32]  # audited: forget rows, then held-out rows
    y: NDArray[Any]
    labels: NDArray[np.int8]
    X_pop: NDArray[np.float32]
    y_pop: NDArray[Any]
    train_size: int


def _check_train_size(train_size: Any, n_population: int, n_forget: int) -> int:
    """The original training set: at most the population, at least the forgotten records."""
    if (isinstance(train_size, bool) or not isinstance(train_size, (int, np.integer))
            or not 2 <= train_size <= n_population):
        raise param_error("train_size", _FUNC, f"an int in [2, {n_population}] (the original "
                          "model's training-set size; shadows train on as many records)",
                          train_size)
    if train_size < n_forget:
        raise param_error("train_size", _FUNC, f"at least the number of forgotten records "
                          f"({n_forget}): the original model trained on every one of them",
                          f"<train_size {int(train_size)} < {n_forget} forgotten records>")
    return int(train_size)


def _inputs(forget: Any, heldout: Any, population: Any, train_size: Any) -> _Inputs:
    f, h, p = _pair(forget, "forget"), _pair(heldout, "heldout"), _pair(population,
                                                                         "population")
    _check_disjoint(f, h, "heldout", "forget", "a held-out record was never trained on")
    audited = (np.concatenate([f[0], h[0]]), np.concatenate([f[1], h[1]]))
    _check_disjoint(p, audited, "population", "forget and heldout",
                    "shadows that never saw an audited record train on it")
    if train_size is None:
        train_size = max(len(p[1]) // 2, len(f[1]))
    train_size = _check_train_size(train_size, len(p[1]), len(f[1]))
    labels = np.r_[np.ones(len(f[1]), np.int8), np.zeros(len(h[1]), np.int8)]
    return _Inputs(audited[0], audited[1], labels, p[0], p[1], train_size)


def _record_ids(record_ids: Any, n: int) -> NDArray[Any] | None:
    """The audited records' ids (forgotten first, then held-out), checked unique."""
    from privaudit._validation import check_unique_ids

    if record_ids is None:
        return None
    ids = np.asarray(record_ids.to_numpy() if hasattr(record_ids, "to_numpy")
                     else record_ids)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise param_error("record_ids", _FUNC, f"one id per audited record ({n}: the "
                          "forgotten ones, then the held-out ones)", f"<shape {ids.shape}>")
    check_unique_ids(ids, param="record_ids", func=_FUNC)
    return ids


def _check_settings(names: list[str], attack_params: dict[str, Any], *,
                    forget_fraction: Any, trajectories: Any) -> None:
    """Refuse settings that none of the attacks run would read."""
    from privaudit.attacks.unlearning import unread_unlearning_settings

    unread = unread_unlearning_settings(names, attack_params,
                                        forget_fraction=forget_fraction,
                                        trajectories=trajectories)
    for param, readers in unread.items():
        raise param_error(param, _FUNC, f"left out unless {readers} runs (no other attack "
                          "reads it)", forget_fraction if param == "forget_fraction"
                          else trajectories)


class _UnlearningAudit:
    """Shadow pools made on first use and shared by the attacks that read them."""

    def __init__(self, target: Any, inputs: _Inputs, shadows: dict[str, Any]) -> None:
        self.target, self.inputs, self.shadows = target, inputs, shadows
        self._pools: dict[str, Any] = {}
        self._outputs: Any = None

    def target_outputs(self) -> Any:
        """The target's answers on the audited records, queried once for U-MIA and U-LiRA."""
        if self._outputs is None:
            self._outputs = self.target.query(self.inputs.X, self.inputs.y)
        return self._outputs

    def _pool(self, recipe: Any, mode: str, fraction: float, progress: Any) -> Any:
        from privaudit.training import ReferencePool

        s, i = self.shadows, self.inputs
        X_all = np.concatenate([i.X, i.X_pop])
        y_all = np.concatenate([i.y, i.y_pop])
        n = len(i.y)
        return ReferencePool(recipe, s["n_shadows"], mode=mode, train_fraction=fraction,
                             executor=s["executor"], cache_dir=s["cache_dir"],
                             random_state=s["random_state"]).fit(
            X_all, y_all, audited=np.arange(n), population=np.arange(n, len(y_all)),
            progress=progress)

    def online_pool(self, progress: Any) -> Any:
        """Shadows on halves of audited + population, unlearning the audited they saw."""
        from privaudit.unlearn import UnlearningRecipe

        if "online" not in self._pools:
            s, i = self.shadows, self.inputs
            recipe = UnlearningRecipe(s["recipe"], (i.X, i.y), method=s["method"],
                                      params=s["params"])
            fraction = min(1.0, i.train_size / (len(i.y) + len(i.y_pop)))
            self._pools["online"] = self._pool(recipe, "online", fraction, progress)
        return self._pools["online"]

    def offline_pool(self, progress: Any) -> Any:
        """Plain shadows trained on population records only."""
        if "offline" not in self._pools:
            i = self.inputs
            fraction = min(0.9, i.train_size / len(i.y_pop))
            self._pools["offline"] = self._pool(self.shadows["recipe"], "offline",
                                                fraction, progress)
        return self._pools["offline"]

    def run(self, name: str, attack_params: dict[str, Any], progress: Any,
            trajectories: bool) -> Any:
        from privaudit.audits._unlearning_attacks import run_unlearning_attack

        return run_unlearning_attack(self, name, attack_params, progress, trajectories)


def audit_unlearning(
    target: Any,
    forget: tuple[Any, Any],
    heldout: tuple[Any, Any],
    *,
    recipe: Any,
    method: str,
    population: tuple[Any, Any],
    params: dict[str, Any] | None = None,
    train_size: int | None = None,
    training_set: tuple[Any, Any] | None = None,
    attacks: Sequence[str] | None = None,
    attack_params: dict[str, dict[str, Any]] | None = None,
    n_shadows: int = 16,
    forget_fraction: float | None = None,
    trajectories: bool = False,
    record_ids: Any = None,
    executor: Any = "local",
    cache_dir: Any = None,
    results_dir: Any = None,
    random_state: int = 0,
    dataset: str = "",
    progress: Any = None,
) -> list[Any]:
    """Ask whether an unlearned model's forgotten records can still be told apart.

    Parameters
    ----------
    target : Target or torch classifier
        The model after unlearning. Apollo needs its labels only (a
        :class:`~privaudit.targets.LabelOnlyTarget` works); U-MIA and U-LiRA read its
        probabilities.
    forget : (X, y)
        The records it unlearned (audited, label 1).
    heldout : (X, y)
        Records from the same distribution it never trained on (audited, label 0).
    recipe : TrainingRecipe
        How the original model was trained (e.g. ``TorchMLPRecipe``): the shadows train
        so. A different architecture than the target's is allowed (the paper's Table V).
    method : str
        The unlearning algorithm (:data:`privaudit.unlearn.METHODS`); the shadows unlearn
        with it and ``params``, as the attacker is assumed to know it.
    params : dict, optional
        The algorithm's hyperparameters (``{"lr": 0.002, "epochs": 5}``), checked before
        any work by :func:`privaudit.unlearn.check_method_params`: a key the method does
        not take (the valid ones listed) or a bad value is refused.
    population : (X, y)
        Other records of the distribution, disjoint from the audited ones: shadow data.
    train_size : int, optional
        The original model's training-set size (shadows train on as many records, or
        they memorise differently): at least the number of forgotten records. Default:
        the size of ``training_set`` if given, else half the population (or the number
        of forgotten records, if larger). The pools'
        training fractions follow from it (an online pool for U-LiRA and online Apollo,
        whose shadows each see about ``train_size`` records of audited + population; an
        offline pool on the population for offline Apollo and U-MIA): the attacks fix
        which pool they read, so there is no ``mode`` or ``train_fraction`` to choose.
    training_set : (X, y), optional
        The original model's training set, when the auditor has it: every forgotten
        record must be in it and no held-out record may be (checked by value before any
        work), the two ways an audit's labels can silently lie.
    attacks : sequence of str, optional
        Among :data:`UNLEARNING_ATTACKS` (default: all).
    attack_params : dict, optional
        Per attack name, constructor parameters (``{"apollo": {"n_rounds": 50}}``), for
        attacks that run, checked against each attack's parameters and ranges before any
        work (``online`` is set by the name, ``apollo`` or ``apollo-offline``).
    n_shadows : int, default=16
        Shadows per pool (the paper: 16 to 32; Figure 6b finds more than 16 no better).
    forget_fraction : float, optional
        Share of its training set U-MIA's surrogate unlearns (default: the forget set's
        share of ``train_size``); refused unless U-MIA, or offline Apollo with kind
        ``"auto"`` (which reads the surrogate), runs.
    trajectories : bool, default=False
        Apollo also asks the target at every search round and stores the UNDER x OVER
        grids of true/false positive rates (the paper's Figure 5); refused without
        Apollo.
    record_ids : array-like, optional
        One unique id per audited record, the forgotten ones first then the held-out
        ones (the order of the results' labels): each result carries them
        (``record_ids``, the ``record_id`` column of ``scores.csv``). Default: positions.
    executor, cache_dir, random_state
        The reference pool's (local processes or Ray; cached, resumable shadows).
    results_dir : str or Path, optional
        Save each result as it finishes and reuse finished ones on a rerun.
    dataset : str, default=""
        Dataset name stamped on the results.
    progress : None, callable(str) or Progress
        Where progress goes.

    Returns
    -------
    list of AttackResult
        One per attack; labels 1 = unlearned, 0 = never trained on;
        ``parameters["method"]`` names the algorithm.

    Raises
    ------
    ValueError
        Overlapping forget / held-out / population records, forgotten records outside
        or held-out records inside ``training_set``, an unknown method or attack, a bad
        value in ``params``, probability attacks on a label-only target, a bad
        ``train_size``, too few shadows.
    TypeError
        A key of ``params`` the method does not take.

    References
    ----------
    .. [1] Tang, Y., Joshi, A. and Kundu, S. "Apollo: A Posteriori Label-Only Membership
       Inference Attack Towards Machine Unlearning." 2025.
    .. [2] Hayes, J. et al. "Inexact Unlearning Needs More Careful Evaluations to Avoid a
       False Sense of Privacy." 2024 (U-LiRA).
    .. [3] Kurmanji, M. et al. "Towards Unbounded Machine Unlearning." NeurIPS 2023 (U-MIA).
    """
    from privaudit.audits._baselines import RandomGuessBaseline
    from privaudit.results import ResultsStore
    from privaudit.targets import as_target, target_fingerprint
    from privaudit.training import as_recipe, data_fingerprint
    from privaudit.unlearn import check_method_params

    # Before any shadow trains: the shadows unlearn with these, minutes later.
    check_method_params(method, params, func=_FUNC, param="params")
    if isinstance(n_shadows, bool) or not isinstance(n_shadows, (int, np.integer)) \
            or n_shadows < 2:
        raise param_error("n_shadows", _FUNC, "an int >= 2 (unlearned and never-trained "
                          "shadows for every record)", n_shadows)
    tgt = as_target(target)
    if tgt.task != "classification":
        raise param_error("target", _FUNC, "a classifier", f"<task {tgt.task!r}>")
    names = _plan(attacks, tgt, attack_params)
    attack_params = dict(attack_params or {})
    _check_settings(names, attack_params, forget_fraction=forget_fraction,
                    trajectories=trajectories)
    if training_set is not None:
        _check_training_set(training_set, _pair(forget, "forget"), _pair(heldout, "heldout"))
        if train_size is None:
            train_size = len(training_set[1])
    inputs = _inputs(forget, heldout, population, train_size)
    ids = _record_ids(record_ids, len(inputs.labels))
    rec = as_recipe(recipe, func=_FUNC)
    shadows = dict(recipe=rec, method=method, params=dict(params or {}),
                   n_shadows=int(n_shadows), executor=executor, cache_dir=cache_dir,
                   random_state=random_state, forget_fraction=forget_fraction)
    model_part = target_fingerprint(tgt, func=_FUNC)
    identity = (tgt.name, type(tgt).__name__, model_part,
                data_fingerprint(inputs.X, inputs.y), inputs.labels,
                data_fingerprint(inputs.X_pop, inputs.y_pop), rec.fingerprint(), method,
                sorted((k, repr(v)) for k, v in shadows["params"].items()),
                inputs.train_size, int(n_shadows), forget_fraction, dataset, random_state,
                None if ids is None else ids.astype(str))
    audit = _UnlearningAudit(tgt, inputs, shadows)
    run = AuditRun(func=_FUNC, target_name=tgt.name, identity=identity,
                   random_state=random_state, store=None if results_dir is None
                   else ResultsStore(results_dir), baseline=RandomGuessBaseline(),
                   progress=progress, dataset=dataset, kind="unlearning",
                   # No readable parameters: the model's labels on the audited records
                   # identify it (one query per record, only when a result is saved).
                   answers=None if model_part is not None else
                   lambda: np.asarray(tgt.query(inputs.X, inputs.y).predictions, dtype=str))
    results = []
    with run.tracking(len(names), "Unlearning attacks"):
        for name in names:
            parts = (repr(sorted(attack_params.get(name, {}).items())), bool(trajectories))
            done = run.reuse(name, parts, inputs.labels)
            if done is None:
                result = audit.run(name, attack_params.get(name, {}), run.progress,
                                   trajectories)
                result.parameters["method"] = method
                if ids is not None:
                    result = replace(result, record_ids=ids)
                done = run.finish(name, parts, result)
            results.append(done)
    return results
