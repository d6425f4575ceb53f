"""Executors: run independent tasks (one per reference model) in parallel.

Every executor has one method, :meth:`Executor.map_unordered`, which yields
``(task_id, result)`` pairs as tasks finish, so that the caller can write each result to
disk the moment it exists. The reference-model pool uses this one code path for inline
execution, local worker processes and Ray.

Failure semantics are the same everywhere: when a task raises, no new task is started, the
tasks already running are allowed to finish and their results are yielded (so a cache keeps
them), and then the first error is raised.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import sys
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol, runtime_checkable

from privaudit._validation import param_error

__all__ = ["Executor", "LocalExecutor", "RayExecutor", "get_executor"]

_THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)

_RAY_EXTRA = "pip install 'privaudit[distributed]'"


@runtime_checkable
class Executor(Protocol):
    """Runs ``fn(*args, **shared)`` for each ``args`` in ``tasks``.

    Attributes
    ----------
    n_workers : int
        How many tasks may run at once (for information and for sizing work).
    """

    n_workers: int

    def map_unordered(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[tuple[Any, ...]],
        *,
        shared: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(i, fn(*tasks[i], **shared))`` in completion order.

        ``shared`` holds large read-only arguments common to every task (the training
        data): each worker receives them once, not once per task.
        """
        ...


# --------------------------------------------------------------------------- local

# Worker-side cache of the shared arguments of the current map call: {token: kwargs}.
_WORKER_SHARED: dict[str, dict[str, Any]] = {}


