"""What an attack needs, declared once per attack: :class:`AttackTags` and :func:`get_tags`.

An audit plans from these tags (which attacks need a reference pool, a population, the
audited labels, white-box access, ...) instead of keeping lists of attack names, as
scikit-learn's estimator tags let meta-estimators plan without knowing the estimators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privaudit._validation import param_error

__all__ = ["AttackTags", "get_tags"]

_ALL_TASKS: tuple[str, ...] = ("classification", "regression")


@dataclass(frozen=True)
class AttackTags:
    """What an attack needs to run, read by the audit to plan the work.

    Parameters
    ----------
    tasks : tuple of str, default=("classification", "regression")
        Tasks of the targets the attack reads.
    needs_probabilities : bool, default=False
        The attack reads class probabilities: a label-only target is refused.
    needs_white_box : bool, default=False
        The attack needs the model's weights (``gradient-norm``: a torch target).
    needs_reference_models : bool, default=False
        ``fit(reference, population_outputs=None)`` takes the outputs of a reference
        (shadow) pool, a :class:`~privaudit.attacks.membership.ReferenceOutputs`.
    needs_population : bool, default=False
        The reference pool must hold population records and ``fit`` takes the target's
        outputs on them: ``fit(reference, population_outputs=...)`` (``rmia``; ``shadow``
        trains on the pool's population outputs and ignores the target's). Without
        ``needs_reference_models`` no pool is trained and the attack is fitted as
        ``fit(X=X_population, y=y_population, outputs=...)`` on the target's answers on
        the population (``quantile``).
    needs_online_pool : bool, default=False
        The reference models must also train on the audited records (``lira-online``).
    cross_fitted : bool, default=False
        Trained on the audited membership labels and scored out of fold (``trained-*``):
        ``run(..., labels=...)`` needs no ``fit``.
    fits_on_audited : bool, default=False
        ``fit(outputs=audited_outputs, labels=labels)`` estimates the attack's parameters
        on the audited records (``gaussian-threshold``: Yeom et al.'s adversary knows the
        error scales).
    queries_target : bool, default=False
        ``run`` queries the target itself; do not pass shared outputs (``gradient-norm``).
    augmented_queries : bool, default=False
        The attack can read the target's outputs on augmented records (``lira-*``).
    uses_population_features : bool, default=False
        ``fit(X=X_population)`` reads population records (not the target's answers: no
        query) to calibrate itself, and should be given them when there are some
        (``label-only``: the scale of its perturbations, each feature's standard
        deviation on the population rather than on the audited records).

    Examples
    --------
    >>> from privaudit.attacks import get_attack, get_tags
    >>> get_tags(get_attack("lira-online")).needs_online_pool
    True
    >>> get_tags("lira-offline").needs_online_pool
    False
    """

    tasks: tuple[str, ...] = _ALL_TASKS
    needs_probabilities: bool = False
    needs_white_box: bool = False
    needs_reference_models: bool = False
    needs_population: bool = False
    needs_online_pool: bool = False
    cross_fitted: bool = False
    fits_on_audited: bool = False
    queries_target: bool = False
    augmented_queries: bool = False
    uses_population_features: bool = False

    @property
    def requires_fit(self) -> bool:
        """Whether ``score`` needs ``fit`` first (a learned state to score with)."""
        return self.needs_reference_models or self.fits_on_audited or self.cross_fitted


def get_tags(attack: Any) -> AttackTags:
    """The tags of an attack (an instance, or a registered name).

    Tags are per instance: ``LiRAAttack(online=True)`` needs an online pool,
    ``LiRAAttack(online=False)`` does not.

    Parameters
    ----------
    attack : attack instance or str
        An attack (any object with ``__privaudit_tags__``), or a name of
        :func:`~privaudit.attacks.available_attacks` (created with default parameters).

    Returns
    -------
    AttackTags

    Raises
    ------
    TypeError
        When ``attack`` declares no tags.
    """
    if isinstance(attack, str):
        from privaudit.attacks._registry import get_attack

        attack = get_attack(attack)
    method = getattr(attack, "__privaudit_tags__", None)
    tags = method() if callable(method) else None
    if not isinstance(tags, AttackTags):
        raise param_error(
            "attack", "get_tags",
            "an attack declaring its tags (a subclass of privaudit.attacks.BaseAttack, or "
            "an object whose __privaudit_tags__() returns an AttackTags)",
            f"<{type(attack).__name__}>", error=TypeError,
        )
    return tags
