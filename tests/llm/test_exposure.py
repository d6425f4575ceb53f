"""Exposure (Carlini et al. 2019) against its definition, computed the slow way.

The reference scores each candidate alone, unbatched, in float64, by the log-perplexity of
the WHOLE filled format (the paper's Definition 2), ranks every candidate of the space and
applies Definition 3: ``log2 |R| - log2 rank``, ties counted against the secret. The fast
path scores the secret's tokens given the prefix, in batches: the ranks must agree, so
the exposures agree to 1e-9.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import corpus, make_tokenizer
from privaudit.exceptions import DegenerateInputWarning
from privaudit.llm._canaries import (
    Canary,
    SecretSpace,
    exposure,
    insert_canaries,
    secret_log_perplexity,
    secret_sharer_canaries,
)
from privaudit.llm._exposure import exact_exposure, fitted_exposure

torch = pytest.importorskip("torch")

DIGITS = SecretSpace.digits(3)
WORDS = SecretSpace(("red", "green", "blue", "cyan"), 4, " ")
#: A format ending at its slot, one with text after it, one of word secrets (whose first
#: token merges with the prefix's space differently from candidate to candidate).
FORMATS = {"end": "the secret code of alpha is {secret}", "suffix": "my pin {secret} was leaked",
           "words": "the colours are {secret} today"}


@pytest.fixture(scope="module")
def trained():
    """A tiny GPT-2 trained briefly on 100 texts and canaries repeated 1, 4 and 16 times."""
    from privaudit.studies._tiny_lm import tiny_gpt2, train_causal_lm

    texts = corpus(100, seed=0)
    tokenizer = make_tokenizer(texts)
    canaries = secret_sharer_canaries([FORMATS["end"], FORMATS["suffix"], "call {secret}"],
                                      DIGITS, (1, 4, 16), random_state=0)
    canaries += secret_sharer_canaries(FORMATS["words"], WORDS, (4,), random_state=0)
    inserted = insert_canaries(texts, canaries, random_state=0)
    model = tiny_gpt2(tokenizer, n_embd=32, random_state=0)
    train_causal_lm(model, tokenizer, inserted.texts, epochs=3, batch_size=16, lr=3e-3,
                    random_state=0)
    # float64: the batched and the one-at-a-time passes then agree far below any gap
    # between two candidates' log-perplexities.
    return {"model": copy.deepcopy(model).double(), "tokenizer": tokenizer,
            "canaries": canaries}


def reference_log_perplexity(model, tokenizer, text: str) -> float:
    """-sum log2 p(x_i | x_<i) over the whole text (Definition 2), one text alone."""
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    with torch.no_grad():
        log_p = torch.log_softmax(model(input_ids=ids).logits[0, :-1], -1)
    return float(-log_p.gather(-1, ids[0, 1:, None]).sum() / math.log(2))


def reference_exposure(values: dict[str, float], secret: str) -> float:
    """Definition 3 by enumeration: sort every candidate, the secret after its ties."""
    ordered = sorted(values, key=lambda s: (values[s], s == secret))
    rank = ordered.index(secret) + 1
    return math.log2(len(values)) - math.log2(rank)


@pytest.mark.parametrize(("name", "space"), [("suffix", DIGITS), ("words", WORDS)])
def test_exact_exposure_equals_definition_by_enumeration(trained, name, space):
    model, tokenizer = trained["model"], trained["tokenizer"]
    fmt = FORMATS[name]
    inserted = [c.secret for c in trained["canaries"] if c.format == fmt]
    others = [s for s in space.sample(6, random_state=1) if s not in inserted][:3]
    values = {s: reference_log_perplexity(model, tokenizer, fmt.replace("{secret}", s))
              for s in space.enumerate()}
    seen = []
    for secret in inserted + others:
        got = exposure(model, tokenizer, fmt, secret, space, method="exact", batch_size=128)
        assert got.exposure == pytest.approx(reference_exposure(values, secret), abs=1e-9)
        assert got.rank == sum(v <= values[secret] for v in values.values())
        assert got.space_size == space.size and got.n_scored == space.size
        seen.append(got.exposure)
    assert len(set(seen)) == len(seen)      # distinct ranks: not one trivial value


@given(st.lists(st.integers(0, 5), min_size=1, max_size=40), st.data())
@settings(max_examples=80, deadline=None)
def test_exact_exposure_is_the_sorted_rank_with_ties_against_the_secret(values, data):
    values = np.asarray(values, dtype=float)
    i = data.draw(st.integers(0, len(values) - 1))
    reference = reference_exposure({str(j): v for j, v in enumerate(values)}, str(i))
    assert exact_exposure(values[i], values, len(values)) == pytest.approx(reference,
                                                                          abs=1e-12)
    assert 0.0 <= exact_exposure(values[i], values, len(values)) <= math.log2(len(values))


@pytest.mark.parametrize("name", ["end", "suffix", "words"])
def test_batched_log_perplexity_is_the_whole_text_minus_the_prefix(trained, name):
    """Px(secret | prefix) + the prefix's own tokens = the whole text's, for every secret."""
    model, tokenizer = trained["model"], trained["tokenizer"]
    fmt = FORMATS[name]
    space = WORDS if name == "words" else DIGITS
    secrets = space.sample(40, random_state=2)
    fast = secret_log_perplexity(model, tokenizer, fmt, secrets, batch_size=16)
    whole = np.array([reference_log_perplexity(model, tokenizer, fmt.replace("{secret}", s))
                      for s in secrets])
    # The difference is the log-perplexity of the prefix's tokens before its last: one
    # value for every secret, whether the prefix's trailing space is a token of its own
    # or merged into the secret's first token (both happen with the word secrets).
    assert np.ptp(whole - fast) < 1e-9
    assert np.all(fast > 0)
    prefix_ids = tokenizer(fmt.split("{secret}")[0])["input_ids"]
    merged = [tokenizer(fmt.replace("{secret}", s))["input_ids"][len(prefix_ids) - 1]
              != prefix_ids[-1] for s in secrets]
    assert name != "words" or 0 < sum(merged) < len(secrets)


def test_fitted_exposure_close_to_exact(trained):
    """The skew-normal fit (Section 4.3) against enumeration on the same 1,000 secrets."""
    model, tokenizer = trained["model"], trained["tokenizer"]
    fmt = FORMATS["end"]
    values = secret_log_perplexity(model, tokenizer, fmt, DIGITS.enumerate(), batch_size=500)
    exact = np.array([exact_exposure(v, values, DIGITS.size) for v in values])
    fitted = fitted_exposure(values, values, DIGITS.size)
    body = exact <= 4          # ranks of 62 and more: where a 1,000-sample fit has data
    assert body.sum() > 900
    assert np.max(np.abs(fitted - exact)[body]) < 0.35
    assert np.median(np.abs(fitted - exact)[body]) < 0.05
    # Through exposure(): a sample of 600 of the 1,000, seeded.
    canary = next(c for c in trained["canaries"] if c.format == fmt)
    exact_one = exposure(model, tokenizer, fmt, canary.secret, DIGITS, method="exact")
    fit_one = exposure(model, tokenizer, fmt, canary.secret, DIGITS, method="fit",
                       n_samples=600, random_state=0)
    again = exposure(model, tokenizer, fmt, canary.secret, DIGITS, method="fit",
                     n_samples=600, random_state=0)
    assert fit_one == again and fit_one.method == "fit" and fit_one.n_scored == 600
    assert fit_one.exposure == pytest.approx(exact_one.exposure, abs=0.35)


def test_fitted_exposure_is_capped_and_nan_when_degenerate():
    sample = np.random.default_rng(0).normal(20, 2, size=500)
    assert fitted_exposure(-100.0, sample, 1000) == math.log2(1000)
    assert fitted_exposure(1e6, sample, 1000) == pytest.approx(0.0, abs=1e-9)
    with pytest.warns(DegenerateInputWarning, match="all equal"):
        assert math.isnan(fitted_exposure(3.0, np.full(10, 3.0), 1000))


@given(st.lists(st.sampled_from("abcdxyz"), min_size=1, max_size=4, unique=True),
       st.integers(1, 3), st.sampled_from(["", "-"]))
@settings(max_examples=40, deadline=None)
def test_secret_space_enumerates_each_candidate_once(alphabet, length, separator):
    space = SecretSpace(tuple(alphabet), length, separator)
    every = space.enumerate()
    assert len(every) == space.size == len(alphabet) ** length == len(set(every))
    assert all(s in space for s in every)
    assert space.sample(min(5, space.size), random_state=3) == space.sample(
        min(5, space.size), random_state=3)
    assert len(set(space.sample(space.size, random_state=0))) == space.size
    assert "q" not in space and 7 not in space


@pytest.mark.parametrize(("kwargs", "param", "match"), [
    ({"format": "my code is"}, "format", "slot"),
    ({"format": "{secret} and {secret}"}, "format", "slot"),
    ({"secret": "1234"}, "secret", "candidate"),
    ({"secret": "12a"}, "secret", "candidate"),
    ({"method": "sampled"}, "method", "'exact'"),
    ({"space": ["000", "001"]}, "space", "SecretSpace"),
    ({"n_samples": 1}, "n_samples", ">= 2"),
])
def test_bad_exposure_input_names_the_parameter(trained, kwargs, param, match):
    args = {"format": FORMATS["end"], "secret": "123", "space": DIGITS, **kwargs}
    with pytest.raises((ValueError, TypeError), match=rf"'{param}'.*{match}"):
        exposure(trained["model"], trained["tokenizer"], args.pop("format"),
                 args.pop("secret"), args.pop("space"), **args)


@pytest.mark.parametrize(("make", "param"), [
    (lambda: SecretSpace((), 3), "alphabet"),
    (lambda: SecretSpace(("0", "1"), 0), "length"),
    (lambda: SecretSpace(("0", "0"), 2), "alphabet"),
    (lambda: SecretSpace("0123", 2), "alphabet"),
    (lambda: Canary("no slot here", "1", 1).text, "format"),
])
def test_empty_or_malformed_space_is_refused(make, param):
    with pytest.raises((ValueError, TypeError), match=f"'{param}'"):
        make()
