"""``audit_dp_training``: does a DP training procedure keep its epsilon claim, in one run.

Canaries are made once, each included in a run's training set independently with
probability 1/2 (drawn from ``random_state``); the user's training function (or the
built-in :class:`~privaudit.dp.OpacusRecipe`) trains on the data plus the included
canaries; the audit checks the canary ids came back, scores every canary without being
told which were included (:func:`~privaudit.dp.score_canaries`), and only then reveals
the inclusion to compute, per bound method, the epsilon lower bound of Steinke, Nasr and
Jagielski (2023) or Mahloujifar, Melis and Chaudhuri (2024)
(:func:`~privaudit.metrics.canary_epsilon_lower_bound`). Several runs train through the
executor (local processes or Ray), each saved as it finishes so that an interrupted audit
resumes, and add Nasr et al.'s (2023) Gaussian-DP estimate over the runs. The one result
(:class:`~privaudit.results.DPAuditResult`) goes through the shared run: key, reuse,
atomic save.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import (
    BOOL,
    CALLABLE,
    ChoiceRule,
    IntRule,
    PredicateRule,
    RealRule,
    param_error,
)
from privaudit.audits._run import AuditRun
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive
from privaudit.dp import CANARY_KINDS

__all__ = ["BOUND_METHODS", "DPTrainingAudit", "DPTrainingSettings", "audit_dp_training"]

_FUNC = "audit_dp_training"
#: The bound methods of :func:`~privaudit.metrics.canary_epsilon_lower_bound`.
BOUND_METHODS: tuple[str, ...] = ("steinke", "fdp", "clopper-pearson")


def _positive_claims(value: Any) -> bool:
    """A non-empty mapping accountant name -> epsilon > 0 (finite)."""
    return (isinstance(value, Mapping) and len(value) > 0
            and all(isinstance(k, str) for k in value)
            and all(RealRule(0.0, math.inf).ok(v) for v in value.values()))


def _method_names(value: Any) -> bool:
    """A non-empty sequence of distinct names of :data:`BOUND_METHODS`."""
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        return False
    return all(m in BOUND_METHODS for m in value) and len(set(value)) == len(value)


@dataclass(frozen=True)
class DPTrainingSettings(AuditSettings):
    """What a DP-training audit checks, and how (every field declared in CONSTRAINTS).

    ``claimed_epsilon`` is a number or a mapping accountant -> epsilon (the verdict reads
    the smallest); ``delta`` in [0, 1) (0 only with the ``steinke`` and
    ``clopper-pearson`` methods); ``canaries`` a kind of :func:`~privaudit.dp.make_canaries`;
    ``n_canaries`` at least 2; ``methods`` distinct names of :data:`BOUND_METHODS`;
    ``threshold`` ``"bonferroni"``, ``"split"`` or a pre-registered score; ``confidence``
    in (0, 1); ``n_runs`` at least 1.
    """

    claimed_epsilon: Any
    delta: float
    canaries: str = "flipped-label"
    n_canaries: int = 1000
    methods: tuple[str, ...] = ("steinke", "fdp")
    threshold: Any = "bonferroni"
    two_sided: bool = True
    confidence: float = 0.95
    n_runs: int = 1

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "claimed_epsilon": [RealRule(0.0, math.inf), PredicateRule(
            _positive_claims, "a non-empty dict accountant name -> epsilon > 0")],
        "delta": [RealRule(0.0, 1.0, closed="left")],
        "canaries": [ChoiceRule(CANARY_KINDS)],
        "n_canaries": [IntRule(low=2)],
        "methods": [PredicateRule(_method_names, "a non-empty sequence of distinct names "
                                  f"among {list(BOUND_METHODS)}")],
        "threshold": [ChoiceRule(("bonferroni", "split")), RealRule()],
        "two_sided": [BOOL],
        "confidence": [RealRule(0.0, 1.0)],
        "n_runs": [IntRule(low=1)],
    }

    def check(self, func: str) -> None:
        """The declared rules, then the one rule across fields: ``fdp`` needs delta > 0."""
        super().check(func)
        if self.delta == 0 and "fdp" in self.methods:
            raise param_error("delta", func, "a real number in (0, 1) with the 'fdp' method "
                              "(Mahloujifar et al.'s bound needs delta > 0; 'steinke' "
                              "covers pure DP)", self.delta)

    @property
    def claims(self) -> dict[str, float]:
        """The claimed epsilon per accountant (``{"claimed": eps}`` for a number)."""
        if isinstance(self.claimed_epsilon, Mapping):
            return {str(k): float(v) for k, v in self.claimed_epsilon.items()}
        return {"claimed": float(self.claimed_epsilon)}


def _check_dataset(dataset: Any) -> tuple[NDArray[np.float64], NDArray[Any]]:
    """``dataset`` as ``(features (n, d) float, labels (n,))``, or the error naming it."""
    if not isinstance(dataset, (tuple, list)) or len(dataset) != 2:
        raise param_error("dataset", _FUNC, "a pair (features, labels)",
                          f"<{type(dataset).__name__}>", error=TypeError)
    X = np.asarray(dataset[0].to_numpy() if hasattr(dataset[0], "to_numpy") else dataset[0])
    y = np.asarray(dataset[1].to_numpy() if hasattr(dataset[1], "to_numpy") else dataset[1])
    if X.ndim != 2 or X.shape[0] < 2 or X.dtype.kind not in "biuf" or y.shape != (len(X),):
        raise param_error("dataset", _FUNC, "a pair (features, labels): a numeric (n, d) "
                          "array with n >= 2 and one label per record",
                          f"<features {X.shape} {X.dtype}, labels {y.shape}>")
    if not np.isfinite(X).all():
        raise param_error("dataset", _FUNC, "finite features", "<NaN or infinite values>")
    return X.astype(np.float64), y


def _check_classes(y: NDArray[Any], kind: str) -> None:
    """Input-space canaries need two classes, and a record to copy beside one per class.

    Checked before any training, naming ``dataset``: the canaries' labels are drawn
    among the dataset's classes (a flipped label differs from the record's own), and
    each class keeps a training record (the model must know a canary's label).
    """
    n_classes = np.unique(y).size
    if n_classes < 2:
        raise param_error("dataset", _FUNC, f"labels of at least 2 classes for {kind!r} "
                          "canaries (a canary's label is drawn among the dataset's "
                          "classes)", "<labels that take one value>")
    if len(y) <= n_classes:
        raise param_error("dataset", _FUNC, f"more records than classes ({n_classes}) for "
                          f"{kind!r} canaries (one record of every class stays in "
                          "training, another is held out for the canaries to copy)",
                          f"<{len(y)} records>")


def _seed(random_state: int, stream: int, index: int = 0) -> int:
    """An independent seed per (stream, run): the same whatever the executor or n_jobs."""
    return int(np.random.SeedSequence([random_state, stream, index]).generate_state(1)[0])


# Seed streams (never reordered: saved results depend on them).
_CANARIES, _INCLUSION, _TRAINING, _SPLIT, _GDP, _HOLDOUT = range(6)


def train_and_score(index: int, included: NDArray[np.bool_], seed: int, *, train: Any,
                    dataset: tuple[Any, Any], canaries: Any) -> dict[str, Any]:
    """One training run: train on the included canaries, check them, score them all.

    Runs in a worker process for multi-run audits. The scoring
    (:func:`~privaudit.dp.score_canaries`) is given the trained model and every canary,
    never ``included``.
    """
    from privaudit.dp import check_training_run, score_canaries

    given = canaries.subset(included)
    run = train(dataset, given, random_state=seed)
    check_training_run(run, given, func=train)
    scores = np.asarray(score_canaries(run, canaries), dtype=np.float64)
    return {"index": index, "scores": scores, "meta": {
        "accountant_epsilon": {str(k): float(v) for k, v in
                               (run.claimed_epsilon or {}).items()},
        "noise_multiplier": None if run.noise_multiplier is None
        else float(run.noise_multiplier),
        "n_steps": None if run.n_steps is None else int(run.n_steps),
        "train_seconds": float(run.train_seconds)}}


class DPTrainingAudit(AuditKind):
    """The DP-training audit kind: one result, the bounds of every method and run."""

    kind = "dp"
    func = _FUNC
    Settings = DPTrainingSettings
    description = "DP-training audits"

    def __init__(self, train: Any, dataset: Any, *, name: str | None,
                 settings: DPTrainingSettings, options: RunOptions) -> None:
        super().__init__(settings, options)
        from privaudit._validation import check_declared

        check_declared(train, [CALLABLE], param="train", func=_FUNC)
        if name is not None and not isinstance(name, str):
            raise param_error("name", _FUNC, "None or a str", name, error=TypeError)
        self.train = train
        self.X, self.y = _check_dataset(dataset)
        if settings.canaries != "dirac-gradient":
            _check_classes(self.y, settings.canaries)
        self.name = name or _train_name(train)
        self._canaries: Any = None

    @property
    def labels(self) -> None:
        """No labels before the audit: the inclusion is drawn, and kept secret, by it."""
        return None

    def consistent(self, job: Job) -> Any:
        s = self.settings
        return lambda saved: (getattr(saved, "RESULT_TYPE", "") == "dp"
                              and saved.n_canaries == s.n_canaries
                              and saved.n_runs == s.n_runs)

    def baseline(self) -> None:
        return None  # each bound is itself a test against chance (its confidence)

    def target_name(self) -> str:
        return self.name

    def identity(self) -> tuple[Any, ...]:
        from privaudit.training import data_fingerprint

        return (self.name, _train_fingerprint(self.train), data_fingerprint(self.X, self.y))

    def plan(self) -> list[Job]:
        return [Job(f"{self.settings.canaries}-canaries", {}, (), 0)]

    # ------------------------------------------------------------------ the work
    def canaries(self) -> tuple[Any, tuple[Any, Any]]:
        """The canaries (the same in every run) and the training data they leave."""
        from privaudit.dp import make_canaries

        s, o = self.settings, self.options
        if s.canaries == "dirac-gradient":
            dataset = (self.X, self.y)
            return make_canaries(s.canaries, s.n_canaries,
                                 n_parameters=_n_parameters(self.train, dataset),
                                 parameter_indices=_dirac_coordinates(self.train, dataset),
                                 random_state=_seed(o.random_state, _CANARIES)), dataset
        held, kept = self._holdout()
        # The labels are drawn among the dataset's classes, not the held-out sample's:
        # a small or imbalanced sample misses classes (one class left: no flipped label).
        canaries = make_canaries(s.canaries, s.n_canaries, features=self.X[held],
                                 labels=self.y[held], classes=np.unique(self.y),
                                 random_state=_seed(o.random_state, _CANARIES))
        return canaries, (self.X[kept], self.y[kept])

    def _holdout(self) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """The records input-space canaries copy (held out of training) and those kept.

        Held out, a copied record leaves its canary the only record of its kind (a
        flipped label beside the true one would mask it). The last record of each class
        in the random order is never held out, so that training sees every class a
        canary label may take; on a large dataset these sit past the held-out part, so
        the draw is the plain first ``n_held`` of the order.
        """
        rng = np.random.default_rng(_seed(self.options.random_state, _HOLDOUT))
        order = rng.permutation(len(self.y))
        _, last = np.unique(self.y[order[::-1]], return_index=True)
        reserved = np.zeros(len(order), dtype=bool)
        reserved[len(order) - 1 - last] = True
        candidates = order[~reserved]
        n_held = min(self.settings.n_canaries, len(self.y) // 2, candidates.size)
        held = candidates[:n_held]
        return held, np.setdiff1d(order, held)

    def inclusions(self) -> NDArray[np.bool_]:
        """Every run's inclusion, drawn up front (row ``i``: run ``i``)."""
        from privaudit.dp import draw_inclusion

        s, o = self.settings, self.options
        return np.stack([draw_inclusion(s.n_canaries,
                                        random_state=_seed(o.random_state, _INCLUSION, i))
                         for i in range(s.n_runs)])

    def run_job(self, job: Job, run: AuditRun) -> Any:
        canaries, data = self.canaries()
        included = self.inclusions()
        runs = self._train_runs(canaries, data, included, run)
        scores = np.stack([r["scores"] for r in runs])
        return self._result(canaries, scores, included, [r["meta"] for r in runs], job)

    def _train_runs(self, canaries: Any, data: tuple[Any, Any], included: NDArray[np.bool_],
                    run: AuditRun) -> list[dict[str, Any]]:
        """Every run's scores, those saved by an interrupted audit read back."""
        s, o = self.settings, self.options
        saved = _RunFiles(self._runs_folder(run, job_key=run.base_key), s.n_canaries)
        done = {i: r for i in range(s.n_runs) if (r := saved.read(i)) is not None}
        tasks = [(i, included[i], _seed(o.random_state, _TRAINING, i))
                 for i in range(s.n_runs) if i not in done]
        shared = {"train": self.train, "dataset": data, "canaries": canaries}
        if done:
            run.say(f"{self.name}: {len(done)} of {s.n_runs} training runs read back")
        with self.progress.task(f"Training {self.name} with canaries",
                                total=len(tasks)) as step:
            if s.n_runs == 1 and tasks:
                outputs: Any = [(0, train_and_score(*tasks[0], **shared))]
            else:
                outputs = o.resolved_executor.map_unordered(train_and_score, tasks,
                                                            shared=shared)
            for _, out in outputs:
                saved.write(out)
                done[out["index"]] = out
                step.advance()
        return [done[i] for i in range(s.n_runs)]

    def _runs_folder(self, run: AuditRun, job_key: str) -> Path | None:
        """Where finished runs are saved: the cache, else beside the results."""
        o = self.options
        root = o.cache_dir if o.cache_dir is not None else (
            None if o.results_dir is None else Path(o.results_dir) / ".dp-runs")
        return None if root is None else Path(root) / f"dp-runs-{job_key}"

    def _result(self, canaries: Any, scores: NDArray[np.float64],
                included: NDArray[np.bool_], metas: list[dict[str, Any]], job: Job) -> Any:
        """Reveal the inclusion: the bounds per run and method, and the GDP estimate."""
        from privaudit.results import DPAuditResult

        s = self.settings
        level = 1.0 - (1.0 - s.confidence) / (len(s.methods) * s.n_runs)
        bounds = [self._bounds(scores[i], included[i], level, i) for i in range(s.n_runs)]
        gdp = self._gdp(scores, included) if s.n_runs > 1 else None
        return DPAuditResult(
            canary_ids=canaries.ids, scores=scores, included=included,
            claimed_epsilon=s.claims, delta=s.delta, bounds=bounds,
            confidence=s.confidence, gdp=gdp, runs=metas, canaries=s.canaries,
            threshold=str(s.threshold), two_sided=bool(s.two_sided), attack=job.name,
            target=self.name, dataset=self.options.dataset,
            parameters={"n_canaries": s.n_canaries, "n_runs": s.n_runs,
                        "methods": list(s.methods)})

    def _bounds(self, scores: NDArray[np.float64], included: NDArray[np.bool_],
                level: float, i: int) -> dict[str, Any]:
        """Each method's bound of run ``i``; NaN, with a warning, if a score is not finite.

        A diverged training (NaN parameters) scores its canaries NaN: no guess can be
        read from them, and the result says so (verdict ``"undefined"``) rather than
        reading a bound of 0 as a claim upheld.
        """
        from privaudit.metrics import CanaryBound, canary_epsilon_lower_bound

        s = self.settings
        bad = int(np.sum(~np.isfinite(scores)))
        if bad:
            from privaudit._validation import warn_degenerate

            warn_degenerate(f"{_FUNC}: run {i + 1} of {self.name} scored {bad} of "
                            f"{scores.size} canaries NaN or infinite (did its training "
                            "diverge?); its bounds are NaN.", stacklevel=4)
            nan = math.nan
            return {method: CanaryBound(nan, method, str(s.threshold), scores.size, 0, 0,
                                        0, 0, scores.size, nan, nan, level, s.delta)
                    for method in s.methods}
        return {method: canary_epsilon_lower_bound(
            scores[included], scores[~included], delta=s.delta, confidence=level,
            method=method, threshold=s.threshold, two_sided=s.two_sided,
            random_state=_seed(self.options.random_state, _SPLIT, i))
            for method in s.methods}

    def _gdp(self, scores: NDArray[np.float64], included: NDArray[np.bool_]) -> Any:
        """Nasr et al.'s estimate over the runs whose scores are all finite.

        A diverged run (NaN scores, already warned of and given NaN bounds by
        :meth:`_bounds`) says nothing about the others: the estimate reads the finite
        runs only, and is NaN, with a warning, when no run is finite.
        """
        from privaudit.metrics import GdpEstimate, gdp_epsilon_estimate

        s = self.settings
        finite = np.isfinite(scores).all(axis=1)
        if not finite.any():
            from privaudit._validation import warn_degenerate

            warn_degenerate(f"{_FUNC}: no run of {self.name} scored its canaries finite "
                            "(did the training diverge?); the Gaussian-DP estimate is NaN.",
                            stacklevel=4)
            nan = math.nan
            return GdpEstimate(nan, nan, nan, nan, nan, nan, nan, s.confidence, s.delta)
        scores, included = scores[finite], included[finite]
        threshold = s.threshold if isinstance(s.threshold, str) else float(s.threshold)
        return gdp_epsilon_estimate(scores[included], scores[~included], delta=s.delta,
                                    confidence=s.confidence, threshold=threshold,
                                    random_state=_seed(self.options.random_state, _GDP))


class _RunFiles:
    """One JSON file per finished training run (atomic), read back by a resumed audit."""

    def __init__(self, folder: Path | None, n_canaries: int) -> None:
        self.folder, self.n_canaries = folder, n_canaries

    def _path(self, index: int) -> Path:
        assert self.folder is not None
        return self.folder / f"run-{index:05d}.json"

    def read(self, index: int) -> dict[str, Any] | None:
        import json

        if self.folder is None or not self._path(index).is_file():
            return None
        try:
            doc = json.loads(self._path(index).read_text(encoding="utf-8"))
            scores = np.asarray(doc["scores"], dtype=np.float64)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged file: the run trains again
        if scores.shape != (self.n_canaries,) or doc.get("index") != index:
            return None
        return {"index": index, "scores": scores, "meta": doc.get("meta") or {}}

    def write(self, out: dict[str, Any]) -> None:
        if self.folder is None:
            return
        from privaudit.results import dump_json

        self.folder.mkdir(parents=True, exist_ok=True)
        dump_json({"index": out["index"], "scores": out["scores"].tolist(),
                   "meta": out["meta"]}, self._path(out["index"]), where="DP training run",
                  keep_non_finite=True)


def _train_name(train: Any) -> str:
    name = getattr(train, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(train, "__name__", None) or type(train).__name__)


def _train_fingerprint(train: Any) -> Any:
    """What identifies the training function: a recipe's fingerprint, else its code.

    A function is its qualified name and source; a callable object its class's name and
    source and its public state: attributes starting with ``_`` are caches
    (:class:`~privaudit.dp.OpacusRecipe` keeps the sigma it calibrated), which must not
    change the run key once the object has trained.
    """
    import inspect

    from privaudit._digest import qualname, state_digest

    fingerprint = getattr(train, "fingerprint", None)
    if callable(fingerprint):
        return fingerprint()
    code = train if inspect.isfunction(train) or inspect.isclass(train) else type(train)
    try:
        source = inspect.getsource(code)
    except (OSError, TypeError):
        source = ""  # built in, or defined where no source is kept (a notebook cell)
    state = {} if code is train else {k: v for k, v in vars(train).items()
                                      if not k.startswith("_")}
    return (qualname(code), state_digest(source), state_digest(state))


def _n_parameters(train: Any, dataset: tuple[Any, Any]) -> int:
    """The model's flat parameter count, which dirac-gradient canaries index."""
    count = getattr(train, "n_parameters", None)
    value = count(dataset) if callable(count) else count
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise param_error("train", _FUNC, "a training function with n_parameters(dataset) "
                          "(the model's flat parameter count) for 'dirac-gradient' canaries",
                          train)
    return int(value)


def _dirac_coordinates(train: Any, dataset: tuple[Any, Any]) -> NDArray[np.int64] | None:
    """The coordinates a training function reserves for Dirac canaries, if it has any.

    A canary on a coordinate the data also moves competes with the data's gradients as
    well as the noise: valid, but weaker (Steinke et al. 2023, Sec. 6). A training
    function with ``dirac_coordinates(dataset)`` (``OpacusRecipe(dirac_slots=k)``) names
    parameters the data never moves; the canaries are drawn among them when there are
    any.
    """
    reserved = getattr(train, "dirac_coordinates", None)
    if not callable(reserved):
        return None
    coordinates = np.asarray(reserved(dataset), dtype=np.int64)
    return coordinates if coordinates.size else None


def audit_dp_training(
    train: Any,
    *,
    dataset: tuple[Any, Any],
    claimed_epsilon: float | Mapping[str, float],
    delta: float,
    canaries: str = "flipped-label",
    n_canaries: int = 1000,
    methods: Sequence[str] = ("steinke", "fdp"),
    threshold: str | float = "bonferroni",
    two_sided: bool = True,
    confidence: float = 0.95,
    n_runs: int = 1,
    name: str | None = None,
    random_state: int = 0,
    executor: Any = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    cache_dir: Any = None,
    results_dir: Any = None,
    progress: Any = None,
    dataset_name: str = "",
) -> Any:
    """Check a DP training procedure's epsilon claim empirically, in one training run.

    Parameters
    ----------
    train : callable
        ``train(dataset, canaries, *, random_state) -> DPTrainingRun``: trains on
        ``dataset`` plus the (included) ``canaries`` and returns the model with the ids of
        the canaries it trained on, in the order given (checked). The built-in
        :class:`~privaudit.dp.OpacusRecipe` is one (``pip install 'privaudit[dp]'``).
    dataset : (features, labels)
        The training data (numeric features). Records that input-space canaries copy are
        held out of it (never the last record of a class); their labels are drawn among
        the dataset's classes, so input-space canaries need at least 2 classes and more
        records than classes.
    claimed_epsilon : float or dict
        The claim audited, or one per accountant (``{"rdp": 8.0, "prv": 7.6}``): the
        verdict reads the smallest (the strongest claim made). Must be > 0.
    delta : float
        The claim's delta, in [0, 1) (0, pure DP, only without ``"fdp"``).
    canaries : str, default="flipped-label"
        ``"flipped-label"``, ``"random-label"``, ``"out-of-distribution"`` (black-box,
        scored by loss) or ``"dirac-gradient"`` (white-box, the strongest: the training
        function needs ``n_parameters(dataset)``).
    n_canaries : int, default=1000
        At least 2; each included with probability 1/2.
    methods : sequence of str, default=("steinke", "fdp")
        Bound methods (:data:`BOUND_METHODS`).
    threshold : "bonferroni", "split" or float, default="bonferroni"
        How the guess threshold is chosen without invalidating the bound.
    two_sided : bool, default=True
        Also guess "out" for the lowest scores (Steinke et al.'s k-).
    confidence : float, default=0.95
        In (0, 1). Each of the ``len(methods) * n_runs`` bounds is computed at
        ``1 - (1 - confidence) / (len(methods) * n_runs)`` (Bonferroni): the verdict,
        which reads the largest, holds at ``confidence``.
    n_runs : int, default=1
        Training runs (fresh inclusion each, the same canaries); more than one trains
        through the executor and adds the Gaussian-DP estimate (Nasr et al. 2023).
    name : str, optional
        The audited procedure's name (default: the training function's).
    random_state, executor, n_jobs, address, cache_dir, results_dir, progress
        The run options every audit takes (:class:`~privaudit.audits.RunOptions`):
        finished runs are saved in ``cache_dir`` (else ``results_dir/.dp-runs``) and read
        back by a rerun; the result is saved in ``results_dir`` and reused.
    dataset_name : str, optional
        The data's name, stamped on the result.

    Returns
    -------
    AuditReport
        One :class:`~privaudit.results.DPAuditResult`: its verdict is ``"claim refuted"``
        when the bound exceeds the claim, else ``"consistent with the claim"`` (an audit
        never proves privacy).

    Raises
    ------
    ValueError
        A bad setting (named), before any training; a training function that drops,
        adds or reorders canaries.
    TypeError
        A setting of the wrong type, or ``train`` not callable.

    References
    ----------
    .. [1] Steinke, T., Nasr, M. and Jagielski, M. "Privacy Auditing with One (1)
       Training Run." NeurIPS 2023.
    .. [2] Mahloujifar, S., Melis, L. and Chaudhuri, K. "Auditing f-Differential Privacy
       in One Run." 2024.
    .. [3] Nasr, M. et al. "Tight Auditing of Differentially Private Machine Learning."
       USENIX Security 2023.
    """
    options = RunOptions.checked(
        _FUNC, random_state=random_state, executor=executor, n_jobs=n_jobs,
        address=address, cache_dir=cache_dir, results_dir=results_dir,
        progress=progress,
        dataset=dataset_name)
    settings = DPTrainingSettings(
        claimed_epsilon=claimed_epsilon, delta=delta, canaries=canaries,
        n_canaries=n_canaries,
        methods=tuple(methods) if isinstance(methods, (list, tuple)) else methods,
        threshold=threshold, two_sided=two_sided, confidence=confidence, n_runs=n_runs)
    return drive(DPTrainingAudit(train, dataset, name=name, settings=settings,
                                 options=options))
