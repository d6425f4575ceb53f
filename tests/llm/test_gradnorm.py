"""gradient_norms (GradNorm per text from one batched backward) against one backward per text.

The reference is open-unlearning's GradNorm written out plainly: for ONE text alone (no
padding), in evaluation mode, ``model.zero_grad()``, one backward pass of ``-mean(l_t)``
over its counted tokens, then the mean over the trainable parameter tensors of the p-norm
of ``.grad``.
"""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privaudit.llm._grad_norms as grad_norms_module
from conftest import corpus, make_model
from privaudit.llm import gradient_norms

TEXTS = corpus(7, seed=11)  # 3 to 24 words each: several padding widths in one batch
P_VALUES = [1, 2, math.inf]


def _encode(tokenizer, text, prompt_tokens=0):
    """Token ids of ``text`` and which of them count (the first ``prompt_tokens`` do not)."""
    ids = tokenizer(text)["input_ids"]
    return ids, [i >= prompt_tokens for i in range(len(ids))]


def _batch(tokenizer, rows, side="right"):
    """(input_ids, attention_mask, scored) for ``rows`` of (ids, labelled), padded by hand."""
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    labelled = torch.zeros((len(rows), width), dtype=torch.bool)
    for b, (ids, lab) in enumerate(rows):
        span = slice(width - len(ids), width) if side == "left" else slice(0, len(ids))
        input_ids[b, span] = torch.tensor(ids)
        attention[b, span] = 1
        labelled[b, span] = torch.tensor(lab)
    real = attention.bool()
    # Position t + 1 counts if its token is labelled and it is predicted from a real token.
    scored = labelled[:, 1:] & real[:, 1:] & real[:, :-1]
    return input_ids, attention, scored


def reference_gradnorm(model, ids, labelled, p):
    """One backward pass for one unpadded text, evaluation mode; NaN if nothing counts."""
    mask = torch.tensor(labelled[1:], dtype=torch.float32)
    if mask.sum() == 0:
        return math.nan
    model.zero_grad(set_to_none=True)
    x = torch.tensor([ids])
    log_p = torch.log_softmax(model(input_ids=x).logits[0, :-1].float(), dim=-1)
    token = log_p.gather(-1, x[0, 1:, None])[:, 0]
    (-(token * mask).sum() / mask.sum()).backward()
    norms = [0.0 if w.grad is None else
             torch.linalg.vector_norm(w.grad.double().flatten(), ord=p).item()
             for w in model.parameters() if w.requires_grad]
    model.zero_grad(set_to_none=True)
    return float(np.mean(norms))


@pytest.fixture(scope="module")
def model(tiny_tokenizer):
    return make_model(tiny_tokenizer, seed=4)


@pytest.fixture(scope="module")
def rows(tiny_tokenizer):
    return [_encode(tiny_tokenizer, t) for t in TEXTS]


@pytest.fixture(scope="module")
def slow(model, rows):
    """The reference for every text and p, computed once."""
    model.eval()
    return {p: np.array([reference_gradnorm(model, ids, lab, p) for ids, lab in rows])
            for p in P_VALUES}


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("p", P_VALUES)
def test_equals_one_backward_per_text(model, tiny_tokenizer, rows, slow, p, side):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the batched path, no fallback warning
        fast = gradient_norms(model, *_batch(tiny_tokenizer, rows, side), p=p)
    assert fast.dtype == np.float64 and fast.shape == (len(rows),)
    np.testing.assert_allclose(fast, slow[p], rtol=1e-3, atol=1e-8)


def test_p_norms_are_ordered_and_differ_between_texts(slow):
    # For any vector ||g||_inf <= ||g||_2 <= ||g||_1, so the means over tensors too.
    assert np.all(slow[math.inf] <= slow[2] * (1 + 1e-9))
    assert np.all(slow[2] <= slow[1] * (1 + 1e-9))
    assert np.ptp(slow[2]) > 0  # texts do get different scores


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(1, 4), min_size=1, max_size=7), st.sampled_from(["right", "left"]))
def test_invariant_to_how_the_texts_are_batched(model, tiny_tokenizer, rows, slow, sizes, side):
    out, start = [], 0
    while start < len(rows):
        size = sizes[len(out) % len(sizes)]
        out.append(gradient_norms(model, *_batch(tiny_tokenizer, rows[start:start + size],
                                                 side)))
        start += size
    np.testing.assert_allclose(np.concatenate(out), slow[2], rtol=1e-3, atol=1e-8)


def test_a_prompt_mask_counts_only_the_answer(model, tiny_tokenizer):
    # labels = -100 on the first 4 tokens: they condition the answer but are not scored.
    rows = [_encode(tiny_tokenizer, t, prompt_tokens=4) for t in TEXTS[:4]]
    fast = gradient_norms(model, *_batch(tiny_tokenizer, rows, "left"))
    slow = [reference_gradnorm(model, ids, lab, 2) for ids, lab in rows]
    np.testing.assert_allclose(fast, slow, rtol=1e-3, atol=1e-8)
    whole = gradient_norms(model, *_batch(tiny_tokenizer,
                                          [_encode(tiny_tokenizer, t) for t in TEXTS[:4]]))
    assert not np.allclose(fast, whole, rtol=1e-3)


def test_a_text_with_no_counted_token_is_nan(model, tiny_tokenizer, rows):
    one_token = (tiny_tokenizer("Privacy")["input_ids"][:1], [True])
    prompt_only = (rows[0][0], [False] * len(rows[0][0]))
    batch = [rows[1], one_token, prompt_only, rows[2]]
    fast = gradient_norms(model, *_batch(tiny_tokenizer, batch))
    assert np.isnan(fast[1]) and np.isnan(fast[2])
    np.testing.assert_allclose(fast[[0, 3]], gradient_norms(
        model, *_batch(tiny_tokenizer, [rows[1], rows[2]])), rtol=1e-5)


