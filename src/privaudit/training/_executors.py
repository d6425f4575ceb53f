"""Executors: run independent tasks (one per reference model) in parallel.

Every executor has one method, :meth:`Executor.map_unordered`, which yields
``(task_id, result)`` pairs as tasks finish, so that the caller can write each result to
disk the moment it exists. The reference-model pool uses this one code path for inline
execution, local worker processes and Ray.

Failure semantics are the same everywhere: when a task raises, no new task is started, the
tasks already running are allowed to finish and their results are yielded (so a cache keeps
them), and then the first error is raised.

Local worker processes come from loky, the executor joblib and scikit-learn use: workers do
not re-import the main module (scripts without an ``if __name__ == "__main__":`` guard,
notebooks and piped code work), they end when the process that started them dies, and every
task, inline or in a worker, runs with the same BLAS thread limit so that results are
bit-identical whatever ``n_jobs``.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import pickle
import re
import secrets
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol, runtime_checkable

from privaudit._digest import hmac_sha256
from privaudit._optional import import_optional
from privaudit._validation import EXECUTOR_NAMES, N_JOBS, REMOTE_EXECUTORS, param_error
from privaudit._warning_filters import install_warning_filters, portable_warning_filters

__all__ = ["Executor", "LocalExecutor", "RayExecutor", "get_executor"]

_THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


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
# The file they came from (removed by the worker if the parent dies without removing it).
_WORKER_SHARED_PATHS: list[str] = []

# How often a worker checks that the process that started it is still alive.
_PARENT_POLL_SECONDS = 0.2
#: Bytes of the HMAC-SHA256 that opens a shared-arguments file (see _read_shared).
_MAC_SIZE = 32

_START_METHODS = ("loky", "spawn")


def _cloudpickle() -> Any:
    # Functions and classes defined in the user's script, a notebook or code piped to
    # python live in `__main__`, which worker processes do not have: cloudpickle sends
    # them by value (as joblib does), plain pickle only by name.
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - older joblib vendors it
        from joblib.externals import cloudpickle  # type: ignore[no-redef]
    return cloudpickle


# threadpoolctl's view of the loaded BLAS/OpenMP libraries, and len(sys.modules) when taken.
_CONTROLLER: dict[str, Any] = {"controller": None, "n_modules": -1}


def _threadpool_controller() -> Any:
    # Scanning the loaded libraries takes milliseconds: once, and again only after imports
    # (which is how a new native library gets loaded), not before every task.
    if _CONTROLLER["n_modules"] != len(sys.modules):
        from threadpoolctl import ThreadpoolController

        _CONTROLLER["controller"] = ThreadpoolController()
        _CONTROLLER["n_modules"] = len(sys.modules)
    return _CONTROLLER["controller"]


@contextlib.contextmanager
def _thread_limits(threads: int) -> Iterator[None]:
    """Run BLAS/OpenMP (and torch, if imported) on ``threads`` threads, then restore.

    The same limit inline and in worker processes makes results bit-identical whatever
    ``n_jobs``: a BLAS routine's rounding depends on how many threads split its work.
    """
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    with _threadpool_controller().limit(limits=threads):
        if torch is not None:
            torch.set_num_threads(threads)
        try:
            yield
        finally:
            if torch is not None and before is not None:
                torch.set_num_threads(before)


def _watch_parent(parent_pid: int) -> None:
    """End this worker as soon as its parent dies, even by ``kill -9`` (no cleanup runs).

    A dead parent's children are re-parented (to init or a sub-reaper), so ``getppid``
    changes; a daemon thread polls it, which works on every POSIX system and whatever
    thread of the parent started the worker (unlike Linux's ``PR_SET_PDEATHSIG``).
    """
    if os.getppid() != parent_pid:  # already orphaned while starting
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(_PARENT_POLL_SECONDS)
        # The parent cannot remove the shared-data file of its last call any more.
        for path in _WORKER_SHARED_PATHS:
            with contextlib.suppress(OSError):
                os.remove(path)
        os._exit(1)

    threading.Thread(target=watch, name="privaudit-parent-watch", daemon=True).start()


def _init_worker(threads: int, filters: list[Any], parent_pid: int) -> None:
    if os.name == "posix":
        _watch_parent(parent_pid)
    # The caller's warning filters (e.g. an ignored ConvergenceWarning) apply in workers too.
    install_warning_filters(filters)
    # Several workers each running a multi-threaded BLAS on the same cores oversubscribe
    # the machine and can be slower than one worker; pin each worker's pools.
    for var in _THREAD_ENV_VARS:
        os.environ[var] = str(threads)


def _load_shared(token: str, path: str, fn: Callable[..., Any]) -> dict[str, Any]:
    shared = _WORKER_SHARED.get(token)
    if shared is None:
        try:
            shared = _read_shared(path, token)
        except Exception as exc:
            raise _load_error(fn, "its shared arguments", f"{type(exc).__name__}: {exc}",
                              import_failed=isinstance(exc, (ImportError, AttributeError)),
                              ) from exc
        _WORKER_SHARED.clear()  # keep only the current call's data
        _WORKER_SHARED[token] = shared
        _WORKER_SHARED_PATHS[:] = [path]
    return shared


def _read_shared(path: str, key: str) -> dict[str, Any]:
    """The shared arguments the parent wrote for this map call, authenticated first.

    The file is never a user's: the parent wrote it a moment ago for this call (mkstemp:
    mode 0600, unguessable name, removed when the call ends), its path comes from the
    parent, never from a file or a configuration, and it carries the objects the executor
    itself pickles to send task arguments to workers. It opens with an HMAC-SHA256 of the
    rest under ``key``, a per-call secret that reaches the worker only through the
    executor's own pipe: the whole file is checked before a byte is unpickled, so a file
    swapped or edited by anyone who does not hold the key is refused, never run
    (docs/security.md, "Known limits").
    """
    # Read once: the bytes checked are the bytes unpickled (a second read of the file
    # could see it edited after the check). Costs the file's size in memory meanwhile.
    with open(path, "rb") as fh:
        data = memoryview(fh.read())
    mac = hmac_sha256(bytes.fromhex(key))
    mac.update(data[_MAC_SIZE:])
    if len(data) < _MAC_SIZE or not hmac.compare_digest(mac.digest(), bytes(data[:_MAC_SIZE])):
        raise ValueError(f"the shared-arguments file {path} was not written by this "
                         "call's parent (its authentication code does not match)")
    # Safe to unpickle: not a user's file but the executor's own pickle of this call's
    # arguments, and these exact bytes carry a valid HMAC under the call's secret key
    # (checked above), which only this call's parent holds: nothing else can be run.
    return pickle.loads(data[_MAC_SIZE:])  # safe: own pickle, HMAC-authenticated above


class _MacWriter:
    """A binary file that also feeds what is written to an HMAC-SHA256 under ``key``."""

    def __init__(self, fh: Any, key: str) -> None:
        self.fh = fh
        self.mac = hmac_sha256(bytes.fromhex(key))

    def write(self, data: bytes) -> int:
        self.mac.update(data)
        return self.fh.write(data)


def _run_in_worker(
    fn: Callable[..., Any], args: tuple[Any, ...], token: str | None, path: str | None,
    threads: int,
) -> Any:
    shared = {} if token is None or path is None else _load_shared(token, path, fn)
    with _thread_limits(threads):
        return fn(*args, **shared)


def _shared_dir() -> str | None:
    # RAM-backed where available, as joblib does: the file is read once per worker.
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _is_broken(pool: Any) -> bool:
    flags = getattr(pool, "_flags", None)
    return getattr(flags, "broken", None) is not None


# ------------------------------------------------------------ why a worker could not run

_IMPORTABLE = (
    "A function run in worker processes must reach them: defined in an installed module, "
    "in __main__ or a notebook (sent by value), or in a module privaudit loaded from a "
    "configuration (sent by value); or use n_jobs=1."
)


def _qualname(fn: Any) -> str:
    target = getattr(fn, "func", fn)  # functools.partial
    name = getattr(target, "__qualname__", None) or type(target).__name__
    module = getattr(target, "__module__", None)
    return f"{module}.{name}" if module else name


def _load_error(fn: Any, what: str, cause: str, *, import_failed: bool) -> Exception:
    """The error of a task a worker could not load: names the function and the cause."""
    cls = ImportError if import_failed else TypeError
    return cls(f"A worker process could not load {what} of {_qualname(fn)}: {cause}. "
               f"{_IMPORTABLE}")


def _remote_cause(error: BaseException) -> str | None:
    """The last line of a worker's traceback that loky attached to ``error`` (if any)."""
    cause = error.__cause__
    if cause is None or type(cause).__name__ != "_RemoteTraceback":
        return None
    # loky quotes the worker's traceback between lines of three double quotes.
    lines = [line for line in str(cause).splitlines() if line.strip().strip('"')]
    return lines[-1].strip() if lines else None


