"""``audit_model``: one call that runs every requested membership attack against a model.

The flow of DESIGN.md in one function: the target is queried once on the audited records
(and once on the population when an attack needs it); reference models are trained once,
through the executor and the on-disk cache, and queried once; every attack reads those
shared outputs. Each finished attack is written to ``results_dir`` atomically, so a rerun
with the same arguments resumes where it stopped.
"""

from __future__ import annotations

import copyreg
import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import (
    align_on_index,
    check_binary_labels,
    check_directory,
    check_fraction,
    check_int,
    check_unique_ids,
    param_error,
)

__all__ = [
    "CROSS_FITTED_ATTACKS",
    "DEFAULT_ATTACKS",
    "DEFAULT_REGRESSION_ATTACKS",
    "REFERENCE_ATTACKS",
    "SLICE_SETTINGS",
    "audit_model",
    "estimator_fingerprint",
    "slice_result",
]

#: Attacks run on a classifier when none are named: black-box, need no reference models.
DEFAULT_ATTACKS: tuple[str, ...] = ("loss", "confidence", "entropy", "modified-entropy")
#: The same for a regressor (Yeom et al.'s loss threshold and Gaussian adversary).
DEFAULT_REGRESSION_ATTACKS: tuple[str, ...] = ("loss", "gaussian-threshold")
#: Attacks that need reference (shadow) models trained like the target.
REFERENCE_ATTACKS: frozenset[str] = frozenset({"shadow", "lira-online", "lira-offline", "rmia"})
#: Attacks trained on part of the audited records' membership (scored out of fold).
CROSS_FITTED_ATTACKS: frozenset[str] = frozenset(
    {"trained-lr", "trained-mlp", "trained-rf", "trained-knn"}
)
_POPULATION_ATTACKS = frozenset({"shadow", "rmia"})
_LIRA_ATTACKS = frozenset({"lira-online", "lira-offline"})
_FUNC = "audit_model"

#: How :func:`audit_model` slices every result (see :func:`slice_result`). The bootstrap is
#: kept small because an attack has some 25 slices (2 of correctness, 10 of loss, one per
#: class): 100 resamples give intervals good to about +-0.01 at a tenth of the default cost.
#: TPR is reported at 1% and 10% FPR only: a slice has ~100 non-members, so a 0.1% FPR is
#: below its resolution.
SLICE_SETTINGS: dict[str, Any] = {
    "n_bootstrap": 100,
    "fprs": (0.01, 0.1),
    "confidence": 0.95,
    "min_slice_size": 10,
    "n_most_exposed": 10,
}
# Deciles need ~1,000 records to keep ~50 members and ~50 non-members per slice.
_DECILE_MIN_RECORDS = 1000


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


def _row_hashes(X: Any, y: Any) -> np.ndarray:
    """One 64-bit hash per (features, label) row, vectorised (pandas' hash of rows).

    Values are normalised first (numbers to float64, everything else and the labels to
    str, columns by position) so that the same record read as int in one file and as float
    or text in another still collides: pandas' row hash depends on the dtype.
    """
    import pandas as pd

    if isinstance(X, pd.DataFrame):
        frame = X.reset_index(drop=True)
        frame.columns = range(frame.shape[1])
    else:
        arr = np.asarray(X)
        frame = pd.DataFrame(arr.reshape(len(arr), -1))
    columns = {}
    for col in frame.columns:
        series = frame[col]
        numeric = pd.to_numeric(series, errors="coerce")
        if numeric.notna().sum() == series.notna().sum():
            columns[col] = numeric.astype(np.float64)
        else:
            columns[col] = series.astype(str)
    normalised = pd.DataFrame(columns)
    normalised["__label__"] = pd.Series(np.asarray(y)).astype(str).to_numpy()
    return pd.util.hash_pandas_object(normalised, index=False).to_numpy()


def population_overlap(X: Any, y: Any, X_pop: Any, y_pop: Any) -> tuple[int, int, int]:
    """Audited rows that the population repeats on what the model sees (features, label).

    Returns
    -------
    (n_shared, population_row, audited_row)
        How many audited rows equal some population row, and the first such pair
        (positions, from 0; ``-1`` when none).
    """
    audited = _row_hashes(X, y)
    pop = _row_hashes(X_pop, y_pop)
    shared = np.flatnonzero(np.isin(audited, pop))
    if not shared.size:
        return 0, -1, -1
    first = int(shared[0])
    return int(shared.size), int(np.flatnonzero(pop == audited[first])[0]), first


