"""``audit_attributes``: attribute inference against a model, on the audit spine.

The attacker knows every attribute of a record but the sensitive one, its label, the
model (as a query oracle) and a sample of the population with the sensitive attribute
(``population``); the audit asks how often the attacker guesses the attribute right on
the model's members and on non-members (Yeom et al.'s Experiment 2). Every record is
expanded into its siblings, one per candidate value, and the model is queried ONCE on all
siblings of the audited and population records; every attack reads those answers. The
model-free guesses (the prior, a classifier on the known features) are fitted on the
population, which the audit checks is disjoint from the audited records, and are reported
beside every attack.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_attack_params, check_directory, param_error
from privaudit.audits._inputs import check_population, check_records
from privaudit.audits._plan import named_attacks
from privaudit.audits._run import AuditRun

__all__ = ["DEFAULT_ATTRIBUTE_ATTACKS", "MODEL_FREE_GUESSES", "SHADOW_AI", "ModelFreeBaseline",
           "audit_attributes"]

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


class ModelFreeBaseline:
    """An attribute attack against the best model-free guess on the same members.

    Passed when the lower bound of Newcombe's interval of (attack accuracy on members -
    best model-free accuracy on members) lies above 0: the model tells the attacker
    something the known features and the prior do not.
    """

    name = "model-free"

    def check(self, result: Any, random_state: int) -> Any:
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


@dataclass
class _Inputs:
    """The checked inputs: audited and population records, the attribute, the truth."""

    X: Any
    y: NDArray[Any]
    labels: NDArray[np.int8]
    X_pop: Any
    y_pop: NDArray[Any]
    attribute: Any
    alpha: float | None
    truth: NDArray[np.int64]            # candidate index per audited record
    truth_values: NDArray[np.float64] | None
    truth_pop: NDArray[np.int64]
    record_ids: NDArray[Any] | None = None


def _candidates(values: Any, candidates: Any, alpha: float | None, grid: int | None
                ) -> tuple[Any, ...]:
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


def _check_inputs(X: Any, y: Any, labels: Any, population: Any, sensitive: Any,
                  candidates: Any, alpha: Any, grid: Any, name: str,
                  record_ids: Any = None) -> _Inputs:
    from privaudit.attacks.attribute import SensitiveAttribute

    X, y, labels, record_ids = check_records(X, y, labels, record_ids, func=_FUNC)
    if population is None:
        raise param_error("population", _FUNC, "(X_population, y_population): the "
                          "attacker's records with the sensitive attribute, disjoint from "
                          "the audited ones", None)
    X_pop, y_pop = check_population(population, X, y, func=_FUNC, why="the attacker "
                                    "would know the attribute of an audited record")
    if alpha is not None and not (isinstance(alpha, (int, float)) and alpha >= 0
                                  and math.isfinite(alpha)):
        raise param_error("alpha", _FUNC, "a finite tolerance >= 0", alpha)
    probe = SensitiveAttribute(sensitive, (0, 1), name)
    values = probe.current(X_pop)
    attribute = SensitiveAttribute(sensitive, _candidates(values, candidates, alpha, grid),
                                   name)
    truth, truth_values = _truth(attribute, X, alpha, "X")
    truth_pop, _ = _truth(attribute, X_pop, alpha, "population")
    return _Inputs(X, np.asarray(y), labels, X_pop, np.asarray(y_pop), attribute,
                   None if alpha is None else float(alpha), truth, truth_values, truth_pop,
                   _id_array(record_ids))


def _id_array(record_ids: Any) -> NDArray[Any] | None:
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


def _truth(attribute: Any, X: Any, alpha: float | None, where: str
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


def _plan(attacks: Any, attack_params: Any) -> list[tuple[str, Any]]:
    """(name, attack) pairs; the model-free guesses run beside every attack, not as one.

    ``shadow-ai`` is a :class:`MembershipAttributeAttack` whose shadow attack the audit
    fits when it runs (it needs the shadow models). ``attack_params`` goes through the
    one check of every audit (:func:`~privaudit._validation.check_attack_params`): keys
    of requested attacks, their own parameters, values in range.
    """
    from privaudit.attacks.attribute import (
        ATTRIBUTE_ATTACKS,
        AttributeAttack,
        MembershipAttributeAttack,
    )

    registry = {**ATTRIBUTE_ATTACKS, SHADOW_AI: MembershipAttributeAttack}
    items = DEFAULT_ATTRIBUTE_ATTACKS if attacks is None else attacks
    # Attacks given as objects keep their own parameters: attack_params is for names.
    by_name = [i for i in ([items] if isinstance(items, str) else items)
               if isinstance(i, str) and i in registry]
    check_attack_params(by_name, attack_params, registry.__getitem__, func=_FUNC)
    plan = named_attacks(attacks, attack_params, registry=registry, base=AttributeAttack,
                         default=DEFAULT_ATTRIBUTE_ATTACKS, func=_FUNC,
                         excluded=MODEL_FREE_GUESSES)
    for name, attack in plan:
        try:
            attack.check_params()
        except (TypeError, ValueError) as exc:
            raise param_error("attacks", _FUNC, f"attacks with valid parameters ({exc})",
                              name) from None
    return plan


def _check_settings(plan: list[tuple[str, Any]], task: str, *, alpha: Any, n_grid: Any,
                    candidates: Any, reference: Any, executor: Any, cache_dir: Any) -> None:
    """Refuse settings this audit would not read (each names what reads it)."""
    if n_grid is not None and (alpha is None or candidates is not None):
        raise param_error("n_grid", _FUNC, "left out unless 'alpha' is given without "
                          "'candidates' (the grid of a continuous attribute)", n_grid)
    for name, attack in plan:
        for param, why in attack.unused_params(task).items():
            raise param_error("attack_params", _FUNC, f"parameters {name} reads on a "
                              f"{task} target ({param!r} is {why})", {name: {param: getattr(
                                  attack, param)}})
    shadow = SHADOW_AI in [n for n, _ in plan]
    given = {"reference": reference is not None, "cache_dir": cache_dir is not None,
             "executor": not (isinstance(executor, str) and executor == "local")}
    for param, is_given in given.items():
        if is_given and not shadow:
            raise param_error(param, _FUNC, f"left out unless {SHADOW_AI!r} runs (only "
                              "its shadow models read it)", f"<{param} given>")
    mode = getattr(reference, "mode", "auto")
    if mode not in ("auto", "offline"):
        raise param_error("reference", _FUNC, f"a ReferenceSpec with mode 'auto' or "
                          f"'offline' ({SHADOW_AI}'s shadows train on the population "
                          "only, never on audited records)", f"<mode {mode!r}>")


class _AttributeAudit:
    """The audit's shared work: siblings queried once, model-free guesses fitted once."""

    def __init__(self, tgt: Any, inputs: _Inputs, random_state: int,
                 reference: Any = None, executor: Any = "local", cache_dir: Any = None
                 ) -> None:
        from privaudit.attacks.attribute import known_features

        self.tgt, self.inputs, self.random_state = tgt, inputs, random_state
        self.reference, self.executor, self.cache_dir = reference, executor, cache_dir
        a = inputs.attribute
        self.known = known_features(inputs.X, inputs.y, a)
        self.known_pop = known_features(inputs.X_pop, inputs.y_pop, a)
        if self.known.shape[1] != self.known_pop.shape[1]:
            self.known, self.known_pop = self._aligned_known()
        self._siblings: tuple[Any, Any] | None = None
        self._model_free: dict[str, NDArray[np.int64]] | None = None

    def _aligned_known(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """One-hot columns of both tables on the union of their categories."""
        import pandas as pd

        from privaudit.attacks.attribute import known_features

        i = self.inputs
        X = pd.concat([pd.DataFrame(i.X).reset_index(drop=True),
                       pd.DataFrame(i.X_pop).reset_index(drop=True)], ignore_index=True)
        both = known_features(X, np.r_[i.y, i.y_pop], i.attribute)
        return both[:len(i.y)], both[len(i.y):]

    def siblings(self) -> tuple[Any, Any]:
        """Sibling outputs of the audited and the population records: ONE query."""
        if self._siblings is None:
            import pandas as pd

            from privaudit.attacks.attribute import SiblingOutputs, query_siblings

            i, n = self.inputs, len(self.inputs.y)
            if hasattr(i.X, "iloc"):
                X = pd.concat([i.X, i.X_pop], ignore_index=True)
            else:
                X = np.concatenate([np.asarray(i.X), np.asarray(i.X_pop)])
            both = query_siblings(self.tgt, X, np.r_[i.y, i.y_pop], i.attribute)

            m = both.n_candidates

            def part(start: int, stop: int) -> Any:
                rows = slice(start, stop)
                return SiblingOutputs(
                    losses=both.losses[rows], loss_name=both.loss_name, task=both.task,
                    probabilities=None if both.probabilities is None else
                    both.probabilities[rows], predictions=None if both.predictions is None
                    else both.predictions[rows],
                    outputs=both.outputs.subset(np.arange(start * m, stop * m)))

            self._siblings = (part(0, n), part(n, both.n_records))
        return self._siblings

    def model_free(self) -> dict[str, NDArray[np.int64]]:
        """Guesses of the model-free attackers, fitted on the population."""
        if self._model_free is None:
            from privaudit.attacks.attribute import KnownFeaturesGuess, PriorGuess

            m = len(self.inputs.attribute.candidates)
            guesses = {"prior": PriorGuess(),
                       "known-features": KnownFeaturesGuess(random_state=self.random_state)}
            self._model_free = {
                k: g.fit(None, self.inputs.truth_pop, self.known_pop, n_candidates=m
                         ).predict(None, self.known) for k, g in guesses.items()}
        return self._model_free

    def training_loss(self) -> float:
        """The members' average loss at their true value (what a model card publishes)."""
        audited, _ = self.siblings()
        i = self.inputs
        own = audited.losses[np.arange(len(i.y)), i.truth]
        return float(own[i.labels == 1].mean())

    def shadow_attack(self) -> Any:
        """Shokri's attack fitted on shadow models trained on halves of the population."""
        from privaudit.attacks.membership import ShadowModelAttack, collect_reference_outputs
        from privaudit.audits._model import _default_recipe
        from privaudit.training import ReferenceSpec

        spec = self.reference or ReferenceSpec(n_models=8)
        i = self.inputs
        recipe = _default_recipe(spec.recipe, self.tgt, [SHADOW_AI], func=_FUNC)
        reference = collect_reference_outputs(
            recipe, i.X_pop, i.y_pop, X_population=i.X_pop, y_population=i.y_pop,
            n_models=spec.n_models, mode="offline", train_fraction=spec.train_fraction or 0.5,
            executor=self.executor, cache_dir=self.cache_dir, random_state=self.random_state,
            **({} if spec.to_target is None else {"to_target": spec.to_target}))
        return ShadowModelAttack(random_state=self.random_state).fit(reference)

    def run_attack(self, name: str, attack: Any) -> Any:
        from privaudit.attacks.attribute import LossTargetAttributeAttack
        from privaudit.results import AttributeResult

        audited, pop = self.siblings()
        i = self.inputs
        if isinstance(attack, LossTargetAttributeAttack) and attack.training_loss is None:
            attack = attack.set_params(training_loss=self.training_loss())
        if name == SHADOW_AI and attack.membership_attack is None:
            attack = attack.set_params(membership_attack=self.shadow_attack())
        attack.fit(pop, i.truth_pop, self.known_pop)
        guesses, posteriors = attack.guess(audited, self.known)  # one scoring
        return AttributeResult(
            candidates=list(i.attribute.candidates), guesses=guesses,
            members=i.labels, truth=None if i.alpha is not None else i.truth,
            truth_values=i.truth_values, alpha=i.alpha, posteriors=posteriors,
            model_free=self.model_free(), attack=name, target=self.tgt.name,
            sensitive_attribute=i.attribute.label, record_ids=i.record_ids,
            parameters=_parameters(attack), extra=self._theory(name))

    def _theory(self, name: str) -> dict[str, Any]:
        """Theorem 5's prediction beside Adversary 4 (regression, two candidates)."""
        import privaudit.metrics as pm

        audited, _ = self.siblings()
        i = self.inputs
        if (name != "model-inversion" or audited.loss_name != "squared_error"
                or len(i.attribute.candidates) != 2 or audited.predictions is None):
            return {}
        own = audited.losses[np.arange(len(i.y)), i.truth]
        sigma_s = float(np.sqrt(own[i.labels == 1].mean()))
        sigma_d = float(np.sqrt(own[i.labels == 0].mean()))
        preds = np.asarray(audited.predictions, dtype=np.float64)
        tau = float(np.mean(np.abs(preds[:, 1] - preds[:, 0])))
        return {"theory": {"theorem": "Yeom et al. Theorem 5", "sigma_members": sigma_s,
                           "sigma_non_members": sigma_d, "influence_tau": tau,
                           "predicted_advantage": pm.gaussian_attribute_advantage(
                               sigma_s, sigma_d, tau)}}


def _parameters(attack: Any) -> dict[str, Any]:
    from privaudit.results import to_jsonable

    out = {}
    for key, value in attack.get_params(deep=False).items():
        try:
            out[key] = to_jsonable(value, where=key)
        except (TypeError, ValueError):
            out[key] = repr(value)
    return out


def audit_attributes(
    model: Any,
    X: Any,
    y: Any,
    labels: Any,
    *,
    sensitive: Any,
    population: tuple[Any, Any] | None = None,
    candidates: Sequence[Any] | None = None,
    alpha: float | None = None,
    n_grid: int | None = None,
    attacks: Sequence[Any] | None = None,
    attack_params: dict[str, dict[str, Any]] | None = None,
    reference: Any = None,
    executor: Any = "local",
    cache_dir: Any = None,
    record_ids: Any = None,
    name: str = "",
    dataset: str = "",
    random_state: int = 0,
    results_dir: Any = None,
    progress: Any = None,
) -> list[Any]:
    """Attribute inference attacks against ``model``, one result per attack.

    Parameters
    ----------
    model : fitted model or privaudit Target
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
        The shadow models of ``shadow-ai`` (default: 8 clones of a scikit-learn target;
        a ``recipe`` for any other model), trained offline on halves of the population
        (mode ``"auto"`` or ``"offline"``; ``train_fraction`` default 0.5). Refused when
        ``shadow-ai`` does not run, as are ``executor`` and ``cache_dir``.
    executor : {"local", "ray"} or Executor
        Where the shadow models train.
    cache_dir : path, optional
        Where the shadow models are cached and found again by a rerun.
    record_ids : array-like, optional
        One unique id per audited record, integers or strings (aligned on ``X``'s index
        when both are pandas objects): each result keeps them as ``record_ids``, in the
        order of its per-record arrays, and passes them to its membership views
        (:meth:`AttributeResult.to_membership_result`). Default: positions ``0 .. n - 1``.
    name : str
        How reports name the attribute (default: the column).
    dataset : str
        Dataset name on the results.
    random_state : int
        Seed of every classifier.
    results_dir : path, optional
        Where results are saved as they finish and found again by a rerun.
    progress : None, callable or Progress
        Progress messages and bar.

    Returns
    -------
    list of AttributeResult
        With the model-free guesses inside (:meth:`AttributeResult.simulator_advantage`)
        and the check against the best of them in ``result.audit.baseline``.

    References
    ----------
    .. [1] Yeom, S. et al. "Privacy Risk in Machine Learning: Analyzing the Connection to
       Overfitting." CSF 2018.
    .. [2] Zhao, B. Z. H. et al. "On the (In)Feasibility of Attribute Inference Attacks
       on Machine Learning Models." EuroS&P 2021.
    .. [3] Fredrikson, M. et al. "Privacy in Pharmacogenetics." USENIX Security 2014.
    """
    from privaudit.results import ResultsStore
    from privaudit.targets import as_target, target_fingerprint
    from privaudit.training import data_fingerprint

    inputs = _check_inputs(X, y, labels, population, sensitive, candidates, alpha, n_grid,
                           name, record_ids)
    plan = _plan(attacks, attack_params)
    tgt = as_target(model)
    _check_settings(plan, tgt.task, alpha=alpha, n_grid=n_grid, candidates=candidates,
                    reference=reference, executor=executor, cache_dir=cache_dir)
    if cache_dir is not None:
        check_directory(cache_dir, param="cache_dir", func=_FUNC)
    model_part = target_fingerprint(tgt, func=_FUNC)
    identity = (tgt.name, type(tgt).__name__, model_part,
                data_fingerprint(inputs.X, inputs.y), inputs.labels,
                data_fingerprint(inputs.X_pop, inputs.y_pop), repr(inputs.attribute.column),
                inputs.attribute.label,
                None if reference is None else repr(reference),
                [repr(c) for c in inputs.attribute.candidates], inputs.alpha, dataset,
                random_state, None if inputs.record_ids is None
                else inputs.record_ids.astype(str))
    audit = _AttributeAudit(tgt, inputs, random_state, reference, executor, cache_dir)
    # A saved result is reused only with these ids (one saved without ids has positions).
    ids = np.arange(len(inputs.labels)) if inputs.record_ids is None else inputs.record_ids
    run = AuditRun(func=_FUNC, target_name=tgt.name, identity=identity,
                   random_state=random_state, store=None if results_dir is None else
                   ResultsStore(results_dir), baseline=ModelFreeBaseline(),
                   progress=progress, dataset=dataset, kind="attribute",
                   # No readable parameters: the model's answers identify it.
                   answers=(lambda: audit.siblings()[0].losses) if model_part is None
                   else None)
    results = []
    with run.tracking(len(plan), "Attribute attacks"):
        for attack_name, attack in plan:
            parts = (repr(attack.get_params(deep=False)),)
            done = run.reuse(attack_name, parts, lambda saved: np.array_equal(
                saved.members, inputs.labels) and np.array_equal(saved.record_ids, ids))
            if done is None:
                done = run.finish(attack_name, parts, audit.run_attack(attack_name, attack))
            results.append(done)
    return results
