"""U-MIA: a membership attack on an unlearned model, trained on a surrogate's outputs.

The attacker unlearns some records from a model of its own (a surrogate: same algorithm,
its own data), queries the surrogate on those unlearned records and on records it never
trained on, and trains a classifier to tell the two apart from the outputs; the classifier
then scores the audited model's outputs on the records under test (1 = unlearned,
0 = never trained on). As the Apollo paper evaluates it: an SVM with an RBF kernel and
C = 3, on features of the output (the loss and the sorted probability vector, standardised).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import param_error
from privaudit.attacks._base import BaseAttack
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership import output_features
from privaudit.exceptions import NotFittedError
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs

__all__ = ["UMIAAttack"]

_FUNC = "UMIAAttack"


def _check_outputs(value: Any, param: str, func: str) -> ModelOutputs:
    if not isinstance(value, ModelOutputs):
        raise param_error(param, func, "a privaudit.targets.ModelOutputs",
                          f"<{type(value).__name__}>", error=TypeError)
    if value.probabilities is None:
        raise param_error(param, func, "outputs with class probabilities (U-MIA reads them)",
                          "<label-only outputs>")
    return value


class UMIAAttack(BaseAttack):
    """U-MIA: an RBF SVM on output features, trained on a surrogate unlearned model.

    Parameters
    ----------
    C : float, default=3.0
        The SVM's regularisation (the Apollo paper's value).
    features : sequence of str, default=("loss", "sorted_probabilities")
        Output features (:func:`privaudit.attacks.membership.output_features`); the sorted
        probabilities make the attack independent of the class.
    random_state : int, optional
        Seeds the SVM's probability calibration.

    References
    ----------
    .. [1] Kurmanji, M., Triantafillou, P., Hayes, J. and Triantafillou, E. "Towards
       Unbounded Machine Unlearning." NeurIPS 2023 (the membership attack on unlearned
       models).
    .. [2] Tang, Y., Joshi, A. and Kundu, S. "Apollo: A Posteriori Label-Only Membership
       Inference Attack Towards Machine Unlearning" (U-MIA: SVM, RBF kernel, C = 3).
    """

    name = "u-mia"
    _tags = AttackTags(tasks=("classification",), needs_probabilities=True)

    def __init__(self, C: float = 3.0,
                 features: Sequence[str] = ("loss", "sorted_probabilities"),
                 random_state: Any = None) -> None:
        self.C = C
        self.features = features
        self.random_state = random_state

    def check_params(self) -> None:
        """``C`` a positive finite number; ``features`` a non-empty list of names."""
        C = self.C
        if isinstance(C, bool) or not isinstance(C, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(C) and C > 0):
            raise param_error("C", _FUNC, "a positive finite number", C)
        f = self.features
        if isinstance(f, str) or not isinstance(f, Sequence) or not f \
                or not all(isinstance(n, str) for n in f):
            raise param_error("features", _FUNC, "a non-empty list of feature names (see "
                              "privaudit.attacks.membership.output_features)", f,
                              error=TypeError)

    def _check_fitted(self, func: str) -> None:
        if not hasattr(self, "model_"):
            raise NotFittedError(f"This UMIAAttack is not fitted: call fit(unlearned, "
                                 f"heldout) with a surrogate's outputs before {func}.")

    def fit(self, unlearned: ModelOutputs, heldout: ModelOutputs) -> UMIAAttack:
        """Train on a surrogate's outputs on its unlearned (1) and held-out (0) records."""
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        func = f"{_FUNC}.fit"
        self.check_params()
        a = output_features(_check_outputs(unlearned, "unlearned", func), self.features)[0]
        b = output_features(_check_outputs(heldout, "heldout", func), self.features)[0]
        if not len(a) or not len(b):
            raise param_error("heldout" if len(a) else "unlearned", func,
                              "at least one record", "<no records>")
        X = np.vstack([a, b])
        y = np.r_[np.ones(len(a), dtype=np.int8), np.zeros(len(b), dtype=np.int8)]
        self.model_ = make_pipeline(StandardScaler(), SVC(
            C=float(self.C), kernel="rbf", random_state=self.random_state)).fit(X, y)
        return self

    def score(self, outputs: ModelOutputs) -> NDArray[np.float64]:
        """The SVM's decision value per record: higher = more likely an unlearned record."""
        self._check_fitted(f"{_FUNC}.score")
        X = output_features(_check_outputs(outputs, "outputs", f"{_FUNC}.score"),
                            self.features)[0]
        return np.asarray(self.model_.decision_function(X), dtype=np.float64)

    def run(self, outputs: ModelOutputs, labels: ArrayLike, *, record_ids: Any = None,
            dataset: str = "", target_name: str = "") -> AttackResult:
        """Score the audited records (labels: 1 = unlearned, 0 = never trained on)."""
        scores = self.score(outputs)
        return AttackResult(labels=np.asarray(labels), scores=scores,
                            predictions=(scores > 0).astype(np.int8), record_ids=record_ids,
                            attack=self.name, target=target_name, dataset=dataset,
                            parameters={"C": float(self.C), "features": list(self.features)})
