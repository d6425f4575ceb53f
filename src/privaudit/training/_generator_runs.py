"""Shadow runs of a synthetic-data generator: the training sets an attack on it learns from.

The threat model of TAPAS (Houssiau et al. 2022): the attacker knows the generator, the
size of its training set and of its output, the target records, and either the rest of
the training set exactly or an auxiliary sample from the same distribution. It trains the
generator many times on training sets drawn from that knowledge, some with a target and
some without, and learns from the synthetic tables what a target's presence looks like.

:class:`GeneratorRuns` makes those runs: every target is in exactly half of them (a
balanced mask, as LiRA's reference models), so one run informs every target at once
(TAPAS draws a separate set of runs per target); every training set has the same size,
the targets left out replaced by other records. Runs go through the executor (local
processes or Ray, one code path) and, with a ``cache_dir``, each synthetic table is
written to disk (Parquet, atomically, under a per-run lock) as it finishes, so a run
killed half-way resumes where it stopped. The same seed gives the same training sets
and tables whatever the executor.

References
----------
.. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for Adversarial
   Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
.. [2] Stadler, T., Oprisanu, B. and Troncoso, C. "Synthetic Data -- Anonymisation
   Groundhog Day." USENIX Security 2022 (the shadow-modelling game).
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._optional import import_optional
from privaudit._progress import as_progress
from privaudit._rows import rows_found_in
from privaudit._validation import check_int, param_error
from privaudit.exceptions import OutsideFolderError, PrivauditWarning
from privaudit.training._cache import CachedModels, ModelCache
from privaudit.training._executors import get_executor
from privaudit.training._hashing import callable_fingerprint, canonical, data_fingerprint
from privaudit.training._pool import _seed_sequence, _Trainer, balanced_in_mask

__all__ = ["KNOWLEDGE", "GeneratorRecipe", "GeneratorRuns", "SavedGeneratorRuns",
           "read_generator_runs"]

_NAME = "GeneratorRuns"
#: Bump when the way training sets or seeds are drawn changes (part of the cache key).
RUNS_FORMAT = 1
#: What the attacker knows of the rest of the training set.
KNOWLEDGE = ("auxiliary", "exact")


class GeneratorFailed(ValueError):
    """The user's generator raised, or returned a table the game cannot use.

    A ``ValueError`` (bad input: the generator is the user's), ``from`` the generator's
    own exception; ``seed`` is the run's seed, ``run`` its position once
    :meth:`GeneratorRuns.run` has found it (then the message names it).
    """

    def __init__(self, message: str, seed: int | None = None, run: int | None = None) -> None:
        super().__init__(message)
        self.seed, self.run = seed, run

    def __reduce__(self) -> tuple[Any, ...]:  # workers send it back whole
        return (type(self), (self.args[0], self.seed, self.run))

    def at_run(self, seeds: NDArray[np.int64]) -> GeneratorFailed:
        """The same failure, naming the run (of ``seeds``) it happened on."""
        found = np.flatnonzero(seeds == self.seed)
        if self.run is not None or not found.size:
            return self
        run = int(found[0])
        return GeneratorFailed(f"run {run} of {len(seeds)}: {self.args[0]}", self.seed, run)


def _signature_problem(generator: Any) -> str | None:
    """Why ``generator(train, n_rows, random_state=seed)`` cannot be called, or None."""
    import inspect

    try:
        signature = inspect.signature(generator)
    except (TypeError, ValueError):  # a builtin without a signature: trusted
        return None
    try:
        signature.bind(None, 1, random_state=0)
    except TypeError:
        return f"it takes {signature}"
    return None


class GeneratorRecipe:
    """A generator seen as a training recipe: "training" it returns its synthetic table.

    Parameters
    ----------
    generator : callable or object with ``fit`` and ``sample`` or ``generate``
        ``generator(train, n_rows, random_state=seed) -> DataFrame``, or an object
        copied afresh for every run and fitted with ``fit(train)`` (a DataFrame): SDV /
        synthcity style, sampled with ``sample(n_rows)``, or TAPAS style, sampled with
        ``generate(n_rows)`` (given ``random_state=seed`` when its signature takes it; a
        returned object whose ``data`` attribute is a DataFrame, as TAPAS's
        ``TabularDataset``, is unwrapped). It gets the run's seed through a
        ``set_random_state(seed)`` method or a ``random_state`` attribute before fitting,
        or SDV's ``_set_random_state(seed)`` after (SDV synthesizers build their model in
        ``fit``; their sampling is then reproducible, while a neural synthesizer's
        training may still draw from torch's global state).
    n_rows : int
        Rows of every synthetic table. A generator returning another number of rows is
        refused (``ValueError`` naming it and both counts): the attacks compare tables
        of one size.
    version : str, optional
        Bump to invalidate cached tables when something the generator calls changes (the
        fingerprint covers only its own source and parameters).
    """

    suffix = ".parquet"
    #: What :meth:`train` raises when the generator raises or returns an unusable table.
    Failed = GeneratorFailed

    def __init__(self, generator: Any, n_rows: int, *, version: str | None = None) -> None:
        if not callable(generator) and not _fits_and_samples(generator):
            raise param_error("generator", _NAME, "a callable (train, n_rows, random_state) "
                              "or an object with fit and sample (SDV) or fit and generate "
                              "(TAPAS)", f"<{type(generator).__name__}>", error=TypeError)
        problem = None if _fits_and_samples(generator) else _signature_problem(generator)
        if problem is not None:
            raise param_error("generator", _NAME, "callable as generator(train, n_rows, "
                              f"random_state=seed) ({problem})", f"<{_describe(generator)}>",
                              error=TypeError)
        self.generator = generator
        self.n_rows = check_int(n_rows, param="n_synthetic_rows", func=_NAME, low=1)
        self.version = version

    def __repr__(self) -> str:
        return f"GeneratorRecipe({_describe(self.generator)}, n_rows={self.n_rows})"

    def fingerprint(self) -> str:
        """Hash of the generator (source and state), the output size and the version."""
        from privaudit.training._hashing import sha256_json

        return sha256_json({"recipe": "GeneratorRecipe", "generator": _generator_id(
            self.generator), "n_rows": self.n_rows, "version": self.version})

    def train(self, X: Any, y: Any, *, random_state: int) -> Any:
        """Run the generator on the training table ``X`` (``y`` is unused)."""
        train, seed = X.reset_index(drop=True), int(random_state)
        try:
            if _fits_and_samples(self.generator):
                table = self._fit_and_draw(train, seed)
            else:
                table = self.generator(train, self.n_rows, random_state=seed)
        except Exception as exc:
            raise GeneratorFailed(f"the generator {_describe(self.generator)} raised "
                                  f"{type(exc).__name__}: {exc}", seed) from exc
        try:
            return self._checked(_unwrap(table), X)
        except (TypeError, ValueError) as exc:
            raise GeneratorFailed(str(exc), seed) from None

    def _fit_and_draw(self, train: Any, seed: int) -> Any:
        """Fit a fresh copy of an object generator and draw ``n_rows`` rows from it."""
        model = copy.deepcopy(self.generator)
        seeded = _seed_before_fit(model, seed)
        model.fit(train)
        if callable(getattr(model, "_set_random_state", None)):
            # SDV's synthesizers: their model exists only after fit, and sampling
            # draws from the seed given here.
            model._set_random_state(seed)
            seeded = True
        draw = getattr(model, "sample", None)
        if not callable(draw):  # TAPAS style: generate(num_samples, random_state=None)
            draw = model.generate
            if _takes_random_state(draw):
                return draw(self.n_rows, random_state=seed)
        if not seeded:
            warnings.warn(f"The generator {type(model).__name__} takes no seed (no "
                          "random_state attribute, no set_random_state method): its "
                          "runs are not reproducible.", PrivauditWarning, stacklevel=4)
        return draw(self.n_rows)

    def _checked(self, table: Any, X: Any) -> Any:
        """The table, refused unless a DataFrame of ``n_rows`` rows with X's columns."""
        import pandas as pd

        name = _describe(self.generator)
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"The generator {name} returned a {type(table).__name__}; "
                            "expected a pandas DataFrame with the training table's columns.")
        if len(table) != self.n_rows:
            raise ValueError(f"The generator {name} returned {len(table)} rows; "
                             f"n_synthetic_rows asked for {self.n_rows}: every synthetic "
                             "table of the game must have that many rows.")
        missing = [c for c in X.columns if c not in table.columns]
        extra = [c for c in table.columns if c not in X.columns]
        if missing or extra:
            raise ValueError(f"The generator {name}'s table must have exactly the training "
                             f"columns; it lacks {missing[:5]} and adds {extra[:5]}.")
        empty = [c for c in X.columns if table[c].isna().all() and X[c].notna().any()]
        if empty:
            raise ValueError(f"The generator {name}'s columns {empty[:5]} are all missing "
                             "(NaN), while the training data has values there.")
        return table[list(X.columns)].reset_index(drop=True)

    def save(self, table: Any, path: str | os.PathLike[str]) -> None:
        """Write the table as Parquet (data only: reading it runs no code)."""
        import_optional("pyarrow", extra="report", purpose="Caching synthetic tables")
        table.to_parquet(path, index=False)

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Read a table written by :meth:`save`, never through a link.

        The file is opened with ``O_NOFOLLOW`` in its folder
        (:func:`privaudit._files.read_bytes_inside`): a cached table replaced by a
        symbolic link is refused (:class:`~privaudit.exceptions.OutsideFolderError`),
        nothing is read from where it points.
        """
        from privaudit._files import read_bytes_inside

        path = Path(os.fspath(path))
        content = read_bytes_inside(path.parent, path.name, what="the cached synthetic table")
        return _parquet_table(content, path)


def _parquet_table(content: bytes, path: Path) -> Any:
    """The table in the bytes of a cached Parquet file (data only: reading runs no code)."""
    import io

    import pandas as pd

    import_optional("pyarrow", extra="report", purpose="Caching synthetic tables")
    try:
        return pd.read_parquet(io.BytesIO(content))
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"The cached synthetic table {os.fspath(path)} is not a Parquet "
                         f"table ({exc}); delete it and rerun to make it again.") from None


def _fits_and_samples(obj: Any) -> bool:
    """An object generator: ``fit`` with ``sample`` (SDV) or ``generate`` (TAPAS)."""
    return callable(getattr(obj, "fit", None)) and (
        callable(getattr(obj, "sample", None)) or callable(getattr(obj, "generate", None)))


def _takes_random_state(method: Any) -> bool:
    """Whether ``method`` accepts a ``random_state`` keyword (TAPAS's ``generate`` does)."""
    import inspect

    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "random_state" or p.kind is p.VAR_KEYWORD for p in parameters)


