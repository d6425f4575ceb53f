r"""Closed-form predictions of Yeom et al. (2018) to print beside a measured advantage.

Each function turns a quantity that can be measured or is promised (the epsilon of a DP
guarantee, the generalization error, the standard deviations of the errors on members and
non-members, the influence of an attribute) into the advantage that the paper's
adversaries get, provably. The membership advantage is the paper's Definition 4,
``Pr[guess member | member] - Pr[guess member | non-member]`` (TPR - FPR at one fixed
rule), as in :func:`~privaudit.metrics.advantage`, which reports the best threshold of a
score and so estimates the advantage of the best rule of that family (optimistically on
small samples). The attribute advantage is Definition 5, ``Pr[correct | member] -
Pr[correct | non-member]``.

Every function returns a Python float. A NaN argument gives NaN (once the other
arguments are checked), a wrong one a ``ValueError`` (``TypeError`` for a non-number)
naming the parameter.

Reference for the whole module: Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S.
(2018). Privacy risk in machine learning: analyzing the connection to overfitting. IEEE
31st Computer Security Foundations Symposium (CSF), 268-282 (arXiv:1709.01604).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._validation import check_int, check_real_array, param_error

__all__ = [
    "attribute_advantage_from_membership",
    "bounded_loss_membership_advantage",
    "bounded_loss_membership_advantage_from_losses",
    "dp_membership_advantage_bound",
    "gaussian_attribute_advantage",
    "gaussian_membership_advantage",
    "gaussian_membership_advantage_at_threshold",
    "gaussian_membership_advantage_from_ratio",
    "gaussian_membership_threshold",
]

_SIGMA = "a finite real number >= 0"


def _check_number(
    value: Any, *, param: str, func: str, expected: str, ok: Callable[[float], bool]
) -> float:
    """``value`` as a float; NaN passes (the caller returns NaN), else ``ok`` must hold."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise param_error(param, func, expected, value, error=TypeError)
    v = float(value)
    if not (math.isnan(v) or ok(v)):
        raise param_error(param, func, expected, value)
    return v


def _check_sigma(value: Any, param: str, func: str) -> float:
    return _check_number(value, param=param, func=func, expected=_SIGMA,
                         ok=lambda v: 0 <= v < math.inf)


def _any_nan(*values: float) -> bool:
    return any(math.isnan(v) for v in values)


def _prob_within(half_width: float, sigma: float) -> float:
    """``Pr[|e| <= half_width]`` for ``e ~ N(0, sigma^2)``; a point mass at 0 when sigma = 0."""
    if sigma == 0:
        return 1.0
    return float(special.erf(half_width / (sigma * math.sqrt(2))))


def _scaled_threshold(ratio: float) -> float:
    r"""Likelihood-ratio threshold over ``sqrt(2) * sigma_small``, for ``ratio > 1``.

    ``sqrt(ln r / (1 - r^{-2}))`` (the paper's ``r sqrt(ln r / (r^2 - 1))``), written with
    ``expm1`` so that it stays accurate near ``r = 1`` and does not overflow for huge r.
    """
    log_r = math.log(ratio)
    return math.sqrt(log_r / -math.expm1(-2 * log_r))


def _likelihood_ratio_advantage(ratio: float) -> float:
    """Theorem 3 for ``ratio = sigma_test / sigma_train`` in [0, inf] (not NaN)."""
    if ratio == 0:
        return 1.0
    ratio = max(ratio, 1 / ratio)  # the advantage depends on max(r, 1/r) only
    if ratio == 1:
        return 0.0
    if math.isinf(ratio):
        return 1.0
    high = _scaled_threshold(ratio)
    # high / ratio is the threshold over sqrt(2) * sigma_large. Deriving it from high
    # (rather than from its own formula) keeps it <= high, so that rounding cannot make
    # the advantage negative near ratio = 1.
    return float(special.erf(high) - special.erf(high / ratio))


# ----------------------------------------------------------------------------- Theorem 1


