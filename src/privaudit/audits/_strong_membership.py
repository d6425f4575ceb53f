"""Strong membership inference (Zhao et al. 2021): members against their close neighbours.

Ordinary membership inference asks whether a record is a member or a random non-member;
Zhao et al.'s r-strong membership inference (SMI) asks whether it is a member or a
non-member within distance ``r`` of it. Attribute inference needs the second (Theorem 2):
a model can leak membership against random non-members (its training records are far
from typical records) and still not tell a training record from its near twin, which is
all an attribute-inference adversary sees. This module measures that gap, one
:class:`~privaudit.results.AttackResult` per radius, from ONE query of the target.

On the audit template (:mod:`privaudit.audits._template`): :class:`StrongMembershipSettings`
declares the settings' rules, :class:`StrongMembershipAudit` is the kind (one job per
radius, sharing one query), :func:`audit_strong_membership` its keyword wrapper and
:func:`strong_membership_inference` the same audit under its paper's name.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    CALLABLE,
    MAPPING,
    NONE,
    STR,
    ChoiceRule,
    IntRule,
    PredicateRule,
    RealRule,
    TypeRule,
    canonical_names,
    check_declared,
    check_random_state,
    param_error,
    renamed,
)
from privaudit.audits._inputs import check_population, population_overlap
from privaudit.audits._run import AuditRun
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive

if TYPE_CHECKING:
    from privaudit.attacks import MembershipAttack
    from privaudit.report import AuditReport
    from privaudit.results import AttackResult
    from privaudit.targets import ModelOutputs, Target

__all__ = ["SMI_ATTACKS", "SMI_METRICS", "ItemsRule", "StrongMembershipAudit",
           "StrongMembershipSettings", "audit_strong_membership",
           "strong_membership_inference"]

_FUNC = "audit_strong_membership"
#: Distances a neighbour can be drawn in (on the scaled features).
SMI_METRICS: tuple[str, ...] = ("l2", "l1", "linf")
#: How the distance of a neighbour from its member is drawn within ``(0, r]``.
_RADIAL: tuple[str, ...] = ("uniform", "ball")
#: Attacks that score each record by one fixed statistic of the target's answer on it.
SMI_ATTACKS: tuple[str, ...] = ("loss", "confidence", "entropy", "modified-entropy", "gap")
_NORM_ORD: dict[str, float] = {"l2": 2.0, "l1": 1.0, "linf": math.inf}

_T = TypeVar("_T")

#: A neighbour's label: its member's (``"member"``) or a labelling oracle's.
NeighbourLabels = str | Callable[[Any, NDArray[Any]], ArrayLike]


# ---------------------------------------------------------------------- settings
@dataclass(frozen=True)
class ItemsRule:
    """Each item of a sequence follows one of ``rules``; the sequence is non-empty.

    The declared rule of a sequence setting whose items are numbers (radii): each item is
    checked by :func:`~privaudit._validation.check_declared` (a ``TypeError`` for a wrong
    type, a ``ValueError`` out of range), then emptiness and, with ``distinct``, repeats
    (a ``ValueError`` naming the repeated item). ``why_distinct`` says why repeats matter.
    """

    rules: tuple[Any, ...]
    distinct: bool = True
    why_distinct: str = ""

    def check(self, values: Sequence[Any], *, param: str, func: str) -> None:
        """Refuse, naming ``param`` of ``func``, an item no rule accepts, none, a repeat."""
        seen: list[Any] = []
        for value in values:
            check_declared(value, self.rules, param=param, func=func)
            if self.distinct and value in seen:
                raise param_error(param, func, f"free of repeats{self.why_distinct}", value)
            seen.append(value)
        if not seen:
            raise param_error(param, func, "non-empty", "<no item>")


@dataclass(frozen=True)
class ItemCheckedSettings(AuditSettings):
    """Settings whose sequence fields also declare a rule for their items.

    ``ITEM_CONSTRAINTS`` maps a field (already a tuple by ``CONSTRAINTS``) to its
    :class:`ItemsRule`. A template extension: :class:`AuditSettings` checks a field's value
    as a whole, which cannot tell a wrong item type (``TypeError``) from an item out of
    range (``ValueError``).
    """

    ITEM_CONSTRAINTS: ClassVar[Mapping[str, ItemsRule]] = {}

    def check(self, func: str) -> None:
        super().check(func)
        for name, rule in self.ITEM_CONSTRAINTS.items():
            rule.check(getattr(self, name), param=name, func=func)


def _is_array_like(value: object) -> bool:
    return not isinstance(value, (str, bytes, Mapping)) and (
        hasattr(value, "__array__") or hasattr(value, "__len__"))


def _is_member(value: object) -> bool:
    return isinstance(value, str) and value == "member"


@dataclass(frozen=True)
class StrongMembershipSettings(ItemCheckedSettings):
    """What a strong-membership audit does, checked before the neighbours are drawn.

    Every field is a plain type, range or option rule; what depends on the data (the
    feature scale's length, ``inf`` without a population, the attack's tags against the
    target) is checked by :class:`StrongMembershipAudit` before its query.
    """

    radii: tuple[float, ...]
    n_neighbours: int = 1
    attack: str = "loss"
    attack_params: Mapping[str, Any] | None = None
    metric: str = "l2"
    radial: str = "uniform"
    feature_scale: ArrayLike | None = None
    neighbour_labels: NeighbourLabels = "member"

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "radii": [TypeRule((tuple,), "a sequence of radii (floats > 0, inf or None)")],
        "n_neighbours": [IntRule(low=1)],
        "attack": [STR],
        "attack_params": [NONE, MAPPING],
        "metric": [ChoiceRule(SMI_METRICS)],
        "radial": [ChoiceRule(_RADIAL)],
        "feature_scale": [NONE, PredicateRule(_is_array_like,
                                              "an array of non-negative floats")],
        "neighbour_labels": [PredicateRule(_is_member, "'member'"), CALLABLE],
    }
    ITEM_CONSTRAINTS: ClassVar[Mapping[str, ItemsRule]] = {
        # inf (None in the API) is ordinary MI; a radius of 0 is the member itself.
        "radii": ItemsRule((RealRule(0.0, math.inf, closed="right"),),
                           why_distinct=" (one result per radius)"),
    }
    # A radius's result depends on its radius only (common random numbers: the same
    # rays, the same population sample, whatever other radii are asked), so each radius
    # enters its own job's key: asking for one more radius reuses the others.
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({"radii"})

    def key_value(self, name: str, value: Any) -> Any:
        from privaudit._digest import array_sha256

        if name == "feature_scale" and value is not None:
            return array_sha256(np.asarray(value, dtype=np.float64))
        if name == "neighbour_labels":
            # The oracle's labels themselves are in each radius's key (see plan).
            return _labels_name(value)
        return super().key_value(name, value)


# ---------------------------------------------------------------------- the kind
@dataclass(frozen=True)
class _Records:
    """Records as float64 rows ``(n, d)``, their labels, and how to give them back."""

    flat: NDArray[np.float64]
    y: NDArray[Any]
    tail: tuple[int, ...]
    columns: Sequence[Any] | None

    def restore(self, rows: NDArray[np.float64]) -> Any:
        """``rows`` in the records' own form (DataFrame columns, trailing axes)."""
        return _restore(rows, self.tail, self.columns)