def _unwrap(table: Any) -> Any:
    """A TAPAS ``TabularDataset`` (a DataFrame in ``.data``) as its DataFrame."""
    import pandas as pd

    inner = getattr(table, "data", None)
    if not isinstance(table, pd.DataFrame) and isinstance(inner, pd.DataFrame):
        return inner
    return table


def _seed_before_fit(model: Any, seed: int) -> bool:
    """Seed an object generator by its ``set_random_state`` or ``random_state``."""
    if callable(getattr(model, "set_random_state", None)):
        model.set_random_state(seed)
        return True
    if hasattr(model, "random_state"):
        model.random_state = seed
        return True
    return False


def _describe(generator: Any) -> str:
    """A function's name, a partial's function's, an object generator's class."""
    name = getattr(generator, "__qualname__", None) or getattr(
        getattr(generator, "func", None), "__qualname__", None)
    if name is None and _fits_and_samples(generator):
        name = type(generator).__qualname__
    return name or repr(generator)[:80]


def _generator_id(generator: Any) -> Any:
    if _fits_and_samples(generator) and not callable(generator):
        cls = type(generator)
        return {"object": f"{cls.__module__}.{cls.__qualname__}",
                "source": callable_fingerprint(cls)["source"],
                "state": canonical(getattr(generator, "__dict__", {}))}
    return canonical(generator)


