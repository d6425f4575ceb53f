"""``audit_model``: one call that runs every requested membership attack against a model.

The model membership kind on the audit template: :class:`ModelSettings` (checked before
any work), :class:`ModelAudit` (the target queried once on the audited records, and once
on the population when an attack needs it; the reference pool trained on first use,
through the executor and the on-disk cache, queried once and shared by every reference
attack) and :func:`~privaudit.audits._template.drive`, the loop of every kind (run key,
reuse, baseline, slices, atomic save, progress).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._progress import Progress
from privaudit._validation import (
    BOOL,
    MAPPING,
    PredicateRule,
    canonical_names,
    param_error,
)
from privaudit.audits._inputs import (
    check_attack_names,
    check_population,
    check_records,
    reference_spec,
)
from privaudit.audits._plan import ModelAuditPlan, plan_model_audit
from privaudit.audits._run import AuditRun, Enricher
from privaudit.audits._slices import SliceEnricher
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive

if TYPE_CHECKING:
    from privaudit.attacks import BaseAttack
    from privaudit.attacks.membership import ReferenceOutputs
    from privaudit.report import AuditReport
    from privaudit.results import AttackResult
    from privaudit.targets import ModelOutputs, Target
    from privaudit.training import Executor, ReferencePool, ReferenceSpec

__all__ = ["ModelAudit", "ModelSettings", "audit_model"]

_FUNC = "audit_model"


def audit_model(
    target: object,
    X: ArrayLike,
    y: ArrayLike,
    labels: ArrayLike,
    *,
    population: tuple[Any, ArrayLike] | None = None,
    attacks: Sequence[str] | None = None,
    attack_params: dict[str, dict[str, Any]] | None = None,
    reference: ReferenceSpec | None = None,
    recipe: object = None,
    n_reference_models: int | None = None,
    reference_mode: str | None = None,
    reference_fraction: float | None = None,
    wrap: Callable[[Any], Any] | None = None,
    record_ids: ArrayLike | None = None,
    dataset: str = "",
    random_state: int = 0,
    n_jobs: int | None = None,
    executor: str | Executor = "local",
    address: str | None = None,
    cache_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    check_fidelity: bool = True,
    slices: bool = True,
    progress: Callable[[str], object] | Progress | None = None,
    augmentations: Sequence[Callable[[Any], Any]] | None = None,
) -> AuditReport:
    """Run membership attacks against ``target`` and return one result per attack.

    Parameters
    ----------
    target : Target or fitted scikit-learn estimator
        The audited model (wrapped with :func:`privaudit.targets.as_target`).
    X, y : array-like
        The audited records and their true labels.
    labels : array-like of 0/1
        ``labels[i] = 1`` when row ``i`` of ``X`` was in the target's training set.
    population : (X_population, y_population), optional
        Records from the same distribution that the target did NOT train on and that are
        not audited. Needed by ``shadow``, ``rmia`` and offline reference models.
    attacks : sequence of str, optional
        Default: :data:`~privaudit.audits.DEFAULT_ATTACKS` for a classifier,
        :data:`~privaudit.audits.DEFAULT_REGRESSION_ATTACKS` for a regressor. Registry
        names (see :func:`privaudit.attacks.available_attacks`): ``loss``,
        ``confidence``, ``entropy``, ``modified-entropy``, ``gaussian-threshold``,
        ``shadow``, ``trained-lr`` (``-mlp``, ``-rf``, ``-knn``), ``lira-offline``,
        ``lira-online``, ``rmia``, ``label-only``, ``gradient-norm`` (torch targets).
    attack_params : dict, optional
        Constructor parameters per attack name, e.g. ``{"lira-online": {"fix_variance":
        True}}``, checked before any work as a configuration's ``attack_params`` are: an
        attack that does not run, a parameter the attack does not have (the valid ones
        are listed) or a value its ``check_params()`` refuses is an error.
    reference : ReferenceSpec, optional
        The reference models (:class:`privaudit.training.ReferenceSpec`; default
        ``ReferenceSpec()``): ``recipe`` (how to train a model "like the target"; default
        for a scikit-learn target: an unfitted clone of it), ``n_models`` (default 16,
        shared by all reference attacks), ``mode`` (``auto``: online when ``lira-online``
        is requested, the offline attacks then reading the OUT models of the same pool as
        in Carlini et al., else offline: reference models train on the population only),
        ``train_fraction`` (default: the fraction of the candidate records that gives the
        reference models as many training records as the target had, since a size
        mismatch silently weakens reference-model attacks) and ``to_target`` (default
        :func:`as_target`).
    recipe, n_reference_models, reference_mode, reference_fraction, wrap
        Deprecated (a :class:`DeprecationWarning`; removed in a later release): the
        fields ``recipe``, ``n_models``, ``mode``, ``train_fraction`` and ``to_target``
        of ``reference``. Not together with ``reference``.
    record_ids : array-like, optional
        Identifiers of the audited records (default ``0..n-1``).
    dataset : str
        Dataset name for provenance.
    random_state : int, default=0
        Seeds the reference pool and every attack: same seed, same numbers, whatever
        ``n_jobs`` or ``executor``.
    executor : {"local", "ray"} or Executor, default="local"
        Where reference models train: ``"local"`` processes, ``"ray"``, or an executor
        object (:class:`~privaudit.training.LocalExecutor`,
        :class:`~privaudit.training.RayExecutor`, anything with ``map_unordered``).
    n_jobs, address
        With an executor name only: worker processes (``-1``: every CPU) and the Ray
        cluster's address. With an executor object, set them on the object.
    cache_dir : path, optional
        On-disk cache of the reference models (an interrupted audit resumes).
    results_dir : path, optional
        Each finished attack is saved there (``<target>-<hash>__<attack>-<hash>/``, see
        :class:`privaudit.results.ResultsStore`) and reused by a rerun with the same
        inputs. A damaged saved result is recomputed and overwritten, with a warning.
    check_fidelity : bool, default=True
        Warn (:class:`~privaudit.exceptions.FidelityWarning`) when the reference models
        differ clearly from the target.
    slices : bool, default=True
        Add to every result the leakage per slice of the audited records and its most
        exposed members (:func:`~privaudit.audits.slice_result`), as
        ``result.audit.slices`` (a :class:`~privaudit.results.SliceSummary`): its ``rows``
        (:func:`~privaudit.results.slice_metrics`: entire dataset, each class, correct /
        incorrect predictions and loss percentiles for a classifier; entire dataset and
        loss percentiles for a regressor), ``most_exposed`` (the 10 members with the
        lowest detection FPR, from :func:`~privaudit.results.vulnerability_ranking`),
        ``most_exposed_tied`` and ``settings``. Intervals use 100 stratified bootstrap
        resamples (:data:`~privaudit.audits.SLICE_SETTINGS`), seeded with
        ``random_state``; the HTML report shows them. Slicing reads the target's outputs
        on the audited records and never
        queries the target for it: when no attack queried it (an audit made only of
        self-querying attacks such as ``gradient-norm``), results are left unsliced rather
        than spending queries (a label-only budget) on them. Results reused from
        ``results_dir`` keep what they were saved with, and get slices when they lack them
        and the outputs are at hand.
    progress : None, bool, callable(str) or Progress, optional
        Called with a short message at each step; also shows the reference pool's
        training (``training reference models: 5/16``).
    augmentations : list of callables, optional
        LiRA with augmented queries (Carlini et al. 2022, Section VI.B): the reference
        models and the target are also queried on these augmented copies of the audited
        records (picklable callables ``X -> X'`` keeping shape and labels, e.g.
        :func:`~privaudit.attacks.membership.image_shifts`), and ``lira-online`` /
        ``lira-offline`` fit one Gaussian per query. Other attacks are unchanged.

    Returns
    -------
    AuditReport
        One :class:`~privaudit.results.AttackResult` per attack, in the order of
        ``attacks`` (iterate or index it as a list); ``labels`` and ``scores`` aligned
        with the rows of X. The model kind has no separate baselines or compared models.
    """
    spec = reference_spec(reference, recipe=recipe, n_reference_models=n_reference_models,
                          reference_mode=reference_mode,
                          reference_fraction=reference_fraction, wrap=wrap)
    options = RunOptions.checked(
        _FUNC, random_state=random_state, executor=executor, n_jobs=n_jobs,
        address=address, cache_dir=cache_dir, results_dir=results_dir, progress=progress,
        dataset=dataset)
    settings = ModelSettings(
        reference=spec, attacks=_as_names(attacks), attack_params=attack_params,
        augmentations=_as_tuple(augmentations), check_fidelity=check_fidelity,
        slices=slices)
    return drive(ModelAudit(target, X, y, labels, population=population,
                            record_ids=record_ids, settings=settings, options=options))


def _as_names(attacks: object) -> object:
    """Old attack names mapped to the new ones (one FutureWarning); a list as a tuple."""
    names = canonical_names(attacks, param="attacks", func=_FUNC, stacklevel=4)
    return tuple(names) if isinstance(names, list) else names


def _as_tuple(values: object) -> object:
    return tuple(values) if isinstance(values, list) else values


def _is_reference_spec(value: object) -> bool:
    from privaudit.training import ReferenceSpec

    return isinstance(value, ReferenceSpec)


def _or_none(test: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or test(value)


def _is_name_list(value: object) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str) and len(value) > 0)


def _is_callable_list(value: object) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str)
            and all(callable(v) for v in value))


@dataclass(frozen=True)
class ModelSettings(AuditSettings):
    """What a model membership audit does, checked before any query or training.

    ``attacks`` and ``attack_params`` are checked against the registry (names, each
    attack's parameters) by :class:`ModelAudit`, which knows the target's task.
    """

    reference: ReferenceSpec
    attacks: tuple[str, ...] | None = None
    attack_params: Mapping[str, Mapping[str, Any]] | None = None
    augmentations: tuple[Callable[[Any], Any], ...] | None = None
    check_fidelity: bool = True
    slices: bool = True

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "reference": [PredicateRule(_is_reference_spec, "a privaudit.training.ReferenceSpec")],
        # None (the default) is left out of the expected forms: the messages of earlier
        # releases, which callers match, name only the form to give.
        "attacks": [PredicateRule(_or_none(_is_name_list), "a non-empty list of attack names")],
        "attack_params": [PredicateRule(_or_none(MAPPING.test),
                                        "a dict {attack name: {parameter: value}}")],
        "augmentations": [PredicateRule(_or_none(_is_callable_list),
                                        "a list of callables X -> X'")],
        "check_fidelity": [BOOL],
        "slices": [BOOL],
    }
    # None enters the audit's key: the attacks, their parameters, the pool (n_models,
    # mode, train_fraction) and the augmentations enter each attack's own key (changing
    # one attack's parameters reuses the others' results) and the recipe's fingerprint the
    # identity; check_fidelity only warns and slices only enrich (a reused result gets
    # its slices when it lacks them), so neither can change a number.
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({
        "reference", "attacks", "attack_params", "augmentations", "check_fidelity",
        "slices"})


def _check_attack_plan(plan: ModelAuditPlan, tgt: Target, lab: NDArray[np.int8],
                       n_reference_models: int) -> None:
    """Before any query or training: each attack can run on this target and this pool."""
    from privaudit.attacks import check_attack_plan

    check_attack_plan(
        plan.attacks, task=tgt.task, n_reference_models=n_reference_models,
        reference_mode=plan.mode,
        white_box=callable(getattr(tgt, "per_sample_gradient_norms", None)),
        n_members=int(lab.sum()), n_non_members=int(lab.size - lab.sum()),
        attack_params=plan.params, func=_FUNC,
    )


def _require_population(plan: ModelAuditPlan, X_pop: object) -> None:
    needs_reference = plan.of_kind("reference")
    who = plan.needs_population or (needs_reference if plan.mode == "offline" else [])
    if who and X_pop is None:
        raise param_error("population", _FUNC,
                          f"given for {', '.join(who)} (reference models and RMIA need records "
                          "the target did not train on)", None)


class ModelAudit(AuditKind):
    """The model membership kind: members (1) and non-members (0) of a model's training set.

    The target is asked once on the audited records (every attack reads its answers) and
    once on the population when an attack needs it; the reference pool is trained on first
    use, through the executor and the cache, and shared by every reference attack. Jobs
    run by group (direct, cross-fitted, then reference: :meth:`ModelAuditPlan.run_order`),
    results come back in the order of ``attacks``.
    """

    kind = "model"
    func = _FUNC
    Settings = ModelSettings
    #: The run keys of earlier releases (see :meth:`run_identity`): saved results reused.
    key_scheme = None

    def __init__(self, target: object, X: ArrayLike, y: ArrayLike, labels: ArrayLike, *,
                 population: tuple[Any, ArrayLike] | None, record_ids: ArrayLike | None,
                 settings: ModelSettings, options: RunOptions) -> None:
        from privaudit.targets import as_target

        super().__init__(settings, options)
        self.settings: ModelSettings = settings
        s, spec = settings, settings.reference
        self.target: Target = as_target(target)
        self.X, self.y, self._labels, self.record_ids = check_records(X, y, labels,
                                                                      record_ids)
        names, params = check_attack_names(s.attacks, s.attack_params, spec.mode,
                                           self.target.task)
        self.audit_plan = plan_model_audit(names, params, tgt=self.target,
                                           reference_mode=spec.mode,
                                           augmentations=s.augmentations)
        _check_attack_plan(self.audit_plan, self.target, self._labels, spec.n_models)
        self.X_pop, self.y_pop = check_population(population, self.X, self.y)
        _require_population(self.audit_plan, self.X_pop)
        reference_names = self.audit_plan.of_kind("reference")
        # Before any work: a reference pool needs a recipe (a clone of a sklearn target).
        self.recipe = (_default_recipe(spec.recipe, self.target, reference_names)
                       if reference_names else None)
        self._audited: ModelOutputs | None = None
        self._augmented: tuple[ModelOutputs, ...] | None = None
        self._population: ModelOutputs | None = None
        self._pool: ReferenceOutputs | None = None
        self._model_part: str | None = None

    # --- what the driver reads ---------------------------------------------------------
    @property
    def labels(self) -> NDArray[np.int8]:
        return self._labels

    def target_name(self) -> str:
        return str(self.target.name)

    def identity(self) -> tuple[Any, ...]:
        """The model's parameters (or, unreadable, its answers), the data, the recipe, ids."""
        from privaudit.targets import target_fingerprint
        from privaudit.training import as_recipe, data_fingerprint

        tgt, recipe = self.target, self.settings.reference.recipe
        self._model_part = target_fingerprint(tgt, func=_FUNC)
        recipe_part = None
        if recipe is not None and self.audit_plan.of_kind("reference"):
            recipe_part = as_recipe(recipe, func=_FUNC).fingerprint()
        return (
            tgt.name, type(tgt).__name__, self._model_part, data_fingerprint(self.X, self.y),
            self._labels,
            None if self.X_pop is None else data_fingerprint(self.X_pop, self.y_pop),
            recipe_part,
            None if self.record_ids is None else np.asarray(self.record_ids).astype(str),
        )

    def answers(self) -> Callable[[], Any] | None:
        # No readable parameters: the model's answers on the audited records identify it.
        return (lambda: self.audited().loss) if self._model_part is None else None

    def enrichers(self) -> list[Enricher]:
        if not self.settings.slices:
            return []
        return [SliceEnricher(self.audited_if_queried, self._labels,
                              self.options.random_state)]

    def run_identity(self) -> tuple[Any, ...]:
        """The run keyed as earlier releases keyed it: their saved results are reused.

        The template's key would add the kind and the settings' key items, but every
        setting is NOT_IN_KEY here (each attack's key carries its own), so only the
        identity, the dataset and the seed enter, in the order results were saved with.
        """
        o = self.options
        return (*self.identity(), o.dataset, o.random_state)

    def plan(self) -> list[Job]:
        p, ref = self.audit_plan, self.settings.reference
        order = {name: i for i, name in enumerate(p.attacks)}
        return [Job(name, p.params.get(name, {}),
                    p.key_parts(name, ref.n_models, ref.train_fraction), order[name])
                for name in p.run_order()]

    def run_job(self, job: Job, run: AuditRun) -> AttackResult:
        return _RUNNERS[self.audit_plan.group(job.name)](self, job.name, run)

    def finished(self, results: list[Any], run: AuditRun) -> list[Any]:
        # A result finished before any attack queried the target (gradient-norm listed
        # first), or reused from an older run, is sliced now if the outputs were queried.
        for name, result in zip(self.audit_plan.attacks, results, strict=True):
            run.enrich(name, result, save=True)
        return results

    # --- what the attacks read, made once ------------------------------------------------
    def audited(self) -> ModelOutputs:
        """The target's outputs on the audited records (queried on first use)."""
        if self._audited is None:
            self.say(f"querying {self.target.name} on {len(self.y)} audited records")
            self._audited = self.target.query(self.X, self.y)
        return self._audited

    def audited_if_queried(self) -> ModelOutputs | None:
        """The outputs if some attack queried them, else None (slicing spends no query)."""
        return self._audited

    def augmented(self) -> tuple[ModelOutputs, ...]:
        """The target's outputs on the augmented records (once for every attack)."""
        if self._augmented is None:
            from privaudit.attacks.membership import query_augmented

            augs = self.audit_plan.augmentations or []
            self.say(f"querying {self.target.name} on {len(augs)} augmentations of "
                             f"{len(self.y)} records")
            self._augmented = query_augmented(self.target, self.X, self.y, augs, func=_FUNC)
        return self._augmented

    def population_outputs(self) -> ModelOutputs:
        """The target's outputs on the population (once, for the attacks that fit on it)."""
        if self._population is None:
            assert self.y_pop is not None  # _require_population refused an audit without
            self.say(f"querying {self.target.name} on {len(self.y_pop)} population "
                             "records")
            self._population = self.target.query(self.X_pop, self.y_pop)
        return self._population

    def say(self, message: str) -> None:
        """One progress message (the run's progress: the same object)."""
        self.progress.message(message)

    # --- the work of one job, by group -----------------------------------------------------
    def new_attack(self, name: str, run: AuditRun) -> BaseAttack:
        from privaudit.attacks import get_attack

        return run.seed(get_attack(name, **self.audit_plan.params.get(name, {})))

    @property
    def common(self) -> dict[str, Any]:
        """What every attack stamps on its result."""
        return {"record_ids": self.record_ids, "dataset": self.options.dataset,
                "target_name": self.target.name}

    def run_direct(self, name: str, run: AuditRun) -> AttackResult:
        """An attack that needs no reference pool (direct or cross-fitted)."""
        tags = self.audit_plan.tags[name]
        self.say(f"running {name}" + (" (cross-fitted on the audited labels)"
                                      if tags.cross_fitted else ""))
        attack = self.new_attack(name, run)
        if tags.fits_on_audited:
            # Yeom et al.'s Gaussian adversary knows the error scales of members and
            # non-members (Theorem 3): they are estimated on the audited records.
            attack.fit(outputs=self.audited(), labels=self._labels)
        if tags.uses_population_features and self.X_pop is not None:
            # Calibrated on records the target did not train on (read, never queried),
            # e.g. the label-only attack's noise scale per feature.
            attack.fit(X=self.X_pop)
        if tags.needs_population:
            # No pool: fitted on the target's answers on the population (queried once,
            # shared with RMIA), e.g. the quantile screen's model of non-members' scores.
            attack.fit(X=self.X_pop, y=self.y_pop, outputs=self.population_outputs())
        shared = None if tags.queries_target else self.audited()
        return attack.run(self.target, self.X, self.y, self._labels, outputs=shared,
                          **self.common)

    def run_reference(self, name: str, run: AuditRun) -> AttackResult:
        """A reference attack: fit on the shared pool, run on the target's answers."""
        reference = self.reference_pool()
        self.say(f"running {name}")
        attack = self.new_attack(name, run)
        needs = self.audit_plan.tags[name].needs_population
        attack.fit(reference, population_outputs=self.population_outputs() if needs else None)
        if self.audit_plan.augmented(name):
            # The target answers the augmented records too, once for every attack.
            result = attack.run(self.target, self.X, self.y, self._labels,
                                outputs=self.audited(), augmented_outputs=self.augmented(),
                                **self.common)
        else:
            result = attack.run(outputs=self.audited(), labels=self._labels, **self.common)
        result.extra.setdefault("n_reference_models", self.settings.reference.n_models)
        return result

    def reference_pool(self) -> ReferenceOutputs:
        """Train (or read from the cache) the reference models and query them, once."""
        if self._pool is None:
            self._pool = self._train_pool()
        return self._pool

    def _train_pool(self) -> ReferenceOutputs:
        from privaudit.attacks.membership import collect_reference_outputs
        from privaudit.targets import as_target

        spec, plan, o = self.settings.reference, self.audit_plan, self.options
        n_pop = 0 if self.y_pop is None else len(self.y_pop)
        n_candidates = (len(self.y) if plan.mode == "online" else 0) + n_pop
        fraction = _train_fraction(spec.train_fraction, self._labels, n_candidates)
        self.say(f"training {spec.n_models} reference models ({plan.mode}, "
                 f"each on {fraction:.0%} of {n_candidates} records)")
        augmented = any(plan.augmented(a) for a in plan.of_kind("reference"))
        reference = collect_reference_outputs(
            self.recipe, self.X, self.y, X_population=self.X_pop, y_population=self.y_pop,
            n_models=spec.n_models, mode=plan.mode,  # type: ignore[arg-type]
            train_fraction=fraction,
            query_population=bool(plan.needs_population) or self.X_pop is not None,
            to_target=spec.to_target or as_target, executor=o.resolved_executor,
            cache_dir=o.cache_dir, random_state=o.random_state, progress=self.progress,
            augmentations=plan.augmentations if augmented else None,
        )
        if self.settings.check_fidelity and reference.pool is not None:
            self.check_fidelity(reference.pool)
        return reference

    def check_fidelity(self, pool: ReferencePool) -> None:
        """Warn when the reference models differ clearly from the target."""
        test_rows = np.flatnonzero(self._labels == 0)
        if test_rows.size:
            from sklearn.utils import _safe_indexing

            pool.check_fidelity(self.target, _safe_indexing(self.X, test_rows),
                                self.y[test_rows], target_n_train=int(self._labels.sum()))


#: The work of one job, by the group its attack's tags put it in (ModelAuditPlan.group).
_RUNNERS: dict[str, Callable[[ModelAudit, str, AuditRun], AttackResult]] = {
    "direct": ModelAudit.run_direct,
    "cross-fitted": ModelAudit.run_direct,
    "reference": ModelAudit.run_reference,
}


def _default_recipe(recipe: object, tgt: Target, names: list[str],
                    func: str = _FUNC) -> object:
    """The recipe given, or an unfitted clone of a scikit-learn target."""
    if recipe is not None:
        return recipe
    estimator = getattr(tgt, "estimator", None)
    if estimator is None:
        raise param_error("recipe", func, f"given to train reference models for {names} "
                          "(only scikit-learn targets default to a clone)", None)
    from sklearn.base import clone

    return clone(estimator)


def _train_fraction(fraction: float | None, labels: np.ndarray, n_candidates: int) -> float:
    """The fraction given, or as many training records as the target had (at most half).

    Never more than half of the candidates: every record must stay OUT of enough models
    for LiRA's OUT Gaussians and RMIA's Pr_OUT (and IN of enough for online LiRA).
    """
    if fraction is not None:
        return fraction
    wanted = labels.sum() / max(n_candidates, 1)
    if wanted > 0.5:
        import warnings

        from privaudit.exceptions import FidelityWarning

        warnings.warn(
            f"audit_model: the target trained on {int(labels.sum())} records but the "
            f"reference models can train on at most half of the {n_candidates} "
            "candidate records; give a larger population for faithful reference "
            "models.", FidelityWarning, stacklevel=8,
        )
    return float(np.clip(wanted, 0.05, 0.5))
