"""Warnings and errors raised by privaudit.

Errors follow one template so that a user can see at once which argument is wrong::

    The 'fpr' parameter of tpr_at_fpr must be in [0, 1). Got 1.5 instead.
"""

from __future__ import annotations

__all__ = [
    "BaselineWarning",
    "DegenerateInputWarning",
    "FidelityWarning",
    "NotFittedError",
    "OutsideFolderError",
    "PrivauditWarning",
    "StaleResultWarning",
]


class PrivauditWarning(UserWarning):
    """Base class of the warnings privaudit emits."""


class DegenerateInputWarning(PrivauditWarning):
    """Valid but degenerate input (one class only, zero variance): the result is NaN."""


class BaselineWarning(PrivauditWarning):
    """An attack is no better than its baseline (e.g. its AUC CI contains 0.5)."""


class FidelityWarning(PrivauditWarning):
    """Reference models differ clearly from the target (accuracy, data size, model type).

    Such a pool silently invalidates reference-model attacks in other tools.
    """


class StaleResultWarning(PrivauditWarning):
    """A saved result was keyed by an earlier release's run keys: it is recomputed.

    Its file still loads (``privaudit report`` reads it); an audit cannot tell whether
    it answers the same question, so it computes the result again and overwrites it.
    """


class NotFittedError(ValueError, AttributeError):
    """An estimator (attack or target) was used before it was fitted.

    Inherits from ``ValueError`` and ``AttributeError`` as scikit-learn's does, so code
    that catches either keeps working.
    """


class OutsideFolderError(ValueError):
    """A path privaudit would read or write leaves the folder it belongs to.

    Raised for ``../`` or an absolute path taken from a file's contents (a shard index, a
    tokenizer's file list, a result's file names) and for a symbolic link, anywhere on the
    way, that leads out of the folder (a planted ``results/`` or ``models.lock`` link).
    Inherits from ``ValueError`` so that code catching bad input catches it too.
    """
