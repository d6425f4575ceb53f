"""score_texts against the one-text-at-a-time reference, and its contract."""

import math
import warnings

import numpy as np
import pytest
import reference_stats as ref
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import corpus, make_model, make_tokenizer
from privaudit.exceptions import DegenerateInputWarning
from privaudit.llm import frequency_table, score_texts
from privaudit.metrics import roc_auc
from privaudit.results import AttackResult

FORWARD = ["loss", "min-k", "min-k-plus-plus", "zlib"]
TEXTS = corpus(12, seed=5)


def _close(fast, slow, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(fast, slow, rtol=rtol, atol=atol)


def _reference_frame(model, tokenizer, texts, names, **kwargs):
    rows = [ref.statistics(model, tokenizer, t, **kwargs) for t in texts]
    return {name: np.array([r[name] for r in rows]) for name in names}


@pytest.fixture(scope="module")
def slow_forward(tiny_model, tiny_tokenizer):
    """The reference's forward statistics of TEXTS (computed once: it is slow)."""
    return _reference_frame(tiny_model, tiny_tokenizer, TEXTS, FORWARD)


@pytest.mark.parametrize("batch_size", [1, 3, 8])
@pytest.mark.parametrize("side", ["right", "left"])
def test_forward_statistics_equal_the_reference(tiny_model, tiny_tokenizer, slow_forward,
                                                batch_size, side):
    tokenizer = tiny_tokenizer
    tokenizer.padding_side = side
    try:
        fast = score_texts(tiny_model, tokenizer, TEXTS, attacks=FORWARD,
                           batch_size=batch_size)
    finally:
        tokenizer.padding_side = "right"
    for name in FORWARD:
        _close(fast[name].to_numpy(), slow_forward[name])
    assert list(fast.columns) == FORWARD and fast.dtypes.eq(np.float64).all()


def test_dc_pdd_reference_and_recall_equal_the_reference(tiny_model, tiny_tokenizer):
    counts = np.random.default_rng(0).integers(0, 50, size=len(tiny_tokenizer))
    other = make_model(tiny_tokenizer, seed=3)
    prefix = "The holdout text was on the forget data."
    fast = score_texts(tiny_model, tiny_tokenizer, TEXTS,
                       attacks=["dc-pdd", "reference", "recall"], token_frequencies=counts,
                       reference_model=other, recall_prefix=prefix, batch_size=5)
    table = frequency_table(counts, len(tiny_tokenizer))
    slow = _reference_frame(tiny_model, tiny_tokenizer, TEXTS, ["dc-pdd", "reference", "recall"],
                            frequencies=table, reference=other, prefix_text=prefix)
    for name in ("dc-pdd", "reference", "recall"):
        _close(fast[name].to_numpy(), slow[name])
    # DC-PDD's frequencies are add-one smoothed counts: no token has frequency 0.
    assert table.min() > 0 and table.sum() == pytest.approx(1.0)


def test_prompt_answer_pairs_score_only_the_answer(tiny_model, tiny_tokenizer):
    pairs = [(TEXTS[i][:80], TEXTS[i + 1][:80]) for i in range(0, 10, 2)]
    fast = score_texts(tiny_model, tiny_tokenizer, pairs, attacks=FORWARD, batch_size=2)
    slow = _reference_frame(tiny_model, tiny_tokenizer, pairs, FORWARD)
    for name in FORWARD:
        _close(fast[name].to_numpy(), slow[name])
    alone = score_texts(tiny_model, tiny_tokenizer, [p[1] for p in pairs], attacks=["loss"])
    assert not np.allclose(fast["loss"], alone["loss"])  # the prompt conditions the answer


def test_open_unlearning_token_handling(tiny_model, tiny_tokenizer):
    texts = [*TEXTS[:6], (TEXTS[6][:80], TEXTS[7][:80])]
    fast = score_texts(tiny_model, tiny_tokenizer, texts, attacks=FORWARD[:3],
                       compat="open-unlearning", batch_size=4)
    slow = _reference_frame(tiny_model, tiny_tokenizer, texts, FORWARD[:3],
                            compat="open-unlearning")
    for name in FORWARD[:3]:
        _close(fast[name].to_numpy(), slow[name])
    plain = score_texts(tiny_model, tiny_tokenizer, TEXTS[:6], attacks=["loss"])
    # open-unlearning never labels a plain text's first token: the same n - 1 tokens.
    _close(fast["loss"].to_numpy()[:6], plain["loss"].to_numpy())
    # An answer after an empty prompt is labelled from index 0, which LOSS then counts.
    empty = score_texts(tiny_model, tiny_tokenizer, [("", TEXTS[8])], attacks=["loss"],
                        compat="open-unlearning")
    alone = score_texts(tiny_model, tiny_tokenizer, [TEXTS[8]], attacks=["loss"])
    n = len(tiny_tokenizer(TEXTS[8])["input_ids"])
    _close(empty["loss"].to_numpy(), alone["loss"].to_numpy() * (n - 1) / n)


def test_tokenizer_without_pad_token_is_not_modified(tiny_model, tiny_texts):
    tokenizer = make_tokenizer(tiny_texts, pad=False)
    model = make_model(tokenizer)
    assert tokenizer.pad_token is None
    fast = score_texts(model, tokenizer, TEXTS, attacks=["loss", "min-k"], batch_size=4)
    slow = _reference_frame(model, tokenizer, TEXTS, ["loss", "min-k"])
    _close(fast["loss"].to_numpy(), slow["loss"])
    assert tokenizer.pad_token is None


def test_bf16_model(tiny_tokenizer):
    model = make_model(tiny_tokenizer, seed=2).to(torch.bfloat16)
    fast = score_texts(model, tiny_tokenizer, TEXTS, attacks=FORWARD, batch_size=4)
    assert np.isfinite(fast.to_numpy()).all() and fast.dtypes.eq(np.float64).all()
    slow = _reference_frame(model, tiny_tokenizer, TEXTS, FORWARD)
    for name in FORWARD:  # bf16 matmuls differ with the batch's shape: a loose match
        _close(fast[name].to_numpy(), slow[name], rtol=2e-2, atol=2e-2)


def test_empty_and_one_token_texts_are_nan_with_a_warning(tiny_model, tiny_tokenizer):
    one = next(t for t in ("A", "a", ".") if len(tiny_tokenizer(t)["input_ids"]) == 1)
    with pytest.warns(DegenerateInputWarning, match="2 of 4 texts have no scored token"):
        frame = score_texts(tiny_model, tiny_tokenizer, [TEXTS[0], "", one, TEXTS[1]],
                            attacks=FORWARD)
    assert frame.iloc[[1, 2]].isna().all().all() and frame.iloc[[0, 3]].notna().all().all()


def test_model_mode_is_restored(tiny_tokenizer):
    model = make_model(tiny_tokenizer)
    model.train()
    score_texts(model, tiny_tokenizer, TEXTS[:3], attacks=["loss", "gradnorm"])
    assert model.training
    assert all(w.grad is None for w in model.parameters())


def test_sign_convention_gives_the_same_auc(tiny_model, tiny_tokenizer):
    frame = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=["loss"])
    labels = np.r_[np.ones(6), np.zeros(6)]
    result = AttackResult(labels=labels, scores=-frame["loss"].to_numpy())
    view = result.scores_as("open-unlearning")  # 0 = forget, higher = less member
    assert roc_auc(view.labels, view.scores) == pytest.approx(roc_auc(labels, result.scores))
    np.testing.assert_array_equal(view.scores, frame["loss"].to_numpy())