def dp_membership_advantage_bound(epsilon: float) -> float:
    r"""Upper bound on the membership advantage against an epsilon-DP algorithm (Theorem 1).

    Any membership adversary against an epsilon-differentially private learning algorithm
    has advantage at most ``e^epsilon - 1``. An advantage never exceeds 1, so the bound is
    clipped to 1: it says nothing once ``epsilon >= ln 2``.

    Parameters
    ----------
    epsilon : float >= 0
        Privacy parameter of a pure (delta = 0) DP guarantee whose neighbouring datasets
        differ by the replacement of one record; ``inf`` (no guarantee) gives 1.

    Returns
    -------
    float
        ``min(e^epsilon - 1, 1)``, in [0, 1]; NaN when ``epsilon`` is NaN.

    Raises
    ------
    ValueError
        If ``epsilon`` is negative.
    TypeError
        If ``epsilon`` is not a real number.

    Notes
    -----
    .. math::

        \mathrm{Adv}^M \le \min\left(e^{\varepsilon} - 1,\ 1\right)

    The paper's neighbouring datasets are ``S`` and ``S`` with one record replaced (its
    proof compares ``A_S`` with ``A_{S^{(i)}}``). A guarantee stated for the addition or
    removal of one record (as DP-SGD accountants usually report it) implies
    ``2 epsilon``-DP under replacement: pass ``2 * epsilon``. The source document mentions
    both relations without telling them apart; this follows the paper.

    The bound is loose. Applying both DP inequalities to one test (``TPR <= e^eps FPR`` and
    ``1 - FPR <= e^eps (1 - TPR)``, which hold conditionally on the replaced record and so
    on average) gives ``(e^eps - 1) / (e^eps + 1) = tanh(eps / 2)``, below ``e^eps - 1``
    for every ``eps > 0``. This function returns the paper's bound.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, Theorem 1.
    .. [2] Kairouz, P., Oh, S. and Viswanath, P. (2015). The composition theorem for
       differential privacy. ICML (the hypothesis-testing view of DP).
    """
    eps = _check_number(epsilon, param="epsilon", func="dp_membership_advantage_bound",
                        expected="a real number >= 0 (inf allowed)", ok=lambda v: v >= 0)
    return float(np.minimum(np.expm1(eps), 1.0))  # np.minimum keeps NaN


# ----------------------------------------------------------------------------- Theorem 2


def _check_loss_bound(value: Any, func: str) -> float:
    return _check_number(value, param="loss_bound", func=func,
                         expected="a finite real number > 0", ok=lambda v: 0 < v < math.inf)


def bounded_loss_membership_advantage(generalization_error: float, loss_bound: float) -> float:
    r"""Membership advantage of the bounded-loss adversary (Theorem 2, Adversary 1).

    Adversary 1 computes the loss ``l`` of the model on the challenge record and guesses
    "non-member" with probability ``l / B`` ("member" with probability ``1 - l / B``). Its
    advantage is exactly the generalization error divided by the loss bound ``B``.

    Parameters
    ----------
    generalization_error : float in [-loss_bound, loss_bound]
        ``R_gen``: expected loss on records drawn from the population minus expected loss
        on training records. Negative when the model does better on unseen records.
    loss_bound : float > 0
        ``B``, with ``0 <= loss <= B`` for every model and record (1 for the 0-1 loss).

    Returns
    -------
    float
        ``R_gen / B`` in [-1, 1]; NaN when an argument is NaN. A negative value is the
        advantage of this adversary, not of the best one (which would flip its guesses).

    Raises
    ------
    ValueError
        If ``loss_bound`` is not positive and finite, or ``|generalization_error| >
        loss_bound`` (impossible for a loss in [0, B]).
    TypeError
        If an argument is not a real number.

    Notes
    -----
    .. math::

        \mathrm{Adv}^M = \frac{R_{gen}}{B}, \qquad
        R_{gen} = \mathbb{E}_{S \sim D^n, z \sim D}[\ell(A_S, z)]
                - \mathbb{E}_{S \sim D^n, z \sim S}[\ell(A_S, z)]

    The source document states only ``l <= B``; the adversary's probability ``l / B``
    must lie in [0, 1], so the loss must also be non-negative, as in the paper. With the
    0-1 loss (``B = 1``) the adversary is deterministic ("member" iff the prediction is
    correct) and its advantage is train accuracy minus test accuracy.
    :func:`bounded_loss_membership_advantage_from_losses` gives the plug-in estimate from
    observed losses.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, Theorem 2.
    """
    func = "bounded_loss_membership_advantage"
    bound = _check_loss_bound(loss_bound, func)
    gap = _check_number(
        generalization_error, param="generalization_error", func=func,
        expected="a real number in [-loss_bound, loss_bound]",
        ok=lambda v: math.isnan(bound) or abs(v) <= bound,
    )
    return gap / bound


