"""Long texts by a sliding window (``stride=``): each token scored once, bounded memory.

The fast path reads the ``w``-th windows of a batch's texts in one padded pass and puts
each token's log-probability (and Min-K++'s moments) back in its text's place; the slow
reference below transcribes Hugging Face's perplexity recipe token by token: one forward
pass per scored token, over the tokens of its window before it.
"""

import math
import zlib

import numpy as np
import pytest
import torch
import transformers
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_stats import lowest_mean

from conftest import corpus
from privaudit.exceptions import PrivauditWarning
from privaudit.llm import score_texts
from privaudit.llm._token_stats import window_spans
from privaudit.training import LocalExecutor

CONTEXT = 32
FORWARD = ["loss", "min-k", "min-k-plus-plus", "zlib", "dc-pdd"]


@pytest.fixture(scope="module")
def short_model(tiny_tokenizer):
    """The tiny GPT-2 with a 32-position context: 4x the context is 128 tokens."""
    torch.manual_seed(3)
    config = transformers.GPT2Config(vocab_size=len(tiny_tokenizer), n_positions=CONTEXT,
                                     n_embd=32, n_layer=2, n_head=2)
    return transformers.GPT2LMHeadModel(config).eval()


@pytest.fixture(scope="module")
def long_ids(tiny_tokenizer):
    """Token-id texts of 1x to 4x the context (and one of a few tokens)."""
    ids = tiny_tokenizer(" ".join(corpus(60, seed=5)))["input_ids"]
    return [ids[:4 * CONTEXT], ids[200:200 + 3 * CONTEXT - 5], ids[400:400 + CONTEXT + 1],
            ids[500:506]]


def hf_recipe_rows(model, ids, labelled, window, stride):
    """[(l_t, mu_t, sigma_t, x_t)] of every scored token, one forward pass per token.

    Hugging Face's loop: windows ``[begin, end)`` every ``stride`` tokens, each scoring the
    tokens the previous one did not reach, each from all the window's tokens before it.
    """
    rows, reached = [], 0
    for begin in range(0, len(ids), stride):
        end = min(begin + window, len(ids))
        for t in range(max(reached, begin + 1), end):
            if not labelled[t]:
                continue
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([ids[begin:t]])).logits[0, -1]
            log_p = torch.log_softmax(logits.double(), -1)
            p = log_p.exp()
            mu = float((p * log_p).sum())
            var = float((p * (log_p - mu) ** 2).sum())
            rows.append((float(log_p[ids[t]]), mu, math.sqrt(max(var, 1e-6)), ids[t]))
        reached = end
        if end == len(ids):
            break
    return rows


def from_rows(rows, frequencies, k=0.2, a=0.01):
    """LOSS, Min-K, Min-K++ and DC-PDD of per-token rows, straight from the definitions."""
    ls = [r[0] for r in rows]
    seen, terms = set(), []
    for l_t, _, _, token in rows:
        if token not in seen:
            seen.add(token)
            terms.append(min(math.exp(l_t) * math.log(1 / frequencies[token]), a))
    return {"loss": -float(np.mean(ls)), "min-k": -lowest_mean(ls, k),
            "min-k-plus-plus": -lowest_mean([(r[0] - r[1]) / r[2] for r in rows], k),
            "dc-pdd": -float(np.mean(terms))}


def table(tokenizer):
    counts = np.arange(len(tokenizer)) % 7
    return (counts + 1.0) / (counts.sum() + len(tokenizer))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(2, 64), st.data())
def test_window_spans_score_every_token_once_with_enough_context(length, window, data):
    stride = data.draw(st.integers(1, window - 1))
    spans = window_spans(length, window, stride)
    scored = [t for _, end, new in spans for t in range(new, end)]
    assert scored == list(range(length))                   # once each, in order
    for begin, end, new in spans:
        assert end - begin <= window and begin <= new <= end
        assert new == 0 or new - begin >= window - stride   # context of the new tokens
    assert len(spans) == 1 if length <= window else spans[-1][1] == length


@pytest.mark.parametrize(("window", "stride", "side"), [(32, 8, "right"), (24, 16, "left"),
                                                        (32, 31, "left")])
def test_windowed_scores_equal_the_token_by_token_recipe(short_model, tiny_tokenizer,
                                                         long_ids, window, stride, side):
    frequencies = np.arange(len(tiny_tokenizer)) % 7
    fast = score_texts(short_model, tiny_tokenizer, long_ids, attacks=FORWARD,
                       token_frequencies=frequencies, stride=stride, window=window,
                       padding_side=side, batch_size=3)
    for i, ids in enumerate(long_ids):
        labelled = [t > 0 for t in range(len(ids))]
        want = from_rows(hf_recipe_rows(short_model, ids, labelled, window, stride),
                         table(tiny_tokenizer))
        text = tiny_tokenizer.decode(ids, skip_special_tokens=True)
        want["zlib"] = want["loss"] / len(zlib.compress(text.encode("utf-8")))
        for name in FORWARD:
            assert fast[name][i] == pytest.approx(want[name], rel=2e-5, abs=1e-6), (i, name)


