"""The pool of reference (shadow) models, each trained on a random part of a dataset."""

from __future__ import annotations

import math
import numbers
import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._progress import as_progress
from privaudit._validation import check_fraction, check_random_state, param_error, renamed
from privaudit.exceptions import NotFittedError, PrivauditWarning
from privaudit.training._cache import CachedModels, ModelCache
from privaudit.training._executors import Executor, LocalExecutor, get_executor
from privaudit.training._hashing import data_fingerprint, sha256_json
from privaudit.training._recipes import TrainingRecipe, as_recipe

__all__ = ["ReferencePool"]

# Bump when the way masks, seeds or training sets are derived changes: the cache key
# includes it, so older caches are not reused.
POOL_FORMAT = 1

_NAME = "ReferencePool"

#: Seconds a ReferencePool.map must last before its progress is shown (queries are often
#: quick; training is always reported).
MAP_PROGRESS_DELAY = 2.0


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return len(X)


def _take_rows(X: Any, idx: NDArray[np.int64]) -> Any:
    from sklearn.utils import _safe_indexing

    return _safe_indexing(X, idx, axis=0)


def _train_task(
    recipe: TrainingRecipe, indices: NDArray[np.int64], seed: int, *, X: Any, y: Any
) -> tuple[Any, float]:
    start = time.perf_counter()
    model = recipe.train(_take_rows(X, indices), _take_rows(y, indices), random_state=seed)
    return model, time.perf_counter() - start


def _train_chunk_task(
    recipe: Any, chunk_indices: list[NDArray[np.int64]], seeds: list[int], *, X: Any, y: Any
) -> list[tuple[Any, float]]:
    """Train several models in one task with ``recipe.train_many``, timed as equal shares."""
    start = time.perf_counter()
    datasets = [(_take_rows(X, idx), _take_rows(y, idx)) for idx in chunk_indices]
    models = recipe.train_many(datasets, random_states=seeds)
    seconds = (time.perf_counter() - start) / max(len(models), 1)
    return [(model, seconds) for model in models]


class _Trainer:
    """Trains a pool's models through an executor, into memory or into the cache."""

    def __init__(self, executor: Executor, recipe: TrainingRecipe, seeds: NDArray[np.int64],
                 train_indices: list[NDArray[np.int64]], X: Any, y: Any,
                 train_seconds: NDArray[np.float64],
                 tick: Callable[[], None] = lambda: None) -> None:
        self.executor, self.recipe, self.seeds = executor, recipe, seeds
        self.train_indices, self.X, self.y = train_indices, X, y
        self.train_seconds = train_seconds
        self.tick = tick  # called once per model made (trained here or by another process)

    def run(self, todo: list[int], on_model: Callable[[int, Any], None]) -> None:
        """Train models ``todo``; ``on_model(i, model)`` as each finishes."""
        chunks = self._chunks(todo)
        if chunks is not None:
            self._run_chunks(chunks, on_model)
            return
        tasks = [(self.recipe, self.train_indices[i], int(self.seeds[i])) for i in todo]
        for t, (model, secs) in self.executor.map_unordered(
            _train_task, tasks, shared={"X": self.X, "y": self.y}
        ):
            self.train_seconds[todo[t]] = secs
            on_model(todo[t], model)
            self.tick()

    def _chunks(self, todo: list[int]) -> list[list[int]] | None:
        """Groups of models to train together, or None to train them one per task.

        A recipe with ``stack > 1`` and a ``train_many`` method (the built-in torch recipes)
        trains up to ``stack`` models per task, in chunks small enough to keep every worker
        busy. Which models share a chunk changes nothing in any of them, so the models are
        the same whatever the number of workers or the models left to train.
        """
        stack = getattr(self.recipe, "stack", 1)
        if (not todo or not isinstance(stack, numbers.Integral) or stack <= 1
                or not callable(getattr(self.recipe, "train_many", None))):
            return None
        workers = max(1, int(getattr(self.executor, "n_workers", 1)))
        size = min(int(stack), math.ceil(len(todo) / workers))
        return [todo[s:s + size] for s in range(0, len(todo), size)]

    def _run_chunks(self, chunks: list[list[int]], on_model: Callable[[int, Any], None]) -> None:
        """Train each chunk in one task; report its models as the chunk finishes."""
        tasks = [(self.recipe, [self.train_indices[i] for i in chunk],
                  [int(self.seeds[i]) for i in chunk]) for chunk in chunks]
        for t, results in self.executor.map_unordered(
            _train_chunk_task, tasks, shared={"X": self.X, "y": self.y}
        ):
            for i, (model, secs) in zip(chunks[t], results, strict=True):
                self.train_seconds[i] = secs
                on_model(i, model)
                self.tick()

    def into_cache(self, cache: ModelCache, missing: list[int]) -> int:
        """Train the missing models into the cache, each under its lock; return how many.

        Another process filling the same cache trains the models it locked first; this one
        waits for them and reuses them (see :meth:`ModelCache.claim`).
        """
        held: set[int] = set()

        def save(i: int, model: Any) -> None:
            cache.save(i, model, seed=int(self.seeds[i]), indices=self.train_indices[i],
                       train_seconds=float(self.train_seconds[i]))
            cache.release(held, i)

        n_trained = 0
        pending = list(missing)
        try:
            while pending:
                pending = cache.claim(pending, held)
                todo = []
                for i in sorted(held):
                    if cache.check(i, int(self.seeds[i]), self.train_indices[i]) is None:
                        self.train_seconds[i] = cache.train_seconds(i)  # made meanwhile
                        cache.release(held, i)
                        self.tick()
                    else:
                        todo.append(i)
                self.run(todo, save)
                n_trained += len(todo)
        finally:
            cache.release(held)
        return n_trained


