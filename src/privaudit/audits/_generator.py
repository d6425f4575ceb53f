"""``audit_generator``: membership inference against a synthetic-data generator.

TAPAS's game, on the audit spine: the generator is trained many times on training sets
drawn from auxiliary data (:class:`~privaudit.training.GeneratorRuns`), each target in
half of them; attacks learn from one set of runs (the training runs) and are scored on
fresh runs made with another seed (the test runs), so no attack is scored on a table it
learned from. One :class:`~privaudit.results.AttackResult` per target record and attack:
its records are the test runs (label 1 = the target was in that run's training set), its
``generator`` the generator's name, its ``target`` the target record, as TAPAS's reports
disaggregate them. A generator's differential-privacy claim (``claimed_epsilon``) is
kept with every result, for the report to put the largest effective-epsilon lower bound
over its targets and attacks (Bonferroni-corrected for taking that maximum) beside it.

Targets are the records most exposed, by default: those farthest from their nearest
neighbours in the auxiliary data (Meeus et al.'s "Achilles' heels"), or the user's.

References
----------
.. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for Adversarial
   Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
.. [2] Meeus, M., Guepin, F., Cretu, A.-M. and de Montjoye, Y.-A. "Achilles' Heels:
   Vulnerable Record Identification in Synthetic Data Publishing." ESORICS 2023.
.. [3] Stadler, T., Oprisanu, B. and Troncoso, C. "Synthetic Data -- Anonymisation
   Groundhog Day." USENIX Security 2022.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit._validation import check_fraction, check_int, param_error
from privaudit.audits._baselines import RandomGuessBaseline
from privaudit.audits._plan import named_attacks
from privaudit.audits._run import AuditRun

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["DEFAULT_GENERATOR_ATTACKS", "audit_generator", "model_free_guesses",
           "vulnerable_records"]

_FUNC = "audit_generator"
#: Attacks run when ``attacks`` is None.
DEFAULT_GENERATOR_ATTACKS = ("groundhog", "closest-distance", "local-neighbourhood", "domias")
#: Targets chosen when neither ``targets`` nor ``n_targets`` is given.
_DEFAULT_TARGETS = 5


def vulnerable_records(data: pd.DataFrame, n_records: int, *, n_neighbors: int = 5,
                       executor: Any = None, n_jobs: int | None = None) -> np.ndarray:
    """Positions of the ``n_records`` rows farthest from their nearest neighbours.

    A row's vulnerability is its mean Gower distance to its ``n_neighbors`` nearest other
    rows (Meeus et al. 2023): an outlier's presence changes what a generator learns, so
    it is the record to attack first. Most vulnerable first; ties to the lower position.

    References
    ----------
    .. [1] Meeus, M., Guepin, F., Cretu, A.-M. and de Montjoye, Y.-A. "Achilles' Heels:
       Vulnerable Record Identification in Synthetic Data Publishing." ESORICS 2023.
    """
    from privaudit.synthetic import TableMetadata, nearest_neighbors

    k = min(int(n_neighbors), len(data) - 1)
    distances, _ = nearest_neighbors(data, data, n_neighbors=k, exclude_self=True,
                                     categorical=TableMetadata.infer(data).categorical,
                                     executor=executor, n_jobs=n_jobs)
    score = distances.mean(axis=1)
    return np.argsort(-score, kind="stable")[:n_records]


@dataclass
class _Setup:
    """The audit's inputs, checked: the tables and the sizes of the game."""

    pool: pd.DataFrame            # auxiliary rows training sets are drawn from
    reference: pd.DataFrame       # auxiliary rows never in a training set (DOMIAS)
    targets: pd.DataFrame
    target_names: list[str]
    n_train_rows: int
    n_synthetic_rows: int
    secret: _Secret | None = None


@dataclass
class _Secret:
    """Attribute inference: the secret column, its two values, each target's alternative."""

    column: str
    values: tuple[Any, Any]       # (the alternative's value, the value of label 1)
    alternatives: pd.DataFrame    # each target with values[0]


