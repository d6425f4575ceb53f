"""The gap attack: a correctly classified record is guessed a member (Yeom et al.)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import ParameterFreeAttack
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs

__all__ = ["GapAttack"]


class GapAttack(ParameterFreeAttack):
    """Gap (correctness) attack: score 1 for a correctly classified record, 0 otherwise.

    Yeom et al.'s Adversary 1 for classification, and IBM ART's
    ``LabelOnlyGapAttack``: its advantage is the gap between the training and the test
    accuracy. It reads predicted labels only, so it runs on a label-only target with one
    query per record, and it is the baseline every label-only attack must beat.
    Nothing is learned: :meth:`fit` only returns ``self``.

    Notes
    -----
    The scores take two values, so the ROC curve has one corner: the TPR at a low FPR is
    that of the corner (the training accuracy) only when the test error reaches it.
    ``run`` also gives the hard guesses (1 = correctly classified).

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M., Jha, S. (2018). Privacy Risk in
       Machine Learning: Analyzing the Connection to Overfitting. CSF 2018 (Adversary 1).
    .. [2] Choquette-Choo, C. A., Tramèr, F., Carlini, N., Papernot, N. (2021). Label-Only
       Membership Inference Attacks. ICML 2021 (the gap attack baseline).

    Examples
    --------
    >>> from privaudit.attacks import get_attack
    >>> get_attack("gap")
    GapAttack()
    """

    name: ClassVar[str] = "gap"
    _tags: ClassVar[AttackTags] = AttackTags(tasks=("classification",))

    def __init__(self) -> None:
        pass

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        return np.asarray(outputs.signal("correctness"), dtype=np.float64), "correctness"

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        return raw.copy()

    def _predict(self, scores: NDArray[np.float64]) -> NDArray[np.int8] | None:
        return (scores > 0.5).astype(np.int8)

    def _package(self, **fields: Any) -> AttackResult:
        """The result, with the accuracy on members and on non-members as typed details.

        The two accuracies (the scores are correctness) are the target's training and
        test accuracy on the audited records; unset when one side has no record.
        """
        result = super()._package(**fields)
        scores, labels = result.scores, result.labels
        members, non = scores[labels == 1], scores[labels == 0]
        if members.size and non.size:
            result.train_accuracy = float(members.mean())
            result.test_accuracy = float(non.mean())
        return result
