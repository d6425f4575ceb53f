"""Groundhog: a classifier reading summary statistics of a whole synthetic table."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error
from privaudit.attacks.generator._base import GeneratorAttack

__all__ = ["FEATURE_SETS", "GroundhogAttack", "table_features", "tables_features"]

#: Stadler et al.'s feature sets.
FEATURE_SETS = ("naive", "histogram", "correlation")


def table_features(table: Any, domain: Any, feature_sets: Sequence[str] = FEATURE_SETS,
                   ) -> NDArray[np.float64]:
    """One vector summarising ``table`` (Stadler et al.'s features).

    - ``naive``: each numeric column's mean, standard deviation, median, minimum and
      maximum, and its share of missing values;
    - ``histogram``: each column's distribution over the public domain's cells (numeric
      bins, categories), plus a cell for values outside the domain;
    - ``correlation``: the Pearson correlations of every pair of columns, read as their
      cell indices (numeric bins in order, categories in the domain's order).

    Parameters
    ----------
    table : pandas.DataFrame
        The synthetic table.
    domain : TableDomain
        The public domain (from the auxiliary data), the same for every table.
    feature_sets : sequence of str
        Among :data:`FEATURE_SETS`.
    """
    return tables_features([table], domain, feature_sets)[0]


def tables_features(tables: Sequence[Any], domain: Any,
                    feature_sets: Sequence[str] = FEATURE_SETS) -> NDArray[np.float64]:
    """:func:`table_features` of many tables, encoded together: ``(n_tables, n_features)``."""
    import pandas as pd

    joined = pd.concat([t[list(domain.columns)] for t in tables], ignore_index=True)
    codes = domain.encode(joined, unknown="extra")
    numeric = np.column_stack([pd.to_numeric(joined[c], errors="coerce").to_numpy(
        dtype=np.float64) for c in domain.edges]) if domain.edges else np.empty((len(joined), 0))
    bounds = np.concatenate([[0], np.cumsum([len(t) for t in tables])])
    return np.stack([_features(codes[a:b], numeric[a:b], domain.sizes, feature_sets)
                     for a, b in itertools.pairwise(bounds)])


def _features(codes: NDArray[np.int64], numeric: NDArray[np.float64], sizes: list[int],
              feature_sets: Sequence[str]) -> NDArray[np.float64]:
    parts = []
    if "naive" in feature_sets and numeric.shape[1]:
        missing = np.isnan(numeric)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-missing columns: NaN -> 0
            stats = [np.nanmean(numeric, 0), np.nanstd(numeric, 0), np.nanmedian(numeric, 0),
                     np.nanmin(numeric, 0), np.nanmax(numeric, 0)]
        parts.append(np.nan_to_num(np.concatenate([*stats, missing.mean(axis=0)])))
    if "histogram" in feature_sets:
        n = max(len(codes), 1)
        parts += [np.bincount(codes[:, j], minlength=size + 1) / n
                  for j, size in enumerate(sizes)]
    if "correlation" in feature_sets and codes.shape[1] > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            correlation = np.corrcoef(codes, rowvar=False)
        parts.append(np.nan_to_num(correlation[np.triu_indices(codes.shape[1], 1)]))
    return np.concatenate(parts) if parts else np.zeros(0)


class GroundhogAttack(GeneratorAttack):
    """A classifier per target telling tables trained with it from tables without.

    Each synthetic table is summarised by :func:`table_features` over the public domain of
    the auxiliary data; one classifier per target learns from the shadow tables; its
    probability of "member" is the score. The features do not depend on the target, so
    they are computed once per table for every target.

    Parameters
    ----------
    feature_sets : sequence of str, default=("naive", "histogram", "correlation")
        Which of :data:`FEATURE_SETS` to use.
    classifier : scikit-learn classifier, optional
        Cloned per target (default: a random forest of 200 trees, as Stadler et al.).
    bins : int, default=10
        Bins of numeric columns in the domain.
    random_state : int, optional
        Seeds the classifiers.

    References
    ----------
    .. [1] Stadler, T., Oprisanu, B. and Troncoso, C. "Synthetic Data -- Anonymisation
       Groundhog Day." USENIX Security 2022.
    """

    name = "groundhog"
    #: The classifier reads the table alone: in attribute inference it learns which of
    #: the two values trained it (Stadler et al.'s shadow-modelling attack).
    contrasts_records = False

    def __init__(self, feature_sets: Sequence[str] = FEATURE_SETS, classifier: Any = None,
                 bins: int = 10, random_state: int | None = None) -> None:
        self.feature_sets = feature_sets
        self.classifier = classifier
        self.bins = bins
        self.random_state = random_state

    def _features(self, tables: Sequence[Any]) -> NDArray[np.float64]:
        return tables_features(tables, self.domain_, self.feature_sets_)

    def _prepare(self, tables: Sequence[Any], labels: NDArray[np.bool_]) -> None:
        import pandas as pd
        from sklearn.base import clone
        from sklearn.ensemble import RandomForestClassifier

        from privaudit.synthetic import TableDomain

        func = type(self).__name__
        sets = [self.feature_sets] if isinstance(self.feature_sets, str) else list(
            self.feature_sets)
        if not sets or any(s not in FEATURE_SETS for s in sets):
            raise param_error("feature_sets", func, f"names among {list(FEATURE_SETS)}",
                              self.feature_sets)
        self.feature_sets_ = sets
        public = pd.concat([self.auxiliary_data_, self.targets_,
                            *([] if self.alternatives_ is None else [self.alternatives_])],
                           ignore_index=True)
        self.domain_ = TableDomain.from_frame(public, bins=self.bins)
        features = self._features(tables)
        base = self.classifier if self.classifier is not None else RandomForestClassifier(
            n_estimators=200, min_samples_leaf=2, n_jobs=1)
        seeds = np.random.SeedSequence(self.random_state).generate_state(labels.shape[1])
        self.classifiers_ = []
        for t in range(labels.shape[1]):
            model = clone(base)
            if "random_state" in model.get_params():
                model.set_params(random_state=int(seeds[t]))
            self.classifiers_.append(model.fit(features, labels[:, t]))

    def _signals(self, tables: Sequence[Any]) -> NDArray[np.float64]:
        features = self._features(tables)
        return np.column_stack([_member_probability(model, features)
                                for model in self.classifiers_])


def _member_probability(model: Any, features: NDArray[np.float64]) -> NDArray[np.float64]:
    classes = list(model.classes_)
    if True not in classes:  # only non-member tables in training: nothing learned
        return np.zeros(len(features))
    return model.predict_proba(features)[:, classes.index(True)]