def _check_secret(secret: Any, secret_values: Any, setup: _Setup,
                  auxiliary_data: pd.DataFrame) -> None:
    """Set up TAPAS's binary attribute inference on ``setup`` (targets get ``values[1]``).

    Both values must occur in the secret column of ``auxiliary_data``: a value found
    nowhere (a typo, ``"1"`` for ``1``) would make every alternative a record the
    population never holds.
    """
    if secret is None:
        if secret_values is not None:
            raise param_error("secret_values", _FUNC, "None unless 'secret' is given",
                              secret_values)
        return
    if secret not in setup.pool.columns:
        raise param_error("secret", _FUNC, f"a column of auxiliary_data "
                          f"{list(setup.pool.columns)[:8]}", secret)
    if secret_values is None:
        secret_values = _two_frequent_values(setup.pool[secret], secret)
    values = list(dict.fromkeys(secret_values))
    if len(values) != 2 or len(list(secret_values)) != 2:
        raise param_error("secret_values", _FUNC, "two distinct values of the secret column "
                          "(TAPAS's binary attribute inference)", secret_values)
    column = auxiliary_data[secret]
    absent = [v for v in values if not column.isin([v]).any()]
    if absent:
        raise param_error("secret_values", _FUNC, f"values found in the column {secret!r} "
                          f"of auxiliary_data (absent: {absent!r}; its most frequent: "
                          f"{list(column.value_counts().index[:5])!r})", secret_values)
    targets, alternatives = setup.targets.copy(), setup.targets.copy()
    targets[secret], alternatives[secret] = values[1], values[0]
    setup.targets = targets
    setup.secret = _Secret(secret, (values[0], values[1]), alternatives)


#: A secret column guessed from (no ``secret_values``) has at most this many values...
_MAX_SECRET_VALUES = 20
#: ... or its two most frequent values each hold at least this share of its rows.
_MIN_SECRET_SHARE = 0.05


def _two_frequent_values(column: pd.Series, secret: str) -> list[Any]:
    """The column's two most frequent values, refused when they are not frequent.

    A continuous column's two "most frequent" values occur once each: guessing between
    them is a game on two arbitrary records, not on the column.
    """
    counts = column.value_counts()
    shares = counts.to_numpy()[:2] / max(len(column), 1)
    if len(counts) > _MAX_SECRET_VALUES and (len(shares) < 2 or shares.min() < _MIN_SECRET_SHARE):
        raise param_error("secret", _FUNC, f"a column of few values, or given with "
                          f"'secret_values': {secret!r} has {len(counts)} distinct values "
                          f"and its two most frequent are not frequent (give the two "
                          f"values to tell apart in 'secret_values')", secret)
    return list(counts.index[:2])


def model_free_guesses(pool: pd.DataFrame, targets: pd.DataFrame, secret: str,
                       values: tuple[Any, Any], random_state: int) -> dict[str, Any]:
    """What an attacker guesses about each target's secret without the synthetic data.

    Two guesses, as Yeom et al.'s model-free baselines: the more frequent of the two values
    in the auxiliary data (the prior), and a random forest reading the target's other
    attributes, trained on the auxiliary records holding one of the two values. Both are
    fixed per target, so on runs where the secret is drawn uniformly from the two values
    they are right about half the time: any attack above that reads the synthetic data.

    Returns
    -------
    dict
        ``{"prior": value, "known_attributes": [one value per target]}``.
    """
    import pandas as pd
    from sklearn.ensemble import RandomForestClassifier

    rows = pool[pool[secret].isin(list(values))]
    prior = rows[secret].value_counts().index[0] if len(rows) else values[1]
    known = [c for c in pool.columns if c != secret]
    if rows[secret].nunique() < 2 or not known:
        return {"prior": prior, "known_attributes": [prior] * len(targets)}
    both = pd.get_dummies(pd.concat([rows[known], targets[known]], ignore_index=True),
                          dummy_na=True).astype(np.float64).fillna(-1.0)
    model = RandomForestClassifier(n_estimators=100, min_samples_leaf=5,
                                   random_state=random_state)
    model.fit(both.iloc[:len(rows)], (rows[secret] == values[1]).to_numpy())
    guesses = model.predict(both.iloc[len(rows):])
    return {"prior": prior, "known_attributes": [values[int(g)] for g in guesses]}


