"""Yeom et al.'s threshold adversary for regression under Gaussian errors (Theorem 3)."""

from __future__ import annotations

import math
import numbers
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

import privaudit.metrics as pm
from privaudit._validation import param_error, warn_degenerate
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import SignalAttack
from privaudit.exceptions import NotFittedError
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs

__all__ = ["GaussianThresholdAttack", "gaussian_advantage", "gaussian_threshold"]


def _check_sigma(value: Any, param: str, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error(param, func, "a positive real number", value, error=TypeError)
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise param_error(param, func, "a positive real number", value)
    return v


def gaussian_threshold(sigma_member: float, sigma_non_member: float) -> float:
    """Error magnitude where the member and non-member error densities are equal.

    With errors ``N(0, s_S^2)`` on members and ``N(0, s_D^2)`` on non-members, the densities
    cross at ``|e| = t`` with

    ``t = s_S s_D sqrt(2 ln(s_D / s_S) / (s_D^2 - s_S^2))``

    (Yeom et al.'s ``epsilon_eq``). Returns NaN when ``s_S == s_D`` (the densities are equal
    everywhere).

    Parameters
    ----------
    sigma_member : float
        ``sigma_S``, standard deviation of the error on members (training records).
    sigma_non_member : float
        ``sigma_D``, standard deviation of the error on non-members.

    Returns
    -------
    float

    References
    ----------
    .. [1] Yeom et al., "Privacy Risk in Machine Learning: Analyzing the Connection to
       Overfitting", CSF 2018, proof of Theorem 3.
    """
    s = _check_sigma(sigma_member, "sigma_member", "gaussian_threshold")
    d = _check_sigma(sigma_non_member, "sigma_non_member", "gaussian_threshold")
    if s == d:
        return float("nan")
    return pm.gaussian_membership_threshold(s, d)


def gaussian_advantage(sigma_member: float, sigma_non_member: float) -> float:
    """Membership advantage of Yeom et al.'s Adversary 2 under Gaussian errors (Theorem 3).

    The adversary guesses "member" where the member density of the error is larger, i.e.
    ``|e| < t`` when ``s_S < s_D`` (:func:`gaussian_threshold`). Its advantage is

    ``Adv = P(|e| < t | member) - P(|e| < t | non-member)
    = erf(t / (sqrt(2) s_S)) - erf(t / (sqrt(2) s_D))``,

    which, with ``r = s_D / s_S``, is Theorem 3's
    ``erf(r sqrt(ln r / (r^2 - 1))) - erf(sqrt(ln r / (r^2 - 1)))``. It is 0 when
    ``s_S = s_D`` and tends to 1 as ``r`` grows. When ``s_S > s_D`` the adversary guesses
    "member" where ``|e| > t``, and the advantage is the same expression in absolute value.

    Parameters
    ----------
    sigma_member : float
        ``sigma_S``, standard deviation of the error on members.
    sigma_non_member : float
        ``sigma_D``, standard deviation of the error on non-members.

    Returns
    -------
    float
        In [0, 1).

    References
    ----------
    .. [1] Yeom et al., CSF 2018, Theorem 3.

    Examples
    --------
    >>> round(gaussian_advantage(1.0, 2.0), 4)
    0.3227
    """
    s = _check_sigma(sigma_member, "sigma_member", "gaussian_advantage")
    d = _check_sigma(sigma_non_member, "sigma_non_member", "gaussian_advantage")
    return pm.gaussian_membership_advantage(s, d)


def _limit_threshold(sigma_member: float, sigma_non_member: float) -> float:
    """:func:`gaussian_threshold`, with its limits where a fitted sigma is 0.

    One sigma 0: the densities cross at error 0 (the threshold's limit); both 0: NaN
    (the same point mass, equal everywhere).
    """
    if sigma_member > 0 and sigma_non_member > 0:
        return gaussian_threshold(sigma_member, sigma_non_member)
    return 0.0 if sigma_member != sigma_non_member else float("nan")


class GaussianThresholdAttack(SignalAttack):
    """Yeom et al.'s threshold adversary (Adversary 2) for regression, Gaussian errors.

    Model: the error ``e = y - f(x)`` is ``N(0, sigma_S^2)`` on members and
    ``N(0, sigma_D^2)`` on non-members. The score is the log-likelihood ratio

    ``log f(e | member) - log f(e | non-member)
    = log(sigma_D / sigma_S) - e^2 / 2 * (1 / sigma_S^2 - 1 / sigma_D^2)``,

    a decreasing function of ``|e|`` when ``sigma_S < sigma_D``. The hard guess is
    "member" where the ratio exceeds 1, i.e. ``|e| < t`` (:func:`gaussian_threshold`), and
    :func:`gaussian_advantage` gives the advantage Theorem 3 predicts for it.

    Parameters
    ----------
    sigma_member : float, optional
        ``sigma_S``; estimated by :meth:`fit` from members when ``None``.
    sigma_non_member : float, optional
        ``sigma_D``; estimated by :meth:`fit` from non-members when ``None``.

    Attributes
    ----------
    sigma_member_, sigma_non_member_ : float
        The standard deviations used (given or estimated).
    threshold_ : float
        The error magnitude ``t`` where the two densities cross (NaN if they are equal).

    Notes
    -----
    :meth:`fit` estimates each sigma as the root mean square of the errors (the model's
    errors are assumed centred, as Theorem 3 does), on calibration records with known
    membership. Theorem 3 assumes the adversary knows both; with real models the training
    errors are often more peaked at 0 than a Gaussian, which can make the empirical
    advantage exceed the theoretical one (Yeom et al., Section 6, IWPC).

    References
    ----------
    .. [1] Yeom, Giacomelli, Fredrikson, Jha, "Privacy Risk in Machine Learning: Analyzing
       the Connection to Overfitting", CSF 2018, Section 3.3 (Adversary 2, Theorem 3).
    """

    name: ClassVar[str] = "gaussian-threshold"
    _tags: ClassVar[AttackTags] = AttackTags(tasks=("regression",), fits_on_audited=True)

    def __init__(
        self, sigma_member: float | None = None, sigma_non_member: float | None = None
    ) -> None:
        self.sigma_member = sigma_member
        self.sigma_non_member = sigma_non_member

    def check_params(self) -> None:
        """``sigma_member`` and ``sigma_non_member`` each None or a positive real number."""
        for key in ("sigma_member", "sigma_non_member"):
            value = getattr(self, key)
            if value is not None:
                _check_sigma(value, key, type(self).__name__)

    def fit(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
    ) -> GaussianThresholdAttack:
        """Estimate the missing sigmas from calibration records; returns ``self``.

        With both sigmas given as parameters, no data is needed: ``fit()`` just validates
        them.

        Parameters
        ----------
        target : Target or fitted scikit-learn regressor, optional
            The model to query.
        X, y : array-like, optional
            Calibration records and their targets.
        labels : array-like of 0/1, optional
            Membership of the calibration records; needed for each sigma to estimate.
        outputs : ModelOutputs, optional
            Precomputed outputs instead of ``target, X, y``.

        Returns
        -------
        self
        """
        self.check_params()
        given = (self.sigma_member, self.sigma_non_member)
        if all(v is not None for v in given) and target is None and outputs is None:
            self._calibrate(None, None)
            return self
        super().fit(target, X, y, labels, outputs=outputs)
        return self

    def _calibrate(self, outputs: ModelOutputs | None, labels: NDArray[np.int8] | None) -> None:
        func = f"{type(self).__name__}.fit"
        sigmas = {}
        for key, member in (("sigma_member", 1), ("sigma_non_member", 0)):
            value = getattr(self, key)
            if value is not None:
                sigmas[key] = float(value)  # checked by check_params
                continue
            if outputs is None or labels is None or not np.any(labels == member):
                who = "members (1)" if member else "non-members (0)"
                raise param_error(
                    "labels", func, f"given with {who} to estimate {key} (or pass {key})",
                    None if labels is None else f"<no {who}>",
                )
            err = outputs.signal("residual")[labels == member]
            rms = float(np.sqrt(np.mean(err**2)))
            if rms == 0.0:
                # A model that interpolates its training set (1-NN, a deep tree), or a
                # constant target: the most leaking case must not lose the audit.
                warn_degenerate(
                    f"{func}: every error on the {'members' if member else 'non-members'} "
                    f"is exactly 0, so {key} = 0: the likelihood ratio is its limit "
                    "(infinite at error 0, zero elsewhere), ranked by the error's size.")
            sigmas[key] = rms
        self.sigma_member_ = sigmas["sigma_member"]
        self.sigma_non_member_ = sigmas["sigma_non_member"]
        self.threshold_ = _limit_threshold(self.sigma_member_, self.sigma_non_member_)

    def _check_fitted(self, func: str) -> None:
        if not hasattr(self, "sigma_member_"):
            if self.sigma_member is not None and self.sigma_non_member is not None:
                self._calibrate(None, None)
                return
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted: call fit(...) on records with "
                "known membership, or pass sigma_member and sigma_non_member, before "
                f"{func}."
            )

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        return outputs.signal("absolute_error"), "absolute_error"

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        s, d = self.sigma_member_, self.sigma_non_member_
        if s > 0 and d > 0:
            return math.log(d / s) - 0.5 * raw**2 * (1.0 / s**2 - 1.0 / d**2)
        if s == d:  # both 0: the two densities are the same point mass, no information
            return np.zeros_like(raw)
        # One sigma 0: the log ratio's limit is +inf or -inf at error 0 and the opposite
        # elsewhere. Its sign decides (score > 0: member); |error| ranks the rest as every
        # small sigma would (the log ratio is monotone in |error|).
        member_at_zero = s == 0
        at_zero = raw == 0
        return np.where(at_zero, 1.0 if member_at_zero else -1.0,
                        -raw if member_at_zero else raw)

    def _predict(self, scores: NDArray[np.float64]) -> NDArray[np.int8] | None:
        if self.sigma_member_ == self.sigma_non_member_:
            warn_degenerate(
                f"{type(self).__name__}: sigma_member == sigma_non_member, so every record "
                "has likelihood ratio 1; every record is guessed a non-member."
            )
        return (scores > 0).astype(np.int8)

    def _extra(
        self,
        outputs: ModelOutputs,
        labels: NDArray[np.int8],
        scores: NDArray[np.float64],
        predictions: NDArray[np.int8] | None,
    ) -> dict[str, Any]:
        from privaudit.metrics import binary_metrics

        assert predictions is not None
        extra: dict[str, Any] = {
            "sigma_member": self.sigma_member_,
            "sigma_non_member": self.sigma_non_member_,
            "empirical_advantage": float(binary_metrics(labels, predictions).advantage),
        }
        if self.sigma_member_ > 0:  # undefined (or infinite) when members' errors are all 0
            extra["sigma_ratio"] = self.sigma_non_member_ / self.sigma_member_
        if math.isfinite(self.threshold_):
            extra["threshold"] = self.threshold_
        return extra

    def _package(self, **fields: Any) -> AttackResult:
        """The result, with Theorem 3's advantage for the fitted sigmas as a typed detail."""
        result = super()._package(**fields)
        s, d = self.sigma_member_, self.sigma_non_member_
        # Theorem 3's advantage tends to 1 as one sigma goes to 0 with the other fixed.
        result.theoretical_advantage = (gaussian_advantage(s, d) if s > 0 and d > 0
                                        else float(s != d))
        return result
