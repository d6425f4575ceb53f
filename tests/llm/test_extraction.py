"""Extraction checks (issue 23, memorisation by generation) on the tiny GPT-2.

A tiny model trained to memorise 8 known texts: every one of them is k-extractable and no
held-out text is. Each fast path has a slow, obviously correct reference beside it: the
batched, cached generation against a plain loop that reruns the whole sequence for every
token of one text alone; the metrics against literal loops, and ROUGE-L against an LCS
found by enumerating subsequences.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import corpus, make_model, torch
from privaudit.llm._extraction import (
    CHECKS,
    common_prefix_length,
    exact_memorization,
    extraction_checks,
    extraction_strength,
    greedy_continuations,
    rouge_l_f1,
    rouge_tokens,
    teacher_forced_argmax,
)
from privaudit.metrics import newcombe_interval, wilson_interval
from privaudit.results import AttackResult

PREFIX, SUFFIX = 4, 16


def _short_texts(tokenizer, n: int, seed: int) -> list[str]:
    """``n`` corpus sentences of 12 to 24 tokens (short: the training stays quick)."""
    texts = [t for t in corpus(200, seed=seed) if 12 <= len(tokenizer(t)["input_ids"]) <= 24]
    return texts[:n]


@pytest.fixture(scope="module")
def memorised(tiny_tokenizer):
    """A tiny GPT-2 trained until it recites 8 texts; 8 held-out texts of the same kind."""
    texts = _short_texts(tiny_tokenizer, 16, seed=7)
    members, held_out = texts[:8], texts[8:]
    model = make_model(tiny_tokenizer, seed=1)
    batch = tiny_tokenizer(members, padding=True, return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(120):
        loss = model(**batch, labels=labels).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    return {"model": model, "members": members, "held_out": held_out}


# ------------------------------------------------------------------ slow references
def _greedy_reference(model, prefix: list[int], n: int) -> list[int]:
    """One text alone, no cache, no padding: rerun the whole sequence for each token."""
    ids = list(prefix)
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([ids])).logits
            ids.append(int(logits[0, -1].argmax()))
    return ids[len(prefix):]


def _argmax_reference(model, prefix: list[int], suffix: list[int]) -> list[int]:
    """Teacher-forced argmax of one text alone: position t predicts token t + 1."""
    with torch.no_grad():
        logits = model(torch.tensor([prefix + suffix])).logits[0]
    return [int(logits[len(prefix) - 1 + j].argmax()) for j in range(len(suffix))]


def _lcs_by_enumeration(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence, by trying every subsequence of ``a``."""
    for size in range(len(a), 0, -1):
        for picked in itertools.combinations(a, size):
            it = iter(b)
            if all(word in it for word in picked):  # `in` consumes: a subsequence test
                return size
    return 0


def _extraction_strength_reference(pred: list[int], lab: list[int]) -> float:
    """Wang et al.'s definition, literally: the first k whose whole tail is right."""
    for k in range(len(lab) + 1):
        if pred[k:] == lab[k:]:
            return 1 - k / len(lab)
    raise AssertionError("k = n always matches")


def _splits(tokenizer, texts, prefix_length=PREFIX, suffix_length=SUFFIX):
    from privaudit.llm._extraction import _split_texts

    return _split_texts(tokenizer, texts, "members", prefix_length, suffix_length)


# ------------------------------------------------------------------ memorisation
def test_memorised_texts_all_extracted_held_out_none(memorised, tiny_tokenizer):
    m = memorised
    results = extraction_checks(m["model"], tiny_tokenizer, m["members"], m["held_out"],
                                prefix_length=PREFIX, suffix_length=SUFFIX, random_state=0)
    assert list(results) == list(CHECKS)
    k_ext = results["k-extractability"]
    assert isinstance(k_ext, AttackResult) and k_ext.attack == "k-extractability"
    np.testing.assert_array_equal(k_ext.labels, [1] * 8 + [0] * 8)
    np.testing.assert_array_equal(k_ext.scores, [1.0] * 8 + [0.0] * 8)
    extra = k_ext.extra
    assert extra["member_mean"] == wilson_interval(8, 8)._asdict()
    assert extra["held_out_mean"] == wilson_interval(0, 8)._asdict()
    assert extra["difference"] == newcombe_interval(8, 8, 0, 8)._asdict()
    assert extra["auc"]["value"] == 1.0
    assert extra["common_prefix_length"][:8] == extra["suffix_tokens"][:8]
    assert extra["continuations"][:8] == extra["suffixes"][:8]
    for name in ("extraction-strength", "exact-memorization", "verbmem"):
        values = results[name].scores
        assert np.all(values[:8] == 1.0) and np.all(values[8:] < 1.0), name
        assert results[name].extra["interval"] == "bootstrap"