def _init_worker(threads: int, filters: list[Any]) -> None:
    # The caller's warning filters (e.g. an ignored ConvergenceWarning) apply in workers too.
    warnings.filters[:] = filters
    # Several workers each running a multi-threaded BLAS on the same cores oversubscribe
    # the machine and can be slower than one worker; pin each worker's pools.
    for var in _THREAD_ENV_VARS:
        os.environ[var] = str(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass
    if "torch" in sys.modules:  # pragma: no cover - only when a forkserver preloaded torch
        sys.modules["torch"].set_num_threads(threads)


def _load_shared(token: str, path: str) -> dict[str, Any]:
    shared = _WORKER_SHARED.get(token)
    if shared is None:
        # Safe to unpickle: never a user's file, but the one the parent process wrote a moment
        # ago for this map call (mkstemp: mode 0600, unguessable name), carrying the same
        # objects multiprocessing itself pickles to send task arguments to workers.
        with open(path, "rb") as fh:
            shared = pickle.load(fh)
        _WORKER_SHARED.clear()  # keep only the current call's data
        _WORKER_SHARED[token] = shared
    return shared


def _run_in_worker(
    fn: Callable[..., Any], args: tuple[Any, ...], token: str | None, path: str | None
) -> Any:
    shared = {} if token is None or path is None else _load_shared(token, path)
    return fn(*args, **shared)


def _picklable_filters() -> list[Any]:
    out = []
    for entry in warnings.filters:
        try:
            pickle.dumps(entry)
        except Exception:  # a filter on a local class: leave it out
            continue
        out.append(entry)
    return out


def _main_is_importable() -> bool:
    """Whether worker processes can re-import ``__main__`` (forkserver and spawn do).

    Code read from standard input or run by an embedding application has a ``__file__``
    such as ``<stdin>`` that does not exist: re-importing it fails in every worker.
    """
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None:
        return True
    path = getattr(main, "__file__", None)
    return path is None or os.path.isfile(path)


def _default_start_method() -> str:
    # "fork" copies the parent's threads' locks (BLAS, Ray, torch) in whatever state they
    # are in, which can deadlock; forkserver forks from a clean single-threaded server and
    # is fast, spawn is the portable fallback (Windows, macOS). Where the main module cannot
    # be re-imported (code piped to python), fork is the only method that works at all.
    methods = multiprocessing.get_all_start_methods()
    if not _main_is_importable() and "fork" in methods:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def _shared_dir() -> str | None:
    # RAM-backed where available, as joblib does: the file is read once per worker.
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


class LocalExecutor:
    """Run tasks inline (``n_jobs=1``) or in local worker processes.

    Parameters
    ----------
    n_jobs : int or None, default=None
        Number of worker processes. ``None`` or ``1`` runs every task inline in the calling
        process; ``-1`` uses every CPU.
    threads_per_worker : int, default=1
        BLAS/OpenMP threads in each worker process (not applied inline).
    start_method : {"forkserver", "spawn"}, optional
        How worker processes start. Default: forkserver where available, else spawn.
        ``"fork"`` is refused: forking a process that runs threads can deadlock.

    Notes
    -----
    Worker processes start on the first parallel call and are kept for later calls (a
    pool's ``fit`` and every ``map``), so the cost of starting Python and importing the
    model's library is paid once per worker; :meth:`close` (or garbage collection) stops
    them. Workers take the caller's warning filters as they are when the workers start.
    The ``shared`` arguments of a call are pickled once to a temporary file
    (``/dev/shm`` where available) that each worker reads once.
    """

    def __init__(
        self, n_jobs: int | None = None, *, threads_per_worker: int = 1,
        start_method: str | None = None,
    ) -> None:
        self.n_workers = _check_n_jobs(n_jobs, "LocalExecutor")
        if isinstance(threads_per_worker, bool) or not isinstance(threads_per_worker, int) or (
            threads_per_worker < 1
        ):
            raise param_error(
                "threads_per_worker", "LocalExecutor", "a positive integer", threads_per_worker
            )
        if start_method is not None and start_method not in ("forkserver", "spawn"):
            raise param_error(
                "start_method", "LocalExecutor", "'forkserver', 'spawn' or None", start_method
            )
        self.threads_per_worker = threads_per_worker
        self.start_method = start_method
        self._pool: ProcessPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"LocalExecutor(n_jobs={self.n_workers})"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_pool"] = None  # worker processes do not travel
        return state

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes (they restart on the next parallel call)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is not None and getattr(self._pool, "_broken", False):
            # A worker died (killed, out of memory): start afresh.
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        if self._pool is None:
            ctx = multiprocessing.get_context(self.start_method or _default_start_method())
            self._pool = ProcessPoolExecutor(
                max_workers=self.n_workers, mp_context=ctx, initializer=_init_worker,
                initargs=(self.threads_per_worker, _picklable_filters()),
            )
        return self._pool

    def map_unordered(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[tuple[Any, ...]],
        *,
        shared: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(i, fn(*tasks[i], **shared))`` in completion order (see :class:`Executor`)."""
        tasks = list(tasks)
        shared = dict(shared or {})
        if self.n_workers == 1 or len(tasks) <= 1:
            for i, args in enumerate(tasks):
                yield i, fn(*args, **shared)
            return
        yield from self._map_processes(fn, tasks, shared)

    def _map_processes(
        self, fn: Callable[..., Any], tasks: list[tuple[Any, ...]], shared: dict[str, Any]
    ) -> Iterator[tuple[int, Any]]:
        try:
            pickle.dumps((fn, tasks[0]))
        except Exception as exc:
            raise param_error(
                "fn", "LocalExecutor.map_unordered",
                "picklable, with picklable arguments (a module-level function, not a lambda "
                "or a local function) to run in worker processes; or use n_jobs=1",
                f"<{getattr(fn, '__qualname__', type(fn).__name__)}: {exc}>", error=TypeError,
            ) from exc
        token = path = None
        if shared:
            token = uuid.uuid4().hex
            fd, path = tempfile.mkstemp(prefix="privaudit-shared-", suffix=".pkl",
                                        dir=_shared_dir())
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(shared, fh, protocol=pickle.HIGHEST_PROTOCOL)
        pool = self._get_pool()
        # A bounded window of submitted tasks: when one fails, the rest were never started.
        window = 2 * self.n_workers
        pending: dict[Future[Any], int] = {}
        next_task = 0
        error: BaseException | None = None
        try:
            while pending or (error is None and next_task < len(tasks)):
                while error is None and next_task < len(tasks) and len(pending) < window:
                    fut = pool.submit(_run_in_worker, fn, tasks[next_task], token, path)
                    pending[fut] = next_task
                    next_task += 1
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=pending.__getitem__):
                    i = pending.pop(fut)
                    exc = fut.exception()
                    if exc is not None:
                        if error is None:
                            error = exc
                            for other in pending:
                                other.cancel()  # only those not yet running
                        continue
                    yield i, fut.result()
                pending = {f: i for f, i in pending.items() if not f.cancelled()}
        finally:
            for fut in pending:  # the caller stopped early: start nothing more
                fut.cancel()
            if path is not None:
                # Running tasks already hold the data in memory or an open file.
                with contextlib.suppress(OSError):
                    os.remove(path)
        if error is not None:
            if isinstance(error, BrokenProcessPool):
                self.close()  # a broken pool cannot be reused
                raise BrokenProcessPool(
                    "A privaudit worker process died before finishing its task. Worker "
                    "processes re-import your main script: put the code that starts the "
                    "audit under `if __name__ == \"__main__\":`, or run with n_jobs=1. "
                    f"(Original error: {error})"
                ) from error
            raise error


def _check_n_jobs(n_jobs: Any, func: str) -> int:
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise param_error("n_jobs", func, "None, -1 or a positive integer", n_jobs)
    if n_jobs == -1:
        return os.cpu_count() or 1
    return n_jobs


# --------------------------------------------------------------------------- ray


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"The Ray executor needs Ray: {_RAY_EXTRA}") from exc
    return ray


def _run_ray_task(fn: Callable[..., Any], args: tuple[Any, ...], **shared: Any) -> Any:
    return fn(*args, **shared)


class RayExecutor:
    """Run tasks on a Ray cluster, or on a local Ray instance started on demand.

    Parameters
    ----------
    address : str, optional
        Address of a running cluster (``"auto"``, ``"ray://head:10001"``, ...). ``None``
        starts a local Ray instance. If Ray is already initialised in this process it is
        reused as is and ``address``/``num_cpus`` are ignored.
    num_cpus : int, optional
        CPUs of a local instance started here (default: all).
    cpus_per_task : float, default=1
        CPUs reserved by each task (Ray also sets each worker's OpenMP threads from it).
    init_kwargs : mapping, optional
        Extra arguments for ``ray.init``.

    Notes
    -----
    Ray is imported when the first task runs, so constructing this executor (or importing
    privaudit) does not need Ray. Arguments passed in ``shared`` are put once in Ray's
    object store and read by every task.
    """

    def __init__(
        self, address: str | None = None, *, num_cpus: int | None = None,
        cpus_per_task: float = 1, init_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if address is not None and not isinstance(address, str):
            raise param_error("address", "RayExecutor", "a string or None", address,
                              error=TypeError)
        if num_cpus is not None and (
            isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1
        ):
            raise param_error("num_cpus", "RayExecutor", "a positive integer or None", num_cpus)
        if not (isinstance(cpus_per_task, (int, float)) and cpus_per_task > 0):
            raise param_error("cpus_per_task", "RayExecutor", "a positive number",
                              cpus_per_task)
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_task = float(cpus_per_task)
        self.init_kwargs = dict(init_kwargs or {})
        self._started_here = False

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r})"

    @property
    def n_workers(self) -> int:  # type: ignore[override]
        """CPUs of the cluster divided by CPUs per task (starts Ray if needed)."""
        ray = self._ensure_ray()
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus // self.cpus_per_task))

    def _ensure_ray(self) -> Any:
        ray = _import_ray()
        if ray.is_initialized():
            return ray
        kwargs: dict[str, Any] = {"include_dashboard": False}
        if self.address is None:
            if self.num_cpus is not None:
                kwargs["num_cpus"] = self.num_cpus
            # Workers of a local instance run on this machine: give them the driver's whole
            # import path so that functions from scripts and test modules unpickle there.
            # (Ray forwards only part of it on its own: not when the driver is not a script,
            # e.g. under pytest-xdist.)
            path = os.pathsep.join(p for p in sys.path if p)
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
        kwargs.update(self.init_kwargs)
        ray.init(address=self.address, **kwargs)
        self._started_here = True
        return ray

    def shutdown(self) -> None:
        """Shut down Ray if this executor started it."""
        if self._started_here:
            _import_ray().shutdown()
            self._started_here = False

    def map_unordered(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[tuple[Any, ...]],
        *,
        shared: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(i, fn(*tasks[i], **shared))`` in completion order (see :class:`Executor`)."""
        tasks = list(tasks)
        if not tasks:
            return
        ray = self._ensure_ray()
        shared_refs = {k: ray.put(v) for k, v in (shared or {}).items()}
        remote = ray.remote(num_cpus=self.cpus_per_task, max_retries=0)(_run_ray_task)
        window = 2 * self.n_workers
        pending: dict[Any, int] = {}
        next_task = 0
        error: BaseException | None = None
        try:
            while pending or (error is None and next_task < len(tasks)):
                while error is None and next_task < len(tasks) and len(pending) < window:
                    ref = remote.remote(fn, tasks[next_task], **shared_refs)
                    pending[ref] = next_task
                    next_task += 1
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    i = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as exc:
                        # Ray raises an exception that is also an instance of the task's own
                        # exception class, so callers can catch what the task raised.
                        if error is None:
                            error = exc
                        continue
                    yield i, result
        finally:
            for ref in pending:
                ray.cancel(ref)
        if error is not None:
            raise error


# --------------------------------------------------------------------------- factory


def get_executor(
    executor: str | Executor = "local", *, n_jobs: int | None = None,
    address: str | None = None,
) -> Executor:
    """Return an executor by name.

    Parameters
    ----------
    executor : {"local", "ray"} or Executor, default="local"
        ``"local"``: inline when ``n_jobs`` is 1/None, else local worker processes.
        ``"ray"``: a Ray cluster at ``address``, or a local Ray instance (with ``n_jobs``
        CPUs if given). An object with a ``map_unordered`` method is returned as is.
    n_jobs : int, optional
        Local: number of worker processes (``-1`` = all CPUs). Ray: CPUs of a local
        instance started here (ignored when connecting to a cluster).
    address : str, optional
        Ray cluster address; only with ``executor="ray"``.

    Returns
    -------
    Executor
        An object with ``map_unordered(fn, tasks, *, shared=None)``.

    Raises
    ------
    ImportError
        With ``executor="ray"`` when Ray is not installed (``pip install
        'privaudit[distributed]'``).
    """
    # Not isinstance(executor, Executor): on Python < 3.12 that evaluates every protocol
    # attribute, and RayExecutor.n_workers would start Ray.
    if not isinstance(executor, str) and callable(getattr(type(executor), "map_unordered", None)):
        return executor
    if executor == "local":
        if address is not None:
            raise param_error("address", "get_executor", "None with executor='local'", address)
        return LocalExecutor(n_jobs)
    if executor == "ray":
        _import_ray()  # fail now, not at the first task, when Ray is missing
        n = None if n_jobs is None else _check_n_jobs(n_jobs, "get_executor")
        return RayExecutor(address, num_cpus=n)
    raise param_error(
        "executor", "get_executor", "'local', 'ray' or an Executor", executor,
        error=TypeError if not isinstance(executor, str) else ValueError,
    )
