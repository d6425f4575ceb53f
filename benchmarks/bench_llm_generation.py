"""Greedy generation for the extraction checks: batched with the KV cache vs one text at a time.

Same model, same prefixes, same continuations (checked equal token for token); the
continuations of 50 tokens after 32-token prefixes (Carlini et al. 2023's suffix length),
four ways:

- ``ours-b16``: :func:`privaudit.llm._extraction.greedy_continuations` at batch 16
  (left-padded, longest first, the KV cache, one cached forward step per token);
- ``ours-b1``: the same at batch 1: one text at a time, the baseline the issue names;
- ``generate-b1``: Hugging Face ``model.generate(do_sample=False)`` one text at a time (MUSE's
  VerbMem loop), stopping at EOS like MUSE does;
- ``generate-b16``: ``generate`` at batch 16 on left-padded prefixes with the attention mask.

Two models: the tests' tiny GPT-2 (2 layers, 32 dimensions, a 300-token BPE vocabulary) and
a larger random GPT-2 (4 layers, 128 dimensions, an 8,000-token vocabulary). CPU time
(``time.process_time``, one torch thread), the best of ``--repeat`` runs with the methods
interleaved in one process, so a loaded machine slows them alike.

    python benchmarks/bench_llm_generation.py            # both models
    python benchmarks/bench_llm_generation.py --quick    # the tiny model only
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
import transformers

from privaudit.llm._extraction import greedy_continuations

_WORDS = ("privacy audit model member record text token leak score loss train test "
          "holdout forget retain attack memory sample data the a of and to in is was "
          "on for with as by at from it this that be are were").split()

SIZES = {  # kind: (n_layer, n_embd, vocab, texts)
    "tiny": (2, 32, 300, 64),
    "larger": (4, 128, 8000, 64),
}
PREFIX, SUFFIX, BATCH = 32, 50, 16


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=int(rng.integers(40, 80)))).capitalize() + "."
            for _ in range(n)]


def build(kind: str) -> tuple:
    """(model, tokenizer, prefixes of 32 to 40 tokens) for ``kind``."""
    from tokenizers import ByteLevelBPETokenizer

    n_layer, n_embd, vocab, n = SIZES[kind]
    texts = corpus(n)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus(300, seed=1) + texts, vocab_size=vocab, min_frequency=1,
                            special_tokens=["<|endoftext|>", "<pad>"], show_progress=False)
    if bpe.get_vocab_size() < vocab:  # a small corpus: pad the vocabulary to its size
        bpe.add_tokens([f"<extra_{i}>" for i in range(vocab - bpe.get_vocab_size())])
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
        bos_token="<|endoftext|>", unk_token="<|endoftext|>", pad_token="<pad>")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=n_embd,
                                     n_layer=n_layer, n_head=2, bos_token_id=tok.bos_token_id,
                                     eos_token_id=tok.eos_token_id)
    rng = np.random.default_rng(2)
    # Prefixes of different lengths, so the batches are padded as a user's would be.
    prefixes = [tok(t)["input_ids"][:PREFIX + int(rng.integers(0, 9))] for t in texts]
    return transformers.GPT2LMHeadModel(config).eval(), tok, prefixes


def hf_generate(model, tok, prefixes, batch_size):
    """``model.generate`` greedy, left-padded batches with the attention mask."""
    out = []
    with torch.inference_mode():
        for start in range(0, len(prefixes), batch_size):
            rows = prefixes[start:start + batch_size]
            width = max(len(r) for r in rows)
            ids = torch.tensor([[tok.pad_token_id] * (width - len(r)) + r for r in rows])
            mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
            gen = model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                                 max_new_tokens=SUFFIX, pad_token_id=tok.pad_token_id)
            out += gen[:, width:].tolist()
    return out


def _call(method, model, tok, prefixes):
    name, _, size = method.partition("-b")
    if name == "ours":
        return greedy_continuations(model, tok, prefixes, SUFFIX, batch_size=int(size))
    return hf_generate(model, tok, prefixes, int(size))


METHODS = ("ours-b1", "ours-b16", "generate-b1", "generate-b16")


def _same_until_eos(a, b, eos):
    """Equal up to the first EOS of either (generate stops there, pads after)."""
    cut = min(a.index(eos) if eos in a else len(a), b.index(eos) if eos in b else len(b))
    return a[:cut] == b[:cut]


def measure(kind: str, repeat: int) -> None:
    model, tok, prefixes = build(kind)
    outputs = {m: _call(m, model, tok, prefixes) for m in METHODS}  # also the warm-up
    assert outputs["ours-b16"] == outputs["ours-b1"], "batched != one at a time"
    agree = {m: sum(_same_until_eos(a, b, tok.eos_token_id) for a, b in
                    zip(outputs[m], outputs["ours-b1"], strict=True)) for m in METHODS}
    best = dict.fromkeys(METHODS, float("inf"))
    for _ in range(repeat):
        for method in METHODS:
            start = time.process_time()
            _call(method, model, tok, prefixes)
            best[method] = min(best[method], time.process_time() - start)
    n_layer, n_embd, vocab, n = SIZES[kind]
    print(f"\n== {kind}: GPT-2 {n_layer} layers, {n_embd} dims, vocab {vocab}, {n} prefixes "
          f"of {PREFIX}-{PREFIX + 8} tokens, {SUFFIX} new tokens (CPU s, best of {repeat}, "
          "interleaved, 1 thread)")
    for method in METHODS:
        print(f"{method:>13}: {best[method]:7.3f} s  {best['ours-b1'] / best[method]:5.2f}x "
              f"vs ours-b1   same continuation as ours-b1: {agree[method]}/{n}")


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for kind in ("tiny",) if args.quick else ("tiny", "larger"):
        measure(kind, args.repeat)
