"""Attacks on machine unlearning: did the unlearned model really forget its records.

Results are :class:`~privaudit.results.AttackResult` with labels 1 = unlearned record,
0 = never trained on. :class:`UMIAAttack` (U-MIA) trains an RBF SVM on a surrogate
unlearned model's outputs.
"""

from privaudit.attacks.unlearning._umia import UMIAAttack

__all__ = ["UMIAAttack"]