def test_reference_and_recall_are_windowed_as_one_sequence(short_model, tiny_tokenizer,
                                                           long_ids):
    """``reference``: both models windowed alike; ``recall``: prefix + text windowed."""
    torch.manual_seed(4)
    reference = transformers.GPT2LMHeadModel(short_model.config).eval()
    prefix_text = "The holdout data leak."
    texts = long_ids[1:3]  # about 3x and 1x the context
    fast = score_texts(short_model, tiny_tokenizer, texts,
                       attacks=["loss", "reference", "recall"], reference_model=reference,
                       recall_prefix=prefix_text, stride=12, window=CONTEXT)
    prefix = tiny_tokenizer(prefix_text)["input_ids"]
    for i, ids in enumerate(texts):
        labelled = [t > 0 for t in range(len(ids))]

        def loss(model, seq, marks):
            return -np.mean([r[0] for r in hf_recipe_rows(model, seq, marks, CONTEXT, 12)])

        target = loss(short_model, ids, labelled)
        conditional = loss(short_model, prefix + ids, [False] * len(prefix) + [True] * len(ids))
        assert fast["reference"][i] == pytest.approx(target - loss(reference, ids, labelled),
                                                     rel=2e-5, abs=1e-6)
        assert fast["recall"][i] == pytest.approx(-(conditional / target), rel=2e-5)


@pytest.mark.parametrize("compat", [None, "open-unlearning", "mimir"])
def test_texts_that_fit_the_window_score_as_in_one_pass(short_model, tiny_tokenizer,
                                                        long_ids, compat):
    """Short texts batched with a long one go through the windows: same numbers."""
    kwargs = {"attacks": FORWARD, "token_frequencies": np.ones(len(tiny_tokenizer)),
              "compat": compat}
    # At most CONTEXT - 1 tokens: MIMIR's DC-PDD puts an EOS before each.
    short = [tiny_tokenizer(t)["input_ids"][:CONTEXT - 1] for t in corpus(5, seed=2)]
    short.append([7, 9])
    pass_once = score_texts(short_model, tiny_tokenizer, short, batch_size=8, **kwargs)
    windowed = score_texts(short_model, tiny_tokenizer, [long_ids[0], *short], batch_size=8,
                           stride=10, **kwargs)
    np.testing.assert_allclose(windowed.to_numpy()[1:], pass_once.to_numpy(), rtol=2e-5,
                               atol=1e-7)
    alone = score_texts(short_model, tiny_tokenizer, short, batch_size=8, stride=10, **kwargs)
    np.testing.assert_array_equal(alone.to_numpy(), pass_once.to_numpy())


def test_memory_is_flat_in_the_text_length(short_model, tiny_tokenizer):
    """The largest logits block (the scoring's peak) is the same for 1x to 8x the context.

    The per-token results (4 floats a token) are all that grows with the length.
    """
    ids = tiny_tokenizer(" ".join(corpus(120, seed=6)))["input_ids"]
    peaks = {}
    for times in (1, 2, 4, 8):
        sizes = []  # of every logits block the model returns
        hook = short_model.lm_head.register_forward_hook(
            lambda _module, _inputs, out, sizes=sizes: sizes.append(out.numel()))
        texts = [ids[j:j + times * CONTEXT] for j in range(0, 4 * times, times)]
        try:
            frame = score_texts(short_model, tiny_tokenizer, texts, stride=16, batch_size=4,
                                attacks=["loss", "min-k-plus-plus"])
        finally:
            hook.remove()
        assert np.isfinite(frame.to_numpy()).all()
        peaks[times] = max(sizes)
        assert len(sizes) == 1 + math.ceil((times * CONTEXT - CONTEXT) / 16)
        # After the first window, logits of the new tokens only (stride 16, one before).
        assert all(size <= 4 * 17 * len(tiny_tokenizer) for size in sizes[1:])
    assert set(peaks.values()) == {4 * CONTEXT * len(tiny_tokenizer)}