def _check_population_disjoint(X: Any, y: Any, X_pop: Any, y_pop: Any) -> None:
    n_shared, pop_row, audited_row = population_overlap(X, y, X_pop, y_pop)
    if n_shared:
        raise param_error(
            "population", _FUNC,
            "free of the audited records as the model sees them (features and label): a "
            "reference model trained on such a row counts as trained on the audited record",
            f"<{n_shared} audited rows also in the population, e.g. audited row "
            f"{audited_row} = population row {pop_row} (from 0)>",
        )


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(np.ascontiguousarray(part).tobytes())
            h.update(str((part.dtype, part.shape)).encode())
        else:
            h.update(json.dumps(part, sort_keys=True, default=str).encode())
    return h.hexdigest()[:20]


def _target_fingerprint(tgt: Any) -> str | None:
    """Digest of the audited model's parameters, or None when they cannot be read.

    scikit-learn: :func:`estimator_fingerprint` (the fitted state, stable across loads and
    processes); torch: the state dict's tensors. Other targets are fingerprinted by their
    answers instead (see :func:`audit_model`).
    """
    estimator = getattr(tgt, "estimator", None)
    if estimator is not None:
        return estimator_fingerprint(estimator)
    module = getattr(tgt, "module", None)
    if module is not None and hasattr(module, "state_dict"):
        h = hashlib.sha256()
        for key, tensor in sorted(module.state_dict().items()):
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()[:20]
    return None


#: Attributes that hold runtime state, not the fitted model: a random generator is
#: re-seeded by every load (skops rebuilds ``MLPClassifier._random_state`` afresh), so
#: ``joblib.hash`` of the same file differed from one load to the next.
_VOLATILE_ATTRIBUTES = frozenset({"_random_state"})


def estimator_fingerprint(estimator: Any) -> str | None:
    """Digest of a fitted scikit-learn estimator's state, stable across loads and processes.

    Built from what the estimator is, not from its pickled bytes: its class, then every
    attribute (hyperparameters and fitted attributes, public or private: a
    ``HistGradientBoosting`` keeps its trees in ``_predictors``), arrays by dtype, shape
    and bytes, nested estimators, lists and dicts recursively, compiled objects such as
    ``sklearn.tree._tree.Tree`` by their pickled state. Random generators are left out: a
    load re-seeds them and they do not change what the fitted model predicts. Two loads of
    one file give the same digest; a refit with another seed gives another.

    Returns
    -------
    str or None
        20 hex digits, or None when some part of the estimator cannot be read (the audit
        then identifies the model by its answers).
    """
    h = hashlib.sha256()
    try:
        _hash_state(estimator, h, set(), 0)
    except (TypeError, ValueError, AttributeError, RecursionError):
        return None
    return h.hexdigest()[:20]


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _hash_state(obj: Any, h: Any, seen: set[int], depth: int) -> None:
    """Feed ``obj``'s state into ``h`` in a canonical order (see estimator_fingerprint)."""
    if depth > 60:
        raise RecursionError("estimator state nested too deeply")
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
        return
    if isinstance(obj, (np.random.RandomState, np.random.Generator,
                        np.random.BitGenerator, np.random.SeedSequence)):
        h.update(b"<rng>;")
        return
    if isinstance(obj, np.generic):
        h.update(f"{obj.dtype.str}:".encode() + obj.tobytes() + b";")
        return
    if isinstance(obj, (type, np.ufunc)) or inspect.isroutine(obj):
        h.update(f"<{_qualname(obj)}>;".encode())
        return
    if isinstance(obj, np.ndarray):
        h.update(f"array{obj.dtype.str}{obj.shape}:".encode())
        if obj.dtype.names:
            # Field by field: a record array's padding bytes (a tree's nodes) are
            # uninitialised memory, different at every load.
            for field in obj.dtype.names:
                _hash_state(np.ascontiguousarray(obj[field]), h, seen, depth + 1)
        elif obj.dtype.hasobject:
            for item in obj.ravel():
                _hash_state(item, h, seen, depth + 1)
        else:
            h.update(np.ascontiguousarray(obj).tobytes())
        return
    if id(obj) in seen:
        h.update(b"<cycle>;")
        return
    seen.add(id(obj))
    try:
        _hash_container(obj, h, seen, depth)
    finally:
        seen.discard(id(obj))


