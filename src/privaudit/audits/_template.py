"""The audit template: every audit kind is a small class that one driver runs.

A kind declares (scikit-learn's estimator pattern, applied to audits):

- ``Settings``: a frozen :class:`AuditSettings` dataclass whose constraints are declared
  once (``CONSTRAINTS``, the ``validate_params`` way: types, intervals, options) and checked
  before any work; ``NOT_IN_KEY`` names the fields that cannot change a result;
- the shared :class:`RunOptions` (``random_state``, ``executor``, ``n_jobs``, ``address``,
  ``cache_dir``, ``results_dir``, ``progress``, ``dataset``), checked and resolved once,
  here, for every kind;
- its baseline and enrichers, the attacks it plans (:meth:`AuditKind.plan`, from the
  attacks' tags: one :class:`Job` per result) and the work of one job
  (:meth:`AuditKind.run_job`).

:func:`drive` owns the rest, the same way for every kind: run key (a digest of the kind's
identity, its settings minus ``NOT_IN_KEY``, the seed and the dataset) -> reuse of a saved
result -> run -> finish (provenance, baseline, enrichers, atomic save) -> the typed
:class:`~privaudit.report.AuditReport`. The ``audit_*`` functions are keyword wrappers that
build the settings and call :func:`drive`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from privaudit._validation import (
    BOOL,
    CALLABLE,
    N_JOBS,
    NONE,
    RANDOM_STATE,
    STR,
    TypeRule,
    check_declared,
    check_directory,
    param_error,
)
from privaudit.audits._baselines import Baseline, RandomGuessBaseline
from privaudit.audits._run import AuditRun, Enricher

__all__ = ["AuditKind", "AuditSettings", "Job", "RunOptions", "SharedPassKind", "drive"]


@dataclass(frozen=True)
class AuditSettings:
    """The base of every audit kind's settings: fields checked against declared rules.

    A subclass is a frozen dataclass; ``CONSTRAINTS`` maps each field to the rules it may
    follow (any one: ``[NONE, RealRule(0, 1)]`` is "None or a real number in (0, 1)");
    a field without rules is refused when the class is checked, so no setting goes
    unchecked. ``NOT_IN_KEY`` lists the fields that cannot change a result (how much to
    print, where to save): they stay out of the run key, so changing them reuses the saved
    results.
    """

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {}
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset()

    def check(self, func: str) -> None:
        """Refuse, naming the parameter of ``func``, a value no declared rule accepts."""
        for f in dataclasses.fields(self):
            rules = self.CONSTRAINTS.get(f.name)
            if rules is None:
                raise TypeError(f"{type(self).__name__}.{f.name} declares no constraint "
                                "(add it to CONSTRAINTS)")
            check_declared(getattr(self, f.name), rules, param=f.name, func=func)

    def key_items(self) -> list[tuple[str, Any]]:
        """``(field, value)`` of every field that can change a result, in field order.

        Values are given by :meth:`key_value` (override it for an object whose identity
        is not its ``repr``: a recipe's fingerprint).
        """
        return [(f.name, self.key_value(f.name, getattr(self, f.name)))
                for f in dataclasses.fields(self) if f.name not in self.NOT_IN_KEY]

    def key_value(self, name: str, value: Any) -> Any:
        """What of ``value`` enters the run key.

        Itself when it digests stably, else its ``repr`` (dicts sorted by key).
        """
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, Mapping):
            return repr(sorted((str(k), repr(v)) for k, v in value.items()))
        if isinstance(value, (tuple, list)):
            return repr(list(value))
        return repr(value)


EXECUTOR = [STR, TypeRule((object,), "an executor object")]
DIRECTORY = [NONE, TypeRule((str, Path), "a path")]


@dataclass(frozen=True)
class RunOptions:
    """How an audit runs, shared by every kind: checked and resolved once, in one place.

    Parameters
    ----------
    random_state : int, default=0
        Seeds every draw of the audit: same seed, same numbers, whatever ``n_jobs``.
    executor : {"local", "ray"} or Executor, default="local"
        Where models train (:func:`privaudit.training.get_executor`).
    n_jobs, address : optional
        With an executor name only: worker processes (``-1``: every CPU), Ray's address.
    cache_dir : path, optional
        On-disk cache of trained models (an interrupted audit resumes).
    results_dir : path, optional
        Each finished result is saved there and reused by a rerun of the same audit.
    progress : None, bool, callable(str) or Progress
        Where progress goes: ``True`` draws bars (HTML in a notebook, rich on a terminal,
        log lines elsewhere); ``None``/``False`` nothing; a callable receives the lines.
    dataset : str, default=""
        The dataset's name, stamped on the results.

    Only ``random_state`` and ``dataset`` enter the run key: the rest cannot change a
    number (``n_jobs`` and the executor never do: every draw is seeded per task).
    """

    random_state: int = 0
    executor: Any = "local"
    n_jobs: int | None = None
    address: str | None = None
    cache_dir: str | Path | None = None
    results_dir: str | Path | None = None
    progress: Any = None
    dataset: str = ""
    _executor: Any = field(default=None, repr=False, compare=False)

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "random_state": [RANDOM_STATE], "executor": EXECUTOR, "n_jobs": [NONE, N_JOBS],
        "address": [NONE, STR], "cache_dir": DIRECTORY, "results_dir": DIRECTORY,
        "progress": [NONE, BOOL, CALLABLE], "dataset": [STR],
    }

    @classmethod
    def checked(cls, func: str, **values: Any) -> RunOptions:
        """The options of ``func``, every value checked and the executor resolved.

        A bad value is refused naming the parameter, before any work: an unknown
        executor name fails here, not after the first results.
        """
        from privaudit.training import get_executor

        options = cls(**values)
        for name, rules in cls.CONSTRAINTS.items():
            check_declared(getattr(options, name), rules, param=name, func=func)
        for name in ("cache_dir", "results_dir"):
            if getattr(options, name) is not None:
                check_directory(getattr(options, name), param=name, func=func)
        executor = get_executor(options.executor, n_jobs=options.n_jobs,
                                address=options.address, func=func)
        return dataclasses.replace(options, _executor=executor)

    @property
    def resolved_executor(self) -> Any:
        """The executor object (resolved by :meth:`checked`)."""
        if self._executor is None:
            raise RuntimeError("RunOptions.resolved_executor: build the options with "
                               "RunOptions.checked(func, ...)")
        return self._executor

    def store(self) -> Any:
        """The :class:`~privaudit.results.ResultsStore` of ``results_dir`` (or None)."""
        if self.results_dir is None:
            return None
        from privaudit.results import ResultsStore

        return ResultsStore(self.results_dir)


@dataclass(frozen=True)
class Job:
    """One planned result: the attack's registry name, its parameters, its key parts.

    ``key_parts`` holds what distinguishes this result's key beyond the audit's (the
    attack's parameters...); ``order`` is its place in the result list (the request's
    order), while jobs run in the order :meth:`AuditKind.plan` gives them.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    key_parts: tuple[Any, ...] = ()
    order: int = 0


class AuditKind(ABC):
    """One kind of audit, run by :func:`drive`: declare, plan, do one job.

    Subclasses set ``kind`` (stamped as ``result.audit.kind``), ``func`` (the ``audit_*``
    function that errors name) and ``Settings``, and implement :meth:`target_name`,
    :meth:`identity`, :meth:`plan` and :meth:`run_job`. The defaults: a random-guess
    baseline, no enrichers, results reused when their labels are the audited ones.
    """

    kind: ClassVar[str]
    func: ClassVar[str]
    Settings: ClassVar[type[AuditSettings]]
    #: What the progress bar counts ("Attacks on <target>").
    description: ClassVar[str] = "Attacks"
    #: Whether the jobs share one pass of work (:class:`SharedPassKind`): :func:`drive`
    #: then computes every missing job in one :meth:`run_jobs` call.
    shared_pass: ClassVar[bool] = False
    #: Prefix of the run keys (``AuditRun(key_scheme=...)``): results saved under an
    #: earlier release's keys are recomputed with one warning. ``None`` keeps the earlier
    #: keys themselves (the model kind, whose saved results stay reusable).
    key_scheme: ClassVar[str | None] = "t1"

    def __init__(self, settings: AuditSettings, options: RunOptions) -> None:
        if not isinstance(settings, self.Settings):
            raise TypeError(f"{type(self).__name__} takes {self.Settings.__name__}, "
                            f"not {type(settings).__name__}")
        from privaudit._progress import as_progress

        settings.check(self.func)
        self.settings, self.options = settings, options
        #: One progress object for the kind's own messages and its run's.
        self.progress = as_progress(options.progress, func=self.func)

    @abstractmethod
    def target_name(self) -> str:
        """The audited artefact's name: results are filed under it."""

    @abstractmethod
    def identity(self) -> tuple[Any, ...]:
        """What identifies the audited artefact and data (fingerprints, digests)."""

    @abstractmethod
    def plan(self) -> list[Job]:
        """The jobs, in the order they run.

        Each job's ``order`` is its place in the list of results returned.
        """

    @abstractmethod
    def run_job(self, job: Job, run: AuditRun) -> Any:
        """Compute the result of ``job`` (not yet finished: the driver finishes it)."""

    def run_jobs(self, jobs: list[Job], run: AuditRun) -> dict[str, Any]:
        """The results of ``jobs``, by job name (one :meth:`run_job` each by default)."""
        return {job.name: self.run_job(job, run) for job in jobs}

    @property
    @abstractmethod
    def labels(self) -> Any:
        """The audited records' labels (a saved result is reused only with these)."""

    def baseline(self) -> Baseline | None:
        return RandomGuessBaseline()

    def enrichers(self) -> list[Enricher]:
        return []

    def answers(self) -> Callable[[], Any] | None:
        """For a target without readable parameters: its answers identify it."""
        return None

    def consistent(self, job: Job) -> Any:
        """What a saved result of ``job`` must agree with: the labels, or a predicate."""
        return self.labels

    def finished(self, results: list[Any], run: AuditRun) -> list[Any]:
        """Called once every job is done (e.g. enrich results reused from the store)."""
        return results

    def report(self, results: list[Any]) -> Any:
        """The audit's :class:`~privaudit.report.AuditReport`."""
        from privaudit.report import AuditReport

        return AuditReport(results, kind=self.kind, func=self.func)

    def run_identity(self) -> tuple[Any, ...]:
        """What the run key digests.

        The kind, :meth:`identity`, the settings' key items
        (:meth:`AuditSettings.key_items`), the dataset and the seed. A kind whose saved
        results predate the template may keep its old key here, so they are still reused
        (the model kind does).
        """
        o = self.options
        return (self.kind, *self.identity(), self.settings.key_items(), o.dataset,
                o.random_state)

    def make_run(self) -> AuditRun:
        """The :class:`AuditRun` keyed on :meth:`run_identity`, with the run options."""
        o = self.options
        return AuditRun(func=self.func, target_name=self.target_name(),
                        identity=self.run_identity(), random_state=o.random_state,
                        store=o.store(), baseline=self.baseline(),
                        enrichers=self.enrichers(), progress=self.progress,
                        dataset=o.dataset, answers=self.answers(), kind=self.kind,
                        key_scheme=self.key_scheme)


class SharedPassKind(AuditKind):
    """An audit kind whose jobs share one pass of work (one scoring pass per LLM).

    :meth:`run_jobs` computes every missing job together; :func:`drive` reuses what the
    store holds first, so the pass is skipped when nothing is missing and otherwise
    computes only the missing jobs.
    """

    shared_pass = True

    @abstractmethod
    def run_jobs(self, jobs: list[Job], run: AuditRun) -> dict[str, Any]:
        """The results of ``jobs`` (not yet finished), by job name, from one pass."""

    def run_job(self, job: Job, run: AuditRun) -> Any:
        return self.run_jobs([job], run)[job.name]


def drive(audit: AuditKind) -> Any:
    """Run ``audit``: plan -> reuse or run each job -> finish -> its report.

    The one loop of every audit kind. Saved results of the same audit are reused first (a
    damaged one recomputed, with a warning) and enriched again (an enricher adds only what
    they lack, saved when it changed them); every new result is finished (provenance,
    baseline, enrichers, atomic save) as soon as it is computed, so a crash loses only the
    result being computed and a rerun resumes. A :class:`SharedPassKind` computes its
    missing jobs in one pass, then finishes each.
    """
    jobs = audit.plan()
    _check_jobs(jobs, audit.func)
    run = audit.make_run()
    done: dict[str, Any] = {}
    with run.tracking(len(jobs), audit.description):
        for job in jobs:
            saved = run.reuse(job.name, job.key_parts, audit.consistent(job))
            if saved is not None:
                done[job.name] = saved
        reused = set(done)
        missing = [job for job in jobs if job.name not in reused]
        if audit.shared_pass and missing:
            computed = audit.run_jobs(missing, run)
            for job in missing:
                done[job.name] = run.finish(job.name, job.key_parts, computed[job.name])
        else:
            for job in missing:
                done[job.name] = run.finish(job.name, job.key_parts, audit.run_job(job, run))
    for job in jobs:
        if job.name in reused:
            run.enrich(job.name, done[job.name], save=True)
    ordered = [done[j.name] for j in sorted(jobs, key=lambda j: j.order)]
    return audit.report(audit.finished(ordered, run))


def _check_jobs(jobs: list[Job], func: str) -> None:
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise param_error("attacks", func, "names without repetition", names)