class _Fixed(torch.nn.Module):
    """A 'language model' whose logits are given: the same row at every position."""

    def __init__(self, logits):
        super().__init__()
        self.row = torch.nn.Parameter(torch.tensor(logits, dtype=torch.float32))

    def get_output_embeddings(self):
        return torch.nn.Linear(1, self.row.numel(), bias=False)

    def forward(self, input_ids, attention_mask=None):
        batch, length = input_ids.shape
        return (self.row.expand(batch, length, -1),)


class _Ids:
    """A tokenizer whose texts are already token ids ("0 2 1")."""

    pad_token_id, eos_token_id, padding_side = 0, 0, "right"

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [int(t) for t in text.split()]}


def test_hand_worked_min_k_and_min_k_plus_plus():
    # p = (1/2, 1/4, 1/4) at every position; the text "0 1 2 0 0" scores tokens 1, 2, 0, 0.
    model, tok = _Fixed([math.log(2), 0.0, 0.0]), _Ids()
    frame = score_texts(model, tok, ["0 1 2 0 0"], attacks=["loss", "min-k", "min-k-plus-plus"],
                        k=0.5)
    l1, l0 = math.log(0.25), math.log(0.5)
    assert frame["loss"][0] == pytest.approx(-(2 * l1 + 2 * l0) / 4)
    assert frame["min-k"][0] == pytest.approx(-l1)  # the 2 smallest of 4: both log(1/4)
    mu = 0.5 * l0 + 0.5 * l1
    sigma = math.sqrt(0.5 * l0**2 + 0.5 * l1**2 - mu**2)
    assert frame["min-k-plus-plus"][0] == pytest.approx(-(l1 - mu) / sigma)
    assert (l1 - mu) / sigma == pytest.approx(-1.0)  # two equally likely values: z = -1, +1


