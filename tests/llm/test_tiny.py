"""Tiny real language models for the demo and the end-to-end tests: real tweets, a BPE
tokenizer, a seeded GPT-2 that memorises its training tweets, gradient-ascent unlearning."""

import numpy as np
import pytest
import torch

from privaudit.llm import score_texts
from privaudit.metrics import roc_auc
from privaudit.studies._tiny_lm import (
    gradient_ascent_unlearn,
    load_tweets,
    tiny_gpt2,
    train_causal_lm,
    train_tokenizer,
)


def _loss(model, tokenizer, texts):
    return score_texts(model, tokenizer, texts, attacks=["loss"], batch_size=32)[
        "loss"].to_numpy()


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def small(tweets_lm):
    """60 tweets and the fixture's tokenizer, for the quick training runs."""
    return tweets_lm["frame"]["text"].tolist()[400:460], tweets_lm["tokenizer"]


def test_load_tweets_gives_seeded_real_texts_with_dates():
    frame = load_tweets(300, random_state=3)
    assert list(frame.columns) == ["text", "created_at"] and len(frame) == 300
    assert str(frame["created_at"].dt.tz) == "UTC"
    assert frame["created_at"].between("2009-01-01", "2018-12-31").all()
    text = frame["text"]
    assert text.str.len().min() >= 20 and text.is_unique
    assert not text.str.contains("http").any()  # links stripped
    # Seeded: the same seed gives the same rows, and a smaller n is a prefix of a larger.
    again = load_tweets(600, random_state=3)
    assert again["text"][:300].tolist() == text.tolist()
    assert load_tweets(300, random_state=4)["text"].tolist() != text.tolist()
    everything = load_tweets()
    assert len(everything) > 10_000  # dslabs::trump_tweets: about 20k of which some retweets


def test_tokenizer_is_byte_level_bpe_with_end_and_pad_tokens(small):
    texts, _ = small
    tokenizer = train_tokenizer(texts, vocab_size=400)
    assert tokenizer.eos_token == "<|endoftext|>" and tokenizer.pad_token == "<pad>"
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    assert 256 < len(tokenizer) <= 400
    # Byte level: any text round-trips, even characters never seen in training.
    for text in [*texts[:5], "Ünïcödé — 🇺🇸 never seen"]:
        ids = tokenizer(text)["input_ids"]
        assert tokenizer.decode(ids) == text
    again = train_tokenizer(texts, vocab_size=400)
    assert again.get_vocab() == tokenizer.get_vocab()  # BPE training is deterministic


def test_tiny_gpt2_is_seeded_and_leaves_the_global_rng_alone(small):
    _, tokenizer = small
    state = torch.random.get_rng_state()
    a = tiny_gpt2(tokenizer, n_layer=1, n_embd=16, n_head=2, n_positions=32, random_state=1)
    assert torch.equal(torch.random.get_rng_state(), state)
    b = tiny_gpt2(tokenizer, n_layer=1, n_embd=16, n_head=2, n_positions=32, random_state=1)
    c = tiny_gpt2(tokenizer, n_layer=1, n_embd=16, n_head=2, n_positions=32, random_state=2)
    assert _same(_weights(a), _weights(b)) and not _same(_weights(a), _weights(c))
    assert not a.training
    config = a.config
    assert (config.n_layer, config.n_embd, config.n_positions, config.vocab_size) == (
        1, 16, 32, len(tokenizer))


def test_training_is_deterministic_and_leaves_the_global_rng_alone(small):
    texts, tokenizer = small

    def run(seed):
        model = tiny_gpt2(tokenizer, n_layer=1, n_embd=32, random_state=0)
        return train_causal_lm(model, tokenizer, texts, epochs=1, batch_size=16, lr=3e-3,
                               max_length=48, random_state=seed)

    state = torch.random.get_rng_state()
    first = run(0)
    assert torch.equal(torch.random.get_rng_state(), state)
    second, other = run(0), run(1)
    assert _same(_weights(first), _weights(second))
    assert not _same(_weights(first), _weights(other))  # the shuffling follows the seed
    np.testing.assert_array_equal(_loss(first, tokenizer, texts[:8]),
                                  _loss(second, tokenizer, texts[:8]))
    assert not first.training and all(w.grad is None for w in first.parameters())


def test_training_memorises_the_members(tweets_lm):
    # conftest's tweets_lm: 200 member tweets, 8 epochs, batch 16, lr 3e-3, 1,000 BPE tokens.
    lm = tweets_lm
    untrained = tiny_gpt2(lm["tokenizer"], random_state=0)
    before = _loss(untrained, lm["tokenizer"], lm["members"])
    members = _loss(lm["model"], lm["tokenizer"], lm["members"])
    held_out = _loss(lm["model"], lm["tokenizer"], lm["held_out"])
    assert members.mean() < before.mean() - 1.0  # ~6.9 (log 1000) down to ~5.7
    labels = np.r_[np.ones(len(members)), np.zeros(len(held_out))]
    auc = roc_auc(labels, -np.r_[members, held_out])
    assert auc > 0.6 and members.mean() < held_out.mean()  # measured: AUC 0.92


def test_gradient_ascent_forgets_on_a_new_model(tweets_lm):
    lm = tweets_lm
    model, tokenizer = lm["model"], lm["tokenizer"]
    forget, retain = lm["members"][:32], lm["members"][32:96]
    sets = {"forget": forget, "retain": retain, "held_out": lm["held_out"][:64]}
    weights = _weights(model)
    before = {k: _loss(model, tokenizer, v).mean() for k, v in sets.items()}
    ga = gradient_ascent_unlearn(model, tokenizer, forget, epochs=2, lr=1e-3, random_state=0)
    gd = gradient_ascent_unlearn(model, tokenizer, forget, epochs=2, lr=1e-3, retain=retain,
                                 random_state=0)
    assert ga is not model and gd is not model and _same(_weights(model), weights)
    after_ga = {k: _loss(ga, tokenizer, v).mean() for k, v in sets.items()}
    after_gd = {k: _loss(gd, tokenizer, v).mean() for k, v in sets.items()}
    # Measured: forget 5.72 -> 6.15 (GA), 5.93 (GradDiff); held-out 6.15 -> 6.27 (GA).
    assert after_ga["forget"] > before["forget"] + 0.3
    assert after_ga["forget"] - before["forget"] > after_ga["held_out"] - before["held_out"]
    assert after_gd["forget"] > before["forget"] + 0.1
    # GradDiff descends the retain loss at each step: the retain set suffers less.
    assert after_gd["retain"] - before["retain"] < after_ga["retain"] - before["retain"]
    again = gradient_ascent_unlearn(model, tokenizer, forget, epochs=2, lr=1e-3,
                                    random_state=0)
    assert _same(_weights(ga), _weights(again))
