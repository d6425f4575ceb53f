"""The blind baseline: telling members from non-members without looking at the model.

Das, Zhang and Tramèr (2024) showed that many membership-inference benchmarks for
foundation models are broken: their members and non-members come from different
distributions (collected before and after a date, say), and a classifier reading the texts
alone beats every attack. An LLM audit is meaningful only where this baseline is near 0.5.

:class:`BlindBaseline` is that classifier, cross-fitted so that every text is scored by a
classifier that never saw its label. It reads the three signals of the paper's blind
attacks in one model: TF-IDF word and character n-grams (their ``bag_of_words`` and
``greedy_selection`` n-gram rules), text length, and the dates a text mentions (their
``date_detection``: years 1900-2099, month names, ISO dates).

Design choices, against the paper's code (``ethz-spylab/Blind-MIA``):

- The paper tunes, per benchmark, a dense bag of the 10 to 62 most frequent words and one of
  Gaussian / multinomial naive Bayes, a random forest, gradient boosting or their stack,
  scored on one random 80/20 split. Here one L2 logistic regression on sparse features
  serves every corpus without tuning: convex and deterministic, linear in the number of
  texts, and sparse end to end (50 to 100,000 texts; no dense text x feature or text x
  text matrix).
- Every text is scored out of fold (stratified K folds), so each text gets a score and the
  AUC carries an interval. The vectorisers and scalers never read a label: they are
  fitted once on all the texts (transductively) and only the classifier is cross-fitted,
  which keeps the labels of a text out of its own score at a fifth of the cost.

References
----------
.. [1] Das, D., Zhang, J. and Tramèr, F. "Blind Baselines Beat Membership Inference Attacks
   for Foundation Models." IEEE SaTML 2025 (arXiv:2406.16201).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from privaudit._validation import check_binary_labels, check_random_state, param_error
from privaudit.exceptions import DegenerateInputWarning
from privaudit.results import AttackResult

__all__ = ["BlindBaseline", "date_features"]

_FUNC = "BlindBaseline"
_FEATURES = ("ngrams", "length", "dates")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_ISO_DATE = re.compile(r"\b(?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b")
# Month names and their usual abbreviations, any case; "May" only capitalised (the
# modal verb "may" is no date).
_MONTH = re.compile(r"\b(?:(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|"
                    r"july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|"
                    r"dec(?:ember)?)\.?|May|MAY)(?=\W|$)")


def date_features(texts: Sequence[str]) -> np.ndarray:
    """Dates mentioned by each text: ``(n, 5)`` float array.

    Columns: number of years (1900-2099, as a whole 4-digit number) mentioned, the largest
    and smallest such year scaled to ``(year - 1900) / 200`` (0 when none), number of month
    names (``"May"`` only capitalised), number of ISO dates (``yyyy-mm-dd``).
    Das et al. [1]_ found that the years a text mentions give away a split by date.

    References
    ----------
    .. [1] Das, D., Zhang, J. and Tramèr, F. "Blind Baselines Beat Membership Inference
       Attacks for Foundation Models." IEEE SaTML 2025 (arXiv:2406.16201).
    """
    out = np.zeros((len(texts), 5))
    for i, text in enumerate(texts):
        years = [int(y) for y in _YEAR.findall(text)]
        if years:
            out[i, :3] = len(years), (max(years) - 1900) / 200, (min(years) - 1900) / 200
        out[i, 3] = len(_MONTH.findall(text))
        out[i, 4] = len(_ISO_DATE.findall(text))
    return out


def _length_features(texts: Sequence[str]) -> np.ndarray:
    """log(1 + x) of the characters, words and digits of each text: ``(n, 3)``."""
    counts = np.array([(len(t), len(t.split()), sum(map(str.isdigit, t))) for t in texts],
                      dtype=np.float64).reshape(len(texts), 3)
    return np.log1p(counts)


def _ngram_blocks(texts: Sequence[str], max_features: int | None) -> list[Any]:
    """Sparse TF-IDF of word 1-2-grams and character 3-5-grams.

    A block without any n-gram shared by two texts is left out.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    settings = ({"ngram_range": (1, 2)}, {"analyzer": "char_wb", "ngram_range": (3, 5)})
    blocks = []
    for kwargs in settings:
        vectoriser = TfidfVectorizer(min_df=2, sublinear_tf=True, max_features=max_features,
                                     dtype=np.float64, **kwargs)
        try:
            blocks.append(vectoriser.fit_transform(texts))
        except ValueError:  # no n-gram in two texts (tiny or all-distinct corpora)
            continue
    return blocks