@dataclass(frozen=True)
class _Neighbours:
    """Each finite radius's neighbours, their labels, and the drawn population sample."""

    by_radius: dict[float, NDArray[np.float64]]
    labels: dict[float, NDArray[Any]]
    active: NDArray[np.intp]
    population_index: NDArray[np.intp] | None
    rows: dict[float, NDArray[np.intp]]


class StrongMembershipAudit(AuditKind):
    """The strong-membership kind: members (1) against neighbours within each radius (0).

    Every check of the data, the neighbours' draw and their labels happen here, before
    the target is asked anything; the one query of members, every neighbour and the
    population sample is made by the first radius not reused from the store, and shared
    by the others (one :class:`~privaudit.audits._template.Job` per radius).
    """

    kind = "strong-membership"
    func = _FUNC
    Settings = StrongMembershipSettings
    description = "Radii"
    settings: StrongMembershipSettings

    def __init__(self, target: object, X_members: ArrayLike, y_members: ArrayLike, *,
                 population: tuple[ArrayLike, ArrayLike] | None,
                 settings: StrongMembershipSettings, options: RunOptions,
                 rng: np.random.Generator | None = None) -> None:
        from privaudit.targets import as_target, target_fingerprint

        super().__init__(settings, options)
        s, func = settings, self.func
        self.members = _members(X_members, y_members, func)
        flat, d = self.members.flat, self.members.flat.shape[1]
        self.population = _check_population(population, X_members, self.members.y, d, func)
        if math.inf in s.radii and self.population is None:
            raise param_error("radii", func, "finite unless 'population' is given (inf or "
                              "None is ordinary MI against population records)",
                              [None if math.isinf(r) else r for r in s.radii])
        self.scale, self.scale_source = _feature_scale(
            s.feature_scale, flat, None if self.population is None else self.population.flat,
            d, func)
        self.target: Target = as_target(target)
        self._fingerprint = target_fingerprint(self.target, func=func)
        self.attacker: MembershipAttack = _make_attack(s.attack, s.attack_params,
                                                       self.target, func)
        # A generator given by the caller (no seed to record) or the options' seed.
        self.seed: int | None = options.random_state if rng is None else None
        rng = np.random.default_rng(options.random_state) if rng is None else rng
        self.neighbours = self._draw(rng)
        self._outputs: ModelOutputs | None = None

    def _draw(self, rng: np.random.Generator) -> _Neighbours:
        """Every radius's neighbours, labelled and checked not to be members."""
        s, m = self.settings, self.members
        finite = [r for r in s.radii if math.isfinite(r)]
        near, active = _draw_neighbours(rng, m.flat, self.scale, s.n_neighbours, s.metric,
                                        s.radial, finite)
        _check_finite(near, self.func)
        # Drawn after the neighbours' blocks: the finite radii do not depend on it.
        pop_index = None
        if self.population is not None and math.inf in s.radii:
            n_pop = self.population.flat.shape[0]
            pop_index = rng.choice(n_pop, size=min(m.flat.shape[0] * s.n_neighbours, n_pop),
                                   replace=False)
        labels = _neighbour_labels(s.neighbour_labels, near, finite,
                                   np.repeat(m.y, s.n_neighbours), m, self.func)
        for r in finite:
            _check_not_members(near[r], m.flat, r, self.func)
        return _Neighbours(near, labels, active, pop_index,
                           _batch_rows(m.flat.shape[0], near, pop_index))

    # --- the template's declarations ---------------------------------------------------
    @property
    def labels(self) -> NDArray[np.int8]:
        """A finite radius's labels: the members (1), then their neighbours (0)."""
        n = self.members.flat.shape[0]
        return _membership_labels(n, n * self.settings.n_neighbours)

    def consistent(self, job: Job) -> NDArray[np.int8]:
        return _membership_labels(self.members.flat.shape[0],
                                  self._non_member_rows(job.params["radius"]).size)

    def target_name(self) -> str:
        return str(self.target.name)

    def identity(self) -> tuple[Any, ...]:
        from privaudit.training import data_fingerprint

        m, p, tgt = self.members, self.population, self.target
        return (tgt.name, type(tgt).__name__, self._fingerprint,
                data_fingerprint(m.flat, m.y), list(m.tail),
                None if m.columns is None else [str(c) for c in m.columns],
                None if p is None else data_fingerprint(p.flat, p.y))

    def answers(self) -> Callable[[], NDArray[Any]] | None:
        # No readable parameters: the model's labels on the members identify it (one
        # query per member, only when a result is saved).
        if self._fingerprint is not None:
            return None
        m = self.members
        return lambda: np.asarray(self.target.query(m.restore(m.flat), m.y).predictions,
                                  dtype=str)

    def baseline(self) -> None:
        # Chance at small radii is the measurement (Zhao et al.'s indistinguishable
        # neighbours, their Definition 5), not an attack to flag; the curve's reference
        # point is the ordinary-MI radius (inf) of the same audit.
        return None

    def plan(self) -> list[Job]:
        """One job per radius, in the order given, keyed by its radius.

        And by its neighbours' labels when an oracle gave them (the oracle is user code:
        its answers, not its name, identify it).
        """
        jobs = [Job(_result_name(self.attacker.name, r), {"radius": r},
                    (repr(r), self._oracle_labels(r)), order)
                for order, r in enumerate(self.settings.radii)]
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise param_error("radii", self.func, "distinct at 6 significant digits (each "
                              "names its result)", list(self.settings.radii))
        return jobs

    def _oracle_labels(self, r: float) -> str | None:
        from privaudit.training import data_fingerprint

        if _is_member(self.settings.neighbour_labels) or not math.isfinite(r):
            return None
        return data_fingerprint(self.neighbours.labels[r])

    def run_job(self, job: Job, run: AuditRun) -> AttackResult:
        """Score the members against the non-members of one radius, from the one query."""
        r, n = job.params["radius"], self.members.flat.shape[0]
        outputs = self._query()
        rows = self._non_member_rows(r)
        result = self.attacker.run(
            outputs=outputs.subset(np.concatenate([np.arange(n), rows])),
            labels=_membership_labels(n, rows.size), record_ids=self._record_ids(r),
            dataset=self.options.dataset, target_name=self.target.name)
        return dataclasses.replace(
            result, attack=job.name,
            parameters={"radius": r if math.isfinite(r) else None,
                        "attack": self.attacker.name, **result.parameters,
                        **self._common_parameters()},
            extra={**result.free_extra(), **self._distance_extra(r)})

    # --- the shared query and each radius's rows ----------------------------------------
    def _batch(self) -> tuple[NDArray[np.float64], NDArray[Any]]:
        """Members, then each finite radius's neighbours, then the population sample."""
        m, nb, p = self.members, self.neighbours, self.population
        parts, labels = [m.flat], [m.y]
        for r, near in nb.by_radius.items():
            parts.append(near)
            labels.append(nb.labels[r])
        if nb.population_index is not None and p is not None:
            parts.append(p.flat[nb.population_index])
            labels.append(p.y[nb.population_index])
        return np.concatenate(parts), np.concatenate(labels)

    def _query(self) -> ModelOutputs:
        """The target's answers on the whole batch: asked once, by the first job run."""
        if self._outputs is None:
            batch, labels = self._batch()
            outputs = self.target.query(self.members.restore(batch), labels)
            if _calibrates_on_members(self.attacker):
                # Yeom et al.'s adversary knows the mean training loss: its threshold.
                self.attacker.fit(outputs=outputs.subset(np.arange(self.members.flat.shape[0])))
            self._outputs = outputs
        return self._outputs

    def _non_member_rows(self, r: float) -> NDArray[np.intp]:
        """Where radius ``r``'s non-members sit in the batch (see :meth:`_batch`)."""
        return self.neighbours.rows[r]

    def _record_ids(self, r: float) -> NDArray[np.intp]:
        n, k = self.members.flat.shape[0], self.settings.n_neighbours
        if math.isfinite(r):
            return np.arange(n + n * k)
        assert self.neighbours.population_index is not None
        return np.r_[np.arange(n), n * (1 + k) + self.neighbours.population_index]

    def _common_parameters(self) -> dict[str, Any]:
        s = self.settings
        return {"n_neighbours": s.n_neighbours, "metric": s.metric, "radial": s.radial,
                "feature_scale": self.scale_source,
                "neighbour_labels": _labels_name(s.neighbour_labels),
                "random_state": self.seed}

    def _distance_extra(self, r: float) -> dict[str, Any]:
        m, nb, s = self.members, self.neighbours, self.settings
        if not math.isfinite(r):
            assert self.population is not None
            return {"non_members": "random population records (ordinary MI)",
                    "n_population": int(self.population.flat.shape[0])}
        dist = _distances(nb.by_radius[r], m.flat, nb.active, self.scale, s.n_neighbours,
                          s.metric)
        return _distance_extra(s.metric, self.scale_source, nb.active.size,
                               m.flat.shape[1], dist)