def _hash_container(obj: Any, h: Any, seen: set[int], depth: int) -> None:
    if isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}]".encode())
        for item in obj:
            _hash_state(item, h, seen, depth + 1)
        return
    if isinstance(obj, (set, frozenset)):
        obj = sorted(obj, key=repr)
        h.update(f"set[{len(obj)}]".encode())
        for item in obj:
            _hash_state(item, h, seen, depth + 1)
        return
    if isinstance(obj, dict):
        h.update(f"dict[{len(obj)}]".encode())
        for key in sorted(obj, key=repr):
            if key in _VOLATILE_ATTRIBUTES:
                continue
            _hash_state(key, h, seen, depth + 1)
            _hash_state(obj[key], h, seen, depth + 1)
        return
    h.update(f"<{_qualname(type(obj))}>".encode())
    state = getattr(obj, "__dict__", None)
    if state is None or not state:
        # Compiled objects (a tree's nodes, a loss) expose their state for pickling;
        # reading it runs no code from a file, the object is already built.
        reduced = obj.__reduce_ex__(4)
        if not isinstance(reduced, tuple) or len(reduced) < 2:
            raise TypeError(f"cannot read the state of {type(obj).__name__}")
        args = reduced[1][1:] if reduced[0] is copyreg.__newobj__ else reduced[1]
        state = {"args": args, "state": reduced[2] if len(reduced) > 2 else None}
    _hash_state(dict(state), h, seen, depth + 1)


def slice_result(
    result: Any, outputs: Any, *, random_state: int | np.random.Generator | None = 0
) -> dict[str, Any] | None:
    """Slices and most exposed records of one result, as JSON-ready ``extra`` entries.

    Computed from the target's outputs on the audited records, already in hand: the target
    is not queried. Slices follow TensorFlow Privacy's ``SlicingSpec`` [1]_: the entire
    dataset, each true class and correct / incorrect predictions (classifiers), and loss
    percentiles (deciles from 1,000 records, quintiles below; not for a label-only
    target, whose 0-1 loss is the correctness slice again).

    Parameters
    ----------
    result : AttackResult
        A result whose records are the rows of ``outputs``, in order.
    outputs : ModelOutputs
        The target's outputs on those records.
    random_state : int, Generator or None, default=0
        Seeds the bootstrap of :func:`~privaudit.results.slice_metrics`.

    Returns
    -------
    dict or None
        ``{"slices": [...], "most_exposed": [...], "most_exposed_tied": int,
        "slice_settings": {...}}``: the rows of :func:`~privaudit.results.slice_metrics`;
        the first ``SLICE_SETTINGS["n_most_exposed"]`` rows of
        :func:`~privaudit.results.vulnerability_ranking` (``record_id``, ``score``,
        ``detection_fpr``, ``rank``; ties share a rank); the number of members whose
        detection FPR is at most that of the last one listed (larger than the list when it
        was cut inside a tie, whose order is only the record order); and the settings
        used. Lists of dicts with NaN written as ``None``, so the result saves to strict
        JSON and reloads equal. ``None`` when ``outputs`` has another number of records.

    Notes
    -----
    Slices that cannot be scored (fewer than ``min_slice_size`` members or non-members,
    one class, empty) keep NaN metrics and their ``status``; the
    :class:`~privaudit.exceptions.DegenerateInputWarning` that
    :func:`~privaudit.results.slice_metrics` raises for them is silenced here, since the
    caller asked for an audit, not for these slices.

    References
    ----------
    .. [1] Song, S. and Marn, D. (2020). Introducing a new privacy testing library in
       TensorFlow. TensorFlow blog (``SlicingSpec`` of TensorFlow Privacy).
    .. [2] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership inference attacks from first principles. IEEE S&P.
    """
    import warnings

    from privaudit.exceptions import DegenerateInputWarning
    from privaudit.results import slice_metrics, vulnerability_ranking
    from privaudit.results._io import to_jsonable

    n = result.n_records
    if len(outputs) != n:
        return None
    loss = np.asarray(outputs.loss, dtype=np.float64)
    use_loss = outputs.loss_name != "zero_one" and bool(np.all(np.isfinite(loss)))
    n_percentiles = 10 if n >= _DECILE_MIN_RECORDS else 5
    classifier = outputs.task == "classification"
    settings = SLICE_SETTINGS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)
        frame = slice_metrics(
            result,
            by_class=outputs.y if classifier else None,
            correct=outputs.signal("correctness") if classifier else None,
            loss=loss if use_loss else None,
            n_percentiles=n_percentiles,
            fprs=settings["fprs"],
            n_bootstrap=settings["n_bootstrap"],
            confidence=settings["confidence"],
            min_slice_size=settings["min_slice_size"],
            random_state=random_state,
        )
        ranking = vulnerability_ranking(result)
    exposed = ranking.head(settings["n_most_exposed"])
    n_tied = 0
    if len(exposed):
        # Ties are common (a memorising model gives many members the same score): say how
        # many members are as exposed as the last one listed, so that a list drawn from a
        # larger tie is not read as "these ten and no others".
        last = exposed["detection_fpr"].iloc[-1]
        n_tied = (int((ranking["detection_fpr"] <= last).sum()) if np.isfinite(last)
                  else len(ranking))
    return {
        "slices": to_jsonable(frame.to_dict("records"), where="slices"),
        "most_exposed": to_jsonable(
            exposed[["record_id", "score", "detection_fpr", "rank"]].to_dict("records"),
            where="most_exposed",
        ),
        "most_exposed_tied": n_tied,
        "slice_settings": to_jsonable({
            "n_bootstrap": settings["n_bootstrap"],
            "confidence": settings["confidence"],
            "fprs": list(settings["fprs"]),
            "min_slice_size": settings["min_slice_size"],
            "n_percentiles": n_percentiles if use_loss else 0,
            "loss": outputs.loss_name if use_loss else None,
        }, where="slice_settings"),
    }