class GeneratorRuns:
    """A generator trained on many shadow training sets, each target in half of them.

    Parameters
    ----------
    generator : callable, object with ``fit``/``sample``, or GeneratorRecipe
        See :class:`GeneratorRecipe`.
    auxiliary_data : pandas.DataFrame
        The attacker's knowledge of the population: training sets are drawn from it.
        Rows identical to a target are never drawn (they would be the target).
    targets : pandas.DataFrame
        The target records, with the auxiliary data's columns.
    n_runs : int
        Training sets (and synthetic tables); even, so every target is in exactly half.
    n_train_rows : int
        Rows of every training set (the size of the real generator's training set).
    n_synthetic_rows : int, optional
        Rows of every synthetic table (default ``n_train_rows``).
    knowledge : {"auxiliary", "exact"}, default="auxiliary"
        ``"auxiliary"``: the other rows of each training set are a fresh sample of the
        auxiliary data. ``"exact"``: the attacker knows them: the same rows every run,
        each target left out replaced by the same stand-in record.
    random_state : int, optional
        Seeds the training sets and the generator; needed for a cache to be resumed.
    executor : {"local", "ray"} or Executor, default="local"
        Where runs execute. Same tables whatever the executor.
    n_jobs : int, optional
        Workers of a named executor.
    cache_dir : path, optional
        Write every synthetic table there as it finishes; a rerun reuses them.
    alternatives : pandas.DataFrame, optional
        Attribute inference: one row per target, the target with another value of its
        secret attribute. Every training set then holds each target, as itself in the runs
        of ``in_mask_`` and as its alternative in the others (TAPAS's ``TargetedAIA``).

    Attributes
    ----------
    in_mask_ : ndarray of shape (n_runs, n_targets), bool
        Whether target ``t`` is in run ``r``'s training set.
    train_indices_ : list of ndarray
        Each run's training rows, as positions in the auxiliary data followed by the
        targets (target ``t`` is position ``len(auxiliary_data) + t``).
    synthetic_ : list of DataFrame
        The synthetic tables, in memory: with a cache, each is read back once when the
        runs finish (every attack of an audit then reuses them; reading them again per
        access made a cached audit's attacks 2.4-4.2x slower). Read them back later
        with :meth:`from_cache`.
    run_seconds_ : ndarray of shape (n_runs,)
        Each run's generator time (from the cache's manifest for tables found there).
    cache_path_ : pathlib.Path or None
        The ``genruns-<key>`` folder of the cache.
    n_made_ : int
        Tables made by this call (the others came from the cache).

    References
    ----------
    .. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for
       Adversarial Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on
       Synthetic Data.
    """

    def __init__(self, generator: Any, auxiliary_data: Any, targets: Any, *, n_runs: int,
                 n_train_rows: int, n_synthetic_rows: int | None = None,
                 knowledge: str = "auxiliary", random_state: int | None = None,
                 executor: Any = "local", n_jobs: int | None = None,
                 cache_dir: str | os.PathLike[str] | None = None,
                 alternatives: Any = None) -> None:
        self.generator, self.auxiliary_data, self.targets = generator, auxiliary_data, targets
        self.alternatives = alternatives
        self.n_runs, self.n_train_rows = n_runs, n_train_rows
        self.n_synthetic_rows, self.knowledge = n_synthetic_rows, knowledge
        self.random_state, self.executor, self.n_jobs = random_state, executor, n_jobs
        self.cache_dir = cache_dir

    # ------------------------------------------------------------------ checks
    def _check(self) -> tuple[GeneratorRecipe, Any, Any, Any]:
        import pandas as pd

        for name in ("auxiliary_data", "targets"):
            if not isinstance(getattr(self, name), pd.DataFrame):
                raise param_error(name, _NAME, "a pandas DataFrame",
                                  f"<{type(getattr(self, name)).__name__}>", error=TypeError)
        aux, targets = self.auxiliary_data, self.targets
        missing = [c for c in aux.columns if c not in targets.columns]
        if missing or len(targets) == 0:
            raise param_error("targets", _NAME, "one or more rows with the auxiliary "
                              f"data's columns (missing: {missing[:5]})", f"<{len(targets)} rows>")
        n_runs = check_int(self.n_runs, param="n_runs", func=_NAME, low=2)
        if n_runs % 2:
            raise param_error("n_runs", _NAME, "an even number (each target in half the "
                              "runs)", n_runs)
        n_train = check_int(self.n_train_rows, param="n_train_rows", func=_NAME, low=1)
        if n_train < len(targets):
            raise param_error("n_train_rows", _NAME, f"at least the number of targets "
                              f"({len(targets)})", n_train)
        if self.knowledge not in KNOWLEDGE:
            raise param_error("knowledge", _NAME, f"one of {list(KNOWLEDGE)}", self.knowledge)
        recipe = (self.generator if isinstance(self.generator, GeneratorRecipe) else
                  GeneratorRecipe(self.generator, n_train if self.n_synthetic_rows is None
                                  else self.n_synthetic_rows))
        executor = get_executor(self.executor, n_jobs=self.n_jobs, func=_NAME)
        alternatives = self.alternatives
        if alternatives is not None:
            if not isinstance(alternatives, pd.DataFrame) or len(alternatives) != len(
                    targets) or any(c not in alternatives.columns for c in aux.columns):
                kind = type(alternatives).__name__
                raise param_error("alternatives", _NAME, f"a DataFrame of {len(targets)} rows "
                                  "with the auxiliary data's columns", f"<{kind}>",
                                  error=TypeError)
            alternatives = alternatives[list(aux.columns)].reset_index(drop=True)
        return (recipe, executor, targets[list(aux.columns)].reset_index(drop=True),
                alternatives)

    def _drawable(self, records: Any) -> NDArray[np.int64]:
        """Auxiliary rows that may fill a training set: none identical to a target."""
        aux = self.auxiliary_data
        is_target = rows_found_in(aux, records)
        if is_target.any():
            warnings.warn(f"GeneratorRuns: {int(is_target.sum())} auxiliary rows are "
                          "identical to a target and are never drawn into a training set.",
                          PrivauditWarning, stacklevel=3)
        drawable = np.flatnonzero(~is_target).astype(np.int64)
        if drawable.size < self.n_train_rows:
            why = (f" ({int(is_target.sum())} of the {len(aux)} auxiliary rows are identical "
                   "to a target record, and are never drawn: give more distinct rows)"
                   if is_target.any() else "")
            raise param_error("n_train_rows", _NAME, f"at most the {drawable.size} auxiliary "
                              f"rows that are not targets{why}", self.n_train_rows)
        return drawable

    # ------------------------------------------------------------------ training sets
    def _training_sets(self, drawable: NDArray[np.int64], in_mask: NDArray[np.bool_],
                       seeds: NDArray[np.int64], fixed_rng: np.random.Generator,
                       ) -> list[NDArray[np.int64]]:
        """Each run's rows, as positions in the pool.

        Other records, the targets in, and for each target out its stand-in (an
        auxiliary record, or its alternative in attribute inference).
        """
        n_aux, (n_runs, n_targets) = len(self.auxiliary_data), in_mask.shape
        n_other = self.n_train_rows - n_targets
        alternatives = self.alternatives is not None
        if self.knowledge == "exact":
            chosen = fixed_rng.choice(drawable, n_other + (0 if alternatives else n_targets),
                                      replace=False)
            known, stand_ins = chosen[:n_other], chosen[n_other:]
        out = []
        for r in range(n_runs):
            rng = np.random.default_rng([int(seeds[r]), 0x5EED])
            inside, outside = np.flatnonzero(in_mask[r]), np.flatnonzero(~in_mask[r])
            if alternatives:
                others = (known if self.knowledge == "exact" else
                          rng.choice(drawable, n_other, replace=False))
                rows = np.concatenate([others, n_aux + inside, n_aux + n_targets + outside])
            elif self.knowledge == "exact":
                rows = np.concatenate([known, stand_ins[outside], n_aux + inside])
            else:
                fill = rng.choice(drawable, self.n_train_rows - inside.size, replace=False)
                rows = np.concatenate([fill, n_aux + inside])
            out.append(rows[rng.permutation(rows.size)].astype(np.int64))
        return out

    def _key_info(self, recipe: GeneratorRecipe, targets: Any, alternatives: Any,
                  ss: np.random.SeedSequence) -> dict[str, Any]:
        return {"format": RUNS_FORMAT, "recipe": recipe.fingerprint(),
                "recipe_repr": repr(recipe)[:500],
                "auxiliary": data_fingerprint(self.auxiliary_data),
                "targets": data_fingerprint(targets),
                "alternatives": None if alternatives is None else data_fingerprint(
                    alternatives), "n_runs": int(self.n_runs),
                "n_train_rows": int(self.n_train_rows), "knowledge": self.knowledge,
                "seed_entropy": str(ss.entropy),
                "seed_spawn_key": [int(k) for k in ss.spawn_key]}

    # ------------------------------------------------------------------ reuse
    @classmethod
    def from_cache(cls, folder: str | os.PathLike[str]) -> SavedGeneratorRuns:
        """The synthetic tables of a finished game, read back from its cache folder.

        How a user gets the tables of an audit back (to compute their own statistics, or
        attack them with their own code): ``folder`` is a ``genruns-<key>`` folder of a
        ``cache_dir``, as named by :attr:`cache_path_` or by a generator audit's results
        (``result.extra["runs"]["test"]["cache"]``). Every table is checked against its
        manifest's SHA-256 and read without following links.

        Returns
        -------
        SavedGeneratorRuns
            ``synthetic`` (the tables, in run order), ``in_mask`` (which target each run
            trained on) and ``info`` (what the game was made from, ``pool.json``).

        Raises
        ------
        ValueError
            When a table is missing or does not match its manifest (the game is
            unfinished or the folder was edited), naming the file.
        """
        return read_generator_runs(folder)

    # ------------------------------------------------------------------ run
    def run(self, progress: Any = None) -> GeneratorRuns:
        """Make every synthetic table (or find it in the cache); return ``self``."""
        import pandas as pd

        from privaudit.training._hashing import sha256_json

        recipe, executor, targets, alternatives = self._check()
        progress = as_progress(progress, func=f"{_NAME}.run")
        records = targets if alternatives is None else pd.concat([targets, alternatives],
                                                                 ignore_index=True)
        drawable = self._drawable(records)
        ss = _seed_sequence(self.random_state)
        children = ss.spawn(self.n_runs + 1)
        seeds = np.array([int(c.generate_state(1, dtype=np.uint32)[0]) for c in children[1:]],
                         dtype=np.int64)
        fixed_rng = np.random.default_rng(children[0])
        in_mask = balanced_in_mask(self.n_runs, len(targets), 0.5, fixed_rng)
        indices = self._training_sets(drawable, in_mask, seeds, fixed_rng)
        pool = pd.concat([self.auxiliary_data, records], ignore_index=True)
        cache, done = None, {}
        if self.cache_dir is not None:
            info = self._key_info(recipe, targets, alternatives, ss)
            key = sha256_json({k: v for k, v in info.items() if k != "recipe_repr"})
            cache = ModelCache(self.cache_dir, key, info, recipe, prefix="genruns",
                               noun="synthetic table")
            _check_cache_folder(self.cache_dir, cache.path)
            cache.prepare(in_mask)
            done = cache.finished(seeds.tolist(), indices)
        tables: list[Any] = [None] * self.n_runs
        seconds = np.full(self.n_runs, np.nan)
        for i, secs in done.items():
            seconds[i] = secs
        missing = [i for i in range(self.n_runs) if i not in done]
        found = f" ({len(done)} found in the cache)" if done else ""
        with progress.task(f"Generator runs{found}", total=self.n_runs) as step:
            step.advance(len(done))
            trainer = _Trainer(executor, recipe, seeds, indices, pool,
                               np.zeros(len(pool)), seconds, tick=step.advance)
            try:
                if cache is not None:
                    self.n_made_ = trainer.into_cache(cache, missing)
                else:
                    trainer.run(missing, tables.__setitem__)
                    self.n_made_ = len(missing)
            except GeneratorFailed as exc:
                raise exc.at_run(seeds) from exc
        if cache is not None:  # read once: every attack of an audit reuses these tables
            tables = list(CachedModels(cache, self.n_runs))
        self.synthetic_: Sequence[Any] = tables
        self.in_mask_, self.seeds_, self.train_indices_ = in_mask, seeds, indices
        self.run_seconds_ = seconds
        self.cache_path_ = None if cache is None else cache.path
        return self


