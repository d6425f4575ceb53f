"""The one-pass kernels of privaudit.llm, and the compat mode against open-unlearning's code.

The kernels (``token_stats``, ``batch_statistics``) are checked on hand-built logits:
chunked over positions or not, in half precision, DC-PDD's first occurrences and clip by
hand. ``compat="open-unlearning"`` is checked against a line-by-line transcription of
open-unlearning's own evaluation code (locuslab/open-unlearning, ``src/evals/metrics/
utils.py`` and ``src/evals/metrics/mia/*.py`` at commit d3d7cf9), run on batches labelled
and collated as its data pipeline does (``preprocess_pretraining_instance`` for a plain
text: no loss on index 0; ``preprocess_chat_instance`` for a question and answer: no loss
on the prompt; right padding with labels -100).
"""

import math
import zlib

import numpy as np
import pytest
import torch

from conftest import corpus
from privaudit.exceptions import DegenerateInputWarning
from privaudit.llm import _token_stats, score_texts
from privaudit.llm._token_stats import batch_statistics, token_stats

IGNORE = -100
TEXTS = corpus(10, seed=11)


def _slow(logits, ids, mask, k, frequencies=None, a=0.01):
    """Every kernel statistic of one row, in float64 python loops over positions and vocab."""
    vocab = logits.shape[-1]
    rows = []
    for j in range(ids.shape[0] - 1):
        if not mask[j]:
            continue
        z = [float(v) for v in logits[j].double()]
        top = max(z)
        norm = top + math.log(sum(math.exp(v - top) for v in z))
        log_p = [v - norm for v in z]
        mu = sum(math.exp(lp) * lp for lp in log_p)
        var = sum(math.exp(lp) * (lp - mu) ** 2 for lp in log_p)
        target = int(ids[j + 1])
        rows.append((log_p[target], mu, math.sqrt(max(var, 1e-6)), target))
    assert vocab > 0
    if not rows:
        return dict.fromkeys(("loss", "min-k", "min-k-plus-plus", "dc-pdd"), math.nan)
    n_k = max(1, math.floor(k * len(rows)))
    ls = sorted(r[0] for r in rows)
    zs = sorted((r[0] - r[1]) / r[2] for r in rows)
    out = {"loss": -sum(r[0] for r in rows) / len(rows),
           "min-k": -sum(ls[:n_k]) / n_k, "min-k-plus-plus": -sum(zs[:n_k]) / n_k}
    if frequencies is not None:
        seen, terms = set(), []
        for l_t, _, _, token in rows:
            if token not in seen:
                seen.add(token)
                terms.append(min(math.exp(l_t) * math.log(1 / frequencies[token]), a))
        out["dc-pdd"] = -sum(terms) / len(terms)
    return out


