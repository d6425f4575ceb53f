"""ROC curve, AUC, TPR at fixed FPR and membership advantage (contract; see issue 2)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray


class RocCurve(NamedTuple):
    """Points of a ROC curve, as scikit-learn's ``roc_curve`` returns them."""

    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    thresholds: NDArray[np.float64]


def roc_curve(labels: ArrayLike, scores: ArrayLike, *, drop_intermediate: bool = True) -> RocCurve:
    """ROC curve identical to ``sklearn.metrics.roc_curve`` (ties included)."""
    raise NotImplementedError


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve, identical to ``sklearn.metrics.roc_auc_score``."""
    raise NotImplementedError


def tpr_at_fpr(labels: ArrayLike, scores: ArrayLike, fpr: float) -> float:
    """Highest TPR among ROC points whose FPR <= ``fpr`` (no interpolation)."""
    raise NotImplementedError


def advantage(labels: ArrayLike, scores: ArrayLike) -> float:
    """Max over thresholds of TPR - FPR (Yeom et al.'s membership advantage)."""
    raise NotImplementedError
