"""GradNorm per text: privaudit's batched per-sample gradients against one backward per text.

Same model, same texts, same numbers (checked equal, rtol 1e-3); three ways to get each
text's gradient norm (mean over parameter tensors of the 2-norm of the gradient of its
mean token loss, evaluation mode):

- ``batched``: :func:`privaudit.llm.score_texts` with ``attacks=["gradnorm"]`` (texts
  tokenised once and sorted by length, as for every statistic), one forward and one
  backward per batch, per-text gradients rebuilt layer by layer from that pass
  (``llm/_per_sample.py``);
- ``per-text``: one forward and one backward per text (open-unlearning's GradNorm at batch
  size 1), the baseline;
- ``vmap``: ``torch.func.vmap(grad(...))`` over the texts of a batch with
  ``functional_call``. It cannot trace a Hugging Face GPT-2 given an attention mask
  (data-dependent control flow), so it runs right-padded texts WITHOUT one (exact for a
  causal model: a real token never attends to the padding after it); it holds every text's
  full gradient at once (the V x d embedding included), chunked by ``chunk_size``.

Two models: the tests' tiny GPT-2 (2 layers, 32 dimensions, a 300-token BPE vocabulary,
built as ``tests/llm/conftest.py`` does) and a larger random GPT-2 (4 layers, 128
dimensions, an 8,000-token vocabulary). Each method runs in a fresh process on one thread
(peak memory = growth of the maximum resident set size over the process after the model
is built and one warm-up call); times are the best of ``--repeat`` runs with the methods
interleaved in one process, so that a busy machine slows them alike.

    python benchmarks/bench_llm_gradnorm.py            # both models
    python benchmarks/bench_llm_gradnorm.py --quick    # the tiny model only
    python benchmarks/bench_llm_gradnorm.py --ratios   # issue 23: where batching pays

``--ratios`` (issue 23) times GradNorm at batch 8 on random-init GPT-2s from a 300- to a
32,000-token vocabulary (random token ids, no tokenizer, nothing downloaded): the batched
pass, one backward per text, and what :func:`privaudit.llm._grad_norms.batched_pays`
picks, interleaved in one process, best CPU time of ``--repeat``.
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

_WORDS = ("privacy audit model member record text token leak score loss train test "
          "holdout forget retain attack memory sample data the a of and to in is was "
          "on for with as by at from it this that be are were").split()

SIZES = {  # kind: (n_layer, n_embd, vocab, texts, words per text)
    "tiny": (2, 32, 300, 128, (3, 25)),
    "larger": (4, 128, 8000, 64, (20, 60)),
}


def corpus(n: int, words: tuple[int, int], seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=int(rng.integers(*words)))).capitalize() + "."
            for _ in range(n)]


def build(kind: str) -> tuple:
    """(model, tokenizer, texts) for ``kind``, as the tests' conftest builds them."""
    from tokenizers import ByteLevelBPETokenizer

    n_layer, n_embd, vocab, n, words = SIZES[kind]
    texts = corpus(n, words)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus(3000 if vocab > 1000 else 300, words, seed=1) + texts,
                            vocab_size=vocab, min_frequency=1,
                            special_tokens=["<|endoftext|>", "<pad>"], show_progress=False)
    if kind == "larger" and bpe.get_vocab_size() < vocab:  # a small corpus: pad the vocab
        bpe.add_tokens([f"<extra_{i}>" for i in range(vocab - bpe.get_vocab_size())])
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
        bos_token="<|endoftext|>", unk_token="<|endoftext|>", pad_token="<pad>")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=n_embd,
                                     n_layer=n_layer, n_head=2)
    return transformers.GPT2LMHeadModel(config).eval(), tok, texts


def _batches(tok, texts, batch_size):
    for start in range(0, len(texts), batch_size):
        enc = tok(texts[start:start + batch_size], return_tensors="pt", padding=True)
        mask = enc["attention_mask"]
        yield enc["input_ids"], mask, (mask[:, 1:] * mask[:, :-1]).bool()


def batched(model, tok, texts, batch_size):
    """What a user runs: score_texts(attacks=["gradnorm"]) (texts sorted by length)."""
    from privaudit.llm import score_texts

    frame = score_texts(model, tok, texts, attacks=["gradnorm"], p=2, batch_size=batch_size)
    return frame["gradnorm"].tolist()


def per_text(model, tok, texts):
    """One forward and one backward per text (open-unlearning's GradNorm, batch size 1)."""
    out = []
    params = [w for w in model.parameters() if w.requires_grad]
    for text in texts:
        ids = torch.tensor([tok(text)["input_ids"]])
        model.zero_grad(set_to_none=True)
        log_p = torch.log_softmax(model(input_ids=ids).logits[0, :-1], -1)
        (-log_p.gather(1, ids[0, 1:, None]).mean()).backward()
        out.append(float(np.mean([w.grad.double().norm().item() for w in params])))
    model.zero_grad(set_to_none=True)
    return out


def vmapped(model, tok, texts, batch_size, chunk_size=8):
    """torch.func: vmap(grad) over right-padded texts, no attention mask (see above)."""
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, ids, scored):
        logits = functional_call(model, p, (ids[None],)).logits[0, :-1]
        token = torch.log_softmax(logits, -1).gather(-1, ids[1:, None])[:, 0]
        return -(token * scored).sum() / scored.sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0), chunk_size=chunk_size)
    out = []
    for ids, _, scored in _batches(tok, texts, batch_size):
        grads = per_sample(params, ids, scored.float())
        norms = torch.stack([g.flatten(1).double().norm(dim=1) for g in grads.values()], 1)
        out += norms.mean(1).tolist()
    return out