def _random_batch(seed, batch=3, length=9, vocab=7, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    logits = (3 * torch.randn(batch, length, vocab, generator=gen)).to(dtype)
    ids = torch.randint(0, vocab, (batch, length), generator=gen)
    mask = torch.rand(batch, length - 1, generator=gen) < 0.8
    mask[-1] = False                     # a text with nothing scored
    return logits, ids, mask


NAMES = ("loss", "min-k", "min-k-plus-plus", "dc-pdd")


@pytest.mark.parametrize("chunk", [1 << 24, 7 * 3, 1])
def test_kernels_equal_python_loops_chunked_or_not(monkeypatch, chunk):
    # chunk elements / (batch x vocab) positions at once: all, one, or one per step.
    monkeypatch.setattr(_token_stats, "_CHUNK_ELEMENTS", chunk)
    logits, ids, mask = _random_batch(0)
    freq = np.random.default_rng(0).dirichlet(np.ones(7))
    stats = token_stats(logits, ids, mask, moments=True)
    with np.errstate(invalid="ignore"):
        fast = batch_statistics(stats, NAMES, k=0.3, frequencies=freq, dc_pdd_a=0.2)
    for b in range(3):
        slow = _slow(logits[b], ids[b], mask[b], 0.3, freq, a=0.2)
        for name in NAMES:
            np.testing.assert_allclose(fast[name][b], slow[name], rtol=1e-5, equal_nan=True)
    assert all(np.isnan(fast[name][-1]) for name in NAMES)
    assert all(v.dtype == np.float64 for v in fast.values())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_kernels_read_half_precision_logits_in_float32(dtype):
    logits, ids, mask = _random_batch(1, dtype=dtype)
    stats = token_stats(logits, ids, mask, moments=True)
    assert stats.log_prob.dtype == torch.float32 and stats.mu.dtype == torch.float32
    fast = batch_statistics(stats, NAMES[:3], k=0.5)
    for b in range(2):  # the same half-precision logits, read in float64 by the loops
        slow = _slow(logits[b], ids[b], mask[b], 0.5)
        for name in NAMES[:3]:
            np.testing.assert_allclose(fast[name][b], slow[name], rtol=1e-5)


def test_dc_pdd_by_hand():
    # p = (1/2, 1/4, 1/4) everywhere; text 0 1 1 2 1: scored tokens 1, 1, 2, 1 whose
    # first occurrences are token 1 (position 2) and token 2 (position 4).
    logits = torch.tensor([math.log(2), 0.0, 0.0]).expand(1, 5, 3)
    ids = torch.tensor([[0, 1, 1, 2, 1]])
    mask = torch.ones(1, 4, dtype=torch.bool)
    freq = np.array([0.5, 0.4, 0.1])
    stats = token_stats(logits, ids, mask, moments=False)
    term_1, term_2 = 0.25 * math.log(1 / 0.4), 0.25 * math.log(1 / 0.1)  # 0.229, 0.576
    out = batch_statistics(stats, ("dc-pdd",), k=0.2, frequencies=freq, dc_pdd_a=1.0)
    assert out["dc-pdd"][0] == pytest.approx(-(term_1 + term_2) / 2)
    clipped = batch_statistics(stats, ("dc-pdd",), k=0.2, frequencies=freq, dc_pdd_a=0.3)
    assert clipped["dc-pdd"][0] == pytest.approx(-(term_1 + 0.3) / 2)  # min(term, a)


def test_min_k_counts_floor_k_n_with_at_least_one():
    # Scored l_t = log(1/4) twice then log(1/2) three times (n = 5).
    logits = torch.tensor([math.log(2), 0.0, 0.0]).expand(1, 6, 3)
    ids = torch.tensor([[0, 1, 2, 0, 0, 0]])
    stats = token_stats(logits, ids, torch.ones(1, 5, dtype=torch.bool), moments=False)
    l1, l0 = math.log(0.25), math.log(0.5)
    for k, expected in [(0.1, -l1), (0.2, -l1), (0.6, -(2 * l1 + l0) / 3), (1.0, None)]:
        got = batch_statistics(stats, ("min-k", "loss"), k=k)
        want = got["loss"][0] if expected is None else expected  # k = 1: Min-K is LOSS
        assert got["min-k"][0] == pytest.approx(want)


# --- open-unlearning, transcribed ------------------------------------------------------


def _ou_labels(tokenizer, text):
    """input_ids and labels as open-unlearning's preprocessing makes them."""
    if isinstance(text, str):  # preprocess_pretraining_instance with an empty prefix
        ids = list(tokenizer(text, add_special_tokens=True)["input_ids"])
        matched = max(1, len(tokenizer("", add_special_tokens=True)["input_ids"]))
        return ids, [IGNORE] * matched + ids[matched:]
    prompt = list(tokenizer(text[0])["input_ids"])  # preprocess_chat_instance's labels
    answer = list(tokenizer(text[1], add_special_tokens=False)["input_ids"])
    return prompt + answer, [IGNORE] * len(prompt) + answer


def _ou_collate(rows, pad_id):
    """DataCollatorForSupervisedDataset, right padding."""
    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad_id)
    labels = torch.full((len(rows), width), IGNORE)
    for b, (row, lab) in enumerate(rows):
        ids[b, :len(row)], labels[b, :len(lab)] = torch.tensor(row), torch.tensor(lab)
    return {"input_ids": ids, "attention_mask": ids.ne(pad_id), "labels": labels}


