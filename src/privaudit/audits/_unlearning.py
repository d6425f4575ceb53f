"""``audit_unlearning``: did an unlearned model forget its records, on the audit template.

The audited records are the forgotten ones (label 1) and records the model never trained
on (label 0). Shadows are trained like the original model through the reference pool
(executors, cache, resumption): an online pool whose models unlearn the audited records
they saw with the audited algorithm (U-LiRA, Apollo), and an offline pool of plain models
that never saw an audited record (Apollo offline; U-MIA's surrogate is its first model,
unlearning a share of its own records). One :class:`~privaudit.audits.AuditRun` keys,
reuses, checks against chance and saves every result: :class:`UnlearningAudit` is the
kind, :func:`~privaudit.audits._template.drive` its loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import (
    BOOL,
    MAPPING,
    NAMES,
    NONE,
    STR,
    PredicateRule,
    RealRule,
    TypeRule,
    check_attack_params,
    param_error,
    renamed,
)
from privaudit.audits._inputs import reference_fields_set, reference_spec
from privaudit.audits._run import AuditRun
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive
from privaudit.audits._unlearning_attacks import UNLEARNING_RUNNERS
from privaudit.exceptions import PrivauditWarning

__all__ = ["UNLEARNING_ATTACKS", "UnlearningAudit", "UnlearningSettings",
           "audit_unlearning"]

_FUNC = "audit_unlearning"
#: Every unlearning attack, in the paper's table order.
UNLEARNING_ATTACKS: tuple[str, ...] = ("u-mia", "u-lira", "apollo", "apollo-offline")
#: The attacks that test each record against its own shadows of the online pool.
_PER_RECORD: tuple[str, ...] = ("u-lira", "apollo")


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


def _check_training_set(training_set: Any, forget: Any, holdout: Any) -> None:
    """Forgotten records were trained on; held-out records were not (else labels lie)."""
    from privaudit._rows import rows_found_in

    train = _pair(training_set, "training_set")[0]
    outside = np.flatnonzero(~rows_found_in(forget[0], train))
    if outside.size:
        raise param_error("forget", _FUNC, "records of the original training set "
                          "('training_set'): the model cannot unlearn what it never saw",
                          f"<{outside.size} outside it, e.g. row {int(outside[0])}>")
    inside = np.flatnonzero(rows_found_in(holdout[0], train))
    if inside.size:
        raise param_error("holdout", _FUNC, "records outside the original training set "
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
        refused = [a for a in names if _needs_probabilities(a, attack_params)]
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


def _inputs(forget: Any, holdout: Any, population: Any, train_size: Any) -> _Inputs:
    f, h, p = _pair(forget, "forget"), _pair(holdout, "holdout"), _pair(population,
                                                                        "population")
    _check_disjoint(f, h, "holdout", "forget", "a held-out record was never trained on")
    audited = (np.concatenate([f[0], h[0]]), np.concatenate([f[1], h[1]]))
    _check_disjoint(p, audited, "population", "forget and holdout",
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


def _needs_probabilities(name: str, attack_params: Any) -> bool:
    """Whether attack ``name`` reads class probabilities (its tags say so)."""
    from privaudit.attacks import get_tags
    from privaudit.attacks.unlearning import SET_BY_AUDIT, unlearning_attack_class

    params = dict((attack_params or {}).get(name) or {})
    if "online" in SET_BY_AUDIT.get(name, ()):
        params["online"] = name == "apollo"
    return get_tags(unlearning_attack_class(name)(**params)).needs_probabilities


def _is_reference_spec(value: Any) -> bool:
    from privaudit.training import ReferenceSpec

    return isinstance(value, ReferenceSpec)


@dataclass(frozen=True)
class UnlearningSettings(AuditSettings):
    """What an unlearning audit does, checked before any shadow trains.

    ``reference`` carries the shadows' recipe and count (``n_models``); the attacks fix
    which pool each reads, so its ``mode`` and ``train_fraction`` stay unset. The attacks,
    their parameters and ``trajectories`` enter each result's own key (changing one
    attack's parameters reuses the others' results), not the audit's.
    """

    method: str
    reference: Any
    params: Mapping[str, Any] | None = None
    train_size: int | None = None
    attacks: tuple[str, ...] | None = None
    attack_params: Mapping[str, Any] | None = None
    forget_fraction: float | None = None
    trajectories: bool = False

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "method": [STR],
        "reference": [PredicateRule(_is_reference_spec, "a privaudit.training.ReferenceSpec")],
        "params": [NONE, MAPPING],
        "train_size": [NONE, TypeRule((int, np.integer), "an int")],
        "attacks": [NONE, NAMES],
        "attack_params": [NONE, MAPPING],
        "forget_fraction": [NONE, RealRule(0.0, 1.0)],
        "trajectories": [BOOL],
    }
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({"attacks", "attack_params",
                                                      "trajectories"})

    def key_value(self, name: str, value: Any) -> Any:
        if name == "reference":  # the recipe's fingerprint, not its repr
            from privaudit.training import as_recipe

            return (as_recipe(value.recipe, func=_FUNC).fingerprint(), value.n_models)
        return super().key_value(name, value)


def _check_reference(spec: Any, old_count: bool = False) -> Any:
    """The shadows' spec: a recipe, at least two models, no mode or fraction to choose.

    ``old_count``: the count came from the old ``n_shadows`` keyword, named in the error.
    """
    if old_count and spec.n_models < 2:
        raise param_error("n_shadows", _FUNC, "an int >= 2 (unlearned and never-trained "
                          "shadows for every record)", spec.n_models)
    if spec.recipe is None:
        raise param_error("reference", _FUNC, "a ReferenceSpec with a recipe (how the "
                          "original model was trained: the shadows train so)", spec)
    if spec.n_models < 2:
        raise param_error("reference", _FUNC, "a ReferenceSpec with n_models >= 2 "
                          "(unlearned and never-trained shadows for every record)", spec)
    if reference_fields_set(spec, besides=("recipe", "n_models")):
        raise param_error("reference", _FUNC, "a ReferenceSpec without mode, train_fraction "
                          "or to_target: the attacks fix the pools they read and "
                          "'train_size' their training fraction", spec)
    return spec


class UnlearningAudit(AuditKind):
    """The unlearning audit kind: forgotten (1) vs never-trained (0) records of a model.

    Shadow pools are made on first use and shared by the attacks that read them; the
    target is asked once on the audited records (U-MIA and U-LiRA share its answers).
    """

    kind = "unlearning"
    func = _FUNC
    Settings = UnlearningSettings
    description = "Unlearning attacks"

    def __init__(self, target: Any, forget: Any, holdout: Any, *, population: Any,
                 training_set: Any, record_ids: Any, settings: UnlearningSettings,
                 options: RunOptions) -> None:
        from privaudit.targets import as_target
        from privaudit.training import as_recipe
        from privaudit.unlearn import check_method_params

        super().__init__(settings, options)
        s = settings
        # Before any shadow trains: the shadows unlearn with these, minutes later.
        check_method_params(s.method, s.params, func=_FUNC, param="params")
        self.target = as_target(target)
        if self.target.task != "classification":
            raise param_error("target", _FUNC, "a classifier",
                              f"<task {self.target.task!r}>")
        self.names = _plan(s.attacks, self.target, s.attack_params)
        self.attack_params = dict(s.attack_params or {})
        _check_settings(self.names, self.attack_params, forget_fraction=s.forget_fraction,
                        trajectories=s.trajectories)
        train_size = s.train_size
        if training_set is not None:
            _check_training_set(training_set, _pair(forget, "forget"),
                                _pair(holdout, "holdout"))
            if train_size is None:
                train_size = len(training_set[1])
        self.inputs = _inputs(forget, holdout, population, train_size)
        self.record_ids = _record_ids(record_ids, len(self.inputs.labels))
        self._check_shadow_count()
        self.recipe = as_recipe(s.reference.recipe, func=_FUNC)
        self._pools: dict[str, Any] = {}
        self._outputs: Any = None
        self.surrogate_: Any = None

    @property
    def labels(self) -> NDArray[np.int8]:
        return self.inputs.labels

    @property
    def n_shadows(self) -> int:
        return int(self.settings.reference.n_models)

    def target_name(self) -> str:
        return str(self.target.name)

    @property
    def online_fraction(self) -> float:
        """Each online shadow's share of the audited and population records (train_size)."""
        i = self.inputs
        return min(1.0, i.train_size / (len(i.y) + len(i.y_pop)))

    def _check_shadow_count(self) -> None:
        """Before any shadow trains: the count the per-record tests need.

        U-LiRA and online Apollo test a record against its own unlearned and
        never-trained shadows of the online pool. Fewer shadows than U-LiRA's
        ``2 min_per_side`` is refused (no record could be tested). Too few for the pool's
        training fraction leave some records with one side only: a warning, not an error,
        since the count is valid for the other attacks and these two still test the
        records with both sides (leaving out the others, with a warning saying how many);
        the user learns it before the minutes of training, with the count that covers
        every record.
        """
        from privaudit.attacks.unlearning import shadows_for_every_record

        sides = self._sides_needed()
        counts = {name: shadows_for_every_record(self.online_fraction, side)
                  for name, side in sides.items()}
        short = {name: n for name, n in counts.items() if n is not None and self.n_shadows < n}
        if not short:
            return
        i, needed = self.inputs, max(short.values())
        who = (f"{' and '.join(sorted(short))} leave them out of their results" if len(short) > 1
               else f"{next(iter(short))} leaves them out of its result")
        warnings.warn(
            f"{_FUNC}: with {self.n_shadows} shadows (n_models of 'reference', or "
            f"'n_shadows'), each trained on {self.online_fraction:.0%} of the audited and "
            f"population records (train_size {i.train_size} of "
            f"{len(i.y) + len(i.y_pop)}), some audited records will lack an unlearned or "
            f"a never-trained shadow: {who} (a test per record; the other attacks are not "
            f"affected). n_shadows >= {needed} covers every record.",
            PrivauditWarning, stacklevel=4)

    def _sides_needed(self) -> dict[str, int]:
        """Shadows each per-record attack run needs on each side of a record."""
        sides = {name: 1 for name in _PER_RECORD if name in self.names}
        if "u-lira" in sides:
            side = int(self.attack_params.get("u-lira", {}).get("min_per_side", 1))
            if self.n_shadows < 2 * side:  # else U-LiRA's fit refuses it, after training
                raise param_error(
                    "attack_params", _FUNC, "a 'u-lira' min_per_side of at most half the "
                    f"shadows ({self.n_shadows}, n_models of 'reference' or 'n_shadows'): "
                    "every record needs that many shadows on each side",
                    f"<min_per_side {side}>")
            sides["u-lira"] = side
        return sides

    def consistent(self, job: Job) -> Any:
        # The per-record attacks leave out the records with no shadow on one side: a
        # saved result of theirs may hold a subset of the audited records.
        return self._subset_of_audited if job.name in _PER_RECORD else self.labels

    def _subset_of_audited(self, saved: Any) -> bool:
        """Whether a saved result's records are audited records, with their labels."""
        ids = np.arange(len(self.labels)) if self.record_ids is None else self.record_ids
        position = {rid: i for i, rid in enumerate(ids.tolist())}
        rows = [position.get(rid) for rid in saved.record_ids.tolist()]
        return None not in rows and np.array_equal(self.labels[rows], saved.labels)

    def identity(self) -> tuple[Any, ...]:
        from privaudit.targets import target_fingerprint
        from privaudit.training import data_fingerprint

        i, tgt = self.inputs, self.target
        self._model_part = target_fingerprint(tgt, func=_FUNC)
        return (tgt.name, type(tgt).__name__, self._model_part,
                data_fingerprint(i.X, i.y), i.labels, data_fingerprint(i.X_pop, i.y_pop),
                i.train_size, None if self.record_ids is None
                else self.record_ids.astype(str))

    def answers(self) -> Any:
        # No readable parameters: the model's labels on the audited records identify it
        # (one query per record, only when a result is saved).
        if getattr(self, "_model_part", None) is not None:
            return None
        i = self.inputs
        return lambda: np.asarray(self.target.query(i.X, i.y).predictions, dtype=str)

    def plan(self) -> list[Job]:
        s = self.settings
        return [Job(name, self.attack_params.get(name, {}),
                    (repr(sorted(self.attack_params.get(name, {}).items())),
                     bool(s.trajectories)), order)
                for order, name in enumerate(self.names)]

    def run_job(self, job: Job, run: AuditRun) -> Any:
        result = UNLEARNING_RUNNERS[job.name](self, dict(job.params), run.progress)
        result.parameters["method"] = self.settings.method
        if self.record_ids is not None:  # its ids are positions (of the tested records)
            result = replace(result, record_ids=self.record_ids[result.record_ids])
        return result

    # --- what the attacks read, made once --------------------------------------------
    def target_outputs(self) -> Any:
        """The target's answers on the audited records, queried once for U-MIA and U-LiRA."""
        if self._outputs is None:
            self._outputs = self.target.query(self.inputs.X, self.inputs.y)
        return self._outputs

    def _pool(self, recipe: Any, mode: str, fraction: float, progress: Any) -> Any:
        from privaudit.training import ReferencePool

        i, o = self.inputs, self.options
        X_all = np.concatenate([i.X, i.X_pop])
        y_all = np.concatenate([i.y, i.y_pop])
        n = len(i.y)
        return ReferencePool(recipe, self.n_shadows, mode=mode, train_fraction=fraction,
                             executor=o.resolved_executor, cache_dir=o.cache_dir,
                             random_state=o.random_state).fit(
            X_all, y_all, audited=np.arange(n), population=np.arange(n, len(y_all)),
            progress=progress)

    def online_pool(self, progress: Any) -> Any:
        """Shadows on halves of audited + population, unlearning the audited they saw."""
        from privaudit.unlearn import UnlearningRecipe

        if "online" not in self._pools:
            s, i = self.settings, self.inputs
            recipe = UnlearningRecipe(self.recipe, (i.X, i.y), method=s.method,
                                      params=dict(s.params or {}))
            self._pools["online"] = self._pool(recipe, "online", self.online_fraction,
                                               progress)
        return self._pools["online"]

    def offline_pool(self, progress: Any) -> Any:
        """Plain shadows trained on population records only."""
        if "offline" not in self._pools:
            i = self.inputs
            fraction = min(0.9, i.train_size / len(i.y_pop))
            self._pools["offline"] = self._pool(self.recipe, "offline", fraction, progress)
        return self._pools["offline"]


