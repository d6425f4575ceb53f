"""LLM membership statistics: privaudit's one pass against the guide's way and a per-text loop.

Same model, same texts, same statistics (LOSS, Min-K, Min-K++, zlib, reference):

- ``privaudit``: :func:`privaudit.llm.score_texts`, one forward pass of the target per batch
  for all five (plus one of the reference model): 2 passes;
- ``guide``: the MIA metrics guide's way (open-unlearning's attack classes): one batched
  sweep per statistic, Min-K++ with two passes (log-probabilities, then the full
  distributions kept per text), Reference with two (target, reference): 7 passes;
- ``per-text``: the tests' one-text-at-a-time reference (one forward per text and
  statistic family).

Then GradNorm: one vectorised backward per batch against one backward per text.

Two models: a tiny GPT-2 like the demo's (2 layers, 64 dimensions, a 1,000-token BPE
vocabulary) and a randomly initialised
GPT-2-sized model with a large vocabulary (forward-dominated, like real LLMs). Peak memory
is measured in a fresh process per method (the growth of the maximum resident set size
over the process after loading the model).

    python benchmarks/bench_llm_mia.py            # both models
    python benchmarks/bench_llm_mia.py --quick    # the tiny model only
    python benchmarks/bench_llm_mia.py --batches  # issue 23: throughput vs batch size
    python benchmarks/bench_llm_mia.py --precision  # issue 23: bfloat16 and 2 workers
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import resource
import subprocess
import sys
import time
import zlib

import numpy as np
import torch
import transformers

from privaudit.llm import score_texts

FIVE = ("loss", "min-k", "min-k-plus-plus", "zlib", "reference")
#: Timed runs per method after the warm-up; the fastest counts.
REPEATS = 3


def corpus(n: int, seed: int = 0) -> list[str]:
    words = ("privacy audit model member record text token leak score loss train test "
             "holdout forget retain attack memory sample data the a of and to in is was "
             "on for with as by at from it this that be are were").split()
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, size=int(rng.integers(20, 60)))) for _ in range(n)]


def build(kind: str) -> tuple:
    """(model, reference model, tokenizer, texts) for ``kind`` in {"tiny", "large-vocab"}."""
    from tokenizers import ByteLevelBPETokenizer

    texts = corpus(64 if kind == "large-vocab" else 256)
    vocab = 8000 if kind == "large-vocab" else 1000
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus(2000, seed=1) + texts, vocab_size=vocab, min_frequency=1,
                            special_tokens=["<|endoftext|>", "<pad>"], show_progress=False)
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>", pad_token="<pad>")
    size = ({"n_layer": 4, "n_embd": 256, "n_head": 4} if kind == "large-vocab"
            else {"n_layer": 2, "n_embd": 64, "n_head": 2})  # the demo's tiny GPT-2
    # The large model gets GPT-2's 50,257-token vocabulary (its tokenizer uses the first
    # 8,000 ids): the forward pass is dominated by the output layer, as in real LLMs.
    n_vocab = 50257 if kind == "large-vocab" else len(tok)
    config = transformers.GPT2Config(vocab_size=n_vocab, n_positions=256, **size)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    reference = transformers.GPT2LMHeadModel(config).eval()
    return model, reference, tok, texts


# --- the guide's way: one sweep per attack ----------------------------------------------

def _batches(tok, texts, batch_size):
    for start in range(0, len(texts), batch_size):
        enc = tok(texts[start:start + batch_size], return_tensors="pt", padding=True)
        yield enc["input_ids"], enc["attention_mask"]


def _token_log_probs(model, ids, mask):
    logits = model(input_ids=ids, attention_mask=mask).logits
    log_probs = torch.log_softmax(logits, dim=-1)[:, :-1, :]
    target = log_probs.gather(2, ids[:, 1:, None])[..., 0]
    return log_probs, target, mask[:, 1:].bool()


def guide_way(model, reference, tok, texts, batch_size=8, k=0.2):
    """open-unlearning's attack classes, each with its own sweep of the data."""
    out = {name: [] for name in FIVE}
    with torch.no_grad():
        for ids, mask in _batches(tok, texts, batch_size):            # LOSS
            _, t, m = _token_log_probs(model, ids, mask)
            out["loss"] += (-(t * m).sum(1) / m.sum(1)).tolist()
        for ids, mask in _batches(tok, texts, batch_size):            # Min-K
            _, t, m = _token_log_probs(model, ids, mask)
            for row, keep in zip(t, m, strict=True):
                lp = np.sort(row[keep].numpy())
                out["min-k"].append(-lp[:max(1, int(len(lp) * k))].mean())
        for ids, mask in _batches(tok, texts, batch_size):            # Min-K++: 2 passes
            _, t, m = _token_log_probs(model, ids, mask)
            full, _, _ = _token_log_probs(model, ids, mask)           # T x V kept per text
            per_text = [full[i][m[i]] for i in range(len(ids))]
            for row, keep, dist in zip(t, m, per_text, strict=True):
                p = dist.exp()
                mu = (p * dist).sum(-1)
                sigma = ((p * dist.square()).sum(-1) - mu.square()).clamp_min(1e-6).sqrt()
                z = np.sort(((row[keep] - mu) / sigma).numpy())
                out["min-k-plus-plus"].append(-z[:max(1, int(len(z) * k))].mean())
        for i, (ids, mask) in enumerate(_batches(tok, texts, batch_size)):   # ZLIB
            _, t, m = _token_log_probs(model, ids, mask)
            loss = -(t * m).sum(1) / m.sum(1)
            chunk = texts[i * batch_size:(i + 1) * batch_size]
            out["zlib"] += [float(v) / len(zlib.compress(s.encode())) for v, s in
                            zip(loss, chunk, strict=True)]
        for ids, mask in _batches(tok, texts, batch_size):            # Reference: 2 passes
            _, t, m = _token_log_probs(model, ids, mask)
            _, r, _ = _token_log_probs(reference, ids, mask)
            out["reference"] += ((-(t * m).sum(1) + (r * m).sum(1)) / m.sum(1)).tolist()
    return out


