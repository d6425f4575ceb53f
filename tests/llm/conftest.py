"""Tiny causal language models for the LLM tests: built offline in a second, seeded.

A byte-level BPE tokenizer trained on a few hundred fixed sentences and a randomly
initialised two-layer GPT-2 on top. Nothing is downloaded.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two test workers on two cores: torch's own threads on top would oversubscribe them
    # (several times slower), so each worker runs torch on one thread.
    torch.set_num_threads(1)

_WORDS = ("privacy audit model member record text token leak score loss train test "
          "holdout forget retain attack memory sample data the a of and to in is was "
          "on for with as by at from it this that be are were").split()


def corpus(n: int = 300, seed: int = 0) -> list[str]:
    """``n`` pseudo-sentences of 3 to 24 words from a fixed vocabulary, seeded."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = rng.choice(_WORDS, size=int(rng.integers(3, 25)))
        out.append(" ".join(words).capitalize() + ".")
    return out


def make_tokenizer(texts: list[str], vocab_size: int = 300, pad: bool = True):
    """A byte-level BPE tokenizer trained on ``texts``, as a transformers fast tokenizer."""
    bpe = tokenizers.ByteLevelBPETokenizer()
    specials = ["<|endoftext|>", "<pad>"] if pad else ["<|endoftext|>"]
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1,
                            special_tokens=specials, show_progress=False)
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
        bos_token="<|endoftext|>", unk_token="<|endoftext|>",
        pad_token="<pad>" if pad else None,
    )
    return tok


def make_model(tokenizer, n_layer: int = 2, n_embd: int = 32, seed: int = 0):
    """A randomly initialised GPT-2 of ``n_layer`` layers over ``tokenizer``'s vocabulary."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=128, n_embd=n_embd, n_layer=n_layer,
        n_head=2, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = transformers.GPT2LMHeadModel(config)
    model.eval()
    return model


@pytest.fixture(scope="session")
def tiny_texts() -> list[str]:
    return corpus()


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_texts):
    return make_tokenizer(tiny_texts)


@pytest.fixture(scope="session")
def tiny_model(tiny_tokenizer):
    return make_model(tiny_tokenizer)


@pytest.fixture(scope="session")
def tweets_lm():
    """A tiny GPT-2 trained on 200 real tweets (members), with 200 held-out tweets."""
    from privaudit.studies._tiny_lm import load_tweets, tiny_gpt2, train_causal_lm, train_tokenizer

    frame = load_tweets(600, random_state=0)
    texts = frame["text"].tolist()
    members, held_out = texts[:200], texts[200:400]
    tokenizer = train_tokenizer(texts[:400], vocab_size=1000)
    model = tiny_gpt2(tokenizer, random_state=0)
    train_causal_lm(model, tokenizer, members, epochs=8, batch_size=16, lr=3e-3,
                    random_state=0)
    return {"model": model, "tokenizer": tokenizer, "members": members,
            "held_out": held_out, "frame": frame}


def pytest_configure(config):
    # Registered here (tests/llm owns the marker) so that --strict-markers accepts it.
    config.addinivalue_line("markers", "gpu: runs on CUDA when one is present (skipped, "
                                       "with the reason, when not)")
