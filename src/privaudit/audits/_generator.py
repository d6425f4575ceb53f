"""``audit_generator``: membership inference against a synthetic-data generator.

TAPAS's game, on the audit template: the generator (the audited ``target``) is trained
many times on training sets drawn from auxiliary data
(:class:`~privaudit.training.GeneratorRuns`), each target record in half of them; attacks
learn from one set of runs (the shadow runs, ``reference=ReferenceSpec(n_models=...)``)
and are scored on fresh runs made with another seed (the test runs), so no attack is
scored on a table it learned from. One :class:`~privaudit.results.AttackResult` per
target record and attack: its records are the test runs (label 1 = the target was in that
run's training set), its ``generator`` the generator's name, its ``target`` the target
record, as TAPAS's reports disaggregate them. A generator's differential-privacy claim
(``claimed_epsilon``) is kept with every result, for the report to put the largest
effective-epsilon lower bound over its targets and attacks (Bonferroni-corrected for
taking that maximum) beside it.

Targets are the records most exposed, by default: those farthest from their nearest
neighbours in the auxiliary data (Meeus et al.'s "Achilles' heels"), or the user's.

:class:`GeneratorAudit` is the kind and :func:`~privaudit.audits._template.drive` its
loop. Its results are filed per target record from work every target shares (the runs,
one fit per attack): :class:`TargetRuns` routes each planned job to its target's
:class:`~privaudit.audits.AuditRun` (a template extension, see its docstring).

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
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import (
    MAPPING,
    NONE,
    ChoiceRule,
    IntRule,
    PredicateRule,
    RealRule,
    canonical_names,
    check_declared,
    param_error,
    renamed,
)
from privaudit.audits._inputs import reference_fields_set, reference_spec
from privaudit.audits._plan import named_attacks
from privaudit.audits._run import AuditRun
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from privaudit._progress import Progress
    from privaudit.attacks.generator import GeneratorAttack
    from privaudit.report import AuditReport
    from privaudit.results import AttackResult
    from privaudit.training import Executor, GeneratorRuns, ReferenceSpec

__all__ = ["DEFAULT_GENERATOR_ATTACKS", "DEFAULT_SHADOW_RUNS", "EVEN_RUNS", "GeneratorAudit",
           "GeneratorSettings", "TargetRuns", "audit_generator", "model_free_guesses",
           "vulnerable_records"]

_FUNC = "audit_generator"
#: Attacks run when ``attacks`` is None.
DEFAULT_GENERATOR_ATTACKS = ("groundhog", "closest-distance", "local-neighbourhood", "domias")
#: Targets chosen when neither ``targets`` nor ``n_targets`` is given.
_DEFAULT_TARGETS = 5
#: Shadow runs when ``reference`` is not given (TAPAS's default game).
DEFAULT_SHADOW_RUNS = 100


@dataclass(frozen=True)
class _EvenCount(IntRule):
    """A count of runs: even, since each target is in exactly half of them (TAPAS)."""

    @property
    def expected(self) -> str:
        return f"an even integer >= {self.low} (each target in half the runs)"

    def ok(self, value: Any) -> bool:
        return super().ok(value) and int(value) % 2 == 0


#: The rule of every count of generator runs (API and configuration alike).
EVEN_RUNS = _EvenCount(low=2)


def vulnerable_records(data: pd.DataFrame, n_records: int, *, n_neighbors: int = 5,
                       executor: str | Executor | None = None,
                       n_jobs: int | None = None) -> np.ndarray:
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


# --- settings ------------------------------------------------------------------------------

def _is_reference_spec(value: Any) -> bool:
    from privaudit.training import ReferenceSpec

    return isinstance(value, ReferenceSpec)


def _is_attack_list(value: Any) -> bool:
    """A name, or a non-empty sequence of names and attack objects (checked by name later)."""
    return isinstance(value, str) or (isinstance(value, Sequence) and len(value) > 0)


def _is_values(value: Any) -> bool:
    """A sized collection of values, not a str (whose letters would be the values)."""
    return not isinstance(value, (str, bytes, Mapping)) and hasattr(value, "__len__") and (
        hasattr(value, "__iter__"))


def _non_empty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


@dataclass(frozen=True)
class GeneratorSettings(AuditSettings):
    """What a generator audit does (TAPAS's game), checked before any generator runs.

    ``reference`` counts the shadow runs the attacks learn from (``n_models``, even: each
    target in half of them); the game fixes the rest (the shadow generator is the audited
    one, trained on ``n_train_rows`` rows), so its ``recipe``, ``train_fraction`` and
    ``to_target`` stay unset and its ``mode`` is ``"auto"`` or ``"online"``. The data (the
    generator, the auxiliary data, given targets) is the audit's, not the settings'.
    """

    reference: ReferenceSpec
    n_test_runs: int = 100
    n_targets: int | None = None
    n_train_rows: int | None = None
    n_synthetic_rows: int | None = None
    knowledge: str = "auxiliary"
    reserved_fraction: float = 0.2
    attacks: str | Sequence[str | GeneratorAttack] | None = None
    attack_params: Mapping[str, Mapping[str, Any]] | None = None
    generator_params: Mapping[str, Any] | None = None
    sensitive: Hashable | None = None
    candidates: Sequence[Any] | None = None
    claimed_epsilon: float | None = None
    name: str | None = None

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "reference": [PredicateRule(_is_reference_spec, "a privaudit.training.ReferenceSpec")],
        "n_test_runs": [EVEN_RUNS],
        "n_targets": [NONE, IntRule(low=1)],
        "n_train_rows": [NONE, IntRule(low=1)],
        "n_synthetic_rows": [NONE, IntRule(low=1)],
        # GeneratorRuns' KNOWLEDGE (privaudit.training is not imported with privaudit).
        "knowledge": [ChoiceRule(("auxiliary", "exact"))],
        "reserved_fraction": [RealRule(0.0, 1.0, closed="left")],
        "attacks": [NONE, PredicateRule(_is_attack_list, "a non-empty list of attack names "
                                        "or GeneratorAttack objects")],
        "attack_params": [NONE, MAPPING],
        "generator_params": [NONE, MAPPING],
        "sensitive": [NONE, PredicateRule(lambda v: isinstance(v, Hashable)
                                          and not isinstance(v, bool), "a column name")],
        "candidates": [NONE, PredicateRule(_is_values, "a list of two values")],
        "claimed_epsilon": [NONE, RealRule(0.0, math.inf)],
        "name": [NONE, PredicateRule(_non_empty_str, "a non-empty string")],
    }
    #: Each job's key holds its own attack's parameters (the attack object's
    #: ``get_params``), so adding an attack or changing another's parameters reuses the
    #: saved results of the rest.
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({"attacks", "attack_params"})

    def check(self, func: str) -> None:
        """The declared rules, then two that join fields.

        ``candidates`` only with a ``sensitive`` column; of ``reference`` the game reads
        its count only.
        """
        super().check(func)
        if self.candidates is not None and self.sensitive is None:
            raise param_error("candidates", func, "None unless 'sensitive' is given",
                              self.candidates)
        spec = self.reference
        if (not EVEN_RUNS.ok(spec.n_models) or spec.mode not in ("auto", "online")
                or reference_fields_set(spec, besides=("n_models", "mode"))):
            raise param_error("reference", func, "a ReferenceSpec with an even n_models >= 2 "
                              "and nothing else but mode 'auto' or 'online' (the shadow runs "
                              "train the audited generator on 'n_train_rows' rows, each "
                              "target in half of them)", spec)

    def key_value(self, name: str, value: Any) -> Any:
        if name == "reference":  # the only field the game reads
            return int(value.n_models)
        return super().key_value(name, value)


# --- the game's inputs, checked -------------------------------------------------------------

@dataclass
class _Secret:
    """Attribute inference: the sensitive column, its two values, each target's alternative."""

    column: Hashable
    values: tuple[Any, Any]       # (the alternative's value, the value of label 1)
    alternatives: pd.DataFrame    # each target with values[0]


@dataclass
class _Setup:
    """The audit's inputs, checked: the tables and the sizes of the game."""

    pool: pd.DataFrame            # auxiliary rows training sets are drawn from
    reserved: pd.DataFrame        # auxiliary rows never in a training set (DOMIAS)
    targets: pd.DataFrame
    target_names: list[str]
    n_train_rows: int
    n_synthetic_rows: int
    secret: _Secret | None = None


def _check_secret(sensitive: Hashable | None, candidates: Sequence[Any] | None,
                  setup: _Setup, auxiliary_data: pd.DataFrame) -> None:
    """Set up TAPAS's binary attribute inference on ``setup`` (targets get ``values[1]``).

    Both values must occur in the sensitive column of ``auxiliary_data``: a value found
    nowhere (a typo, ``"1"`` for ``1``) would make every alternative a record the
    population never holds.
    """
    if sensitive is None:
        return
    if candidates is None:
        candidates = _two_frequent_values(setup.pool[sensitive], sensitive)
    values = list(dict.fromkeys(candidates))
    if len(values) != 2 or len(list(candidates)) != 2:
        raise param_error("candidates", _FUNC, "two distinct values of the sensitive column "
                          "(TAPAS's binary attribute inference)", candidates)
    column = auxiliary_data[sensitive]
    absent = [v for v in values if not column.isin([v]).any()]
    if absent:
        raise param_error("candidates", _FUNC, f"values found in the column {sensitive!r} "
                          f"of auxiliary_data (absent: {absent!r}; its most frequent: "
                          f"{list(column.value_counts().index[:5])!r})", candidates)
    targets, alternatives = setup.targets.copy(), setup.targets.copy()
    targets[sensitive], alternatives[sensitive] = values[1], values[0]
    setup.targets = targets
    setup.secret = _Secret(sensitive, (values[0], values[1]), alternatives)


#: A sensitive column guessed from (no ``candidates``) has at most this many values...
_MAX_SECRET_VALUES = 20
#: ... or its two most frequent values each hold at least this share of its rows.
_MIN_SECRET_SHARE = 0.05


def _two_frequent_values(column: pd.Series, sensitive: Hashable) -> list[Any]:
    """The column's two most frequent values, refused when they are not frequent.

    A continuous column's two "most frequent" values occur once each: guessing between
    them is a game on two arbitrary records, not on the column.
    """
    counts = column.value_counts()
    if len(counts) < 2:  # chosen for the user: name the column, not 'candidates'
        raise param_error("sensitive", _FUNC, "a column with two values to tell apart "
                          f"(TAPAS's binary attribute inference): {sensitive!r} holds only "
                          f"{list(counts.index)!r} in auxiliary_data", sensitive)
    shares = counts.to_numpy()[:2] / max(len(column), 1)
    if len(counts) > _MAX_SECRET_VALUES and (len(shares) < 2 or shares.min() < _MIN_SECRET_SHARE):
        raise param_error("sensitive", _FUNC, f"a column of few values, or given with "
                          f"'candidates': {sensitive!r} has {len(counts)} distinct values "
                          f"and its two most frequent are not frequent (give the two "
                          f"values to tell apart in 'candidates')", sensitive)
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


def _split(auxiliary_data: pd.DataFrame, targets: pd.DataFrame | Sequence[int] | None,
           n_targets: int, reserved_fraction: float, rng: np.random.Generator,
           scan: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame,
                                          list[str]]:
    """Targets out of the auxiliary data, then the reserved part out of the rest."""
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
            chosen = vulnerable_records(aux, n_targets, **scan)
        else:
            chosen = _target_positions(targets, len(aux))
        frame = aux.iloc[chosen].reset_index(drop=True)
        names = [f"record {int(i)}" for i in chosen]
    rest = aux.drop(index=chosen).reset_index(drop=True)
    n_reserved = round(reserved_fraction * len(rest))
    order = rng.permutation(len(rest))
    reserved = rest.iloc[np.sort(order[:n_reserved])].reset_index(drop=True)
    pool = rest.iloc[np.sort(order[n_reserved:])].reset_index(drop=True)
    return pool, reserved, frame, names


def _target_positions(targets: Sequence[int], n_rows: int) -> np.ndarray:
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


def _check_auxiliary(auxiliary_data: Any, sensitive: Hashable | None) -> None:
    """The auxiliary data: a table of several records, holding the sensitive column."""
    import pandas as pd

    if not isinstance(auxiliary_data, pd.DataFrame) or len(auxiliary_data) < 4:
        raise param_error("auxiliary_data", _FUNC, "a pandas DataFrame of several records",
                          f"<{type(auxiliary_data).__name__}>", error=TypeError)
    if sensitive is not None and sensitive not in auxiliary_data.columns:
        raise param_error("sensitive", _FUNC, f"a column of auxiliary_data "
                          f"{list(auxiliary_data.columns)[:8]}", sensitive)


def _check_setup(auxiliary_data: pd.DataFrame, targets: pd.DataFrame | Sequence[int] | None,
                 settings: GeneratorSettings, rng: np.random.Generator,
                 scan: dict[str, Any]) -> _Setup:
    """The game's tables and sizes: what depends on the data, checked before any run."""
    s = settings
    if targets is not None and s.n_targets is not None:
        raise param_error("n_targets", _FUNC, "None when 'targets' is given (the targets "
                          "are then the records given)", s.n_targets)
    n_targets = _DEFAULT_TARGETS if s.n_targets is None else int(s.n_targets)
    pool, reserved, frame, names = _split(auxiliary_data, targets, n_targets,
                                          float(s.reserved_fraction), rng, scan)
    n_train = max(len(frame), len(pool) // 4) if s.n_train_rows is None else s.n_train_rows
    n_synthetic = n_train if s.n_synthetic_rows is None else s.n_synthetic_rows
    return _Setup(pool, reserved, frame, names, int(n_train), int(n_synthetic))


def _scan_executor(options: RunOptions) -> dict[str, Any]:
    """Where the neighbours scan of :func:`vulnerable_records` runs.

    A local executor as named: :func:`~privaudit.synthetic.nearest_neighbors` starts a
    pool only for a scan large enough to gain from it. Any other: the resolved object.
    """
    if isinstance(options.executor, str) and options.executor == "local":
        return {"executor": "local", "n_jobs": options.n_jobs}
    return {"executor": options.resolved_executor, "n_jobs": None}


def _generator_name(generator: Any, name: str | None) -> str:
    """``name`` (checked by the settings), else the built-in name or the function's."""
    if name is not None:
        return name
    if isinstance(generator, str):
        return generator
    return getattr(generator, "__name__", None) or getattr(
        getattr(generator, "func", None), "__name__", None) or type(generator).__name__


def _resolve_generator(generator: Any, generator_params: Mapping[str, Any],
                       public: pd.DataFrame) -> Any:
    """The generator the shadow runs call.

    A built-in name becomes its generator ("dp-bayes" gets the public domain); an SDV
    synthesizer object becomes the equivalent seeded :func:`sdv_generator`.
    """
    from privaudit.synthetic import TableDomain, builtin_generator, from_sdv_synthesizer

    if not isinstance(generator, str):
        if generator_params:
            raise param_error("generator_params", _FUNC, "empty unless 'target' is a "
                              "built-in name", generator_params)
        return from_sdv_synthesizer(generator) or generator
    params = dict(generator_params)
    _check_builtin_params(generator, params)
    if generator == "dp-bayes" and "domain" not in params:
        params["domain"] = TableDomain.from_frame(public, bins=params.pop("bins", 10))
    return builtin_generator(generator, **params)


def _check_builtin_params(name: str, params: Mapping[str, Any]) -> None:
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
        raise param_error("target", _FUNC, f"a generator (callable or object) or one of "
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


def _check_attacks(attacks: str | Sequence[str | GeneratorAttack] | None,
                   attack_params: Mapping[str, Mapping[str, Any]] | None,
                   ) -> list[tuple[str, GeneratorAttack]]:
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


# --- the template extension: results filed per target record -------------------------------

class TargetRuns:
    """The run :func:`drive` drives when results are filed per target record.

    A template extension (issue 21): :func:`drive` asks one run to reuse and finish every
    planned job, while TAPAS's game files each result under its own target record (each
    with its own key and store folder, as its reports disaggregate them) from work every
    target shares. This holds one :class:`~privaudit.audits.AuditRun` per target, routes
    each job by its name to its target's run and the attack key it is filed under there,
    and counts every job on one progress bar. It has the part of ``AuditRun``'s interface
    that :func:`drive` and the kinds use (``tracking``, ``reuse``, ``finish``, ``enrich``,
    ``say``, ``seed``, ``progress``).

    Parameters
    ----------
    runs : sequence of AuditRun
        One per target, in the targets' order.
    route : mapping
        Job name -> (position of its target in ``runs``, the attack key it is filed under).
    name : str
        What the progress bar names ("<description> on <name>").
    """

    def __init__(self, runs: Sequence[AuditRun], route: Mapping[str, tuple[int, str]],
                 name: str) -> None:
        self.runs, self.route, self.target_name = list(runs), dict(route), name
        self._step: Any = None

    @property
    def progress(self) -> Progress:
        return self.runs[0].progress

    def say(self, message: str) -> None:
        self.runs[0].say(message)

    def seed(self, attack: GeneratorAttack) -> GeneratorAttack:
        return self.runs[0].seed(attack)

    @contextmanager
    def tracking(self, n_jobs: int, description: str = "Attacks") -> Iterator[None]:
        """One progress bar over every target's jobs."""
        with self.progress.task(f"{description} on {self.target_name}",
                                total=n_jobs) as step:
            self._step = step
            try:
                yield
            finally:
                self._step = None

    def reuse(self, job: str, parts: tuple[Any, ...],
              labels: NDArray[Any] | Callable[[Any], bool]) -> Any:
        """The saved result of ``job`` in its target's store folder, or None."""
        target, attack = self.route[job]
        saved = self.runs[target].reuse(attack, parts, labels)
        if saved is not None and self._step is not None:
            self._step.advance()
        return saved

    def finish(self, job: str, parts: tuple[Any, ...], result: AttackResult) -> AttackResult:
        """Finish ``result`` (provenance, baseline, save) as its target's run does."""
        target, attack = self.route[job]
        finished = self.runs[target].finish(attack, parts, result)
        if self._step is not None:
            self._step.advance()
        return finished

    def enrich(self, job: str, result: AttackResult, *, save: bool = False) -> bool:
        """Run the enrichers on a reused ``result`` as its target's run does."""
        target, attack = self.route[job]
        return self.runs[target].enrich(attack, result, save=save)


# --- the kind ---------------------------------------------------------------------------------

class _Route(NamedTuple):
    """Where one planned job belongs: its target, its attack, the key it is filed under."""

    target: int
    attack: str
    filed_as: str


@dataclass(frozen=True)
class _AttackScores:
    """One attack fitted on the shadow runs and scored on the test runs, every target."""

    scores: NDArray[np.float64]       # (n_test_runs, n_targets)
    thresholds: NDArray[np.float64]   # (n_targets,)
    seconds: float                    # the fit and the scoring, shared by every target


class GeneratorAudit(AuditKind):
    """The generator audit kind: TAPAS's game, one result per target record and attack.

    Every target shares the work: the shadow and test runs are made (or read back from
    the cache) once, when the first result not in the store is computed, and each attack
    is fitted and scored once for every target.
    """

    kind = "generator"
    func = _FUNC
    Settings = GeneratorSettings
    description = "Generator attacks"
    settings: GeneratorSettings

    def __init__(self, target: Any, auxiliary_data: pd.DataFrame, *,
                 targets: pd.DataFrame | Sequence[int] | None, settings: GeneratorSettings,
                 options: RunOptions) -> None:
        import pandas as pd

        super().__init__(settings, options)
        s = settings
        params = dict(s.generator_params or {})
        if isinstance(target, str):
            _check_builtin_params(target, params)
        _check_auxiliary(auxiliary_data, s.sensitive)  # before the neighbours scan
        seeds = np.random.SeedSequence(int(options.random_state)).spawn(3)
        self.setup = _check_setup(auxiliary_data, targets, s,
                                  np.random.default_rng(seeds[0]), _scan_executor(options))
        _check_secret(s.sensitive, s.candidates, self.setup, auxiliary_data)
        self.attacks = dict(_check_attacks(s.attacks, s.attack_params))
        secret = self.setup.secret
        public = pd.concat([auxiliary_data, self.setup.targets, *(
            [] if secret is None else [secret.alternatives])], ignore_index=True)
        resolved = _resolve_generator(target, params, public)
        self.generator = _generator_name(target if isinstance(target, str) else resolved,
                                         s.name)
        self.runs = self._make_runs(resolved, seeds[1:])
        self._phases: dict[str, Any] | None = None
        self._scores: dict[str, _AttackScores] = {}

    def _make_runs(self, generator: Any, seeds: Sequence[np.random.SeedSequence],
                   ) -> dict[str, GeneratorRuns]:
        """The shadow runs ("train") and the test runs, not made yet."""
        from privaudit.training import GeneratorRuns

        setup, s, o = self.setup, self.settings, self.options
        counts = {"train": s.reference.n_models, "test": s.n_test_runs}
        return {part: GeneratorRuns(
            generator, setup.pool, setup.targets, n_runs=counts[part],
            n_train_rows=setup.n_train_rows, n_synthetic_rows=setup.n_synthetic_rows,
            knowledge=s.knowledge, random_state=int(seed.generate_state(1)[0]),
            executor=o.resolved_executor, cache_dir=o.cache_dir,
            alternatives=None if setup.secret is None else setup.secret.alternatives)
            for part, seed in zip(("train", "test"), seeds, strict=True)}

    # --- declared to the driver ------------------------------------------------------------
    @property
    def labels(self) -> None:
        """Unknown until the test runs are made: :meth:`consistent` checks their count."""
        return None

    def consistent(self, job: Job) -> Callable[[Any], bool]:
        """A saved result is consistent when it has one record per test run."""
        n_runs = self.settings.n_test_runs
        return lambda saved: len(saved.labels) == n_runs

    def target_name(self) -> str:
        return self.generator

    def identity(self) -> tuple[Any, ...]:
        from privaudit.training import data_fingerprint

        setup, secret = self.setup, self.setup.secret
        return (self.generator, _recipe_print(self.runs["train"]),
                data_fingerprint(setup.pool), data_fingerprint(setup.reserved),
                setup.n_train_rows, setup.n_synthetic_rows,
                None if secret is None else (repr(secret.column), repr(secret.values)))

    @cached_property
    def routes(self) -> dict[str, _Route]:
        """Job name -> its route, attack by attack, each attack's targets in order."""
        secret = self.setup.secret
        suffix = "" if secret is None else f"--secret-{secret.column}"
        return {f"{target} / {attack}": _Route(t, attack, f"{self.generator}--{attack}{suffix}")
                for attack in self.attacks
                for t, target in enumerate(self.setup.target_names)}

    def plan(self) -> list[Job]:
        # Each job's key: its attack's parameters as given (before the audit seeds it).
        params = {name: (repr(a.get_params(deep=False)),) for name, a in self.attacks.items()}
        return [Job(name, {}, params[route.attack], order)
                for order, (name, route) in enumerate(self.routes.items())]

    def make_run(self) -> TargetRuns:  # type: ignore[override]
        """One :class:`AuditRun` per target record, keyed on its record too."""
        from privaudit.training import data_fingerprint

        o, setup = self.options, self.setup
        shared, store = self.run_identity(), o.store()
        runs = [AuditRun(func=self.func, target_name=name, random_state=o.random_state,
                         identity=(*shared, data_fingerprint(setup.targets.iloc[[t]])),
                         store=store, baseline=self.baseline(), enrichers=self.enrichers(),
                         progress=self.progress, dataset=o.dataset, kind=self.kind,
                         key_scheme=self.key_scheme)
                for t, name in enumerate(setup.target_names)]
        route = {name: (r.target, r.filed_as) for name, r in self.routes.items()}
        return TargetRuns(runs, route, self.generator)

    def run_job(self, job: Job, run: TargetRuns) -> AttackResult:  # type: ignore[override]
        route = self.routes[job.name]
        return self._result(route, self._attack_scores(route.attack, run))

    # --- the work every target shares --------------------------------------------------------
    def _attack_scores(self, name: str, run: TargetRuns) -> _AttackScores:
        """Attack ``name`` fitted on the shadow runs and scored on the test runs, once."""
        if name not in self._scores:
            if self._phases is None:
                self._phases = self._play_runs()
            train, test = self.runs["train"], self.runs["test"]
            attack, secret = run.seed(self.attacks[name]), self.setup.secret
            run.say(f"{name}: learning from {train.n_runs} shadow runs")
            start = time.perf_counter()
            attack.fit(list(train.synthetic_), train.in_mask_, self.setup.targets,
                       auxiliary_data=self.setup.pool, reference_data=self.setup.reserved,
                       alternatives=None if secret is None else secret.alternatives)
            scores = attack.score(list(test.synthetic_))
            self._scores[name] = _AttackScores(scores, np.asarray(attack.thresholds_),
                                               time.perf_counter() - start)
        return self._scores[name]

    def _play_runs(self) -> dict[str, Any]:
        """Make (or read back from the cache) the shadow and the test runs, timed."""
        phases: dict[str, Any] = {}
        for part, label in (("train", "shadow_runs"), ("test", "test_runs")):
            start = time.perf_counter()
            runs = self.runs[part].run(progress=self.progress)
            phases[label] = {
                "seconds": time.perf_counter() - start,
                "generator_seconds": float(np.nansum(runs.run_seconds_)),
                "made": int(runs.n_made_), "n_runs": int(runs.n_runs),
                "cache": None if runs.cache_path_ is None else str(runs.cache_path_)}
        return phases

    def _result(self, route: _Route, shared: _AttackScores) -> AttackResult:
        """The result of one target and attack: its column of the attack's scores."""
        from privaudit.results import AttackResult

        t, test, secret = route.target, self.runs["test"], self.setup.secret
        attack = self.attacks[route.attack]
        timing = {**(self._phases or {}), "attack": {
            "seconds": shared.seconds, "n_targets": len(self.setup.target_names)}}
        details = self._secret_details
        extra = {"threshold": float(shared.thresholds[t]),
                 "target_record": _jsonable(self.setup.targets.iloc[t].to_dict()),
                 "phases": timing,
                 **({"model_free": details["model_free"][t]} if secret else {})}
        return AttackResult(
            labels=test.in_mask_[:, t], scores=shared.scores[:, t],
            predictions=shared.scores[:, t] >= shared.thresholds[t],
            record_ids=np.arange(test.n_runs), attack=route.attack,
            target=self.setup.target_names[t], generator=self.generator,
            kind="membership" if secret is None else "attribute",
            parameters={**_jsonable(attack.get_params(deep=False)),
                        **self._game_parameters(), **details["parameters"]},
            extra=extra)

    def _game_parameters(self) -> dict[str, Any]:
        # Result parameters keep their saved names (the report reads "n_shadow_runs").
        s, setup = self.settings, self.setup
        return {"claimed_epsilon": None if s.claimed_epsilon is None
                else float(s.claimed_epsilon), "n_train_rows": setup.n_train_rows,
                "n_synthetic_rows": setup.n_synthetic_rows, "knowledge": s.knowledge,
                "n_shadow_runs": self.runs["train"].n_runs,
                "n_test_runs": self.runs["test"].n_runs}

    @cached_property
    def _secret_details(self) -> dict[str, Any]:
        """Attribute inference: the secret's names and the model-free guesses' accuracy."""
        secret = self.setup.secret
        if secret is None:
            return {"parameters": {}, "model_free": []}
        guesses = model_free_guesses(self.setup.pool, self.setup.targets, secret.column,
                                     secret.values, self.options.random_state)
        in_mask = self.runs["test"].in_mask_
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


# --- the public function -------------------------------------------------------------------

#: audit_generator's renamed keywords: the old name -> the new one (a FutureWarning).
_RENAMED = {"generator": "target", "reference_fraction": "reserved_fraction",
            "secret": "sensitive", "secret_values": "candidates"}


@contextmanager
def _errors_name_as_given(old_used: Sequence[str]) -> Iterator[None]:
    """An error naming a renamed parameter names the old keyword the caller gave instead."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        message = str(exc)
        for old in old_used:
            message = message.replace(f"'{_RENAMED[old]}'", f"'{old}'")
        if message == str(exc) or type(exc) not in (TypeError, ValueError):
            raise
        raise type(exc)(message) from None


def audit_generator(
    target: Any = None,
    auxiliary_data: pd.DataFrame | None = None,
    *,
    targets: pd.DataFrame | Sequence[int] | None = None,
    n_targets: int | None = None,
    n_train_rows: int | None = None,
    n_synthetic_rows: int | None = None,
    reference: ReferenceSpec | None = None,
    n_test_runs: int = 100,
    knowledge: str = "auxiliary",
    attacks: str | Sequence[str | GeneratorAttack] | None = None,
    attack_params: Mapping[str, Mapping[str, Any]] | None = None,
    generator_params: Mapping[str, Any] | None = None,
    reserved_fraction: float = 0.2,
    sensitive: Hashable | None = None,
    candidates: Sequence[Any] | None = None,
    claimed_epsilon: float | None = None,
    name: str | None = None,
    dataset: str = "",
    random_state: int = 0,
    executor: str | Executor = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    cache_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    progress: Callable[[str], object] | Progress | None = None,
    generator: Any = None,
    n_shadow_runs: int | None = None,
    reference_fraction: float | None = None,
    secret: Hashable | None = None,
    secret_values: Sequence[Any] | None = None,
) -> AuditReport:
    """Audit a synthetic-data generator: does its output tell which records trained it.

    Parameters
    ----------
    target : callable, object with ``fit`` and ``sample`` or ``generate``, or str
        The audited generator: ``generator(train, n_rows, random_state=seed) ->
        DataFrame``, an SDV-style (``fit(df)``/``sample(n)``) or TAPAS-style
        (``fit(df)``/``generate(n, random_state=seed)``) object, copied afresh per run (see
        :class:`~privaudit.training.GeneratorRecipe`), or a built-in name of
        :data:`~privaudit.synthetic.BUILTIN_GENERATORS` (with ``generator_params``;
        ``"dp-bayes"`` gets the auxiliary data's domain as its public domain).
    auxiliary_data : pandas.DataFrame
        Records from the population the generator's training data comes from: the
        attacker's knowledge. Split into targets (when ``targets`` is not a table), a
        reserved part (``reserved_fraction``, never trained on: the density attack's
        sample of the population) and the pool training sets are drawn from.
    targets : DataFrame, array of int or None
        The target records, as a table or as row positions in ``auxiliary_data``;
        default: the ``n_targets`` most vulnerable rows (:func:`vulnerable_records`).
    n_targets : int, optional
        Targets chosen when ``targets`` is None (default 5); refused with ``targets``.
    n_train_rows : int, optional
        Rows of every training set, the real generator's (default: a quarter of the pool).
    n_synthetic_rows : int, optional
        Rows of every synthetic table (default ``n_train_rows``).
    reference : ReferenceSpec, optional
        The shadow runs the attacks learn from, described as every audit describes its
        reference models (:class:`privaudit.training.ReferenceSpec`): ``n_models`` runs
        (even: each target in half of them; default :data:`DEFAULT_SHADOW_RUNS`). The game
        fixes the rest: each run trains the audited generator on ``n_train_rows`` rows
        (no ``recipe``, ``train_fraction`` or ``to_target``; ``mode`` ``"auto"`` or
        ``"online"``: every target is in half the runs).
    n_test_runs : int, default=100
        Fresh runs the attacks are scored on (even): the records of every result. The
        effective-epsilon bound needs many test runs to be non-trivial.
    knowledge : {"auxiliary", "exact"}
        What the attacker knows of the rest of the training set (see
        :class:`~privaudit.training.GeneratorRuns`).
    attacks : sequence of str or GeneratorAttack, optional
        Default :data:`DEFAULT_GENERATOR_ATTACKS`.
    attack_params : dict, optional
        Per attack name, constructor parameters.
    generator_params : dict, optional
        Parameters of a built-in generator (``{"epsilon": 1.0}``).
    reserved_fraction : float, default=0.2
        Share of the auxiliary data (targets aside) reserved out of every training set:
        the density attacks' sample of the population (DOMIAS's reference data). Not
        ``audit_model``'s ``train_fraction``, which is the share each model trains on.
    sensitive : str, optional
        Attribute inference instead of membership (TAPAS's ``TargetedAIA``): every
        training set holds each target, with one of two values of this column drawn per
        run; the attacks guess which. Results are of kind ``"attribute"`` (label 1 = the
        second value), with the model-free guesses (:func:`model_free_guesses`) beside.
    candidates : sequence of two values, optional
        The two values (default: the column's two most frequent in the auxiliary data).
    claimed_epsilon : float, optional
        The generator's differential-privacy claim, stored with every result for the
        report to test: the largest effective-epsilon lower bound over targets x
        attacks, each at the Bonferroni level ``1 - alpha / m`` so that a true claim is
        refuted with probability at most ``alpha``
        (:func:`privaudit.report._sections_generator.claim_checks`).
    name : str, optional
        The generator's name in results (default: the built-in name or the function's).
    random_state, executor, n_jobs, address, cache_dir, dataset, progress
        The run options every audit takes (:class:`~privaudit.audits.RunOptions`): the
        seed of everything (the split, the runs, the attacks), where generator runs
        execute (local processes or Ray), the dataset's name, where progress goes.
        ``cache_dir``: every synthetic table is written there as it finishes and a rerun
        resumes; it is also how the game's tables are given back: every result names the
        two cache folders (``result.extra["phases"]["shadow_runs"]["cache"]`` and
        ``["test_runs"]``), and :meth:`GeneratorRuns.from_cache(folder)
        <privaudit.training.GeneratorRuns.from_cache>` reads their tables and in/out
        masks back. Without it the tables are not kept (make them with
        :class:`~privaudit.training.GeneratorRuns` to hold them in memory).
    results_dir : path, optional
        Every finished result is saved there, once, in a folder named by its target and
        ``<generator>--<attack>`` (several generators share one ``results_dir``), and
        reused by a rerun. When it is ``<out>/results`` of a report, build the report
        with ``build_report(..., save_results=False)`` (as ``privaudit audit generator``
        does) so the results are not filed a second time.
    generator, n_shadow_runs, reference_fraction, secret, secret_values
        Old names (a :class:`FutureWarning`; removed in a later release): ``target``,
        ``reference=ReferenceSpec(n_models=...)``, ``reserved_fraction``, ``sensitive``
        and ``candidates``. An error names the keyword given.

    Returns
    -------
    AuditReport
        One :class:`~privaudit.results.AttackResult` per target and attack, attack by
        attack (iterate it as a list). ``extra["phases"]`` records what each phase took:
        ``shadow_runs`` and ``test_runs`` (wall ``seconds``, the generator's own
        ``generator_seconds`` summed over runs, tables ``made`` by this call rather than
        read from the cache, the ``cache`` folder) and ``attack`` (the wall seconds of the
        attack's fit and scoring, shared by its ``n_targets`` results).
    """
    from privaudit.training import ReferenceSpec

    old_used = [old for old, value in (("generator", generator),
                                       ("reference_fraction", reference_fraction),
                                       ("secret", secret), ("secret_values", secret_values))
                if value is not None]
    kw = {"func": _FUNC, "category": FutureWarning}
    target = renamed(generator, "generator", target, "target", None, **kw)
    reserved_fraction = renamed(reference_fraction, "reference_fraction", reserved_fraction,
                                "reserved_fraction", 0.2, **kw)
    sensitive = renamed(secret, "secret", sensitive, "sensitive", None, **kw)
    candidates = renamed(secret_values, "secret_values", candidates, "candidates", None,
                         **kw)
    with _errors_name_as_given(old_used):
        for param, value in (("target", target), ("auxiliary_data", auxiliary_data)):
            if value is None:
                raise param_error(param, _FUNC, "given (it is required)", None,
                                  error=TypeError)
        spec = (ReferenceSpec(n_models=DEFAULT_SHADOW_RUNS)
                if reference is None and n_shadow_runs is None else
                reference_spec(reference, func=_FUNC, names={"n_shadow_runs": "n_models"},
                               category=FutureWarning, n_shadow_runs=n_shadow_runs))
        if n_shadow_runs is not None:  # refused under the keyword the caller used
            check_declared(n_shadow_runs, [EVEN_RUNS], param="n_shadow_runs", func=_FUNC)
        options = RunOptions.checked(
            _FUNC, random_state=random_state, executor=executor, n_jobs=n_jobs,
            address=address, cache_dir=cache_dir, results_dir=results_dir,
            progress=progress, dataset=dataset)
        settings = GeneratorSettings(
            reference=spec, n_test_runs=n_test_runs, n_targets=n_targets,
            n_train_rows=n_train_rows, n_synthetic_rows=n_synthetic_rows,
            knowledge=knowledge, reserved_fraction=reserved_fraction,
            attacks=canonical_names(attacks, param="attacks", func=_FUNC),
            attack_params=attack_params, generator_params=generator_params,
            sensitive=sensitive, candidates=candidates, claimed_epsilon=claimed_epsilon,
            name=name)
        audit = GeneratorAudit(target, auxiliary_data, targets=targets, settings=settings,
                               options=options)
    return drive(audit)


def _recipe_print(runs: GeneratorRuns) -> str:
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