def _check_losses(values: Any, param: str, func: str, bound: float) -> NDArray[np.float64]:
    arr = check_real_array(values, func=func, param=param)
    if arr.ndim != 1:
        raise param_error(param, func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.size == 0:
        raise param_error(param, func, "non-empty", "<an empty array>")
    arr = arr.astype(np.float64)
    outside = ~((arr >= 0) & (arr <= bound))  # NaN and inf are outside too
    if not math.isnan(bound) and np.any(outside):
        raise param_error(
            param, func, f"losses in [0, loss_bound] = [0, {bound:g}]",
            f"<{int(outside.sum())} values outside, e.g. {arr[outside][0]!r}>",
        )
    return arr


def bounded_loss_membership_advantage_from_losses(
    member_losses: ArrayLike, non_member_losses: ArrayLike, loss_bound: float
) -> float:
    r"""Plug-in estimate of Theorem 2 from observed losses: mean loss gap over ``B``.

    The expected advantage of Adversary 1 (guess "non-member" with probability
    ``loss / B``) on these records, i.e. :func:`bounded_loss_membership_advantage` with
    ``R_gen`` replaced by its empirical value. No random guesses are drawn.

    Parameters
    ----------
    member_losses : array-like of shape (n_members,)
        Losses of the model on training records, in [0, loss_bound].
    non_member_losses : array-like of shape (n_non_members,)
        Losses of the model on records drawn from the population, in [0, loss_bound].
    loss_bound : float > 0
        ``B``, the bound of the loss.

    Returns
    -------
    float
        ``(mean(non_member_losses) - mean(member_losses)) / B`` in [-1, 1]; NaN when
        ``loss_bound`` is NaN.

    Raises
    ------
    ValueError
        If ``loss_bound`` is not positive and finite, or a loss array is not 1-D, is
        empty or holds values outside [0, loss_bound] (NaN included: a missing loss is an
        error here, as missing scores are everywhere in privaudit).
    TypeError
        If ``loss_bound`` is not a real number or a loss array is not numeric.

    Notes
    -----
    .. math::

        \widehat{\mathrm{Adv}}^M = \frac{1}{B}\left(\frac{1}{n_D}\sum_{z \notin S}
        \ell(A_S, z) - \frac{1}{n_S}\sum_{z \in S} \ell(A_S, z)\right)

    Its standard error is about ``sqrt(var_S / n_S + var_D / n_D) / B``.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, Theorem 2.
    """
    func = "bounded_loss_membership_advantage_from_losses"
    bound = _check_loss_bound(loss_bound, func)
    members = _check_losses(member_losses, "member_losses", func, bound)
    non_members = _check_losses(non_member_losses, "non_member_losses", func, bound)
    return float((non_members.mean() - members.mean()) / bound)


# ----------------------------------------------------------------------------- Theorem 3


def gaussian_membership_advantage(sigma_train: float, sigma_test: float) -> float:
    r"""Membership advantage of the likelihood-ratio adversary on Gaussian errors (Theorem 3).

    The errors ``y - A_S(x)`` are ``N(0, sigma_train^2)`` on members and
    ``N(0, sigma_test^2)`` on non-members, both known to the adversary. Adversary 2
    guesses the membership that makes the observed error more likely, which comes down to
    a threshold on ``|error|`` (:func:`gaussian_membership_threshold`). It is the best
    possible adversary in this setting (Neyman-Pearson).

    Parameters
    ----------
    sigma_train : float >= 0
        ``sigma_S``, standard deviation of the errors on members.
    sigma_test : float >= 0
        ``sigma_D``, standard deviation of the errors on non-members.

    Returns
    -------
    float
        Advantage in [0, 1]: 0 when the two are equal, 1 when exactly one is 0; NaN when
        an argument is NaN. Symmetric in its two arguments and a function of their ratio
        only (:func:`gaussian_membership_advantage_from_ratio`).

    Raises
    ------
    ValueError
        If a standard deviation is negative or infinite.
    TypeError
        If an argument is not a real number.

    Notes
    -----
    With ``r = sigma_D / sigma_S > 1`` (the paper's statement):

    .. math::

        \mathrm{Adv}^M = \operatorname{erf}\left(r\sqrt{\frac{\ln r}{r^2 - 1}}\right)
                       - \operatorname{erf}\left(\sqrt{\frac{\ln r}{r^2 - 1}}\right)
        = \operatorname{erf}\left(\sigma_D\sqrt{\frac{\ln(\sigma_D/\sigma_S)}
          {\sigma_D^2 - \sigma_S^2}}\right)
        - \operatorname{erf}\left(\sigma_S\sqrt{\frac{\ln(\sigma_D/\sigma_S)}
          {\sigma_D^2 - \sigma_S^2}}\right)

    i.e. ``Pr[|e| <= eps_eq | member] - Pr[|e| <= eps_eq | non-member]``. The paper
    assumes ``sigma_S < sigma_D``: read literally its formula is negative when
    ``sigma_S > sigma_D``. Adversary 2 is defined by the likelihoods, not by the formula:
    when members' errors are the wider ones it guesses "member" when ``|e| > eps_eq``, and
    its advantage is the absolute value of the formula, the same as for ``1 / r``. This
    function returns that (the source document agrees with the paper on the formula and
    the assumption).

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, Theorem 3
       (Adversary 2).
    """
    func = "gaussian_membership_advantage"
    s = _check_sigma(sigma_train, "sigma_train", func)
    d = _check_sigma(sigma_test, "sigma_test", func)
    if _any_nan(s, d):
        return math.nan
    if s == d:  # also both 0: the two error distributions are the same
        return 0.0
    return _likelihood_ratio_advantage(d / s if s > 0 else math.inf)


def gaussian_membership_advantage_from_ratio(ratio: float) -> float:
    r"""Theorem 3 as a function of ``sigma_test / sigma_train`` only.

    Parameters
    ----------
    ratio : float in [0, inf]
        ``r = sigma_D / sigma_S``, the ratio of the standard deviations of the errors on
        non-members and on members (the paper's measure of overfitting for regression).

    Returns
    -------
    float
        The advantage of :func:`gaussian_membership_advantage`, in [0, 1]: 0 at
        ``r = 1``, increasing in ``max(r, 1 / r)``, 1 at ``r = 0`` and ``r = inf``; NaN
        when ``ratio`` is NaN.

    Raises
    ------
    ValueError
        If ``ratio`` is negative.
    TypeError
        If ``ratio`` is not a real number.

    Notes
    -----
    .. math::

        \mathrm{Adv}^M(r) = \operatorname{erf}\left(\sqrt{\frac{\ln r}{1 - r^{-2}}}\right)
        - \operatorname{erf}\left(\sqrt{\frac{\ln r}{r^2 - 1}}\right), \qquad r > 1,

    and ``Adv(r) = Adv(1 / r)`` (see :func:`gaussian_membership_advantage`). The first
    argument, the paper's ``r sqrt(ln r / (r^2 - 1))``, is computed as written here with
    ``expm1``, so that it neither loses digits near ``r = 1`` nor overflows for large r.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, Theorem 3.
    """
    r = _check_number(ratio, param="ratio", func="gaussian_membership_advantage_from_ratio",
                      expected="a real number >= 0 (inf allowed)", ok=lambda v: v >= 0)
    return math.nan if math.isnan(r) else _likelihood_ratio_advantage(r)


def gaussian_membership_threshold(sigma_train: float, sigma_test: float) -> float:
    r"""Error threshold ``eps_eq`` of the likelihood-ratio adversary (Theorem 3).

    The two error densities are equal at ``|error| = eps_eq``. When ``sigma_train <
    sigma_test`` Adversary 2 guesses "member" iff ``|error| <= eps_eq``; when
    ``sigma_train > sigma_test`` iff ``|error| > eps_eq`` (the guesses exactly at the
    threshold do not matter, except for the point masses of a zero standard deviation).
    When the two are equal every rule has advantage 0.

    Parameters
    ----------
    sigma_train : float >= 0
        ``sigma_S``, standard deviation of the errors on members.
    sigma_test : float >= 0
        ``sigma_D``, standard deviation of the errors on non-members.

    Returns
    -------
    float
        ``eps_eq >= 0``, symmetric in the two arguments; ``sigma`` itself when both equal
        ``sigma`` (the limit, and the paper's rule when only one standard error is
        published); 0 when one of them is 0 (guess by whether the error is exactly 0);
        NaN when an argument is NaN.

    Raises
    ------
    ValueError
        If a standard deviation is negative or infinite.
    TypeError
        If an argument is not a real number.

    Notes
    -----
    Solving ``f(e | member) = f(e | non-member)`` for the two centred Gaussians:

    .. math::

        \varepsilon_{eq} = \sigma_D\sqrt{\frac{2\ln(\sigma_D/\sigma_S)}
        {(\sigma_D/\sigma_S)^2 - 1}}
        = \sigma_S\sigma_D\sqrt{\frac{2\ln(\sigma_D/\sigma_S)}{\sigma_D^2 - \sigma_S^2}}

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, proof of
       Theorem 3.
    """
    func = "gaussian_membership_threshold"
    s = _check_sigma(sigma_train, "sigma_train", func)
    d = _check_sigma(sigma_test, "sigma_test", func)
    if _any_nan(s, d):
        return math.nan
    small, large = min(s, d), max(s, d)
    ratio = large / small if small > 0 else math.inf
    if math.isinf(ratio):
        return 0.0
    if ratio == 1:
        return large
    return math.sqrt(2) * small * _scaled_threshold(ratio)


def gaussian_membership_advantage_at_threshold(
    sigma_train: float, sigma_test: float, threshold: float
) -> float:
    r"""Membership advantage of the rule "member iff ``|error| <= threshold``".

    For Gaussian errors as in Theorem 3, but a threshold chosen by the user: e.g. the
    published standard error, the paper's suggestion when the adversary knows only one of
    the two standard deviations. At :func:`gaussian_membership_threshold` (and
    ``sigma_train < sigma_test``) it is Theorem 3's advantage, the largest over all
    thresholds.

    Parameters
    ----------
    sigma_train : float >= 0
        ``sigma_S``, standard deviation of the errors on members.
    sigma_test : float >= 0
        ``sigma_D``, standard deviation of the errors on non-members.
    threshold : float >= 0
        ``h``, the largest absolute error still guessed "member".

    Returns
    -------
    float
        Advantage in [-1, 1], negative when members' errors are the wider ones (the rule
        then points the wrong way); NaN when an argument is NaN.

    Raises
    ------
    ValueError
        If an argument is negative or infinite.
    TypeError
        If an argument is not a real number.

    Notes
    -----
    .. math::

        \mathrm{Adv}^M(h) = \Pr[|e| \le h \mid \text{member}]
        - \Pr[|e| \le h \mid \text{non-member}]
        = \operatorname{erf}\left(\frac{h}{\sqrt{2}\,\sigma_S}\right)
        - \operatorname{erf}\left(\frac{h}{\sqrt{2}\,\sigma_D}\right)

    with ``Pr[|e| <= h] = 1`` for a standard deviation of 0.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, proof of
       Theorem 3 and "unknown standard error".
    """
    func = "gaussian_membership_advantage_at_threshold"
    s = _check_sigma(sigma_train, "sigma_train", func)
    d = _check_sigma(sigma_test, "sigma_test", func)
    h = _check_sigma(threshold, "threshold", func)
    if _any_nan(s, d, h):
        return math.nan
    return _prob_within(h, s) - _prob_within(h, d)


# ----------------------------------------------------------------------------- Theorem 5


def gaussian_attribute_advantage(
    sigma_train: float, sigma_test: float, influence: float
) -> float:
    r"""Attribute advantage of Adversary 4 on a binary attribute with influence tau (Theorem 5).

    Setting: the sensitive attribute ``t`` takes two values ``t1, t2``, equally likely;
    the label is ``y = A_S(v, t) + e`` with ``e ~ N(0, sigma_train^2)`` on members and
    ``N(0, sigma_test^2)`` on non-members; the two predictions differ by the influence
    ``tau = |A_S(v, t1) - A_S(v, t2)|`` (for a linear model, the absolute coefficient of
    ``t`` times ``|t1 - t2|``). Adversary 4 computes ``e(t_i) = y - A_S(v, t_i)`` for both
    values and returns the one maximising ``Pr[t = t_i] f_A(e(t_i))``; with a uniform
    prior and any error density ``f_A`` that decreases in ``|e|`` (a centred Gaussian of
    any variance), that is the value whose prediction is nearer to ``y``.

    Parameters
    ----------
    sigma_train : float >= 0
        ``sigma_S``, standard deviation of the errors on members.
    sigma_test : float >= 0
        ``sigma_D``, standard deviation of the errors on non-members.
    influence : float >= 0
        ``tau``, the difference between the model's outputs for ``t1`` and ``t2``, in the
        units of ``y``.

    Returns
    -------
    float
        Advantage in [-1/2, 1/2]: 0 when ``tau = 0`` or ``sigma_S = sigma_D``, and
        negative when ``sigma_S > sigma_D`` (Adversary 4 does not adapt its rule to the
        two variances, unlike Adversary 2, so the formula is taken as stated, sign
        included); NaN when an argument is NaN.

    Raises
    ------
    ValueError
        If an argument is negative or infinite.
    TypeError
        If an argument is not a real number.

    Notes
    -----
    .. math::

        \mathrm{Adv}^A = \frac{1}{2}\left(
        \operatorname{erf}\left(\frac{\tau}{2\sqrt{2}\,\sigma_S}\right)
        - \operatorname{erf}\left(\frac{\tau}{2\sqrt{2}\,\sigma_D}\right)\right)

    The adversary is right iff the error stays on its side of the midpoint between the two
    predictions, ``Pr[e < tau / 2] = (1 + erf(tau / (2 sqrt(2) sigma))) / 2``. The source
    document (section on influence, Theorem 5) states the same formula; its proof sketch
    writes the condition as ``e(t1) > -tau / 2``, the same event for the other ordering
    of the two predictions. As a function of ``tau`` the advantage vanishes at both ends
    and, for ``sigma_S < sigma_D``, peaks at ``tau = 2 * gaussian_membership_threshold(
    sigma_S, sigma_D)``, where it equals half of :func:`gaussian_membership_advantage`
    (setting the derivative to 0 gives the equation of Theorem 3's threshold at
    ``e = tau / 2``); this consequence is derived here, not stated in the paper. By
    Theorem 6, guessing "member" iff this adversary is right gives a membership adversary
    with the same advantage.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, Theorem 5
       (Adversary 4, binary attribute with uniform prior).
    """
    func = "gaussian_attribute_advantage"
    s = _check_sigma(sigma_train, "sigma_train", func)
    d = _check_sigma(sigma_test, "sigma_test", func)
    tau = _check_sigma(influence, "influence", func)
    if _any_nan(s, d, tau):
        return math.nan
    if tau == 0:  # equal predictions: both values are guessed at random whatever b is
        return 0.0
    return 0.5 * (_prob_within(tau / 2, s) - _prob_within(tau / 2, d))


# ----------------------------------------------------------------------------- Theorem 7


def attribute_advantage_from_membership(membership_advantage: float, n_values: int) -> float:
    r"""Attribute advantage obtained from a membership oracle by guessing (Theorem 7).

    Adversary 6 draws a value ``t_i`` of the sensitive attribute uniformly among the
    ``m`` possible ones, rebuilds the record with ``phi^{-1}`` and attribute ``t_i``, asks
    a membership adversary about it and answers ``t_i`` if told "member" (nothing
    otherwise). Its attribute advantage is the oracle's advantage on rebuilt records
    divided by ``m``.

    Parameters
    ----------
    membership_advantage : float in [-1, 1]
        ``Adv*^M``: the membership oracle's advantage on records rebuilt from the public
        part with the *true* attribute value, ``Pr[oracle says member | member] -
        Pr[oracle says member | non-member]``. It is the ordinary membership advantage
        when ``phi^{-1}`` restores the record exactly.
    n_values : int >= 1
        ``m``, the number of values the sensitive attribute can take.

    Returns
    -------
    float
        ``membership_advantage / n_values``; NaN when ``membership_advantage`` is NaN.

    Raises
    ------
    ValueError
        If ``membership_advantage`` is outside [-1, 1] or ``n_values < 1``.
    TypeError
        If ``membership_advantage`` is not a real number or ``n_values`` not an integer.

    Notes
    -----
    .. math::

        \mathrm{Adv}^A(\mathcal{A}^U_{A \to M}) = \frac{1}{m}
        \mathrm{Adv}^M_*(\mathcal{A}^M)

    Adversary 6 is right only when it drew the true value (probability ``1 / m``) and the
    oracle says "member" on the record rebuilt with it; the oracle's answers on the other
    values never make it right. The converse reduction (Theorem 6, Adversary 5: "member"
    iff an attribute adversary is right) has membership advantage *equal* to the attribute
    advantage, so it needs no function: use the attribute advantage as is. The source
    document states Theorem 7 with ``Adv*^M`` but does not define it; the definition above
    is the one its proof needs. The multi-query Adversary 7 has no closed form.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. (2018). Privacy risk in
       machine learning: analyzing the connection to overfitting. IEEE CSF, Theorems 6
       and 7 (Adversaries 5 and 6).
    """
    func = "attribute_advantage_from_membership"
    adv = _check_number(membership_advantage, param="membership_advantage", func=func,
                        expected="a real number in [-1, 1]", ok=lambda v: -1 <= v <= 1)
    m = check_int(n_values, param="n_values", func=func, low=1)
    assert m is not None  # check_int returns None only with allow_none=True
    return adv / m
