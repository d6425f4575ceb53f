"""Small synthetic-data generators with known privacy, for the demo and the tests.

- :func:`copying_generator`: a leaky generator. A share of its rows are training rows
  copied as they are (or with one cell re-drawn), the rest drawn from independent
  marginals: what a badly overfitted generator emits.
- :func:`independent_marginals`: every column drawn on its own from the training data's
  empirical distribution. It keeps no joint structure, so it can reveal a record only
  by chance: the safe end of the scale.
- :func:`gaussian_copula`: the joint structure of the columns through a Gaussian copula
  of their ranks (numeric and categorical columns alike, ranks by frequency), each column
  mapped back through its empirical quantiles (interpolated for continuous columns, so
  no training value is handed back as such): useful and still not copying.

Every draw goes through ``random_state``.

References
----------
.. [1] Patki, N., Wedge, R. and Veeramachaneni, K. "The Synthetic Data Vault." IEEE DSAA
   2016 (the Gaussian copula model).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from privaudit._validation import check_fraction, check_random_state

__all__ = ["copying_generator", "gaussian_copula", "independent_marginals"]

#: Distinct values above which the copula treats a numeric column as continuous.
_LEVELS = 20


def independent_marginals(frame: pd.DataFrame, n_rows: int, *,
                          random_state: Any = None) -> pd.DataFrame:
    """``n_rows`` rows, each column drawn with replacement from its own column."""
    rng = check_random_state(random_state, func="independent_marginals")
    return pd.DataFrame({c: frame[c].to_numpy()[rng.integers(0, len(frame), n_rows)]
                         for c in frame.columns})


def copying_generator(frame: pd.DataFrame, n_rows: int, *, copy_fraction: float = 0.3,
                      random_state: Any = None) -> pd.DataFrame:
    """``n_rows`` rows of which ``copy_fraction`` are copies of training rows.

    Half the copies are exact, half have one cell re-drawn from its column; the other
    rows are independent marginals.
    """
    rng = check_random_state(random_state, func="copying_generator")
    copy_fraction = check_fraction(copy_fraction, param="copy_fraction",
                                   func="copying_generator", low_inclusive=True,
                                   high_inclusive=True)
    n_copies = round(copy_fraction * n_rows)
    copies = frame.iloc[rng.choice(len(frame), n_copies, replace=n_copies > len(frame))]
    copies = copies.reset_index(drop=True).copy()
    for i in range(n_copies // 2, n_copies):  # the second half: one cell re-drawn
        column = copies.columns[rng.integers(copies.shape[1])]
        copies.iat[i, copies.columns.get_loc(column)] = frame[column].iat[
            rng.integers(len(frame))]
    rest = independent_marginals(frame, n_rows - n_copies, random_state=rng)
    out = pd.concat([copies, rest], ignore_index=True)
    return out.iloc[rng.permutation(len(out))].reset_index(drop=True)


def gaussian_copula(frame: pd.DataFrame, n_rows: int, *,
                    random_state: Any = None) -> pd.DataFrame:
    """``n_rows`` rows from a Gaussian copula fitted to ``frame``'s column ranks."""
    from scipy.stats import norm

    rng = check_random_state(random_state, func="gaussian_copula")
    codes = {c: _ordered_codes(frame[c]) for c in frame.columns}
    # Normal scores of the mid-ranks (ties share one), then their correlation.
    scores = np.column_stack([
        norm.ppf((pd.Series(v).rank(method="average").to_numpy() - 0.5) / len(frame))
        for v, _ in codes.values()])
    correlation = np.corrcoef(scores, rowvar=False) if scores.shape[1] > 1 else np.ones((1, 1))
    correlation = np.nan_to_num(correlation) + 1e-9 * np.eye(len(correlation))
    draws = rng.multivariate_normal(np.zeros(len(correlation)), correlation, size=n_rows)
    quantiles = norm.cdf(draws)
    out = {column: _inverse(values, labels, quantiles[:, j])
           for j, (column, (values, labels)) in enumerate(codes.items())}
    return pd.DataFrame(out)


def _inverse(values: np.ndarray, labels: Any, u: np.ndarray) -> np.ndarray:
    """Map uniform draws ``u`` back through a column's empirical quantiles.

    Missing values (coded -inf, the lowest rank) come back as NaN for their share of
    ``u``. A continuous column interpolates between its quantiles, so that the values drawn
    are new ones, not training values handed back.
    """
    ordered = np.sort(values)
    missing = float(np.mean(np.isinf(ordered)))
    present = ordered[~np.isinf(ordered)]
    if labels is None and len(np.unique(present)) > _LEVELS:
        inner = np.clip((u - missing) / max(1.0 - missing, 1e-12), 0.0, 1.0)
        return np.where(u < missing, np.nan, np.quantile(present, inner))
    picked = ordered[np.minimum((u * len(ordered)).astype(int), len(ordered) - 1)]
    if labels is not None:
        return labels[picked.astype(int)]
    return np.where(np.isinf(picked), np.nan, picked)


def _ordered_codes(series: pd.Series) -> tuple[np.ndarray, Any]:
    """A column as numbers the copula can rank, and the labels to map codes back.

    Numbers stay as they are (missing as -inf, the lowest rank); anything else becomes
    codes ordered by frequency, with their labels (missing a label of its own).
    """
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=np.float64, na_value=-np.inf), None
    labels = series.astype(object).where(series.notna(), None)
    counts = labels.value_counts(dropna=False)
    order = np.array(counts.index.tolist(), dtype=object)
    lookup = {v: i for i, v in enumerate(order)}
    return labels.map(lookup).to_numpy(dtype=np.float64), order
