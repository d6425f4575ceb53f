"""The unlearning attacks by name, what the audit sets itself, and who reads which setting.

Shared by :func:`~privaudit.audits.audit_unlearning` and ``privaudit audit unlearning``
so that a parameter or a setting no attack would read is refused in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from privaudit.attacks.unlearning._apollo import ApolloAttack
from privaudit.attacks.unlearning._ulira import ULiRAAttack
from privaudit.attacks.unlearning._umia import UMIAAttack

__all__ = ["SET_BY_AUDIT", "UNLEARNING_ATTACK_CLASSES", "unlearning_attack_class",
           "unread_unlearning_settings"]

#: Constructor parameters the audit sets from the attack's name (not the user's).
SET_BY_AUDIT: dict[str, tuple[str, ...]] = {"apollo": ("online",),
                                            "apollo-offline": ("online",)}


#: Each attack's class.
UNLEARNING_ATTACK_CLASSES: dict[str, type] = {"u-mia": UMIAAttack, "u-lira": ULiRAAttack,
                                              "apollo": ApolloAttack,
                                              "apollo-offline": ApolloAttack}


def unlearning_attack_class(name: str) -> type:
    """The class of the unlearning attack ``name`` (``apollo*``: :class:`ApolloAttack`)."""
    return UNLEARNING_ATTACK_CLASSES[name]


def unread_unlearning_settings(attacks: Sequence[str], attack_params: Mapping[str, Any], *,
                               forget_fraction: Any, trajectories: Any) -> dict[str, str]:
    """Settings given that none of ``attacks`` reads, each with the attacks that would.

    ``forget_fraction`` is the share U-MIA's surrogate unlearns; offline Apollo reads the
    surrogate too when its ``kind`` is ``"auto"`` (the default). ``trajectories`` are
    Apollo's search rounds (online or offline).
    """
    readers = {
        "forget_fraction": ("u-mia", "apollo-offline with kind 'auto'", forget_fraction,
                            "u-mia" in attacks or ("apollo-offline" in attacks and dict(
                                attack_params.get("apollo-offline") or {}).get(
                                    "kind", "auto") == "auto")),
        "trajectories": ("apollo", "apollo-offline", trajectories,
                         "apollo" in attacks or "apollo-offline" in attacks),
    }
    return {name: " or ".join(who) for name, (*who, value, read) in readers.items()
            if value not in (None, False) and not read}
