"""Trained membership attacks on output features (as TensorFlow Privacy's trained attacks).

The attacker knows the membership of some of the audited records and trains a classifier
(logistic regression, MLP, random forest or k-NN) on features of the target's outputs
(the probability vector and the loss) to tell members from non-members.

Scoring every audited record with a classifier trained on those same records would leak
their labels into their scores (a random forest or a 1-NN memorises its training set, so
the AUC would look high even against a model that leaks nothing). :meth:`TrainedAttack.run`
therefore *cross-fits*: the records are split into ``n_splits`` stratified folds, and each
fold is scored by a classifier trained on the other folds only. Every score is
out-of-fold.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_int, check_random_state, param_error
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import SignalAttack, _check_bool
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs

__all__ = [
    "TOP_K",
    "TrainedAttack",
    "TrainedGBAttack",
    "TrainedKNNAttack",
    "TrainedLRAttack",
    "TrainedMLPAttack",
    "TrainedRFAttack",
    "output_features",
]

#: Number of largest probabilities kept by the ``"sorted_probabilities"`` feature.
TOP_K: int = 10

#: Built-in attack classifiers of :class:`TrainedAttack`.
TRAINED_MODELS: tuple[str, ...] = ("lr", "mlp", "rf", "knn", "gb")

#: Output features that are not a :meth:`ModelOutputs.signal`.
_VECTOR_FEATURES: tuple[str, ...] = ("probabilities", "sorted_probabilities", "loss")
_SCALAR_SIGNALS: tuple[str, ...] = (
    "cross_entropy", "true_class_confidence", "modified_entropy", "correctness",
    "logit_confidence", "entropy",
)

# TensorFlow Privacy's hyper-parameter grids (membership_inference_attack/models.py),
# searched with 3-fold cross-validation when ``tune=True``. Its random-forest grid lists
# max_features "auto", an old alias of "sqrt" for classifiers that scikit-learn removed.
_GRIDS: dict[str, dict[str, list[Any]]] = {
    "lr": {"C": list(np.logspace(-4, 2, 10))},
    "mlp": {"hidden_layer_sizes": [(64,), (32, 32)], "alpha": [0.0001, 0.001, 0.01]},
    "rf": {
        "max_depth": [5, 10, 20, None],
        "min_samples_split": [2, 5, 10],
        "min_samples_leaf": [1, 2, 4],
    },
    "knn": {"n_neighbors": [3, 5, 7]},
    # Not in TF Privacy (no boosted attack there): a small grid around the defaults.
    "gb": {"learning_rate": [0.05, 0.1, 0.2], "max_leaf_nodes": [15, 31]},
}

_SEED_MAX = 2**31 - 1


# --------------------------------------------------------------------------- classifiers


def _base_classifier(name: str, seed: int) -> Any:
    """The attack classifier ``name`` with fixed defaults taken from TF Privacy's grids."""
    if name == "lr":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=1.0, max_iter=1000)
    if name == "mlp":
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(hidden_layer_sizes=(64,), alpha=0.001, max_iter=500,
                             random_state=seed)
    if name == "rf":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=100, max_features="sqrt",
                                      min_samples_leaf=4, random_state=seed)
    if name == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        return KNeighborsClassifier(n_neighbors=5)
    if name == "gb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(random_state=seed)
    raise AssertionError(name)  # pragma: no cover - names are checked by the callers


def _reseed(estimator: Any, seed: int) -> Any:
    """Set every ``random_state`` parameter (at any depth) of a cloned estimator."""
    from sklearn.base import clone

    est = clone(estimator)
    params = est.get_params(deep=True)
    seeds = {k: seed for k in params if k.rsplit("__", 1)[-1] == "random_state"}
    if seeds:
        est.set_params(**seeds)
    return est


