"""Slow, obviously correct references for the synthetic-data tests."""

import numpy as np
import pandas as pd


def mixed_table(n, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 30, n),                                   # thermometer
        "income": rng.lognormal(10, 1, n).round(2),                       # continuous
        "state": rng.choice(["CA", "NY", "TX", None], n),                 # one-hot, missing
        "zip": rng.integers(0, 200, n).astype(str),                       # wide: codes
        "score": np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 5, n)),
        "spend": np.where(rng.random(n) < 0.3, np.nan, rng.normal(0, 1, n).round(3)),
        "member": rng.random(n) < 0.5,                                    # bool: categorical
    })


def reference_gower(a, b, categorical, range_frames):
    """Gower's distance written out: one pair of rows, one column at a time.

    The cells are read as Python values and each numeric column's span computed once
    beforehand (a pandas lookup per cell and pair was most of the tests' time).
    """
    both = pd.concat(range_frames)
    spans = {col: both[col].max() - both[col].min() for col in a.columns
             if col not in categorical}
    rows_a, rows_b = a.astype(object).values.tolist(), b.astype(object).values.tolist()
    out = np.zeros((len(a), len(b)))
    for i, row_a in enumerate(rows_a):
        for j, row_b in enumerate(rows_b):
            total = 0.0
            for col, x, y in zip(a.columns, row_a, row_b, strict=True):
                if pd.isna(x) or pd.isna(y):
                    total += 0.0 if (pd.isna(x) and pd.isna(y)) else 1.0
                elif col in categorical:
                    total += float(str(x) != str(y))
                else:
                    span = spans[col]
                    total += abs(float(x) - float(y)) / (span if span > 0 else 1.0)
            out[i, j] = total / a.shape[1]
    return out
