"""Quantile-regression membership inference (Bertran et al., NeurIPS 2023): a cheap screen.

One regression model, trained on the target's answers on public non-members (the
population), predicts for each record a high quantile of the target's score on
non-members *like it*; a record whose score exceeds its own predicted quantile is called
a member. No reference model is trained: the cost is one query of the target on the
population and one small gradient-boosted regressor, so a registry of models can be
screened and reference models spent only where the screen finds risk.

Two layers: :func:`fit_quantile_model` / :func:`quantile_scores` take plain arrays (record
features and one statistic per record, higher = more member-like: a classifier's
logit-scaled confidence, a regressor's negated error, an LLM's negated loss per text), and
:class:`QuantileAttack` is the registered estimator (``"quantile"``) that reads a target's
outputs through :mod:`privaudit.signals`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    ChoiceRule,
    check_fraction,
    check_int,
    check_random_state,
    param_error,
    warn_degenerate,
)
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import MembershipAttack, resolve_outputs
from privaudit.attacks.membership._trained import derive_seeds
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs, Target

__all__ = ["FitSchedule", "QuantileAttack", "QuantileModel", "fit_quantile_model",
           "fit_schedule", "quantile_scores", "record_features", "winsorised"]

#: How the quantile is modelled (see :func:`fit_quantile_model`).
QUANTILE_METHODS = ChoiceRule(("gaussian", "pinball"))
#: From this many population records, ``"auto"`` fits fewer folds with larger steps (the
#: size at which scikit-learn's gradient boosting turns on early stopping).
LARGE_POPULATION = 10_000


@dataclass(frozen=True)
class FitSchedule:
    """How the quantile model's regressors are fitted (:func:`fit_schedule`).

    Attributes
    ----------
    n_folds : int
        Folds of the cross-fitting (and fold models averaged for new records).
    learning_rate : float
        Step of every regressor's boosting.
    location_leaves : int
        Leaves per tree of the location regressors (the mean, or the pinball quantile).
    spread_share : float
        The variance regressors' iterations as a share of ``max_iter``.
    """

    n_folds: int
    learning_rate: float
    location_leaves: int = 31
    spread_share: float = 1.0


#: ``"auto"`` below / from :data:`LARGE_POPULATION` records (see :func:`fit_schedule`).
_SMALL_SCHEDULE = FitSchedule(5, 0.1)
_LARGE_SCHEDULE = FitSchedule(3, 0.3, location_leaves=63, spread_share=0.4)
#: Tukey's far-out fences: the statistic the regressors fit is clipped to Q1 - 3 IQR, Q3 + 3 IQR.
_FAR_OUT = 3.0
#: Relative floor of the predicted spread (a record with no spread would divide by zero).
_SPREAD_FLOOR = 1e-6


@dataclass(frozen=True)
class QuantileModel:
    """A fitted quantile model of a statistic on non-members, per record.

    Attributes
    ----------
    method : {"gaussian", "pinball"}
        How the quantile is modelled.
    alpha : float
        Nominal false positive rate of the hard decision ``margin > threshold``.
    center, spread : FoldEnsemble
        ``"gaussian"``: the conditional mean and variance of the statistic;
        ``"pinball"``: ``center`` predicts the ``1 - alpha`` quantile, ``spread`` is None.
        Each is the average of its cross-fitted fold regressors (:class:`FoldEnsemble`).
    floor : float
        Smallest variance used (``"gaussian"``), relative to the population's.
    calibration : ndarray
        The population's margins, each from models that did not see the record (sorted):
        the conformal calibration of every level (:meth:`threshold_at`).
    n_folds, learning_rate : int, float
        The schedule the regressors were fitted with (:func:`fit_schedule`).
    """

    method: str
    alpha: float
    center: Any
    spread: Any
    floor: float
    calibration: NDArray[np.float64]
    n_folds: int = _SMALL_SCHEDULE.n_folds
    learning_rate: float = _SMALL_SCHEDULE.learning_rate

    @property
    def threshold(self) -> float:
        """Decision threshold on :meth:`margin` at the nominal ``alpha`` (member above it)."""
        return self.threshold_at(self.alpha)

    def threshold_at(self, alpha: float) -> float:
        """The cross-conformal threshold at level ``alpha`` (member above it).

        The ``ceil((n + 1)(1 - alpha))``-th smallest of the ``n`` population margins,
        each from location models that did not see the record (conformalized quantile
        regression, Romano et al. 2019, Theorem 1, with cross-fitting in place of one
        split: Barber et al.'s CV+, whose worst case is ``2 alpha``): whatever the
        regressors learned, a fresh non-member drawn like the population exceeds it with
        probability about ``alpha``; ``+inf`` (nobody called) when ``n < 1 / alpha - 1``.
        The variance (``"gaussian"``) is cross-fitted too (on the same folds): fitted
        in-sample it would shrink the population's large margins and let fresh
        non-members through at twice the level.
        """
        n = self.calibration.size
        rank = int(np.ceil((n + 1) * (1.0 - alpha)))
        return float(self.calibration[rank - 1]) if rank <= n else float("inf")

    def margin(self, features: NDArray[np.float64],
               statistic: NDArray[np.float64]) -> NDArray[np.float64]:
        """Continuous membership score: higher = further above the non-members' quantile.

        ``"gaussian"``: the standardised statistic ``(s - mu(x)) / sigma(x)``, so one model
        ranks records for every level (Bertran et al.'s Gaussian parametrisation reads
        the ``1 - a`` quantile ``mu + sigma * Phi^-1(1 - a)`` for every ``a``);
        ``"pinball"``: ``s - q(x)``.
        """
        return self._margin(self.center, self.spread, features, statistic)

    def _margin(self, center: Any, spread: Any, features: NDArray[np.float64],
                statistic: NDArray[np.float64]) -> NDArray[np.float64]:
        location = center.predict(features)
        if self.method == "gaussian":
            var = np.maximum(spread.predict(features), self.floor)
            return (statistic - location) / np.sqrt(var)
        return statistic - location


def _regressor(loss: str, max_iter: int, learning_rate: float, seed: int,
               **kwargs: Any) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor

    # No early stopping: its validation split would draw outside random_state's seeds.
    return HistGradientBoostingRegressor(loss=loss, max_iter=max_iter, early_stopping=False,
                                         learning_rate=learning_rate, random_state=seed,
                                         **kwargs)


def fit_schedule(n_population: int, n_folds: Any = "auto", learning_rate: Any = "auto",
                 *, func: str = "fit_quantile_model") -> FitSchedule:
    """How the regressors are fitted for ``n_population`` records.

    Below :data:`LARGE_POPULATION` records: 5 folds, a boosting step of 0.1, 31 leaves
    per tree, the variance fitted as long as the mean. From it: 3 folds, a step of 0.3,
    63 leaves for the location, the variance fitted for 40% of the iterations. With many
    records each fold model sees plenty of data, so 3 folds lose nothing and cost 40%
    less; 100 steps of 0.1 on 31-leaf trees underfit the location (on TV16's 58,479
    public records 300 steps raised the TPR at 1% FPR by 7% at 2.4 times the cost), and
    a coarse variance serves as well. On those records the large schedule finds 0.83 of
    LiRA-online-16's TPR at 1% FPR (7 seeds) at 6.4% of its compute, the small one 0.71
    at 13%; on TV16's 2,000-record population, 3 folds and a step of 0.2 fall from 0.35
    to 0.28 (``benchmarks/bench_quantile.py``). ``n_folds`` and ``learning_rate``
    override their part of either.

    >>> fit_schedule(600)
    FitSchedule(n_folds=5, learning_rate=0.1, location_leaves=31, spread_share=1.0)
    >>> fit_schedule(20_000, n_folds=5).n_folds, fit_schedule(20_000).learning_rate
    (5, 0.3)
    """
    auto = _LARGE_SCHEDULE if n_population >= LARGE_POPULATION else _SMALL_SCHEDULE
    if not (isinstance(n_folds, str) and n_folds == "auto"):
        auto = dataclasses.replace(auto, n_folds=int(check_int(  # type: ignore[arg-type]
            n_folds, param="n_folds", func=func, low=2)))
    if not (isinstance(learning_rate, str) and learning_rate == "auto"):
        auto = dataclasses.replace(auto, learning_rate=check_fraction(
            learning_rate, param="learning_rate", func=func, high=1.0, high_inclusive=True))
    return auto


def _check_pair(features: ArrayLike, statistic: ArrayLike, prefix: str,
                func: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Features as a 2-D float array, the statistic as finite floats, one per record."""
    x_name, s_name = f"features{prefix}", f"statistic{prefix}"
    try:
        x = np.asarray(features, dtype=np.float64)
        s = np.asarray(statistic, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(x_name, func, "numeric arrays (features and statistic)",
                          f"<{type(features).__name__}>", error=TypeError) from None
    if x.ndim != 2 and x.ndim > 0:  # explicit width: -1 is ambiguous for 0 records
        x = x.reshape(len(x), int(np.prod(x.shape[1:])))
    if x.ndim != 2 or s.ndim != 1 or len(x) != len(s):
        raise param_error(x_name, func, f"a 2-D array with one row per value of '{s_name}' "
                          f"({s.shape})", f"<array of shape {x.shape}>")
    for name, arr in ((x_name, x), (s_name, s)):
        if not np.all(np.isfinite(arr)):
            raise param_error(name, func, "finite (no NaN or inf)",
                              f"<{int(np.sum(~np.isfinite(arr)))} non-finite values>")
    return x, s


def _cross_fitted(x: NDArray[np.float64], s: NDArray[np.float64], make: Any,
                  seed: int, n_folds: int) -> tuple[FoldEnsemble, NDArray[np.float64]]:
    """The fold models as one ensemble, and each record's out-of-fold prediction.

    Out of fold, each record is predicted by a model that did not see it, as a fresh
    non-member will be: the in-sample residuals of a boosted model are too small, and a
    threshold or a variance learned on them would call ordinary non-members members.
    New records are predicted by the average of the fold models (bagging, as Zhang et al.
    2024 ensemble small quantile regressors): lower variance than one refit on every
    record, and no extra fit.
    """
    from sklearn.model_selection import KFold

    held_out = np.empty_like(s)
    folds = KFold(n_folds, shuffle=True, random_state=seed)
    models = []
    for k, (fit_rows, held_rows) in enumerate(folds.split(x)):
        models.append(make(k + 1).fit(x[fit_rows], s[fit_rows]))
        held_out[held_rows] = models[-1].predict(x[held_rows])
    return FoldEnsemble(tuple(models)), held_out


@dataclass(frozen=True)
class FoldEnsemble:
    """The cross-fitted fold regressors, predicting by their average (bagging).

    Attributes
    ----------
    members : tuple of fitted regressors
        One per fold, each fitted on the other folds' records.
    """

    members: tuple[Any, ...]

    @property
    def n_features_in_(self) -> int:
        """Columns the regressors were fitted on."""
        return int(self.members[0].n_features_in_)

    def predict(self, features: NDArray[np.float64]) -> NDArray[np.float64]:
        """The fold regressors' mean prediction."""
        return np.mean([m.predict(features) for m in self.members], axis=0)


def fit_quantile_model(
    features: ArrayLike,
    statistic: ArrayLike,
    *,
    alpha: float = 0.01,
    method: str = "gaussian",
    max_iter: int = 100,
    n_folds: int | str = "auto",
    learning_rate: float | str = "auto",
    random_state: Any = None,
) -> QuantileModel | None:
    """Fit the non-members' per-record ``1 - alpha`` quantile of a statistic.

    Parameters
    ----------
    features : array-like of shape (n_population, n_features)
        Features of public records the target did not train on (images are flattened;
        add the label: :func:`record_features`).
    statistic : array-like of shape (n_population,)
        The target's statistic on them, higher = more member-like.
    alpha : float in (0, 0.5], default=0.01
        Nominal false positive rate of the decision ``statistic > quantile``.
    method : {"gaussian", "pinball"}, default="gaussian"
        ``"gaussian"`` (Bertran et al.'s Gaussian parametrisation): gradient-boosted mean
        ``mu(x)`` and variance ``sigma^2(x)`` (Poisson deviance on the squared
        out-of-fold residuals); the score is ``(s - mu) / sigma``, whose ranking serves
        every FPR from one model. ``"pinball"``: a gradient-boosted regressor with the
        pinball loss at ``1 - alpha`` (the paper's direct quantile regression); the score
        is ``s - q(x)``, sharpest near ``alpha``. The default is the Gaussian one: it
        ranks the low-FPR tail better (TPR at 1% FPR on the TV16 MLP, 0.18 against 0.05
        with a 2,000-record population, mean of 3 seeds; the Gaussian one 0.38 with
        58,479 public records, 7 seeds; on the digits MLP both stay at LOSS's level, 0.01:
        ``benchmarks/bench_quantile.py``), and one model serves every level. Both fit
        the statistic clipped at Tukey's far-out fences (:func:`winsorised`). New
        records are scored by the average of the fold models (bagging): 0.36 of
        LiRA-16's TPR against 0.34 for one refit on TV16, 0.16 against 0.13 on digits,
        with two fits fewer. Either way the threshold of the hard
        decision is calibrated conformally on the out-of-fold margins
        (:meth:`QuantileModel.threshold_at`): the in-sample fit of a boosted model is
        too tight (its FPR on fresh non-members was twice ``alpha`` without it).
    max_iter : int, default=100
        Boosting iterations of each regressor.
    n_folds : int >= 2 or "auto", default="auto"
        Folds of the cross-fitting (and fold models averaged for new records).
    learning_rate : float in (0, 1] or "auto", default="auto"
        Step of the boosting. ``"auto"`` for either: :func:`fit_schedule` (5 folds and
        0.1 below 10,000 population records, 3 folds and 0.3 from it).
    random_state : int, Generator or None
        Seeds the folds and the regressors.

    Returns
    -------
    QuantileModel or None
        None (with a :class:`~privaudit.exceptions.DegenerateInputWarning`) when the
        statistic is constant on the population: no quantile separates anything.

    References
    ----------
    .. [1] Bertran, M., Tang, S., Kearns, M., Morgenstern, J., Roth, A. and Wu, Z. S.
       (2023). Scalable Membership Inference Attacks via Quantile Regression. NeurIPS
       2023 (arXiv:2307.03694): the attack, the pinball loss and the Gaussian variant.
    .. [2] Romano, Y., Patterson, E. and Candes, E. (2019). Conformalized Quantile
       Regression. NeurIPS 2019, Theorem 1 (the calibrated threshold).
    .. [3] Barber, R. F., Candes, E. J., Ramdas, A. and Tibshirani, R. J. (2021).
       Predictive inference with the jackknife+. Annals of Statistics 49(1) (CV+).
    """
    func = "fit_quantile_model"
    a = check_fraction(alpha, param="alpha", func=func, high=0.5, high_inclusive=True)
    QUANTILE_METHODS.check(method, param="method", func=func)
    n_iter = int(check_int(max_iter, param="max_iter", func=func, low=1))  # type: ignore[arg-type]
    x, s = _check_pair(features, statistic, "", func)
    plan = fit_schedule(len(s), n_folds, learning_rate, func=func)
    n_folds, rate = plan.n_folds, plan.learning_rate
    spread_iter = max(1, round(plan.spread_share * n_iter))
    if len(s) < 2 * n_folds:  # a fold and a leaf of records for each fold model
        raise param_error("statistic", func, f"given for at least {2 * n_folds} population "
                          "records", f"<{len(s)} records>")
    if np.ptp(s) == 0:
        warn_degenerate(f"{func}: the statistic is the same on every population record; "
                        "the scores are NaN.")
        return None
    seeds = derive_seeds(random_state, 2 * n_folds + 3, func=func)

    def make(k: int) -> Any:  # k = 1..n_folds (location), + n_folds + 1 (variance)
        if k > n_folds + 1:
            # Poisson deviance fits E[r^2 | x] with a log link: positive, defined at r = 0.
            return _regressor("poisson", spread_iter, rate, int(seeds[k]))
        leaves = plan.location_leaves
        if method == "pinball":
            return _regressor("quantile", n_iter, rate, int(seeds[k]), quantile=1.0 - a,
                              max_leaf_nodes=leaves)
        return _regressor("squared_error", n_iter, rate, int(seeds[k]), max_leaf_nodes=leaves)

    fitted = winsorised(s)
    center, location = _cross_fitted(x, fitted, make, int(seeds[0]), n_folds)
    spread, variance = None, None
    if method == "gaussian":
        spread, variance = _cross_fitted(x, (fitted - location) ** 2,
                                         lambda k: make(k + n_folds + 1), int(seeds[0]),
                                         n_folds)
    model = QuantileModel(method, a, center, spread, _SPREAD_FLOOR * float(np.var(fitted)),
                          np.empty(0), n_folds, rate)
    held_out = model._margin(_Fixed(location), _Fixed(variance), x, s)
    return dataclasses.replace(model, calibration=np.sort(held_out))


def winsorised(statistic: NDArray[np.float64]) -> NDArray[np.float64]:
    """``statistic`` clipped to Tukey's far-out fences, ``[Q1 - 3 IQR, Q3 + 3 IQR]``.

    What the regressors are fitted on; margins and the conformal threshold read the raw
    statistic. A classifier's logit-scaled confidence is unbounded where it is confidently
    wrong (-539 on one of TV16's public records) and a regressor's negated squared error
    is unbounded below: a few such records dominate a squared-error mean and its variance
    and held the screen at 0.45 of LiRA-16's TPR at 1% FPR with TV16's 58,479 public
    records, against 0.81 clipped (seeds 0-2, the same fit:
    ``benchmarks/bench_quantile.py``). Unchanged when the IQR is 0 (the fences would
    collapse every value to one).

    >>> winsorised(np.array([-500.0, 0, 1, 2, 3, 4, 5, 6, 7]))
    array([-11.,   0.,   1.,   2.,   3.,   4.,   5.,   6.,   7.])
    """
    q1, q3 = np.percentile(statistic, [25.0, 75.0])
    iqr = q3 - q1
    if iqr == 0:
        return statistic
    return np.clip(statistic, q1 - _FAR_OUT * iqr, q3 + _FAR_OUT * iqr)


@dataclass(frozen=True)
class _Fixed:
    """Predictions already made (out of fold), as a regressor's ``predict``."""

    values: NDArray[np.float64]

    def predict(self, features: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.values


def quantile_scores(
    features_population: ArrayLike,
    statistic_population: ArrayLike,
    features_audited: ArrayLike,
    statistic_audited: ArrayLike,
    **params: Any,
) -> NDArray[np.float64]:
    """Membership scores of audited records against a quantile model of the population.

    The function-level attack: any statistic per record works, e.g. an LLM's negated loss
    per text (from ``score_texts``) with text features (length, compressibility).

    Parameters
    ----------
    features_population, statistic_population : array-like
        Non-members: ``(n_population, n_features)`` and ``(n_population,)``.
    features_audited, statistic_audited : array-like
        Audited records, the same features and statistic.
    **params
        ``alpha``, ``method``, ``max_iter``, ``n_folds``, ``learning_rate``,
        ``random_state`` of :func:`fit_quantile_model`.

    Returns
    -------
    ndarray of shape (n_audited,)
        :meth:`QuantileModel.margin`, higher = more likely member; a record is called a
        member at level ``alpha`` when its score exceeds :attr:`QuantileModel.threshold`.
        All NaN (and a warning) when the population's statistic is constant.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(400, 1))
    >>> s = 2 * x[:, 0] + rng.normal(size=400)
    >>> shifted = quantile_scores(x[:300], s[:300], x[300:], s[300:] + 5.0, random_state=0)
    >>> fresh = quantile_scores(x[:300], s[:300], x[300:], s[300:], random_state=0)
    >>> threshold = fit_quantile_model(x[:300], s[:300], random_state=0).threshold
    >>> bool(np.mean(shifted > threshold) > 0.8), bool(np.mean(fresh > threshold) < 0.05)
    (True, True)
    """
    x, s = _check_pair(features_audited, statistic_audited, "_audited", "quantile_scores")
    model = fit_quantile_model(features_population, statistic_population, **params)
    if model is None:
        return np.full(len(s), np.nan)
    if x.shape[1] != model.center.n_features_in_:
        raise param_error("features_audited", "quantile_scores",
                          f"of {model.center.n_features_in_} columns, as the population's",
                          f"<{x.shape[1]} columns>")
    return model.margin(x, s)


def record_features(X: Any, outputs: ModelOutputs) -> NDArray[np.float64]:
    """What the quantile model conditions on: the record's features and its label.

    Images and other tensors are flattened; a classifier's label is one-hot over its
    classes, a regressor's target is one more column.

    Parameters
    ----------
    X : array-like of shape (n_records, ...)
        Numeric, finite records: arrays, images, a DataFrame whose columns are all
        numeric. Code other columns first: :class:`QuantileAttack` codes a DataFrame's
        non-numeric columns itself (its ``categories_``).
    outputs : ModelOutputs
        The target's outputs on the same records (their labels).

    Returns
    -------
    ndarray of shape (n_records, n_features + n_classes) or (n_records, n_features + 1)
    """
    func = "record_features"
    return _with_label(_numeric_records(X, func, "numeric records (encode categorical "
                                        "columns first)"), outputs, func)


def _numeric_records(X: Any, func: str, expected: str) -> NDArray[np.float64]:
    """``X`` as a finite 2-D float array, one row per record, or an error naming ``X``."""
    try:
        x = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error("X", func, expected, f"<{type(X).__name__}>",
                          error=TypeError) from None
    if x.ndim == 0 or len(x) == 0:
        raise param_error("X", func, "at least one record", f"<array of shape {x.shape}>")
    x = x.reshape(len(x), -1)
    if not np.all(np.isfinite(x)):
        # The regressors and the margins need a value per feature: no NaN, no inf.
        raise param_error("X", func, "finite records (no NaN or inf: impute missing values)",
                          f"<{int(np.sum(~np.isfinite(x)))} non-finite values>")
    return x


def _with_label(x: NDArray[np.float64], outputs: ModelOutputs,
                func: str) -> NDArray[np.float64]:
    """The records' features, then their label (one-hot) or regression target."""
    if len(x) != len(outputs):
        raise param_error("X", func, f"one row per output ({len(outputs)})",
                          f"<{len(x)} rows>")
    if outputs.task == "regression":
        return np.column_stack([x, outputs.y.astype(np.float64)])
    n_classes = len(outputs.classes) if outputs.classes is not None else 0
    label = np.zeros((len(x), n_classes))
    label[np.arange(len(x)), outputs.y_index] = 1.0
    return np.column_stack([x, label])


def _is_frame(X: Any) -> bool:
    import pandas as pd

    return isinstance(X, pd.DataFrame)


def _column_categories(X: Any) -> dict[Any, NDArray[Any]]:
    """The categories of each non-numeric column of a DataFrame (``{}`` for other ``X``).

    Non-numeric: any dtype but booleans, integers and floats (strings, ``category``,
    dates). The categories are the column's distinct non-missing values, sorted (in
    order of appearance when they cannot be sorted, e.g. mixed types): what
    :func:`_category_codes` codes 0, 1, ...
    """
    if not _is_frame(X):
        return {}
    import pandas as pd

    found: dict[Any, NDArray[Any]] = {}
    for name, dtype in zip(X.columns, X.dtypes, strict=True):
        if dtype.kind in "biuf" or name in found:
            continue
        # Every column of that name (a frame can repeat one): their codes must agree.
        values = pd.unique(X.loc[:, [name]].to_numpy(dtype=object).ravel())
        values = values[~pd.isna(values)]
        try:
            values = np.sort(values)
        except TypeError:
            pass
        found[name] = values
    return found


def _category_codes(X: Any, categories: dict[Any, NDArray[Any]], func: str) -> Any:
    """``X`` with the columns named in ``categories`` replaced by their codes.

    A value's code is its position in its column's categories; a missing value or one
    not among them is -1 (one code for "none of those seen at fit"). Returned as a
    float array when ``X`` is a DataFrame, unchanged otherwise.
    """
    if not _is_frame(X):
        if categories:
            raise param_error("X", func, "a DataFrame, as at fit (its non-numeric columns "
                              "are coded)", f"<{type(X).__name__}>", error=TypeError)
        return X
    absent = [name for name in categories if name not in X.columns]
    if absent:
        raise param_error("X", func, "a DataFrame with the columns coded at fit",
                          f"<DataFrame without column {absent[0]!r}>")
    import pandas as pd

    columns = []
    for i, name in enumerate(X.columns):
        column = X.iloc[:, i]
        if name in categories:
            codes = pd.Index(categories[name]).get_indexer(column.to_numpy(dtype=object))
            columns.append(codes.astype(np.float64))
            continue
        try:
            columns.append(column.to_numpy(dtype=np.float64, na_value=np.nan))
        except (TypeError, ValueError):
            raise param_error("X", func, f"numeric in column {name!r}, as at fit (the "
                              "columns non-numeric at fit are coded)",
                              f"<column of dtype {column.dtype}>", error=TypeError) from None
    return np.column_stack(columns) if columns else np.empty((len(X), 0))


def target_statistic(outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
    """The statistic the quantile is modelled on, higher = more member-like.

    A classifier's logit-scaled true-class confidence ``log(F_y / (1 - F_y))`` (LiRA's
    statistic, Gaussian-like across records of similar difficulty; Bertran et al. use
    the hinge, the true logit minus the largest other, which it equals for two classes);
    a regressor's negated squared error. The hinge measured no better on the 7-class
    TV16 and 10-class digits MLPs (TPR at 1% FPR as a share of LiRA-16's, mean of 3
    seeds: 0.33 against 0.36 with a 2,000-record population, 0.60 against 0.61 with
    20,000 public records; 0.13 against 0.16 on digits; ``benchmarks/bench_quantile.py``).
    """
    if outputs.task == "regression":
        return -outputs.loss, "negated_squared_error"
    return outputs.signal("logit_confidence"), "logit_confidence"


def _require_records(X: Any, func: str) -> None:
    if X is None:
        raise param_error("X", func, "given: the quantile is predicted from each "
                          "record's features", None, error=TypeError)


def _n_records(X: Any) -> int | None:
    """Rows of ``X`` without converting it (None when it has no length)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        return None


class QuantileAttack(MembershipAttack):
    """Quantile-regression membership inference: a screen that trains no reference model.

    ``fit(target, X_population, y_population)`` queries the target on public records it
    did not train on (or takes ``outputs=`` of that query) and fits
    :func:`fit_quantile_model` to its statistic (:func:`target_statistic`) given each
    record's features and label (:func:`record_features`); ``score`` and ``run`` read the
    audited records' features and the target's answers on them. A DataFrame's
    non-numeric columns (strings, categories, dates: what a scikit-learn Pipeline with an
    encoder takes) are coded as integers for the quantile model, the same way at fit and
    at score (``categories_``); the target always receives the records as given.

    Parameters
    ----------
    alpha : float in (0, 0.5], default=0.01
        Nominal false positive rate of the hard decision (``predictions``); the scores
        rank records for every FPR.
    method : {"gaussian", "pinball"}, default="gaussian"
        See :func:`fit_quantile_model` (the Gaussian one reads every FPR from one model).
    max_iter : int, default=100
        Boosting iterations of each regressor.
    n_folds : int >= 2 or "auto", default="auto"
        Folds of the cross-fitting.
    learning_rate : float in (0, 1] or "auto", default="auto"
        Step of the boosting; ``"auto"`` for either: :func:`fit_schedule` (5 folds and
        0.1 below 10,000 population records, 3 folds and 0.3 from it).
    random_state : int, Generator or None
        Seeds the folds and the regressors.

    Attributes
    ----------
    model_ : QuantileModel or None
        The fitted quantile model. None (with a
        :class:`~privaudit.exceptions.DegenerateInputWarning`) when the target's statistic
        was the same on every population record, e.g. a constant model: no quantile
        separates anything, so ``score`` gives NaN and ``run`` a result with no
        information (every score 0, AUC 0.5, no ``predictions``, ``extra["degenerate"]``
        saying why), so that an audit keeps its other attacks' results.
    statistic_name_ : str
        The statistic modelled (``"logit_confidence"`` or ``"negated_squared_error"``).
    categories_ : dict
        For each non-numeric column of a DataFrame ``X`` at fit, by name, the categories
        seen there (sorted when they can be): a value's code is its position, and a
        missing value or one not seen at fit is coded -1, at fit and at score. Empty for
        other records.

    Notes
    -----
    Needs the population (tag ``needs_population``), no reference models; works for
    classifiers revealing probabilities (scikit-learn or torch) and regressors. On fresh
    non-members the decision's FPR is close to ``alpha`` when the population is drawn like
    them (``tests/attacks/test_quantile.py`` checks it).

    References
    ----------
    .. [1] Bertran, M., Tang, S., Kearns, M., Morgenstern, J., Roth, A. and Wu, Z. S.
       (2023). Scalable Membership Inference Attacks via Quantile Regression. NeurIPS 2023.
    """

    name: ClassVar[str] = "quantile"
    _tags: ClassVar[AttackTags] = AttackTags(needs_probabilities=True, needs_population=True)

    def __init__(self, alpha: float = 0.01, method: str = "gaussian", max_iter: int = 100,
                 n_folds: int | str = "auto", learning_rate: float | str = "auto",
                 random_state: Any = None) -> None:
        self.alpha = alpha
        self.method = method
        self.max_iter = max_iter
        self.n_folds = n_folds
        self.learning_rate = learning_rate
        self.random_state = random_state

    def check_params(self) -> None:
        """``alpha`` in (0, 0.5], ``method`` known, ``max_iter >= 1``, the schedule, a seed."""
        who = type(self).__name__
        check_fraction(self.alpha, param="alpha", func=who, high=0.5, high_inclusive=True)
        QUANTILE_METHODS.check(self.method, param="method", func=who)
        check_int(self.max_iter, param="max_iter", func=who, low=1)
        fit_schedule(0, self.n_folds, self.learning_rate, func=who)
        check_random_state(self.random_state, func=who)

    def fit(self, target: Any = None, X: Any = None, y: ArrayLike | None = None, *,
            outputs: ModelOutputs | None = None) -> QuantileAttack:
        """Fit the non-members' quantile on population records; returns ``self``.

        Parameters
        ----------
        target : Target or fitted estimator, optional
            The audited model, queried on ``(X, y)`` unless ``outputs`` is given.
        X : array-like or DataFrame
            Population records (never trained on), always needed: their features, at
            least two per fold of the cross-fitting (10 with the default schedule). A
            DataFrame's non-numeric columns are coded (``categories_``).
        y : array-like, optional
            Their labels / targets (needed to query the target).
        outputs : ModelOutputs, optional
            The target's outputs on ``(X, y)`` already computed (shared with RMIA).

        Returns
        -------
        self
        """
        func = f"{type(self).__name__}.fit"
        self.check_params()
        self._check_population(X, _n_records(X), func)  # before the target is queried
        out, _ = self._outputs(target, X, y, outputs, func)
        self._check_population(X, len(out), func)
        statistic, self.statistic_name_ = target_statistic(out)
        self.categories_ = _column_categories(X)  # what _features codes, here and at score
        features = self._features(X, out, func)
        if np.ptp(statistic) == 0:
            # Checked here, not by fit_quantile_model, so the warning names this call.
            warn_degenerate(f"{func}: {self._no_model_reason()}; the quantile model is not "
                            "fitted (score gives NaN, run a result with no information).")
            self.model_ = None
            return self
        self.model_ = fit_quantile_model(
            features, statistic, alpha=self.alpha, method=self.method,
            max_iter=self.max_iter, n_folds=self.n_folds, learning_rate=self.learning_rate,
            random_state=self.random_state)
        return self

    def score(self, target: Any = None, X: Any = None, y: ArrayLike | None = None, *,
              outputs: ModelOutputs | None = None) -> NDArray[np.float64]:
        """One score per audited record (:meth:`QuantileModel.margin`); needs ``X``.

        NaN for every record (with a :class:`~privaudit.exceptions.DegenerateInputWarning`)
        when no quantile model was fitted (``model_`` is None).
        """
        func = f"{type(self).__name__}.score"
        margins, out, _, _ = self._scored(target, X, y, outputs, func)
        if margins is None:
            warn_degenerate(f"{func}: {self._no_model_reason()}; the scores are NaN.")
            return np.full(len(out), np.nan)
        return margins

    def run(self, target: Any = None, X: Any = None, y: ArrayLike | None = None,
            labels: ArrayLike | None = None, *, outputs: ModelOutputs | None = None,
            record_ids: ArrayLike | None = None, dataset: str = "",
            target_name: str | None = None) -> AttackResult:
        """Score the audited records (``X`` needed: the features) and package the result.

        Parameters are those of :meth:`MembershipAttack.run`; ``predictions`` call a
        member every record above its ``1 - alpha`` quantile. Without a quantile model
        (``model_`` None: a constant statistic) every score is 0, a result with no
        information (AUC 0.5), with no ``predictions``, ``extra["degenerate"]`` saying
        why, and a :class:`~privaudit.exceptions.DegenerateInputWarning`.
        """
        func = f"{type(self).__name__}.run"
        self._require_labels(labels, func)
        margins, out, raw, resolved = self._scored(target, X, y, outputs, func)
        lab = self._check_labels(labels, len(out), func)
        scores, predictions, extra = self._decided(margins, len(out))
        name = target_name if target_name is not None else (resolved.name if resolved else "")
        return self._package(labels=lab, scores=scores, target_name=name,
                             record_ids=record_ids, dataset=dataset, raw=raw,
                             raw_name=self.statistic_name_, predictions=predictions,
                             extra=extra)

    # ----------------------------------------------------------------- internals
    def _scored(self, target: Any, X: Any, y: ArrayLike | None,
                outputs: ModelOutputs | None, func: str) -> tuple[
                    NDArray[np.float64] | None, ModelOutputs, NDArray[np.float64],
                    Target | None]:
        """Margins (None without a model), outputs, statistic, resolved target."""
        self.check_params()
        if not hasattr(self, "model_"):
            from privaudit.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} is not fitted: call "
                                 f"fit(target, X_population, y_population) before {func}.")
        _require_records(X, func)  # before the target is queried
        out, resolved = self._outputs(target, X, y, outputs, func)
        statistic, _ = target_statistic(out)
        features = self._features(X, out, func)
        if self.model_ is None:
            return None, out, statistic, resolved
        if features.shape[1] != self.model_.center.n_features_in_:
            raise param_error("X", func, f"records of {self.model_.center.n_features_in_} "
                              "features with the label, as at fit",
                              f"<{features.shape[1]} columns>")
        return self.model_.margin(features, statistic), out, statistic, resolved

    def _decided(self, margins: NDArray[np.float64] | None, n_records: int
                 ) -> tuple[NDArray[np.float64], NDArray[np.int8] | None,
                                     dict[str, Any]]:
        """Scores, hard decisions and details of a result.

        Without a model the scores are NaN: :meth:`MembershipAttack._package` turns them
        into a result with no information (every score 0, AUC 0.5), with this attack's
        reason (:meth:`_no_information_reason`), so an audit keeps its other results.
        """
        extra: dict[str, Any] = {"alpha": float(self.alpha), "method": self.method}
        model: QuantileModel | None = self.model_
        if margins is None or model is None:
            return np.full(n_records, np.nan), None, extra
        extra.update(threshold=float(model.threshold), n_folds=model.n_folds,
                     learning_rate=model.learning_rate)
        return margins, (margins > model.threshold).astype(np.int8), extra

    def _no_information_reason(self) -> str:
        return self._no_model_reason()

    def _no_model_reason(self) -> str:
        return (f"the target's {self.statistic_name_} was the same on every population "
                "record (a constant model?), so no quantile separates members from "
                "non-members")

    def _check_population(self, X: Any, n_records: int | None, func: str) -> None:
        """``X`` given, with enough records for the cross-fitting (None: not known yet)."""
        _require_records(X, func)
        folds = fit_schedule(n_records or 0, self.n_folds, self.learning_rate,
                             func=func).n_folds
        if n_records is not None and n_records < 2 * folds:
            # A fold and a leaf of records for each fold model (fit_quantile_model's need).
            raise param_error("X", func, f"at least {2 * folds} population records (two for "
                              f"each of the {folds} folds of the cross-fitting)",
                              f"<{n_records} records>")

    def _features(self, X: Any, out: ModelOutputs, func: str) -> NDArray[np.float64]:
        """:func:`record_features`, with a DataFrame's non-numeric columns coded."""
        coded = _category_codes(X, getattr(self, "categories_", {}), func)
        expected = ("numeric records, or a DataFrame (its non-numeric columns are coded); "
                    "for texts or other records, give numeric features as X and the "
                    "target's answers as outputs=")
        return _with_label(_numeric_records(coded, func, expected), out, func)

    def _outputs(self, target: Any, X: Any, y: ArrayLike | None,
                 outputs: ModelOutputs | None, func: str) -> tuple[ModelOutputs,
                                                                   Target | None]:
        """The base class's checks; probabilities are required of classifiers only."""
        task = getattr(outputs, "task", None) or getattr(target, "task", None)
        if task is None and target is not None and outputs is None:
            from privaudit.targets import as_target

            target = as_target(target)
            task = target.task
        if task == "regression":
            return resolve_outputs(target, X, y, outputs, func=func,
                                   tasks=self.__privaudit_tags__().tasks)
        return super()._outputs(target, X, y, outputs, func)
