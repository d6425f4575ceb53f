"""The plan of a model audit, read from the attacks' tags (no list of attack names).

Each attack says what it needs (:class:`~privaudit.attacks.AttackTags`): a reference pool,
a population, an online pool, the audited labels, white-box access, probabilities. The
plan groups the attacks by what they read and refuses, before any query or training, a
request that cannot run (a label-only target for an attack that reads probabilities, an
offline pool for online LiRA, no population for RMIA).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from privaudit._validation import param_error

if TYPE_CHECKING:
    from privaudit.targets import Target

__all__ = [
    "DEFAULT_ATTACKS",
    "DEFAULT_REGRESSION_ATTACKS",
    "ModelAuditPlan",
    "default_attacks",
    "named_attacks",
    "plan_model_audit",
]

#: Attacks run on a classifier when none are named: black-box, need no reference models.
DEFAULT_ATTACKS: tuple[str, ...] = ("loss", "confidence", "entropy", "modified-entropy")
#: The same for a regressor (Yeom et al.'s loss threshold and Gaussian adversary).
DEFAULT_REGRESSION_ATTACKS: tuple[str, ...] = ("loss", "gaussian-threshold")
_FUNC = "audit_model"
#: The groups of attacks in the order a model audit runs them (ModelAuditPlan.group).
RUN_ORDER: tuple[str, ...] = ("direct", "cross-fitted", "reference")


def default_attacks(task: str) -> tuple[str, ...]:
    """The attacks an audit runs when none are named, for a target of ``task``."""
    return DEFAULT_REGRESSION_ATTACKS if task == "regression" else DEFAULT_ATTACKS


@dataclass(frozen=True)
class ModelAuditPlan:
    """Which attacks read what, and how the reference pool is trained.

    Attributes
    ----------
    attacks : list of str
        Every requested attack, in the order of the request.
    params : dict
        Constructor parameters per attack.
    tags : dict
        :class:`~privaudit.attacks.AttackTags` per attack.
    mode : {"online", "offline"}
        How the reference pool trains (online when an attack needs it).
    augmentations : list of callables or None
        Augmented queries, for the attacks that read them.
    """

    attacks: list[str]
    params: dict[str, dict[str, Any]]
    tags: dict[str, Any]
    mode: str
    augmentations: list[Any] | None = None

    def of_kind(self, kind: str, names: Sequence[str] | None = None) -> list[str]:
        """Attacks (of ``names``, default all) of one kind.

        ``"reference"`` (need a pool), ``"cross-fitted"`` (trained on the audited labels)
        or ``"direct"`` (neither).
        """
        names = self.attacks if names is None else names
        return [a for a in names if self.group(a) == kind]

    def group(self, name: str) -> str:
        """What ``name`` reads, from its tags: ``"reference"``, ``"cross-fitted"``, ``"direct"``."""
        tags = self.tags[name]
        if tags.needs_reference_models:
            return "reference"
        return "cross-fitted" if tags.cross_fitted else "direct"

    def run_order(self) -> list[str]:
        """The attacks in the order they run: the groups in :data:`RUN_ORDER`.

        Attacks that need no pool run first, so a crash while the pool trains keeps them.
        """
        return [a for group in RUN_ORDER for a in self.of_kind(group)]

    @property
    def needs_population(self) -> list[str]:
        """Attacks whose fit reads the target's outputs on the population."""
        return [a for a in self.attacks if self.tags[a].needs_population]

    def augmented(self, name: str) -> bool:
        """Whether ``name`` reads the target's answers on augmented records."""
        return self.augmentations is not None and self.tags[name].augmented_queries

    def key_parts(self, name: str, n_reference_models: int,
                  train_fraction: float | None) -> tuple:
        """What, besides the run, changes ``name``'s result: its parameters and pool.

        Only values enter the run key (never parameter names), so saved results keep
        their keys across renames (``reference_fraction`` -> ``train_fraction``).
        """
        ref_part: Any = None
        if self.tags[name].needs_reference_models:
            ref_part = (n_reference_models, self.mode, train_fraction)
            if self.augmented(name):
                ref_part = (*ref_part, [repr(a) for a in self.augmentations or ()])
        return (self.params.get(name, {}), ref_part)


def plan_model_audit(
    attacks: list[str], params: dict[str, dict[str, Any]], *, tgt: Target,
    reference_mode: str, augmentations: Sequence[Callable[[Any], Any]] | None = None,
) -> ModelAuditPlan:
    """Read the attacks' tags; refuse what cannot run on ``tgt`` (before any work)."""
    from privaudit.attacks import get_attack, get_tags

    tags = {a: get_tags(get_attack(a, **params.get(a, {}))) for a in attacks}
    if not getattr(tgt, "reveals_probabilities", True):
        blind = [a for a in attacks if tags[a].needs_probabilities]
        if blind:
            raise param_error("attacks", _FUNC,
                              f"attacks that work on a label-only target (not {blind})",
                              f"<label-only target {tgt.name!r}>")
    online = [a for a in attacks if tags[a].needs_online_pool]
    mode = reference_mode
    if mode == "auto":
        mode = "online" if online else "offline"
    if mode == "offline" and online:
        raise param_error("reference_mode", _FUNC,
                          f"'online' or 'auto' for {', '.join(online)}", reference_mode)
    augs = None
    if augmentations is not None:
        from privaudit.attacks.membership import check_augmentations

        augs = check_augmentations(augmentations, _FUNC)
    return ModelAuditPlan(list(attacks), params, tags, mode, augs)


def named_attacks(attacks: Any, attack_params: Any, *, registry: dict[str, Any],
                  base: type, default: Sequence[str], func: str,
                  excluded: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """``(name, attack)`` pairs from names of ``registry`` or ``base`` instances.

    A name is built with its entry of ``attack_params``; an instance is taken as is, under
    its ``name``. Names in ``excluded`` (run by the audit itself) are refused, as are
    unknown names and parameters for attacks that do not exist.
    """
    names = default if attacks is None else attacks
    if isinstance(names, str):
        names = [names]
    params = dict(attack_params or {})
    unknown = [k for k in params if k not in registry]
    if unknown:
        raise param_error("attack_params", func, f"keys among {sorted(registry)}", unknown)
    allowed = sorted(set(registry) - set(excluded))
    out = []
    for item in names:
        if isinstance(item, base):
            out.append((getattr(item, "name", "") or type(item).__name__, item))
        elif isinstance(item, str) and item in allowed:
            out.append((item, registry[item](**params.get(item, {}))))
        else:
            raise param_error("attacks", func, f"names among {allowed} or {base.__name__} "
                              "objects", item)
    if len({n for n, _ in out}) != len(out):
        raise param_error("attacks", func, "distinct names", [n for n, _ in out])
    return out
