"""Up-front check that the requested attacks can run on this target and this reference pool.

Every attack declares what it needs in its :class:`~privaudit.attacks.AttackTags`: the
target's task (``tasks``), class probabilities (``needs_probabilities``), white-box access
(``needs_white_box``), a reference pool (``needs_reference_models``, then
``min_reference_models(mode)`` says how many) or known members for cross-fitting
(``cross_fitted``). The check reads those tags before any query or training, and says what
to change: the parameter to raise, or the attacks that would work on such a target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from privaudit._validation import param_error
from privaudit.attacks._tags import get_tags

__all__ = [
    "attacks_for",
    "check_attack_plan",
    "check_reference_models",
    "check_task",
]

#: How reference-model counts are called in a config file, for the messages.
_CONFIG_KEY = "reference.n_models"


def _instance(name: str, params: Mapping[str, Any] | None = None) -> Any:
    from privaudit.attacks._registry import get_attack

    return get_attack(name, **dict(params or {}))


def _runs_on(attack: Any, task: str, *, white_box: bool, probabilities: bool) -> bool:
    tags = get_tags(attack)
    if task not in tags.tasks:
        return False
    if tags.needs_white_box and not white_box:
        return False
    return probabilities or not tags.needs_probabilities


def attacks_for(task: str, *, white_box: bool = False, probabilities: bool = True) -> list[str]:
    """Registered attacks that run on a target of ``task``.

    Parameters
    ----------
    task : {"classification", "regression"}
        What the target predicts.
    white_box : bool, default=False
        Whether the target gives white-box access (a ``TorchTarget``).
    probabilities : bool, default=True
        Whether the target reveals class probabilities (False: labels only).

    Returns
    -------
    list of str
        Sorted registry names.
    """
    from privaudit.attacks._registry import available_attacks

    return [
        name for name in available_attacks()
        if _runs_on(_instance(name), task, white_box=white_box, probabilities=probabilities)
    ]


def _usable_text(task: str, white_box: bool) -> str:
    usable = attacks_for(task, white_box=white_box)
    return f"attacks that work on a {task} target ({', '.join(usable)})"


def check_task(name: str, attack: Any, task: str, *, func: str, param: str = "attacks",
               white_box: bool = False) -> None:
    """Refuse an attack that cannot read a target of ``task``, naming those that can.

    Raises
    ------
    ValueError
        ``"The 'attacks' parameter of audit_model must be attacks that work on a
        regression target (gaussian-threshold, loss, quantile). Got 'lira-offline' (it needs a
        classification target) instead."``
    """
    tasks = get_tags(attack).tasks
    if task in tasks:
        return
    needs = " or ".join(tasks)
    if param == "attacks":
        raise param_error(param, func, _usable_text(task, white_box),
                          f"<{name!r}: it needs a {needs} target>")
    usable = ", ".join(attacks_for(task, white_box=white_box))
    raise param_error(
        param, func,
        f"outputs of {needs} models revealing probabilities, which {name} reads (attacks "
        f"that work on a {task} target: {usable})", f"<{task} outputs>",
    )


def check_reference_models(name: str, attack: Any, n_models: int, mode: str, *,
                           func: str, param: str = "n_reference_models") -> None:
    """Refuse a reference pool too small for ``attack``, naming the parameter to raise.

    Raises
    ------
    ValueError
        ``"The 'n_reference_models' parameter of audit_model must be at least 2 for rmia
        (one reference model plays the target to tune offline_a; raise
        reference.n_models in a config, 16 or more for a sharp test). Got 1 instead."``
    """
    if not get_tags(attack).needs_reference_models:
        return
    need, why = attack.min_reference_models(mode)
    if n_models >= need:
        return
    if param == "n_reference_models":
        what, got = f"at least {need}", n_models
    else:
        what, got = f"outputs of at least {need} reference models", f"<{n_models} models>"
    raise param_error(
        param, func,
        f"{what} for {name} ({why}; raise n_reference_models, {_CONFIG_KEY} in a config: "
        "16 or more for a sharp test)", got,
    )


def _check_cross_fitting(name: str, attack: Any, n_members: int | None,
                         n_non_members: int | None, func: str) -> None:
    folds = getattr(attack, "n_splits", None)
    if (not get_tags(attack).cross_fitted or folds is None or n_members is None
            or n_non_members is None):
        return
    if isinstance(folds, int) and min(n_members, n_non_members) < folds:
        raise param_error(
            "labels", func,
            f"given with at least {folds} members and {folds} non-members for {name} (its "
            f"attack classifier is cross-fitted in {folds} folds; audit more records or "
            "drop it)", f"<{n_members} members, {n_non_members} non-members>",
        )


def check_attack_plan(
    attacks: Sequence[str],
    *,
    task: str,
    n_reference_models: int | None = None,
    reference_mode: str = "offline",
    white_box: bool = False,
    n_members: int | None = None,
    n_non_members: int | None = None,
    attack_params: Mapping[str, Mapping[str, Any]] | None = None,
    func: str = "check_attack_plan",
) -> None:
    """Check, before any query or training, that every attack can run as planned.

    Parameters
    ----------
    attacks : sequence of str
        Registry names (see :func:`~privaudit.attacks.available_attacks`).
    task : {"classification", "regression"}
        The target's task.
    n_reference_models : int, optional
        Size of the reference pool (``reference.n_models`` in a config); ``None`` skips
        the check.
    reference_mode : {"online", "offline"}, default="offline"
        How the pool is trained: online pools train on the audited records too.
    white_box : bool, default=False
        Whether the target gives white-box access (``gradient-norm`` needs it).
    n_members, n_non_members : int, optional
        Audited members and non-members (the cross-fitted ``trained-*`` attacks need
        ``n_splits`` of each).
    attack_params : dict, optional
        Constructor parameters per attack (e.g. RMIA's ``offline_a``).
    func : str
        Caller, for the messages.

    Raises
    ------
    ValueError
        Naming the attack, the parameter to change and, for a wrong task, the attacks
        that work on such a target.
    TypeError
        When ``gradient-norm`` is asked of a target without white-box access.

    Examples
    --------
    >>> check_attack_plan(["loss", "rmia"], task="classification", n_reference_models=4)
    >>> try:
    ...     check_attack_plan(["lira-offline"], task="regression")
    ... except ValueError as exc:
    ...     print(str(exc)[:93])
    The 'attacks' parameter of check_attack_plan must be attacks that work on a regression target
    """
    params = attack_params or {}
    for name in attacks:
        attack = _instance(name, params.get(name))
        check_task(name, attack, task, func=func, white_box=white_box)
        if get_tags(attack).needs_white_box and not white_box:
            raise param_error(
                "attacks", func,
                f"black-box attacks for this target, since {name} needs the weights (a "
                "privaudit.targets.TorchTarget); " + _usable_text(task, False),
                f"<{name!r}>", error=TypeError,
            )
        if n_reference_models is not None:
            check_reference_models(name, attack, int(n_reference_models), reference_mode,
                                   func=func)
        _check_cross_fitting(name, attack, n_members, n_non_members, func)
