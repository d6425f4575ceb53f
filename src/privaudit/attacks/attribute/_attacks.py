"""Attribute inference attacks against a model, and the model-free guesses beside them.

Every attack is an estimator: ``fit(siblings, truth, known)`` on the attacker's own
records (whose sensitive value it knows: a population sample, never the audited records),
``score(siblings, known) -> (n, m)`` (higher = the candidate is more likely),
``predict`` the best candidate per record (ties to the more common value) and
``posteriors`` a belief over the candidates. ``siblings`` are the model's answers on every
record with every candidate value (:func:`query_siblings`, one query for all attacks);
``known`` is what the attacker knows of each record (:func:`known_features`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error
from privaudit.attacks._base import BaseAttack
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.attribute._siblings import (
    SiblingOutputs,
    best_candidates,
    candidate_prior,
    softmax_rows,
)
from privaudit.exceptions import NotFittedError

__all__ = ["ATTRIBUTE_ATTACKS", "AttributeAttack", "ConfidenceAttributeAttack",
           "DirectAttributeAttack", "KnownFeaturesGuess", "LossTargetAttributeAttack",
           "MembershipAttributeAttack", "ModelInversionAttack", "PriorGuess",
           "get_attribute_attack"]

def _real(value: Any, param: str, who: str, expected: str, low: float | None = None
          ) -> float:
    """``value`` as a finite float (``>= low``), or the error naming ``param``."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error(param, who, expected, value, error=TypeError)
    if not np.isfinite(value) or (low is not None and value < low):
        raise param_error(param, who, expected, value)
    return float(value)


def _positive(value: Any, param: str, who: str) -> float:
    out = _real(value, param, who, "a positive finite number", low=0.0)
    if out <= 0:
        raise param_error(param, who, "a positive finite number", value)
    return out