def make_attack_classifier(
    model: Any, seed: int, *, names: tuple[str, ...], func: str, tune: bool = False,
    param: str = "model",
) -> Any:
    """Build an unfitted attack classifier: a standardised built-in one, or a clone.

    Parameters
    ----------
    model : str or scikit-learn classifier
        One of ``names``, or an unfitted classifier with ``predict_proba`` (cloned, its
        ``random_state`` parameters set to ``seed``, used as is: no scaler is added).
    seed : int
        Seed of the classifier (and of the inner folds of the search when ``tune``).
    names : tuple of str
        The built-in names accepted.
    func : str
        Caller, for error messages.
    tune : bool
        Wrap a built-in classifier in TF Privacy's ``GridSearchCV`` (3 stratified folds).
    param : str
        Name of the caller's parameter, for error messages.
    """
    if isinstance(model, str):
        if model not in names:
            raise param_error(param, func, f"one of {list(names)} or a scikit-learn "
                              "classifier with predict_proba", model)
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler

        pipe = Pipeline([("scale", StandardScaler()), ("clf", _base_classifier(model, seed))])
        if not tune or model not in _GRIDS:
            return pipe
        from sklearn.model_selection import GridSearchCV, StratifiedKFold

        grid = {f"clf__{k}": v for k, v in _GRIDS[model].items()}
        cv = StratifiedKFold(3, shuffle=True, random_state=seed)
        return GridSearchCV(pipe, param_grid=grid, cv=cv)
    if not (hasattr(model, "fit") and hasattr(model, "predict_proba")
            and hasattr(model, "get_params")):
        raise param_error(param, func, f"one of {list(names)} or a scikit-learn "
                          "classifier with predict_proba", f"<{type(model).__name__}>",
                          error=TypeError)
    return _reseed(model, seed)