def _apply_task(
    handle: tuple[Any, ...], fn: Callable[[Any, Any, Any], Any], *, X: Any, y: Any
) -> Any:
    if handle[0] == "path":
        _, recipe, path = handle
        model = recipe.load(path)
    else:
        model = handle[1]
    return fn(model, X, y)


def _as_indices(value: Any, n: int, param: str) -> NDArray[np.int64]:
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise param_error(param, f"{_NAME}.fit", "a 1-D array of row indices or a boolean mask",
                          f"<array of shape {arr.shape}>")
    if arr.dtype == bool:
        if arr.shape[0] != n:
            raise param_error(param, f"{_NAME}.fit", f"a boolean mask of length {n}",
                              f"<mask of length {arr.shape[0]}>")
        return np.flatnonzero(arr).astype(np.int64)
    if arr.size and arr.dtype.kind not in "iu":
        raise param_error(param, f"{_NAME}.fit", "integer row indices or a boolean mask",
                          f"<array of dtype {arr.dtype}>", error=TypeError)
    idx = arr.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise param_error(param, f"{_NAME}.fit", f"row indices in [0, {n})",
                          f"<indices from {idx.min()} to {idx.max()}>")
    if np.unique(idx).size != idx.size:
        raise param_error(param, f"{_NAME}.fit", "free of duplicate indices",
                          "<repeated indices>")
    return np.sort(idx)


def _seed_sequence(random_state: Any) -> np.random.SeedSequence:
    if isinstance(random_state, np.random.SeedSequence):
        # A fresh copy: spawn() mutates its SeedSequence, and fit must be repeatable.
        return np.random.SeedSequence(
            random_state.entropy, spawn_key=random_state.spawn_key,
            pool_size=random_state.pool_size,
        )
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        check_random_state(random_state, func=_NAME)  # rejects negative seeds
        return np.random.SeedSequence(int(random_state))
    rng = check_random_state(random_state, func=_NAME)
    return np.random.SeedSequence(int(rng.integers(0, 2**63)))


def balanced_in_mask(
    n_models: int, n_candidates: int, train_fraction: float, rng: np.random.Generator
) -> NDArray[np.bool_]:
    """Random in/out assignment where every record is IN for the same number of models.

    Each record is IN for ``floor(f·N)`` or ``ceil(f·N)`` of the ``N`` models (exactly
    ``N/2`` when ``f = 1/2`` and ``N`` is even), the records getting the extra one drawn at
    random so that a fraction ``f`` of all (model, record) pairs are IN; which models a record
    is IN for is a uniformly random subset, independently per record.

    References
    ----------
    .. [1] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022 (the ``keep`` mask of the reference implementation).
    """
    expected = train_fraction * n_models
    k_low = math.floor(expected + 1e-9)
    n_extra = round((expected - k_low) * n_candidates)
    k = np.full(n_candidates, k_low, dtype=np.int64)
    k[rng.permutation(n_candidates)[:n_extra]] += 1
    # Per record (column), a uniformly random ranking of the models; IN for the top k.
    ranks = rng.random((n_models, n_candidates)).argsort(axis=0).argsort(axis=0)
    return ranks < k[None, :]


