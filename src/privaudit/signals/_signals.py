"""Per-record signals: the statistics every black-box membership attack reads.

Each function takes the model's outputs for ``n`` records (class probabilities of shape
``(n, C)`` and the column index of each record's true class, or regression predictions)
and returns one float per record. They are pure numpy, vectorised over records, and are
computed once per query (see :class:`privaudit.targets.ModelOutputs`) and shared by every
attack.

Logarithms of probabilities are clipped: ``log(max(p, eps))``. The default
``eps = EPS = np.finfo(np.float64).eps`` (about 2.2e-16) is the clipping
:func:`sklearn.metrics.log_loss` uses, so ``cross_entropy`` matches scikit-learn record by
record and a record the model gives probability 0 has a finite loss of about 36.04.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import param_error

__all__ = [
    "EPS",
    "absolute_error",
    "correctness",
    "cross_entropy",
    "entropy",
    "logit_confidence",
    "modified_entropy",
    "residual",
    "squared_error",
    "true_class_confidence",
]

#: Clipping of probabilities inside logarithms (same as :func:`sklearn.metrics.log_loss`).
EPS: float = float(np.finfo(np.float64).eps)

#: Clipping of :func:`logit_confidence`: the smallest normal float64, so that confidences
#: within 1e-16 of 1 (common for memorised training records) stay distinguishable.
_LOGIT_EPS: float = float(np.finfo(np.float64).tiny)


def _check_probabilities(
    probabilities: ArrayLike, func: str
) -> NDArray[np.float64]:
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise param_error(
            "probabilities", func, "a 2-D array of shape (n_records, n_classes >= 2)",
            f"<array of shape {p.shape}>",
        )
    if not np.all(np.isfinite(p)):
        raise param_error("probabilities", func, "finite", "<non-finite values>")
    return p


def _check_index(
    y_index: ArrayLike, n: int, n_classes: int, func: str
) -> NDArray[np.intp]:
    idx = np.asarray(y_index)
    if idx.ndim != 1 or idx.shape[0] != n:
        raise param_error(
            "y_index", func, f"a 1-D array of length {n} (one class index per record)",
            f"<array of shape {idx.shape}>",
        )
    if idx.dtype.kind not in "iu":
        raise param_error(
            "y_index", func, "integer column indices into 'probabilities'",
            f"<array of dtype {idx.dtype}>", error=TypeError,
        )
    if idx.size and (idx.min() < 0 or idx.max() >= n_classes):
        raise param_error(
            "y_index", func, f"in [0, {n_classes})",
            f"<values in [{idx.min()}, {idx.max()}]>",
        )
    return idx.astype(np.intp, copy=False)


def _true_class(p: NDArray[np.float64], idx: NDArray[np.intp]) -> NDArray[np.float64]:
    return p[np.arange(p.shape[0]), idx]


def _safe_log(x: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
    return np.log(np.maximum(x, eps))


def true_class_confidence(probabilities: ArrayLike, y_index: ArrayLike) -> NDArray[np.float64]:
    """Probability the model gives each record's true class, ``F_y(x)``.

    Parameters
    ----------
    probabilities : array-like of shape (n_records, n_classes)
        Predicted class probabilities.
    y_index : array-like of int, shape (n_records,)
        Column of each record's true class in ``probabilities``.

    Returns
    -------
    ndarray of shape (n_records,)
        Higher = more likely member (Salem et al.'s and Yeom et al.'s confidence signal).

    References
    ----------
    .. [1] Yeom, Giacomelli, Fredrikson, Jha, "Privacy Risk in Machine Learning: Analyzing
       the Connection to Overfitting", CSF 2018.
    """
    p = _check_probabilities(probabilities, "true_class_confidence")
    idx = _check_index(y_index, p.shape[0], p.shape[1], "true_class_confidence")
    return _true_class(p, idx).copy()


def cross_entropy(
    probabilities: ArrayLike, y_index: ArrayLike, *, eps: float = EPS
) -> NDArray[np.float64]:
    """Per-record cross-entropy loss ``-log(max(F_y(x), eps))``.

    Parameters
    ----------
    probabilities : array-like of shape (n_records, n_classes)
        Predicted class probabilities.
    y_index : array-like of int, shape (n_records,)
        Column of each record's true class in ``probabilities``.
    eps : float, default=EPS
        Clipping of the probability; the default matches :func:`sklearn.metrics.log_loss`
        and bounds the loss by ``-log(eps)`` (about 36.04).

    Returns
    -------
    ndarray of shape (n_records,)
        Lower = more likely member (Yeom et al.'s loss attack).

    References
    ----------
    .. [1] Yeom et al., "Privacy Risk in Machine Learning: Analyzing the Connection to
       Overfitting", CSF 2018, Adversary 1.
    """
    p = _check_probabilities(probabilities, "cross_entropy")
    idx = _check_index(y_index, p.shape[0], p.shape[1], "cross_entropy")
    return -_safe_log(_true_class(p, idx), eps)


def entropy(probabilities: ArrayLike, *, eps: float = EPS) -> NDArray[np.float64]:
    """Shannon entropy of each prediction, ``-sum_i F_i log F_i`` (nats), ``0 log 0 = 0``.

    Parameters
    ----------
    probabilities : array-like of shape (n_records, n_classes)
        Predicted class probabilities.
    eps : float, default=EPS
        Clipping inside the logarithm (a zero probability contributes exactly 0).

    Returns
    -------
    ndarray of shape (n_records,)
        Lower = more confident = more likely member. Ignores the true label.

    References
    ----------
    .. [1] Song, Mittal, "Systematic Evaluation of Privacy Risks of Machine Learning
       Models", USENIX Security 2021 (the entropy baseline of Section 3).
    """
    p = _check_probabilities(probabilities, "entropy")
    return -np.sum(p * _safe_log(p, eps), axis=1)


def modified_entropy(
    probabilities: ArrayLike, y_index: ArrayLike, *, eps: float = EPS
) -> NDArray[np.float64]:
    """Song and Mittal's modified prediction entropy ``Mentr(F(x), y)``.

    ``Mentr = -(1 - F_y) log F_y - sum_{i != y} F_i log(1 - F_i)``. Unlike the plain
    entropy it uses the true label: a confident *wrong* prediction has a large Mentr,
    a confident right one a Mentr near 0.

    Parameters
    ----------
    probabilities : array-like of shape (n_records, n_classes)
        Predicted class probabilities.
    y_index : array-like of int, shape (n_records,)
        Column of each record's true class in ``probabilities``.
    eps : float, default=EPS
        Clipping inside both logarithms (``log(max(F, eps))``, ``log(max(1 - F, eps))``),
        as the reference implementation does.

    Returns
    -------
    ndarray of shape (n_records,)
        Lower = more likely member.

    References
    ----------
    .. [1] Song, Mittal, "Systematic Evaluation of Privacy Risks of Machine Learning
       Models", USENIX Security 2021, Eq. (5).
    """
    p = _check_probabilities(probabilities, "modified_entropy")
    idx = _check_index(y_index, p.shape[0], p.shape[1], "modified_entropy")
    rows = np.arange(p.shape[0])
    p_y = p[rows, idx]
    terms = p * _safe_log(1.0 - p, eps)
    # Zero the true class's term rather than subtracting it from the total: when
    # F_y is near 1 its term (about log eps) would swamp the others' tiny terms.
    terms[rows, idx] = 0.0
    others = terms.sum(axis=1)
    return -(1.0 - p_y) * _safe_log(p_y, eps) - others


def correctness(probabilities: ArrayLike, y_index: ArrayLike) -> NDArray[np.float64]:
    """1.0 where the arg-max class is the true class, else 0.0 (ties: first maximum).

    Parameters
    ----------
    probabilities : array-like of shape (n_records, n_classes)
        Predicted class probabilities (or any per-class scores).
    y_index : array-like of int, shape (n_records,)
        Column of each record's true class.

    Returns
    -------
    ndarray of shape (n_records,)
        Higher = more likely member (the "gap attack" of Yeom et al.).

    References
    ----------
    .. [1] Yeom et al., CSF 2018 (0-1 loss adversary); Song & Mittal, USENIX Security 2021.
    """
    p = _check_probabilities(probabilities, "correctness")
    idx = _check_index(y_index, p.shape[0], p.shape[1], "correctness")
    return (np.argmax(p, axis=1) == idx).astype(np.float64)


def logit_confidence(
    probabilities: ArrayLike, y_index: ArrayLike, *, eps: float = _LOGIT_EPS
) -> NDArray[np.float64]:
    """Logit-scaled true-class confidence ``log(F_y / (1 - F_y))``.

    ``1 - F_y`` is computed as the sum of the other classes' probabilities, which keeps
    its precision when ``F_y`` rounds to 1 (as Carlini et al.'s implementation does).

    Parameters
    ----------
    probabilities : array-like of shape (n_records, n_classes)
        Predicted class probabilities.
    y_index : array-like of int, shape (n_records,)
        Column of each record's true class.
    eps : float, default=np.finfo(np.float64).tiny
        Clipping of both numerator and denominator before the logarithm; tiny so that the
        statistic keeps resolving memorised records (LiRA fits Gaussians to it).

    Returns
    -------
    ndarray of shape (n_records,)
        Higher = more likely member; approximately Gaussian across reference models.

    References
    ----------
    .. [1] Carlini, Chien, Nasr, Song, Terzis, Tramèr, "Membership Inference Attacks From
       First Principles", IEEE S&P 2022, Section IV.C.
    """
    p = _check_probabilities(probabilities, "logit_confidence")
    idx = _check_index(y_index, p.shape[0], p.shape[1], "logit_confidence")
    rows = np.arange(p.shape[0])
    p_y = p[rows, idx]
    # Sum the other classes directly: sum(p) - p_y would cancel to 0 when p_y rounds to 1.
    others = p.copy()
    others[rows, idx] = 0.0
    rest = others.sum(axis=1)
    return _safe_log(p_y, eps) - _safe_log(rest, eps)


def _check_pair(y: ArrayLike, predictions: ArrayLike, func: str) -> tuple[
    NDArray[np.float64], NDArray[np.float64]
]:
    yt = np.asarray(y, dtype=np.float64)
    yp = np.asarray(predictions, dtype=np.float64)
    if yp.ndim == 2 and yp.shape[1] == 1:
        yp = yp[:, 0]
    if yt.ndim != 1:
        raise param_error("y", func, "a 1-D array", f"<array of shape {yt.shape}>")
    if yp.shape != yt.shape:
        raise param_error(
            "predictions", func, f"of the same shape as 'y' {yt.shape}",
            f"<array of shape {yp.shape}>",
        )
    return yt, yp


def residual(y: ArrayLike, predictions: ArrayLike) -> NDArray[np.float64]:
    """Signed regression error ``y - f(x)`` (Yeom et al.'s epsilon).

    Parameters
    ----------
    y : array-like of shape (n_records,)
        True targets.
    predictions : array-like of shape (n_records,)
        Model predictions.

    Returns
    -------
    ndarray of shape (n_records,)

    References
    ----------
    .. [1] Yeom et al., CSF 2018, Adversary 2 and Theorem 3.
    """
    yt, yp = _check_pair(y, predictions, "residual")
    return yt - yp


def squared_error(y: ArrayLike, predictions: ArrayLike) -> NDArray[np.float64]:
    """Per-record squared error ``(y - f(x))**2``: the regression loss.

    Parameters
    ----------
    y : array-like of shape (n_records,)
        True targets.
    predictions : array-like of shape (n_records,)
        Model predictions.

    Returns
    -------
    ndarray of shape (n_records,)
        Lower = more likely member.

    References
    ----------
    .. [1] Yeom et al., CSF 2018, Section 3.
    """
    yt, yp = _check_pair(y, predictions, "squared_error")
    return (yt - yp) ** 2


def absolute_error(y: ArrayLike, predictions: ArrayLike) -> NDArray[np.float64]:
    """Per-record absolute error ``|y - f(x)|`` (the statistic Adversary 2 thresholds).

    Parameters
    ----------
    y : array-like of shape (n_records,)
        True targets.
    predictions : array-like of shape (n_records,)
        Model predictions.

    Returns
    -------
    ndarray of shape (n_records,)
        Lower = more likely member.

    References
    ----------
    .. [1] Yeom et al., CSF 2018, Theorem 3.
    """
    yt, yp = _check_pair(y, predictions, "absolute_error")
    return np.abs(yt - yp)