def per_text_way(model, reference, tok, texts, k=0.2):
    """One text at a time: the tests' reference, without padding."""
    out = {name: [] for name in FIVE}
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tok(text)["input_ids"]])
            log_p = torch.log_softmax(model(input_ids=ids).logits[0, :-1].double(), -1)
            lt = log_p.gather(1, ids[0, 1:, None])[:, 0]
            p = log_p.exp()
            mu = (p * log_p).sum(-1)
            sigma = (p * (log_p - mu[:, None]).square()).sum(-1).clamp_min(1e-6).sqrt()
            n = max(1, math.floor(k * len(lt)))
            out["loss"].append(-lt.mean().item())
            out["min-k"].append(-lt.sort().values[:n].mean().item())
            out["min-k-plus-plus"].append(-((lt - mu) / sigma).sort().values[:n].mean().item())
            out["zlib"].append(out["loss"][-1] / len(zlib.compress(text.encode())))
            ref = torch.log_softmax(reference(input_ids=ids).logits[0, :-1].double(), -1)
            out["reference"].append(out["loss"][-1] + ref.gather(1, ids[0, 1:, None]).mean().item())
    return out


def tests_reference(model, reference, tok, texts):
    """The slow reference of tests/llm/reference_stats.py, written from the definitions."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
    import reference_stats

    rows = [reference_stats.statistics(model, tok, t, reference=reference) for t in texts]
    return {name: [r[name] for r in rows] for name in FIVE}


def gradnorm_batched(model, tok, texts, batch_size=8):
    """What a user runs: score_texts(attacks=["gradnorm"]), batches of texts sorted by length."""
    frame = score_texts(model, tok, texts, attacks=["gradnorm"], batch_size=batch_size)
    return frame["gradnorm"].tolist()


def gradnorm_per_text(model, tok, texts):
    """One backward pass per text (as open-unlearning's GradNorm at batch size 1)."""
    out = []
    for text in texts:
        ids = torch.tensor([tok(text)["input_ids"]])
        model.zero_grad(set_to_none=True)
        log_p = torch.log_softmax(model(input_ids=ids).logits[0, :-1], -1)
        (-log_p.gather(1, ids[0, 1:, None]).mean()).backward()
        norms = [w.grad.double().norm().item() for w in model.parameters()]
        out.append(float(np.mean(norms)))
    model.zero_grad(set_to_none=True)
    return out


def run_method(kind: str, method: str) -> dict:
    model, reference, tok, texts = build(kind)
    _call(method, model, reference, tok, texts[:4])  # warm-up: first-call costs
    baseline_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(REPEATS):  # the best of a few runs: the tiny model's times are noisy
        start = time.perf_counter()
        values = _call(method, model, reference, tok, texts)
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline_rss
    return {"seconds": min(times), "peak_mib": peak / 1024, "values": values}


def _call(method: str, model, reference, tok, texts) -> dict:
    if method == "privaudit":
        frame = score_texts(model, tok, texts, attacks=FIVE, reference_model=reference,
                            batch_size=8)
        values = {c: frame[c].tolist() for c in FIVE}
    elif method == "guide":
        values = guide_way(model, reference, tok, texts)
    elif method == "per-text":
        values = per_text_way(model, reference, tok, texts)
    elif method == "tests-reference":
        values = tests_reference(model, reference, tok, texts)
    elif method == "gradnorm-batched":
        values = {"gradnorm": gradnorm_batched(model, tok, texts)}
    else:  # gradnorm per text
        values = {"gradnorm": gradnorm_per_text(model, tok, texts)}
    return values


def measure(kind: str, method: str) -> dict:
    """``run_method`` in a fresh process, so that each peak memory is its own."""
    code = subprocess.run([sys.executable, __file__, "--worker", kind, method], check=True,
                          capture_output=True, text=True).stdout
    return json.loads(code.strip().splitlines()[-1])


def report(kind: str) -> None:
    torch.set_num_threads(1)
    methods = ["privaudit", "guide", "per-text", "gradnorm-batched", "gradnorm-per-text"]
    if kind == "tiny":  # the tests' reference loops over the vocabulary in Python
        methods.append("tests-reference")
    runs = {m: measure(kind, m) for m in methods}
    ours = runs["privaudit"]
    for other in methods[1:3] + methods[5:]:
        for name in FIVE:
            np.testing.assert_allclose(ours["values"][name], runs[other]["values"][name],
                                       rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(runs["gradnorm-batched"]["values"]["gradnorm"],
                               runs["gradnorm-per-text"]["values"]["gradnorm"], rtol=1e-3)
    print(f"\n== {kind}")
    for name, run in runs.items():
        print(f"{name:>18}: {run['seconds']:7.2f} s   peak +{run['peak_mib']:7.1f} MiB")
    print(f"speed-up vs the guide's way (7 passes vs 2): "
          f"{runs['guide']['seconds'] / ours['seconds']:.2f}x")
    print(f"speed-up vs a per-text loop (vectorised per text): "
          f"{runs['per-text']['seconds'] / ours['seconds']:.2f}x")
    if "tests-reference" in runs:
        print(f"speed-up vs the per-text reference of the tests: "
              f"{runs['tests-reference']['seconds'] / ours['seconds']:.2f}x")
    print(f"GradNorm batched vs one backward per text: "
          f"{runs['gradnorm-per-text']['seconds'] / runs['gradnorm-batched']['seconds']:.2f}x")
    print(f"peak memory, guide / privaudit: "
          f"{runs['guide']['peak_mib'] / max(ours['peak_mib'], 1e-9):.2f}x")


# --- issue 23: forward throughput against the batch size ---------------------------


class IdsTokenizer:
    """What score_texts reads of a tokenizer when the texts are token ids."""

    pad_token_id, eos_token_id, padding_side = 0, 0, "right"

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def batch_throughput(repeat: int = 2, n_texts: int = 48) -> None:
    """Texts per CPU-second of the forward statistics at batch 1, 8 and 16 (32k vocabulary).

    A random-init GPT-2 (2 layers, 64 dimensions, 32,000 tokens; nothing downloaded) on
    random texts of 20-130 ids; LOSS, Min-K, Min-K++ and zlib; best of ``repeat``,
    interleaved. Beside it, the same code with the logits read in one 64 MiB block per
    batch (the block size before issue 23), to show what the 1 MiB blocks change.
    """
    from privaudit.llm import _token_stats

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=32000, n_positions=256, n_embd=64, n_layer=2, n_head=2)).eval()
    rng = np.random.default_rng(0)
    texts = [rng.integers(0, 32000, size=int(rng.integers(20, 130))).tolist()
             for _ in range(n_texts)]
    blocks = {"1 MiB blocks": _token_stats._CHUNK_ELEMENTS, "64 MiB block": 1 << 24}
    best = {(b, size): float("inf") for b in (1, 8, 16) for size in blocks}
    for _ in range(repeat):
        for batch in (1, 8, 16):
            for size, elements in blocks.items():
                _token_stats._CHUNK_ELEMENTS = elements
                start = time.process_time()
                score_texts(model, IdsTokenizer(), texts, batch_size=batch,
                            attacks=("loss", "min-k", "min-k-plus-plus", "zlib"))
                best[batch, size] = min(best[batch, size], time.process_time() - start)
    _token_stats._CHUNK_ELEMENTS = blocks["1 MiB blocks"]
    print("| logits read in | batch 1 texts/CPU-s | batch 8 | batch 16 | 8 vs 1 | 16 vs 1 |")
    for size in blocks:
        rate = {b: n_texts / best[b, size] for b in (1, 8, 16)}
        print(f"| {size} | {rate[1]:.1f} | {rate[8]:.1f} | {rate[16]:.1f} | "
              f"{rate[8] / rate[1]:.2f}x | {rate[16] / rate[1]:.2f}x |", flush=True)


