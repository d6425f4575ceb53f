"""Small synthetic-data generators with known privacy: what the audits are shown on.

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
- :class:`DPBayesianNetwork`: an epsilon-differentially private generator (noisy
  histograms of each column given its parent in a fixed chain, PrivBayes style), whose
  claim the generator audit puts to the test.

Every generator is called ``generator(train, n_rows, random_state=...)`` and every draw
goes through ``random_state``.

References
----------
.. [1] Patki, N., Wedge, R. and Veeramachaneni, K. "The Synthetic Data Vault." IEEE DSAA
   2016 (the Gaussian copula model).
.. [2] Zhang, J., Cormode, G., Procopiuc, C. M., Srivastava, D. and Xiao, X. "PrivBayes:
   Private Data Release via Bayesian Networks." ACM TODS 2017.
.. [3] Dwork, C., McSherry, F., Nissim, K. and Smith, A. "Calibrating Noise to
   Sensitivity in Private Data Analysis." TCC 2006 (the Laplace mechanism).
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privaudit._validation import check_fraction, check_int, check_random_state, param_error
from privaudit.exceptions import PrivauditWarning

__all__ = ["BUILTIN_GENERATORS", "DPBayesianNetwork", "TableDomain", "builtin_generator",
           "copying_generator", "gaussian_copula", "independent_marginals"]

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


# --------------------------------------------------------------------------- DP generator

_DOMAIN = "TableDomain"


@dataclass(frozen=True)
class TableDomain:
    """The public domain of a table: each column's categories or its numeric bins.

    A differentially private generator may read only public facts about the columns
    beside its noisy counts: the values a categorical column can take and the bin edges
    of a numeric one. Read them from public data (the population, an auxiliary sample),
    never from the training records themselves.

    Parameters
    ----------
    columns : tuple of str
        The columns, in order.
    categories : mapping of str to tuple
        Categorical columns (and numeric ones with few values): their possible values,
        ``None`` standing for a missing cell.
    edges : mapping of str to ndarray
        Numeric columns: increasing bin edges; values outside them fall in the end bins.
        A column in ``missing`` has one more cell, for missing values.
    integral : frozenset of str
        Numeric columns whose values are whole numbers (sampled as such).
    missing : frozenset of str
        Numeric columns with a cell for missing values.
    """

    columns: tuple[str, ...]
    categories: Mapping[str, tuple]
    edges: Mapping[str, np.ndarray]
    integral: frozenset[str] = frozenset()
    missing: frozenset[str] = frozenset()

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, bins: int = 10) -> TableDomain:
        """The domain of ``frame``, public data.

        Numeric columns with more than ``bins`` distinct values get ``bins`` equal-width
        bins between their extremes, the other columns their distinct values.
        """
        bins = check_int(bins, param="bins", func=_DOMAIN, low=2)
        categories: dict[str, tuple] = {}
        edges: dict[str, np.ndarray] = {}
        integral, missing = set(), set()
        for column in frame.columns:
            series = frame[column]
            values = series.dropna()
            if _is_number(series) and values.nunique() > bins:
                numbers = values.to_numpy(dtype=np.float64)
                edges[column] = np.linspace(numbers.min(), numbers.max(), bins + 1)
                if np.all(numbers == np.round(numbers)):
                    integral.add(column)
                if series.isna().any():
                    missing.add(column)
            else:
                labels = _labels(series)
                categories[column] = tuple(pd.unique(labels))
        return cls(tuple(map(str, frame.columns)), categories, edges, frozenset(integral),
                   frozenset(missing))

    @property
    def sizes(self) -> list[int]:
        """The number of cells of each column."""
        return [len(self.categories[c]) if c in self.categories
                else len(self.edges[c]) - 1 + (c in self.missing) for c in self.columns]

    def encode(self, frame: pd.DataFrame, *, unknown: str = "raise") -> np.ndarray:
        """Each cell's index in its column's domain, shape ``(n_rows, n_columns)``.

        A value outside the domain (an unknown category, a missing value where the
        domain has none) raises a ValueError naming the column, or with
        ``unknown="extra"`` gets the index ``sizes[j]``, one past the column's cells.
        Numbers outside the bins fall in the end bins.
        """
        if unknown not in ("raise", "extra"):
            raise param_error("unknown", f"{_DOMAIN}.encode", "'raise' or 'extra'", unknown)
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise param_error("train", _DOMAIN, f"a table with the domain's columns "
                              f"(missing: {missing[:5]})", f"<columns {list(frame.columns)[:5]}>")
        return np.column_stack([self._encode_column(frame[c], c, unknown == "raise")
                                for c in self.columns])

    def _encode_column(self, series: pd.Series, column: str, strict: bool) -> np.ndarray:
        if column in self.categories:
            return self._category_codes(series, column, strict)
        numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
        edges = self.edges[column]
        codes = np.clip(np.searchsorted(edges, numbers, side="right") - 1, 0, len(edges) - 2)
        absent = np.isnan(numbers)
        if strict and absent.any() and column not in self.missing:
            raise param_error(f"train[{column!r}]", _DOMAIN, "no missing values (the public "
                              "domain has none in this column)", "<a missing value>")
        return np.where(absent, len(edges) - 1, codes)

    def _category_codes(self, series: pd.Series, column: str, strict: bool) -> np.ndarray:
        values = list(self.categories[column])
        present = [v for v in values if v is not None]
        position = np.array([values.index(v) for v in present] + [-1], dtype=np.int64)
        known = pd.Index(present, dtype=object).get_indexer(
            series.astype(object).where(series.notna(), None))
        codes = position[known]  # code -1 (missing or unknown) reads the last entry
        if None in values:
            codes = np.where(series.isna().to_numpy(), values.index(None), codes)
        unknown = (codes < 0) | ((known < 0) & series.notna().to_numpy())
        if unknown.any() and not strict:
            return np.where(unknown, len(values), codes)
        if unknown.any():
            raise param_error(f"train[{column!r}]", _DOMAIN, "values of the public "
                              f"domain {values[:8]}", series[unknown].iloc[0])
        return codes

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Rows of values for ``codes``: a category as it is, a bin as a uniform draw in it."""
        out = {}
        for j, column in enumerate(self.columns):
            if column in self.categories:
                out[column] = np.asarray(self.categories[column], dtype=object)[codes[:, j]]
                out[column] = pd.Series(out[column]).infer_objects().to_numpy()
                continue
            edges = self.edges[column]
            inner = np.minimum(codes[:, j], len(edges) - 2)
            low, high = edges[inner], edges[inner + 1]
            values = low + rng.random(len(codes)) * (high - low)
            if column in self.integral:
                values = np.clip(np.round(values), np.ceil(low), np.maximum(np.floor(high),
                                                                           np.ceil(low)))
            absent = codes[:, j] == len(edges) - 1
            if column in self.integral and not absent.any():
                out[column] = values.astype(np.int64)
            else:
                out[column] = np.where(absent, np.nan, values)
        return pd.DataFrame(out)