def _check_settings(
    *, n_reference_models: Any, reference_fraction: Any, random_state: Any, n_jobs: Any,
    executor: Any, address: Any, dataset: Any, cache_dir: Any, results_dir: Any,
    check_fidelity: Any, slices: Any, progress: Any, wrap: Any,
) -> None:
    """Refuse bad settings of :func:`audit_model` before any work is done."""
    check_int(n_reference_models, param="n_reference_models", func=_FUNC, low=1)
    if reference_fraction is not None:
        check_fraction(reference_fraction, param="reference_fraction", func=_FUNC)
    check_int(random_state, param="random_state", func=_FUNC, low=0)
    # -1 is scikit-learn's "every CPU"; 0 and other negatives mean nothing.
    check_int(n_jobs, param="n_jobs", func=_FUNC, low=1, allow_none=True, allowed=(-1,))
    if not callable(getattr(type(executor), "map_unordered", None)):  # else an Executor
        if executor not in ("local", "ray"):
            raise param_error("executor", _FUNC, "'local', 'ray' or an Executor", executor)
        if executor == "local" and address is not None:
            raise param_error("address", _FUNC, "None with executor='local'", address)
    for name, value in (("address", address), ("dataset", dataset)):
        if value is not None and not isinstance(value, str):
            raise param_error(name, _FUNC, "a str", value, error=TypeError)
    for name, value in (("cache_dir", cache_dir), ("results_dir", results_dir)):
        if value is not None:
            check_directory(value, param=name, func=_FUNC)
    for name, value in (("check_fidelity", check_fidelity), ("slices", slices)):
        if not isinstance(value, (bool, np.bool_)):
            raise param_error(name, _FUNC, "True or False", value, error=TypeError)
    for name, value in (("progress", progress), ("wrap", wrap)):
        if value is not None and not callable(value):
            raise param_error(name, _FUNC, "None or a callable", value, error=TypeError)


def _check_records(X: Any, y: Any, labels: Any, record_ids: Any) -> tuple:
    """Align pandas inputs on their index, check lengths, labels and unique ids."""
    aligned = align_on_index({"X": X, "y": y, "labels": labels, "record_ids": record_ids},
                             func=_FUNC)
    X, record_ids = aligned["X"], aligned["record_ids"]
    n = _n_rows(X)
    if n == 0:
        raise param_error("X", _FUNC, "non-empty", "<no records>")
    y_arr = np.asarray(aligned["y"])
    if y_arr.ndim != 1 or y_arr.shape[0] != n:
        raise param_error("y", _FUNC, f"one label per row of X ({n})",
                          f"<array of shape {y_arr.shape}>")
    lab = check_binary_labels(aligned["labels"], func=_FUNC)
    if lab.shape[0] != n:
        raise param_error("labels", _FUNC, f"one membership label per row of X ({n})",
                          f"<length {lab.shape[0]}>")
    if record_ids is not None:
        ids = np.asarray(record_ids)
        if ids.ndim != 1 or ids.shape[0] != n:
            raise param_error("record_ids", _FUNC, f"one id per row of X ({n})",
                              f"<array of shape {ids.shape}>")
        check_unique_ids(ids, param="record_ids", func=_FUNC)
    return X, y_arr, lab, record_ids


