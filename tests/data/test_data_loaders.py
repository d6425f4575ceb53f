import numpy as np
import pytest
from sklearn.datasets import load_digits as sk_load_digits

from privaudit.data import (
    LOANS_DROPPED_COLUMNS,
    TabularData,
    load_digits,
    load_loans,
    load_tv16,
)


def test_loans_shape_and_content():
    data = load_loans()
    assert isinstance(data, TabularData)
    assert data.X.shape == (10_000, 131) and data.y.shape == (10_000,)
    assert data.X.dtype == np.float64 and not np.isnan(data.X).any()
    assert len(data.feature_names) == 131 == len(set(data.feature_names))
    assert (data.name, data.task, data.target_name) == (
        "openintro::loans_full_schema", "regression", "interest_rate"
    )
    assert 5 < data.y.mean() < 20 and data.y.min() > 0
    names = set(data.feature_names)
    # Columns that encode the interest rate are left out, with a reason.
    for col in ("grade", "sub_grade", "installment", "paid_interest", "emp_title"):
        assert col in LOANS_DROPPED_COLUMNS
        assert not any(n == col or n.startswith(col + "_") for n in names)
    assert "loan_amount" in names and "state_CA" in names
    assert sum(n.startswith("missingindicator_") for n in names) == 8
    # Numeric columns are standardised on the full table.
    j = data.feature_names.index("loan_amount")
    assert data.X[:, j].mean() == pytest.approx(0, abs=1e-9)
    assert data.X[:, j].std() == pytest.approx(1, abs=1e-9)
    np.testing.assert_array_equal(data.record_ids, np.arange(1, 10_001))


def test_tv16_shape_and_content():
    data = load_tv16()
    assert data.X.shape == (62_479, 90)
    assert not np.isnan(data.X).any()
    assert set(np.unique(data.y)) == set(range(1, 8))
    assert data.y.dtype == np.int64
    assert (data.name, data.task) == ("stevedata::TV16", "classification")
    assert "uid" not in data.feature_names and "rownames" not in data.feature_names
    assert "age" in data.feature_names


def test_digits_passthrough():
    data = load_digits()
    sk = sk_load_digits()
    np.testing.assert_array_equal(data.X, sk.data)
    np.testing.assert_array_equal(data.y, sk.target)
    assert data.X.shape == (1797, 64)


@pytest.mark.parametrize("loader", [load_loans, load_tv16, load_digits])
def test_samples_are_deterministic(loader):
    a = loader(n_rows=300, random_state=7)
    b = loader(n_rows=300, random_state=7)
    c = loader(n_rows=300, random_state=8)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.record_ids, b.record_ids)
    assert not np.array_equal(a.record_ids, c.record_ids)
    assert a.X.shape[0] == 300 and len(np.unique(a.record_ids)) == 300
    # The feature space does not depend on the sample.
    assert a.feature_names == c.feature_names
    # A sample is the full table's rows (same preprocessing), not a re-fit.
    full = loader()
    pos = np.searchsorted(full.record_ids, a.record_ids)
    np.testing.assert_array_equal(full.X[pos], a.X)


def test_loaded_arrays_are_copies():
    a = load_digits()
    a.X[0, 0] = -99
    assert load_digits().X[0, 0] != -99


@pytest.mark.parametrize(("n_rows", "error"), [(0, ValueError), (10**6, ValueError),
                                               (2.5, TypeError)])
def test_bad_n_rows(n_rows, error):
    with pytest.raises(error, match="'n_rows' parameter of load_digits"):
        load_digits(n_rows=n_rows)
