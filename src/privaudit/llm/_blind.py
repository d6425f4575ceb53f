"""The blind baseline: telling members from non-members without looking at the model.

Das, Zhang and Tramèr (2024) showed that many membership-inference benchmarks for
foundation models are broken: their members and non-members come from different
distributions (collected before and after a date, say), and a classifier reading the texts
alone beats every attack. An LLM audit is meaningful only where this baseline is near 0.5.

:class:`BlindBaseline` is that classifier, cross-fitted so that every text is scored by a
model that never saw its label: a logistic regression on TF-IDF word and character
n-grams, text length, and the dates a text mentions (years 1900-2099, month names, ISO
dates), the features Das et al. found sufficient. Sparse throughout (scikit-learn's
vectorisers), seeded, linear in the number of texts.

References
----------
.. [1] Das, D., Zhang, J. and Tramèr, F. "Blind Baselines Beat Membership Inference Attacks
   for Foundation Models." IEEE SaTML 2025 (arXiv:2406.16201).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from privaudit._validation import check_binary_labels, param_error
from privaudit.results import AttackResult

__all__ = ["BlindBaseline", "date_features"]

_FUNC = "BlindBaseline"
_FEATURES = ("ngrams", "length", "dates")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_ISO_DATE = re.compile(r"\b(?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b")
_MONTH = re.compile(r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|"
                    r"july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|"
                    r"dec(?:ember)?)\b", re.IGNORECASE)


def date_features(texts: Sequence[str]) -> np.ndarray:
    """Dates mentioned by each text: ``(n, 5)`` float array.

    Columns: number of years (1900-2099) mentioned, the largest and smallest year (0 when
    none, scaled to ``(year - 1900) / 200``), number of month names, number of ISO dates.
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
    chars = np.array([len(t) for t in texts], dtype=np.float64)
    words = np.array([len(t.split()) for t in texts], dtype=np.float64)
    digits = np.array([sum(c.isdigit() for c in t) for t in texts], dtype=np.float64)
    return np.column_stack([np.log1p(chars), np.log1p(words), np.log1p(digits)])


class BlindBaseline(BaseEstimator):
    """A model-free membership classifier on the texts alone, cross-fitted.

    Parameters
    ----------
    features : tuple of {"ngrams", "length", "dates"}
        Which features to read (all by default).
    n_splits : int, default=5
        Folds of the cross-fitting: each text is scored by a classifier trained on the
        other folds.
    C : float, default=1.0
        Inverse regularisation of the logistic regression.
    max_features : int, default=50000
        Vocabulary kept by each n-gram vectoriser (most frequent first).
    random_state : int or None
        Seeds the folds.
    """

    def __init__(self, features: tuple[str, ...] = _FEATURES, n_splits: int = 5,
                 C: float = 1.0, max_features: int = 50000,
                 random_state: int | None = None) -> None:
        self.features = features
        self.n_splits = n_splits
        self.C = C
        self.max_features = max_features
        self.random_state = random_state

    def _pipeline(self) -> Any:
        from sklearn.compose import ColumnTransformer
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import FunctionTransformer, StandardScaler

        parts = []
        if "ngrams" in self.features:
            parts += [("words", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True,
                                                max_features=self.max_features), 0),
                      ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5),
                                                min_df=2, sublinear_tf=True,
                                                max_features=self.max_features), 0)]
        dense = [f for f in (("length", _length_features), ("dates", date_features))
                 if f[0] in self.features]
        for name, fn in dense:
            parts.append((name, Pipeline([("f", FunctionTransformer(_on_column(fn))),
                                          ("s", StandardScaler())]), [0]))
        columns = ColumnTransformer(parts, sparse_threshold=1.0)
        return Pipeline([("features", columns),
                         ("classifier", LogisticRegression(C=self.C, max_iter=2000))])

    def _check(self, texts: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        unknown = [f for f in self.features if f not in _FEATURES]
        if unknown or not self.features:
            raise param_error("features", _FUNC, f"a non-empty subset of {list(_FEATURES)}",
                              unknown or self.features)
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise param_error("texts", _FUNC, "a sequence of strings", texts, error=TypeError)
        y = check_binary_labels(labels, func=f"{_FUNC}.fit_score", param="labels")
        if len(y) != len(texts):
            raise param_error("labels", f"{_FUNC}.fit_score",
                              f"one label per text ({len(texts)})", f"<{len(y)} labels>")
        fewest = int(min(y.sum(), len(y) - y.sum()))
        if isinstance(self.n_splits, bool) or not isinstance(self.n_splits, int) or (
                self.n_splits < 2 or fewest < self.n_splits):
            raise param_error("n_splits", _FUNC, f"an integer in [2, {fewest}] (the "
                              "smaller class's size)", self.n_splits)
        return np.asarray(list(texts), dtype=object), y

    def fit_score(self, texts: Sequence[str], labels: Any) -> AttackResult:
        """Out-of-fold member probability of every text, as a membership result.

        Returns
        -------
        AttackResult
            ``attack="blind-baseline"``, ``target="texts-only"``, ``scores`` and
            ``raw_statistic`` the out-of-fold probability of being a member,
            ``out_of_fold=True``.
        """
        from sklearn.model_selection import StratifiedKFold

        x, y = self._check(texts, labels)
        folds = StratifiedKFold(self.n_splits, shuffle=True, random_state=self.random_state)
        scores = np.empty(len(y))
        table = x[:, None]
        for train, test in folds.split(table, y):
            model = self._pipeline().fit(table[train], y[train])
            scores[test] = model.predict_proba(table[test])[:, 1]
        return AttackResult(
            labels=y, scores=scores, attack="blind-baseline", target="texts-only",
            raw_statistic=scores, raw_statistic_name="member_probability",
            parameters={**self.get_params(), "features": list(self.features)},
            out_of_fold=True, extra={"n_splits": self.n_splits})


def _on_column(fn: Any) -> Any:
    """``fn`` applied to the first column of a 2-D object array of texts."""

    def apply(table: np.ndarray) -> np.ndarray:
        return fn([str(t) for t in np.asarray(table)[:, 0]])

    return apply