def _saved_result(path: Path, key: Callable[[], str], labels: np.ndarray) -> Any:
    """The finished result saved in ``path`` if it can be reused, else ``None``.

    A saved result is reused when its ``audit_key`` is ``key()`` (computed only when a
    result is there) and its labels are the audited records'. A damaged one (not JSON,
    keys missing, scores truncated or edited...: :class:`~privaudit.results.ResultFileError`)
    is treated as missing, with a warning: it is recomputed and overwritten, instead of
    making every later audit fail until it is deleted by hand.
    """
    import warnings

    from privaudit.results import AttackResult, DamagedResultWarning, ResultFileError

    if not (path / "result.json").exists():
        return None
    try:
        saved = AttackResult.load(path)
    except ResultFileError as exc:
        reason = str(exc)
    else:
        if saved.extra.get("audit_key") != key():
            return None  # another audit's result: silently recomputed, as always
        if np.array_equal(saved.labels, labels):
            return saved
        reason = "its labels are not those of the audited records"
    warnings.warn(
        f"The saved result in {path} is damaged ({reason}); it is treated as missing: "
        "recomputed and overwritten.", DamagedResultWarning, stacklevel=3,
    )
    return None


def audit_model(
    target: Any,
    X: Any,
    y: ArrayLike,
    labels: ArrayLike,
    *,
    population: tuple[Any, ArrayLike] | None = None,
    attacks: Sequence[str] | None = None,
    attack_params: dict[str, dict[str, Any]] | None = None,
    recipe: Any = None,
    n_reference_models: int = 16,
    reference_mode: str = "auto",
    reference_fraction: float | None = None,
    wrap: Callable[[Any], Any] | None = None,
    record_ids: ArrayLike | None = None,
    dataset: str = "",
    random_state: int = 0,
    n_jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    cache_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    check_fidelity: bool = True,
    slices: bool = True,
    progress: Callable[[str], None] | None = None,
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
        Default: :data:`DEFAULT_ATTACKS` for a classifier, :data:`DEFAULT_REGRESSION_ATTACKS`
        for a regressor. Registry names (see :func:`privaudit.attacks.available_attacks`): ``loss``,
        ``confidence``, ``entropy``, ``modified-entropy``, ``gaussian-threshold``,
        ``shadow``, ``trained-lr`` (``-mlp``, ``-rf``, ``-knn``), ``lira-offline``,
        ``lira-online``, ``rmia``, ``label-only``, ``gradient-norm`` (torch targets).
    attack_params : dict, optional
        Constructor parameters per attack name, e.g. ``{"lira-online": {"fix_variance":
        True}}``.
    recipe : TrainingRecipe or scikit-learn estimator, optional
        How to train reference models "like the target". Default for a scikit-learn
        target: an unfitted clone of it.
    n_reference_models : int, default=16
        Size of the reference pool (shared by all reference attacks).
    reference_mode : {"auto", "online", "offline"}, default="auto"
        ``auto``: online when ``lira-online`` is requested (the offline attacks then read the
        OUT models of the same pool, as in Carlini et al.), else offline (reference models
        train on the population only).
    reference_fraction : float, optional
        Fraction of the candidate records (audited + population online, population
        offline) each reference model trains on. Default: the fraction that gives the
        reference models as many training records as the target had (``labels.sum()``),
        since a size mismatch silently weakens reference-model attacks.
    wrap : callable, optional
        Turns a trained reference model into a Target (default :func:`as_target`).
    record_ids : array-like, optional
        Identifiers of the audited records (default ``0..n-1``).
    dataset : str
        Dataset name for provenance.
    random_state : int, default=0
        Seeds the reference pool and every attack: same seed, same numbers, whatever
        ``n_jobs`` or ``executor``.
    n_jobs, executor, address, cache_dir
        Parallel training of reference models (``executor="local"`` processes or
        ``"ray"``, at ``address`` if given) and their on-disk cache (resumable).
    results_dir : path, optional
        Each finished attack is saved there (``<target>-<hash>__<attack>-<hash>/``, see
        :func:`privaudit.results.result_folder_name`) and reused by a rerun with the same
        inputs. A damaged saved result is recomputed and overwritten, with a warning.
    check_fidelity : bool, default=True
        Warn (:class:`~privaudit.exceptions.FidelityWarning`) when the reference models
        differ clearly from the target.
    slices : bool, default=True
        Add to every result the leakage per slice of the audited records and its most
        exposed members (:func:`slice_result`): ``result.extra["slices"]`` (the rows of
        :func:`~privaudit.results.slice_metrics`: entire dataset, each class, correct /
        incorrect predictions and loss percentiles for a classifier; entire dataset and
        loss percentiles for a regressor), ``result.extra["most_exposed"]`` (the 10 members
        with the lowest detection FPR, from
        :func:`~privaudit.results.vulnerability_ranking`), ``"most_exposed_tied"`` and
        ``"slice_settings"``. Intervals use 100 stratified bootstrap
        resamples (:data:`SLICE_SETTINGS`), seeded with ``random_state``; the HTML report
        shows them. Slicing reads the target's outputs on the audited records and never
        queries the target for it: when no attack queried it (an audit made only of
        self-querying attacks such as ``gradient-norm``), results are left unsliced rather
        than spending queries (a label-only budget) on them. Results reused from
        ``results_dir`` keep what they were saved with, and get slices when they lack them
        and the outputs are at hand.
    progress : callable, optional
        Called with a short message at each step.
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
    from privaudit.attacks import available_attacks, get_attack
    from privaudit.results import AttackResult, result_folder_name
    from privaudit.targets import as_target

    _check_settings(
        n_reference_models=n_reference_models, reference_fraction=reference_fraction,
        random_state=random_state, n_jobs=n_jobs, executor=executor, address=address,
        dataset=dataset, cache_dir=cache_dir, results_dir=results_dir,
        check_fidelity=check_fidelity, slices=slices, progress=progress, wrap=wrap,
    )
    say = progress or (lambda message: None)
    tgt = as_target(target)
    X, y_arr, lab, record_ids = _check_records(X, y, labels, record_ids)
    n = _n_rows(X)
    if attacks is None:
        attacks = DEFAULT_REGRESSION_ATTACKS if tgt.task == "regression" else DEFAULT_ATTACKS
    if isinstance(attacks, str) or not isinstance(attacks, Sequence) or not attacks:
        raise param_error("attacks", _FUNC, "a non-empty list of attack names", attacks,
                          error=TypeError)
    known = set(available_attacks())
    unknown = [a for a in attacks if a not in known]
    if unknown:
        raise param_error("attacks", _FUNC, f"names among {sorted(known)}", unknown)
    if len(set(attacks)) != len(attacks):
        raise param_error("attacks", _FUNC, "names without repetition", list(attacks))
    params = dict(attack_params or {})
    stray = sorted(set(params) - set(attacks))
    if stray:
        raise param_error("attack_params", _FUNC, "keyed by requested attack names", stray)
    if reference_mode not in ("auto", "online", "offline"):
        raise param_error("reference_mode", _FUNC, "'auto', 'online' or 'offline'",
                          reference_mode)

    if not getattr(tgt, "reveals_probabilities", True):
        blind = [a for a in attacks
                 if getattr(get_attack(a, **params.get(a, {})), "needs_probabilities", False)]
        if blind:
            raise param_error("attacks", _FUNC,
                              f"attacks that work on a label-only target (not {blind})",
                              f"<label-only target {tgt.name!r}>")
    needs_reference = [a for a in attacks if a in REFERENCE_ATTACKS]
    needs_population = [a for a in attacks if a in _POPULATION_ATTACKS]
    mode = reference_mode
    if mode == "auto":
        mode = "online" if "lira-online" in attacks else "offline"
    if mode == "offline" and "lira-online" in attacks:
        raise param_error("reference_mode", _FUNC, "'online' or 'auto' for lira-online",
                          reference_mode)
    from privaudit.attacks import check_attack_plan

    # Before any query or training: each attack can run on this target and this pool.
    check_attack_plan(
        attacks, task=tgt.task, n_reference_models=n_reference_models, reference_mode=mode,
        white_box=callable(getattr(tgt, "per_sample_gradient_norms", None)),
        n_members=int(lab.sum()), n_non_members=int(lab.size - lab.sum()),
        attack_params=params, func=_FUNC,
    )
    X_pop = y_pop = None
    if population is not None:
        if not isinstance(population, tuple | list) or len(population) != 2:
            raise param_error("population", _FUNC, "a pair (X_population, y_population)",
                              f"<{type(population).__name__}>", error=TypeError)
        pair = align_on_index({"population[0]": population[0],
                               "population[1]": population[1]}, func=_FUNC)
        X_pop, y_pop = pair["population[0]"], np.asarray(pair["population[1]"])
        if _n_rows(X_pop) != y_pop.shape[0]:
            raise param_error("population", _FUNC, "a pair with one label per row",
                              f"<{_n_rows(X_pop)} rows, {y_pop.shape[0]} labels>")
        _check_population_disjoint(X, y_arr, X_pop, y_pop)
    if (needs_population or (needs_reference and mode == "offline")) and X_pop is None:
        who = needs_population or needs_reference
        raise param_error("population", _FUNC,
                          f"given for {', '.join(who)} (reference models and RMIA need records "
                          "the target did not train on)", None)

    from privaudit.training import data_fingerprint

    # Everything that changes a result goes into the key of a saved result: the model's
    # parameters (or, when they cannot be read, its answers), the data, the population,
    # the recipe, the ids, the seed. A stale result is never reused.
    outputs_cache: dict[str, Any] = {}

    def shared_outputs() -> Any:
        if "audited" not in outputs_cache:
            say(f"querying {tgt.name} on {n} audited records")
            outputs_cache["audited"] = tgt.query(X, y_arr)
        return outputs_cache["audited"]

    model_part = _target_fingerprint(tgt)
    recipe_part = None
    if recipe is not None and needs_reference:
        from privaudit.training import as_recipe

        recipe_part = as_recipe(recipe, func=_FUNC).fingerprint()
    base_key = _digest(
        tgt.name, type(tgt).__name__, model_part, data_fingerprint(X, y_arr), lab,
        None if X_pop is None else data_fingerprint(X_pop, y_pop), recipe_part,
        None if record_ids is None else np.asarray(record_ids).astype(str), dataset,
        random_state,
    )
    out_dir = Path(results_dir) if results_dir is not None else None

    def result_path(name: str) -> Path | None:
        # One naming rule for result folders (unique per target and attack name).
        return None if out_dir is None else out_dir / result_folder_name(tgt.name, name)

    augs = None
    if augmentations is not None:
        from privaudit.attacks.membership._augment import check_augmentations

        augs = check_augmentations(augmentations, _FUNC)

    def attack_key(name: str) -> str:
        ref_part: Any = ((n_reference_models, mode, reference_fraction)
                         if name in REFERENCE_ATTACKS else None)
        if augs is not None and name in _LIRA_ATTACKS:
            ref_part = (*ref_part, [repr(a) for a in augs])
        answers = None
        if model_part is None and out_dir is not None:
            # No readable parameters: the model's answers on the audited records identify it.
            answers = np.asarray(shared_outputs().loss)
        return _digest(base_key, name, params.get(name, {}), ref_part, answers)

    results: dict[str, AttackResult] = {}
    for name in attacks:
        path = result_path(name)
        saved = (None if path is None
                 else _saved_result(path, functools.partial(attack_key, name), lab))
        if saved is not None:
            say(f"{name}: reusing the finished result in {path}")
            results[name] = saved
    todo = [a for a in attacks if a not in results]

    def add_slices(result: AttackResult) -> bool:
        # Only from outputs already queried: slicing alone never spends a query.
        if not slices or "slices" in result.extra or "audited" not in outputs_cache:
            return False
        outputs = outputs_cache["audited"]
        if not np.array_equal(result.labels, lab):
            return False  # not aligned with the audited rows: nothing to slice by
        sliced = slice_result(result, outputs, random_state=random_state)
        if sliced is None:
            return False
        result.extra.update(sliced)
        return True

    def finish(name: str, result: AttackResult) -> None:
        result.extra["audit_key"] = attack_key(name)
        if not result.dataset:
            result.dataset = dataset
        # DESIGN: an attack no better than its baseline says so, with a warning (emitted by
        # check_baseline) and a flag saved with the result.
        if result.n_members and result.n_non_members:
            result.extra["better_than_random"] = result.check_baseline(
                n_bootstrap=200, random_state=random_state
            )
        add_slices(result)
        path = result_path(name)
        if path is not None:
            result.save(path)
        results[name] = result

    common = {"record_ids": record_ids, "dataset": dataset, "target_name": tgt.name}

    for name in [a for a in todo if a not in REFERENCE_ATTACKS and a not in CROSS_FITTED_ATTACKS]:
        say(f"running {name}")
        attack = get_attack(name, **params.get(name, {}))
        _seed(attack, random_state)
        if getattr(attack, "requires_fit", False):
            # Yeom et al.'s Gaussian adversary knows the error scales of members and
            # non-members (Theorem 3): they are estimated on the audited records.
            attack.fit(outputs=shared_outputs(), labels=lab)
        shared = None if name == "gradient-norm" else shared_outputs()
        finish(name, attack.run(tgt, X, y_arr, lab, outputs=shared, **common))

    for name in [a for a in todo if a in CROSS_FITTED_ATTACKS]:
        say(f"running {name} (cross-fitted on the audited labels)")
        attack = get_attack(name, **params.get(name, {}))
        _seed(attack, random_state)
        finish(name, attack.run(tgt, X, y_arr, lab, outputs=shared_outputs(), **common))

    todo_reference = [a for a in todo if a in REFERENCE_ATTACKS]
    if todo_reference:
        from privaudit.attacks.membership import collect_reference_outputs

        if recipe is None:
            estimator = getattr(tgt, "estimator", None)
            if estimator is None:
                raise param_error("recipe", _FUNC,
                                  f"given to train reference models for {todo_reference} "
                                  "(only scikit-learn targets default to a clone)", None)
            from sklearn.base import clone

            recipe = clone(estimator)
        n_candidates = (n if mode == "online" else 0) + (0 if X_pop is None else len(y_pop))  # type: ignore[arg-type]
        fraction = reference_fraction
        if fraction is None:
            # As many training records as the target had, but never more than half of the
            # candidates: every record must stay OUT of enough models for LiRA's OUT
            # Gaussians and RMIA's Pr_OUT (and IN of enough for online LiRA).
            wanted = lab.sum() / max(n_candidates, 1)
            fraction = float(np.clip(wanted, 0.05, 0.5))
            if wanted > 0.5:
                import warnings

                from privaudit.exceptions import FidelityWarning

                warnings.warn(
                    f"audit_model: the target trained on {int(lab.sum())} records but the "
                    f"reference models can train on at most half of the {n_candidates} "
                    "candidate records; give a larger population for faithful reference "
                    "models.", FidelityWarning, stacklevel=2,
                )
        say(f"training {n_reference_models} reference models ({mode}, each on "
            f"{fraction:.0%} of {n_candidates} records)")
        reference = collect_reference_outputs(
            recipe, X, y_arr, X_population=X_pop, y_population=y_pop,
            n_models=n_reference_models, mode=mode,  # type: ignore[arg-type]
            sample_fraction=fraction,
            query_population=bool(needs_population) or X_pop is not None,
            wrap=wrap or as_target, executor=executor, n_jobs=n_jobs, address=address,
            cache_dir=cache_dir, random_state=random_state,
            augmentations=augs if augs is not None and _LIRA_ATTACKS & set(todo_reference)
            else None,
        )
        if check_fidelity and reference.pool is not None:
            test_rows = np.flatnonzero(lab == 0)
            if test_rows.size:
                from sklearn.utils import _safe_indexing

                reference.pool.check_fidelity(
                    tgt, _safe_indexing(X, test_rows), y_arr[test_rows],
                    target_n_train=int(lab.sum()),
                )
        population_outputs = None
        if needs_population:
            say(f"querying {tgt.name} on {len(y_pop)} population records")  # type: ignore[arg-type]
            population_outputs = tgt.query(X_pop, y_pop)
        for name in todo_reference:
            say(f"running {name}")
            attack = get_attack(name, **params.get(name, {}))
            _seed(attack, random_state)
            if name == "rmia":
                attack.fit(reference, population_outputs)
            else:
                attack.fit(reference)
            if augs is not None and name in _LIRA_ATTACKS:
                # The target answers the augmented records too, once for both LiRAs (its
                # answers on the records themselves are the shared outputs).
                if "augmented" not in outputs_cache:
                    from privaudit.attacks.membership import query_augmented

                    say(f"querying {tgt.name} on {len(augs)} augmentations of {n} records")
                    outputs_cache["augmented"] = query_augmented(tgt, X, y_arr, augs,
                                                                 func=_FUNC)
                result = attack.run(tgt, X, y_arr, lab, outputs=shared_outputs(),
                                    augmented_outputs=outputs_cache["augmented"], **common)
            else:
                result = attack.run(outputs=shared_outputs(), labels=lab, **common)
            result.extra.setdefault("n_reference_models", n_reference_models)
            finish(name, result)

    # A result finished before any attack queried the target (gradient-norm listed first),
    # or reused from an older run, is sliced now if the outputs were queried since.
    for name in attacks:
        if add_slices(results[name]):
            path = result_path(name)
            if path is not None:
                results[name].save(path)

    return [results[a] for a in attacks]


def _seed(attack: Any, random_state: int) -> None:
    """Give an attack the audit's seed when it takes one and none was set."""
    if hasattr(attack, "random_state") and attack.random_state is None:
        attack.random_state = random_state
