"""Scoring a corpus in shards: one process against 2 local workers and Ray, and a resumed rerun.

Same model, same texts (real tweets of ``dslabs::trump_tweets``), same five statistics
(LOSS, Min-K, Min-K++, zlib, DC-PDD: one forward pass per batch):

- ``one process``: :func:`privaudit.llm.score_texts` with no executor, torch using every
  core of the machine (the named baseline: what a user gets without sharding), and the
  same with one torch thread (what each worker has);
- ``2 local workers``: the same call with ``n_jobs=2`` (shards of 8 batches streamed to two
  worker processes, one torch thread each, the model sent once per worker);
- ``Ray, 2 CPUs``: the same call on a local Ray instance (``executor="ray"``);
- ``rerun after a kill``: the shards are cached as they finish; one shard file in four is
  deleted and one damaged, and the rerun scores only those.

Values are checked equal between the methods (sharded runs bit for bit against each other,
within 1e-5 of the unsharded run, whose batches run under another thread count).

    python benchmarks/bench_llm_shards.py            # 6,000 tweets, a 4-layer GPT-2
    python benchmarks/bench_llm_shards.py --quick    # 1,500 tweets

A worker process starts by importing torch and transformers and receiving the model (a few
seconds here): sharding pays off once a corpus takes minutes, not on a toy one.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from privaudit.llm import score_texts
from privaudit.studies._tiny_lm import load_tweets, tiny_gpt2, train_tokenizer

NAMES = ("loss", "min-k", "min-k-plus-plus", "zlib", "dc-pdd")


def build(n_texts: int) -> tuple:
    texts = load_tweets(n_texts + 2000, random_state=0)["text"].tolist()
    tokenizer = train_tokenizer(texts[n_texts:], vocab_size=8000)
    model = tiny_gpt2(tokenizer, n_layer=4, n_embd=256, n_head=4, random_state=0)
    frequencies = np.bincount(
        np.concatenate([tokenizer(t)["input_ids"] for t in texts[n_texts:]]),
        minlength=len(tokenizer))
    return model.eval(), tokenizer, texts[:n_texts], frequencies


def timed(label: str, fn) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    frame = fn()
    seconds = time.perf_counter() - start
    print(f"{label:>28}: {seconds:7.2f} s")
    return seconds, frame[list(NAMES)].to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_texts = 1500 if args.quick else 6000
    model, tokenizer, texts, frequencies = build(n_texts)
    common = {"attacks": NAMES, "batch_size": 8, "token_frequencies": frequencies,
              "max_length": 128}
    score_texts(model, tokenizer, texts[:16], **common)  # warm-up: first-call costs
    print(f"{n_texts} tweets, GPT-2 with 4 layers, 256 dimensions, {len(tokenizer)}-token "
          f"vocabulary; shards of {8 * 8} texts")
    torch.set_num_threads(1)
    single, _ = timed("one process (1 thread)",
                      lambda: score_texts(model, tokenizer, texts, **common))
    torch.set_num_threads(2)
    one, plain = timed("one process (2 threads)",
                       lambda: score_texts(model, tokenizer, texts, **common))
    two, local = timed("2 local workers",
                       lambda: score_texts(model, tokenizer, texts, n_jobs=2, **common))
    np.testing.assert_allclose(local, plain, rtol=1e-5, atol=1e-6)
    import ray

    from privaudit.training._executors import RayExecutor

    ray_executor = RayExecutor(num_cpus=2, init_kwargs={"log_to_driver": False})
    ray_executor._ensure_ray()  # Ray's start-up is not part of the scoring time
    ray_seconds, remote = timed("Ray, 2 CPUs", lambda: score_texts(
        model, tokenizer, texts, executor=ray_executor, **common))
    np.testing.assert_array_equal(remote, local)
    with tempfile.TemporaryDirectory() as folder:
        first, _ = timed("2 workers, caching shards", lambda: score_texts(
            model, tokenizer, texts, n_jobs=2, cache_dir=folder, **common))
        shards = sorted(Path(folder).glob("shard-*.npz"))
        for path in shards[::4]:
            path.unlink()
        shards[1].write_bytes(b"damaged")
        lost = len(shards[::4]) + 1
        rerun, resumed = timed(f"rerun, {lost} of {len(shards)} shards lost", lambda: score_texts(
            model, tokenizer, texts, n_jobs=2, cache_dir=folder, **common))
        np.testing.assert_array_equal(resumed, local)
    ray.shutdown()
    print(f"2 local workers vs one process: {one / two:.2f}x "
          f"(vs one thread: {single / two:.2f}x, ideal 2x)")
    print(f"Ray (2 CPUs) vs one process: {one / ray_seconds:.2f}x")
    print(f"rerun vs first cached run: {rerun / first:.2f} of the time "
          f"({lost}/{len(shards)} = {lost / len(shards):.2f} of the shards)")


if __name__ == "__main__":
    main()