def _is_number(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _labels(series: pd.Series) -> pd.Series:
    """A column as objects, a missing cell as ``None`` (one key for every kind of NA)."""
    labels = series.astype(object)
    return labels.where(series.notna(), None)


class DPBayesianNetwork:
    """An epsilon-differentially private generator: noisy histograms in a fixed chain.

    Each column is modelled given its parent, the column before it (``degree=1``), or on
    its own (``degree=0``: noisy marginals). Every histogram of counts gets Laplace noise
    of scale ``2 d / epsilon`` for ``d`` histograms: replacing one training record by
    another moves one count in each histogram from one cell to another (L1 sensitivity
    2), and the ``d`` releases compose, so the whole output is ``epsilon``-DP under the
    substitution of one record (bounded DP), the neighbouring relation of the generator
    audit (a training set with the target against the same set with the target replaced).
    Negative counts are set to 0 and each row normalised (post-processing, free).

    The network's structure (a chain in column order) does not depend on the data, so it
    costs no budget; PrivBayes instead spends part of the budget choosing parents with
    the exponential mechanism. The domain must be public: with ``domain=None`` it is read
    from the training table, a leak outside the guarantee, said in a warning.

    Parameters
    ----------
    epsilon : float, default=1.0
        The privacy budget, > 0.
    degree : {0, 1}, default=1
        Parents per column.
    domain : TableDomain, optional
        The public domain (see :meth:`TableDomain.from_frame`).
    bins : int, default=10
        Bins of numeric columns when the domain is read from the training table.

    References
    ----------
    .. [1] Zhang, J., Cormode, G., Procopiuc, C. M., Srivastava, D. and Xiao, X. "PrivBayes:
       Private Data Release via Bayesian Networks." ACM TODS 2017.
    .. [2] Dwork, C., McSherry, F., Nissim, K. and Smith, A. "Calibrating Noise to
       Sensitivity in Private Data Analysis." TCC 2006.

    Examples
    --------
    >>> import pandas as pd
    >>> from privaudit.synthetic import DPBayesianNetwork, TableDomain
    >>> public = pd.DataFrame({"age": range(20, 80), "smoker": ["yes", "no"] * 30})
    >>> generator = DPBayesianNetwork(epsilon=1.0, domain=TableDomain.from_frame(public))
    >>> generator(public.iloc[:40], 5, random_state=0).shape
    (5, 2)
    """

    def __init__(self, epsilon: float = 1.0, *, degree: int = 1,
                 domain: TableDomain | None = None, bins: int = 10) -> None:
        func = type(self).__name__
        if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not (
                math.isfinite(epsilon) and epsilon > 0):
            raise param_error("epsilon", func, "a finite number > 0", epsilon)
        if degree not in (0, 1) or isinstance(degree, bool):
            raise param_error("degree", func, "0 or 1", degree)
        if domain is not None and not isinstance(domain, TableDomain):
            raise param_error("domain", func, "a TableDomain or None", domain, error=TypeError)
        self.epsilon, self.degree, self.domain = float(epsilon), int(degree), domain
        self.bins = check_int(bins, param="bins", func=func, low=2)

    def __repr__(self) -> str:
        return f"DPBayesianNetwork(epsilon={self.epsilon:g}, degree={self.degree})"

    def __call__(self, train: pd.DataFrame, n_rows: int, *,
                 random_state: Any = None) -> pd.DataFrame:
        """``n_rows`` synthetic rows from a network fitted to ``train`` with noise."""
        rng = check_random_state(random_state, func=type(self).__name__)
        domain = self.domain
        if domain is None:
            warnings.warn("DPBayesianNetwork: no public domain given, so it was read from "
                          "the training table; the epsilon guarantee does not cover the "
                          "domain (pass domain=TableDomain.from_frame(public_data)).",
                          PrivauditWarning, stacklevel=2)
            domain = TableDomain.from_frame(train, bins=self.bins)
        codes = domain.encode(train)
        conditionals = self._noisy_conditionals(codes, domain.sizes, rng)
        return domain.decode(self._sample(conditionals, n_rows, rng), rng)

    def _noisy_conditionals(self, codes: np.ndarray, sizes: list[int],
                            rng: np.random.Generator) -> list[np.ndarray]:
        """Per column, ``P(column | parent)`` as a (parent cells, cells) array."""
        scale = 2.0 * len(sizes) / self.epsilon
        out = []
        for j, size in enumerate(sizes):
            has_parent = self.degree == 1 and j > 0
            parent = codes[:, j - 1] if has_parent else np.zeros(len(codes), np.int64)
            n_parent = sizes[j - 1] if has_parent else 1
            counts = np.zeros((n_parent, size))
            np.add.at(counts, (parent, codes[:, j]), 1.0)
            noisy = np.maximum(counts + rng.laplace(0.0, scale, counts.shape), 0.0)
            total = noisy.sum(axis=1, keepdims=True)
            out.append(np.where(total > 0, noisy / np.where(total > 0, total, 1.0),
                                1.0 / size))
        return out

    def _sample(self, conditionals: list[np.ndarray], n_rows: int,
                rng: np.random.Generator) -> np.ndarray:
        codes = np.zeros((n_rows, len(conditionals)), dtype=np.int64)
        for j, table in enumerate(conditionals):
            parent = codes[:, j - 1] if self.degree == 1 and j > 0 else np.zeros(n_rows,
                                                                                np.int64)
            cumulative = np.cumsum(table, axis=1)[parent]
            draws = rng.random(n_rows)[:, None] * cumulative[:, -1:]
            codes[:, j] = np.minimum((cumulative <= draws).sum(axis=1), table.shape[1] - 1)
        return codes


# --------------------------------------------------------------------------- registry

#: The built-in generators by name (what configuration files and the CLI accept).
BUILTIN_GENERATORS = ("independent-marginals", "gaussian-copula", "copying", "dp-bayes")


def builtin_generator(name: str, *, domain: TableDomain | None = None,
                      **params: Any) -> Callable[..., pd.DataFrame]:
    """The built-in generator ``name`` with ``params``.

    Called ``gen(train, n_rows, random_state=...)``; ``domain`` is the public domain of
    ``"dp-bayes"``.
    """
    if name not in BUILTIN_GENERATORS:
        raise param_error("generator", "builtin_generator",
                          f"one of {list(BUILTIN_GENERATORS)}", name)
    if name == "dp-bayes":
        return DPBayesianNetwork(domain=domain, **params)
    function = {"independent-marginals": independent_marginals,
                "gaussian-copula": gaussian_copula, "copying": copying_generator}[name]
    if "copy_fraction" in params:  # checked here, not in every run
        check_fraction(params["copy_fraction"], param="copy_fraction",
                       func="copying_generator", low_inclusive=True, high_inclusive=True)
    return functools.partial(function, **params)
