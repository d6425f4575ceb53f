"""The blind baseline (Das, Zhang and Tramèr 2024) on real tweets."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from privaudit.llm import BlindBaseline, date_features
from privaudit.metrics import roc_auc
from privaudit.studies._tiny_lm import load_tweets


@pytest.fixture(scope="module")
def tweets():
    return load_tweets(1200, random_state=1)


def test_random_split_is_near_half(tweets):
    labels = np.random.default_rng(0).integers(0, 2, len(tweets))
    result = BlindBaseline(n_splits=3, random_state=0).fit_score(tweets["text"].tolist(),
                                                                 labels)
    assert abs(roc_auc(result.labels, result.scores) - 0.5) < 0.05
    assert result.out_of_fold and result.attack == "blind-baseline"


def test_split_by_date_is_found(tweets):
    later = (tweets["created_at"] > tweets["created_at"].median()).astype(int).to_numpy()
    result = BlindBaseline(n_splits=3, random_state=0).fit_score(tweets["text"].tolist(),
                                                                 later)
    assert roc_auc(result.labels, result.scores) > 0.75  # 0.80 here; 0.89 on 2,000


def test_same_seed_same_scores_and_clone(tweets):
    texts = tweets["text"].tolist()[:300]
    labels = np.r_[np.ones(150), np.zeros(150)]
    a = BlindBaseline(n_splits=3, random_state=4).fit_score(texts, labels)
    b = clone(BlindBaseline(n_splits=3, random_state=4)).fit_score(texts, labels)
    np.testing.assert_array_equal(a.scores, b.scores)


def test_date_features_by_hand():
    got = date_features(["Back in 1999 and 2016!", "See you on 2020-03-15 in March",
                         "no dates, 12345 or 3000"])
    expected = np.array([[2, (2016 - 1900) / 200, (1999 - 1900) / 200, 0, 0],
                         [1, 0.6, 0.6, 1, 1],
                         [0, 0, 0, 0, 0]])
    np.testing.assert_allclose(got, expected)


def test_dates_alone_separate_a_split_by_year():
    years = np.r_[np.full(60, 2012), np.full(60, 2019)]
    texts = [f"Posted in {y}. Great day." for y in years]
    result = BlindBaseline(features=("dates",), n_splits=3, random_state=0).fit_score(
        texts, (years == 2019).astype(int))
    assert roc_auc(result.labels, result.scores) == 1.0


@pytest.mark.parametrize("kwargs,texts,labels,message", [
    ({}, ["a", "b"], [1], "labels"),
    ({}, ["a", "b", "c", "d"], [1, 1, 1, 1], "0/1|n_splits"),
    ({"features": ("words",)}, ["a", "b"], [1, 0], "features"),
    ({"n_splits": 1}, ["a"] * 4, [1, 0, 1, 0], "n_splits"),
    ({}, ["a", 3], [1, 0], "texts"),
])
def test_bad_inputs(kwargs, texts, labels, message):
    with pytest.raises((ValueError, TypeError), match=message):
        BlindBaseline(**kwargs).fit_score(texts, labels)


def test_linear_in_texts_and_sparse(tweets):
    """No dense text x text matrix: 1,200 texts, features far wider than the sample."""
    model = BlindBaseline(random_state=0)._pipeline()
    table = np.asarray(tweets["text"].tolist(), dtype=object)[:, None]
    features = model.named_steps["features"].fit_transform(table)
    assert hasattr(features, "tocsr") and features.shape[0] == len(tweets)
    assert isinstance(tweets, pd.DataFrame)