class _StrongMembershipInference(StrongMembershipAudit):
    """The same kind called by its paper's name: its errors name that function."""

    func = "strong_membership_inference"


def _membership_labels(n_members: int, n_non_members: int) -> NDArray[np.int8]:
    return np.r_[np.ones(n_members, dtype=np.int8), np.zeros(n_non_members, dtype=np.int8)]


def _result_name(attack: str, r: float) -> str:
    return f"strong-{attack}[r={'inf' if not math.isfinite(r) else f'{r:g}'}]"


def _batch_rows(n: int, near: dict[float, NDArray[np.float64]],
                pop_index: NDArray[np.intp] | None) -> dict[float, NDArray[np.intp]]:
    """Where each radius's non-members sit in the batch.

    After the ``n`` members: each finite radius's neighbours in order, then the
    population sample (radius inf).
    """
    rows: dict[float, NDArray[np.intp]] = {}
    start = n
    for r, block in near.items():
        rows[r] = np.arange(start, start + block.shape[0])
        start += block.shape[0]
    if pop_index is not None:
        rows[math.inf] = np.arange(start, start + pop_index.size)
    return rows


# ---------------------------------------------------------------------- the functions
def audit_strong_membership(
    target: object = None,
    X_members: ArrayLike | None = None,
    y_members: ArrayLike | None = None,
    *,
    radii: Sequence[float | None],
    n_neighbours: int = 1,
    attack: str = "loss",
    attack_params: dict[str, Any] | None = None,
    metric: str = "l2",
    radial: str = "uniform",
    feature_scale: ArrayLike | None = None,
    neighbour_labels: NeighbourLabels = "member",
    population: tuple[ArrayLike, ArrayLike] | None = None,
    dataset: str = "",
    random_state: int | np.random.Generator | None = 0,
    results_dir: str | PathLike[str] | None = None,
    progress: object = None,
    model: object = None,
) -> AuditReport:
    """Score the target's members against non-member neighbours within each radius.

    For every radius ``r`` the experiment of Zhao et al. (Experiment 2, r-SMI) is run on
    all members at once: each member is paired with ``n_neighbours`` non-members drawn
    at distance in ``(0, r]`` of it, and a membership attack scores members (label 1)
    against those neighbours (label 0). A radius of ``inf`` (or ``None``) is ordinary
    membership inference, members against random population records, the reference point
    that the SMI curve should approach as ``r`` grows.

    Parameters
    ----------
    target : fitted model or privaudit Target
        Anything :func:`privaudit.targets.as_target` accepts. It is queried once, on the
        members, every neighbour of every radius and the population sample together, so
        its query counter grows by exactly that many records (not at all when every
        radius's result is reused from ``results_dir``).
    X_members : array-like of shape (n_members, ...) or DataFrame
        Training records of the model (numeric features; extra axes are flattened for
        the geometry and restored for the query).
    y_members : array-like of shape (n_members,)
        Their true labels (or targets, for a regressor).
    radii : sequence of float or None
        Radii ``r > 0`` in units of the scaled features (see Notes); ``inf`` or ``None``
        is ordinary MI against the population and needs ``population``. One result per
        radius, in the order given; repeats are refused.
    n_neighbours : int, default=1
        Neighbours drawn per member and radius.
    attack : str, default="loss"
        A membership attack scoring each record from the target's answer on it alone,
        one of :data:`SMI_ATTACKS` (see :func:`privaudit.attacks.get_attack`). Attacks
        needing reference models, white-box access, their own queries or a fit on the
        audited labels are refused (their tags say so): the same adversary must be
        compared across radii.
    attack_params : dict, optional
        Constructor parameters of the attack (e.g. ``{"threshold": 0.1}``).
    metric : {"l2", "l1", "linf"}, default="l2"
        Norm of the scaled difference that defines the distance.
    radial : {"uniform", "ball"}, default="uniform"
        ``"uniform"``: the distance is uniform on ``(0, r)``, so small and large
        perturbations are equally represented. ``"ball"``: the neighbour is uniform in
        the volume of the ball (distance ``r * U**(1/d)``), which in ``d`` dimensions puts
        almost every neighbour near distance ``r``.
    feature_scale : array-like of shape (n_features,), optional
        Per-feature unit of distance (non-negative, one positive at least). Default: the
        population's per-feature standard deviation, or the members' when no population
        is given. Features whose scale is 0 are never perturbed.
    neighbour_labels : "member" or callable, default="member"
        Label given to a neighbour when the target is queried. ``"member"`` keeps its
        member's label (the neighbourhood is assumed label-homogeneous, as Zhao et al.'s
        near neighbours are). A callable ``f(X_neighbours, y_of_their_members)`` returns
        other labels (e.g. from a labelling oracle); it is called once with the neighbours
        of every finite radius stacked, in the order of the result.
    population : (X_population, y_population), optional
        Non-members from the same distribution (checked disjoint from the members):
        the feature scale, and the non-members of the ``inf`` radius.
    dataset : str, default=""
        Dataset name for provenance.
    random_state : int, default=0
        Every random draw (directions, distances, population sample) goes through it.
        A numpy ``Generator`` or ``None`` (fresh entropy) is still accepted without
        ``results_dir`` (no seed to key a saved result by); ``parameters["random_state"]``
        is then None.
    results_dir : path, optional
        Each radius's finished result is saved there and reused by a rerun of the same
        audit (another list of radii reuses the radii already done).
    progress : None, bool, callable(str) or Progress
        Where progress goes.
    model
        Old name of ``target`` (a :class:`FutureWarning`; removed in a later release).

    Returns
    -------
    AuditReport
        One :class:`~privaudit.results.AttackResult` per radius, in the order of
        ``radii`` (iterate it as a list). Labels: 1 = member, 0 = neighbour (or
        population record). ``attack`` is ``"strong-<attack>[r=<r>]"``; ``parameters``
        holds the radius (``None`` for ``inf``), the attack's parameters and the sampling
        settings; ``extra`` the distance definition and the realised distances. Record
        ids: member ``i`` is ``i``; neighbour ``j`` of member ``i`` is
        ``n_members + i * n_neighbours + j`` (the same id at every radius: the same
        ray, see Notes); population record ``p`` is ``n_members * (1 + n_neighbours) + p``.
        No baseline check: chance at small radii is the measurement, and the ``inf``
        radius is the curve's own reference point.

    Raises
    ------
    ValueError
        A non-positive or repeated radius, ``inf`` without a population, empty or
        mismatched inputs, an unknown metric or attack, a population overlapping the
        members, or a radius so small that a neighbour equals a member in floating point.
    TypeError
        An attack that cannot score from shared outputs (reference models, white box,
        own queries, cross-fitted), non-numeric features, or arguments of the wrong type.

    Notes
    -----
    **Distance.** With ``s`` the per-feature scale and ``A`` the features with
    ``s > 0``, ``d(x, x') = || ((x' - x) / s)[A] ||_p`` (``p`` from ``metric``);
    features outside ``A`` are equal in ``x`` and ``x'``.

    **Drawing a neighbour.** For each member ``x`` and neighbour ``j``, one block of
    ``|A| + 1`` standard normals ``(g, h)`` is drawn from the generator (members in
    order, their neighbours in order: the block of neighbour ``j`` of member ``i`` is the
    ``(i * n_neighbours + j)``-th). The direction ``u`` is uniform on the unit sphere of
    the norm: ``g / ||g||_2`` for ``"l2"``; a Laplace vector ``sign(g) * -log(erfc(|g| /
    sqrt 2))`` divided by its l1 norm for ``"l1"`` (a density depending on the l1 norm
    only, as the Gaussian's depends on the l2 norm); a uniform point of the cube
    ``erf(g / sqrt 2)`` divided by its largest magnitude for ``"linf"`` (projecting the
    cube from its centre onto its faces is uniform on them, every face being at the same
    distance). ``f = Phi(h)`` is uniform on ``(0, 1)``; the distance is ``t = r * f``
    (``"uniform"``) or ``r * f**(1/|A|)`` (``"ball"``), and ``x'[A] = x[A] + t * s[A] *
    u``. The same block serves every radius: the neighbours of a member at radii ``r1 <
    r2`` lie on the same ray at distances in the ratio ``r1 / r2`` (common random
    numbers, so the AUCs of different radii are compared on the same directions and
    the neighbours of one radius do not depend on which other radii were asked: each
    radius is keyed alone in ``results_dir``). The population sample of the ``inf``
    radius is drawn after the blocks, without replacement: ``min(n_members *
    n_neighbours, n_population)`` records.

    **Non-membership of the neighbours.** A neighbour equal to a member's features (its
    own, when ``t * s`` vanishes in floating point, or another member's) would be a
    training record labelled non-member: it is refused with an error naming the radius.
    Only the members given are known to be training records; a neighbour may still
    coincide with a training record that was not passed (with continuous features the
    chance is nil).

    **What it measures.** Zhao et al. sample the neighbour from the data distribution
    restricted to the ball; the distribution is unknown here, so neighbours are drawn
    geometrically around the member. Near-zero radii give neighbours the target cannot
    tell from their members (AUC near 0.5: Zhao et al.'s indistinguishable neighbours,
    their Definition 5); large radii may give points off the data manifold, which the
    target can treat worse than real non-members, so the SMI AUC can exceed the ordinary
    MI AUC there. The ``loss`` attack is fitted on the members' outputs (Yeom et al.'s
    threshold: the mean training loss) for hard predictions; the AUC does not depend
    on it.

    References
    ----------
    .. [1] Zhao, B. Z. H., Agrawal, A., Coburn, C., Asghar, H. J., Bhaskar, R., Kaafar,
       M. A., Webb, D., Dickinson, P. "On the (In)Feasibility of Attribute Inference
       Attacks on Machine Learning Models." IEEE EuroS&P 2021 (Experiment 2 and
       Definition 8: r-strong membership inference; Theorems 1 and 2).
    .. [2] Yeom, S., Giacomelli, I., Fredrikson, M., Jha, S. "Privacy Risk in Machine
       Learning: Analyzing the Connection to Overfitting." IEEE CSF 2018 (the loss
       attack and its threshold).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[:30], y[:30])
    >>> report = audit_strong_membership(model, X[:30], y[:30], radii=[0.01, 2.0, None],
    ...                                  population=(X[30:], y[30:]))
    >>> [r.parameters["radius"] for r in report]
    [0.01, 2.0, None]
    """
    return _audit(StrongMembershipAudit, **locals())