def _split(auxiliary_data: pd.DataFrame, targets: Any, n_targets: int,
           reference_fraction: float, rng: np.random.Generator,
           exec_args: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame,
                                                list[str]]:
    """Targets out of the auxiliary data, then a reference part out of the rest."""
    import pandas as pd

    aux = auxiliary_data.reset_index(drop=True)
    if isinstance(targets, pd.DataFrame):
        chosen, frame = np.empty(0, dtype=np.int64), targets.reset_index(drop=True)
        names = [f"target {i}" for i in range(len(frame))]
        repeated = np.flatnonzero(frame.duplicated(keep="first").to_numpy()).tolist()
        if repeated:
            raise param_error("targets", _FUNC, "distinct target records (the rows at "
                              f"positions {repeated[:10]} repeat an earlier one)",
                              f"<DataFrame of {len(frame)} rows>")
    else:
        if targets is None:
            chosen = vulnerable_records(aux, n_targets, **exec_args)
        else:
            chosen = _target_positions(targets, len(aux))
        frame = aux.iloc[chosen].reset_index(drop=True)
        names = [f"record {int(i)}" for i in chosen]
    rest = aux.drop(index=chosen).reset_index(drop=True)
    n_reference = round(reference_fraction * len(rest))
    order = rng.permutation(len(rest))
    reference = rest.iloc[np.sort(order[:n_reference])].reset_index(drop=True)
    pool = rest.iloc[np.sort(order[n_reference:])].reset_index(drop=True)
    return pool, reference, frame, names


def _target_positions(targets: Any, n_rows: int) -> np.ndarray:
    """Row positions of the targets: distinct integers in ``[0, n_rows)``."""
    chosen = np.asarray(targets)
    if chosen.ndim != 1 or chosen.dtype.kind not in "iu" or chosen.size == 0 or (
            chosen.min() < 0 or chosen.max() >= n_rows):
        raise param_error("targets", _FUNC, "a DataFrame of target records or row "
                          f"positions in auxiliary_data (0..{n_rows - 1})", targets)
    values, counts = np.unique(chosen, return_counts=True)
    if (counts > 1).any():
        raise param_error("targets", _FUNC, "distinct row positions (repeated: "
                          f"{values[counts > 1].tolist()[:10]})", targets)
    return chosen