def test_a_bfloat16_copy_extracts_the_same_texts(memorised, tiny_tokenizer):
    import copy

    m = memorised
    low_precision = copy.deepcopy(m["model"]).to(torch.bfloat16)
    for model in (m["model"], low_precision):
        result = extraction_checks(model, tiny_tokenizer, m["members"], m["held_out"],
                                   checks=["k-extractability"], prefix_length=PREFIX,
                                   suffix_length=SUFFIX, n_bootstrap=0)
        np.testing.assert_array_equal(result["k-extractability"].scores,
                                      [1.0] * 8 + [0.0] * 8)


def test_means_and_intervals_read_the_per_text_values(memorised, tiny_tokenizer):
    m = memorised
    run = [extraction_checks(m["model"], tiny_tokenizer, m["members"][:5], m["held_out"][:6],
                             checks=("exact-memorization", "verbmem"), prefix_length=3,
                             suffix_length=10, random_state=3) for _ in range(2)]
    for name, result in run[0].items():
        values, extra = result.raw_statistic, result.extra
        assert extra["member_mean"]["value"] == pytest.approx(values[:5].mean())
        assert extra["held_out_mean"]["value"] == pytest.approx(values[5:].mean())
        assert extra["difference"]["value"] == pytest.approx(values[:5].mean()
                                                             - values[5:].mean())
        for key in ("member_mean", "held_out_mean", "difference", "auc"):
            low, high = extra[key]["low"], extra[key]["high"]
            assert low <= extra[key]["value"] <= high or key == "auc"
        assert extra == run[1][name].extra  # same seed, same intervals


# ------------------------------------------------------------------ generation
@pytest.mark.parametrize("which", ["trained", "untrained"])
def test_batched_continuations_equal_one_at_a_time(which, memorised, tiny_model,
                                                   tiny_tokenizer):
    model = memorised["model"] if which == "trained" else tiny_model
    texts = memorised["members"][:4] + memorised["held_out"][:3]
    # Prefixes of different lengths: the batches are left-padded.
    prefixes = [tiny_tokenizer(t)["input_ids"][:2 + i] for i, t in enumerate(texts)]
    batched = greedy_continuations(model, tiny_tokenizer, prefixes, 12, batch_size=4)
    alone = greedy_continuations(model, tiny_tokenizer, prefixes, 12, batch_size=1)
    assert batched == alone
    assert batched == [_greedy_reference(model, p, 12) for p in prefixes]


def test_teacher_forced_argmax_equals_one_text_alone(memorised, tiny_model, tiny_tokenizer):
    texts = memorised["members"][:3] + memorised["held_out"][:4]
    for model in (memorised["model"], tiny_model):
        splits = _splits(tiny_tokenizer, texts, prefix_length=3, suffix_length=9)
        fast = teacher_forced_argmax(model, tiny_tokenizer, splits, batch_size=3)
        assert fast == [_argmax_reference(model, s.prefix, s.suffix) for s in splits]


def test_per_text_values_equal_the_definitions(memorised, tiny_tokenizer):
    model, texts = memorised["model"], memorised["members"][:3] + memorised["held_out"][:3]
    results = extraction_checks(model, tiny_tokenizer, texts[:3], texts[3:], prefix_length=3,
                                suffix_length=SUFFIX, n_bootstrap=0, random_state=0)
    for i, split in enumerate(_splits(tiny_tokenizer, texts, 3)):
        generated = _greedy_reference(model, split.prefix, len(split.suffix))
        predicted = _argmax_reference(model, split.prefix, split.suffix)
        matched = next((j for j, (a, b) in enumerate(zip(generated, split.suffix, strict=True))
                        if a != b), len(split.suffix))
        text = tiny_tokenizer.decode(generated, skip_special_tokens=True)
        truth = tiny_tokenizer.decode(split.suffix, skip_special_tokens=True)
        expected = {
            "k-extractability": float(generated == split.suffix),
            "longest-common-prefix": matched,
            "extraction-strength": _extraction_strength_reference(predicted, split.suffix),
            "exact-memorization": np.mean(np.array(predicted) == split.suffix),
            "verbmem": rouge_l_f1(text, truth),
        }
        for name, value in expected.items():
            assert results[name].scores[i] == pytest.approx(value), (name, i)


