"""Long texts (issue 23): the sliding window's CPU time and peak memory, 1x..8x the context.

A randomly initialised GPT-2 (2 layers, 64 dimensions, a 32,000-token vocabulary, a
256-position context; nothing downloaded) scores 8 random texts of ``m`` times its context
(LOSS, Min-K, Min-K++, zlib) with ``score_texts(stride=128)``, at batch 8. Beside it, the
one-pass way a longer context would need: the same model given ``m x 256`` positions
scoring each text in one pass (what a model whose context holds the text does). Each run is
a fresh process: its peak memory is the growth of the maximum resident set size over the
process once the model and texts are built; CPU seconds by ``time.process_time``.

    python benchmarks/bench_llm_long.py            # m = 1, 2, 4, 8
    python benchmarks/bench_llm_long.py --quick    # m = 1, 4
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import torch
import transformers

from privaudit.llm import score_texts

CONTEXT, STRIDE, VOCAB, N_TEXTS = 256, 128, 32000, 8
NAMES = ("loss", "min-k", "min-k-plus-plus", "zlib")


class IdsTokenizer:
    """What score_texts reads of a tokenizer when the texts are token ids."""

    pad_token_id, eos_token_id, padding_side = 0, 0, "right"

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def run(mode: str, times: int) -> dict:
    """One measurement: ``mode`` "window" (stride) or "one-pass" (a context of the text)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    positions = CONTEXT if mode == "window" else CONTEXT * times
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=positions, n_embd=64, n_layer=2, n_head=2)).eval()
    rng = np.random.default_rng(0)
    texts = [rng.integers(0, VOCAB, size=CONTEXT * times).tolist() for _ in range(N_TEXTS)]
    largest = [0]  # the largest logits block returned (the scoring's peak)
    model.lm_head.register_forward_hook(
        lambda _module, _inputs, out: largest.append(max(largest.pop(), out.numel())))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    kwargs = {"stride": STRIDE} if mode == "window" else {"max_length": positions}
    frame = score_texts(model, IdsTokenizer(), texts, attacks=NAMES, batch_size=N_TEXTS,
                        **kwargs)
    seconds = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"seconds": seconds, "peak_mib": peak / 1024, "logits_mib": largest[0] * 4 / 2**20,
            "tokens": N_TEXTS * CONTEXT * times, "loss": frame["loss"].tolist()}


def measure(mode: str, times: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", mode, str(times)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(multiples: tuple[int, ...]) -> None:
    print("| text length | windowed: CPU-s | tokens/CPU-s | peak +MiB | largest logits MiB "
          "| one pass: CPU-s | peak +MiB | largest logits MiB |")
    for times in multiples:
        window, one = measure("window", times), measure("one-pass", times)
        rate = window["tokens"] / window["seconds"]
        print(f"| {times}x ({times * CONTEXT} tokens) | {window['seconds']:.2f} | {rate:.0f} | "
              f"{window['peak_mib']:.0f} | {window['logits_mib']:.1f} | {one['seconds']:.2f} | "
              f"{one['peak_mib']:.0f} | {one['logits_mib']:.1f} |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(run(sys.argv[2], int(sys.argv[3]))))
        sys.exit(0)
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1x and 4x the context only")
    args = parser.parse_args()
    main((1, 4) if args.quick else (1, 2, 4, 8))
