"""The demo's parts in worker processes, two at a time on two cores.

Each part of ``privaudit demo`` keeps one core busy most of the time (its models are
small, trained with one thread), and the parts are independent (each seeds itself from
``random_state``), so two worker processes running them side by side halve the audits'
wall time on two cores, for the same CPU time and the same numbers. A worker sends its
part's messages, counted steps and warnings back through a queue; this process shows them
(messages prefixed by the part's name, steps as its own bars) and raises the warnings
again, so that the command's one-line format applies to them; the command's warning
filters and log filters (third-party notices it silences) are set in each worker too.

Workers are started with ``spawn`` (not ``fork``): nothing of this process (threads of
the progress display, an imported torch) is copied into them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import queue as queue_module
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from privaudit._progress import Progress, ProgressTask, as_progress
from privaudit._warning_filters import install_warning_filters, portable_warning_filters

__all__ = ["run_parts_in_workers"]

#: The worker's queue to this process (set by :func:`_start_worker` in each worker).
_EVENTS: Any = None


class _QueueProgress(Progress):
    """A worker's progress: every message, step and count sent to the main process."""

    def __init__(self, events: Any, kind: str) -> None:
        self.events, self.kind = events, kind
        self._forwarded: set[int] = set()

    def message(self, text: str) -> None:
        self.events.put(("message", self.kind, text))

    def _forward(self, task: ProgressTask) -> bool:
        """Announce ``task`` once it is shown; whether it is."""
        if task.shown and id(task) not in self._forwarded:
            self._forwarded.add(id(task))
            self.events.put(("start", self.kind, id(task), task.description, task.total))
        return task.shown

    def _started(self, task: ProgressTask) -> None:
        self._forward(task)

    def _advanced(self, task: ProgressTask) -> None:
        if self._forward(task):
            self.events.put(("advance", self.kind, id(task), task.completed))

    def _closed(self, task: ProgressTask) -> None:
        if self._forward(task):
            self._forwarded.discard(id(task))
            self.events.put(("close", self.kind, id(task), task.completed))


#: The environment variables that size the thread pools of the numerical libraries (BLAS,
#: OpenMP: numpy and scikit-learn's products, torch), read when a library loads.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _threads_for_workers(n_threads: int) -> Iterator[None]:
    """Workers spawned in the block start with ``n_threads`` threads per library.

    Two workers on two cores each keep one core busy: a BLAS product split over two
    threads there waits for a core the other worker holds (measured on a loaded machine:
    the overfit TV16 MLP ran many times slower than alone). A variable the user set is
    kept; the others are restored on exit.
    """
    added = [name for name in _THREAD_VARIABLES if name not in os.environ]
    os.environ.update({name: str(n_threads) for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _start_worker(events: Any, warning_filters: list[Any],
                  log_filters: list[tuple[str, list[Any]]], n_threads: int) -> None:
    """Set up a worker: its queue, this process's warning and log filters, its threads."""
    from threadpoolctl import threadpool_limits

    global _EVENTS
    _EVENTS = events
    threadpool_limits(n_threads)  # the libraries loaded before the variables were read
    install_warning_filters(warning_filters)  # each category by name: nothing imported
    for name, found in log_filters:
        for log_filter in found:
            logging.getLogger(name).addFilter(log_filter)


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # anything a worker cannot receive stays here
        return False
    return True


def _filters_here() -> tuple[list[Any], list[tuple[str, list[Any]]]]:
    """The warning filters and the filters on the loggers of this process, for workers.

    A command silences third-party notices with them (a warning by its message and
    module, a library's log record on its logger); a spawned worker starts without them.
    """
    warning_filters = portable_warning_filters()
    log_filters = []
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        found = [f for f in getattr(logger, "filters", []) if _picklable(f)]
        if found:
            log_filters.append((name, found))
    return warning_filters, log_filters


def _run_part(kind: str, part: Callable[..., list[Any]], random_state: int,
              n_reference_models: int, n_jobs: int) -> list[Any]:
    """Run one demo part in this worker; its warnings go to the main process."""
    events = _EVENTS

    def send(message: Any, category: Any, filename: str, lineno: int,
             file: Any = None, line: Any = None) -> None:
        events.put(("warning", kind, str(message), category, filename, lineno))

    with warnings.catch_warnings():
        warnings.showwarning = send
        return part(random_state, n_reference_models, n_jobs, _QueueProgress(events, kind))


class _Display:
    """The main process's side: worker events shown on ``progress``."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[tuple[str, int], ProgressTask] = {}

    def show(self, event: tuple[Any, ...]) -> None:
        what, kind, *rest = event
        if what == "message":
            self.progress.message(f"{kind}: {rest[0]}")
        elif what == "warning":
            text, category, filename, lineno = rest
            warnings.warn_explicit(text, category, filename, lineno)
        elif what == "start":
            key, (description, total) = (kind, rest[0]), rest[1:]
            self.tasks[key] = self.progress.task(f"{kind}: {description}", total)
        else:
            task = self.tasks.get((kind, rest[0]))
            if task is not None:
                task.advance(rest[1] - task.completed)
                if what == "close":
                    task.close()
                    del self.tasks[(kind, rest[0])]

    def close(self) -> None:
        for task in self.tasks.values():
            task.close()


def run_parts_in_workers(parts: dict[str, Callable[..., list[Any]]], *, random_state: int,
                         n_reference_models: int, n_jobs: int, n_workers: int,
                         progress: Any = None, longest_first: Sequence[str] = ()
                         ) -> list[Any]:
    """Run the demo ``parts`` in ``n_workers`` processes; their results in ``parts``' order.

    ``parts`` maps each kind to its function ``(random_state, n_reference_models, n_jobs,
    progress) -> results``, defined at the top level of a module (a worker imports it by
    name). Parts are handed out in the order of ``longest_first`` (then the others), each
    to the first free worker, so that the longest do not end up last on one core. A part
    that fails raises its error here once the parts already running have finished.
    """
    kinds = list(parts)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    order = [k for k in longest_first if k in kinds] + [
        k for k in kinds if k not in longest_first]
    display = _Display(as_progress(progress, func="run_demo_parts"))
    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    n_threads = max(1, (os.cpu_count() or 1) // n_workers)
    try:
        with _threads_for_workers(n_threads), ProcessPoolExecutor(
                max_workers=n_workers, mp_context=context, initializer=_start_worker,
                initargs=(events, *_filters_here(), n_threads)) as pool:
            futures = {kind: pool.submit(_run_part, kind, parts[kind], random_state,
                                         n_reference_models, n_jobs) for kind in order}
            pending = set(futures.values())
            while pending:
                _drain(events, display, timeout=0.2)
                pending = {f for f in pending if not f.done()}
        _drain(events, display, timeout=0.0)  # the workers have exited: all sent
        return [r for kind in kinds for r in futures[kind].result()]
    finally:
        display.close()
        events.close()


def _drain(events: Any, display: _Display, timeout: float) -> None:
    """Show every event waiting on the queue (waiting ``timeout`` s for the first)."""
    try:
        event = events.get(timeout=timeout) if timeout else events.get_nowait()
        while True:
            display.show(event)
            event = events.get_nowait()
    except queue_module.Empty:
        return
