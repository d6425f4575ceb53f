"""Black-box membership attacks that threshold one per-record signal."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import ThresholdAttack
from privaudit.targets import ModelOutputs

__all__ = ["ConfidenceAttack", "EntropyAttack", "LossAttack", "ModifiedEntropyAttack"]


class LossAttack(ThresholdAttack):
    """Loss-threshold attack of Yeom et al.: low loss means member.

    The score is ``-loss`` with the target's per-record loss: cross-entropy for a
    classifier with probabilities, 0-1 loss for a label-only classifier, squared error for
    a regressor. Works for classification and regression.

    Parameters
    ----------
    threshold : float, optional
        Guess "member" when ``loss <= threshold``. When ``None``, :meth:`fit` sets it to the
        average loss on the target's training records, as Yeom et al.'s threshold
        adversary does (the training loss is what a model's documentation usually states).

    Attributes
    ----------
    threshold_ : float
        The calibrated threshold (set by :meth:`fit`).

    Notes
    -----
    Yeom et al.'s Adversary 1 guesses "non-member" with probability ``loss / B`` for a
    loss bounded by ``B``; its advantage is ``R_gen / B`` (Theorem 2). Its deterministic
    counterpart thresholds the loss; the score ``-loss`` ranks records the same way for
    every threshold, so the ROC curve covers both.

    ``fit(labels=None)`` treats every calibration record as a member and takes their mean
    loss; with labels it averages the members' losses only.

    References
    ----------
    .. [1] Yeom, Giacomelli, Fredrikson, Jha, "Privacy Risk in Machine Learning: Analyzing
       the Connection to Overfitting", CSF 2018, Section 3.2 (Adversary 1, Theorem 2) and
       Section 6.

    Examples
    --------
    >>> from privaudit.attacks.membership import LossAttack
    >>> LossAttack(threshold=0.5)
    LossAttack(threshold=0.5)
    """

    name: ClassVar[str] = "loss"
    sign: ClassVar[float] = -1.0

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        return outputs.loss, outputs.loss_name

    def _calibrate(self, outputs: ModelOutputs, labels: NDArray[np.int8] | None) -> None:
        loss = outputs.loss
        if labels is not None:
            if not np.any(labels == 1):
                raise param_error(
                    "labels", f"{type(self).__name__}.fit",
                    "given with at least one member (1): the threshold is the mean "
                    "training loss", "<no members>",
                )
            loss = loss[labels == 1]
        self.threshold_ = float(np.mean(loss))


class ConfidenceAttack(ThresholdAttack):
    """True-class confidence attack: a high ``F_y(x)`` means member.

    Parameters
    ----------
    threshold : float, optional
        Guess "member" when the confidence is ``>= threshold``; :meth:`fit` calibrates it on
        members and non-members (e.g. of a shadow model) to maximise TPR - FPR.

    Attributes
    ----------
    threshold_ : float
        The calibrated threshold (set by :meth:`fit`).

    References
    ----------
    .. [1] Salem, Zhang, Humbert, Berrang, Fritz, Backes, "ML-Leaks: Model and Data
       Independent Membership Inference Attacks and Defenses on Machine Learning Models",
       NDSS 2019.
    .. [2] Song, Mittal, "Systematic Evaluation of Privacy Risks of Machine Learning
       Models", USENIX Security 2021, Section 3 (confidence-based attack).
    """

    name: ClassVar[str] = "confidence"
    _tags: ClassVar[AttackTags] = AttackTags(tasks=("classification",), needs_probabilities=True)
    sign: ClassVar[float] = 1.0

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        return outputs.signal("true_class_confidence"), "true_class_confidence"


class EntropyAttack(ThresholdAttack):
    """Prediction-entropy attack: a confident (low-entropy) prediction means member.

    Ignores the true label, so it cannot tell a confident wrong prediction from a
    confident right one; :class:`ModifiedEntropyAttack` fixes that.

    Parameters
    ----------
    threshold : float, optional
        Guess "member" when the entropy is ``<= threshold``; :meth:`fit` calibrates it.

    Attributes
    ----------
    threshold_ : float
        The calibrated threshold (set by :meth:`fit`).

    References
    ----------
    .. [1] Salem et al., "ML-Leaks", NDSS 2019.
    .. [2] Song, Mittal, "Systematic Evaluation of Privacy Risks of Machine Learning
       Models", USENIX Security 2021, Section 3 (entropy-based attack).
    """

    name: ClassVar[str] = "entropy"
    _tags: ClassVar[AttackTags] = AttackTags(tasks=("classification",), needs_probabilities=True)
    sign: ClassVar[float] = -1.0

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        return outputs.signal("entropy"), "entropy"


class ModifiedEntropyAttack(ThresholdAttack):
    """Song and Mittal's modified-entropy attack: a low ``Mentr(F(x), y)`` means member.

    ``Mentr = -(1 - F_y) log F_y - sum_{i != y} F_i log(1 - F_i)`` (see
    :func:`privaudit.signals.modified_entropy`).

    Parameters
    ----------
    threshold : float, optional
        Guess "member" when ``Mentr <= threshold``; :meth:`fit` calibrates it.

    Attributes
    ----------
    threshold_ : float
        The calibrated threshold (set by :meth:`fit`).

    Notes
    -----
    Song and Mittal calibrate one threshold per class on shadow data; this implementation
    uses one global threshold (the scores, hence the ROC curve, are the same).

    References
    ----------
    .. [1] Song, Mittal, "Systematic Evaluation of Privacy Risks of Machine Learning
       Models", USENIX Security 2021, Section 3.2, Eq. (5).
    """

    name: ClassVar[str] = "modified-entropy"
    _tags: ClassVar[AttackTags] = AttackTags(tasks=("classification",), needs_probabilities=True)
    sign: ClassVar[float] = -1.0

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        return outputs.signal("modified_entropy"), "modified_entropy"