def test_progress_reports_the_generation_batches_and_mode_is_restored(memorised,
                                                                     tiny_tokenizer):
    messages: list[str] = []
    memorised["model"].train()
    extraction_checks(memorised["model"], tiny_tokenizer, memorised["members"][:3],
                      memorised["held_out"][:2], checks=["k-extractability"],
                      prefix_length=3, suffix_length=4, batch_size=2, n_bootstrap=0,
                      progress=messages.append)
    assert messages[-1] == "Generating continuations: 3/3"
    left_in_training = memorised["model"].training
    memorised["model"].eval()
    assert left_in_training


# ------------------------------------------------------------------ metrics
_tokens = st.lists(st.integers(0, 3), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(_tokens, st.data())
def test_extraction_strength_and_exact_memorization_equal_loops(labels, data):
    predictions = data.draw(st.lists(st.integers(0, 3), min_size=len(labels),
                                     max_size=len(labels)))
    assert extraction_strength(predictions, labels) == pytest.approx(
        _extraction_strength_reference(predictions, labels))
    right = sum(p == t for p, t in zip(predictions, labels, strict=True))
    assert exact_memorization(predictions, labels) == pytest.approx(right / len(labels))
    shared = 0
    while shared < len(labels) and predictions[shared] == labels[shared]:
        shared += 1
    assert common_prefix_length(predictions, labels) == shared


_words = st.lists(st.sampled_from(["a", "b", "c", "Data", "x1"]), max_size=7)


@settings(max_examples=200, deadline=None)
@given(_words, _words, st.sampled_from([" ", ", ", "-", " ... "]))
def test_rouge_l_f1_equals_enumerated_lcs(prediction, target, glue):
    pred_text, ref_text = glue.join(prediction), glue.join(target)
    pred = [w.lower() for w in prediction]
    ref = [w.lower() for w in target]
    assert rouge_tokens(pred_text) == pred
    lcs = _lcs_by_enumeration(pred, ref)
    expected = 0.0 if lcs == 0 else 2 * lcs / (len(pred) + len(ref))  # F1 = 2PR / (P + R)
    assert rouge_l_f1(pred_text, ref_text) == pytest.approx(expected)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("kwargs", "match"), [
    ({"prefix_length": 40}, r"'prefix_length'.*members\[0\] has \d+ tokens"),
    ({"suffix_length": 0}, "'suffix_length'.*>= 1"),
    ({"suffix_length": -3}, "'suffix_length'.*>= 1"),
    ({"prefix_length": 0}, "'prefix_length'.*>= 1"),
    ({"batch_size": 0}, "'batch_size'.*>= 1"),
    ({"prefix_length": 8, "suffix_length": 121}, r"'suffix_length'.*at most 120.*128 tokens"),
    ({"checks": ["k-extractability", "rouge"]}, "'checks'"),
    ({"checks": []}, "'checks'"),
])
def test_bad_options_name_the_option(kwargs, match, tiny_model, tiny_tokenizer):
    texts = _short_texts(tiny_tokenizer, 4, seed=1)
    with pytest.raises(ValueError, match=match):
        extraction_checks(tiny_model, tiny_tokenizer, texts[:2], texts[2:], **kwargs)


def test_prefix_longer_than_a_held_out_text_names_it(tiny_model, tiny_tokenizer):
    texts = _short_texts(tiny_tokenizer, 3, seed=2)
    short = "Privacy audit."
    n = len(tiny_tokenizer(short)["input_ids"])
    with pytest.raises(ValueError, match=rf"non_members\[1\] has {n} tokens"):
        extraction_checks(tiny_model, tiny_tokenizer, texts[:2], [texts[2], short],
                          prefix_length=n)


@pytest.mark.parametrize(("members", "non_members", "param", "error"), [
    ([], ["a b c d e f"], "members", ValueError),
    (["a b c d e f"], [], "non_members", ValueError),
    ("a b c d e f", ["a b c d e f"], "members", ValueError),
    (["a b c d e f", 3], ["a b c d e f"], "members", TypeError),
])
def test_empty_or_wrong_text_lists_are_refused(members, non_members, param, error,
                                              tiny_model, tiny_tokenizer):
    with pytest.raises(error, match=f"'{param}'"):
        extraction_checks(tiny_model, tiny_tokenizer, members, non_members, prefix_length=1)