def strong_membership_inference(
    target: object = None,
    X_members: ArrayLike | None = None,
    y_members: ArrayLike | None = None,
    *,
    radii: Sequence[float | None],
    n_neighbours: int = 1,
    attack: str = "loss",
    attack_params: dict[str, Any] | None = None,
    metric: str = "l2",
    radial: str = "uniform",
    feature_scale: ArrayLike | None = None,
    neighbour_labels: NeighbourLabels = "member",
    population: tuple[ArrayLike, ArrayLike] | None = None,
    dataset: str = "",
    random_state: int | np.random.Generator | None = 0,
    results_dir: str | PathLike[str] | None = None,
    progress: object = None,
    model: object = None,
) -> AuditReport:
    """:func:`audit_strong_membership` under the paper's name (Zhao et al. 2021).

    The same parameters, the same report; its errors name this function.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[:30], y[:30])
    >>> results = strong_membership_inference(model, X[:30], y[:30], radii=[0.01, 2.0, None],
    ...                                       population=(X[30:], y[30:]))
    >>> [r.parameters["radius"] for r in results]
    [0.01, 2.0, None]
    """
    return _audit(_StrongMembershipInference, **locals())


def _audit(
    kind: type[StrongMembershipAudit], *, target: object, X_members: ArrayLike | None,
    y_members: ArrayLike | None, radii: Sequence[float | None], n_neighbours: int,
    attack: str, attack_params: dict[str, Any] | None, metric: str, radial: str,
    feature_scale: ArrayLike | None, neighbour_labels: NeighbourLabels,
    population: tuple[ArrayLike, ArrayLike] | None, dataset: str,
    random_state: int | np.random.Generator | None,
    results_dir: str | PathLike[str] | None, progress: object, model: object,
) -> AuditReport:
    """Check the keywords of either function and drive its audit kind."""
    func = kind.func
    target = renamed(model, "model", target, "target", None, func=func,
                     category=FutureWarning, stacklevel=4)
    seed, rng = _seed(random_state, results_dir, func)
    options = RunOptions.checked(func, random_state=seed, results_dir=results_dir,
                                 progress=progress, dataset=dataset)
    attack, = canonical_names([attack], param="attack", func=func, stacklevel=4)
    settings = StrongMembershipSettings(
        radii=_radii(radii), n_neighbours=n_neighbours, attack=attack,
        attack_params=attack_params, metric=metric, radial=radial,
        feature_scale=feature_scale, neighbour_labels=neighbour_labels)
    audit = kind(_given(target, "target", func), _given(X_members, "X_members", func),
                 _given(y_members, "y_members", func), population=population,
                 settings=settings, options=options, rng=rng)
    report: AuditReport = drive(audit)
    return report