def test_mode_flags_and_grads_are_left_as_they_were(tiny_tokenizer, rows):
    model = make_model(tiny_tokenizer, seed=4)  # dropout 0.1 in every block
    model.train()
    model.transformer.h[1].eval()  # a mixed state must come back as it was
    model.transformer.wpe.weight.requires_grad_(False)  # frozen: not in the mean
    modes = {name: m.training for name, m in model.named_modules()}
    flags = {name: w.requires_grad for name, w in model.named_parameters()}
    batch = _batch(tiny_tokenizer, rows[:4])
    first = gradient_norms(model, *batch)
    assert {name: m.training for name, m in model.named_modules()} == modes
    assert {name: w.requires_grad for name, w in model.named_parameters()} == flags
    assert all(w.grad is None for w in model.parameters())
    # Evaluation mode inside: dropout off, so two calls agree and match the eval reference.
    np.testing.assert_array_equal(gradient_norms(model, *batch), first)
    model.eval()
    slow = [reference_gradnorm(model, ids, lab, 2) for ids, lab in rows[:4]]
    np.testing.assert_allclose(first, slow, rtol=1e-3, atol=1e-8)


def test_bfloat16_model_runs_and_matches_its_own_reference(model, tiny_tokenizer, rows):
    half = make_model(tiny_tokenizer, seed=4).to(torch.bfloat16)
    fast = gradient_norms(half, *_batch(tiny_tokenizer, rows))
    slow = [reference_gradnorm(half, ids, lab, 2) for ids, lab in rows]
    assert np.isfinite(fast).all()
    # bf16 keeps 8 bits of mantissa: loose agreement with its own reference and with fp32.
    np.testing.assert_allclose(fast, slow, rtol=5e-2)
    np.testing.assert_allclose(fast, gradient_norms(model, *_batch(tiny_tokenizer, rows)),
                               rtol=1e-1)
    assert all(w.dtype == torch.bfloat16 for w in half.parameters())


class _Scale(torch.nn.Module):
    """A layer type the per-sample recorder does not know: y = x * s."""

    def __init__(self, d):
        super().__init__()
        self.s = torch.nn.Parameter(torch.linspace(0.5, 1.5, d))

    def forward(self, x):
        return x * self.s


class _Output:
    def __init__(self, logits):
        self.logits = logits


class _UnknownLayerLM(torch.nn.Module):
    """A bag-of-prefix causal LM: embedding, cumulative mean, unknown layer, output."""

    def __init__(self, vocab, d=8):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(vocab, d)
        self.scale = _Scale(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, input_ids, attention_mask=None):
        h = self.embed(input_ids)
        h = h.cumsum(1) / torch.arange(1, h.shape[1] + 1)[:, None]
        return _Output(self.head(self.scale(h)))


def test_unknown_layers_fall_back_to_one_text_at_a_time_with_one_warning(
        tiny_tokenizer, rows, monkeypatch):
    monkeypatch.setattr(grad_norms_module, "_warned", [])
    lm = _UnknownLayerLM(len(tiny_tokenizer))
    batch = _batch(tiny_tokenizer, rows, "left")
    with pytest.warns(RuntimeWarning, match="one text at a time"):
        fast = gradient_norms(lm, *batch, p=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once only
        gradient_norms(lm, *batch, p=1)
    slow = [reference_gradnorm(lm, ids, lab, 1) for ids, lab in rows]
    np.testing.assert_allclose(fast, slow, rtol=1e-4)


def test_hand_worked_gradient_of_a_one_parameter_model():
    # logits = [w, 0] at every position, text "0 0 0" (two counted tokens, both id 0):
    # loss = -log softmax(w)_0 = log(1 + e^-w); d loss/dw = -1/(1 + e^w) = -1/2 at w = 0.
    class Bias(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, attention_mask=None):
            logits = torch.cat([self.w.expand(*input_ids.shape, 1),
                                torch.zeros(*input_ids.shape, 1)], dim=-1)
            return _Output(logits)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an unknown layer: the fallback
        out = gradient_norms(Bias(), torch.zeros((1, 3), dtype=torch.long),
                             torch.ones((1, 3), dtype=torch.long),
                             torch.ones((1, 2), dtype=torch.bool), p=2)
    assert out[0] == pytest.approx(0.5)


@pytest.mark.parametrize("p", [3, 0, "two"])
def test_a_bad_p_names_the_parameter(model, tiny_tokenizer, rows, p):
    with pytest.raises(ValueError, match="'p' parameter of gradient_norms"):
        gradient_norms(model, *_batch(tiny_tokenizer, rows[:2]), p=p)


@pytest.mark.parametrize("p", P_VALUES)
def test_a_small_memory_budget_cuts_large_gradients_into_row_blocks(
        model, tiny_tokenizer, rows, slow, p, monkeypatch):
    # A budget below one embedding row block forces every parameter (the tied V x d
    # weight included, for p = 1 and inf) through the row-block path; the norms combined
    # from the blocks are the reference's.
    import privaudit.llm._per_sample as per_sample

    monkeypatch.setattr(per_sample, "_BUDGET", 3 * 32)  # three rows of 32 at a time
    fast = gradient_norms(model, *_batch(tiny_tokenizer, rows), p=p)
    np.testing.assert_allclose(fast, slow[p], rtol=1e-3, atol=1e-8)