# --- issue 23: float32 against bfloat16, one worker against two --------------------------


def precision(n_texts: int = 64) -> None:
    """The largest differences of every statistic: bfloat16 vs float32, 2 vs 1 workers.

    The demo's tiny GPT-2 (and a second one as the reference model) on ``n_texts`` texts;
    DC-PDD with ``dc_pdd_a=1`` (no term capped). bfloat16: copies of both models cast by
    ``dtype="bfloat16"``, statistics accumulated in float32. Workers: float32, the local
    executor with 1 and with 2 worker processes.
    """
    from privaudit.training import LocalExecutor

    torch.set_num_threads(1)
    model, reference, tok, texts = build("tiny")
    texts = texts[:n_texts]
    names = (*FIVE, "dc-pdd", "gradnorm")
    kwargs = {"attacks": names, "token_frequencies": np.arange(len(tok)), "dc_pdd_a": 1.0}
    full = score_texts(model, tok, texts, reference_model=reference, dtype="float32",
                       **kwargs)
    low = score_texts(copy.deepcopy(model), tok, texts, dtype="bfloat16",
                      reference_model=copy.deepcopy(reference), **kwargs)
    one = score_texts(model, tok, texts, reference_model=reference,
                      executor=LocalExecutor(n_jobs=1), **kwargs)
    with LocalExecutor(n_jobs=2) as executor:
        two = score_texts(model, tok, texts, reference_model=reference, executor=executor,
                          **kwargs)
    print(f"| statistic ({n_texts} texts) | bfloat16 vs float32: max abs diff | max rel diff "
          "| 2 vs 1 workers (float32): max abs diff |")
    for name in names:
        gap = np.abs(low[name].to_numpy() - full[name].to_numpy())
        rel = gap / np.maximum(np.abs(full[name].to_numpy()), 1e-12)
        workers = np.abs(two[name].to_numpy() - one[name].to_numpy()).max()
        print(f"| {name} | {gap.max():.2e} | {rel.max():.2e} | {workers:.1e} |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        torch.set_num_threads(1)
        result = run_method(sys.argv[2], sys.argv[3])
        print(json.dumps(result, default=float))
        sys.exit(0)
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batches", action="store_true",
                        help="forward throughput at batch 1, 8, 16 on a 32k vocabulary")
    parser.add_argument("--precision", action="store_true",
                        help="max differences: bfloat16 vs float32, 2 vs 1 workers")
    args = parser.parse_args()
    if args.batches:
        batch_throughput()
        sys.exit(0)
    if args.precision:
        precision()
        sys.exit(0)
    for kind in ("tiny",) if args.quick else ("tiny", "large-vocab"):
        report(kind)