# ---------------------------------------------------------------- the cache folder
#
# Every file of a ``genruns-<key>`` folder is privaudit's: none is a link leading out of
# the cache root. The folder is created with mkdir_inside (a planted ``genruns-<key>``
# link pointing elsewhere is refused before anything is written through it), every entry
# already in it is checked before the cache reads or locks it (a ``models.lock``,
# manifest or Parquet table symlinked outside, dangling or not, is refused), and every
# table is then read with O_NOFOLLOW (GeneratorRecipe.load).

_CACHE_FILES = ("pool.json", "in_mask.npy", "models.lock")


def _check_cache_folder(root: str | os.PathLike[str], folder: Path) -> None:
    """Create ``folder`` inside ``root``; refuse any entry of it that is a link out."""
    from privaudit._files import mkdir_inside

    mkdir_inside(root, folder.name, what=_FOLDER)
    _check_entries(folder)


def _check_entries(folder: Path) -> None:
    """Refuse an entry of ``folder`` that is a link leading out of it (dangling or not)."""
    from privaudit._files import check_inside

    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_symlink() or entry.name in _CACHE_FILES:
                check_inside(folder / entry.name, folder,
                             what=f"the cache file {entry.name} of {_FOLDER}")


_FOLDER = "the generator runs' cache folder"