def _given(value: _T | None, param: str, func: str) -> _T:
    if value is None:
        raise param_error(param, func, "given (the target, its training records and their "
                          "labels)", None, error=TypeError)
    return value


def _radii(radii: object) -> Any:
    """A sequence of radii as a tuple, ``None`` read as inf; anything else as it is."""
    if isinstance(radii, (str, bytes)) or not isinstance(radii, Sequence | np.ndarray):
        return radii  # refused by the declared rule, naming 'radii'
    return tuple(math.inf if r is None else r for r in radii)


#: What the function took before the template besides an int seed (numpy's generators).
_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.SeedSequence)


def _seed(random_state: object, results_dir: object, func: str
          ) -> tuple[object, np.random.Generator | None]:
    """The options' seed, or (0, the caller's generator) for a generator or None.

    An int (or anything else) goes to :meth:`RunOptions.checked`, which refuses it by
    name; a generator has no seed to key saved results by, so not with ``results_dir``.
    """
    if random_state is not None and not isinstance(random_state, _GENERATORS):
        return random_state, None
    if results_dir is not None:
        raise param_error("random_state", func, "an int when 'results_dir' is given (a "
                          "generator's draws cannot key a saved result)", random_state,
                          error=TypeError)
    return 0, check_random_state(random_state, func=func)


