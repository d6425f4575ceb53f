"""``audit_attributes``: attribute inference against a model, on the audit template.

The attacker knows every attribute of a record but the sensitive one, its label, the
model (as a query oracle) and a sample of the population with the sensitive attribute
(``population``); the audit asks how often the attacker guesses the attribute right on
the model's members and on non-members (Yeom et al.'s Experiment 2). Every record is
expanded into its siblings, one per candidate value, and the model is queried ONCE on all
siblings of the audited and population records; every attack reads those answers. The
model-free guesses (the prior, a classifier on the known features) are fitted on the
population, which the audit checks is disjoint from the audited records, and are reported
beside every attack.

:class:`AttributeSettings` holds what the audit does (checked before any work),
:class:`AttributeAudit` is the kind :func:`~privaudit.audits._template.drive` runs, and
:data:`AUDIT_SET_PARAMS` / :data:`THEORIES` are its registries (what the audit computes
for an attack, the theory reported beside it), so the audit keeps no list of names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import (
    MAPPING,
    NONE,
    STR,
    IntRule,
    PredicateRule,
    RealRule,
    canonical_names,
    check_attack_params,
    param_error,
    renamed,
)
from privaudit.audits._inputs import check_population, check_records
from privaudit.audits._plan import named_attacks
from privaudit.audits._run import AuditRun
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive

if TYPE_CHECKING:
    import pandas as pd

    from privaudit._progress import Progress
    from privaudit.attacks.attribute import AttributeAttack, SensitiveAttribute, SiblingOutputs
    from privaudit.attacks.membership import MembershipAttack
    from privaudit.report import AuditReport
    from privaudit.results import AttributeResult, BaselineCheck
    from privaudit.targets import Target
    from privaudit.training import Executor, ReferenceSpec

__all__ = ["AUDIT_SET_PARAMS", "DEFAULT_ATTRIBUTE_ATTACKS", "MODEL_FREE_GUESSES", "SHADOW_AI",
           "THEORIES", "AttributeAudit", "AttributeSettings", "AuditSetParam",
           "ModelFreeBaseline", "audit_attributes"]

_FUNC = "audit_attributes"
#: Attacks run when ``attacks`` is None.
DEFAULT_ATTRIBUTE_ATTACKS: tuple[str, ...] = ("model-inversion", "confidence-ai", "loss-ai",
                                              "direct")
#: The model-free guesses beside every attack (Yeom et al.'s Definition 6 simulators).
MODEL_FREE_GUESSES: tuple[str, ...] = ("prior", "known-features")
#: Zhao et al.'s Shadow AI: the most member-like sibling under Shokri's shadow-model attack,
#: its shadow models trained on the population (the ``reference`` models of the audit).
SHADOW_AI = "shadow-ai"
#: At most this many candidate values are tried per record.
MAX_CANDIDATES = 256

#: Audited or population records: an array or a DataFrame.
Records: TypeAlias = "NDArray[Any] | pd.DataFrame"
#: A column of the records: an index (arrays) or a name (DataFrames).
Column: TypeAlias = "int | str"


class ModelFreeBaseline:
    """An attribute attack against the best model-free guess on the same members.

    Passed when the lower bound of Newcombe's interval of (attack accuracy on members -
    best model-free accuracy on members) lies above 0: the model tells the attacker
    something the known features and the prior do not.
    """

    name = "model-free"

    def check(self, result: AttributeResult, random_state: int) -> BaselineCheck | None:
        import privaudit.metrics as pm
        from privaudit.results import BaselineCheck

        best = max(sorted(result.model_free), default=None,
                   key=lambda k: result.model_free_accuracy(k).value)
        if best is None or not result.n_members:
            return None
        attack, other = result.accuracy(), result.model_free_accuracy(best)
        n = result.n_members
        gap = pm.newcombe_interval(round(attack.value * n), n, round(other.value * n), n,
                                   result.confidence)
        passed = bool(gap.low > 0)
        if not passed:
            import warnings

            from privaudit.exceptions import BaselineWarning

            warnings.warn(f"{result.name}: the attack guesses {result.sensitive_attribute!r} "
                          f"of members no better than the model-free guess {best!r} "
                          f"({attack.value:.3g} vs {other.value:.3g}).", BaselineWarning,
                          stacklevel=4)
        return BaselineCheck(name=self.name, passed=passed, details={
            "model_free": best, "accuracy": other.value, "gain": gap._asdict()})


# --- the settings, declared once -----------------------------------------------------------

def _is_columns(value: object) -> bool:
    """A column (int or str), or a non-empty list of them (a one-hot group)."""
    def one(v: object) -> bool:
        return isinstance(v, (str, int, np.integer)) and not isinstance(v, (bool, np.bool_))

    if isinstance(value, (list, tuple)):
        return len(value) > 0 and all(one(v) for v in value)
    return one(value)


def _is_values(value: object) -> bool:
    return isinstance(value, Sequence | np.ndarray) and not isinstance(value, (str, bytes))


def _is_attack_list(value: object) -> bool:
    """A non-empty list of attack names or :class:`AttributeAttack` objects."""
    from privaudit.attacks.attribute import AttributeAttack

    return (isinstance(value, (list, tuple)) and len(value) > 0
            and all(isinstance(a, (str, AttributeAttack)) for a in value))


def _is_population_spec(value: object) -> bool:
    """A ReferenceSpec whose models may train on the population only."""
    from privaudit.training import ReferenceSpec

    return isinstance(value, ReferenceSpec) and value.mode in ("auto", "offline")


@dataclass(frozen=True)
class AttributeSettings(AuditSettings):
    """What an attribute audit does, checked before the model is queried.

    ``sensitive`` is the attribute's column (or columns: a one-hot group),
    ``sensitive_name`` how reports name it, ``candidates`` the values tried (``alpha``: a
    continuous attribute, ``n_grid`` its grid). ``reference`` describes Shadow AI's
    shadow models. The attacks and their parameters enter each result's own key (changing
    one attack's parameters reuses the others' results), not the audit's.
    """

    sensitive: Column | Sequence[Column]
    candidates: Sequence[Any] | None = None
    alpha: float | None = None
    n_grid: int | None = None
    sensitive_name: str = ""
    attacks: tuple[str | AttributeAttack, ...] | None = None
    attack_params: Mapping[str, Mapping[str, Any]] | None = None
    reference: ReferenceSpec | None = None

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "sensitive": [PredicateRule(_is_columns, "a column (int or str) or a non-empty list "
                                    "of columns")],
        "candidates": [NONE, PredicateRule(_is_values, "a sequence of values")],
        "alpha": [NONE, RealRule(0.0, math.inf, closed="left")],
        "n_grid": [NONE, IntRule(low=2)],
        "sensitive_name": [STR],
        "attacks": [NONE, PredicateRule(_is_attack_list, "a non-empty list of attack names "
                                        "or AttributeAttack objects")],
        "attack_params": [NONE, MAPPING],
        "reference": [NONE, PredicateRule(
            _is_population_spec, f"a privaudit.training.ReferenceSpec with mode 'auto' or "
            f"'offline' ({SHADOW_AI}'s shadows train on the population only, never on "
            "audited records)")],
    }
    # Each result's key holds its attack's parameters (Job.key_parts): changing one attack
    # (or adding one) must not recompute the others.
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({"attacks", "attack_params"})

    def check(self, func: str) -> None:
        """The declared rules, then ``n_grid``: the grid of a continuous attribute only."""
        super().check(func)
        if self.n_grid is not None and (self.alpha is None or self.candidates is not None):
            raise param_error("n_grid", func, "left out unless 'alpha' is given without "
                              "'candidates' (the grid of a continuous attribute)",
                              self.n_grid)


# --- the kind's registries -----------------------------------------------------------------

@dataclass(frozen=True)
class AuditSetParam:
    """A parameter an attack leaves to the audit (None), and how the audit computes it.

    ``trains_models``: computing it trains shadow models, so it reads ``reference``,
    ``executor``, ``n_jobs``, ``address`` and ``cache_dir``.
    """

    param: str
    compute: Callable[[AttributeAudit], Any]
    trains_models: bool = False


def _training_loss(audit: AttributeAudit) -> float:
    return audit.training_loss()


def _shadow_attack(audit: AttributeAudit) -> MembershipAttack:
    return audit.shadow_attack()


#: By registry name: the parameter the audit sets when the attack leaves it None. Yeom's
#: loss-target attack reads the members' average loss (what a model card publishes);
#: Zhao's Shadow AI reads Shokri's attack fitted on shadow models of the population.
AUDIT_SET_PARAMS: dict[str, AuditSetParam] = {
    "loss-ai": AuditSetParam("training_loss", _training_loss),
    SHADOW_AI: AuditSetParam("membership_attack", _shadow_attack, trains_models=True),
}


def _theorem_5(audit: AttributeAudit) -> dict[str, Any] | None:
    """Yeom et al.'s Theorem 5 beside Adversary 4 (regression, two candidates)."""
    import privaudit.metrics as pm

    audited, _ = audit.siblings()
    i = audit.inputs
    if (audited.loss_name != "squared_error" or len(i.attribute.candidates) != 2
            or audited.predictions is None):
        return None
    own = audited.losses[np.arange(len(i.y)), i.truth]
    sigma_s = float(np.sqrt(own[i.labels == 1].mean()))
    sigma_d = float(np.sqrt(own[i.labels == 0].mean()))
    preds = np.asarray(audited.predictions, dtype=np.float64)
    tau = float(np.mean(np.abs(preds[:, 1] - preds[:, 0])))
    return {"theorem": "Yeom et al. Theorem 5", "sigma_members": sigma_s,
            "sigma_non_members": sigma_d, "influence_tau": tau,
            "predicted_advantage": pm.gaussian_attribute_advantage(sigma_s, sigma_d, tau)}