#: Draws of the in/out mask tried before giving up on giving every model two labels.
MAX_MASK_DRAWS = 1000


def _candidate_labels(y: Any, candidates: NDArray[np.int64]) -> NDArray[np.intp] | None:
    """Codes of the candidates' labels; None for targets that are not class labels.

    Floating-point targets with a fractional value are a regressor's, and 2-D targets
    cannot be compared: neither is checked. Whole-valued floats (TV16's 0.0/1.0) are
    labels.
    """
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        return None
    if y_arr.dtype.kind == "f" and not np.all(np.mod(y_arr[candidates], 1) == 0):
        return None
    try:
        return np.unique(y_arr[candidates], return_inverse=True)[1].ravel()
    except TypeError:
        return None


def _mixed_label_mask(
    n_models: int, n_candidates: int, train_fraction: float, rng: np.random.Generator,
    codes: NDArray[np.intp] | None,
) -> NDArray[np.bool_]:
    """A :func:`balanced_in_mask` in which every model trains on at least two labels.

    A model trained on one label is a constant predictor that most learners refuse to fit
    (scikit-learn: "needs samples of at least 2 classes"), which would lose the whole
    audit. The mask is redrawn from the same generator until every model sees two labels:
    this conditions the random design on that event and keeps it intact (every record IN
    for the same number of models, seeded, independent of the executor). The first draw
    is the unconditioned one, so ordinary data (where it passes) keeps exactly the mask,
    models and cache of before.

    Raises
    ------
    ValueError
        Naming ``population`` when the candidates have one label only, or too few records
        outside their most frequent label for every model to get one; raised before any
        model trains.
    """
    mask = balanced_in_mask(n_models, n_candidates, train_fraction, rng)
    if codes is None or _every_model_mixed(mask, codes) or not mask.any(axis=1).all():
        return mask  # a model without records is reported by fit itself
    counts = np.bincount(codes)
    # Each record is IN for at most ceil(f·N) models, so the records outside the most
    # frequent label can reach every model only if there are at least this many of them.
    needed = max(1, math.ceil(n_models / math.ceil(train_fraction * n_models - 1e-9)))
    n_other = int(codes.size - counts.max())
    for _ in range(MAX_MASK_DRAWS - 1 if n_other >= needed else 0):
        mask = balanced_in_mask(n_models, n_candidates, train_fraction, rng)
        if _every_model_mixed(mask, codes):
            return mask
    raise ValueError(
        f"{_NAME}.fit: the 'population' is too poor in classes for {n_models} reference "
        f"models to each train on two classes (a model of one class cannot be fitted): "
        f"its candidate records (offline the population, online the audited records too) "
        f"hold {counts.size} class(es), with {n_other} record(s) outside the most frequent "
        f"one; at least {needed} such records are needed"
        + ("" if n_other < needed else
           f", and more for random training sets to reach every model (none of "
           f"{MAX_MASK_DRAWS} draws did)")
        + ". Give more population records of the rare classes, or fewer reference models.")


def _every_model_mixed(mask: NDArray[np.bool_], codes: NDArray[np.intp]) -> bool:
    """Whether every row of ``mask`` selects records of at least two labels."""
    first = codes[np.argmax(mask, axis=1)]  # the label of each model's first record
    return bool(np.all(np.any(mask & (codes[None, :] != first[:, None]), axis=1)))