def audit_unlearning(
    target: Any,
    forget: tuple[Any, Any],
    holdout: tuple[Any, Any] | None = None,
    *,
    method: str,
    population: tuple[Any, Any],
    reference: Any = None,
    params: dict[str, Any] | None = None,
    train_size: int | None = None,
    training_set: tuple[Any, Any] | None = None,
    attacks: Sequence[str] | None = None,
    attack_params: dict[str, dict[str, Any]] | None = None,
    forget_fraction: float | None = None,
    trajectories: bool = False,
    record_ids: Any = None,
    random_state: int = 0,
    executor: Any = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    cache_dir: Any = None,
    results_dir: Any = None,
    dataset: str = "",
    progress: Any = None,
    recipe: Any = None,
    n_shadows: int | None = None,
    heldout: tuple[Any, Any] | None = None,
) -> Any:
    """Ask whether an unlearned model's forgotten records can still be told apart.

    Parameters
    ----------
    target : Target or torch classifier
        The model after unlearning. Apollo needs its labels only (a
        :class:`~privaudit.targets.LabelOnlyTarget` works); U-MIA and U-LiRA read its
        probabilities.
    forget : (X, y)
        The records it unlearned (audited, label 1).
    holdout : (X, y)
        Records from the same distribution it never trained on (audited, label 0).
    method : str
        The unlearning algorithm (:data:`privaudit.unlearn.METHODS`); the shadows unlearn
        with it and ``params``, as the attacker is assumed to know it.
    population : (X, y)
        Other records of the distribution, disjoint from the audited ones: shadow data.
    reference : ReferenceSpec
        The shadows, described as every audit describes reference models
        (:class:`privaudit.training.ReferenceSpec`): ``recipe`` (how the original model
        was trained, e.g. ``TorchMLPRecipe``; a different architecture than the target's
        is allowed, the paper's Table V) and ``n_models`` (shadows per pool, at least 2,
        default 16: the paper uses 16 to 32, its Figure 6b finds more than 16 no better).
        Its ``mode`` and ``train_fraction`` stay unset: the attacks fix which pool they
        read and ``train_size`` the fractions. U-LiRA and online Apollo test each record
        against its own shadows, some that unlearned it and some that never saw it: too
        few shadows for the online pool's training fraction leave some records with one
        side only, and those two attacks leave them out of their results (a warning
        before any training gives the count that covers every record).
    params : dict, optional
        The algorithm's hyperparameters (``{"lr": 0.002, "epochs": 5}``), checked before
        any work by :func:`privaudit.unlearn.check_method_params`: a key the method does
        not take (the valid ones listed) or a bad value is refused.
    train_size : int, optional
        The original model's training-set size (shadows train on as many records, or
        they memorise differently): at least the number of forgotten records. Default:
        the size of ``training_set`` if given, else half the population (or the number
        of forgotten records, if larger). The pools' training fractions follow from it
        (an online pool for U-LiRA and online Apollo, whose shadows each see about
        ``train_size`` records of audited + population; an offline pool on the
        population for offline Apollo and U-MIA).
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
        ones (the order of the results' labels). Default: positions.
    random_state, executor, n_jobs, address, cache_dir, results_dir, dataset, progress
        The run options every audit takes (:class:`~privaudit.audits.RunOptions`): the
        seed, where and how the shadows train (local processes or Ray; cached, resumable),
        where results are saved and reused, the dataset's name, where progress goes.
    recipe, n_shadows, heldout
        Old names (a :class:`FutureWarning`; removed in a later release):
        ``reference=ReferenceSpec(recipe=..., n_models=...)`` and ``holdout``.

    Returns
    -------
    AuditReport
        One result per attack (iterate it as a list); labels 1 = unlearned, 0 = never
        trained on; ``parameters["method"]`` names the algorithm.

    Raises
    ------
    ValueError
        Overlapping forget / holdout / population records, forgotten records outside
        or held-out records inside ``training_set``, an unknown method or attack, a bad
        value in ``params``, probability attacks on a label-only target, a bad
        ``train_size``, fewer than 2 shadows (or than twice U-LiRA's ``min_per_side``).
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
    holdout = renamed(heldout, "heldout", holdout, "holdout", None, func=_FUNC,
                      category=FutureWarning)
    if holdout is None:
        raise param_error("holdout", _FUNC, "a pair (X, y) of records the model never "
                          "trained on", None, error=TypeError)
    spec = _check_reference(
        reference_spec(reference, func=_FUNC, names=_FLAT_SHADOW_KEYWORDS,
                       category=FutureWarning, recipe=recipe, n_shadows=n_shadows),
        old_count=n_shadows is not None)
    options = RunOptions.checked(
        _FUNC, random_state=random_state, executor=executor, n_jobs=n_jobs,
        address=address, cache_dir=cache_dir, results_dir=results_dir, progress=progress,
        dataset=dataset)
    settings = UnlearningSettings(
        method=method, reference=spec, params=params, train_size=train_size,
        attacks=None if attacks is None else tuple(attacks), attack_params=attack_params,
        forget_fraction=forget_fraction, trajectories=trajectories)
    return drive(UnlearningAudit(target, forget, holdout, population=population,
                                 training_set=training_set, record_ids=record_ids,
                                 settings=settings, options=options))


#: audit_unlearning's old keywords -> the ReferenceSpec field each one sets.
_FLAT_SHADOW_KEYWORDS = {"recipe": "recipe", "n_shadows": "n_models"}