def test_the_window_defaults_to_max_length_within_the_context(short_model, tiny_tokenizer,
                                                               long_ids):
    def loss(**kwargs):
        return score_texts(short_model, tiny_tokenizer, long_ids[:2], attacks=["loss"],
                           stride=8, **kwargs)["loss"].to_numpy()

    np.testing.assert_array_equal(loss(max_length=16), loss(window=16))
    np.testing.assert_array_equal(loss(), loss(window=CONTEXT))  # 512 cut to the context
    assert not np.array_equal(loss(window=16), loss(window=CONTEXT))


class WithoutLogitsToKeep(torch.nn.Module):
    """A causal LM whose forward does not take ``logits_to_keep`` (older or custom ones)."""

    def __init__(self, model):
        super().__init__()
        self.model, self.config = model, model.config

    def get_output_embeddings(self):
        return self.model.get_output_embeddings()

    def get_input_embeddings(self):
        return self.model.get_input_embeddings()

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          position_ids=position_ids)


@pytest.mark.parametrize("side", ["left", "right"])
def test_a_model_without_logits_to_keep_scores_the_same(short_model, tiny_tokenizer,
                                                        long_ids, side):
    kwargs = {"attacks": ["loss", "min-k-plus-plus"], "stride": 12, "padding_side": side}
    sliced = score_texts(WithoutLogitsToKeep(short_model), tiny_tokenizer, long_ids, **kwargs)
    kept = score_texts(short_model, tiny_tokenizer, long_ids, **kwargs)
    np.testing.assert_allclose(sliced.to_numpy(), kept.to_numpy(), rtol=1e-5)


def test_texts_longer_than_max_length_are_cut_with_a_warning(short_model, tiny_tokenizer,
                                                             long_ids):
    with pytest.warns(PrivauditWarning, match="1 of 2 texts.*stride="):
        cut = score_texts(short_model, tiny_tokenizer, [long_ids[0], long_ids[3]],
                          max_length=100)
    alone = score_texts(short_model, tiny_tokenizer, [long_ids[0][:CONTEXT]])
    assert cut["loss"][0] == pytest.approx(alone["loss"][0], rel=1e-6)  # the context's


def test_windows_reach_the_shards_and_their_cache_key(short_model, tiny_tokenizer, long_ids,
                                                      tmp_path):
    """stride and window reach each shard's scoring, and enter the cache key when given.

    One worker (inline): two real worker processes cost 25 CPU-s here; test_sharded.py
    shows 1 and 2 workers give the same numbers bit for bit.
    """
    kwargs = {"attacks": ["loss", "min-k"], "batch_size": 1,
              "executor": LocalExecutor(n_jobs=1)}
    texts = long_ids * 3  # 12 texts at batch 1: two shards of 8 batches
    sharded = score_texts(short_model, tiny_tokenizer, texts, stride=8, cache_dir=tmp_path,
                          **kwargs)
    plain = score_texts(short_model, tiny_tokenizer, texts, stride=8, batch_size=1,
                        attacks=["loss", "min-k"])
    np.testing.assert_allclose(sharded.to_numpy(), plain.to_numpy(), rtol=1e-6)
    with pytest.warns(PrivauditWarning):  # not read from the windowed cache: cut, warned
        cut = score_texts(short_model, tiny_tokenizer, texts, cache_dir=tmp_path, **kwargs)
    assert not np.array_equal(cut["loss"][:3], sharded["loss"][:3])
    again = score_texts(short_model, tiny_tokenizer, texts, stride=8, cache_dir=tmp_path,
                        **kwargs)
    np.testing.assert_array_equal(again.to_numpy(), sharded.to_numpy())


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"stride": 32}, "stride"), ({"stride": 40, "window": 32}, "stride"),
    ({"stride": 0}, "stride"), ({"stride": 2.0}, "stride"), ({"stride": True}, "stride"),
    ({"stride": 8, "window": 33}, "window"), ({"stride": 1, "window": 1}, "window"),
    ({"stride": 8, "window": "32"}, "window"), ({"window": 16}, "stride"),
    ({"stride": 8, "attacks": ["gradnorm"]}, "stride"),
])
def test_bad_window_is_one_error_naming_it(short_model, tiny_tokenizer, long_ids, kwargs,
                                           name):
    with pytest.raises(ValueError, match=f"'{name}'"):
        score_texts(short_model, tiny_tokenizer, long_ids[:2], **kwargs)


def test_gradnorm_with_a_window_scores_texts_that_fit(short_model, tiny_tokenizer, long_ids):
    short = [long_ids[3], long_ids[0][:20]]
    windowed = score_texts(short_model, tiny_tokenizer, short, attacks=["gradnorm", "loss"],
                           stride=8)
    plain = score_texts(short_model, tiny_tokenizer, short, attacks=["gradnorm", "loss"])
    np.testing.assert_array_equal(windowed.to_numpy(), plain.to_numpy())
