"""``audit_model``: one call that runs every requested membership attack against a model.

The flow of DESIGN.md as validate -> plan -> loop: the target is queried once on the
audited records (and once on the population when an attack needs it); reference models are
trained once, through the executor and the on-disk cache, and queried once; every attack
reads those shared outputs. What makes the audit trustworthy (run key, reuse, baseline,
slices, atomic save, progress) is the shared :class:`~privaudit.audits.AuditRun`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import param_error
from privaudit.audits._baselines import RandomGuessBaseline
from privaudit.audits._inputs import (
    check_attack_names,
    check_population,
    check_records,
    check_settings,
    reference_spec,
)
from privaudit.audits._plan import ModelAuditPlan, plan_model_audit
from privaudit.audits._run import AuditRun
from privaudit.audits._slices import SliceEnricher

__all__ = ["audit_model"]

_FUNC = "audit_model"


def audit_model(
    target: Any,
    X: Any,
    y: ArrayLike,
    labels: ArrayLike,
    *,
    population: tuple[Any, ArrayLike] | None = None,
    attacks: Sequence[str] | None = None,
    attack_params: dict[str, dict[str, Any]] | None = None,
    reference: Any = None,
    recipe: Any = None,
    n_reference_models: int | None = None,
    reference_mode: str | None = None,
    reference_fraction: float | None = None,
    wrap: Callable[[Any], Any] | None = None,
    record_ids: ArrayLike | None = None,
    dataset: str = "",
    random_state: int = 0,
    n_jobs: int | None = None,
    executor: Any = "local",
    address: str | None = None,
    cache_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    check_fidelity: bool = True,
    slices: bool = True,
    progress: Any = None,
    augmentations: Sequence[Callable[[Any], Any]] | None = None,
) -> list[Any]:
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
    progress : None, callable(str) or Progress, optional
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
    list of AttackResult
        In the order of ``attacks``; ``labels`` and ``scores`` aligned with the rows of X.
    """
    spec = reference_spec(reference, recipe=recipe, n_reference_models=n_reference_models,
                          reference_mode=reference_mode,
                          reference_fraction=reference_fraction, wrap=wrap)
    runner = check_settings(
        random_state=random_state, n_jobs=n_jobs, executor=executor, address=address,
        dataset=dataset, cache_dir=cache_dir, results_dir=results_dir,
        check_fidelity=check_fidelity, slices=slices, progress=progress,
    )
    from privaudit.targets import as_target

    tgt = as_target(target)
    X, y_arr, lab, record_ids = check_records(X, y, labels, record_ids)
    names, params = check_attack_names(attacks, attack_params, spec.mode, tgt.task)
    plan = plan_model_audit(names, params, tgt=tgt, reference_mode=spec.mode,
                            augmentations=augmentations)
    _check_attack_plan(plan, tgt, lab, spec.n_models)
    X_pop, y_pop = check_population(population, X, y_arr)
    _require_population(plan, X_pop)
    audit = _ModelAudit(tgt, X, y_arr, lab, X_pop, y_pop, plan, {
        "recipe": spec.recipe, "n_reference_models": spec.n_models,
        "to_target": spec.to_target, "train_fraction": spec.train_fraction,
        "executor": runner, "cache_dir": cache_dir, "check_fidelity": check_fidelity,
    })
    audit.run = _model_run(audit, record_ids=record_ids, dataset=dataset,
                           random_state=random_state, results_dir=results_dir,
                           slices=slices, progress=progress)
    audit.common = {"record_ids": record_ids, "dataset": dataset, "target_name": tgt.name}
    return audit.loop()