def _boolean(value: Any, param: str, who: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise param_error(param, who, "True or False", value, error=TypeError)


class AttributeAttack(BaseAttack):
    """Base of the attribute attacks; see the module for the contract.

    Subclasses set ``reads_model`` (False for the model-free guesses, which never see
    ``siblings``) and implement ``_calibrate`` and ``_scores``.
    """

    #: Whether the attack reads the model's answers (False: a model-free simulator).
    reads_model: ClassVar[bool] = True
    _tags = AttackTags()

    def check_params(self) -> None:
        """Refuse parameter values out of range (default: none to check)."""

    def unused_params(self, task: str) -> dict[str, str]:
        """Parameters set but never read on a target of ``task``, each with what it is."""
        return {}

    def _check_fitted(self, func: str) -> None:
        if not hasattr(self, "prior_"):
            raise NotFittedError(f"This {type(self).__name__} is not fitted: call fit("
                                 f"siblings, truth, known) on the attacker's records before "
                                 f"{func}.")

    def fit(self, siblings: SiblingOutputs | None, truth: Any,
            known: NDArray[np.float64] | None = None, *,
            n_candidates: int | None = None) -> AttributeAttack:
        """Calibrate on the attacker's records, whose candidate indices are ``truth``.

        Records whose value is no candidate (index -1) are left out. A model-free guess
        reads no siblings and is told ``n_candidates``.
        """
        truth = np.asarray(truth, dtype=np.int64)
        m = self._n_candidates(siblings, truth, n_candidates)
        keep = truth >= 0
        if not keep.any():
            raise param_error("truth", f"{type(self).__name__}.fit",
                              "at least one record with a candidate value", "<none>")
        self.n_candidates_ = m
        self.prior_ = candidate_prior(truth, m)
        self._calibrate(siblings, truth, known, keep)
        return self

    def _n_candidates(self, siblings: SiblingOutputs | None, truth: NDArray[np.int64],
                      n_candidates: int | None) -> int:
        if siblings is not None:
            if siblings.n_records != truth.shape[0]:
                raise param_error("truth", f"{type(self).__name__}.fit",
                                  f"one index per record ({siblings.n_records})",
                                  f"<length {truth.shape[0]}>")
            return siblings.n_candidates
        m = n_candidates
        if m is None:
            raise param_error("siblings", f"{type(self).__name__}.fit",
                              "the sibling outputs (or n_candidates for a model-free guess)",
                              None)
        return int(m)

    def _calibrate(self, siblings: SiblingOutputs | None, truth: NDArray[np.int64],
                   known: NDArray[np.float64] | None, keep: NDArray[np.bool_]) -> None:
        """Learn what the attack needs (default: the prior only)."""

    def _scores(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        raise NotImplementedError

    def score(self, siblings: SiblingOutputs | None,
              known: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """``(n_records, n_candidates)`` scores, higher = that value is more likely."""
        self._check_fitted(f"{type(self).__name__}.score")
        if self.reads_model and siblings is None:
            raise param_error("siblings", f"{type(self).__name__}.score",
                              "the model's answers on the siblings", None)
        return np.asarray(self._scores(siblings, known), dtype=np.float64)

    def predict(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None = None) -> NDArray[np.int64]:
        """Index of each record's guessed candidate (ties to the more common value)."""
        return self._guesses(self.score(siblings, known))

    def posteriors(self, siblings: SiblingOutputs | None,
                   known: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """A belief over the candidates per record (rows sum to 1)."""
        return self._beliefs(self.score(siblings, known))

    def guess(self, siblings: SiblingOutputs | None, known: NDArray[np.float64] | None = None
              ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """:meth:`predict` and :meth:`posteriors` from one scoring of the records."""
        scores = self.score(siblings, known)
        return self._guesses(scores), self._beliefs(scores)

    def _guesses(self, scores: NDArray[np.float64]) -> NDArray[np.int64]:
        return best_candidates(scores, self.prior_)

    def _beliefs(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        return softmax_rows(scores)


class ModelInversionAttack(AttributeAttack):
    """Yeom et al.'s Adversary 4 (Fredrikson et al.'s model inversion), any model.

    For each candidate ``t_j``: ``log P(t_j) + log f(error of the label under t_j)``, the
    prior times the likelihood of the model's error, and the most likely candidate wins.
    Regression: Gaussian errors, ``-(y - f(v, t_j))^2 / (2 sigma^2)``; classification with
    probabilities: ``log p(y | v, t_j)``; label-only: the probability of the observed
    agreement between label and prediction, from the attacker's own records (Fredrikson
    et al.'s confusion-based variant).

    Parameters
    ----------
    sigma : float, optional
        The error's standard deviation (regression). Default: estimated on the attacker's
        records (their root mean squared error: the non-member spread, all an attacker can
        measure).
    use_prior : bool, default=True
        Weigh by the candidates' frequencies (Adversary 4); False: likelihood only.

    References
    ----------
    .. [1] Yeom, S. et al. "Privacy Risk in Machine Learning: Analyzing the Connection to
       Overfitting." CSF 2018 (Adversary 4, Theorem 5).
    .. [2] Fredrikson, M., Lantz, E., Jha, S., et al. "Privacy in Pharmacogenetics: An
       End-to-End Case Study of Personalized Warfarin Dosing." USENIX Security 2014.
    """

    name = "model-inversion"

    def __init__(self, sigma: float | None = None, use_prior: bool = True) -> None:
        self.sigma = sigma
        self.use_prior = use_prior

    def check_params(self) -> None:
        """``sigma`` a positive finite number (or None), ``use_prior`` a bool."""
        if self.sigma is not None:
            _positive(self.sigma, "sigma", "ModelInversionAttack")
        _boolean(self.use_prior, "use_prior", "ModelInversionAttack")

    def unused_params(self, task: str) -> dict[str, str]:
        """``sigma`` is the spread of a regression's errors: unread on a classifier."""
        if self.sigma is None or task == "regression":
            return {}
        return {"sigma": "the spread of a regression's errors, read on regression "
                         "targets only"}

    def _calibrate(self, siblings: SiblingOutputs | None, truth: NDArray[np.int64],
                   known: NDArray[np.float64] | None, keep: NDArray[np.bool_]) -> None:
        self.check_params()
        own = siblings.losses[np.flatnonzero(keep), truth[keep]]  # type: ignore[union-attr]
        if siblings.loss_name == "squared_error":  # type: ignore[union-attr]
            sigma = self.sigma if self.sigma is not None else float(np.sqrt(own.mean()))
            if not np.isfinite(sigma) or sigma <= 0:
                raise param_error("sigma", "ModelInversionAttack", "a positive number "
                                  "(the attacker's records have no error to estimate it "
                                  "from: give sigma)", sigma)
            self.sigma_ = float(sigma)
        elif siblings.loss_name == "zero_one":  # type: ignore[union-attr]
            # Laplace-smoothed share of the attacker's records the model labels right.
            self.agreement_ = float((np.sum(own == 0) + 1) / (own.size + 2))

    def _scores(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        assert siblings is not None
        losses = siblings.losses
        if siblings.loss_name == "squared_error":
            log_likelihood = -losses / (2.0 * self.sigma_ ** 2)
        elif siblings.loss_name == "zero_one":
            log_likelihood = np.where(losses == 0, np.log(self.agreement_),
                                      np.log1p(-self.agreement_))
        else:  # cross-entropy: -log p(y | v, t_j)
            log_likelihood = -losses
        if not self.use_prior:
            return log_likelihood
        return log_likelihood + np.log(self.prior_)[None, :]


class ConfidenceAttributeAttack(AttributeAttack):
    """Zhao et al.'s Conf AI: the sibling the model is most confident about is the record.

    A confidence membership test over the siblings: ``-loss`` of the label (the
    probability of the true class, or minus the squared error), no prior.

    References
    ----------
    .. [1] Zhao, B. Z. H. et al. "On the (In)Feasibility of Attribute Inference Attacks
       on Machine Learning Models." EuroS&P 2021.
    """

    name = "confidence-ai"

    def _scores(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        assert siblings is not None
        return -siblings.losses


class LossTargetAttributeAttack(AttributeAttack):
    """Zhao et al.'s Loss AI: the sibling whose loss is closest to the training loss.

    An attacker who knows the model's average training loss (a model card, a paper)
    takes the sibling whose loss is nearest to it as the member: ``-|loss - L_train|``.

    Parameters
    ----------
    training_loss : float
        The average loss of the model on its training data (in the target's loss: cross
        entropy, squared error or 0-1).

    References
    ----------
    .. [1] Zhao, B. Z. H. et al. EuroS&P 2021 (Loss AI, after Yeom et al.'s loss
       threshold).
    """

    name = "loss-ai"

    def __init__(self, training_loss: float | None = None) -> None:
        self.training_loss = training_loss

    def check_params(self) -> None:
        """``training_loss`` a finite number >= 0 (None: the audit measures it)."""
        if self.training_loss is not None:
            _real(self.training_loss, "training_loss", "LossTargetAttributeAttack",
                  "the model's average training loss (a finite number >= 0)", low=0.0)

    def _calibrate(self, siblings: SiblingOutputs | None, truth: NDArray[np.int64],
                   known: NDArray[np.float64] | None, keep: NDArray[np.bool_]) -> None:
        self.check_params()
        if self.training_loss is None:
            raise param_error("training_loss", "LossTargetAttributeAttack",
                              "the model's average training loss (a number >= 0)", None)
        self.training_loss_ = float(self.training_loss)

    def _scores(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        assert siblings is not None
        return -np.abs(siblings.losses - self.training_loss_)


class MembershipAttributeAttack(AttributeAttack):
    """Attribute inference through a membership attack (Yeom's Adversaries 6 and 7, Zhao).

    Every sibling is scored by ``membership_attack`` (already fitted: a shadow-model
    attack makes Zhao et al.'s Shadow AI, a LiRA attack a LiRA AI). Three rules:

    - ``"most-member-like"``: the sibling with the highest membership score;
    - ``"adversary-7"`` (Yeom's multi-query reduction): the oracle calls a sibling a member
      when its score is ``>= threshold``; among those, the most common value; no guess
      (index -1, counted wrong) when it calls none a member;
    - ``"adversary-6"`` (Yeom's uniform reduction): one candidate drawn uniformly, kept
      when the oracle calls that sibling a member, no guess otherwise. Theorem 7: its
      attribute advantage is the oracle's membership advantage divided by ``m``.

    Parameters
    ----------
    membership_attack : MembershipAttack
        A fitted privaudit membership attack whose ``score(outputs=...)`` reads outputs.
    rule : {"most-member-like", "adversary-7", "adversary-6"}
    threshold : float, optional
        The oracle's decision threshold on the attack's score (the hard rules need it).
    random_state : int, optional
        Seeds Adversary 6's draws.

    References
    ----------
    .. [1] Yeom, S. et al. CSF 2018, Section 5 (Adversaries 6 and 7, Theorem 7).
    .. [2] Zhao, B. Z. H. et al. EuroS&P 2021.
    """

    name = "membership-ai"
    _RULES = ("most-member-like", "adversary-7", "adversary-6")

    def __init__(self, membership_attack: Any = None, rule: str = "most-member-like",
                 threshold: float | None = None, random_state: Any = None) -> None:
        self.membership_attack = membership_attack
        self.rule = rule
        self.threshold = threshold
        self.random_state = random_state

    def check_params(self) -> None:
        """A known ``rule``; ``threshold`` (a finite number) exactly with the hard rules.

        ``random_state`` is read by Adversary 6's draws only; the membership attack may
        come later (the audit fits Shadow AI's).
        """
        who = "MembershipAttributeAttack"
        if self.rule not in self._RULES:
            raise param_error("rule", who, f"one of {list(self._RULES)}", self.rule)
        if self.rule == "most-member-like":
            if self.threshold is not None:
                raise param_error("threshold", who, "left out with rule "
                                  "'most-member-like' (it ranks, no threshold)",
                                  self.threshold)
        elif self.threshold is None:
            raise param_error("threshold", who, f"the oracle's threshold with rule "
                              f"{self.rule!r}", None)
        else:
            _real(self.threshold, "threshold", who, "a finite number")
        if self.random_state is not None and self.rule != "adversary-6":
            raise param_error("random_state", who, "left out unless rule is 'adversary-6' "
                              "(the only rule that draws)", self.random_state)

    def _calibrate(self, siblings: SiblingOutputs | None, truth: NDArray[np.int64],
                   known: NDArray[np.float64] | None, keep: NDArray[np.bool_]) -> None:
        if not callable(getattr(self.membership_attack, "score", None)):
            raise param_error("membership_attack", "MembershipAttributeAttack",
                              "a fitted membership attack", self.membership_attack,
                              error=TypeError)
        self.check_params()

    def _scores(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        assert siblings is not None and siblings.outputs is not None
        flat = self.membership_attack.score(outputs=siblings.outputs)
        return np.asarray(flat, dtype=np.float64).reshape(siblings.n_records,
                                                          siblings.n_candidates)

    def _guesses(self, scores: NDArray[np.float64]) -> NDArray[np.int64]:
        """Each record's guess; -1 where a hard rule makes none."""
        if self.rule == "most-member-like":
            return best_candidates(scores, self.prior_)
        member = scores >= self.threshold
        if self.rule == "adversary-7":
            ranked = np.where(member, self.prior_[None, :], -np.inf)
            return np.where(member.any(1), ranked.argmax(1), -1).astype(np.int64)
        from sklearn.utils import check_random_state

        rng = check_random_state(self.random_state)
        drawn = rng.randint(0, scores.shape[1], size=scores.shape[0])
        chosen = member[np.arange(scores.shape[0]), drawn]
        return np.where(chosen, drawn, -1).astype(np.int64)


def _default_classifier(random_state: Any) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000,
                                                              random_state=random_state))


class _ClassifierGuess(AttributeAttack):
    """A classifier from features to the candidate index, trained on the attacker's data."""

    def __init__(self, estimator: Any = None, random_state: Any = None) -> None:
        self.estimator = estimator
        self.random_state = random_state

    def check_params(self) -> None:
        """``estimator`` a classifier with ``predict_proba``; ``random_state`` for the default."""
        who = type(self).__name__
        if self.estimator is not None:
            if not all(callable(getattr(self.estimator, m, None))
                       for m in ("fit", "predict_proba")):
                raise param_error("estimator", who, "a scikit-learn classifier with "
                                  "predict_proba", self.estimator, error=TypeError)
            if self.random_state is not None:
                raise param_error("random_state", who, "left out with an 'estimator' (it "
                                  "seeds the default classifier only; seed the estimator)",
                                  self.random_state)

    def _features(self, siblings: SiblingOutputs | None,
                  known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        raise NotImplementedError

    def _calibrate(self, siblings: SiblingOutputs | None, truth: NDArray[np.int64],
                   known: NDArray[np.float64] | None, keep: NDArray[np.bool_]) -> None:
        from sklearn.base import clone

        self.check_params()
        model = (_default_classifier(self.random_state) if self.estimator is None
                 else clone(self.estimator))
        features = self._features(siblings, known)
        if len(np.unique(truth[keep])) < 2:
            self.model_ = None  # one value only: the prior is all there is to learn
            return
        self.model_ = model.fit(features[keep], truth[keep])

    def _scores(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        features = self._features(siblings, known)
        proba = np.tile(self.prior_, (features.shape[0], 1))
        if self.model_ is not None:
            proba = np.zeros_like(proba)
            proba[:, np.asarray(self.model_.classes_, dtype=np.int64)] = \
                self.model_.predict_proba(features)
        return np.log(np.clip(proba, 1e-300, None))

    def _beliefs(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.exp(scores)  # the scores are the classifier's log-probabilities


def _need_known(known: NDArray[np.float64] | None, who: str) -> NDArray[np.float64]:
    if known is None:
        raise param_error("known", who, "the attacker's known features of each record",
                          None)
    return np.asarray(known, dtype=np.float64)


class DirectAttributeAttack(_ClassifierGuess):
    """A classifier on what the attacker knows plus the model's answers on the siblings.

    Features: the known features (the record without its attribute, and its label) and
    the loss of the label under each candidate value; the classifier (default: a scaled
    logistic regression) is trained on the attacker's records, never on the audited ones.

    Parameters
    ----------
    estimator : scikit-learn classifier, optional
        Cloned before fitting.
    random_state : int, optional
        Seed of the default classifier.

    References
    ----------
    .. [1] Fredrikson, M. et al. USENIX Security 2014; Mehnaz, S. et al. "Are Your
       Sensitive Attributes Private? Novel Model Inversion Attribute Inference Attacks on
       Classification Models." USENIX Security 2022 (attacks on the model's outputs).
    """

    name = "direct"

    def _features(self, siblings: SiblingOutputs | None,
                  known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        assert siblings is not None
        losses = np.clip(siblings.losses, 0.0, 1e6)
        return np.hstack([_need_known(known, "DirectAttributeAttack"), losses])


class KnownFeaturesGuess(_ClassifierGuess):
    """Model-free: a classifier from the known features alone (the Bayes simulator).

    Yeom et al.'s Definition 6 compares an attack with the best guess anyone could make
    from ``phi(z)`` without the model; this is that guess, learned from the attacker's
    records.
    """

    name = "known-features"
    reads_model = False

    def _features(self, siblings: SiblingOutputs | None,
                  known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        return _need_known(known, "KnownFeaturesGuess")


class PriorGuess(AttributeAttack):
    """Model-free: always the most common candidate among the attacker's records."""

    name = "prior"
    reads_model = False

    def _scores(self, siblings: SiblingOutputs | None,
                known: NDArray[np.float64] | None) -> NDArray[np.float64]:
        n = siblings.n_records if siblings is not None else _need_known(
            known, "PriorGuess").shape[0]
        return np.tile(np.log(self.prior_), (n, 1))


#: Attribute attacks by registry name (model-free guesses included).
ATTRIBUTE_ATTACKS: dict[str, type[AttributeAttack]] = {
    cls.name: cls for cls in (ModelInversionAttack, ConfidenceAttributeAttack,
                              LossTargetAttributeAttack, MembershipAttributeAttack,
                              DirectAttributeAttack, KnownFeaturesGuess, PriorGuess)}


def get_attribute_attack(name: str, **params: Any) -> AttributeAttack:
    """The attribute attack registered as ``name``, built with ``params``."""
    if name not in ATTRIBUTE_ATTACKS:
        raise param_error("attack", "get_attribute_attack",
                          f"one of {sorted(ATTRIBUTE_ATTACKS)}", name)
    return ATTRIBUTE_ATTACKS[name](**params)
