"""``audit_llm(..., checks=[...])``: extraction and canaries on the audit template (issue 23).

A one-layer GPT-2 trained until it recites 4 short texts: through the audit every member is
k-extractable and no held-out text is, the values equal a direct call of
:func:`privaudit.llm.extraction_checks` (the reference), and a rerun reuses the saved result
without generating. The canary check is driven by a training function that records what
it was given (each canary's copies, only the included ones) and returns a fixed model, so
its exposures are compared with :func:`privaudit.llm.canary_exposures` on that model, and
its epsilon with :func:`privaudit.metrics.canary_epsilon_lower_bound`. Bad settings are
refused naming the option before any model runs.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from conftest import corpus, make_model, torch
from privaudit.audits import CanaryCheck, FineTuneRecipe, audit_llm, fine_tune_causal_lm
from privaudit.audits._llm_memorisation import _BOUND, _seed
from privaudit.llm import Canary, SecretSpace, canary_exposures, extraction_checks
from privaudit.metrics import canary_epsilon_lower_bound
from privaudit.results import MemorisationResult

PREFIX, SUFFIX = 3, 6
CHECKS = ["k-extractability", "longest-common-prefix", "extraction-strength", "verbmem"]


@pytest.fixture(scope="module")
def memorised(tiny_tokenizer):
    """A one-layer GPT-2 that recites 4 texts of 10 to 14 tokens; 4 held-out ones.

    Trained by the canary check's own loop (one batch of the 4 texts per epoch).
    """
    texts = [t for t in corpus(120, seed=11) if 10 <= len(tiny_tokenizer(t)["input_ids"]) <= 14]
    members, held_out = texts[:4], texts[4:8]
    model = fine_tune_causal_lm(make_model(tiny_tokenizer, n_layer=1, n_embd=32, seed=2),
                                tiny_tokenizer, members, epochs=60, batch_size=4, lr=2e-2)
    return {"model": model, "members": members, "held_out": held_out}


def _audit(memorised, tokenizer, **kwargs):
    options = {"attacks": ["loss"], "blind_baseline": False, "subgroups": False,
               "prefix_length": PREFIX, "suffix_length": SUFFIX, **kwargs}
    return audit_llm((memorised["model"], tokenizer), memorised["members"],
                     memorised["held_out"], **options)


def _memorisation(report, check):
    (result,) = [r for r in report.results if isinstance(r, MemorisationResult)
                 and r.check == check]
    return result


def test_extraction_equals_the_direct_checks_and_a_rerun_reuses_it(memorised, tiny_tokenizer,
                                                                   tmp_path, monkeypatch):
    report = _audit(memorised, tiny_tokenizer, checks=CHECKS, results_dir=tmp_path)
    result = _memorisation(report, "extraction")
    assert result.values["k-extractability"].tolist() == [1.0] * 4 + [0.0] * 4
    direct = extraction_checks(memorised["model"], tiny_tokenizer, memorised["members"],
                               memorised["held_out"], checks=CHECKS, prefix_length=PREFIX,
                               suffix_length=SUFFIX, random_state=0)
    for name in CHECKS:
        np.testing.assert_array_equal(result.values[name], direct[name].raw_statistic)
        assert result.comparisons[name]["difference"] == direct[name].extra["difference"]
    shown = direct["k-extractability"].extra
    assert result.continuations == shown["continuations"]
    assert result.matched_tokens.tolist() == shown["common_prefix_length"]
    ids = [tiny_tokenizer(t)["input_ids"][:PREFIX] for t in
           memorised["members"] + memorised["held_out"]]
    assert result.prefixes == [tiny_tokenizer.decode(i, skip_special_tokens=True) for i in ids]

    def no_generation(*args, **kwargs):
        raise AssertionError("the saved result should have been reused")

    monkeypatch.setattr("privaudit.llm.extraction_checks", no_generation)
    again = _memorisation(_audit(memorised, tiny_tokenizer, checks=CHECKS,
                                 results_dir=tmp_path), "extraction")
    assert again.audit.key == result.audit.key and again.continuations == result.continuations
    with pytest.raises(AssertionError, match="reused"):  # another prefix: another key
        _audit(memorised, tiny_tokenizer, checks=CHECKS, results_dir=tmp_path,
               prefix_length=PREFIX + 1)


class RecordingTraining:
    """A training function that keeps the texts it was given and returns a fixed model."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def __call__(self, texts, *, random_state):
        self.calls.append((list(texts), random_state))
        return self.model


