"""Every metric taking labels and per-record values pairs pandas Series on their index.

Two Series whose indexes hold the same labels in another order are matched by index (as
pandas would); different label sets are refused naming the parameter; arrays (or one
array and one Series) pair by position. The metrics core never imports pandas.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privaudit.metrics as pm

N = 40


def _eps_bound(labels, scores):
    rows = pm.effective_epsilon_lower_bound(labels, scores, random_state=0,
                                            confidence_levels=(0.9,))
    return [tuple(r) for r in rows]


def _eps_bound_mapping(labels, scores):
    return _eps_bound(labels, {"a": scores})


#: name -> (metric(labels, values), the values' parameter name, hard 0/1 values?).
PAIRED = {
    "roc_auc": (pm.roc_auc, "scores", False),
    "roc_curve": (lambda y, s: [a.tolist() for a in pm.roc_curve(y, s)], "scores", False),
    "tpr_at_fpr": (functools.partial(pm.tpr_at_fpr, fpr=0.1), "scores", False),
    "advantage": (pm.advantage, "scores", False),
    "effective_epsilon": (functools.partial(pm.effective_epsilon, min_count=5), "scores",
                          False),
    "effective_epsilon_lower_bound": (_eps_bound, "scores", False),
    "effective_epsilon_lower_bound[mapping]": (_eps_bound_mapping, "scores['a']", False),
    "bootstrap_ci": (lambda y, s: tuple(pm.bootstrap_ci(pm.roc_auc, y, s, n_resamples=20,
                                                        random_state=0)), "scores", False),
    "bootstrap_cis": (lambda y, s: {k: tuple(v) for k, v in pm.bootstrap_cis(
        {"auc": pm.roc_auc}, y, s, n_resamples=20, random_state=0).items()}, "scores",
        False),
    "binary_metrics": (lambda y, p: tuple(pm.binary_metrics(y, p)), "predictions", True),
    "privacy_gain": (pm.privacy_gain, "predictions", True),
}


def _case(hard: bool, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(N // 2, int), np.zeros(N // 2, int)]
    rng.shuffle(labels)
    scores = labels * 1.5 + rng.normal(size=N)
    return labels, (scores > 0.75).astype(int) if hard else scores


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))


@pytest.mark.parametrize("name", sorted(PAIRED))
def test_permuted_series_give_the_aligned_arrays_result(name):
    metric, _, hard = PAIRED[name]
    labels, values = _case(hard)
    expected = metric(labels, values)
    ids = [f"r{i}" for i in range(N)]
    order = np.random.default_rng(1).permutation(N)
    y = pd.Series(labels, index=ids)
    s = pd.Series(values, index=ids).iloc[order]  # same labels, another order
    assert _same(metric(y, s), expected)
    # Paired by position, the permuted values would give another result.
    assert not _same(metric(labels, values[order]), expected)


@pytest.mark.parametrize("name", sorted(PAIRED))
def test_a_dataframe_column_is_matched_on_its_index(name):
    metric, _, hard = PAIRED[name]
    labels, values = _case(hard, seed=2)
    expected = metric(labels, values)
    frame = pd.DataFrame({"member": labels, "value": values}, index=range(100, 100 + N))
    shuffled = frame.sample(frac=1.0, random_state=3)
    assert _same(metric(frame["member"], shuffled["value"]), expected)


@pytest.mark.parametrize("name", sorted(PAIRED))
def test_series_with_other_index_labels_are_refused(name):
    metric, param, hard = PAIRED[name]
    labels, values = _case(hard)
    y = pd.Series(labels, index=range(N))
    s = pd.Series(values, index=range(1, N + 1))
    with pytest.raises(ValueError, match=rf"{re.escape(repr(param))} parameter of .*indexed by the "
                       rf"same unique labels as 'labels'.*e\.g\. \[{N}\]"):
        metric(y, s)


@pytest.mark.parametrize("name", sorted(PAIRED))
def test_duplicated_index_labels_are_refused(name):
    metric, param, hard = PAIRED[name]
    labels, values = _case(hard)
    y = pd.Series(labels, index=range(N))
    s = pd.Series(values, index=[0, *range(N - 1)])
    with pytest.raises(ValueError, match=rf"{re.escape(repr(param))} .*duplicated labels"):
        metric(y, s)


@pytest.mark.parametrize("name", sorted(PAIRED))
def test_an_array_and_a_series_pair_by_position(name):
    metric, _, hard = PAIRED[name]
    labels, values = _case(hard)
    expected = metric(labels, values)
    s = pd.Series(values, index=np.arange(N)[::-1])
    assert _same(metric(labels, s), expected)
    assert _same(metric(pd.Series(labels, index=np.arange(N) * 7), values), expected)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 30))
def test_property_permuted_series_auc_equals_aligned_auc(seed, n):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    labels[:2] = [0, 1]
    scores = rng.normal(size=n).round(1)  # ties too
    index = rng.choice(10 * n, size=n, replace=False)
    order = rng.permutation(n)
    y = pd.Series(labels, index=index)
    s = pd.Series(scores, index=index).iloc[order]
    assert pm.roc_auc(y, s) == pm.roc_auc(labels, scores)


def test_the_metrics_core_never_imports_pandas():
    root = Path(pm.__file__).parent
    for path in [*root.glob("*.py"), root.parent / "_validation.py"]:
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        names = [a.name for n in top for a in n.names] + [
            n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
        assert not [m for m in names if m.split(".")[0] == "pandas"], path.name