def _check_setup(auxiliary_data: Any, targets: Any, n_targets: Any, n_train_rows: Any,
                 n_synthetic_rows: Any, reference_fraction: Any, rng: np.random.Generator,
                 exec_args: dict[str, Any]) -> _Setup:
    import pandas as pd

    if not isinstance(auxiliary_data, pd.DataFrame) or len(auxiliary_data) < 4:
        raise param_error("auxiliary_data", _FUNC, "a pandas DataFrame of several records",
                          f"<{type(auxiliary_data).__name__}>", error=TypeError)
    if targets is not None and n_targets is not None:
        raise param_error("n_targets", _FUNC, "None when 'targets' is given (the targets "
                          "are then the records given)", n_targets)
    n_targets = check_int(_DEFAULT_TARGETS if n_targets is None else n_targets,
                          param="n_targets", func=_FUNC, low=1)
    fraction = check_fraction(reference_fraction, param="reference_fraction", func=_FUNC,
                              low_inclusive=True)
    pool, reference, frame, names = _split(auxiliary_data, targets, n_targets, fraction, rng,
                                           exec_args)
    default_rows = max(len(frame), len(pool) // 4)
    n_train = check_int(default_rows if n_train_rows is None else n_train_rows,
                        param="n_train_rows", func=_FUNC, low=1)
    n_synthetic = check_int(n_train if n_synthetic_rows is None else n_synthetic_rows,
                            param="n_synthetic_rows", func=_FUNC, low=1)
    return _Setup(pool, reference, frame, names, n_train, n_synthetic)


def _generator_name(generator: Any, name: str | None) -> str:
    if name is not None:
        if not isinstance(name, str) or not name:
            raise param_error("name", _FUNC, "a non-empty string", name, error=TypeError)
        return name
    if isinstance(generator, str):
        return generator
    return getattr(generator, "__name__", None) or getattr(
        getattr(generator, "func", None), "__name__", None) or type(generator).__name__


def _resolve_generator(generator: Any, generator_params: dict[str, Any],
                       public: pd.DataFrame) -> Any:
    """The generator the shadow runs call.

    A built-in name becomes its generator ("dp-bayes" gets the public domain); an SDV
    synthesizer object becomes the equivalent seeded :func:`sdv_generator`.
    """
    from privaudit.synthetic import TableDomain, builtin_generator, from_sdv_synthesizer

    if not isinstance(generator, str):
        if generator_params:
            raise param_error("generator_params", _FUNC, "empty unless 'generator' is a "
                              "built-in name", generator_params)
        return from_sdv_synthesizer(generator) or generator
    params = dict(generator_params)
    _check_builtin_params(generator, params)
    if generator == "dp-bayes" and "domain" not in params:
        params["domain"] = TableDomain.from_frame(public, bins=params.pop("bins", 10))
    return builtin_generator(generator, **params)


def _check_builtin_params(name: str, params: dict[str, Any]) -> None:
    """Refuse a parameter the built-in generator ``name`` does not take.

    Bound by ``functools.partial``, it would fail late, in every worker, or (``domain``
    given to another generator than ``"dp-bayes"``) be ignored.
    """
    import inspect

    from privaudit.synthetic import (
        BUILTIN_GENERATORS,
        DPBayesianNetwork,
        builtin_generator,
        copying_generator,
        gaussian_copula,
        independent_marginals,
    )

    if name not in BUILTIN_GENERATORS:
        raise param_error("generator", _FUNC, f"a callable or one of "
                          f"{list(BUILTIN_GENERATORS)}", name)
    function = {"independent-marginals": independent_marginals,
                "gaussian-copula": gaussian_copula, "copying": copying_generator,
                "dp-bayes": DPBayesianNetwork}[name]
    taken = sorted(set(inspect.signature(function).parameters) - {
        "self", "frame", "n_rows", "random_state"})
    unknown = sorted(set(params) - set(taken))
    if unknown:
        raise param_error("generator_params", _FUNC, f"parameters of the built-in "
                          f"generator {name!r} (among {taken}); unknown: {unknown}", params)
    builtin_generator(name, **params)  # its own checks of the values, before any work


def _check_attacks(attacks: Any, attack_params: Any) -> list[tuple[str, Any]]:
    """(name, attack) pairs; ``attack_params`` through the one check of every audit.

    :func:`~privaudit._validation.check_attack_params`: keys of requested attacks (the
    parameters of an attack that does not run would be ignored), each attack's own
    parameters, values it accepts. Attacks given as objects keep their own parameters.
    """
    from privaudit._validation import check_attack_params
    from privaudit.attacks.generator import GENERATOR_ATTACKS, GeneratorAttack

    items = DEFAULT_GENERATOR_ATTACKS if attacks is None else attacks
    by_name = [i for i in ([items] if isinstance(items, str) else items)
               if isinstance(i, str) and i in GENERATOR_ATTACKS]
    check_attack_params(by_name, attack_params, GENERATOR_ATTACKS.__getitem__, func=_FUNC)
    return named_attacks(attacks, attack_params, registry=GENERATOR_ATTACKS,
                         base=GeneratorAttack, default=DEFAULT_GENERATOR_ATTACKS,
                         func=_FUNC)


def _check_epsilon(claimed_epsilon: Any) -> float | None:
    if claimed_epsilon is None:
        return None
    if isinstance(claimed_epsilon, bool) or not isinstance(claimed_epsilon, numbers.Real) or (
            not math.isfinite(claimed_epsilon) or claimed_epsilon <= 0):
        raise param_error("claimed_epsilon", _FUNC, "None or a finite number > 0",
                          claimed_epsilon)
    return float(claimed_epsilon)


def audit_generator(
    generator: Any,
    auxiliary_data: pd.DataFrame,
    *,
    targets: Any = None,
    n_targets: int | None = None,
    n_train_rows: int | None = None,
    n_synthetic_rows: int | None = None,
    n_shadow_runs: int = 100,
    n_test_runs: int = 100,
    knowledge: str = "auxiliary",
    attacks: Sequence[Any] | None = None,
    attack_params: dict[str, dict[str, Any]] | None = None,
    generator_params: dict[str, Any] | None = None,
    reference_fraction: float = 0.2,
    secret: str | None = None,
    secret_values: Sequence[Any] | None = None,
    claimed_epsilon: float | None = None,
    name: str | None = None,
    dataset: str = "",
    random_state: int = 0,
    executor: Any = "local",
    n_jobs: int | None = None,
    cache_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    progress: Any = None,
) -> list[Any]:
    """Audit a synthetic-data generator: does its output tell which records trained it.

    Parameters
    ----------
    generator : callable, object with ``fit`` and ``sample`` or ``generate``, or str
        ``generator(train, n_rows, random_state=seed) -> DataFrame``, an SDV-style
        (``fit(df)``/``sample(n)``) or TAPAS-style (``fit(df)``/``generate(n,
        random_state=seed)``) object, copied afresh per run (see
        :class:`~privaudit.training.GeneratorRecipe`), or a built-in name of
        :data:`~privaudit.synthetic.BUILTIN_GENERATORS` (with ``generator_params``;
        ``"dp-bayes"`` gets the auxiliary data's domain as its public domain).
    auxiliary_data : pandas.DataFrame
        Records from the population the generator's training data comes from: the
        attacker's knowledge. Split into targets (when ``targets`` is not a table), a
        reference part (``reference_fraction``, never trained on: the density attack's
        population) and the pool training sets are drawn from.
    targets : DataFrame, array of int or None
        The target records, as a table or as row positions in ``auxiliary_data``;
        default: the ``n_targets`` most vulnerable rows (:func:`vulnerable_records`).
    n_targets : int, optional
        Targets chosen when ``targets`` is None (default 5); refused with ``targets``.
    n_train_rows : int, optional
        Rows of every training set, the real generator's (default: a quarter of the pool).
    n_synthetic_rows : int, optional
        Rows of every synthetic table (default ``n_train_rows``).
    n_shadow_runs, n_test_runs : int, default=100
        Runs the attacks learn from, and fresh runs they are scored on (even numbers).
        The effective-epsilon bound needs many test runs to be non-trivial.
    knowledge : {"auxiliary", "exact"}
        What the attacker knows of the rest of the training set (see
        :class:`~privaudit.training.GeneratorRuns`).
    attacks : sequence of str or GeneratorAttack, optional
        Default :data:`DEFAULT_GENERATOR_ATTACKS`.
    attack_params : dict, optional
        Per attack name, constructor parameters.
    generator_params : dict, optional
        Parameters of a built-in generator (``{"epsilon": 1.0}``).
    reference_fraction : float, default=0.2
        Share of the auxiliary data kept out of every training set.
    secret : str, optional
        Attribute inference instead of membership (TAPAS's ``TargetedAIA``): every
        training set holds each target, with one of two values of this column drawn per
        run; the attacks guess which. Results are of kind ``"attribute"`` (label 1 = the
        second value), with the model-free guesses (:func:`model_free_guesses`) beside.
    secret_values : sequence of two values, optional
        The two values (default: the column's two most frequent in the auxiliary data).
    claimed_epsilon : float, optional
        The generator's differential-privacy claim, stored with every result for the
        report to test: the largest effective-epsilon lower bound over targets x
        attacks, each at the Bonferroni level ``1 - alpha / m`` so that a true claim is
        refuted with probability at most ``alpha``
        (:func:`privaudit.report._sections_generator.claim_checks`).
    name : str, optional
        The generator's name in results (default: the built-in name or the function's).
    dataset : str
        The data's name, for provenance.
    random_state : int, default=0
        Seeds everything: the split, the runs, the attacks.
    executor, n_jobs
        Where generator runs execute (local processes or Ray).
    cache_dir : path, optional
        Every synthetic table is written there as it finishes; a rerun resumes. This is
        how the game's tables are given back: every result names the two cache folders
        (``result.extra["phases"]["shadow_runs"]["cache"]`` and ``["test_runs"]``), and
        :meth:`GeneratorRuns.from_cache(folder)
        <privaudit.training.GeneratorRuns.from_cache>` reads their tables and in/out
        masks back. Without it the tables are not kept (make them with
        :class:`~privaudit.training.GeneratorRuns` to hold them in memory).
    results_dir : path, optional
        Every finished result is saved there, once, in a folder named by its target and
        ``<generator>--<attack>`` (several generators share one ``results_dir``), and
        reused by a rerun. When it is ``<out>/results`` of a report, build the report
        with ``build_report(..., save_results=False)`` (as ``privaudit audit generator``
        does) so the results are not filed a second time.
    progress : None, callable(str) or Progress
        Progress messages and bars.

    Returns
    -------
    list of AttackResult
        One per target and attack, attack by attack. ``extra["phases"]`` records what
        each phase took: ``shadow_runs`` and ``test_runs`` (wall ``seconds``, the
        generator's own ``generator_seconds`` summed over runs, tables ``made`` by this
        call rather than read from the cache, the ``cache`` folder) and ``attack`` (the
        wall seconds of the attack's fit and scoring, shared by its ``n_targets``
        results).
    """
    import pandas as pd

    from privaudit.training import GeneratorRuns

    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise param_error("random_state", _FUNC, "an integer", random_state, error=TypeError)
    if isinstance(generator, str):
        _check_builtin_params(generator, dict(generator_params or {}))
    seeds = np.random.SeedSequence(int(random_state)).spawn(3)
    exec_args = {"executor": executor, "n_jobs": n_jobs}
    setup = _check_setup(auxiliary_data, targets, n_targets, n_train_rows, n_synthetic_rows,
                         reference_fraction, np.random.default_rng(seeds[0]), exec_args)
    _check_secret(secret, secret_values, setup, auxiliary_data)
    plan = _check_attacks(attacks, attack_params)
    epsilon = _check_epsilon(claimed_epsilon)
    if not isinstance(dataset, str):
        raise param_error("dataset", _FUNC, "a str", dataset, error=TypeError)
    public = pd.concat([auxiliary_data, setup.targets, *(
        [] if setup.secret is None else [setup.secret.alternatives])], ignore_index=True)
    resolved = _resolve_generator(generator, dict(generator_params or {}), public)
    label = _generator_name(generator if isinstance(generator, str) else resolved, name)
    runs = {part: GeneratorRuns(resolved, setup.pool, setup.targets, n_runs=n,
                                n_train_rows=setup.n_train_rows,
                                n_synthetic_rows=setup.n_synthetic_rows, knowledge=knowledge,
                                random_state=int(seeds[i + 1].generate_state(1)[0]),
                                executor=executor, n_jobs=n_jobs, cache_dir=cache_dir,
                                alternatives=None if setup.secret is None
                                else setup.secret.alternatives)
            for i, (part, n) in enumerate((("train", n_shadow_runs), ("test", n_test_runs)))}
    game = _Game(setup, runs, label, dataset, epsilon, int(random_state), results_dir,
                 progress)
    return game.play(plan)


class _Game:
    """Runs the attacks of one audit, reusing finished results, target by target."""

    def __init__(self, setup: _Setup, runs: dict[str, Any], generator: str, dataset: str,
                 epsilon: float | None, random_state: int, results_dir: Any,
                 progress: Any) -> None:
        from privaudit.results import ResultsStore
        from privaudit.training import data_fingerprint

        self.setup, self.runs, self.generator = setup, runs, generator
        self.epsilon, self.progress, self.random_state = epsilon, progress, random_state
        identity = (_FUNC, generator, _recipe_print(runs["train"]),
                    data_fingerprint(setup.pool),
                    data_fingerprint(setup.reference), setup.n_train_rows,
                    setup.n_synthetic_rows, runs["train"].knowledge,
                    runs["train"].n_runs, runs["test"].n_runs, random_state,
                    None if setup.secret is None else (
                        setup.secret.column, repr(setup.secret.values)))
        store = None if results_dir is None else ResultsStore(results_dir)
        self.audits = [AuditRun(func=_FUNC, target_name=target, random_state=random_state,
                                identity=(*identity, data_fingerprint(setup.targets.iloc[[i]])),
                                store=store, baseline=RandomGuessBaseline(),
                                progress=progress, dataset=dataset, kind="generator")
                       for i, target in enumerate(setup.target_names)]

    def _key(self, attack: str) -> str:
        secret = self.setup.secret
        return f"{self.generator}--{attack}" + ("" if secret is None else
                                                f"--secret-{secret.column}")

    def play(self, plan: list[tuple[str, Any]]) -> list[Any]:
        out: list[Any] = []
        played = False
        for attack_name, attack in plan:
            parts = (attack.get_params(deep=False).__repr__(),)
            saved = [run.reuse(self._key(attack_name), parts, _labels_of(self, t))
                     for t, run in enumerate(self.audits)]
            if all(r is not None for r in saved):
                out += saved
                continue
            if not played:
                self._play_runs()
                played = True
            out += self._attack(attack_name, attack, parts, saved)
        return out

    def _play_runs(self) -> None:
        """Make (or read back from the cache) the shadow and the test runs, timed."""
        self.phases: dict[str, Any] = {}
        for part, label in (("train", "shadow_runs"), ("test", "test_runs")):
            start = time.perf_counter()
            runs = self.runs[part].run(progress=self.progress)
            self.phases[label] = {
                "seconds": time.perf_counter() - start,
                "generator_seconds": float(np.nansum(runs.run_seconds_)),
                "made": int(runs.n_made_), "n_runs": int(runs.n_runs),
                "cache": None if runs.cache_path_ is None else str(runs.cache_path_)}

    def _attack(self, attack_name: str, attack: Any, parts: tuple,
                saved: list[Any]) -> list[Any]:
        from privaudit.results import AttackResult

        train, test = self.runs["train"], self.runs["test"]
        self.audits[0].say(f"{attack_name}: learning from {train.n_runs} shadow runs")
        self.audits[0].seed(attack)
        secret = self.setup.secret
        start = time.perf_counter()
        attack.fit(list(train.synthetic_), train.in_mask_, self.setup.targets,
                   auxiliary_data=self.setup.pool, reference_data=self.setup.reference,
                   alternatives=None if secret is None else secret.alternatives)
        scores = attack.score(list(test.synthetic_))
        timing = {**self.phases, "attack": {"seconds": time.perf_counter() - start,
                                            "n_targets": len(self.audits)}}
        guesses = scores >= attack.thresholds_[None, :]
        details = self._secret_details(test.in_mask_)
        out = []
        for t, run in enumerate(self.audits):
            if saved[t] is not None:
                out.append(saved[t])
                continue
            result = AttackResult(
                labels=test.in_mask_[:, t], scores=scores[:, t],
                predictions=guesses[:, t], record_ids=np.arange(test.n_runs),
                attack=attack_name, target=self.setup.target_names[t],
                generator=self.generator,
                kind="membership" if secret is None else "attribute",
                parameters={**_jsonable(attack.get_params(deep=False)),
                            **self._game_parameters(), **details["parameters"]},
                extra={"threshold": float(attack.thresholds_[t]),
                       "target_record": _jsonable(self.setup.targets.iloc[t].to_dict()),
                       "phases": timing,
                       **({"model_free": details["model_free"][t]} if secret else {})})
            out.append(run.finish(self._key(attack_name), parts, result))
        return out

    def _game_parameters(self) -> dict[str, Any]:
        train, test = self.runs["train"], self.runs["test"]
        return {"claimed_epsilon": self.epsilon, "n_train_rows": self.setup.n_train_rows,
                "n_synthetic_rows": self.setup.n_synthetic_rows,
                "knowledge": train.knowledge, "n_shadow_runs": train.n_runs,
                "n_test_runs": test.n_runs}

    def _secret_details(self, in_mask: np.ndarray) -> dict[str, Any]:
        """Attribute inference: the secret's names and the model-free guesses' accuracy."""
        secret = self.setup.secret
        if secret is None:
            return {"parameters": {}, "model_free": []}
        guesses = model_free_guesses(self.setup.pool, self.setup.targets, secret.column,
                                     secret.values, self.random_state)
        model_free = []
        for t in range(in_mask.shape[1]):
            truth = in_mask[:, t]  # True: the run's target had values[1]
            entry = {}
            for name, guess in (("prior", guesses["prior"]),
                                ("known_attributes", guesses["known_attributes"][t])):
                said = guess == secret.values[1]
                entry[name] = {"guess": _jsonable({"v": guess})["v"],
                               "accuracy": float(np.mean(truth == said))}
            model_free.append(entry)
        return {"parameters": {"sensitive_attribute": secret.column, "secret_values": [
            _jsonable({"v": v})["v"] for v in secret.values]}, "model_free": model_free}


def _labels_of(game: _Game, t: int) -> Any:
    """A saved result is consistent when it has one record per test run."""
    return lambda saved: len(saved.labels) == game.runs["test"].n_runs


def _recipe_print(runs: Any) -> str:
    from privaudit.training import GeneratorRecipe

    generator = runs.generator
    recipe = generator if isinstance(generator, GeneratorRecipe) else GeneratorRecipe(
        generator, 1)
    return recipe.fingerprint()


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    """Values as JSON can hold them: numbers and strings as they are, the rest as repr."""
    out = {}
    for key, value in values.items():
        if isinstance(value, (np.generic,)):
            value = value.item()
        if value is None or isinstance(value, (bool, int, float, str)):
            out[str(key)] = None if isinstance(value, float) and not math.isfinite(
                value) else value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            out[str(key)] = list(value)
        else:
            out[str(key)] = repr(value)
    return out