@pytest.fixture(scope="module")
def base_frame(tiny_model, tiny_tokenizer):
    return score_texts(tiny_model, tiny_tokenizer, TEXTS[:8], attacks=FORWARD, batch_size=8)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 7), st.permutations(range(8)))
def test_invariant_to_batch_size_and_order(tiny_model, tiny_tokenizer, base_frame, batch_size,
                                           order):
    shuffled = score_texts(tiny_model, tiny_tokenizer, [TEXTS[i] for i in order],
                           attacks=FORWARD, batch_size=batch_size)
    _close(shuffled.to_numpy(), base_frame.to_numpy()[list(order)])


@pytest.mark.parametrize("p", [2, math.inf])  # every p and padding side: test_gradnorm.py
def test_gradnorm_equals_one_backward_per_text(tiny_tokenizer, p):
    model = make_model(tiny_tokenizer, seed=4)
    texts = [*TEXTS[:5], (TEXTS[5][:80], TEXTS[6][:80])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the vectorised backward works
        fast = score_texts(model, tiny_tokenizer, texts, attacks=["gradnorm"], p=p,
                           batch_size=4)
    slow = [ref.gradnorm(model, tiny_tokenizer, t, p=p) for t in texts]
    _close(fast["gradnorm"].to_numpy(), slow, rtol=1e-3, atol=1e-7)


def test_forward_statistics_read_from_the_gradnorm_pass_are_unchanged(
        tiny_model, tiny_tokenizer, base_frame):
    # With gradnorm asked for, the other statistics come from its forward pass (one pass
    # per batch instead of two): the same numbers as a pass of their own.
    both = score_texts(tiny_model, tiny_tokenizer, TEXTS[:8], attacks=[*FORWARD, "gradnorm"],
                       batch_size=8)
    _close(both[list(FORWARD)].to_numpy(), base_frame.to_numpy())
    assert np.isfinite(both["gradnorm"]).all()


@pytest.mark.parametrize("kwargs,message", [
    ({"attacks": ["loss", "min_kk"]}, "attacks"),
    ({"attacks": []}, "attacks"),
    ({"k": 0}, "'k'"),
    ({"p": 3}, "'p'"),
    ({"batch_size": 0}, "batch_size"),
    ({"compat": "MIMIR"}, "compat"),
    ({"attacks": ["dc-pdd"]}, "token_frequencies"),
    ({"attacks": ["reference"]}, "reference_model"),
    ({"attacks": ["recall"]}, "recall_prefix"),
    ({"attacks": ["recall"], "recall_prefix": ""}, "recall_prefix"),
    ({"attacks": ["dc-pdd"], "token_frequencies": [-1]}, "token_frequencies"),
])
def test_bad_arguments_name_the_parameter(tiny_model, tiny_tokenizer, kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], **kwargs)


def test_bad_texts_and_a_reference_with_another_vocabulary(tiny_model, tiny_tokenizer):
    with pytest.raises(ValueError, match="texts"):
        score_texts(tiny_model, tiny_tokenizer, [])
    with pytest.raises(TypeError, match="position 1"):
        score_texts(tiny_model, tiny_tokenizer, ["ok", 3])
    small = make_tokenizer(TEXTS, vocab_size=280)
    with pytest.raises(ValueError, match="vocabulary"):
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], attacks=["reference"],
                    reference_model=make_model(small))


def test_texts_are_cut_at_the_model_context(tiny_model, tiny_tokenizer):
    long = " ".join(TEXTS)  # far more than the tiny model's 128 positions
    assert len(tiny_tokenizer(long)["input_ids"]) > 128
    frame = score_texts(tiny_model, tiny_tokenizer, [long, TEXTS[0]],
                        attacks=["loss", "recall"], recall_prefix=TEXTS[1] * 3)
    ids = tiny_tokenizer(long)["input_ids"][:128]
    cut = tiny_tokenizer.decode(ids)
    alone = score_texts(tiny_model, tiny_tokenizer, [cut], attacks=["loss"])
    assert np.isfinite(frame.to_numpy()).all()
    assert frame["loss"][0] == pytest.approx(alone["loss"][0], rel=1e-4)