#: By registry name: the theory's prediction reported beside the attack (``theory``).
THEORIES: dict[str, Callable[[AttributeAudit], dict[str, Any] | None]] = {
    "model-inversion": _theorem_5,
}


def plan_attacks(settings: AttributeSettings, func: str = _FUNC
                 ) -> dict[str, AttributeAttack]:
    """The attacks by name, in the request's order; the model-free guesses run beside them.

    ``shadow-ai`` is a :class:`MembershipAttributeAttack` whose shadow attack the audit
    fits when it runs (:data:`AUDIT_SET_PARAMS`). ``attack_params`` goes through the one
    check of every audit (:func:`~privaudit._validation.check_attack_params`): keys of
    requested attacks, their own parameters, values in range.
    """
    from privaudit.attacks.attribute import (
        ATTRIBUTE_ATTACKS,
        AttributeAttack,
        MembershipAttributeAttack,
    )

    registry = {**ATTRIBUTE_ATTACKS, SHADOW_AI: MembershipAttributeAttack}
    items = DEFAULT_ATTRIBUTE_ATTACKS if settings.attacks is None else settings.attacks
    # Attacks given as objects keep their own parameters: attack_params is for names.
    by_name = [i for i in items if isinstance(i, str) and i in registry]
    params = None if settings.attack_params is None else dict(settings.attack_params)
    check_attack_params(by_name, params, registry.__getitem__, func=func)
    plan = named_attacks(settings.attacks, params, registry=registry, base=AttributeAttack,
                         default=DEFAULT_ATTRIBUTE_ATTACKS, func=func,
                         excluded=MODEL_FREE_GUESSES)
    for name, attack in plan:
        try:
            attack.check_params()
        except (TypeError, ValueError) as exc:
            raise param_error("attacks", func, f"attacks with valid parameters ({exc})",
                              name) from None
    return dict(plan)


