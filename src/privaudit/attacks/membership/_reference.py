"""Outputs of reference (shadow) models, computed once and shared by every attack using them.

LiRA, RMIA and the Shokri shadow attack all need the same thing: what each reference model
answers on the audited records (and, for RMIA and Shokri, on population records), and which
records each model was trained on. :func:`collect_reference_outputs` trains the pool (through
the executor and the on-disk cache of :class:`~privaudit.training.ReferencePool`), queries
every model once on every record, and returns a :class:`ReferenceOutputs` that the attacks
read; nothing is queried twice.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._progress import as_progress
from privaudit._validation import param_error, renamed
from privaudit.attacks.membership._augment import (
    apply_augmentations,
    check_augmentations,
    split_outputs,
)
from privaudit.exceptions import DegenerateInputWarning
from privaudit.targets import ModelOutputs, Target, as_target

__all__ = ["ReferenceOutputs", "collect_reference_outputs", "stack_signal"]

Part = Literal["audited", "population"]


def stack_signal(outputs: tuple[ModelOutputs, ...], name: str) -> NDArray[np.float64]:
    """Stack one signal of several models' outputs into an array (n_models, n_records)."""
    return np.stack([o.signal(name) for o in outputs])


@dataclass(frozen=True, eq=False)
class ReferenceOutputs:
    """What N reference models answer on the audited records and on population records.

    Parameters
    ----------
    audited : tuple of ModelOutputs
        One per reference model, on the audited records (in the audited order).
    audited_in : ndarray of bool, shape (n_models, n_audited)
        ``audited_in[i, j]``: audited record ``j`` was in model ``i``'s training set
        (always False in offline mode).
    population : tuple of ModelOutputs, optional
        One per reference model, on the population records.
    population_in : ndarray of bool, shape (n_models, n_population), optional
        Membership of the population records in each model's training set.
    mode : {"online", "offline"}
        Online: the models were trained on random halves of audited + population records;
        offline: on population records only.
    pool : ReferencePool, optional
        The pool the outputs came from (kept for fidelity checks and provenance).
    audited_augmented : tuple of tuple of ModelOutputs, optional
        Per reference model, then per augmentation: the model's outputs on the augmented
        audited records (LiRA with augmented queries, Carlini et al. 2022, Section VI.B).
    augmentations : tuple of callables, optional
        The augmentations (``X -> X'``) of ``audited_augmented``, in its order; given
        exactly when ``audited_augmented`` is. The identity is implicit (``audited``).
    """

    audited: tuple[ModelOutputs, ...]
    audited_in: NDArray[np.bool_]
    population: tuple[ModelOutputs, ...] | None = None
    population_in: NDArray[np.bool_] | None = None
    mode: Literal["online", "offline"] = "online"
    pool: Any = None
    audited_augmented: tuple[tuple[ModelOutputs, ...], ...] | None = None
    augmentations: tuple[Callable[[Any], Any], ...] | None = None
    _signals: dict[tuple[str, str], NDArray[np.float64]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        func = "ReferenceOutputs"
        if not self.audited:
            raise param_error("audited", func, "outputs of at least one reference model", 0)
        n = len(self.audited[0])
        if any(len(o) != n for o in self.audited):
            raise param_error("audited", func, "outputs on the same records for every model",
                              "<outputs of different lengths>")
        mask = np.asarray(self.audited_in, dtype=bool)
        if mask.shape != (len(self.audited), n):
            raise param_error("audited_in", func, f"of shape ({len(self.audited)}, {n})",
                              f"<array of shape {mask.shape}>")
        object.__setattr__(self, "audited_in", mask)
        if (self.population is None) != (self.population_in is None):
            raise param_error("population_in", func, "given exactly when 'population' is",
                              "<only one of them>")
        if self.population is not None and self.population_in is not None:
            if len(self.population) != len(self.audited):
                raise param_error("population", func,
                                  f"outputs of the same {len(self.audited)} models",
                                  f"<{len(self.population)} models>")
            pmask = np.asarray(self.population_in, dtype=bool)
            n_pop = len(self.population[0])
            if pmask.shape != (len(self.population), n_pop):
                raise param_error("population_in", func,
                                  f"of shape ({len(self.population)}, {n_pop})",
                                  f"<array of shape {pmask.shape}>")
            object.__setattr__(self, "population_in", pmask)
        if (self.audited_augmented is None) != (self.augmentations is None):
            raise param_error("augmentations", func,
                              "given exactly when 'audited_augmented' is", "<only one of them>")
        if self.audited_augmented is not None and self.augmentations is not None:
            object.__setattr__(self, "augmentations", tuple(self.augmentations))
            n_aug = len(self.augmentations)
            aug = tuple(tuple(per_model) for per_model in self.audited_augmented)
            if len(aug) != len(self.audited) or any(len(p) != n_aug for p in aug):
                raise param_error("audited_augmented", func,
                                  f"{n_aug} outputs for each of the {len(self.audited)} models",
                                  "<another layout>")
            if any(len(o) != n for p in aug for o in p):
                raise param_error("audited_augmented", func,
                                  f"outputs on the {n} audited records",
                                  "<outputs of another length>")
            object.__setattr__(self, "audited_augmented", aug)
        if self.mode == "offline" and mask.any():
            raise param_error("audited_in", func,
                              "all False in offline mode (no model saw an audited record)",
                              f"<{int(mask.sum())} True entries>")

    @property
    def n_models(self) -> int:
        """Number of reference models."""
        return len(self.audited)

    @property
    def n_audited(self) -> int:
        """Number of audited records."""
        return len(self.audited[0])

    def signal(self, name: str, part: Part = "audited") -> NDArray[np.float64]:
        """One signal of every model on one part, as an array (n_models, n_records); cached."""
        key = (name, part)
        if key not in self._signals:
            outputs = self.audited if part == "audited" else self.population
            if outputs is None:
                raise param_error("part", "ReferenceOutputs.signal",
                                  "'audited' (no population outputs were collected)", part)
            stacked = stack_signal(outputs, name)
            stacked.flags.writeable = False
            self._signals[key] = stacked
        return self._signals[key]

    @property
    def n_augmentations(self) -> int:
        """Number of augmented queries per audited record (0 without augmentations)."""
        return 0 if self.augmentations is None else len(self.augmentations)

    def signal_stack(self, name: str) -> NDArray[np.float64]:
        """One signal on the audited records and their augmentations; cached.

        Returns
        -------
        ndarray of shape (n_models, n_audited, 1 + n_augmentations)
            The identity query first, then the augmentations in order.
        """
        key = (name, "audited-augmented")
        if key not in self._signals:
            columns = [self.signal(name, "audited")]
            for k in range(self.n_augmentations):
                assert self.audited_augmented is not None
                columns.append(stack_signal(tuple(p[k] for p in self.audited_augmented), name))
            stacked = np.stack(columns, axis=-1)
            stacked.flags.writeable = False
            self._signals[key] = stacked
        return self._signals[key]

    def in_mask(self, part: Part = "audited") -> NDArray[np.bool_]:
        """Membership of the records of one part in each model's training set."""
        if part == "audited":
            return self.audited_in
        if self.population_in is None:
            raise param_error("part", "ReferenceOutputs.in_mask",
                              "'audited' (no population outputs were collected)", part)
        return self.population_in


def _query_full_classes(target: Target, X: Any, y: Any,
                        classes: NDArray[Any] | None) -> ModelOutputs:
    """Query ``target``, its outputs spread over every class of the audit.

    A reference model whose random training set held no record of some class is still a
    legitimate model "like the target": it gives that class probability 0 (Carlini et al.
    2022; Zarifzadeh et al. 2024; Shokri et al. 2017). Its outputs are therefore mapped
    onto ``classes`` (the labels of every audited and population record) with zeros for
    the classes it never saw, so that records of those classes get a saturated loss and
    logit (which the signals clip) instead of making the model impossible to query.
    Models that know every label (the usual case) are queried unchanged.
    """
    own = getattr(target, "classes_", None)
    if classes is None or own is None:
        return target.query(X, y)
    own = np.asarray(own)
    y_arr = np.asarray(y)
    known = np.isin(y_arr, own)
    if known.all():
        return target.query(X, y)
    # Query with a label the model knows in place of the unknown ones (the probabilities
    # do not depend on the label), then rebuild the outputs with the true labels.
    out = target.query(X, np.where(known, y_arr, own[0]))
    full = np.union1d(own, classes)
    columns = np.searchsorted(full, own)
    if out.probabilities is None:
        assert out.predictions is not None
        return ModelOutputs.from_labels(y_arr, out.predictions, full)
    proba = np.zeros((len(y_arr), full.shape[0]))
    proba[:, columns] = out.probabilities
    return ModelOutputs.from_probabilities(y_arr, proba, full)


def _query_model(model: Any, X: Any, y: Any, *, to_target: Callable[[Any], Target],
                 classes: NDArray[Any] | None = None) -> ModelOutputs:
    # Module level so that worker processes and Ray can unpickle it.
    return _query_full_classes(to_target(model), X, y, classes)


def _query_model_split(
    model: Any, X: Any, y: Any, *, to_target: Callable[[Any], Target], n_parts: int,
    classes: NDArray[Any] | None = None,
) -> tuple[ModelOutputs, ...]:
    # One query on the stacked augmented copies, cut back into one outputs per copy.
    return split_outputs(_query_full_classes(to_target(model), X, y, classes), n_parts)


def _audit_classes(y_all: Any) -> NDArray[Any] | None:
    """The distinct labels of every record, or None when they cannot be listed.

    For regression the values are listed too, harmlessly: a regressor has no ``classes_``,
    so its outputs are never mapped.
    """
    y_arr = np.asarray(y_all)
    if y_arr.ndim != 1:
        return None  # multi-output targets: nothing to map
    try:
        return np.unique(y_arr)
    except TypeError:  # unorderable mixed labels: leave the models' own checks to speak
        return None


def _warn_missing_classes(pool: Any, y_all: Any, classes: NDArray[Any] | None,
                          outputs: tuple[ModelOutputs, ...]) -> None:
    """One warning counting the reference models that trained on no record of a class."""
    if classes is None or outputs[0].task != "classification":
        return
    y_arr = np.asarray(y_all)
    missed = [np.setdiff1d(classes, y_arr[idx]) for idx in pool.train_indices_]
    n_missed = sum(m.size > 0 for m in missed)
    if n_missed:
        example = np.unique(np.concatenate(missed))[:5].tolist()
        warnings.warn(
            f"collect_reference_outputs: {n_missed} of the {len(missed)} reference models "
            f"trained on no record of some class (e.g. {example}); they give such classes "
            "probability 0, so those records get a saturated loss in these models. Give "
            "more population records of the rare classes for a finer reference.",
            DegenerateInputWarning, stacklevel=3)


def _concat_rows(a: Any, b: Any) -> Any:
    import pandas as pd

    if isinstance(a, pd.DataFrame | pd.Series):
        return pd.concat([a, b], ignore_index=True)
    return np.concatenate([np.asarray(a), np.asarray(b)], axis=0)


def collect_reference_outputs(
    recipe: Any,
    X: Any,
    y: ArrayLike,
    *,
    X_population: Any = None,
    y_population: ArrayLike | None = None,
    n_models: int = 16,
    mode: Literal["online", "offline"] = "online",
    train_fraction: float = 0.5,
    query_population: bool = True,
    to_target: Callable[[Any], Target] = as_target,
    executor: Any = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    cache_dir: Any = None,
    random_state: Any = None,
    augmentations: Any = None,
    progress: Any = None,
    sample_fraction: float | None = None,
    wrap: Callable[[Any], Target] | None = None,
) -> ReferenceOutputs:
    """Train a pool of reference models and query each of them once on every record.

    Parameters
    ----------
    recipe : TrainingRecipe or scikit-learn estimator
        How to train "a model like the target" (see :func:`privaudit.training.as_recipe`).
    X, y : array-like
        The audited records and their true labels.
    X_population, y_population : array-like, optional
        Population records from the same distribution, disjoint from the audited ones.
        Required in offline mode (the models train on them only).
    n_models : int, default=16
        Number of reference models.
    mode : {"online", "offline"}, default="online"
        Online: each model trains on a random half of audited + population records, every
        record IN for half of the models (Carlini et al. 2022); offline: on halves of the
        population only.
    train_fraction : float, default=0.5
        Fraction of the candidate records each model trains on.
    query_population : bool, default=True
        Also query the models on the population records (RMIA and Shokri need it).
    to_target : callable, default=as_target
        Turns a trained model into a :class:`~privaudit.targets.Target` (e.g. a
        ``TorchTarget`` factory for torch recipes). Must be picklable for worker processes.
    executor, n_jobs, address, cache_dir, random_state
        See :class:`~privaudit.training.ReferencePool`: ``executor`` is a name
        (``"local"``, ``"ray"``; ``n_jobs`` and ``address`` go with it) or an
        :class:`~privaudit.training.Executor` object (then without them).
    augmentations : list of callables, optional
        Also query every model on each augmented copy of the audited records (callables
        ``X -> X'`` keeping the shape and the labels, picklable, e.g.
        :func:`~privaudit.attacks.membership.image_shifts`), for LiRA with augmented
        queries (Carlini et al. 2022, Section VI.B); read with
        :meth:`ReferenceOutputs.signal_stack`. Each model answers one query per augmented
        record.
    progress : bool, callable(str) or Progress, optional
        Reports the pool's training (each model made, ``"training reference models:
        5/16"``, cached models counted) and its queries when they are long; a callable
        receives these as messages.

    sample_fraction, wrap
        The old names of ``train_fraction`` and ``to_target`` (deprecated, with a warning).

    Returns
    -------
    ReferenceOutputs
    """
    from privaudit.training import ReferencePool, get_executor

    func = "collect_reference_outputs"
    train_fraction = renamed(sample_fraction, "sample_fraction", train_fraction,
                             "train_fraction", 0.5, func=func)
    to_target = renamed(wrap, "wrap", to_target, "to_target", as_target, func=func)
    executor = get_executor(executor, n_jobs=n_jobs, address=address, func=func)
    if mode not in ("online", "offline"):
        raise param_error("mode", func, "'online' or 'offline'", mode)
    n_audited = len(X)
    if len(y) != n_audited:
        raise param_error("y", func, f"of the same length as X ({n_audited})",
                          f"<length {len(y)}>")
    augs = None if augmentations is None else check_augmentations(augmentations, func)
    progress = as_progress(progress, func=func)
    has_population = X_population is not None
    if has_population and (y_population is None or len(y_population) != len(X_population)):
        raise param_error("y_population", func, "given, with one label per population row",
                          "<missing or of another length>")
    if mode == "offline" and not has_population:
        raise param_error("X_population", func,
                          "given in offline mode (the reference models train on it)", None)
    if has_population:
        X_all = _concat_rows(X, X_population)
        y_all = _concat_rows(y, y_population)
        n_population = len(X_population)
    else:
        X_all, y_all, n_population = X, np.asarray(y), 0
    audited_idx = np.arange(n_audited)
    population_idx = np.arange(n_audited, n_audited + n_population)
    pool = ReferencePool(
        recipe, n_models, mode=mode, train_fraction=train_fraction, executor=executor,
        cache_dir=cache_dir, random_state=random_state,
    )
    pool.fit(X_all, y_all, audited=audited_idx,
             population=population_idx if has_population else None, progress=progress)
    classes = _audit_classes(y_all)
    query = functools.partial(_query_model, to_target=to_target, classes=classes)
    if has_population and query_population:
        outputs = pool.map(query, X_all, y_all, stack=False, progress=progress)
        audited = tuple(o.subset(audited_idx) for o in outputs)
        population = tuple(o.subset(population_idx) for o in outputs)
        population_in = pool.in_mask_[:, population_idx]
    else:
        audited = tuple(pool.map(query, X, y, stack=False, progress=progress))
        population, population_in = None, None
    _warn_missing_classes(pool, y_all, classes, audited)
    audited_augmented = None
    if augs is not None:
        if augs:
            X_aug = apply_augmentations(X, augs, func)
            y_aug = np.concatenate([np.asarray(y)] * len(augs))
            split = functools.partial(_query_model_split, to_target=to_target,
                                      n_parts=len(augs), classes=classes)
            audited_augmented = tuple(tuple(p) for p in pool.map(
                split, X_aug, y_aug, stack=False, progress=progress,
                description="querying reference models on augmented records"))
        else:
            audited_augmented = tuple(() for _ in audited)
    return ReferenceOutputs(
        audited=audited,
        audited_in=pool.in_mask_[:, audited_idx],
        population=population,
        population_in=population_in,
        mode=mode,
        pool=pool,
        audited_augmented=audited_augmented,
        augmentations=augs,
    )