@pytest.mark.parametrize(("per_repetition", "inclusion", "digits"),
                         [(1, "all", 1), (4, "random", 2)])
def test_canaries_are_inserted_trained_on_and_scored(memorised, tiny_tokenizer, tiny_model,
                                                     per_repetition, inclusion, digits):
    train = RecordingTraining(tiny_model)
    space = SecretSpace.digits(digits)
    check = CanaryCheck(train=train, space=space, repetitions=(1, 4, 16),
                        per_repetition=per_repetition, inclusion=inclusion, batch_size=16)
    result = _memorisation(_audit(memorised, tiny_tokenizer, checks=["exposure"],
                                  canaries=check), "canaries")
    rows = result.canaries
    assert [r["repetitions"] for r in rows] == [1] * per_repetition + [4] * per_repetition \
        + [16] * per_repetition
    (texts, _), = train.calls
    canaries = [Canary(r["format"], r["secret"], r["repetitions"]) for r in rows]
    included = [r["included"] is not False for r in rows]
    for canary, keep in zip(canaries, included, strict=True):
        assert texts.count(canary.text) == (canary.repetitions if keep else 0)
    assert [t for t in texts if "secret code" not in t] == memorised["members"]
    reference = canary_exposures(tiny_model, tiny_tokenizer, canaries, space, method="exact")
    np.testing.assert_allclose([r["exposure"] for r in rows], reference["exposure"], atol=1e-9)
    if inclusion == "all":
        assert result.epsilon is None and all(r["included"] is None for r in rows)
        return
    scores, mask = reference["exposure"].to_numpy(), np.array(included)
    bound = canary_epsilon_lower_bound(scores[mask], scores[~mask], delta=1e-5,
                                       random_state=_seed(0, _BOUND))
    assert result.epsilon.epsilon == pytest.approx(bound.epsilon)
    assert 0 < mask.sum() < mask.size


def test_the_built_in_recipe_fine_tunes_a_copy(memorised, tiny_tokenizer):
    base = memorised["model"]
    before = copy.deepcopy(base.state_dict())
    recipe = FineTuneRecipe(base, tiny_tokenizer, epochs=1, batch_size=4)
    texts = memorised["held_out"]
    trained = recipe(texts, random_state=3)
    reference = fine_tune_causal_lm(copy.deepcopy(base), tiny_tokenizer, texts, epochs=1,
                                    batch_size=4, lr=1e-3, max_length=128, random_state=3)
    assert all(torch.equal(a, b) for a, b in zip(base.state_dict().values(),
                                                  before.values(), strict=True))
    assert all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(),
                                                  reference.state_dict().values(), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(),
                                                      before.values(), strict=True))


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"checks": ["k-extractibility"]}, "checks"),
    ({"checks": "exposure", "canaries": CanaryCheck(formats=["no slot"] * 3)},
     "canaries.formats"),
    ({"checks": "exposure", "canaries": CanaryCheck(formats=["a {secret}"])},
     "canaries.formats"),
    ({"checks": "exposure", "canaries": CanaryCheck(repetitions=(0, 4))},
     "canaries.repetitions"),
    ({"checks": "exposure", "canaries": CanaryCheck(space=SecretSpace.digits(1),
                                                    per_repetition=4)}, "canaries.space"),
    ({"checks": "exposure", "canaries": CanaryCheck(repetitions=(4,), inclusion="random")},
     "canaries.inclusion"),
    ({"checks": ["verbmem"], "prefix_length": 14}, "prefix_length"),
    ({"checks": ["verbmem"], "suffix_length": 0}, "suffix_length"),
    ({"canaries": CanaryCheck()}, "canaries"),
])
def test_bad_settings_name_the_option_before_any_model_runs(memorised, tiny_tokenizer,
                                                            kwargs, param):
    model = copy.deepcopy(memorised["model"])
    model.forward = lambda *a, **k: pytest.fail("the model ran before the settings' check")
    with pytest.raises((ValueError, TypeError), match=re.escape(f"'{param}'")):
        audit_llm((model, tiny_tokenizer), memorised["members"], memorised["held_out"],
                  attacks=["loss"], blind_baseline=False, subgroups=False, **kwargs)
