"""Metrics of hard (0/1) membership guesses, and Stadler et al.'s privacy gain."""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    check_binary_labels,
    check_fraction,
    paired_with_labels,
    param_error,
    warn_degenerate,
)

__all__ = ["BinaryMetrics", "binary_metrics", "privacy_gain"]


class BinaryMetrics(NamedTuple):
    """Accuracy, TPR, FPR, precision and advantage (TPR - FPR) of hard guesses."""

    accuracy: float
    true_positive_rate: float
    false_positive_rate: float
    precision: float
    advantage: float


def _check_guesses(
    labels: ArrayLike, predictions: ArrayLike, func: str
) -> tuple[NDArray[np.int8], NDArray[np.int8]]:
    predictions = paired_with_labels(labels, predictions, func=func, param="predictions")
    y = check_binary_labels(labels, func=func)
    p = check_binary_labels(predictions, func=func, param="predictions")
    if y.shape[0] != p.shape[0]:
        raise param_error(
            "predictions", func, f"the same length as 'labels' ({y.shape[0]})",
            f"<length {p.shape[0]}>",
        )
    return y, p


def _rates(
    y: NDArray[np.int8], p: NDArray[np.int8], func: str
) -> tuple[float, float]:
    n_pos = int(y.sum())
    n_neg = y.shape[0] - n_pos
    tp = int(np.sum(p[y == 1]))
    fp = int(np.sum(p[y == 0]))
    if n_pos == 0 or n_neg == 0:
        which = "members (1)" if n_pos else "non-members (0)"
        missing = "false" if n_neg == 0 else "true"
        warn_degenerate(
            f"{func}: 'labels' contain only {which}, so the {missing} positive rate and "
            "the advantage are undefined (NaN).",
            stacklevel=4,
        )
    tpr = tp / n_pos if n_pos else float("nan")
    fpr = fp / n_neg if n_neg else float("nan")
    return tpr, fpr


def binary_metrics(labels: ArrayLike, predictions: ArrayLike) -> BinaryMetrics:
    """Metrics of hard membership guesses (1 = guessed member).

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    predictions : array-like of shape (n_records,)
        The attack's guesses, 1 = member, 0 = non-member (booleans accepted).

    Returns
    -------
    BinaryMetrics
        ``accuracy`` (fraction of correct guesses), ``true_positive_rate`` (fraction of
        members guessed members), ``false_positive_rate`` (fraction of non-members guessed
        members), ``precision`` (fraction of member guesses that are right) and
        ``advantage = TPR - FPR``, Yeom et al.'s membership advantage of this adversary,
        which TAPAS reports as ``mia_advantage`` (Stadler et al.). Unlike
        :func:`~privaudit.metrics.advantage`, which picks the best threshold of a score,
        the advantage of fixed guesses can be negative (worse than random).

        With one class only, the undefined rate and the advantage are NaN; with no
        member guess at all, the precision is NaN. Both cases warn with a
        :class:`~privaudit.exceptions.DegenerateInputWarning`.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF.
    .. [2] Stadler, T., Oprisanu, B. and Troncoso, C. (2022). Synthetic data -
       anonymisation groundhog day. USENIX Security.
    """
    func = "binary_metrics"
    y, p = _check_guesses(labels, predictions, func)
    tpr, fpr = _rates(y, p, func)
    n_guessed = int(p.sum())
    if n_guessed:
        precision = float(np.sum(y[p == 1])) / n_guessed
    else:
        warn_degenerate(
            "binary_metrics: the attack guessed no member, so its precision is undefined "
            "(NaN)."
        )
        precision = float("nan")
    accuracy = float(np.mean(y == p))
    return BinaryMetrics(accuracy, tpr, fpr, precision, tpr - fpr)


def privacy_gain(
    labels: ArrayLike,
    predictions: ArrayLike,
    *,
    raw_advantage: float = 1.0,
    convention: Literal["tapas", "stadler"] = "tapas",
) -> float:
    """Privacy gain of publishing the audited artefact instead of the raw data.

    Let ``Adv_S = TPR - FPR`` be the advantage of the guesses ``predictions`` against the
    artefact (synthetic data, model), and ``Adv_R = raw_advantage`` the advantage of the
    same adversary against the raw data.

    - ``convention="tapas"`` (default) returns ``PG = Adv_R - Adv_S``. With the default
      ``raw_advantage=1`` (the adversary always wins on raw data) this is
      ``1 - (TPR - FPR)``, exactly TAPAS's ``privacy_gain``. It ranges in [0, 2]; 0 means
      no gain over publishing the raw data, 1 means the adversary is no better than
      random.
    - ``convention="stadler"`` returns ``PG = (Adv_R - Adv_S) / 4``, the number Stadler
      et al.'s reference code computes (``spring-epfl/synthetic_data_release``,
      ``get_record_privacy_gain``): there the privacy loss of a release is
      ``PL = P[success] - P[prior]`` and ``PG = (PL_R - PL_S) / 2``. In their balanced
      game (prior 1/2) with hard guesses, ``P[success] = (TPR + 1 - FPR) / 2``, so
      ``PL = (TPR - FPR) / 2 = Adv / 2`` and ``PG = (Adv_R - Adv_S) / 4``; with
      ``Adv_R = 1`` it ranges in [0, 0.5] and is 0.25 for a random-guessing adversary
      (the reference line of their plots). ``P[success]`` here is the balanced accuracy,
      i.e. the game is taken to draw member and non-member with probability 1/2 each,
      whatever the class counts of ``labels``.

    Only the TAPAS convention was checked against its code (TAPAS
    ``BinaryLabelInferenceAttackSummary.privacy_gain``); the Stadler convention follows
    the authors' released code, which we read in place of the paper's text.

    Parameters
    ----------
    labels : array-like of shape (n_records,)
        1 = member, 0 = non-member.
    predictions : array-like of shape (n_records,)
        Hard guesses against the audited artefact, 1 = member.
    raw_advantage : float in [-1, 1], default=1.0
        Advantage (TPR - FPR) of the adversary on the raw data.
    convention : {"tapas", "stadler"}, default="tapas"
        Scale of the result, see above.

    Returns
    -------
    float
        The privacy gain (NaN, with a warning, when only one class is present).

    References
    ----------
    .. [1] Stadler, T., Oprisanu, B. and Troncoso, C. (2022). Synthetic data -
       anonymisation groundhog day. USENIX Security. arXiv:2011.07018.
    .. [2] Houssiau, F., Jordon, J., Cohen, S. N., Daniel, O., Elliott, A., Geddes, J.,
       Mole, C., Rangel-Smith, C. and Szpruch, L. (2022). TAPAS: a toolbox for adversarial
       privacy auditing of synthetic data. NeurIPS Workshop on Synthetic Data for ML.
    """
    func = "privacy_gain"
    raw_advantage = check_fraction(
        raw_advantage, param="raw_advantage", func=func, low=-1.0, high=1.0,
        low_inclusive=True, high_inclusive=True,
    )
    if convention not in ("tapas", "stadler"):
        raise param_error("convention", func, "one of 'tapas', 'stadler'", convention)
    y, p = _check_guesses(labels, predictions, func)
    tpr, fpr = _rates(y, p, func)
    gain = raw_advantage - (tpr - fpr)
    return gain if convention == "tapas" else gain / 4
