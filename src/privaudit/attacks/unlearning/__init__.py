"""Attacks on machine unlearning: did the unlearned model really forget its records.

Results are :class:`~privaudit.results.AttackResult` with labels 1 = unlearned record,
0 = never trained on. :class:`UMIAAttack` (U-MIA) trains an RBF SVM on a surrogate
unlearned model's outputs; :class:`ULiRAAttack` (U-LiRA) is the per-example likelihood
ratio over shadows that trained on each record and unlearned it; :class:`ApolloAttack`
(online and offline) searches near each record for the artefacts of approximate
unlearning and reads only the target's labels there.
"""

from privaudit.attacks.unlearning._apollo import ApolloAttack
from privaudit.attacks.unlearning._registry import (
    SET_BY_AUDIT,
    UNLEARNING_ATTACK_CLASSES,
    unlearning_attack_class,
    unread_unlearning_settings,
)
from privaudit.attacks.unlearning._sides import shadows_for_every_record
from privaudit.attacks.unlearning._ulira import ULiRAAttack
from privaudit.attacks.unlearning._umia import UMIAAttack

__all__ = ["SET_BY_AUDIT", "UNLEARNING_ATTACK_CLASSES", "ApolloAttack", "ULiRAAttack",
           "UMIAAttack", "shadows_for_every_record", "unlearning_attack_class",
           "unread_unlearning_settings"]