def trains_models(attacks: Mapping[str, AttributeAttack]) -> bool:
    """Whether running ``attacks`` trains shadow models (a parameter left to the audit)."""
    return any(entry.trains_models and getattr(attacks[name], entry.param) is None
               for name, entry in AUDIT_SET_PARAMS.items() if name in attacks)


def refuse_unread_options(attacks: Mapping[str, AttributeAttack], *,
                          reference: ReferenceSpec | None, executor: str | Executor,
                          n_jobs: int | None, address: str | None,
                          cache_dir: str | Path | None,
                          func: str = _FUNC) -> None:
    """Refuse the shadow models' options when no attack trains any (each names its reader).

    Called before the executor is resolved: a Ray executor is not started for nothing.
    """
    if trains_models(attacks):
        return
    readers = [n for n, e in AUDIT_SET_PARAMS.items() if e.trains_models]
    given = {"reference": reference is not None, "cache_dir": cache_dir is not None,
             "executor": not (isinstance(executor, str) and executor == "local"),
             "n_jobs": n_jobs is not None, "address": address is not None}
    for param, is_given in given.items():
        if is_given:
            raise param_error(param, func, f"left out unless {' or '.join(map(repr, readers))}"
                              " runs and the audit trains its shadow models (no "
                              "membership attack given; only they read it)",
                              f"<{param} given>")


