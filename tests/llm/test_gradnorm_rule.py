"""GradNorm's choice between the batched pass and one backward per text (issue 23)."""

import warnings

import numpy as np
import pytest
import torch
import transformers

from conftest import corpus
from privaudit.llm import _grad_norms, score_texts
from privaudit.llm._grad_norms import LOOP_ABOVE_OUTPUT_SHARE, batched_pays

TEXTS = corpus(5, seed=51)


def _gpt2(vocab, width, seed=0):
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=vocab, n_positions=64, n_embd=width,
                                     n_layer=2, n_head=2)
    return transformers.GPT2LMHeadModel(config).eval()


def _share(model):
    head = model.get_output_embeddings().weight.numel()
    return head / sum(w.numel() for w in model.parameters() if w.requires_grad)


@pytest.mark.parametrize(("vocab", "width", "batched"), [
    (300, 64, True), (300, 32, True), (8000, 16, False), (32000, 64, False)])
def test_batched_while_the_output_layer_is_at_most_the_share_measured(vocab, width,
                                                                       batched):
    model = _gpt2(vocab, width)
    params = [w for w in model.parameters() if w.requires_grad]
    assert batched_pays(model, params) is batched
    assert (_share(model) <= LOOP_ABOVE_OUTPUT_SHARE) is batched


def test_a_frozen_output_layer_is_not_counted(tiny_tokenizer):
    model = _gpt2(32000, 16)
    model.get_output_embeddings().weight.requires_grad_(False)  # tied: the embedding too
    params = [w for w in model.parameters() if w.requires_grad]
    assert batched_pays(model, params)


@pytest.mark.parametrize(("vocab", "width"), [(300, 32), (4000, 16)])
def test_either_way_the_numbers_are_one_backward_per_text(tiny_tokenizer, vocab, width,
                                                          monkeypatch):
    model = _gpt2(vocab, width)
    ids = [[t % vocab for t in tiny_tokenizer(text)["input_ids"]] for text in TEXTS]
    recorded = []
    real = _grad_norms._recorded
    monkeypatch.setattr(_grad_norms, "_recorded",
                        lambda *a, **k: (recorded.append(True), real(*a, **k))[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the loop chosen here never warns
        fast = score_texts(model, tiny_tokenizer, ids, attacks=["gradnorm"],
                           batch_size=3)["gradnorm"].to_numpy()
    assert bool(recorded) is batched_pays(model, list(model.parameters()))
    slow = []
    for row in ids:
        model.zero_grad(set_to_none=True)
        x = torch.tensor([row])
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        slow.append(np.mean([w.grad.double().norm().item() for w in model.parameters()]))
    model.zero_grad(set_to_none=True)
    np.testing.assert_allclose(fast, slow, rtol=1e-4)