class ReferencePool:
    """N reference (shadow) models, each trained on a random part of a dataset.

    Parameters
    ----------
    recipe : TrainingRecipe, scikit-learn estimator or callable
        How to train "a model like the target" (see :class:`SklearnRecipe`,
        :class:`CallableRecipe`). An estimator or a function is wrapped automatically.
    n_models : int, default=16
        Number of reference models.
    mode : {"online", "offline"}, default="online"
        ``"online"``: the models train on random halves of the audited and population
        records together, so each audited record is IN for half of the models (online LiRA).
        ``"offline"``: the models train on population records only; audited records are
        never IN (offline LiRA, RMIA).
    train_fraction : float, default=0.5
        Fraction of the candidate records each model trains on (in expectation; every record
        is IN for ``floor`` or ``ceil`` of ``train_fraction * n_models`` models).
    executor : {"local", "ray"} or Executor, default="local"
        Where models train: a name, or an executor object such as
        ``LocalExecutor(n_jobs=4)`` or ``RayExecutor(address)`` (see
        :func:`get_executor`).
    n_jobs : int, optional
        With a name only: local worker processes (``None``/1: inline; -1: all CPUs), or
        the CPUs of a local Ray instance started here.
    address : str, optional
        Ray cluster address (``executor="ray"`` only).
    cache_dir : path, optional
        Directory where each model is written as soon as it is trained; a rerun with the
        same pool, data and recipe loads finished models and trains only the missing ones.
    random_state : int, SeedSequence, Generator or None
        Seeds of the in/out mask and of every model. The same value gives identical masks,
        models and outputs whatever the executor and number of workers.
    sample_fraction : float, optional
        The old name of ``train_fraction`` (deprecated, with a warning).

    Attributes
    ----------
    models_ : list or sequence
        The trained models, in order. With a ``cache_dir``, a sequence that loads each
        model from disk on access (memory stays flat for large pools).
    in_mask_ : ndarray of bool, shape (n_models, n_records)
        ``in_mask_[i, j]`` is True when row ``j`` of the fitted ``X`` is in model ``i``'s
        training set.
    seeds_ : ndarray of int64, shape (n_models,)
        The training seed of each model.
    train_indices_ : list of ndarray
        Row indices each model trained on.
    audited_ : ndarray of int64
        Rows marked as audited (empty when none were given).
    candidates_ : ndarray of int64
        Rows the models could train on (audited + population online, population offline).
    train_seconds_ : ndarray of float, shape (n_models,)
        Training time of each model (from the cache manifest for cached models).
    n_trained_ : int
        Models trained by the last ``fit`` (the others came from the cache).
    cache_path_ : pathlib.Path or None
        This pool's cache directory.

    Notes
    -----
    Seeds come from ``numpy.random.SeedSequence(random_state).spawn(n_models + 1)``: the
    first child draws the mask, child ``i + 1`` gives model ``i``'s seed. Nothing depends on
    the order in which models finish, which is what makes results identical across
    executors. The cache key hashes the recipe's fingerprint, the data (values, shape,
    dtypes), the candidate rows, the mode, the fraction, the number of models, the seed and
    a format version, so a cache written for another dataset, recipe or seed is never used.

    References
    ----------
    .. [1] Shokri, R., Stronati, M., Song, C., Shmatikov, V. "Membership Inference Attacks
       Against Machine Learning Models." IEEE S&P 2017.
    .. [2] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A., Tramèr, F. "Membership
       Inference Attacks From First Principles." IEEE S&P 2022.
    .. [3] Zarifzadeh, S., Liu, P., Chua, Y. S., Shokri, R. "Low-Cost High-Power Membership
       Inference Attacks." ICML 2024.
    """

    def __init__(
        self,
        recipe: Any,
        n_models: int = 16,
        *,
        mode: str = "online",
        train_fraction: float = 0.5,
        executor: str | Executor = "local",
        n_jobs: int | None = None,
        address: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        random_state: Any = None,
        sample_fraction: float | None = None,
    ) -> None:
        self.recipe = recipe
        self.n_models = n_models
        self.mode = mode
        self.train_fraction = renamed(sample_fraction, "sample_fraction", train_fraction,
                                      "train_fraction", 0.5, func=_NAME)
        self.executor = executor
        self.n_jobs = n_jobs
        self.address = address
        self.cache_dir = cache_dir
        self.random_state = random_state

    @property
    def sample_fraction(self) -> float:
        """The old name of :attr:`train_fraction` (deprecated, with a warning)."""
        warnings.warn(f"{_NAME}: 'sample_fraction' is now called 'train_fraction'; the old "
                      "name will be removed.", DeprecationWarning, stacklevel=2)
        return self.train_fraction

    # ------------------------------------------------------------------ fit

    def _check_params(self) -> tuple[TrainingRecipe, Executor]:
        recipe = as_recipe(self.recipe, func=_NAME)
        n = self.n_models
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise param_error("n_models", _NAME, "a positive integer", n,
                              error=TypeError if not isinstance(n, numbers.Integral) else
                              ValueError)
        if self.mode not in ("online", "offline"):
            raise param_error("mode", _NAME, "'online' or 'offline'", self.mode)
        check_fraction(self.train_fraction, param="train_fraction", func=_NAME)
        if self.cache_dir is not None and not getattr(recipe, "can_save", True):
            raise param_error(
                "cache_dir", _NAME,
                "None for a recipe that cannot save models (give CallableRecipe save= and "
                "load=)", self.cache_dir,
            )
        executor = get_executor(self.executor, n_jobs=self.n_jobs, address=self.address,
                                func=_NAME)
        return recipe, executor

    def _open_cache(
        self, recipe: TrainingRecipe, X: Any, y: Any, ss: np.random.SeedSequence,
        candidates: NDArray[np.int64], in_mask: NDArray[np.bool_], seeds: NDArray[np.int64],
        train_indices: list[NDArray[np.int64]],
    ) -> tuple[ModelCache | None, dict[int, float]]:
        """The pool's cache (None without a ``cache_dir``) and its finished models."""
        if self.cache_dir is None:
            return None, {}
        if self.random_state is None:
            warnings.warn(
                "ReferencePool has a cache_dir but random_state=None: a rerun draws new "
                "seeds and cannot resume from this cache. Pass an integer random_state.",
                PrivauditWarning, stacklevel=3,
            )
        key_info = {
            "format": POOL_FORMAT,
            "recipe": recipe.fingerprint(),
            "recipe_repr": repr(recipe)[:500],
            "data": data_fingerprint(X, y),
            "n_records": in_mask.shape[1],
            "candidates": sha256_json(candidates.tolist()),
            "mode": self.mode,
            # The key's name predates train_fraction: kept, so existing caches stay valid.
            "sample_fraction": repr(float(self.train_fraction)),
            "n_models": int(self.n_models),
            "seed_entropy": str(ss.entropy),
            "seed_spawn_key": [int(k) for k in ss.spawn_key],
        }
        key = sha256_json({k: v for k, v in key_info.items() if k != "recipe_repr"})
        cache = ModelCache(self.cache_dir, key, key_info, recipe)
        cache.prepare(in_mask)
        return cache, cache.finished(seeds.tolist(), train_indices)

    def fit(
        self, X: Any, y: ArrayLike, *, audited: ArrayLike | None = None,
        population: ArrayLike | None = None, progress: Any = None,
    ) -> ReferencePool:
        """Train (or load from the cache) every reference model.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_records, ...)
            Every record the pool knows about: audited records and population records.
        y : array-like of shape (n_records,)
            Their labels.
        audited : array-like of int or bool, optional
            Rows of ``X`` whose membership in the target is audited. Offline, these rows
            are never trained on.
        population : array-like of int or bool, optional
            Rows that are population data (known non-members of the target). Default: every
            row not in ``audited``. Offline, ``audited`` and ``population`` must not overlap.
        progress : bool, callable(str) or Progress, optional
            Reports each model as it is made, with the models found in the cache counted
            from the start (``"training reference models: 5/16"``); see
            :func:`privaudit._progress.as_progress`.

        Returns
        -------
        self : ReferencePool

        Raises
        ------
        ValueError
            Mismatched lengths, indices out of range, audited rows in the offline
            population, no record left to train on.
        """
        recipe, executor = self._check_params()
        progress = as_progress(progress, func=f"{_NAME}.fit")
        n_records = _n_rows(X)
        if _n_rows(y) != n_records:
            raise param_error("y", f"{_NAME}.fit", f"of the same length as X ({n_records})",
                              f"<length {_n_rows(y)}>")
        aud = (np.empty(0, dtype=np.int64) if audited is None
               else _as_indices(audited, n_records, "audited"))
        if population is None:
            pop = np.setdiff1d(np.arange(n_records), aud)
        else:
            pop = _as_indices(population, n_records, "population")
        if self.mode == "offline":
            overlap = np.intersect1d(aud, pop)
            if overlap.size:
                raise param_error(
                    "population", f"{_NAME}.fit",
                    "disjoint from 'audited' in offline mode (reference models must never "
                    "train on audited records)", f"<{overlap.size} rows in both, e.g. "
                    f"{overlap[:3].tolist()}>",
                )
            candidates = pop
        else:
            candidates = np.union1d(aud, pop)
        if candidates.size == 0:
            raise param_error("population", f"{_NAME}.fit", "non-empty", "<no rows>")

        ss = _seed_sequence(self.random_state)
        children = ss.spawn(self.n_models + 1)
        seeds = np.array(
            [int(c.generate_state(1, dtype=np.uint32)[0]) for c in children[1:]], dtype=np.int64
        )
        sub_mask = _mixed_label_mask(
            self.n_models, candidates.size, float(self.train_fraction),
            np.random.default_rng(children[0]), _candidate_labels(y, candidates),
        )
        in_mask = np.zeros((self.n_models, n_records), dtype=bool)
        in_mask[:, candidates] = sub_mask
        train_indices = [np.flatnonzero(row).astype(np.int64) for row in in_mask]
        empty = [i for i, idx in enumerate(train_indices) if idx.size == 0]
        if empty:
            raise ValueError(
                f"{_NAME}: {len(empty)} of the {self.n_models} reference models would train "
                f"on no record: {candidates.size} candidate record(s) (the population; "
                "online, the audited records too) are too few for each model to train on "
                f"{float(self.train_fraction):.0%} of them (train_fraction). Give more "
                "population records, or raise train_fraction.")

        cache, done = self._open_cache(recipe, X, y, ss, candidates, in_mask, seeds,
                                       train_indices)
        models: list[Any] = [None] * self.n_models
        train_seconds = np.full(self.n_models, np.nan)
        for i, secs in done.items():
            train_seconds[i] = secs
        missing = [i for i in range(self.n_models) if i not in done]
        description = "training reference models" + (
            f" ({len(done)} found in the cache)" if done else "")
        with progress.task(description, total=self.n_models) as step:
            step.advance(len(done))
            train = _Trainer(executor, recipe, seeds, train_indices, X, y, train_seconds,
                             tick=step.advance)
            if cache is not None:
                n_trained = train.into_cache(cache, missing)
            else:
                train.run(missing, models.__setitem__)
                n_trained = len(missing)

        self.models_: Sequence[Any] = (
            CachedModels(cache, self.n_models) if cache is not None else models
        )
        self.in_mask_ = in_mask
        self.seeds_ = seeds
        self.train_indices_ = train_indices
        self.audited_ = aud
        self.candidates_ = candidates
        self.train_seconds_ = train_seconds
        self.n_trained_ = n_trained
        self.n_records_ = n_records
        self.cache_path_ = None if cache is None else cache.path
        self._cache = cache
        self._executor = executor
        self._recipe = recipe
        return self

    # ------------------------------------------------------------------ use

    def _check_fitted(self, method: str) -> None:
        if not hasattr(self, "in_mask_"):
            raise NotFittedError(
                f"This ReferencePool is not fitted yet; call fit before {method}."
            )

    def map(
        self, fn: Callable[[Any, Any, Any], Any], X: Any, y: Any = None, *, stack: bool = True,
        progress: Any = None, description: str = "querying reference models",
    ) -> Any:
        """Apply ``fn(model, X, y)`` to every reference model, in parallel.

        Parameters
        ----------
        fn : callable
            ``fn(model, X, y)``; module-level (picklable) when the executor uses worker
            processes or Ray.
        X, y : data passed to ``fn`` (sent once per worker, not once per model).
        stack : bool, default=True
            Stack the results into one array of shape ``(n_models, ...)``; else return the
            list of results in model order.
        progress : bool, callable(str) or Progress, optional
            Reports each model done (``"querying reference models: 5/16"``) once the step
            has lasted more than two seconds; quick steps stay silent.
        description : str, default="querying reference models"
            What the progress calls this step.

        Returns
        -------
        ndarray or list
            Results in model order, whatever the order the workers finished in.
        """
        self._check_fitted("map")
        if not callable(fn):
            raise param_error("fn", f"{_NAME}.map", "callable", f"<{type(fn).__name__}>",
                              error=TypeError)
        progress = as_progress(progress, func=f"{_NAME}.map")
        if self._cache is not None and isinstance(self._executor, LocalExecutor):
            # Workers read the files themselves rather than receiving pickled models.
            handles = [("path", self._recipe, self._cache.readable_model_path(i))
                       for i in range(self.n_models)]
        else:
            handles = [("model", m) for m in self.models_]
        results: list[Any] = [None] * self.n_models
        with progress.task(description, total=self.n_models, delay=MAP_PROGRESS_DELAY) as step:
            for i, out in self._executor.map_unordered(
                _apply_task, [(h, fn) for h in handles], shared={"X": X, "y": y}
            ):
                results[i] = out
                step.advance()
        if not stack:
            return results
        return np.stack([np.asarray(r) for r in results])

    def check_fidelity(
        self, target: Any, X_test: Any, y_test: ArrayLike, *, target_n_train: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """Compare the reference models with the target; see :func:`check_fidelity`."""
        from privaudit.training._fidelity import check_fidelity

        return check_fidelity(target, self, X_test, y_test, target_n_train=target_n_train,
                              **kwargs)