def fit_quietly(estimator: Any, X: NDArray[np.float64], y: NDArray[Any]) -> Any:
    """Fit ``estimator``; an attack model stopped at ``max_iter`` is still a valid attack."""
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    # One OpenMP thread: attack sets are small, and HistGradientBoosting's threads spin on a
    # busy machine (measured: 0.07 s with all threads, 0.02 s with one, 160 records).
    with warnings.catch_warnings(), threadpool_limits(1, user_api="openmp"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.fit(X, y)
    return estimator


def member_probability(estimator: Any, X: NDArray[np.float64]) -> NDArray[np.float64]:
    """Probability of the class 1 (member) under a fitted attack classifier."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="openmp"):
        proba = np.asarray(estimator.predict_proba(X), dtype=np.float64)
    classes = list(np.asarray(estimator.classes_).tolist())
    return proba[:, classes.index(1)]


def derive_seeds(random_state: Any, n: int, *, func: str) -> NDArray[np.int64]:
    """``n`` seeds for scikit-learn estimators drawn from ``random_state``.

    ``np.random.default_rng(random_state).integers(0, 2**31 - 1, size=n)`` for an int
    seed, so a given seed always gives the same folds and the same attack models.
    """
    rng = check_random_state(random_state, func=func)
    return rng.integers(0, _SEED_MAX, size=n, dtype=np.int64)


# --------------------------------------------------------------------------- features


def _check_features(features: Any, func: str) -> tuple[str, ...]:
    allowed = [*_VECTOR_FEATURES, *_SCALAR_SIGNALS]
    if isinstance(features, str) or not isinstance(features, Sequence) or not features:
        raise param_error("features", func, f"a non-empty sequence of names among {allowed}",
                          features, error=TypeError)
    names = tuple(features)
    for name in names:
        if name not in allowed:
            raise param_error("features", func, f"names among {allowed}", name)
    if len(set(names)) != len(names):
        raise param_error("features", func, "free of repeated names", features)
    return names


def output_features(
    outputs: ModelOutputs, features: Sequence[str] = ("probabilities", "loss")
) -> tuple[NDArray[np.float64], list[str]]:
    """The feature matrix a trained attack reads from a target's outputs.

    Parameters
    ----------
    outputs : ModelOutputs
        Outputs of a classifier revealing probabilities.
    features : sequence of str
        Blocks of columns, in order:

        - ``"probabilities"``: the full probability vector, in the order of
          ``outputs.classes`` (TF Privacy's ``logits_or_probs``);
        - ``"sorted_probabilities"``: the ``min(n_classes, TOP_K)`` largest probabilities
          in decreasing order (class-agnostic, as Salem et al.'s ML-Leaks);
        - ``"loss"``: the per-record loss (cross-entropy);
        - any per-record signal of :meth:`ModelOutputs.signal` (``"true_class_confidence"``,
          ``"modified_entropy"``, ``"entropy"``, ``"logit_confidence"``, ``"correctness"``).

    Returns
    -------
    features : ndarray of shape (n_records, n_features)
    names : list of str
        One name per column.

    References
    ----------
    .. [1] TensorFlow Privacy, ``membership_inference_attack/models.py``
       (``create_attacker_data``: probabilities or logits stacked with the loss).
    .. [2] Salem et al., "ML-Leaks: Model and Data Independent Membership Inference
       Attacks and Defenses on Machine Learning Models", NDSS 2019 (sorted top
       probabilities).
    """
    func = "output_features"
    names = _check_features(features, func)
    p = outputs.probabilities
    if outputs.task != "classification" or p is None:
        raise param_error("outputs", func, "outputs of a classifier revealing probabilities",
                          f"<{outputs.task} outputs without probabilities>"
                          if p is None else f"<{outputs.task} outputs>")
    blocks: list[NDArray[np.float64]] = []
    columns: list[str] = []
    classes = np.asarray(outputs.classes) if outputs.classes is not None else np.arange(
        p.shape[1])
    for name in names:
        if name == "probabilities":
            blocks.append(p)
            columns.extend(f"probability[{c}]" for c in classes.tolist())
        elif name == "sorted_probabilities":
            k = min(p.shape[1], TOP_K)
            blocks.append(-np.sort(-p, axis=1)[:, :k])
            columns.extend(f"top{i + 1}_probability" for i in range(k))
        elif name == "loss":
            blocks.append(np.asarray(outputs.loss, dtype=np.float64)[:, None])
            columns.append("loss")
        else:
            blocks.append(np.asarray(outputs.signal(name), dtype=np.float64)[:, None])
            columns.append(name)
    return np.concatenate(blocks, axis=1), columns


# --------------------------------------------------------------------------- the attack


class TrainedAttack(SignalAttack):
    """A classifier trained on output features to tell members from non-members.

    TensorFlow Privacy's trained attacks (``AttackType.LOGISTIC_REGRESSION``,
    ``MULTI_LAYERED_PERCEPTRON``, ``RANDOM_FOREST``, ``K_NEAREST_NEIGHBORS``). The threat
    model is theirs: the attacker knows the membership of some audited records and learns
    from them what the target's outputs look like on members.

    Parameters
    ----------
    model : {"lr", "mlp", "rf", "knn", "gb"} or scikit-learn classifier, default="lr"
        The attack classifier. Built-in ones are standardised (``StandardScaler`` then the
        classifier) with defaults from TF Privacy's grids: logistic regression ``C=1``;
        MLP with one hidden layer of 64 units, ``alpha=1e-3``, up to 500 iterations; random
        forest of 100 trees, ``max_features="sqrt"``, ``min_samples_leaf=4``; 5-NN;
        ``"gb"``: scikit-learn's ``HistGradientBoostingClassifier`` with its defaults. An
        unfitted classifier with ``predict_proba`` is cloned and used as is.
    features : sequence of str, default=("probabilities", "loss")
        Columns read from the target's outputs (see :func:`output_features`); the default
        is TF Privacy's (probability vector and loss).
    n_splits : int, default=5
        Folds of the cross-fitting in :meth:`run` (stratified by membership).
    tune : bool, default=False
        Choose the built-in classifier's hyper-parameters by 3-fold grid search over TF
        Privacy's grids (inside each training fold; many times slower, for the forest
        especially). Ignored for a user classifier.
    random_state : int, Generator or None, default=None
        Seeds of the folds and of the attack classifiers (see Notes).

    Attributes
    ----------
    model_ : estimator
        The classifier fitted on all records given to :meth:`fit` (for :meth:`score`).
    classes_ : ndarray
        The target classes seen by :meth:`fit` (the probability columns must match).
    feature_names_ : list of str
        One name per feature column.

    Notes
    -----
    **Out-of-fold scores.** :meth:`run` (with ``cross_fit=True``, the default) splits the
    audited records into ``n_splits`` folds with ``StratifiedKFold(shuffle=True)`` and
    scores each fold with a classifier trained on the other ``n_splits - 1`` folds: no
    record is scored by an attack model that saw its membership label. Scoring the
    training records of the attack classifier instead would report memorisation of the
    labels by the *attack* model as leakage of the *target* (a random forest or k-NN does
    this readily). TF Privacy does the same with 2 folds. Use :meth:`fit` then
    :meth:`score` (or ``run(cross_fit=False)``) to score new records with a classifier
    trained on other records, e.g. on a shadow model's members and non-members.

    Unlike TF Privacy, the folds are not balanced by subsampling the larger class; the
    AUC and the TPR at low FPR, the figures reported, do not depend on the class ratio.

    **Seeds.** With ``s = np.random.default_rng(random_state).integers(0, 2**31 - 1,
    size=n_splits + 1)``, the folds are ``StratifiedKFold(n_splits, shuffle=True,
    random_state=s[0])`` and fold ``i``'s classifier gets ``random_state=s[i + 1]``;
    :meth:`fit` gives its classifier the first seed of the same sequence of size 1.

    **Predictions.** Member when the attack's membership probability is at least 0.5.

    References
    ----------
    .. [1] Shokri, Stronati, Song, Shmatikov, "Membership Inference Attacks Against
       Machine Learning Models", IEEE S&P 2017 (attack models trained on outputs).
    .. [2] TensorFlow Privacy, ``privacy_tests/membership_inference_attack``
       (``models.py``, ``membership_inference_attack._run_trained_attack``: stratified
       folds, each scored by a model trained on the others).
    .. [3] Salem et al., "ML-Leaks: Model and Data Independent Membership Inference
       Attacks and Defenses on Machine Learning Models", NDSS 2019.

    Examples
    --------
    >>> from privaudit.attacks.membership._trained import TrainedAttack
    >>> TrainedAttack(model="rf", n_splits=3)
    TrainedAttack(model='rf', n_splits=3)
    """

    name: ClassVar[str] = "trained"
    _tags: ClassVar[AttackTags] = AttackTags(tasks=("classification",), needs_probabilities=True,
                                             cross_fitted=True)

    def __init__(
        self,
        model: Any = "lr",
        features: Sequence[str] = ("probabilities", "loss"),
        n_splits: int = 5,
        tune: bool = False,
        random_state: Any = None,
    ) -> None:
        self.model = model
        self.features = features
        self.n_splits = n_splits
        self.tune = tune
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    @property
    def attack_name(self) -> str:
        """Name written into results: ``"trained-<model>"`` (``"trained"`` for a user model)."""
        return f"trained-{self.model}" if isinstance(self.model, str) else self.name

    def check_params(self) -> None:
        """Refuse a parameter out of range, before any attack classifier trains.

        ``model`` a built-in name or a classifier, ``features`` known names, ``n_splits``
        an integer >= 2, ``tune`` a bool, ``random_state`` a seed.
        """
        who = type(self).__name__
        _check_bool(self.tune, "tune", who)
        make_attack_classifier(self.model, 0, names=TRAINED_MODELS, func=who,
                               tune=bool(self.tune))
        _check_features(self.features, who)
        check_int(self.n_splits, param="n_splits", func=who, low=2)
        check_random_state(self.random_state, func=who)

    def _new_classifier(self, seed: int, func: str) -> Any:
        return make_attack_classifier(self.model, int(seed), names=TRAINED_MODELS, func=func,
                                      tune=bool(self.tune))

    def _features(self, outputs: ModelOutputs, func: str) -> NDArray[np.float64]:
        feats, _ = output_features(outputs, self.features)
        if not np.all(np.isfinite(feats)):
            raise param_error("outputs", func, "finite features", "<non-finite features>")
        return feats

    @staticmethod
    def _check_two_classes(labels: NDArray[np.int8], need: int, func: str) -> None:
        n_in = int(labels.sum())
        n_out = int(labels.shape[0] - n_in)
        if min(n_in, n_out) < need:
            raise param_error(
                "labels", func,
                f"given with at least {need} members (1) and {need} non-members (0) to "
                "train an attack classifier", f"<{n_in} members, {n_out} non-members>",
            )

    # ------------------------------------------------------------------ hooks
    def _calibrate(self, outputs: ModelOutputs, labels: NDArray[np.int8] | None) -> None:
        func = f"{type(self).__name__}.fit"
        if labels is None:
            raise param_error("labels", func, "given (1 = member, 0 = non-member): the attack "
                              "classifier learns from them", None, error=TypeError)
        self._check_two_classes(labels, 1, func)
        feats = self._features(outputs, func)
        seed = derive_seeds(self.random_state, 1, func=func)[0]
        model = fit_quietly(self._new_classifier(seed, func), feats, labels)
        self.model_ = model
        self.classes_ = np.asarray(outputs.classes)
        self.feature_names_ = output_features(outputs, self.features)[1]

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        func = f"{type(self).__name__}.score"
        if "probabilities" in self.features:
            outputs = self._align_classes(outputs, func)
        feats = self._features(outputs, func)
        return member_probability(self.model_, feats), "membership_probability"

    def _align_classes(self, outputs: ModelOutputs, func: str) -> ModelOutputs:
        """Reorder the probability columns to the classes seen by ``fit``."""
        fitted = self.classes_
        given = np.asarray(outputs.classes)
        if given.shape == fitted.shape and bool(np.all(given == fitted)):
            return outputs
        if given.shape != fitted.shape or not np.all(np.isin(given, fitted)):
            raise param_error(
                "outputs", func,
                f"outputs of a classifier over the classes seen by fit {fitted.tolist()[:10]}",
                f"<classes {given.tolist()[:10]}>",
            )
        order = np.argsort(given, kind="stable")[np.searchsorted(np.sort(given), fitted)]
        assert outputs.probabilities is not None
        return ModelOutputs.from_probabilities(outputs.y, outputs.probabilities[:, order],
                                               fitted)

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        return raw

    def _predict(self, scores: NDArray[np.float64]) -> NDArray[np.int8] | None:
        return (scores >= 0.5).astype(np.int8)

    # ------------------------------------------------------------------ cross-fitting
    def cross_fit_scores(
        self, outputs: ModelOutputs, labels: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """Out-of-fold membership probabilities of every record, and each record's fold.

        Parameters
        ----------
        outputs : ModelOutputs
            The target's outputs on the audited records.
        labels : array-like of 0/1
            Membership of the audited records (1 = member).

        Returns
        -------
        scores : ndarray of shape (n_records,)
            Record ``j``'s membership probability under the classifier trained on every
            fold but ``folds[j]``.
        folds : ndarray of int, shape (n_records,)
            The fold of each record.
        """
        from sklearn.model_selection import StratifiedKFold

        func = f"{type(self).__name__}.run"
        self.check_params()
        k = int(self.n_splits)
        lab = self._check_labels(labels, len(outputs), func)
        self._check_two_classes(lab, k, func)
        feats = self._features(outputs, func)
        seeds = derive_seeds(self.random_state, k + 1, func=func)
        splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=int(seeds[0]))
        scores = np.full(lab.shape[0], np.nan)
        folds = np.full(lab.shape[0], -1, dtype=np.intp)
        for i, (train, test) in enumerate(splitter.split(feats, lab)):
            clf = fit_quietly(self._new_classifier(seeds[i + 1], func), feats[train],
                              lab[train])
            scores[test] = member_probability(clf, feats[test])
            folds[test] = i
        return scores, folds

    def run(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
        record_ids: ArrayLike | None = None,
        dataset: str = "",
        target_name: str | None = None,
        cross_fit: bool = True,
    ) -> AttackResult:
        """Score the audited records out-of-fold and package the result.

        Parameters
        ----------
        target : Target or fitted scikit-learn estimator, optional
            The audited classifier.
        X, y : array-like, optional
            Audited records and their true labels.
        labels : array-like of 0/1
            Membership of the audited records (1 = member): the attack classifiers learn
            from them (on the other folds) and the metrics are computed against them.
        outputs : ModelOutputs, optional
            Precomputed outputs instead of querying ``target``.
        record_ids : array-like, optional
            Identifiers of the audited records.
        dataset : str
            Dataset name for provenance.
        target_name : str, optional
            Overrides the target's name.
        cross_fit : bool, default=True
            Score each fold with a classifier trained on the other folds (no record is
            scored by a model that saw its label). ``False``: score every record with the
            classifier of :meth:`fit` (which must have been trained on other records).

        Returns
        -------
        AttackResult
            ``out_of_fold`` says whether the scores are out-of-fold.
        """
        func = f"{type(self).__name__}.run"
        self.check_params()
        self._require_labels(labels, func)
        if not cross_fit:
            self._check_fitted(func)
        out, resolved = self._outputs(target, X, y, outputs, func)
        lab = self._check_labels(labels, len(out), func)
        extra: dict[str, Any] = {}
        if cross_fit:
            scores, _ = self.cross_fit_scores(out, lab)
            extra["n_splits"] = int(self.n_splits)
        else:
            scores, _ = self._raw_statistic(out)
        _, columns = output_features(out, self.features)
        extra["features"] = columns
        name = target_name if target_name is not None else (resolved.name if resolved else "")
        return self._package(
            labels=lab, scores=scores, target_name=name, record_ids=record_ids,
            dataset=dataset, raw=scores, raw_name="membership_probability",
            predictions=self._predict(scores), extra=extra, attack=self.attack_name,
            parameters={**self.get_params(), "model": self.model}, out_of_fold=bool(cross_fit),
        )


class _FixedModelAttack(TrainedAttack):
    """A :class:`TrainedAttack` whose classifier is fixed by the subclass."""

    _model: ClassVar[str] = ""

    def __init__(
        self,
        features: Sequence[str] = ("probabilities", "loss"),
        n_splits: int = 5,
        tune: bool = False,
        random_state: Any = None,
    ) -> None:
        super().__init__(model=self._model, features=features, n_splits=n_splits, tune=tune,
                         random_state=random_state)


class TrainedLRAttack(_FixedModelAttack):
    """:class:`TrainedAttack` with logistic regression (registry name ``"trained-lr"``).

    Parameters
    ----------
    features, n_splits, tune, random_state
        See :class:`TrainedAttack`.

    References
    ----------
    .. [1] TensorFlow Privacy, ``AttackType.LOGISTIC_REGRESSION``.
    """

    name: ClassVar[str] = "trained-lr"
    _model: ClassVar[str] = "lr"


class TrainedMLPAttack(_FixedModelAttack):
    """:class:`TrainedAttack` with a multi-layer perceptron (``"trained-mlp"``).

    Parameters
    ----------
    features, n_splits, tune, random_state
        See :class:`TrainedAttack`.

    References
    ----------
    .. [1] TensorFlow Privacy, ``AttackType.MULTI_LAYERED_PERCEPTRON``.
    """

    name: ClassVar[str] = "trained-mlp"
    _model: ClassVar[str] = "mlp"


class TrainedRFAttack(_FixedModelAttack):
    """:class:`TrainedAttack` with a random forest (``"trained-rf"``).

    Parameters
    ----------
    features, n_splits, tune, random_state
        See :class:`TrainedAttack`.

    References
    ----------
    .. [1] TensorFlow Privacy, ``AttackType.RANDOM_FOREST``.
    """

    name: ClassVar[str] = "trained-rf"
    _model: ClassVar[str] = "rf"


class TrainedKNNAttack(_FixedModelAttack):
    """:class:`TrainedAttack` with k nearest neighbours (``"trained-knn"``).

    Parameters
    ----------
    features, n_splits, tune, random_state
        See :class:`TrainedAttack`.

    References
    ----------
    .. [1] TensorFlow Privacy, ``AttackType.K_NEAREST_NEIGHBORS``.
    """

    name: ClassVar[str] = "trained-knn"
    _model: ClassVar[str] = "knn"


class TrainedGBAttack(_FixedModelAttack):
    """:class:`TrainedAttack` with gradient boosting (``"trained-gb"``).

    scikit-learn's ``HistGradientBoostingClassifier`` (defaults; ``tune=True`` searches
    ``learning_rate`` and ``max_leaf_nodes``). Tree ensembles find thresholds on single
    features (a loss, a confidence) that a linear attack averages away; IBM ART offers a
    gradient-boosting black-box attack for the same reason.

    Parameters
    ----------
    features, n_splits, tune, random_state
        See :class:`TrainedAttack`.

    References
    ----------
    .. [1] Nicolae, M.-I. et al. (2018). Adversarial Robustness Toolbox v1.0.0,
       ``MembershipInferenceBlackBox(attack_model_type="gb")``.
    .. [2] Ke, G. et al. (2017). LightGBM: A Highly Efficient Gradient Boosting Decision
       Tree. NeurIPS 2017 (the histogram algorithm scikit-learn follows).
    """

    name: ClassVar[str] = "trained-gb"
    _model: ClassVar[str] = "gb"
