"""The shadow-model attack of Shokri, Stronati, Song and Shmatikov (IEEE S&P 2017).

Shadow models imitate the target on data the attacker owns, so the attacker knows which
records each shadow model was trained on. The shadow models' prediction vectors on their
members and non-members form a labelled training set, on which one binary *attack model*
per class learns to tell "in" from "out"; the attack models are then applied to the
target's prediction vectors.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_int, check_random_state, param_error
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import ReferenceAttack
from privaudit.attacks.membership._reference import ReferenceOutputs
from privaudit.attacks.membership._trained import (
    derive_seeds,
    fit_quietly,
    make_attack_classifier,
    member_probability,
)
from privaudit.targets import ModelOutputs

__all__ = ["SHADOW_MODELS", "ShadowModelAttack", "global_features"]

#: Built-in attack models of :class:`ShadowModelAttack`.
SHADOW_MODELS: tuple[str, ...] = ("mlp", "rf", "gb", "lr")


def global_features(
    probabilities: NDArray[np.float64], y_index: NDArray[np.intp]
) -> NDArray[np.float64]:
    """Class-agnostic features of the fallback attack model.

    The probability vector sorted in decreasing order, then the true class's probability:
    these mean the same thing whatever the record's class, so one model serves every
    class without enough shadow examples of its own.

    Parameters
    ----------
    probabilities : ndarray of shape (n_records, n_classes)
        Prediction vectors.
    y_index : ndarray of int, shape (n_records,)
        Column of each record's true class.

    Returns
    -------
    ndarray of shape (n_records, n_classes + 1)
    """
    p = np.asarray(probabilities, dtype=np.float64)
    true = p[np.arange(p.shape[0]), np.asarray(y_index)]
    return np.concatenate([-np.sort(-p, axis=1), true[:, None]], axis=1)


def _columns_in(classes: NDArray[Any], universe: NDArray[Any]) -> NDArray[np.intp]:
    """Column of each of ``classes`` in the sorted array ``universe`` (all present)."""
    return np.searchsorted(universe, classes).astype(np.intp)


class ShadowModelAttack(ReferenceAttack):
    """Shokri et al.'s shadow-model attack: per-class attack models on prediction vectors.

    :meth:`fit` takes the outputs of a pool of shadow (reference) models on population
    records, with the membership of each record in each model's training set
    (:func:`collect_reference_outputs`). Every (shadow model, population record) pair is
    one training example of the attack: its features are the shadow model's prediction
    vector on the record, its label whether the record was in that model's training set.
    One binary attack model is trained per true class (Shokri et al., Section V-C), and
    :meth:`score` returns the attack model's membership probability for the target's
    prediction vector, using the model of the record's true class.

    Parameters
    ----------
    attack_model : {"mlp", "rf", "gb", "lr"} or scikit-learn classifier, default="mlp"
        The per-class attack model. ``"mlp"`` (the paper's choice: a neural network with
        one hidden layer of 64 units; here scikit-learn's ``MLPClassifier`` on
        standardised inputs, up to 500 iterations), ``"rf"`` (100 trees,
        ``min_samples_leaf=4``), ``"gb"`` (histogram gradient boosting) or ``"lr"``
        (logistic regression), or an unfitted classifier with ``predict_proba`` (cloned
        for every class, its ``random_state`` parameters reseeded).
    max_attack_train : int, default=20000
        The attack training set (``n_models * n_population`` examples) is subsampled
        uniformly at random to at most this many examples, which bounds the fitting time.
    min_class_samples : int, default=20
        A class gets its own attack model when its training examples contain at least
        this many "in" and this many "out" examples; the other classes are scored by one
        global fallback model (see Notes).
    random_state : int, Generator or None, default=None
        Seeds of the subsampling and of every attack model.

    Attributes
    ----------
    classes_ : ndarray
        The classes of the shadow models (sorted union); the target's prediction vectors
        are aligned to them.
    class_models_ : dict
        Fitted attack model of each class that has one, keyed by class label.
    fallback_classes_ : ndarray
        Classes scored by the global model (too few shadow examples, or one kind only).
    global_model_ : estimator or None
        The fallback model (``None`` when every class has its own).
    n_attack_train_ : int
        Number of attack training examples after subsampling.
    n_shadow_models_ : int
        Number of shadow models the attack was trained on.

    Notes
    -----
    **Features.** A per-class model reads the full prediction vector, columns in the order
    of ``classes_`` (a shadow model that never saw a class gives it probability 0), as in
    the paper; the one-hot label is not needed since the model is chosen by the label.
    The global fallback model reads class-agnostic features (:func:`global_features`: the
    sorted prediction vector and the true class's probability) and is trained on every
    example, so that a rare class is scored by what confident and unconfident predictions
    look like in general.

    **Data.** Only the population records are used: they are the attacker's own data,
    disjoint from the audited records in offline mode. ``predictions`` in a result are
    ``membership_probability >= 0.5``.

    **Seeds.** With ``s = np.random.default_rng(random_state).integers(0, 2**31 - 1,
    size=n_classes + 2)``, ``s[0]`` draws the subsample, class ``classes_[i]``'s model gets
    ``s[i + 1]`` and the global model ``s[-1]``.

    References
    ----------
    .. [1] Shokri, R., Stronati, M., Song, C., Shmatikov, V. "Membership Inference Attacks
       Against Machine Learning Models." IEEE S&P 2017, Sections IV-V.

    Examples
    --------
    >>> from privaudit.attacks.membership._shadow import ShadowModelAttack
    >>> ShadowModelAttack(attack_model="rf", random_state=0)
    ShadowModelAttack(attack_model='rf', random_state=0)
    """

    name: ClassVar[str] = "shadow"
    _tags: ClassVar[AttackTags] = replace(ReferenceAttack._tags, needs_population=True)

    def __init__(
        self,
        attack_model: Any = "mlp",
        max_attack_train: int = 20_000,
        min_class_samples: int = 20,
        random_state: Any = None,
    ) -> None:
        self.attack_model = attack_model
        self.max_attack_train = max_attack_train
        self.min_class_samples = min_class_samples
        self.random_state = random_state

    def check_params(self) -> None:
        """``attack_model`` a built-in name or a classifier, the counts, ``random_state``."""
        who = type(self).__name__
        make_attack_classifier(self.attack_model, 0, names=SHADOW_MODELS, func=who,
                               param="attack_model")
        check_int(self.max_attack_train, param="max_attack_train", func=who, low=2)
        check_int(self.min_class_samples, param="min_class_samples", func=who, low=1)
        check_random_state(self.random_state, func=who)

    # ------------------------------------------------------------------ fit
    def _shadow_data(
        self, reference: Any, func: str
    ) -> tuple[NDArray[Any], NDArray[np.float64], NDArray[np.intp], NDArray[np.int8]]:
        """Classes, aligned prediction vectors, class columns and in/out labels."""
        if not isinstance(reference, ReferenceOutputs):
            raise param_error(
                "reference", func, "a ReferenceOutputs (see collect_reference_outputs)",
                f"<{type(reference).__name__}>", error=TypeError,
            )
        if reference.population is None or reference.population_in is None:
            raise param_error(
                "reference", func,
                "reference outputs with population records, the shadow models' own data "
                "(collect_reference_outputs(..., X_population=..., y_population=..., "
                "query_population=True))", "<ReferenceOutputs without population outputs>",
            )
        from privaudit.attacks._plan import check_task

        check_task(self.name, self, reference.population[0].task, func=func, param="reference")
        for o in reference.population:
            if o.task != "classification" or o.probabilities is None or o.classes is None:
                what = "outputs" if o.probabilities is not None else "outputs without probabilities"
                raise param_error(
                    "reference", func, "outputs of shadow classifiers revealing probabilities",
                    f"<{o.task} {what}>",
                )
        classes = np.unique(np.concatenate([np.asarray(o.classes) for o in reference.population]))
        blocks, index, members = [], [], []
        for o, inside in zip(reference.population, reference.population_in, strict=True):
            p = np.zeros((len(o), classes.shape[0]))
            p[:, _columns_in(np.asarray(o.classes), classes)] = o.probabilities
            blocks.append(p)
            index.append(_columns_in(np.asarray(o.y), classes))
            members.append(inside.astype(np.int8))
        labels = np.concatenate(members)
        if labels.min() == labels.max():
            raise param_error(
                "reference", func,
                "shadow outputs on both members and non-members of the shadow models",
                f"<only {'members' if labels[0] else 'non-members'}>",
            )
        return classes, np.concatenate(blocks), np.concatenate(index), labels

    def min_reference_models(self, mode: str) -> tuple[int, str]:
        """Fewest shadow models the attack needs (with a pool of either ``mode``), and why."""
        return 1, "the attack models learn from the shadow models' outputs"

    def fit(self, reference: ReferenceOutputs,
            population_outputs: ModelOutputs | None = None) -> ShadowModelAttack:
        """Train the attack models on the shadow models' outputs on population records.

        Parameters
        ----------
        reference : ReferenceOutputs
            Outputs of the shadow models, with population outputs and their in/out masks
            (:func:`~privaudit.attacks.membership.collect_reference_outputs` with
            ``X_population``).
        population_outputs : ModelOutputs, optional
            Ignored (the attack models learn from the shadow models' answers, not the
            target's): accepted so that every reference attack is fitted the same way.

        Returns
        -------
        self
        """
        func = f"{type(self).__name__}.fit"
        self.check_params()
        max_train, min_class = int(self.max_attack_train), int(self.min_class_samples)
        classes, probs, y_index, labels = self._shadow_data(reference, func)
        seeds = derive_seeds(self.random_state, classes.shape[0] + 2, func=func)
        if labels.shape[0] > max_train:
            rng = np.random.default_rng(int(seeds[0]))
            keep = np.sort(rng.choice(labels.shape[0], size=max_train, replace=False))
            probs, y_index, labels = probs[keep], y_index[keep], labels[keep]

        models: dict[Any, Any] = {}
        fallback = []
        for i, cls in enumerate(classes.tolist()):
            rows = y_index == i
            n_in = int(labels[rows].sum())
            n_out = int(rows.sum()) - n_in
            if min(n_in, n_out) < min_class:
                fallback.append(cls)
                continue
            clf = make_attack_classifier(self.attack_model, int(seeds[i + 1]),
                                         names=SHADOW_MODELS, func=func,
                                         param="attack_model")
            models[cls] = fit_quietly(clf, probs[rows], labels[rows])
        global_model = None
        if fallback:
            clf = make_attack_classifier(self.attack_model, int(seeds[-1]),
                                         names=SHADOW_MODELS, func=func,
                                         param="attack_model")
            global_model = fit_quietly(clf, global_features(probs, y_index), labels)
        self.classes_ = classes
        self.class_models_ = models
        self.fallback_classes_ = np.asarray(fallback, dtype=classes.dtype)
        self.global_model_ = global_model
        self.n_attack_train_ = int(labels.shape[0])
        self.n_shadow_models_ = int(reference.n_models)
        return self

    # ------------------------------------------------------------------ hooks
    def _aligned(self, outputs: ModelOutputs, func: str) -> tuple[
        NDArray[np.float64], NDArray[np.intp]
    ]:
        target_classes = np.asarray(outputs.classes)
        known = np.isin(target_classes, self.classes_)
        if not np.all(known):
            raise param_error(
                "target", func,
                f"a classifier over the shadow models' classes {self.classes_.tolist()[:10]}",
                f"<classes such as {target_classes[~known][:5].tolist()} unknown to them>",
            )
        p = np.zeros((len(outputs), self.classes_.shape[0]))
        p[:, _columns_in(target_classes, self.classes_)] = outputs.probabilities
        return p, _columns_in(np.asarray(outputs.y), self.classes_)

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        probs, y_index = self._aligned(outputs, f"{type(self).__name__}.score")
        scores = np.empty(len(outputs))
        for i, cls in enumerate(self.classes_.tolist()):
            rows = y_index == i
            if not np.any(rows):
                continue
            model = self.class_models_.get(cls)
            if model is not None:
                scores[rows] = member_probability(model, probs[rows])
            else:
                scores[rows] = member_probability(
                    self.global_model_, global_features(probs[rows], y_index[rows])
                )
        return scores, "membership_probability"

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        return raw

    def _predict(self, scores: NDArray[np.float64]) -> NDArray[np.int8] | None:
        return (scores >= 0.5).astype(np.int8)

    def _extra(
        self,
        outputs: ModelOutputs,
        labels: NDArray[np.int8],
        scores: NDArray[np.float64],
        predictions: NDArray[np.int8] | None,
    ) -> dict[str, Any]:
        return {
            "n_shadow_models": self.n_shadow_models_,
            "n_attack_train": self.n_attack_train_,
            "fallback_classes": self.fallback_classes_.tolist(),
        }