class BlindBaseline(BaseEstimator):
    """A model-free membership classifier on the texts alone, cross-fitted.

    Parameters
    ----------
    features : tuple of {"ngrams", "length", "dates"}
        Which features to read (all by default): TF-IDF word 1-2-grams and character
        3-5-grams; log character, word and digit counts; :func:`date_features`.
    n_splits : int, default=5
        Stratified folds of the cross-fitting: each text is scored by a classifier trained
        on the other folds.
    C : float, default=1.0
        Inverse L2 regularisation of the logistic regression.
    max_features : int or None, default=50000
        Vocabulary kept by each n-gram vectoriser (most frequent first; None keeps all).
    random_state : None, int or numpy Generator
        Seeds the folds (the classifier itself is deterministic).

    Notes
    -----
    The vectorisers and the scaling of the dense features read no label and are fitted
    once on all the texts; only the logistic regression is cross-fitted. The paper's own
    classifiers (naive Bayes, random forest, boosting, tuned per benchmark) are replaced by
    one sparse logistic regression: see the module's notes. Fits run with one BLAS/OpenMP
    thread (many small solves: threads only contend).

    References
    ----------
    .. [1] Das, D., Zhang, J. and Tramèr, F. "Blind Baselines Beat Membership Inference
       Attacks for Foundation Models." IEEE SaTML 2025 (arXiv:2406.16201).

    Examples
    --------
    >>> texts = [f"Posted in {y}. Great day." for y in [2012] * 20 + [2019] * 20]
    >>> labels = [0] * 20 + [1] * 20
    >>> result = BlindBaseline(features=("dates",), random_state=0).fit_score(texts, labels)
    >>> float(result.metrics(n_bootstrap=0)["auc"]["value"])
    1.0
    """

    def __init__(self, features: tuple[str, ...] = _FEATURES, n_splits: int = 5,
                 C: float = 1.0, max_features: int | None = 50000,
                 random_state: Any = None) -> None:
        self.features = features
        self.n_splits = n_splits
        self.C = C
        self.max_features = max_features
        self.random_state = random_state

    def design_matrix(self, texts: Sequence[str]) -> Any:
        """The sparse ``(n_texts, n_features)`` CSR matrix the classifier reads."""
        import scipy.sparse as sp
        from sklearn.preprocessing import StandardScaler

        texts = list(texts)
        blocks = _ngram_blocks(texts, self.max_features) if "ngrams" in self.features else []
        dense = [fn(texts) for name, fn in (("length", _length_features),
                                            ("dates", date_features)) if name in self.features]
        if dense:
            blocks.append(sp.csr_matrix(StandardScaler().fit_transform(np.hstack(dense))))
        if not blocks:
            return sp.csr_matrix((len(texts), 0))
        return sp.hstack(blocks, format="csr")

    def fit_score(self, texts: Sequence[str], labels: Any) -> AttackResult:
        """Out-of-fold member probability of every text, as a membership result.

        Parameters
        ----------
        texts : sequence of str
            The audited texts.
        labels : array-like of 0/1
            1 for a member (or forget-set) text, 0 for a non-member (holdout) text.

        Returns
        -------
        AttackResult
            ``attack="blind-baseline"``, ``target="texts-only"``, ``scores`` and
            ``raw_statistic`` the out-of-fold probability of being a member,
            ``out_of_fold=True``; ``extra`` holds the folds (``n_splits``, ``fold_seed``),
            the classifier and the number of features.

        Warns
        -----
        DegenerateInputWarning
            When no feature varies across the texts (every score is then the members'
            share: a blind AUC of 0.5).
        """
        x, y = self._check(texts, labels)
        design = self.design_matrix(x)
        seed = int(check_random_state(self.random_state, func=_FUNC).integers(2**31 - 1))
        scores = self._cross_fit(design, y, seed)
        params = {**self.get_params(), "features": list(self.features),
                  "random_state": self.random_state
                  if self.random_state is None or isinstance(self.random_state, int)
                  else type(self.random_state).__name__}
        return AttackResult(
            labels=y, scores=scores, attack="blind-baseline", target="texts-only",
            raw_statistic=scores.copy(), raw_statistic_name="member_probability",
            parameters=params, out_of_fold=True,
            extra={"n_splits": self.n_splits, "fold_seed": seed,
                   "classifier": "logistic-regression", "n_features": int(design.shape[1])})

    def _cross_fit(self, design: Any, y: np.ndarray, seed: int) -> np.ndarray:
        """Out-of-fold probabilities of class 1 from stratified folds."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold
        from threadpoolctl import threadpool_limits

        if design.shape[1] == 0 or design.nnz == 0:
            warnings.warn(f"{_FUNC}: no feature varies across these texts; every text gets "
                          "the members' share as its score (blind AUC 0.5).",
                          DegenerateInputWarning, stacklevel=3)
            return np.full(len(y), float(y.mean()))
        scores = np.empty(len(y))
        folds = StratifiedKFold(self.n_splits, shuffle=True, random_state=seed)
        with threadpool_limits(1):
            for train, test in folds.split(np.zeros(len(y)), y):
                model = LogisticRegression(C=self.C, max_iter=2000)
                model.fit(design[train], y[train])
                scores[test] = model.predict_proba(design[test])[:, 1]
        return scores

    def _check(self, texts: Any, labels: Any) -> tuple[list[str], np.ndarray]:
        func = f"{_FUNC}.fit_score"
        features = self.features
        unknown = [f for f in features if f not in _FEATURES] if not isinstance(
            features, str) else [features]
        if unknown or not features:
            raise param_error("features", _FUNC, f"a non-empty tuple drawn from "
                              f"{list(_FEATURES)}", unknown or features)
        if isinstance(self.C, bool) or not isinstance(self.C, (int, float)) or not (
                np.isfinite(self.C) and self.C > 0):
            raise param_error("C", _FUNC, "a positive finite number", self.C)
        mf = self.max_features
        if mf is not None and (isinstance(mf, bool) or not isinstance(mf, int) or mf < 1):
            raise param_error("max_features", _FUNC, "a positive integer or None", mf)
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise param_error("texts", func, "a sequence of strings", texts, error=TypeError)
        y = check_binary_labels(labels, func=func, param="labels")
        if len(y) != len(texts):
            raise param_error("labels", func, f"one label per text ({len(texts)} texts)",
                              f"<{len(y)} labels>")
        fewest = int(min(y.sum(), len(y) - y.sum()))
        if fewest == 0:
            raise param_error("labels", func, "both members (1) and non-members (0)",
                              f"<{len(y)} labels, all {int(y[0])}>")
        n = self.n_splits
        if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= fewest:
            raise param_error("n_splits", _FUNC, f"an integer in [2, {fewest}] (at most the "
                              "smaller class's size)", n)
        return list(texts), y