# --- the checked inputs --------------------------------------------------------------------

@dataclass
class _Inputs:
    """The checked inputs: audited and population records, the attribute, the truth."""

    X: Records
    y: NDArray[Any]
    labels: NDArray[np.int8]
    X_pop: Records
    y_pop: NDArray[Any]
    attribute: SensitiveAttribute
    alpha: float | None
    truth: NDArray[np.int64]            # candidate index per audited record
    truth_values: NDArray[np.float64] | None
    truth_pop: NDArray[np.int64]
    record_ids: NDArray[Any] | None = None


def _candidates(values: NDArray[Any], candidates: Sequence[Any] | None,
                alpha: float | None, grid: int | None) -> tuple[Any, ...]:
    """The candidate values: given, a grid (continuous), or the population's values."""
    from privaudit.attacks.attribute import candidate_order

    if candidates is not None:
        out = [tuple(c) if isinstance(c, list) else c for c in candidates]
        if len(set(out)) != len(out) or len(out) < 2:
            raise param_error("candidates", _FUNC, "at least two distinct values",
                              list(candidates)[:10])
    elif alpha is not None:
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
        lo, hi = float(np.nanmin(flat)), float(np.nanmax(flat))
        size = grid or int(min(MAX_CANDIDATES, max(2, math.ceil((hi - lo) / alpha) + 1)))
        out = list(np.linspace(lo, hi, size))
    else:
        rows = [tuple(r) if len(r) > 1 else r[0] for r in np.asarray(values, dtype=object)]
        out = candidate_order(rows)
        if len(out) < 2:
            raise param_error("sensitive", _FUNC, "an attribute with at least two values "
                              "in the population", out)
    if len(out) > MAX_CANDIDATES:
        raise param_error("candidates", _FUNC, f"at most {MAX_CANDIDATES} values (give "
                          "alpha for a continuous attribute)", f"<{len(out)} values>")
    return tuple(v.item() if hasattr(v, "item") else v for v in out)


def _check_inputs(X: Records, y: Sequence[Any], labels: Sequence[int],
                  population: tuple[Records, Sequence[Any]] | None,
                  settings: AttributeSettings, record_ids: Sequence[Any] | None) -> _Inputs:
    from privaudit.attacks.attribute import SensitiveAttribute

    X, y, labels, record_ids = check_records(X, y, labels, record_ids, func=_FUNC)
    if population is None:
        raise param_error("population", _FUNC, "(X_population, y_population): the "
                          "attacker's records with the sensitive attribute, disjoint from "
                          "the audited ones", None)
    X_pop, y_pop = check_population(population, X, y, func=_FUNC, why="the attacker "
                                    "would know the attribute of an audited record")
    s, alpha = settings, settings.alpha
    probe = SensitiveAttribute(s.sensitive, (0, 1), s.sensitive_name)
    values = probe.current(X_pop)
    attribute = SensitiveAttribute(s.sensitive, _candidates(values, s.candidates, alpha,
                                                            s.n_grid), s.sensitive_name)
    truth, truth_values = _truth(attribute, X, alpha, "X")
    truth_pop, _ = _truth(attribute, X_pop, alpha, "population")
    return _Inputs(X, np.asarray(y), labels, X_pop, np.asarray(y_pop), attribute,
                   None if alpha is None else float(alpha), truth, truth_values, truth_pop,
                   _id_array(record_ids))


def _id_array(record_ids: Sequence[Any] | None) -> NDArray[Any] | None:
    """The ids as an array, refused before any work unless integers or strings.

    Those are the ids an :class:`~privaudit.results.AttributeResult` keeps (and saves
    without pickle); any other kind would fail only when the first result is made.
    """
    if record_ids is None:
        return None
    ids = np.asarray(record_ids)
    if ids.dtype.kind in "iuU" or (ids.dtype.kind == "O"
                                   and all(isinstance(v, str) for v in ids.tolist())):
        return ids
    raise param_error("record_ids", _FUNC, "integers or strings", f"<array of dtype "
                      f"{ids.dtype}>", error=TypeError)


