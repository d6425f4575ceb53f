"""Multi-device scoring: tokens per second per device, over 1..N devices (one worker each).

Same model and texts (real tweets of ``dslabs::trump_tweets``, a 4-layer GPT-2), the
forward statistics (LOSS, Min-K, Min-K++, zlib), the shards of
:func:`privaudit.llm.score_texts` streamed to one worker per device
(:func:`privaudit.llm._sharded.device_workers`: each worker moves its model copy to its
device once). With CUDA, the devices are ``cuda:0`` .. ``cuda:{N-1}``; without, the CPU
given once per worker (``["cpu"]``, ``["cpu", "cpu"]``), each worker on one thread, so the
scaling measured is that of worker processes on the cores.

Each configuration is warmed up inside its own workers (start-up, imports and the model's
move are not in the time), then timed on the corpus: wall-clock seconds, and the CPU
seconds of this process and its workers (psutil), whose ratio to the tokens is the
throughput per busy core: on a machine shared with other work (the load average is
printed) the wall-clock scaling understates what free cores give, the per-core rate does
not. The statistics are checked equal bit
for bit between 1 and N workers in float32 (CPU) or within 1e-4 (GPUs: kernels may differ
between device models).

    python benchmarks/bench_llm_devices.py             # 3,000 tweets
    python benchmarks/bench_llm_devices.py --quick     # 800 tweets
    python benchmarks/bench_llm_devices.py --devices 4 # at most 4 devices/workers
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from privaudit.llm import score_texts
from privaudit.llm._sharded import BATCHES_PER_SHARD, device_workers, score_sharded
from privaudit.studies._tiny_lm import load_tweets, tiny_gpt2, train_tokenizer

NAMES = ("loss", "min-k", "min-k-plus-plus", "zlib")
SETTINGS = {"batch_size": 8, "max_length": 128}


def build(n_texts: int) -> tuple:
    texts = load_tweets(n_texts + 2000, random_state=0)["text"].tolist()
    tokenizer = train_tokenizer(texts[n_texts:], vocab_size=8000)
    model = tiny_gpt2(tokenizer, n_layer=4, n_embd=256, n_head=4, random_state=0)
    return model.eval(), tokenizer, texts[:n_texts]


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its live worker processes."""
    import psutil

    me = psutil.Process()
    return sum(sum(p.cpu_times()[:2]) for p in (me, *me.children(recursive=True)))


def score_on(model, tokenizer, texts, devices, warm_up) -> tuple[float, float, np.ndarray]:
    """Wall and CPU seconds to score ``texts``, one worker per device (after a warm-up)."""
    def run(batch, runner, pins):
        order = sorted(range(len(batch)), key=lambda i: -len(tokenizer(batch[i])["input_ids"]))
        return score_sharded(model, tokenizer, batch, order, NAMES, SETTINGS, executor=runner,
                             cache_dir=None, key="bench", progress=None,
                             score_texts=score_texts, pins=pins)

    with device_workers(devices) as (runner, pins):
        run(warm_up, runner, pins)
        start, cpu = time.perf_counter(), cpu_seconds()
        values = run(texts, runner, pins)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return seconds, cpu, np.column_stack([values[name] for name in NAMES])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--devices", type=int, default=None, help="at most this many")
    args = parser.parse_args()
    n_texts = 800 if args.quick else 3000
    model, tokenizer, texts = build(n_texts)
    cuda = torch.cuda.device_count()
    most = cuda or 2
    most = min(most, args.devices or most)
    tokens = sum(min(len(tokenizer(t)["input_ids"]), SETTINGS["max_length"]) for t in texts)
    warm_up = texts[: 2 * most * SETTINGS["batch_size"] * BATCHES_PER_SHARD]
    print(f"{n_texts} tweets ({tokens} tokens), GPT-2 with 4 layers, 256 dimensions, "
          f"{len(tokenizer)}-token vocabulary; shards of "
          f"{SETTINGS['batch_size'] * BATCHES_PER_SHARD} texts; "
          f"{'CUDA' if cuda else 'CPU, one thread per worker'}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rates, per_core, first = [], [], None
    for k in range(1, most + 1):
        devices = [f"cuda:{i}" for i in range(k)] if cuda else ["cpu"] * k
        seconds, cpu, values = score_on(model, tokenizer, texts, devices, warm_up)
        if first is None:
            first = values
        elif cuda:
            np.testing.assert_allclose(values, first, rtol=1e-4, atol=1e-6)
        else:
            np.testing.assert_array_equal(values, first)  # bit for bit in float32
        rates.append(tokens / seconds)
        per_core.append(tokens / cpu)
        print(f"{k} device(s) {devices}: {seconds:7.2f} s, {rates[-1]:7.0f} tokens/s, "
              f"{rates[-1] / k:7.0f} tokens/s per device, {rates[-1] / rates[0]:.2f}x one "
              f"device (ideal {k}x); {cpu:7.2f} CPU-s, {per_core[-1]:7.0f} tokens per "
              f"CPU-s ({per_core[-1] / per_core[0]:.2f}x one device's, ideal 1x)")


if __name__ == "__main__":
    main()