def _explain_broken(error: BrokenProcessPool, fn: Any) -> Exception:
    """Say why the pool broke: a task or result that could not be unpickled, or a death.

    loky reports both as ``BrokenProcessPool``; only the second is a worker killed (out
    of memory, a crash in native code). Unpickling failures name the function and the
    worker's own error (``No module named ...``).
    """
    cause = _remote_cause(error)
    if cause is not None and "un-serialize" in str(error):
        what = "the task" if "task" in str(error) else "the result"
        import_failed = cause.startswith(("ModuleNotFoundError", "ImportError")) or (
            "Can't get attribute" in cause)
        if what == "the result":
            return _load_error(fn, "the result sent back by a worker", cause,
                               import_failed=import_failed)
        return _load_error(fn, what, cause, import_failed=import_failed)
    return BrokenProcessPool(
        "A privaudit worker process died before finishing its task (killed, out of memory, "
        "or a crash in native code) while running "
        f"{_qualname(fn)}. Rerun: with a cache_dir, finished models are kept; use fewer "
        f"n_jobs if memory is short. (Original error: {' '.join(str(error).split())})")


# ------------------------------------------- files left by a process group killed with -9

# privaudit's shared-data files and loky's POSIX semaphores carry their owner's pid.
_OWNED_FILE = re.compile(r"^(?:privaudit-shared-|sem\.loky-)(\d+)-[^/]+$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, another user's
        return True
    return True


def sweep_stale_files(folder: str | None = None) -> list[str]:
    """Remove shared-data files and loky semaphores whose owning process is dead.

    A process group killed with ``kill -9`` (the parent and its workers at once) runs no
    cleanup: its ``privaudit-shared-<pid>-*.pkl`` and loky's ``sem.loky-<pid>-*`` stay in
    ``/dev/shm``. Every parallel call sweeps them: only regular files of this user whose
    name carries the pid of a process that no longer exists (a live owner's files, another
    user's and links are left alone). POSIX only (``os.kill(pid, 0)``).

    Parameters
    ----------
    folder : str, optional
        Where to look. Default: where the shared-data file is written (``/dev/shm``, or
        the temporary folder).

    Returns
    -------
    list of str
        The files removed.
    """
    folder = folder or _shared_dir() or tempfile.gettempdir()
    if os.name != "posix":
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        match = _OWNED_FILE.match(name)
        if match is None or _alive(int(match.group(1))):
            continue
        path = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid():
                os.remove(path)
                removed.append(path)
    return removed


class LocalExecutor:
    """Run tasks inline (``n_jobs=1``) or in local worker processes.

    Parameters
    ----------
    n_jobs : int or None, default=None
        Number of worker processes. ``None`` or ``1`` runs every task inline in the calling
        process; ``-1`` uses every CPU.
    threads_per_worker : int, default=1
        BLAS/OpenMP threads of each task, in worker processes and inline alike (the same
        limit in both is what makes results identical whatever ``n_jobs``).
    start_method : {"loky", "spawn"}, optional
        How worker processes start. Default ``"loky"`` (joblib's executor, as scikit-learn
        uses): workers do not re-import the main module, so scripts without an
        ``if __name__ == "__main__":`` guard, notebooks and code piped to python work, and
        functions defined there are sent by value (cloudpickle). ``"spawn"`` re-imports the
        main module in every worker. ``"fork"`` is refused: forking a process that runs
        threads can deadlock.

    Notes
    -----
    Worker processes start on the first parallel call and are kept for later calls (a
    pool's ``fit`` and every ``map``), so the cost of starting Python and importing the
    model's library is paid once per worker; :meth:`close` (or garbage collection) stops
    them, and so does a ``KeyboardInterrupt`` during a call (running tasks are not awaited).
    Workers end by themselves within a fraction of a second when the process that started
    them dies, even by ``kill -9``, removing the call's shared-data file. Workers take the
    caller's warning filters as they are when the workers start. The ``shared`` arguments of
    a call are pickled once to a temporary file (``/dev/shm`` where available) that each
    worker reads once.
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
        if start_method is not None and start_method not in _START_METHODS:
            raise param_error(
                "start_method", "LocalExecutor", "'loky', 'spawn' or None", start_method
            )
        self.threads_per_worker = threads_per_worker
        self.start_method = start_method
        self._pool: Any = None

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
            self._pool.shutdown(wait=True)
            self._pool = None

    def _get_pool(self) -> Any:
        if self._pool is not None and _is_broken(self._pool):
            self._drop_pool()  # a worker died (killed, out of memory): start afresh
        if self._pool is None:
            from joblib.externals import loky

            method = self.start_method or "loky"
            threads = str(self.threads_per_worker)
            self._pool = loky.ProcessPoolExecutor(
                max_workers=self.n_workers, context=loky.backend.get_context(method),
                initializer=_init_worker,
                initargs=(self.threads_per_worker, portable_warning_filters(), os.getpid()),
                # Set before the worker imports anything (only the loky method can).
                env=dict.fromkeys(_THREAD_ENV_VARS, threads) if method == "loky" else None,
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
                with _thread_limits(self.threads_per_worker):
                    result = fn(*args, **shared)
                yield i, result
            return
        yield from self._map_processes(fn, tasks, shared)

    def _write_shared(self, shared: dict[str, Any]) -> tuple[str | None, str | None]:
        """Write ``shared`` once for the workers: (the call's secret key, the file's path)."""
        if not shared:
            return None, None
        # The owner's pid in the name: a later call can tell a dead owner's file (a process
        # group killed with -9) and remove it (sweep_stale_files).
        fd, path = tempfile.mkstemp(prefix=f"privaudit-shared-{os.getpid()}-", suffix=".pkl",
                                    dir=_shared_dir())
        key = secrets.token_hex(32)  # also the cache token of the workers' loaded copy
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(bytes(_MAC_SIZE))  # the authentication code, written last
                writer = _MacWriter(fh, key)
                _cloudpickle().dump(shared, writer, protocol=pickle.HIGHEST_PROTOCOL)
                fh.seek(0)
                fh.write(writer.mac.digest())
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(path)
            raise
        return key, path

    def _map_processes(
        self, fn: Callable[..., Any], tasks: list[tuple[Any, ...]], shared: dict[str, Any]
    ) -> Iterator[tuple[int, Any]]:
        try:
            _cloudpickle().dumps((fn, tasks[0]))
        except Exception as exc:
            raise param_error(
                "fn", "LocalExecutor.map_unordered",
                "picklable, with picklable arguments, to run in worker processes (no open "
                "file, lock or connection); or use n_jobs=1",
                f"<{getattr(fn, '__qualname__', type(fn).__name__)}: {exc}>", error=TypeError,
            ) from exc
        sweep_stale_files()
        token, path = self._write_shared(shared)
        try:
            yield from self._run_window(fn, tasks, token, path)
        finally:
            if path is not None:
                # Running tasks already hold the data in memory or an open file.
                with contextlib.suppress(OSError):
                    os.remove(path)

    def _run_window(
        self, fn: Callable[..., Any], tasks: list[tuple[Any, ...]], token: str | None,
        path: str | None,
    ) -> Iterator[tuple[int, Any]]:
        pool = self._get_pool()
        # A bounded window of submitted tasks: when one fails, the rest were never started.
        window = 2 * self.n_workers
        pending: dict[Future[Any], int] = {}
        next_task = 0
        error: BaseException | None = None
        try:
            while pending or (error is None and next_task < len(tasks)):
                while error is None and next_task < len(tasks) and len(pending) < window:
                    fut = pool.submit(_run_in_worker, fn, tasks[next_task], token, path,
                                      self.threads_per_worker)
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
        except (KeyboardInterrupt, SystemExit):
            self._drop_pool()  # Ctrl-C: stop the running tasks too, do not wait for them
            raise
        finally:
            for fut in pending:  # the caller stopped early: start nothing more
                fut.cancel()
        if error is not None:
            if isinstance(error, BrokenProcessPool):
                self._drop_pool()  # a broken pool cannot be reused
                raise _explain_broken(error, fn) from error
            raise error

    def _drop_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, kill_workers=True)
            self._pool = None


def _check_n_jobs(n_jobs: Any, func: str) -> int:
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not N_JOBS.ok(n_jobs):
        raise param_error("n_jobs", func, "None, -1 or a positive integer", n_jobs)
    if n_jobs == -1:
        return os.cpu_count() or 1
    return n_jobs


# --------------------------------------------------------------------------- ray


def _import_ray() -> Any:
    return import_optional("ray", extra="distributed", purpose="The Ray executor")


def _share_by_value_modules(ray_cloudpickle: Any) -> None:
    """Pickle by value with Ray's cloudpickle every module cloudpickle pickles by value.

    Ray vendors its own copy of cloudpickle; a module registered with cloudpickle (as
    privaudit registers the modules it loads from a configuration's folder, which workers
    cannot import by name) is registered with Ray's copy too, so its functions and classes
    reach Ray workers, on this machine or another, as code.
    """
    cloudpickle = _cloudpickle()
    listed = getattr(cloudpickle, "list_registry_pickle_by_value", None)
    if listed is None or not hasattr(ray_cloudpickle, "register_pickle_by_value"):
        return  # pragma: no cover - cloudpickle < 2
    already = set(ray_cloudpickle.list_registry_pickle_by_value())
    for name in sorted(set(listed()) - already):
        module = sys.modules.get(name)
        if module is not None:
            ray_cloudpickle.register_pickle_by_value(module)


def _run_ray_task(
    fn: Callable[..., Any], args: tuple[Any, ...], threads: int, **shared: Any
) -> Any:
    # The same BLAS limit as local workers: the same bits whatever the executor.
    with _thread_limits(threads):
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
        CPUs reserved by each task; each task runs BLAS/OpenMP on that many threads (at
        least one), as local workers do, so that results do not depend on the executor.
    init_kwargs : mapping, optional
        Extra arguments for ``ray.init``.
    gpus_per_task : float, default=0
        GPUs reserved by each task (``1``: one worker per GPU, as multi-GPU scoring asks
        for). Ray makes only the task's GPUs visible to it (``CUDA_VISIBLE_DEVICES``), so
        ``"cuda"`` in the task is its own GPU; Ray starts a fresh worker for each GPU task
        (its default for them), which frees the GPU's memory between tasks.

    Notes
    -----
    Ray is imported when the first task runs, so constructing this executor (or importing
    privaudit) does not need Ray. Arguments passed in ``shared`` are put once in Ray's
    object store and read by every task.
    """

    def __init__(
        self, address: str | None = None, *, num_cpus: int | None = None,
        cpus_per_task: float = 1, init_kwargs: Mapping[str, Any] | None = None,
        gpus_per_task: float = 0,
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
        if isinstance(gpus_per_task, bool) or not (
            isinstance(gpus_per_task, (int, float)) and gpus_per_task >= 0
        ):
            raise param_error("gpus_per_task", "RayExecutor", "a number >= 0", gpus_per_task)
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_task = float(cpus_per_task)
        self.gpus_per_task = float(gpus_per_task)
        self.init_kwargs = dict(init_kwargs or {})
        self._started_here = False

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r})"

    @property
    def n_workers(self) -> int:  # type: ignore[override]
        """CPUs (and GPUs) of the cluster divided by those of a task (starts Ray if needed)."""
        ray = self._ensure_ray()
        resources = ray.cluster_resources()
        slots = float(resources.get("CPU", 1.0)) // self.cpus_per_task
        if self.gpus_per_task:
            slots = min(slots, float(resources.get("GPU", 0.0)) // self.gpus_per_task)
        return max(1, int(slots))

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
        _share_by_value_modules(import_optional("ray.cloudpickle", extra="distributed",
                                                purpose="The Ray executor"))
        shared_refs = {k: ray.put(v) for k, v in (shared or {}).items()}
        remote = ray.remote(num_cpus=self.cpus_per_task, num_gpus=self.gpus_per_task,
                            max_retries=0)(_run_ray_task)
        threads = max(1, int(self.cpus_per_task))
        window = 2 * self.n_workers
        pending: dict[Any, int] = {}
        next_task = 0
        error: BaseException | None = None
        try:
            while pending or (error is None and next_task < len(tasks)):
                while error is None and next_task < len(tasks) and len(pending) < window:
                    ref = remote.remote(fn, tasks[next_task], threads, **shared_refs)
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
            if isinstance(error, ray.exceptions.RaySystemError):
                # A worker could not unpickle the task (a module it cannot import): name
                # the function and the cause, as local workers do.
                cause = str(error).strip().splitlines()[-1].strip()
                raise _load_error(fn, "the task", cause, import_failed=cause.startswith(
                    ("ModuleNotFoundError", "ImportError"))) from error
            raise error


# --------------------------------------------------------------------------- factory


_EXECUTOR_FORMS = f"{EXECUTOR_NAMES.expected.replace(' or ', ', ')} or an Executor"


def _is_executor(executor: Any) -> bool:
    # Not isinstance(executor, Executor): on Python < 3.12 that evaluates every protocol
    # attribute, and RayExecutor.n_workers would start Ray.
    return not isinstance(executor, str) and callable(
        getattr(type(executor), "map_unordered", None))


def get_executor(
    executor: str | Executor = "local", *, n_jobs: int | None = None,
    address: str | None = None, func: str = "get_executor",
) -> Executor:
    """Return the executor given as a name or as an object: the one place both are read.

    Parameters
    ----------
    executor : {"local", "ray"} or Executor, default="local"
        ``"local"``: inline when ``n_jobs`` is 1/None, else local worker processes.
        ``"ray"``: a Ray cluster at ``address``, or a local Ray instance (with ``n_jobs``
        CPUs if given). An object with a ``map_unordered`` method is returned as is.
    n_jobs : int, optional
        Local: number of worker processes (``-1`` = all CPUs). Ray: CPUs of a local
        instance started here (ignored when connecting to a cluster). Only with a name:
        an executor object carries its own workers.
    address : str, optional
        Ray cluster address; only with ``executor="ray"``.
    func : str, default="get_executor"
        The function whose parameters these are, as errors name it (``audit_model``,
        ``ReferencePool``, ...).

    Returns
    -------
    Executor
        An object with ``map_unordered(fn, tasks, *, shared=None)``.

    Raises
    ------
    ValueError
        An unknown name, ``address`` with ``"local"``, or ``n_jobs`` / ``address`` with an
        executor object (they would be silently ignored).
    ImportError
        With ``executor="ray"`` when Ray is not installed (``pip install
        'privaudit[distributed]'``).

    Examples
    --------
    >>> from privaudit.training import LocalExecutor, get_executor
    >>> get_executor("local", n_jobs=2)
    LocalExecutor(n_jobs=2)
    >>> ex = LocalExecutor(n_jobs=1)
    >>> get_executor(ex) is ex
    True
    """
    if _is_executor(executor):
        for name, value in (("n_jobs", n_jobs), ("address", address)):
            if value is not None:
                raise param_error(name, func, "None when 'executor' is an Executor object "
                                  f"(set it on {type(executor).__name__} instead)", value)
        return executor
    if not isinstance(executor, str):
        raise param_error("executor", func, _EXECUTOR_FORMS, executor, error=TypeError)
    EXECUTOR_NAMES.check(executor, param="executor", func=func, alternative="an Executor")
    if executor not in REMOTE_EXECUTORS and address is not None:
        raise param_error("address", func, f"None with executor={executor!r}", address)
    if executor == "ray":
        _import_ray()  # fail now, not at the first task, when Ray is missing
        n = None if n_jobs is None else _check_n_jobs(n_jobs, func)
        return RayExecutor(address, num_cpus=n)
    return LocalExecutor(_check_n_jobs(n_jobs, func))