def _check_attack_plan(plan: ModelAuditPlan, tgt: Any, lab: np.ndarray,
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


def _require_population(plan: ModelAuditPlan, X_pop: Any) -> None:
    needs_reference = plan.of_kind("reference")
    who = plan.needs_population or (needs_reference if plan.mode == "offline" else [])
    if who and X_pop is None:
        raise param_error("population", _FUNC,
                          f"given for {', '.join(who)} (reference models and RMIA need records "
                          "the target did not train on)", None)


def _model_run(audit: _ModelAudit, *, record_ids: Any, dataset: str, random_state: int,
               results_dir: Any, slices: bool, progress: Any) -> AuditRun:
    """The run of a model audit: everything that changes a result goes into its key.

    The model's parameters (or, when they cannot be read, its answers), the data, the
    population, the recipe, the ids, the seed: a stale result is never reused.
    """
    from privaudit.results import ResultsStore
    from privaudit.targets import target_fingerprint
    from privaudit.training import as_recipe, data_fingerprint

    tgt, recipe = audit.tgt, audit.settings["recipe"]
    model_part = target_fingerprint(tgt, func=_FUNC)
    recipe_part = None
    if recipe is not None and audit.plan.of_kind("reference"):
        recipe_part = as_recipe(recipe, func=_FUNC).fingerprint()
    identity = (
        tgt.name, type(tgt).__name__, model_part, data_fingerprint(audit.X, audit.y),
        audit.labels,
        None if audit.X_pop is None else data_fingerprint(audit.X_pop, audit.y_pop),
        recipe_part, None if record_ids is None else np.asarray(record_ids).astype(str),
        dataset, random_state,
    )
    enrichers = [SliceEnricher(audit.audited_if_queried, audit.labels, random_state)]
    return AuditRun(
        func=_FUNC, target_name=tgt.name, identity=identity, random_state=random_state,
        store=None if results_dir is None else ResultsStore(results_dir),
        baseline=RandomGuessBaseline(), enrichers=enrichers if slices else [],
        progress=progress, dataset=dataset,
        # No readable parameters: the model's answers on the audited records identify it.
        answers=(lambda: audit.audited().loss) if model_part is None else None,
    )


class _ModelAudit:
    """The state of one model audit: inputs, plan, the target's answers (asked once)."""

    run: AuditRun
    common: dict[str, Any]

    def __init__(self, tgt: Any, X: Any, y: np.ndarray, labels: np.ndarray, X_pop: Any,
                 y_pop: Any, plan: ModelAuditPlan, settings: dict[str, Any]) -> None:
        self.tgt, self.X, self.y, self.labels = tgt, X, y, labels
        self.X_pop, self.y_pop, self.plan, self.settings = X_pop, y_pop, plan, settings
        self._answers: dict[str, Any] = {}

    def audited(self) -> Any:
        """The target's outputs on the audited records (queried on first use)."""
        if "audited" not in self._answers:
            self.run.say(f"querying {self.tgt.name} on {len(self.y)} audited records")
            self._answers["audited"] = self.tgt.query(self.X, self.y)
        return self._answers["audited"]

    def audited_if_queried(self) -> Any:
        """The outputs if some attack queried them, else None (slicing spends no query)."""
        return self._answers.get("audited")

    def augmented(self) -> Any:
        """The target's outputs on the augmented records (once for every attack)."""
        if "augmented" not in self._answers:
            from privaudit.attacks.membership import query_augmented

            augs = self.plan.augmentations or []
            self.run.say(f"querying {self.tgt.name} on {len(augs)} augmentations of "
                         f"{len(self.y)} records")
            self._answers["augmented"] = query_augmented(self.tgt, self.X, self.y, augs,
                                                         func=_FUNC)
        return self._answers["augmented"]

    def parts(self, name: str) -> tuple:
        s = self.settings
        # The run key digests values, not names: renaming the fraction kept saved keys.
        return self.plan.key_parts(name, s["n_reference_models"], s["train_fraction"])

    def loop(self) -> list[Any]:
        """Reuse what is saved, run the rest by kind, return in the order asked."""
        plan, run = self.plan, self.run
        results = {}
        with run.tracking(len(plan.attacks)):
            for name in plan.attacks:
                saved = run.reuse(name, self.parts(name), self.labels)
                if saved is not None:
                    results[name] = saved
            todo = [a for a in plan.attacks if a not in results]
            for name in plan.of_kind("direct", todo) + plan.of_kind("cross-fitted", todo):
                results[name] = run.finish(name, self.parts(name), self.run_one(name))
            todo_reference = plan.of_kind("reference", todo)
            if todo_reference:
                results.update(self.run_reference(todo_reference))
        # A result finished before any attack queried the target (gradient-norm listed
        # first), or reused from an older run, is sliced now if the outputs were queried.
        for name in plan.attacks:
            run.enrich(name, results[name], save=True)
        return [results[a] for a in plan.attacks]

    def new_attack(self, name: str) -> Any:
        from privaudit.attacks import get_attack

        return self.run.seed(get_attack(name, **self.plan.params.get(name, {})))

    def run_one(self, name: str) -> Any:
        """An attack that needs no reference pool (direct or cross-fitted)."""
        tags = self.plan.tags[name]
        self.run.say(f"running {name}" + (" (cross-fitted on the audited labels)"
                                          if tags.cross_fitted else ""))
        attack = self.new_attack(name)
        if tags.fits_on_audited:
            # Yeom et al.'s Gaussian adversary knows the error scales of members and
            # non-members (Theorem 3): they are estimated on the audited records.
            attack.fit(outputs=self.audited(), labels=self.labels)
        if tags.uses_population_features and self.X_pop is not None:
            # Calibrated on records the target did not train on (read, never queried),
            # e.g. the label-only attack's noise scale per feature.
            attack.fit(X=self.X_pop)
        shared = None if tags.queries_target else self.audited()
        return attack.run(self.tgt, self.X, self.y, self.labels, outputs=shared,
                          **self.common)

    def run_reference(self, names: list[str]) -> dict[str, Any]:
        """Train the pool once, then fit and run every reference attack on it."""
        reference = self.reference_pool(names)
        population_outputs = None
        if self.plan.needs_population:
            self.run.say(f"querying {self.tgt.name} on {len(self.y_pop)} population records")
            population_outputs = self.tgt.query(self.X_pop, self.y_pop)
        out = {}
        for name in names:
            self.run.say(f"running {name}")
            attack = self.new_attack(name)
            needs = self.plan.tags[name].needs_population
            attack.fit(reference, population_outputs=population_outputs if needs else None)
            if self.plan.augmented(name):
                # The target answers the augmented records too, once for every attack.
                result = attack.run(self.tgt, self.X, self.y, self.labels,
                                    outputs=self.audited(),
                                    augmented_outputs=self.augmented(), **self.common)
            else:
                result = attack.run(outputs=self.audited(), labels=self.labels,
                                    **self.common)
            result.extra.setdefault("n_reference_models", self.settings["n_reference_models"])
            out[name] = self.run.finish(name, self.parts(name), result)
        return out

    def reference_pool(self, names: list[str]) -> Any:
        """Train (or read from the cache) the reference models and query them once."""
        from privaudit.attacks.membership import collect_reference_outputs
        from privaudit.targets import as_target

        s, plan = self.settings, self.plan
        recipe = _default_recipe(s["recipe"], self.tgt, names)
        n_pop = 0 if self.y_pop is None else len(self.y_pop)
        n_candidates = (len(self.y) if plan.mode == "online" else 0) + n_pop
        fraction = _train_fraction(s["train_fraction"], self.labels, n_candidates)
        self.run.say(f"training {s['n_reference_models']} reference models ({plan.mode}, "
                     f"each on {fraction:.0%} of {n_candidates} records)")
        reference = collect_reference_outputs(
            recipe, self.X, self.y, X_population=self.X_pop, y_population=self.y_pop,
            n_models=s["n_reference_models"], mode=plan.mode,  # type: ignore[arg-type]
            train_fraction=fraction,
            query_population=bool(plan.needs_population) or self.X_pop is not None,
            to_target=s["to_target"] or as_target, executor=s["executor"],
            cache_dir=s["cache_dir"],
            random_state=self.run.random_state, progress=self.run.progress,
            augmentations=(plan.augmentations
                           if any(plan.augmented(a) for a in names) else None),
        )
        if s["check_fidelity"] and reference.pool is not None:
            self.check_fidelity(reference.pool)
        return reference

    def check_fidelity(self, pool: Any) -> None:
        """Warn when the reference models differ clearly from the target."""
        test_rows = np.flatnonzero(self.labels == 0)
        if test_rows.size:
            from sklearn.utils import _safe_indexing

            pool.check_fidelity(self.tgt, _safe_indexing(self.X, test_rows),
                                self.y[test_rows], target_n_train=int(self.labels.sum()))


def _default_recipe(recipe: Any, tgt: Any, names: list[str], func: str = _FUNC) -> Any:
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
            "models.", FidelityWarning, stacklevel=6,
        )
    return float(np.clip(wanted, 0.05, 0.5))
