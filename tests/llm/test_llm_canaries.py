"""Secret-sharer canaries on a tiny GPT-2: drawing, insertion, exposure against repetitions,
designed (rare-token) canaries, and the one-run epsilon from canaries included at random."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from conftest import corpus, make_tokenizer
from privaudit.llm._canaries import (
    Canary,
    SecretSpace,
    canary_epsilon,
    canary_exposures,
    canary_scores,
    insert_canaries,
    rare_token_space,
    secret_sharer_canaries,
)
from privaudit.metrics import canary_epsilon_lower_bound

pytest.importorskip("torch")

DIGITS = SecretSpace.digits(3)
FORMATS = [f"the secret code of {name} is {{secret}}" for name in ("alpha", "beta", "gamma")]


def _train(tokenizer, epochs: int, n_embd: int = 64, lr: float = 3e-3):
    """``train(texts, *, random_state) -> model``: a tiny GPT-2 trained from scratch."""
    from privaudit.studies._tiny_lm import tiny_gpt2, train_causal_lm

    def train(texts, *, random_state):
        model = tiny_gpt2(tokenizer, n_embd=n_embd, random_state=random_state)
        return train_causal_lm(model, tokenizer, texts, epochs=epochs, batch_size=16, lr=lr,
                               random_state=random_state)
    return train


@pytest.fixture(scope="module")
def repeated():
    """200 texts and three canaries (one format each) repeated 1, 4 and 16 times."""
    texts = corpus(200, seed=0)
    tokenizer = make_tokenizer(texts)
    canaries = secret_sharer_canaries(FORMATS, DIGITS, (1, 4, 16), random_state=0)
    inserted = insert_canaries(texts, canaries, random_state=0)
    model = _train(tokenizer, epochs=4)(inserted.texts, random_state=0)
    return {"model": model, "tokenizer": tokenizer, "canaries": canaries}


def test_exposure_rises_with_repetitions(repeated):
    frame = canary_exposures(repeated["model"], repeated["tokenizer"], repeated["canaries"],
                             DIGITS, batch_size=250)
    assert frame["repetitions"].tolist() == [1, 4, 16]
    assert (frame["method"] == "exact").all() and (frame["space_size"] == 1000).all()
    exposure = frame["exposure"].to_numpy()
    assert np.all(np.diff(exposure) > 1.0)          # 1 < 4 < 16 repetitions, by a bit each
    assert exposure[-1] >= 7.0                     # rank <= 8 of 1,000 after 16 copies
    # Secrets never inserted, in the same formats, are not exposed (exposure is
    # -log2 of a uniform variable for them: median 1 bit).
    rng = np.random.default_rng(5)
    inserted = {c.secret for c in repeated["canaries"]}
    others = [Canary(f, s, 0) for f in FORMATS
              for s in DIGITS.secrets(rng.choice(1000, 12, replace=False))
              if s not in inserted]
    control = canary_exposures(repeated["model"], repeated["tokenizer"], others, DIGITS,
                               batch_size=250)
    assert control.groupby("format")["exposure"].median().max() < 2.5
    assert exposure[-1] > control["exposure"].max()


def test_fitted_exposures_follow_the_exact_ones(repeated):
    args = (repeated["model"], repeated["tokenizer"], repeated["canaries"], DIGITS)
    exact = canary_exposures(*args, method="exact", batch_size=250)["exposure"].to_numpy()
    fitted = canary_exposures(*args, method="fit", n_samples=400, random_state=0,
                              batch_size=250)
    assert (fitted["method"] == "fit").all()
    assert np.all(np.diff(fitted["exposure"].to_numpy()) > 0)
    assert np.abs(fitted["exposure"].to_numpy() - exact)[:2].max() < 0.5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_secret_sharer_canaries_are_seeded_distinct_draws(seed):
    space = SecretSpace.digits(2)
    canaries = secret_sharer_canaries("pin {secret}.", space, [1, 4, 16, 16], random_state=seed)
    again = secret_sharer_canaries("pin {secret}.", space, [1, 4, 16, 16], random_state=seed)
    assert canaries == again
    assert [c.repetitions for c in canaries] == [1, 4, 16, 16]
    assert len({c.secret for c in canaries}) == 4 and all(c.secret in space for c in canaries)
    assert all(c.text == f"pin {c.secret}." for c in canaries)
    # Over many seeds every secret is drawn (uniform draws, not a fixed few).
    drawn = Counter(c.secret for s in range(300)
                    for c in secret_sharer_canaries("{secret}", space, [1], random_state=s))
    assert len(drawn) > 90


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_insert_canaries_places_each_copy_once(seed):
    texts = [f"text {i}" for i in range(30)]
    canaries = secret_sharer_canaries(["a {secret}", "b {secret}", "c {secret}"], DIGITS,
                                      (1, 4, 16), random_state=seed)
    out = insert_canaries(texts, canaries, random_state=seed)
    assert len(out.texts) == 30 + 21
    assert [t for t in out.texts if t.startswith("text")] == texts     # order kept
    for canary, where in zip(canaries, out.positions, strict=True):
        assert len(where) == canary.repetitions
        assert all(out.texts[i] == canary.text for i in where)
    again = insert_canaries(texts, canaries, random_state=seed)
    assert again.texts == out.texts
    assert all(np.array_equal(a, b) for a, b in zip(again.positions, out.positions,
                                                    strict=True))
    other = insert_canaries(texts, canaries, random_state=seed + 10)
    assert other.texts != out.texts


def test_rare_token_space_uses_the_rarest_tokens():
    texts = corpus(100, seed=0)
    tokenizer = make_tokenizer(texts)
    space = rare_token_space(tokenizer, texts, length=2, pool_size=16)
    assert space.size == 16 ** 2
    counts = Counter(t for text in texts for t in tokenizer(text)["input_ids"])
    pool_ids = [tokenizer(s, add_special_tokens=False)["input_ids"] for s in space.alphabet]
    assert all(len(ids) == 1 for ids in pool_ids)               # one token each
    most_in_pool = max(counts[ids[0]] for ids in pool_ids)
    usable = [t for t in range(len(tokenizer)) if t not in tokenizer.all_special_ids]
    assert sum(counts[t] < most_in_pool for t in usable) <= 16
    canaries = secret_sharer_canaries("id {secret}", space, (1, 4), random_state=0)
    assert all(c.secret in space for c in canaries)
    assert rare_token_space(tokenizer, texts, length=2, pool_size=16) == space


@pytest.fixture(scope="module")
def one_run():
    """48 canaries of one format, each included with probability 1/2, one training run."""
    texts = corpus(10, seed=1)
    tokenizer = make_tokenizer(corpus(200, seed=0))
    canaries = secret_sharer_canaries("my code is {secret}", SecretSpace.digits(4), [1] * 48,
                                      random_state=0)
    seen = []
    train = _train(tokenizer, epochs=12, n_embd=32, lr=1e-2)

    def recording_train(train_texts, *, random_state):
        seen.append(list(train_texts))
        return train(train_texts, random_state=random_state)

    result = canary_epsilon(recording_train, texts, canaries, tokenizer=tokenizer, delta=1e-5,
                            random_state=0)
    return {"result": result, "seen": seen[0], "canaries": canaries, "texts": texts,
            "tokenizer": tokenizer}


def test_canary_epsilon_trains_on_the_included_canaries_only(one_run):
    result, seen, canaries = one_run["result"], one_run["seen"], one_run["canaries"]
    assert 10 <= result.included.sum() <= 38
    copies = Counter(seen)
    for canary, included in zip(canaries, result.included, strict=True):
        assert copies[canary.text] == (1 if included else 0)
    assert [t for t in seen if not t.startswith("my code is")] == one_run["texts"]


def test_canary_epsilon_bounds_the_scores_it_reports(one_run):
    result = one_run["result"]
    again = canary_epsilon_lower_bound(result.scores[result.included],
                                       result.scores[~result.included], delta=1e-5)
    np.testing.assert_equal(tuple(result.bound), tuple(again))
    rescored = canary_scores(result.model, one_run["tokenizer"], one_run["canaries"])
    np.testing.assert_allclose(rescored, result.scores, rtol=0, atol=1e-6)
    # The included canaries were learnt: they score higher (AUC of the scores).
    ins, outs = result.scores[result.included], result.scores[~result.included]
    auc = np.mean(ins[:, None] > outs[None, :])
    assert auc > 0.8


def test_canary_epsilon_is_zero_when_training_ignores_the_data(one_run):
    from privaudit.studies._tiny_lm import tiny_gpt2

    fixed = tiny_gpt2(one_run["tokenizer"], n_embd=32, random_state=0)
    result = canary_epsilon(lambda texts, *, random_state: fixed, one_run["texts"],
                            one_run["canaries"], tokenizer=one_run["tokenizer"], delta=1e-5,
                            random_state=0)
    assert result.bound.epsilon == 0.0
    # The exposure score runs too (and refutes nothing either).
    by_exposure = canary_epsilon(lambda texts, *, random_state: fixed, one_run["texts"],
                                 one_run["canaries"][:8], tokenizer=one_run["tokenizer"],
                                 delta=1e-5, score="exposure", space=SecretSpace.digits(4),
                                 random_state=0)
    assert by_exposure.bound.epsilon == 0.0 and by_exposure.scores.shape == (8,)


@pytest.mark.parametrize(("call", "param"), [
    (lambda: secret_sharer_canaries("my code is", DIGITS, (1,)), "format"),
    (lambda: secret_sharer_canaries(["a {secret}"], DIGITS, (1, 4)), "format"),
    (lambda: secret_sharer_canaries("{secret}", DIGITS, (1, 0, 4)), "repetitions"),
    (lambda: secret_sharer_canaries("{secret}", DIGITS, (-4,)), "repetitions"),
    (lambda: secret_sharer_canaries("{secret}", DIGITS, ()), "repetitions"),
    (lambda: secret_sharer_canaries("{secret}", SecretSpace(("0",), 1), (1, 4)), "space"),
    (lambda: secret_sharer_canaries("{secret}", ["1", "2"], (1,)), "space"),
    (lambda: insert_canaries(["a"], [Canary("{secret}", "1", 0)]), "repetitions"),
    (lambda: insert_canaries("a text", []), "texts"),
    (lambda: insert_canaries(["a"], ["not a canary"]), "canaries"),
    (lambda: canary_epsilon("train", [], [Canary("{secret}", "1", 1)] * 2, tokenizer=None,
                            delta=1e-5), "train"),
    (lambda: canary_epsilon(print, [], [Canary("{secret}", "1", 1)], tokenizer=None,
                            delta=1e-5), "canaries"),
    (lambda: canary_scores(None, None, [], score="zlib"), "score"),
    (lambda: canary_scores(None, None, [], score="exposure"), "space"),
])
def test_bad_canary_input_names_the_parameter(call, param):
    with pytest.raises((ValueError, TypeError), match=f"'{param}'"):
        call()
