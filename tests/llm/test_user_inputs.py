"""Inputs as users of MIMIR and open-unlearning hold them: token ids, the padding side."""

import numpy as np
import pytest
import torch

from conftest import corpus
from privaudit.llm import score_texts

TEXTS = corpus(9, seed=31)
NAMES = ["loss", "min-k", "min-k-plus-plus", "zlib", "gradnorm", "recall"]
ARGS = {"attacks": NAMES, "recall_prefix": ["A member record. ", "Loss score."],
        "batch_size": 4}


@pytest.fixture(scope="module")
def from_strings(tiny_model, tiny_tokenizer):
    return score_texts(tiny_model, tiny_tokenizer, TEXTS, **ARGS)


def _ids(tokenizer):
    return [tokenizer(t)["input_ids"] for t in TEXTS]


@pytest.mark.parametrize("form", ["lists", "tuples", "tensors", "arrays", "mixed"])
def test_token_ids_score_as_their_strings(tiny_model, tiny_tokenizer, from_strings, form):
    ids = _ids(tiny_tokenizer)
    given = {"lists": ids, "tuples": [tuple(i) for i in ids],
             "tensors": [torch.tensor(i) for i in ids],
             "arrays": [np.array(i, dtype=np.int32) for i in ids],
             "mixed": [TEXTS[0], torch.tensor(ids[1]), *ids[2:]]}[form]
    got = score_texts(tiny_model, tiny_tokenizer, given, **ARGS)
    for name in NAMES:
        np.testing.assert_allclose(got[name], from_strings[name], rtol=1e-6, atol=1e-9,
                                   err_msg=name)


def test_a_2d_tensor_is_one_text_per_row(tiny_model, tiny_tokenizer):
    ids = [i[:6] for i in _ids(tiny_tokenizer) if len(i) >= 6]
    rows = score_texts(tiny_model, tiny_tokenizer, torch.tensor(ids), attacks=["loss"])
    lists = score_texts(tiny_model, tiny_tokenizer, ids, attacks=["loss"])
    np.testing.assert_array_equal(rows["loss"], lists["loss"])
    assert len(rows) == len(ids) >= 3


@pytest.mark.parametrize(("texts", "match"), [
    ([[1, 2, 10_000]], r"\[0, \d+\)"),
    ([[3, -1, 4]], "texts"),
    ([[1, 2.5, 3]], "texts"),
    ([[True, False]], "texts"),
    ([torch.zeros(2, 2, dtype=torch.long)], "texts"),
])
def test_bad_token_ids_name_texts(tiny_model, tiny_tokenizer, texts, match):
    with pytest.raises((ValueError, TypeError), match=match):
        score_texts(tiny_model, tiny_tokenizer, texts, attacks=["loss"])


def test_padding_side_argument_changes_nothing_and_leaves_the_tokenizer(
        tiny_model, tiny_tokenizer, from_strings):
    before = tiny_tokenizer.padding_side
    for side in ("left", "right"):
        got = score_texts(tiny_model, tiny_tokenizer, TEXTS, padding_side=side, **ARGS)
        for name in NAMES:
            np.testing.assert_allclose(got[name], from_strings[name], rtol=1e-5, atol=1e-7,
                                       err_msg=f"{side}: {name}")
    assert tiny_tokenizer.padding_side == before


def test_padding_side_is_used(tiny_model, tiny_tokenizer, monkeypatch):
    from privaudit.llm import _score

    sides = []
    real = _score._pad
    monkeypatch.setattr(_score, "_pad", lambda items, pad, side, *a, **k: (
        sides.append(side), real(items, pad, side, *a, **k))[1])
    score_texts(tiny_model, tiny_tokenizer, TEXTS[:3], attacks=["loss"], padding_side="left")
    score_texts(tiny_model, tiny_tokenizer, TEXTS[:3], attacks=["loss"])
    assert sides == ["left", tiny_tokenizer.padding_side]


@pytest.mark.parametrize("side", ["LEFT", "", "center", 1])
def test_a_bad_padding_side_names_it(tiny_model, tiny_tokenizer, side):
    with pytest.raises(ValueError, match="padding_side"):
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], padding_side=side)
