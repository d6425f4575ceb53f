"""Exposure of secret-sharer canaries: exact enumeration against the distribution fit.

A tiny GPT-2 (2 layers, 64 dimensions, a 300-token byte-level BPE) is trained from scratch
(``privaudit.studies._tiny_lm``, 4 epochs, AdamW 3e-3) on 200 seeded pseudo-sentences plus
three canaries, ``"the secret code of <name> is {secret}"`` with one name each, repeated
1, 4 and 16 times, their secrets drawn from ``--digits``-digit numbers (10^digits
candidates). Each canary's exposure (Carlini et al. 2019) is measured two ways on the same
model:

- ``exact``: every candidate's log-perplexity (batched, 500 a pass), the rank, Definition 3;
- ``fit``: ``--samples`` candidates drawn at random and a skew-normal fitted to their
  log-perplexities (the paper's Section 4.3), ``-log2 F(Px(secret))``.

CPU time (``time.process_time``, torch on one thread) of each, per canary, over ``--seeds``
training runs (seeds 0, 1, ...: the canaries, the insertion and the training change).

    python benchmarks/bench_llm_exposure.py                 # 4 digits, 3 seeds
    python benchmarks/bench_llm_exposure.py --digits 3 --seeds 5
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from privaudit.llm._canaries import (
    SecretSpace,
    canary_exposures,
    insert_canaries,
    secret_sharer_canaries,
)
from privaudit.studies._tiny_lm import tiny_gpt2, train_causal_lm, train_tokenizer

_WORDS = ("privacy audit model member record text token leak score loss train test "
          "holdout forget retain attack memory sample data the a of and to in is was "
          "on for with as by at from it this that be are were").split()
FORMATS = [f"the secret code of {name} is {{secret}}" for name in ("alpha", "beta", "gamma")]
REPETITIONS = (1, 4, 16)


def corpus(n: int, seed: int = 0) -> list[str]:
    """The tests' pseudo-sentences: 3 to 24 words of a fixed vocabulary."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=int(rng.integers(3, 25)))).capitalize() + "."
            for _ in range(n)]


def one_run(seed: int, space: SecretSpace, samples: int) -> list[dict]:
    texts = corpus(200)
    tokenizer = train_tokenizer(texts, vocab_size=300)
    canaries = secret_sharer_canaries(FORMATS, space, REPETITIONS, random_state=seed)
    inserted = insert_canaries(texts, canaries, random_state=seed)
    start = time.process_time()
    model = tiny_gpt2(tokenizer, n_embd=64, random_state=seed)
    train_causal_lm(model, tokenizer, inserted.texts, epochs=4, batch_size=16, lr=3e-3,
                    random_state=seed)
    train_cpu = time.process_time() - start
    rows = []
    for canary in canaries:
        t0 = time.process_time()
        exact = canary_exposures(model, tokenizer, [canary], space, method="exact",
                                 batch_size=500).iloc[0]
        t1 = time.process_time()
        fit = canary_exposures(model, tokenizer, [canary], space, method="fit",
                               n_samples=samples, batch_size=500, random_state=seed).iloc[0]
        t2 = time.process_time()
        rows.append({"seed": seed, "repetitions": canary.repetitions,
                     "exact": exact["exposure"], "rank": exact["rank"],
                     "fit": fit["exposure"], "exact_cpu": t1 - t0, "fit_cpu": t2 - t1,
                     "train_cpu": train_cpu})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digits", type=int, default=4)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    space = SecretSpace.digits(args.digits)
    rows = [r for seed in range(args.seeds) for r in one_run(seed, space, args.samples)]
    print(f"|R| = {space.size:,} ({args.digits} digits), fit on {args.samples:,} samples, "
          f"max exposure log2|R| = {np.log2(space.size):.2f} bits")
    print("| seed | repetitions | exact exposure (rank) | fitted | exact CPU s | fit CPU s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['seed']} | {r['repetitions']} | {r['exact']:.2f} ({r['rank']:.0f}) | "
              f"{r['fit']:.2f} | {r['exact_cpu']:.2f} | {r['fit_cpu']:.2f} |")
    print("\nMedian over seeds:")
    print("| repetitions | exact exposure | fitted | max abs(fit - exact) | exact CPU s "
          "| fit CPU s |")
    print("|---|---|---|---|---|---|")
    for reps in REPETITIONS:
        sub = [r for r in rows if r["repetitions"] == reps]
        gap = max(abs(r["fit"] - r["exact"]) for r in sub)
        print(f"| {reps} | {np.median([r['exact'] for r in sub]):.2f} | "
              f"{np.median([r['fit'] for r in sub]):.2f} | {gap:.2f} | "
              f"{np.median([r['exact_cpu'] for r in sub]):.2f} | "
              f"{np.median([r['fit_cpu'] for r in sub]):.2f} |")
    print(f"\ntraining CPU s per run (median): {np.median([r['train_cpu'] for r in rows]):.1f}")
    rising = all(a["exact"] < b["exact"] for a, b in zip(rows[::3], rows[1::3], strict=True)) \
        and all(a["exact"] < b["exact"] for a, b in zip(rows[1::3], rows[2::3], strict=True))
    print(f"exact exposure rises 1 < 4 < 16 in every run: {rising}")


if __name__ == "__main__":
    main()
