"""compat="mimir" and open-unlearning's GradNorm against transcriptions of the tools' code.

Each transcription follows the tool's own code line by line (MIMIR's ``get_probabilities``
and ``attacks/*.py``; open-unlearning's ``tokenwise_logprobs`` and ``GradNormAttack``), one
text at a time as MIMIR runs them, or on open-unlearning's right-padded collated batch; the
fast path runs batched, padded on either side.
"""

import math

import numpy as np
import pytest
import torch
from test_statistics import IGNORE, _ou_collate, _ou_labels

from conftest import corpus
from privaudit.llm import COMPAT_REVISIONS, compat_key, frequency_table, score_texts

TEXTS = [*corpus(6, seed=21), "Data.", "A leak"]


def _mimir_probabilities(model, ids, grad=False):
    """MIMIR's ``Model.get_probabilities`` on one context window: (target, all) log probs."""
    labels = torch.tensor([ids])
    with torch.set_grad_enabled(grad):
        logits = model(labels, labels=labels).logits
        log_probabilities = torch.log_softmax(logits[..., :-1, :].double(), dim=-1)
        target = log_probabilities[0].gather(-1, labels[0, 1:, None])[:, 0]
    return target, log_probabilities[0]


def _mimir(model, tokenizer, text, k, table, p):
    """MIMIR's MinKProb, MinKPlusPlus, GradNorm and DC_PDD attacks on one document."""
    ids = list(tokenizer(text)["input_ids"])
    target, all_probs = _mimir_probabilities(model, ids)
    probs = target.numpy()
    n_k = int(len(probs) * k)
    out = {"min-k": -np.mean(sorted(probs)[:n_k]) if n_k else math.nan}
    mu = (torch.exp(all_probs) * all_probs).sum(-1)
    sigma = (torch.exp(all_probs) * torch.square(all_probs)).sum(-1) - torch.square(mu)
    scores = (probs - mu.numpy()) / sigma.sqrt().numpy()
    out["min-k-plus-plus"] = -np.mean(sorted(scores)[:n_k]) if n_k else math.nan
    model.zero_grad()
    all_prob, _ = _mimir_probabilities(model, ids, grad=True)
    (-torch.mean(all_prob)).backward()
    norms = [w.grad.detach().double().norm(p) for w in model.parameters() if w.grad is not None]
    out["gradnorm"] = -float(torch.stack(norms).mean())
    model.zero_grad(set_to_none=True)
    with_eos, _ = _mimir_probabilities(model, [tokenizer.eos_token_id, *ids])
    x_pro = np.exp(with_eos.numpy())
    indexes, seen = [], []
    for i, token in enumerate(ids):
        if token not in seen:
            indexes.append(i)
            seen.append(token)
    alpha = x_pro[indexes] * np.log(1 / table[np.array(ids)[indexes]])
    alpha[alpha > 0.01] = 0.01
    out["dc-pdd"] = -np.mean(alpha)
    return out


MIMIR = ["min-k", "min-k-plus-plus", "gradnorm", "dc-pdd"]


@pytest.mark.parametrize(("side", "batch_size", "k", "p"),
                         [("right", 3, 0.2, 2), ("left", 4, 0.5, 1), ("left", 8, 0.3, math.inf)])
def test_mimir_mode_equals_mimir_code(tiny_model, tiny_tokenizer, side, batch_size, k, p):
    counts = np.random.default_rng(1).integers(0, 30, size=len(tiny_tokenizer))
    table = frequency_table(counts, len(tiny_tokenizer))
    slow = [_mimir(tiny_model, tiny_tokenizer, t, k, table, p) for t in TEXTS]
    tiny_tokenizer.padding_side = side
    try:
        with np.errstate(all="ignore"), pytest.warns(FutureWarning, match="min_k"):
            fast = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=[*MIMIR, "min_k"],
                               k=k, p=p, token_frequencies=counts, compat="mimir",
                               batch_size=batch_size)
    finally:
        tiny_tokenizer.padding_side = "right"
    for name in MIMIR:
        want = np.array([row[name] for row in slow])
        rtol = 1e-3 if name == "gradnorm" else 1e-5
        np.testing.assert_allclose(fast[name].to_numpy(), want, rtol=rtol, atol=1e-7,
                                   err_msg=name)
    # A text with int(n k) = 0 has MIMIR's empty mean: NaN here too, only there.
    empty = [int((len(tiny_tokenizer(t)["input_ids"]) - 1) * k) == 0 for t in TEXTS]
    np.testing.assert_array_equal(np.isnan(fast["min-k"].to_numpy()), empty)


def _ou_gradnorm(model, tokenizer, texts, p):
    """open-unlearning's ``GradNormAttack.compute_batch_values`` (evaluation mode)."""
    batch = _ou_collate([_ou_labels(tokenizer, t) for t in texts], tokenizer.pad_token_id)
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    log_probs = torch.log_softmax(logits.double(), dim=-1)[:, :-1, :]
    target = log_probs.gather(2, batch["input_ids"][:, 1:, None])[..., 0]
    out = []
    for i in range(len(texts)):
        actual = (batch["labels"][i] != IGNORE).nonzero(as_tuple=True)[0][:-1]
        start, end = actual[0].item(), actual[-1].item()
        loss = -torch.mean(target[i, start - 1:end])
        model.zero_grad()
        loss.backward(retain_graph=True)
        norms = [w.grad.detach().norm(p=p) for w in model.parameters() if w.grad is not None]
        out.append(float(torch.stack(norms).mean()))
    model.zero_grad(set_to_none=True)
    return np.array(out)


@pytest.mark.parametrize(("side", "p"), [("right", 2), ("left", 1), ("left", math.inf)])
def test_open_unlearning_gradnorm_drops_the_last_labelled_token(tiny_model, tiny_tokenizer,
                                                                side, p):
    texts = [*TEXTS[:5], (TEXTS[5][:40], TEXTS[0][:50]), ("Which?", " The forget set.")]
    slow = _ou_gradnorm(tiny_model, tiny_tokenizer, texts, p)
    tiny_tokenizer.padding_side = side
    try:
        fast = score_texts(tiny_model, tiny_tokenizer, texts, attacks=["gradnorm"], p=p,
                           compat="open-unlearning", batch_size=3)["gradnorm"].to_numpy()
        plain = score_texts(tiny_model, tiny_tokenizer, texts, attacks=["gradnorm"], p=p,
                            batch_size=3)["gradnorm"].to_numpy()
    finally:
        tiny_tokenizer.padding_side = "right"
    np.testing.assert_allclose(fast, slow, rtol=1e-3, atol=1e-8)
    assert np.all(np.abs(fast - plain) > 1e-6 * np.abs(plain))


def test_each_mode_has_a_revision_in_its_key():
    assert COMPAT_REVISIONS["open-unlearning"] >= 3  # GradNorm's tokens changed in 3
    assert compat_key("mimir") == f"mimir@{COMPAT_REVISIONS['mimir']}"


@pytest.mark.parametrize("compat", ["MIMIR", "open_unlearning", "", 1])
def test_an_unknown_mode_names_compat(tiny_model, tiny_tokenizer, compat):
    with pytest.raises(ValueError, match="compat"):
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], compat=compat)