# ---------------------------------------------------------------------- input checks
def _members(X: ArrayLike, y: ArrayLike, func: str) -> _Records:
    flat, tail, columns = _as_features(X, "X_members", func)
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != flat.shape[0]:
        raise param_error("y_members", func, f"one label per row of X_members "
                          f"({flat.shape[0]})", f"<array of shape {labels.shape}>")
    return _Records(flat, labels, tail, columns)


def _as_features(X: Any, param: str, func: str
                 ) -> tuple[NDArray[np.float64], tuple[int, ...], Sequence[Any] | None]:
    """Rows as float64 ``(n, d)``, the trailing shape and DataFrame columns (or None)."""
    columns = getattr(X, "columns", None)
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError):
        raise param_error(param, func, "an array or DataFrame of numbers",
                          f"<{type(X).__name__}>", error=TypeError) from None
    if columns is not None and hasattr(X, "dtypes"):
        bad = [c for c, t in zip(columns, X.dtypes, strict=True)
               if not (np.issubdtype(t, np.number) or np.issubdtype(t, np.bool_))]
        if bad:
            raise param_error(param, func, "numeric features (a neighbour is a numeric "
                              "perturbation)", f"<non-numeric columns {bad[:3]}>",
                              error=TypeError)
    elif arr.dtype.kind not in "biuf":
        raise param_error(param, func, "numeric features (a neighbour is a numeric "
                          "perturbation)", f"<array of dtype {arr.dtype}>", error=TypeError)
    if arr.ndim < 2:
        raise param_error(param, func, "a 2-D (or higher) array of records",
                          f"<array of shape {arr.shape}>")
    if arr.shape[0] == 0:
        raise param_error(param, func, "non-empty", "<no records>")
    flat = arr.reshape(arr.shape[0], -1).astype(np.float64)
    if not np.all(np.isfinite(flat)):
        raise param_error(param, func, "finite (no NaN or inf)",
                          f"<{int(np.sum(~np.isfinite(flat)))} non-finite values>")
    return flat, tuple(arr.shape[1:]), columns


