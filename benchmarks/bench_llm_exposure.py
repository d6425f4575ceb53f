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

Then the one-run epsilon lower bound from canaries (``canary_epsilon``, Steinke et al.
2023, delta 1e-5, 95%): ``--canaries`` canaries, each with its own three-word key
("the code of <w1 w2 w3> is {secret}", 4-digit secrets), each included with probability
1/2 and repeated ``--canary-repetitions`` times, one non-private training (6 epochs), the
score minus each secret's mean token loss given its prefix. The privacy unit the bound
speaks of is a canary's group of copies.

Last, designed canaries (Panda et al. 2025, their rare-token design as
``rare_token_space`` builds it) against secrets of frequent words: ``--designed``
canaries of each kind (4 symbols from 10: the 10 rarest tokens of the corpus, or the 10
most frequent words), each with its own key, included with probability 1/2 and repeated
4 times, one training of both kinds together (4 epochs); the AUC and the TPR at the lowest
FPR of each kind's scores.

    python benchmarks/bench_llm_exposure.py                 # 4 digits, 3 seeds
    python benchmarks/bench_llm_exposure.py --digits 3 --seeds 5 --canaries 0
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np
import torch

from privaudit.llm._canaries import (
    SecretSpace,
    canary_epsilon,
    canary_exposures,
    insert_canaries,
    rare_token_space,
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


def epsilon_run(m: int, repetitions: int) -> None:
    texts = corpus(200)
    tokenizer = train_tokenizer(texts, vocab_size=300)
    formats = [f"the code of {key} is {{secret}}" for key in _keys(m)]
    canaries = secret_sharer_canaries(formats, SecretSpace.digits(4), [repetitions] * m,
                                      random_state=0)

    def train(train_texts: list[str], *, random_state: int):
        model = tiny_gpt2(tokenizer, n_embd=64, random_state=random_state)
        return train_causal_lm(model, tokenizer, train_texts, epochs=6, batch_size=16,
                               lr=3e-3, random_state=random_state)

    start = time.process_time()
    result = canary_epsilon(train, texts, canaries, tokenizer=tokenizer, delta=1e-5,
                            random_state=0)
    ins, outs = result.scores[result.included], result.scores[~result.included]
    auc = float(np.mean(ins[:, None] > outs[None, :]))
    print(f"\none-run epsilon: {m} canaries x {repetitions} copies, "
          f"{int(result.included.sum())} included: epsilon >= {result.bound.epsilon:.2f} "
          f"({result.bound.n_correct}/{result.bound.n_guesses} guesses correct), "
          f"AUC of the scores {auc:.3f}, {time.process_time() - start:.1f} CPU-s "
          "(training included)")


def _keys(n: int) -> list[str]:
    """``n`` distinct three-word keys, seeded."""
    rng = np.random.default_rng(0)
    keys: set[str] = set()
    while len(keys) < n:
        keys.add(" ".join(rng.choice(_WORDS, 3)))
    return sorted(keys)


def designed_run(m: int) -> None:
    texts = corpus(200)
    tokenizer = train_tokenizer(texts, vocab_size=300)
    words = [w for w, _ in Counter(" ".join(texts).lower().split()).most_common(10)]
    spaces = {"rare tokens (Panda et al.)": rare_token_space(tokenizer, texts, length=4,
                                                              pool_size=10),
              "frequent words": SecretSpace(tuple(words), 4, " ")}
    formats = [f"the code of {key} is {{secret}}" for key in _keys(2 * m)]
    canaries = []
    for i, space in enumerate(spaces.values()):
        canaries += secret_sharer_canaries(formats[i * m:(i + 1) * m], space, [4] * m,
                                           random_state=i)

    def train(train_texts: list[str], *, random_state: int):
        model = tiny_gpt2(tokenizer, n_embd=64, random_state=random_state)
        return train_causal_lm(model, tokenizer, train_texts, epochs=4, batch_size=16,
                               lr=3e-3, random_state=random_state)

    result = canary_epsilon(train, texts, canaries, tokenizer=tokenizer, delta=1e-5,
                            random_state=0)
    print(f"\ndesigned canaries: {m} of each kind x 4 copies, one training")
    print("| secrets | alphabet | AUC | TPR at FPR 0 |")
    print("|---|---|---|---|")
    for i, (name, space) in enumerate(spaces.items()):
        part = slice(i * m, (i + 1) * m)
        scores, included = result.scores[part], result.included[part]
        ins, outs = scores[included], scores[~included]
        auc = float(np.mean(ins[:, None] > outs[None, :]))
        tpr = float(np.mean(ins > outs.max()))
        print(f"| {name} | {' '.join(repr(a) for a in space.alphabet[:4])} ... | "
              f"{auc:.3f} | {tpr:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digits", type=int, default=4)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--canaries", type=int, default=128, help="0: no epsilon run")
    parser.add_argument("--canary-repetitions", type=int, default=8)
    parser.add_argument("--designed", type=int, default=64, help="0: no designed run")
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
    if args.canaries:
        epsilon_run(args.canaries, args.canary_repetitions)
    if args.designed:
        designed_run(args.designed)


if __name__ == "__main__":
    main()