class SavedGeneratorRuns:
    """The tables of a generator game read back from its cache (see ``from_cache``).

    Attributes
    ----------
    synthetic : list of pandas.DataFrame
        One synthetic table per run, in run order.
    in_mask : ndarray of shape (n_runs, n_targets), bool
        Whether target ``t`` was in run ``r``'s training set (in attribute inference:
        whether run ``r`` trained on the target rather than its alternative).
    info : dict
        What the game was made from (``pool.json``: the recipe, the data's
        fingerprints, the sizes, the seed).
    folder : pathlib.Path
        The cache folder read.
    """

    def __init__(self, synthetic: list[Any], in_mask: NDArray[np.bool_],
                 info: dict[str, Any], folder: Path) -> None:
        self.synthetic, self.in_mask, self.info, self.folder = synthetic, in_mask, info, folder

    def __repr__(self) -> str:
        return f"<SavedGeneratorRuns: {len(self.synthetic)} tables from {self.folder}>"


def read_generator_runs(folder: str | os.PathLike[str]) -> SavedGeneratorRuns:
    """Read the tables of a finished ``genruns-<key>`` cache folder (``from_cache``)."""
    import io
    import json

    from privaudit._digest import sha256_hex
    from privaudit._files import read_bytes_inside, read_text_inside

    folder = Path(os.fspath(folder))
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder: give the genruns-<key> folder of a "
                         "generator audit's cache_dir.")
    _check_entries(folder)
    try:
        info = json.loads(read_text_inside(folder, "pool.json", what="the game's pool.json"))
        mask = np.load(io.BytesIO(read_bytes_inside(folder, "in_mask.npy")),
                       allow_pickle=False)
    except OutsideFolderError:
        raise
    except (OSError, ValueError) as exc:
        raise ValueError(f"{folder} is not a finished generator game's cache folder "
                         f"(pool.json and in_mask.npy: {exc}).") from None
    tables = []
    for i in range(len(mask)):
        name = f"model-{i:05d}"
        try:
            manifest = json.loads(read_text_inside(folder, f"{name}.json"))
            content = read_bytes_inside(folder, f"{name}{GeneratorRecipe.suffix}")
        except OutsideFolderError:
            raise
        except (OSError, ValueError) as exc:
            raise ValueError(f"The synthetic table {i} of {folder} is missing or unreadable "
                             f"({exc}); rerun the audit with this cache_dir.") from None
        path = folder / f"{name}{GeneratorRecipe.suffix}"
        if not isinstance(manifest, dict) or manifest.get("model_sha256") != sha256_hex(
                content):
            raise ValueError(f"{path} does not match its manifest's SHA-256; rerun the "
                             "audit with this cache_dir.")
        tables.append(_parquet_table(content, path))
    return SavedGeneratorRuns(tables, np.asarray(mask, dtype=bool), info, folder)
