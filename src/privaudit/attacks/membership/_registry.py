"""The class of a membership attack by its registry name, for the checks of ``attack_params``.

Shared by :func:`~privaudit.audits.audit_model` and ``privaudit audit model`` (as
:func:`privaudit.attacks.unlearning.unlearning_attack_class` is by the unlearning audits),
so that both check a parameter against the same class.
"""

from __future__ import annotations

__all__ = ["SET_BY_NAME", "membership_attack_class"]

#: Constructor parameters the registry name fixes (``attack_params`` may not set them:
#: ``lira-online`` with ``online: false`` would run offline LiRA under the other name).
SET_BY_NAME: dict[str, tuple[str, ...]] = {"lira-online": ("online",),
                                           "lira-offline": ("online",)}


def membership_attack_class(name: str) -> type:
    """The class of the attack registered as ``name`` (``"lira-offline"``: :class:`LiRAAttack`).

    Parameters
    ----------
    name : str
        One of :func:`privaudit.attacks.available_attacks`.

    Returns
    -------
    type
        The class whose constructor parameters and ``check_params()`` the attack has.
    """
    from privaudit.attacks._registry import get_attack

    return type(get_attack(name))
