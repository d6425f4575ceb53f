"""ReCaLL as the authors' code defines it: the text's first token scored after the prefix."""

import numpy as np
import pytest
import reference_stats as ref

from conftest import corpus
from privaudit.llm import STATISTIC_REVISIONS, score_texts, statistic_key

TEXTS = [*corpus(7, seed=11), ("Which data was held out?", " The forget set of it."),
         "Audit."]
SHOTS = ["The holdout was forget data. ", "A member record. ", "Loss score."]


def _authors(model, tokenizer, shots):
    return np.array([ref.recall_authors(model, tokenizer, t, shots) for t in TEXTS])


@pytest.mark.parametrize("shots", [SHOTS[0], SHOTS, SHOTS[1:]])
@pytest.mark.parametrize(("side", "batch_size"), [("right", 4), ("left", 3), ("left", 1)])
def test_recall_equals_the_authors_definition(tiny_model, tiny_tokenizer, shots, side,
                                              batch_size):
    tiny_tokenizer.padding_side = side
    try:
        fast = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=["recall"],
                           recall_prefix=shots, batch_size=batch_size)["recall"].to_numpy()
    finally:
        tiny_tokenizer.padding_side = "right"
    np.testing.assert_allclose(fast, _authors(tiny_model, tiny_tokenizer, shots),
                               rtol=1e-5, atol=1e-6)


def test_shots_are_joined_with_nothing_between(tiny_model, tiny_tokenizer):
    as_list = score_texts(tiny_model, tiny_tokenizer, TEXTS[:4], attacks=["recall"],
                          recall_prefix=SHOTS)["recall"].to_numpy()
    joined = score_texts(tiny_model, tiny_tokenizer, TEXTS[:4], attacks=["recall"],
                         recall_prefix="".join(SHOTS))["recall"].to_numpy()
    np.testing.assert_array_equal(as_list, joined)


def test_first_token_after_the_prefix_changes_the_score(tiny_model, tiny_tokenizer):
    """The previous definition (first token left out) gives other numbers on plain texts."""
    plain = TEXTS[:5]
    new = score_texts(tiny_model, tiny_tokenizer, plain, attacks=["recall"],
                      recall_prefix=SHOTS[0])["recall"].to_numpy()
    prefix = tiny_tokenizer(SHOTS[0])["input_ids"]
    old = []
    for text in plain:
        ids, labelled = ref.encode(tiny_tokenizer, text)
        cond = -np.mean([r[0] for r in ref.per_token(tiny_model, ids, labelled, prefix)])
        loss = -np.mean([r[0] for r in ref.per_token(tiny_model, ids, labelled)])
        old.append(-(cond / loss))
    assert np.all(np.abs(new - np.array(old)) > 1e-4)


@pytest.mark.parametrize("prefix", ["", [], [""], ["shot", 3], b"bytes", 7])
def test_bad_prefix_is_one_error_naming_it(tiny_model, tiny_tokenizer, prefix):
    with pytest.raises((ValueError, TypeError), match="recall_prefix"):
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], attacks=["recall"],
                    recall_prefix=prefix)


def test_recall_revision_enters_the_cache_key():
    assert statistic_key("recall") == f"recall@{STATISTIC_REVISIONS['recall']}"
    assert STATISTIC_REVISIONS["recall"] >= 2
    assert [statistic_key(n) for n in ("loss", "min-k", "zlib")] == ["loss", "min-k", "zlib"]