def _ou_scores(model, tokenizer, texts, k):
    """open-unlearning's LOSS, Min-K, Min-K++ and zlib attacks, as its code computes them.

    In float64: its float32 one-pass variance loses digits on near-uniform distributions
    (the token handling, not that rounding, is what compat reproduces).
    """
    batch = _ou_collate([_ou_labels(tokenizer, t) for t in texts], tokenizer.pad_token_id)
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"],
                       attention_mask=batch["attention_mask"]).logits.double()
    labels = batch["labels"]
    # evaluate_probability
    ce = torch.nn.CrossEntropyLoss(ignore_index=IGNORE, reduction="none")
    losses = ce(logits[..., :-1, :].transpose(-1, -2), labels[..., 1:]).sum(-1)
    avg_loss = (losses / (labels != IGNORE).sum(-1)).numpy()
    # tokenwise_logprobs / tokenwise_vocab_logprobs
    log_probs = torch.log_softmax(logits, dim=-1)[:, :-1, :]
    target = log_probs.gather(2, batch["input_ids"][:, 1:, None])[..., 0]
    out = {"loss": [], "min-k": [], "min-k-plus-plus": [], "zlib": []}
    for i in range(len(texts)):
        actual = (labels[i] != IGNORE).nonzero(as_tuple=True)[0][:-1]
        if actual.numel() == 0:
            lp, vocab_lp = torch.tensor([]), torch.zeros(0, logits.shape[-1])
        else:
            start, end = actual[0].item(), actual[-1].item()
            lp, vocab_lp = target[i, start - 1:end], log_probs[i, start - 1:end]
        # MinKProbAttack.compute_score
        vals = lp.numpy()
        num_k = max(1, int(len(vals) * k))
        out["min-k"].append(0 if vals.size == 0 else -np.mean(np.sort(vals)[:num_k]))
        # MinKPlusPlusAttack.compute_score
        mu = (vocab_lp.exp() * vocab_lp).sum(-1)
        sigma = torch.clamp((vocab_lp.exp() * vocab_lp.square()).sum(-1) - mu.square(), min=1e-6)
        z = (vals - mu.numpy()) / sigma.sqrt().numpy()
        out["min-k-plus-plus"].append(0 if len(vals) == 0 else -np.mean(sorted(z)[:num_k]))
        # LOSSAttack and ZLIBAttack (extract_target_texts_from_processed_data)
        out["loss"].append(avg_loss[i])
        kept = labels[i][labels[i] != IGNORE].tolist()
        text = tokenizer.decode(kept, skip_special_tokens=True)
        out["zlib"].append(avg_loss[i] / len(zlib.compress(text.encode("utf-8"))))
    return {name: np.array(values, dtype=np.float64) for name, values in out.items()}


COMPAT = ["loss", "min-k", "min-k-plus-plus", "zlib"]


@pytest.mark.parametrize("side", ["right", "left"])
def test_compat_equals_open_unlearning_code(tiny_model, tiny_tokenizer, side):
    texts = [*TEXTS[:5], (TEXTS[5][:60], TEXTS[6][:70]), (TEXTS[7][:50], TEXTS[8][:90])]
    slow = _ou_scores(tiny_model, tiny_tokenizer, texts, k=0.3)
    tiny_tokenizer.padding_side = side
    try:
        fast = score_texts(tiny_model, tiny_tokenizer, texts, attacks=COMPAT, k=0.3,
                           compat="open-unlearning", batch_size=3)
    finally:
        tiny_tokenizer.padding_side = "right"
    for name in COMPAT:
        np.testing.assert_allclose(fast[name].to_numpy(), slow[name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)


def test_compat_changes_min_k_not_loss_on_open_unlearning_data(tiny_model, tiny_tokenizer):
    # open-unlearning never puts a loss on index 0, so its LOSS averages the same tokens
    # as the definition; its Min-K and Min-K++ leave out the last labelled token.
    plain = score_texts(tiny_model, tiny_tokenizer, TEXTS[:4], attacks=COMPAT[:2], k=1.0)
    ou = score_texts(tiny_model, tiny_tokenizer, TEXTS[:4], attacks=COMPAT[:2], k=1.0,
                     compat="open-unlearning")
    np.testing.assert_allclose(ou["loss"], plain["loss"], rtol=1e-6)
    assert not np.allclose(ou["min-k"], plain["min-k"])  # k = 1: Min-K is a mean of n - 1


def test_compat_two_token_text_has_no_min_k_token(tiny_model, tiny_tokenizer):
    two = next(t for t in ("Aa", "The a", "to in", "a.") if
               len(tiny_tokenizer(t)["input_ids"]) == 2)
    with pytest.warns(DegenerateInputWarning):
        frame = score_texts(tiny_model, tiny_tokenizer, [two, ""], attacks=COMPAT[:3],
                            compat="open-unlearning")
    # One scored token, which is the last labelled one: open-unlearning scores it 0, we NaN.
    assert np.isfinite(frame["loss"][0]) and np.isnan(frame["min-k"][0])
    assert frame.iloc[1].isna().all()


def test_compat_revision_enters_keys_and_leaves_default_keys_alone():
    from privaudit.llm import COMPAT_REVISIONS, compat_key

    assert compat_key(None) is None  # keys of runs without compat are unchanged
    assert compat_key("open-unlearning") == f"open-unlearning@{COMPAT_REVISIONS['open-unlearning']}"
    assert COMPAT_REVISIONS["open-unlearning"] >= 2  # first-token labelling changed in 2