def _truth(attribute: SensitiveAttribute, X: Records, alpha: float | None, where: str
           ) -> tuple[NDArray[np.int64], NDArray[np.float64] | None]:
    """Candidate index of each record (nearest for a continuous attribute) and its value."""
    if alpha is None:
        index = attribute.truth_index(X)
        if where == "X" and (index < 0).any():
            bad = attribute.current(X)[np.flatnonzero(index < 0)[0]]
            raise param_error("candidates", _FUNC, "every value the audited records take "
                              "(or alpha, for a continuous attribute)",
                              f"<an audited record has {list(bad)}>")
        return index, None
    values = np.asarray(attribute.current(X), dtype=np.float64)[:, 0]
    grid = np.asarray(attribute.candidates, dtype=np.float64)
    return np.abs(values[:, None] - grid[None, :]).argmin(1).astype(np.int64), values


def _parameters(attack: AttributeAttack) -> dict[str, Any]:
    from privaudit.results import to_jsonable

    out = {}
    for key, value in attack.get_params(deep=False).items():
        try:
            out[key] = to_jsonable(value, where=key)
        except (TypeError, ValueError):
            out[key] = repr(value)
    return out


# --- the kind ------------------------------------------------------------------------------

class AttributeAudit(AuditKind):
    """The attribute inference kind: one result per attack, model-free guesses inside each.

    The work the attacks share is made once, on first use: the siblings' answers (ONE
    query of the target), the model-free guesses, the members' training loss, Shadow AI's
    shadow models (a reference pool: executor, cache, resumption).
    """

    kind = "attribute"
    func = _FUNC
    Settings = AttributeSettings
    description = "Attribute attacks"
    settings: AttributeSettings

    def __init__(self, target: object, X: Records, y: Sequence[Any], labels: Sequence[int],
                 *, population: tuple[Records, Sequence[Any]] | None,
                 record_ids: Sequence[Any] | None = None, settings: AttributeSettings,
                 options: RunOptions) -> None:
        from privaudit.targets import as_target, target_fingerprint

        super().__init__(settings, options)
        self.attacks = plan_attacks(settings)
        o = options
        refuse_unread_options(self.attacks, reference=settings.reference,
                              executor=o.executor, n_jobs=o.n_jobs, address=o.address,
                              cache_dir=o.cache_dir)
        self.inputs = _check_inputs(X, y, labels, population, settings, record_ids)
        self.target: Target = as_target(target)
        self._refuse_unread_params()
        self._model_part = target_fingerprint(self.target, func=_FUNC)
        self._siblings: tuple[SiblingOutputs, SiblingOutputs] | None = None
        self._model_free: dict[str, NDArray[np.int64]] | None = None
        self._known: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
        self.known()  # no query: a table the encoding refuses fails before any work

    def _refuse_unread_params(self) -> None:
        """Parameters an attack would not read on this target (``sigma`` on a classifier)."""
        task = self.target.task
        for name, attack in self.attacks.items():
            for param, why in attack.unused_params(task).items():
                raise param_error("attack_params", _FUNC, f"parameters {name} reads on a "
                                  f"{task} target ({param!r} is {why})",
                                  {name: {param: getattr(attack, param)}})

    # --- what drive reads --------------------------------------------------------------
    @property
    def labels(self) -> NDArray[np.int8]:
        return self.inputs.labels

    def target_name(self) -> str:
        return str(self.target.name)

    def identity(self) -> tuple[Any, ...]:
        from privaudit.training import data_fingerprint

        i, tgt = self.inputs, self.target
        return (tgt.name, type(tgt).__name__, self._model_part, data_fingerprint(i.X, i.y),
                i.labels, data_fingerprint(i.X_pop, i.y_pop), repr(i.attribute.column),
                i.attribute.label, [repr(c) for c in i.attribute.candidates], i.alpha,
                None if i.record_ids is None else i.record_ids.astype(str))

    def answers(self) -> Callable[[], NDArray[np.float64]] | None:
        # No readable parameters: the model's answers identify it.
        if self._model_part is not None:
            return None
        return lambda: self.siblings()[0].losses

    def consistent(self, job: Job) -> Callable[[AttributeResult], bool]:
        # A saved result is reused only with these ids (one saved without ids has positions).
        i = self.inputs
        ids = np.arange(len(i.labels)) if i.record_ids is None else i.record_ids
        return lambda saved: bool(np.array_equal(saved.members, i.labels)
                                  and np.array_equal(saved.record_ids, ids))

    def baseline(self) -> ModelFreeBaseline:
        return ModelFreeBaseline()

    def plan(self) -> list[Job]:
        return [Job(name, attack.get_params(deep=False),
                    (repr(attack.get_params(deep=False)),), order)
                for order, (name, attack) in enumerate(self.attacks.items())]

    def run_job(self, job: Job, run: AuditRun) -> AttributeResult:
        from privaudit.results import AttributeResult

        audited, pop = self.siblings()
        i = self.inputs
        attack = self._completed(job.name, self.attacks[job.name])
        known, known_pop = self.known()
        attack.fit(pop, i.truth_pop, known_pop)
        guesses, posteriors = attack.guess(audited, known)  # one scoring
        theory = THEORIES[job.name](self) if job.name in THEORIES else None
        return AttributeResult(
            candidates=list(i.attribute.candidates), guesses=guesses,
            members=i.labels, truth=None if i.alpha is not None else i.truth,
            truth_values=i.truth_values, alpha=i.alpha, posteriors=posteriors,
            model_free=self.model_free(), attack=job.name, target=self.target.name,
            sensitive_attribute=i.attribute.label, record_ids=i.record_ids,
            parameters=_parameters(attack), theory=theory)

    def _completed(self, name: str, attack: AttributeAttack) -> AttributeAttack:
        """``attack`` with the parameter it leaves to the audit computed (if any)."""
        entry = AUDIT_SET_PARAMS.get(name)
        if entry is None or getattr(attack, entry.param) is not None:
            return attack
        return attack.set_params(**{entry.param: entry.compute(self)})

    # --- the work the attacks share, made once -----------------------------------------
    def known(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The known features of the audited and the population records, one encoding."""
        if self._known is None:
            from privaudit.attacks.attribute import known_features

            i = self.inputs
            known = known_features(i.X, i.y, i.attribute)
            known_pop = known_features(i.X_pop, i.y_pop, i.attribute)
            if known.shape[1] != known_pop.shape[1]:
                known, known_pop = self._aligned_known()
            self._known = (known, known_pop)
        return self._known

    def _aligned_known(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """One-hot columns of both tables on the union of their categories."""
        import pandas as pd

        from privaudit.attacks.attribute import known_features

        i = self.inputs
        X = pd.concat([pd.DataFrame(i.X).reset_index(drop=True),
                       pd.DataFrame(i.X_pop).reset_index(drop=True)], ignore_index=True)
        both = known_features(X, np.r_[i.y, i.y_pop], i.attribute)
        return both[:len(i.y)], both[len(i.y):]

    def siblings(self) -> tuple[SiblingOutputs, SiblingOutputs]:
        """Sibling outputs of the audited and the population records: ONE query."""
        if self._siblings is None:
            import pandas as pd

            from privaudit.attacks.attribute import query_siblings

            i, n = self.inputs, len(self.inputs.y)
            if hasattr(i.X, "iloc"):
                X = pd.concat([i.X, i.X_pop], ignore_index=True)
            else:
                X = np.concatenate([np.asarray(i.X), np.asarray(i.X_pop)])
            both = query_siblings(self.target, X, np.r_[i.y, i.y_pop], i.attribute)
            self._siblings = (_rows(both, 0, n), _rows(both, n, both.n_records))
        return self._siblings

    def model_free(self) -> dict[str, NDArray[np.int64]]:
        """Guesses of the model-free attackers, fitted on the population."""
        if self._model_free is None:
            from privaudit.attacks.attribute import KnownFeaturesGuess, PriorGuess

            m = len(self.inputs.attribute.candidates)
            known, known_pop = self.known()
            guesses = {"prior": PriorGuess(), "known-features": KnownFeaturesGuess(
                random_state=self.options.random_state)}
            self._model_free = {
                k: g.fit(None, self.inputs.truth_pop, known_pop, n_candidates=m
                         ).predict(None, known) for k, g in guesses.items()}
        return self._model_free

    def training_loss(self) -> float:
        """The members' average loss at their true value (what a model card publishes)."""
        audited, _ = self.siblings()
        i = self.inputs
        own = audited.losses[np.arange(len(i.y)), i.truth]
        return float(own[i.labels == 1].mean())

    def shadow_attack(self) -> MembershipAttack:
        """Shokri's attack fitted on shadow models trained on halves of the population.

        The shadows are a reference pool: they train through the run options' executor
        and are cached in ``cache_dir``, where a rerun finds them (it trains nothing).
        """
        from privaudit.attacks.membership import ShadowModelAttack, collect_reference_outputs
        from privaudit.training import ReferenceSpec

        spec = self.settings.reference or ReferenceSpec(n_models=8)
        i, o = self.inputs, self.options
        reference = collect_reference_outputs(
            self._recipe(spec), i.X_pop, i.y_pop, X_population=i.X_pop,
            y_population=i.y_pop, n_models=spec.n_models, mode="offline",
            train_fraction=spec.train_fraction or 0.5, executor=o.resolved_executor,
            cache_dir=o.cache_dir, random_state=o.random_state,
            **({} if spec.to_target is None else {"to_target": spec.to_target}))
        return ShadowModelAttack(random_state=o.random_state).fit(reference)

    def _recipe(self, spec: ReferenceSpec) -> object:
        """The spec's recipe, or an unfitted clone of a scikit-learn target."""
        if spec.recipe is not None:
            return spec.recipe
        estimator = getattr(self.target, "estimator", None)
        if estimator is None:
            raise param_error("reference", _FUNC, f"a ReferenceSpec with a recipe to train "
                              f"{SHADOW_AI}'s shadow models (only scikit-learn targets "
                              "default to a clone)", spec)
        from sklearn.base import clone

        return clone(estimator)


def _rows(both: SiblingOutputs, start: int, stop: int) -> SiblingOutputs:
    """The sibling outputs of records ``start .. stop - 1``."""
    from privaudit.attacks.attribute import SiblingOutputs

    rows, m = slice(start, stop), both.n_candidates
    return SiblingOutputs(
        losses=both.losses[rows], loss_name=both.loss_name, task=both.task,
        probabilities=None if both.probabilities is None else both.probabilities[rows],
        predictions=None if both.predictions is None else both.predictions[rows],
        outputs=both.outputs.subset(np.arange(start * m, stop * m)))


def audit_attributes(
    target: object = None,
    X: Records | None = None,
    y: Sequence[Any] | None = None,
    labels: Sequence[int] | None = None,
    *,
    sensitive: Column | Sequence[Column],
    population: tuple[Records, Sequence[Any]] | None = None,
    candidates: Sequence[Any] | None = None,
    alpha: float | None = None,
    n_grid: int | None = None,
    attacks: Sequence[str | AttributeAttack] | str | None = None,
    attack_params: Mapping[str, Mapping[str, Any]] | None = None,
    reference: ReferenceSpec | None = None,
    record_ids: Sequence[Any] | None = None,
    sensitive_name: str = "",
    random_state: int = 0,
    executor: str | Executor = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    cache_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    dataset: str = "",
    progress: Callable[[str], None] | Progress | None = None,
    model: object = None,
    name: str | None = None,
) -> AuditReport:
    """Attribute inference attacks against ``target``, one result per attack.

    Parameters
    ----------
    target : fitted model or privaudit Target
        Anything :func:`privaudit.targets.as_target` accepts (its query counter counts
        every sibling).
    X, y : records and labels
        The audited records: the model's members and non-members (array or DataFrame).
    labels : array of {0, 1}
        1 = the record trained the model, 0 = it did not (same distribution).
    sensitive : int, str or list
        The sensitive attribute's column (index or name), or its columns (a one-hot
        group: candidates are then tuples).
    population : (X_population, y_population)
        The attacker's own records, with the sensitive attribute known: what the attacks
        and the model-free guesses are fitted on. Must be disjoint from the audited
        records (checked): the model-free baselines never see the audited data.
    candidates : sequence, optional
        The values to try. Default: the population's values (exact inference), or with
        ``alpha`` an even grid over their range.
    alpha : float, optional
        Approximate attribute inference for a continuous attribute (Zhao et al.): a guess
        is right when within ``alpha`` of the truth.
    n_grid : int, optional
        Grid size with ``alpha`` (default: spacing ``alpha``, at most 256 values); refused
        without ``alpha``.
    attacks : sequence of str or AttributeAttack, optional
        Among ``model-inversion``, ``confidence-ai``, ``loss-ai``, ``direct``,
        ``shadow-ai`` (Zhao et al.: Shokri's shadow-model attack over the siblings, its
        shadow models trained on halves of the population), ``membership-ai`` (with a
        fitted membership attack in ``attack_params``) or attack objects.
        Default :data:`DEFAULT_ATTRIBUTE_ATTACKS`. ``loss-ai`` is given
        the members' average training loss unless ``attack_params`` sets it.
    attack_params : dict, optional
        ``{attack name: {parameter: value}}``, for attacks requested by name: an attack
        that does not run, a parameter the attack does not have (the valid ones are
        listed), a value out of range or a parameter the target makes unread
        (``model-inversion``'s ``sigma`` on a classifier) is refused.
    reference : ReferenceSpec, optional
        The shadow models of ``shadow-ai``, described as every audit describes reference
        models (:class:`privaudit.training.ReferenceSpec`; default: 8 clones of a
        scikit-learn target, a ``recipe`` for any other model), trained offline on halves
        of the population (``mode`` ``"auto"`` or ``"offline"``; ``train_fraction``
        default 0.5). Refused when ``shadow-ai`` does not run, as are ``executor``,
        ``n_jobs``, ``address`` and ``cache_dir``.
    record_ids : array-like, optional
        One unique id per audited record, integers or strings (aligned on ``X``'s index
        when both are pandas objects): each result keeps them as ``record_ids``, in the
        order of its per-record arrays, and passes them to its membership views
        (:meth:`AttributeResult.to_membership_result`). Default: positions ``0 .. n - 1``.
    sensitive_name : str
        How reports name the sensitive attribute (default: the column).
    random_state, executor, n_jobs, address, cache_dir, results_dir, dataset, progress
        The run options every audit takes (:class:`~privaudit.audits.RunOptions`): the
        seed of every classifier and shadow model; where and how Shadow AI's shadow
        models train (local processes or Ray) and the cache where a rerun finds them
        (it trains nothing); where results are saved and found again by a rerun; the
        dataset's name; where progress goes.
    model, name
        Old names (a :class:`FutureWarning`; removed in a later release): ``target`` and
        ``sensitive_name``.

    Returns
    -------
    AuditReport
        One :class:`~privaudit.results.AttributeResult` per attack (iterate it as a
        list), with the model-free guesses inside
        (:meth:`AttributeResult.simulator_advantage`) and the check against the best of
        them in ``result.audit.baseline``.

    References
    ----------
    .. [1] Yeom, S. et al. "Privacy Risk in Machine Learning: Analyzing the Connection to
       Overfitting." CSF 2018.
    .. [2] Zhao, B. Z. H. et al. "On the (In)Feasibility of Attribute Inference Attacks
       on Machine Learning Models." EuroS&P 2021.
    .. [3] Fredrikson, M. et al. "Privacy in Pharmacogenetics." USENIX Security 2014.
    """
    target = renamed(model, "model", target, "target", None, func=_FUNC,
                     category=FutureWarning)
    sensitive_name = renamed(name, "name", sensitive_name, "sensitive_name", "", func=_FUNC,
                             category=FutureWarning)
    for param, value in (("target", target), ("X", X), ("y", y), ("labels", labels)):
        if value is None:
            raise param_error(param, _FUNC, "given (a required argument)", None,
                              error=TypeError)
    if isinstance(attacks, str):
        attacks = [attacks]
    attacks = canonical_names(attacks, param="attacks", func=_FUNC)
    settings = AttributeSettings(
        sensitive=sensitive, candidates=candidates, alpha=alpha, n_grid=n_grid,
        sensitive_name=sensitive_name, attacks=None if attacks is None else tuple(attacks),
        attack_params=attack_params, reference=reference)
    settings.check(_FUNC)
    # Before the executor is resolved (a Ray instance is not started for nothing).
    refuse_unread_options(plan_attacks(settings), reference=reference, executor=executor,
                          n_jobs=n_jobs, address=address, cache_dir=cache_dir)
    options = RunOptions.checked(
        _FUNC, random_state=random_state, executor=executor, n_jobs=n_jobs,
        address=address, cache_dir=cache_dir, results_dir=results_dir, progress=progress,
        dataset=dataset)
    return drive(AttributeAudit(target, X, y, labels, population=population,
                                record_ids=record_ids, settings=settings, options=options))