METHODS = ("per-text", "batched-b8", "batched-b32", "vmap-b8")


def _call(method: str, model, tok, texts) -> list[float]:
    name, _, size = method.partition("-b")
    if name == "batched":
        return batched(model, tok, texts, int(size))
    if name == "vmap":
        return vmapped(model, tok, texts, int(size))
    return per_text(model, tok, texts)


def run_method(kind: str, method: str) -> dict:
    """One run of ``method`` (in a fresh process): its values and its peak memory."""
    model, tok, texts = build(kind)
    _call(method, model, tok, texts[:4])  # warm-up: first-call costs
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    values = _call(method, model, tok, texts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline
    return {"peak_mib": peak / 1024, "values": values}


def time_methods(kind: str, repeat: int) -> dict:
    """Best time of each method, the methods interleaved (fair on a shared machine)."""
    model, tok, texts = build(kind)
    best = dict.fromkeys(METHODS, float("inf"))
    for method in METHODS:
        _call(method, model, tok, texts[:4])  # warm-up
    for _ in range(repeat):
        for method in METHODS:
            start = time.perf_counter()
            _call(method, model, tok, texts)
            best[method] = min(best[method], time.perf_counter() - start)
    return best


def _worker(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", *args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(kind: str, repeat: int) -> None:
    runs = {m: _worker(kind, m) for m in METHODS}  # fresh process each: own peak memory
    seconds = _worker(kind, "time", str(repeat))
    base = runs["per-text"]
    for method in METHODS[1:]:
        np.testing.assert_allclose(runs[method]["values"], base["values"], rtol=1e-3)
    n_layer, n_embd, vocab, n, _ = SIZES[kind]
    print(f"\n== {kind}: GPT-2 {n_layer} layers, {n_embd} dims, vocab {vocab}, {n} texts "
          f"(best of {repeat}, interleaved, 1 thread)")
    for method, run in runs.items():
        ratio = seconds["per-text"] / seconds[method]
        print(f"{method:>12}: {seconds[method]:7.3f} s  {ratio:5.2f}x vs per-text   "
              f"peak +{run['peak_mib']:7.1f} MiB")


# --- issue 23: batched against one backward per text, where the rule chooses ----------

RATIO_MODELS = {  # name: (vocabulary, width, layers)
    "300-vocab 64-dim": (300, 64, 2),
    "8k-vocab 128-dim": (8000, 128, 4),
    "16k-vocab 128-dim": (16000, 128, 4),
    "32k-vocab 64-dim": (32000, 64, 2),
    "32k-vocab 128-dim": (32000, 128, 2),
}


class IdsTokenizer:
    """What score_texts reads of a tokenizer when the texts are token ids."""

    pad_token_id, eos_token_id, padding_side = 0, 0, "right"

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def random_model(vocab: int, width: int, layers: int, n_texts: int = 32, seed: int = 0):
    """A random-init GPT-2 (nothing downloaded) and ``n_texts`` random texts of 20-130 ids."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=vocab, n_positions=256, n_embd=width,
                                     n_layer=layers, n_head=2)
    rng = np.random.default_rng(seed)
    texts = [rng.integers(0, vocab, size=int(rng.integers(20, 130))).tolist()
             for _ in range(n_texts)]
    return transformers.GPT2LMHeadModel(config).eval(), texts


def ratios(repeat: int) -> None:
    """CPU seconds of GradNorm at batch 8: batched, one backward per text, and the rule."""
    import warnings

    from privaudit.llm import _grad_norms, score_texts

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    real = _grad_norms.batched_pays
    ways = {"batched": lambda *a: True, "loop": lambda *a: False, "rule": real}
    print("| model | output layer share | batched CPU-s | loop CPU-s | loop / batched "
          "| rule picks | loop / rule |")
    for name, (vocab, width, layers) in RATIO_MODELS.items():
        model, texts = random_model(vocab, width, layers)
        best = dict.fromkeys(ways, float("inf"))
        for _ in range(repeat):  # interleaved: a busy machine slows the ways alike
            for way, rule in ways.items():
                _grad_norms.batched_pays = rule
                start = time.process_time()
                score_texts(model, IdsTokenizer(), texts, attacks=["gradnorm"], batch_size=8)
                best[way] = min(best[way], time.process_time() - start)
        _grad_norms.batched_pays = real
        params = [w for w in model.parameters() if w.requires_grad]
        share = model.get_output_embeddings().weight.numel() / sum(w.numel() for w in params)
        pick = "batched" if real(model, params) else "loop"
        print(f"| {name} | {share:.0%} | {best['batched']:.2f} | {best['loop']:.2f} | "
              f"{best['loop'] / best['batched']:.2f}x | {pick} | "
              f"{best['loop'] / best['rule']:.2f}x |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        import warnings

        warnings.filterwarnings("ignore")  # vmap's "performance drop" note on SDPA backward
        torch.set_num_threads(1)
        kind, what = sys.argv[2], sys.argv[3]
        result = (time_methods(kind, int(sys.argv[4])) if what == "time"
                  else run_method(kind, what))
        print(json.dumps(result, default=float))
        sys.exit(0)
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ratios", action="store_true",
                        help="batched vs one backward per text at batch 8 (issue 23)")
    args = parser.parse_args()
    if args.ratios:
        ratios(args.repeat)
        sys.exit(0)
    for kind in ("tiny",) if args.quick else ("tiny", "larger"):
        report(kind, args.repeat)
