"""``audit_model``: one call that runs every requested membership attack against a model.

The flow of DESIGN.md in one function: the target is queried once on the audited records
(and once on the population when an attack needs it); reference models are trained once,
through the executor and the on-disk cache, and queried once; every attack reads those
shared outputs. Each finished attack is written to ``results_dir`` atomically, so a rerun
with the same arguments resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import check_binary_labels, param_error

__all__ = [
    "CROSS_FITTED_ATTACKS",
    "DEFAULT_ATTACKS",
    "DEFAULT_REGRESSION_ATTACKS",
    "REFERENCE_ATTACKS",
    "SLICE_SETTINGS",
    "audit_model",
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


def _check_population_disjoint(X: Any, y: Any, X_pop: Any, y_pop: Any) -> None:
    common = np.intersect1d(_row_hashes(X, y), _row_hashes(X_pop, y_pop))
    if common.size:
        raise param_error(
            "population", _FUNC,
            "disjoint from the audited records (a population record that is also audited "
            "makes reference-model attacks silently wrong)",
            f"<{common.size} audited rows also in the population>",
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

    scikit-learn: ``joblib.hash`` of the estimator (hashes its pickled bytes; nothing is
    unpickled); torch: the state dict's tensors. Other targets are fingerprinted by their
    answers instead (see :func:`audit_model`).
    """
    estimator = getattr(tgt, "estimator", None)
    if estimator is not None:
        import joblib

        return str(joblib.hash(estimator))
    module = getattr(tgt, "module", None)
    if module is not None and hasattr(module, "state_dict"):
        h = hashlib.sha256()
        for key, tensor in sorted(module.state_dict().items()):
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()[:20]
    return None


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
        Each finished attack is saved there (``<target>__<attack>/``) and reused by a rerun
        with the same inputs.
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
    from privaudit.results import AttackResult
    from privaudit.targets import as_target

    say = progress or (lambda message: None)
    tgt = as_target(target)
    n = _n_rows(X)
    y_arr = np.asarray(y)
    if y_arr.shape[0] != n:
        raise param_error("y", _FUNC, f"one label per row of X ({n})", f"<length {len(y_arr)}>")
    lab = check_binary_labels(labels, func=_FUNC)
    if lab.shape[0] != n:
        raise param_error("labels", _FUNC, f"one membership label per row of X ({n})",
                          f"<length {lab.shape[0]}>")
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
    X_pop = y_pop = None
    if population is not None:
        if not isinstance(population, tuple | list) or len(population) != 2:
            raise param_error("population", _FUNC, "a pair (X_population, y_population)",
                              f"<{type(population).__name__}>", error=TypeError)
        X_pop, y_pop = population[0], np.asarray(population[1])
        if _n_rows(X_pop) != y_pop.shape[0]:
            raise param_error("population", _FUNC, "a pair with one label per row",
                              f"<{_n_rows(X_pop)} rows, {y_pop.shape[0]} labels>")
        _check_population_disjoint(X, y_arr, X_pop, y_pop)
    if (needs_population or (needs_reference and mode == "offline")) and X_pop is None:
        who = needs_population or needs_reference
        raise param_error("population", _FUNC,
                          f"given for {', '.join(who)} (reference models and RMIA need records "
                          "the target did not train on)", None)

    from privaudit.report._common import safe_name
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
        return None if out_dir is None else out_dir / f"{safe_name(tgt.name)}__{safe_name(name)}"

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
        if path is not None and (path / "result.json").exists():
            saved = AttackResult.load(path)
            if saved.extra.get("audit_key") == attack_key(name):
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
