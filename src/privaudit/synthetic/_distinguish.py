"""Distinguishability: how well a classifier tells synthetic rows from original rows.

The source's ``membership_inference`` metric. A classifier is trained to separate the
synthetic rows (label 1) from the original rows (label 0) on features built from the
table: TF-IDF of text columns (1,000 terms each, as the source), one-hot categories, numbers
as they are (missing ones as the median, with a missing flag). Unlike the source,
which scores one random split, every row is scored out of fold (stratified K folds), so the
AUC uses all the rows and carries an interval; the vectorisers read no label and are fit
on all rows once (transductively), only the forest is cross-fitted.

An AUC near 0.5 means the synthetic rows look like the original ones (high fidelity); near
1, they are easy to tell apart. This measures fidelity more than privacy (a perfect copy
scores 0.5): it is read beside the closeness checks, which catch copies. An AUC clearly
below 0.5 (its interval under 0.5) is no fidelity at all: a cross-fitted classifier
systematically wrong, which usually means the synthetic rows copy original ones.

References
----------
.. [1] Breiman, L. "Random Forests." Machine Learning 45, 2001.
.. [2] Lopez-Paz, D. and Oquab, M. "Revisiting Classifier Two-Sample Tests." ICLR 2017.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from privaudit._validation import check_random_state, param_error
from privaudit.results import AttackResult
from privaudit.synthetic._metadata import TableMetadata

__all__ = ["Distinguisher"]

_FUNC = "Distinguisher"


def _imputed(values: np.ndarray) -> np.ndarray:
    """Missing numbers as the column's median, plus a missing flag per gappy column.

    The forest reads sparse input, where scikit-learn accepts no NaN; the flag keeps
    "missing" itself as a signal (a generator that never leaves a gap is told apart).
    """
    missing = np.isnan(values)
    gappy = missing.any(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: 0
        medians = np.nan_to_num(np.nanmedian(values, axis=0)) if len(values) else np.zeros(
            values.shape[1])
    filled = np.where(missing, medians[None, :], values)
    return np.hstack([filled, missing[:, gappy].astype(np.float64)])


class Distinguisher(BaseEstimator):
    """A cross-fitted classifier separating synthetic rows from original rows.

    Parameters
    ----------
    n_estimators : int, default=100
        Trees of the random forest (the source's classifier).
    n_splits : int, default=5
        Stratified folds: each row is scored by a forest that never saw it.
    max_text_features : int, default=1000
        TF-IDF terms kept per text column.
    n_jobs : int, optional
        Threads of the forest.
    random_state : None, int or numpy Generator
        Seeds the folds and the forest.
    """

    def __init__(self, n_estimators: int = 100, n_splits: int = 5,
                 max_text_features: int = 1000, n_jobs: int | None = None,
                 random_state: Any = None) -> None:
        self.n_estimators = n_estimators
        self.n_splits = n_splits
        self.max_text_features = max_text_features
        self.n_jobs = n_jobs
        self.random_state = random_state

    def design_matrix(self, table: pd.DataFrame, metadata: TableMetadata) -> Any:
        """Sparse features of ``table``'s rows (see the module)."""
        import scipy.sparse as sp
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.preprocessing import OneHotEncoder

        numbers = metadata.numeric_frame(table)[metadata.columns("numerical", "datetime")]
        blocks = [sp.csr_matrix(_imputed(numbers.to_numpy(dtype=np.float64)))]
        if metadata.categorical:
            cats = table[metadata.categorical].astype(str).where(
                table[metadata.categorical].notna(), "\x00missing")
            blocks.append(OneHotEncoder(handle_unknown="ignore").fit_transform(cats))
        for column in metadata.text:
            texts = table[column].fillna("").astype(str)
            try:
                blocks.append(TfidfVectorizer(max_features=self.max_text_features)
                              .fit_transform(texts))
            except ValueError:  # no term at all (empty texts)
                continue
        return sp.hstack(blocks, format="csr")

    def fit_score(self, synthetic: pd.DataFrame, original: pd.DataFrame, *,
                  metadata: TableMetadata | None = None) -> AttackResult:
        """Out-of-fold probability that each row is synthetic.

        Returns
        -------
        AttackResult
            ``attack="distinguishability"``, label 1 for synthetic rows and 0 for original
            ones, ``scores`` the out-of-fold probability of being synthetic,
            ``out_of_fold=True``; ``synthetic_confidence`` and ``original_confidence``
            are the source's mean probability of each group, and ``extra`` holds
            ``fidelity_score`` (``1 - AUC``, as the source's example). ``audit.role`` is
            ``"fidelity"``: reports show it apart from the leakage verdicts.
        """
        from privaudit.metrics import roc_auc

        meta = metadata or TableMetadata.infer(original)
        labels = np.r_[np.ones(len(synthetic), dtype=int), np.zeros(len(original), dtype=int)]
        self._check(labels)
        table = pd.concat([synthetic[list(meta.sdtypes)], original[list(meta.sdtypes)]],
                          ignore_index=True)
        seed = int(check_random_state(self.random_state, func=_FUNC).integers(2**31 - 1))
        scores = self._cross_fit(self.design_matrix(table, meta), labels, seed)
        auc = float(roc_auc(labels, scores))
        result = AttackResult(
            labels=labels, scores=scores, attack="distinguishability",
            raw_statistic=scores.copy(), raw_statistic_name="synthetic_probability",
            parameters={**self.get_params(), "random_state": seed}, out_of_fold=True,
            extra={"positive_class": "synthetic", "fidelity_score": 1.0 - auc},
            synthetic_confidence=float(scores[labels == 1].mean()),
            original_confidence=float(scores[labels == 0].mean()))
        result.audit.role = "fidelity"  # reported as fidelity, never as a leak
        return result

    def _cross_fit(self, design: Any, labels: np.ndarray, seed: int) -> np.ndarray:
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.model_selection import StratifiedKFold

        scores = np.empty(len(labels))
        folds = StratifiedKFold(self.n_splits, shuffle=True, random_state=seed)
        for i, (train, test) in enumerate(folds.split(np.zeros(len(labels)), labels)):
            forest = RandomForestClassifier(n_estimators=self.n_estimators, n_jobs=self.n_jobs,
                                            random_state=seed + i)
            forest.fit(design[train], labels[train])
            scores[test] = forest.predict_proba(design[test])[:, 1]
        return scores

    def _check(self, labels: np.ndarray) -> None:
        fewest = int(min(labels.sum(), len(labels) - labels.sum()))
        n = self.n_splits
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise param_error("n_splits", _FUNC, "an integer of at least 2", n)
        if fewest < n:
            raise param_error("synthetic_data" if labels.sum() < n else "original_data",
                              _FUNC, f"at least {n} rows (one per fold)",
                              f"<{fewest} rows>")
        for name in ("n_estimators", "max_text_features"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise param_error(name, _FUNC, "a positive integer", value)