def _restore(flat: NDArray[np.float64], tail: tuple[int, ...],
             columns: Sequence[Any] | None) -> Any:
    """Rows in the members' own form (DataFrame columns, trailing axes) for the query."""
    if columns is not None:
        import pandas as pd

        return pd.DataFrame(flat, columns=columns)
    return flat.reshape((flat.shape[0], *tail))


def _check_population(population: tuple[ArrayLike, ArrayLike] | None, X: ArrayLike,
                      y: NDArray[Any], d: int, func: str) -> _Records | None:
    if population is None:
        return None
    if isinstance(population, tuple | list) and len(population) == 2:
        # The width first: the overlap check below compares rows column by column.
        width = _as_features(population[0], "population", func)[0].shape[1]
        if width != d:
            raise param_error("population", func, f"records of {d} features, as X_members",
                              f"<records of {width} features>")
    # A population row equal to a member would be a training record labelled non-member.
    X_pop, y_pop = check_population(population, X, y, func,
                                    "a population row equal to a member is a training "
                                    "record counted as a non-member")
    flat, tail, columns = _as_features(X_pop, "population", func)
    return _Records(flat, np.asarray(y_pop), tail, columns)


def _feature_scale(feature_scale: ArrayLike | None, flat: NDArray[np.float64],
                   pop_flat: NDArray[np.float64] | None, d: int, func: str
                   ) -> tuple[NDArray[np.float64], str]:
    if feature_scale is None:
        # The population is preferred: the members' spread is the thing being audited.
        source = "population standard deviation" if pop_flat is not None \
            else "members' standard deviation"
        scale = (pop_flat if pop_flat is not None else flat).std(axis=0)
        if not np.any(scale > 0):
            raise param_error("feature_scale", func, "given when no feature varies in the "
                              "records it defaults to", "<no feature varies>")
        return scale, source
    try:
        scale = np.asarray(feature_scale, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise param_error("feature_scale", func, "an array of non-negative floats",
                          f"<{type(feature_scale).__name__}>", error=TypeError) from None
    if scale.shape != (d,):
        raise param_error("feature_scale", func, f"one value per feature ({d})",
                          f"<{scale.size} values>")
    if not np.all(np.isfinite(scale)) or np.any(scale < 0) or not np.any(scale > 0):
        raise param_error("feature_scale", func, "finite, non-negative, with one value > 0",
                          "<" + np.array2string(scale[:5], precision=3) + "...>")
    return scale, "given"


def _make_attack(name: str, params: Mapping[str, Any] | None, target: Target,
                 func: str) -> MembershipAttack:
    """The attack, refused by its tags unless it scores the one query's outputs alone."""
    from privaudit.attacks import available_attacks, get_attack, get_tags

    if name not in available_attacks():
        raise param_error("attack", func, f"one of {list(SMI_ATTACKS)}", name)
    tags = get_tags(name)
    needs = [what for what, flag in (
        ("reference models", tags.needs_reference_models),
        ("white-box access", tags.needs_white_box),
        ("its own queries", tags.queries_target or tags.uses_population_features),
        ("a fit on the audited labels", tags.cross_fitted or tags.fits_on_audited),
    ) if flag]
    if needs:
        # Each radius must be scored by the same fixed adversary, from the one query.
        raise param_error("attack", func, f"an attack scoring shared outputs, one of "
                          f"{list(SMI_ATTACKS)} ({name!r} needs {', '.join(needs)})", name,
                          error=TypeError)
    if target.task not in tags.tasks:
        raise param_error("attack", func, f"an attack for a {target.task} target "
                          f"({name!r} reads {' or '.join(tags.tasks)})", name)
    if tags.needs_probabilities and not getattr(target, "reveals_probabilities", True):
        # Refused before the query: a label-only target's budget must not be spent.
        raise param_error("attack", func, "an attack reading predicted labels only (the "
                          f"target is label-only; {name!r} needs probabilities)", name)
    try:
        attack: MembershipAttack = get_attack(name, **(params or {}))
    except TypeError as exc:
        raise param_error("attack_params", func, f"constructor parameters of {name!r}",
                          f"<{sorted(params or {})}: {exc}>", error=TypeError) from None
    return attack


def _calibrates_on_members(attacker: MembershipAttack) -> bool:
    from privaudit.attacks import LossAttack

    return isinstance(attacker, LossAttack) and attacker.threshold is None


def _labels_name(neighbour_labels: NeighbourLabels) -> str:
    if isinstance(neighbour_labels, str):
        return neighbour_labels
    return getattr(neighbour_labels, "__name__", type(neighbour_labels).__name__)


# ---------------------------------------------------------------------- geometry
def _draw_neighbours(rng: np.random.Generator, flat: NDArray[np.float64],
                     scale: NDArray[np.float64], k: int, metric: str, radial: str,
                     finite: list[float]
                     ) -> tuple[dict[float, NDArray[np.float64]], NDArray[np.intp]]:
    """Each radius's neighbours, and the features they may move along (scale > 0)."""
    active = np.flatnonzero(scale > 0)
    d_eff = active.size
    # One block per (member, neighbour), shared by every radius (see Notes).
    blocks = rng.standard_normal((flat.shape[0], k, d_eff + 1))
    unit = _directions(blocks[..., :d_eff], metric)
    fraction = _fractions(blocks[..., d_eff], radial, d_eff)
    return {r: _neighbours(flat, active, scale, unit, fraction, r) for r in finite}, active


def _directions(g: NDArray[np.float64], metric: str) -> NDArray[np.float64]:
    """Unit vectors (in ``metric``) uniform on its sphere, from standard normals ``g``."""
    from scipy import special

    if metric == "l2":
        v = g
    elif metric == "l1":
        # erfc(|g| / sqrt 2) = 2 Phi(-|g|) is uniform on (0, 1]: -log of it is Exp(1).
        v = np.sign(g) * -np.log(special.erfc(np.abs(g) / math.sqrt(2.0)))
    else:
        v = special.erf(g / math.sqrt(2.0))  # uniform on (-1, 1)
    norm = np.linalg.norm(v, ord=_NORM_ORD[metric], axis=-1, keepdims=True)
    # A zero vector has probability 0; it would give a neighbour equal to its member,
    # which the membership check refuses, rather than NaN features.
    return np.divide(v, norm, out=np.zeros_like(v), where=norm > 0)


def _fractions(h: NDArray[np.float64], radial: str, d_eff: int) -> NDArray[np.float64]:
    """Distance as a fraction of the radius, from standard normals ``h``."""
    from scipy import special

    f = special.ndtr(h)  # uniform on (0, 1)
    return f if radial == "uniform" else f ** (1.0 / d_eff)


def _neighbours(flat: NDArray[np.float64], active: NDArray[np.intp],
                scale: NDArray[np.float64], unit: NDArray[np.float64],
                fraction: NDArray[np.float64], r: float) -> NDArray[np.float64]:
    n, k, _ = unit.shape
    out = np.repeat(flat, k, axis=0)
    step = (r * fraction)[..., None] * unit * scale[active]
    out[:, active] += step.reshape(n * k, -1)
    return out


def _distances(near: NDArray[np.float64], flat: NDArray[np.float64],
               active: NDArray[np.intp], scale: NDArray[np.float64], k: int,
               metric: str) -> NDArray[np.float64]:
    """Realised distance of each neighbour from its member (what the radius bounds)."""
    diff = (near - np.repeat(flat, k, axis=0))[:, active] / scale[active]
    return np.asarray(np.linalg.norm(diff, ord=_NORM_ORD[metric], axis=1))


def _distance_extra(metric: str, source: str, d_eff: int, d: int,
                    dist: NDArray[np.float64]) -> dict[str, Any]:
    return {
        "distance": f"{metric} norm of (x' - x) / s over the features with s > 0, "
                    f"s = {source}",
        "n_features_perturbed": d_eff, "n_features": d,
        "mean_distance": float(dist.mean()), "max_distance": float(dist.max()),
        "min_distance": float(dist.min()),
    }


def _neighbour_labels(how: NeighbourLabels, neighbours: dict[float, NDArray[np.float64]],
                      finite: list[float], y_centre: NDArray[Any], members: _Records,
                      func: str) -> dict[float, NDArray[Any]]:
    if isinstance(how, str) or not finite:  # "member", the one name the settings accept
        return {r: y_centre for r in finite}
    stacked = np.concatenate([neighbours[r] for r in finite])
    given = np.asarray(how(members.restore(stacked), np.tile(y_centre, len(finite))))
    if given.shape != (stacked.shape[0],):
        raise param_error("neighbour_labels", func, f"a callable returning one label per "
                          f"neighbour ({stacked.shape[0]})", f"<array of shape {given.shape}>")
    m = y_centre.shape[0]
    return {r: given[i * m:(i + 1) * m] for i, r in enumerate(finite)}


def _check_finite(near: dict[float, NDArray[np.float64]], func: str) -> None:
    """Every neighbour within float32's range, refused naming ``radii`` otherwise.

    A radius far beyond the features' scale overflows: the target would be asked about
    points at infinity (an ordinary-looking AUC), or refuse them in its own input checks
    (scikit-learn's trees read float32).
    """
    limit = float(np.finfo(np.float32).max)
    for r, points in near.items():
        bad = int(np.sum((~(np.abs(points) < limit)).any(axis=1)))
        if bad:
            raise param_error("radii", func, "small enough that every neighbour is a finite "
                              "float32 (lower the radius, or scale the features)",
                              f"<radius {r:g}: {bad} neighbours beyond it>")


def _check_not_members(near: NDArray[np.float64], flat: NDArray[np.float64], r: float,
                       func: str) -> None:
    # Features alone: a neighbour with a member's features is not a neighbour, whatever
    # its label. population_overlap matches (features, label): one label for all.
    fake = np.zeros(flat.shape[0], dtype=np.int8)
    n_shared, _, row = population_overlap(flat, fake, near, np.zeros(near.shape[0], np.int8))
    if n_shared:
        raise param_error("radii", func, "large enough that no neighbour equals a training "
                          "record in floating point (raise the radius or the feature scale)",
                          f"<radius {r:g}: {n_shared} members repeated by a neighbour, "
                          f"e.g. member {row} (from 0)>")
