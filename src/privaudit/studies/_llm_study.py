"""The LLM part of the demo: memorised tweets, then unlearning judged against a retrain.

A tiny GPT-2 with its own byte-level BPE tokenizer is trained from scratch on 200 real
tweets (``dslabs::trump_tweets``). :func:`privaudit.audit_llm` then tells its training
tweets from held-out ones with every statistic (LOSS, Min-K%, Min-K%++, zlib, the
reference model's, GradNorm, DC-PDD, ReCaLL) beside the blind baseline, and checks its
memorisation (issue 23): greedy continuations of each tweet's first tokens against the
true next ones, members against held-out tweets (k-extractability, the longest common
prefix, VerbMem), and nine secret-sharer canaries repeated 1, 4 and 16 times in a
fine-tuning of the model, whose exposure rises with the repetitions. Then 75 of the
training tweets are unlearned by gradient ascent (with a retain term), and the forget-vs-
holdout AUC is measured before and after, beside a model retrained without them: MUSE's
PrivLeak says how far the unlearned model is from the retrained one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["run_llm_study"]

_N_MEMBERS, _N_AUDITED, _N_FORGET = 200, 150, 75
_TRAIN = {"epochs": 8, "batch_size": 16, "lr": 3e-3}
#: The memorisation checks: the tweets' first 4 tokens continued for 8 (every audited
#: tweet is longer); three canaries per repetition count (1, 4, 16: the plot reads their
#: median, one canary alone is noisy), two-digit secrets (100 candidates, exposure up to
#: 6.64 bits, each enumerated), fine-tuned into a copy of the model with 48 of its tweets
#: for 3 epochs.
_EXTRACTION = {"checks": ("k-extractability", "longest-common-prefix", "verbmem",
                          "exposure"), "prefix_length": 4, "suffix_length": 8}
_CANARY_TEXTS, _CANARY_TUNING = 48, {"epochs": 3, "lr": 3e-3}


def _models(texts: dict[str, list[str]], random_state: int, progress: Any
            ) -> dict[str, Any]:
    """The tokenizer and the four models; each training (a few seconds) counts epochs."""
    from privaudit.studies._tiny_lm import (
        gradient_ascent_unlearn,
        tiny_gpt2,
        train_causal_lm,
        train_tokenizer,
    )

    # The tokenizer learns from public tweets only: one trained on the members too would
    # tokenise them better, a membership signal of its own (a retrained model would then
    # find the forget set *less* likely than held-out text).
    say = progress if callable(progress) else (lambda message: None)
    tokenizer = train_tokenizer(texts["public"], vocab_size=1000)

    def trained(corpus: list[str], seed: int, what: str) -> Any:
        return train_causal_lm(tiny_gpt2(tokenizer, random_state=seed), tokenizer, corpus,
                               random_state=seed, progress=progress,
                               description=f"Training {what} (epochs)", **_TRAIN)

    say(f"Training a tiny GPT-2 on {_N_MEMBERS} tweets, and a reference model on others")
    target = trained(texts["members"], random_state, "the tiny GPT-2")
    reference = trained(texts["public"], random_state + 1, "the reference model")
    say(f"Unlearning {_N_FORGET} of its tweets by gradient ascent; retraining without them")
    forget, retain = texts["members"][:_N_FORGET], texts["members"][_N_FORGET:]
    unlearned = gradient_ascent_unlearn(target, tokenizer, forget, epochs=2, lr=1e-3,
                                        retain=retain, random_state=random_state)
    retrained = trained(retain, random_state + 2, "the retrained model")
    return {"tokenizer": tokenizer, "target": target, "reference": reference,
            "unlearned": unlearned, "retrained": retrained}


def _token_counts(tokenizer: Any, texts: list[str]) -> np.ndarray:
    ids = [i for t in texts for i in tokenizer(t)["input_ids"]]
    return np.bincount(ids, minlength=len(tokenizer)).astype(np.float64)


def run_llm_study(random_state: int = 0, progress: Any = None) -> list[Any]:
    """Run the LLM part of the demo and return its results (see the module docstring).

    A blind baseline that matches an attack is reported as a finding in the report, not
    as a warning on the console (the demo's small forget set makes that likely for zlib).
    """
    import warnings

    from privaudit.audits import BlindBaselineWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BlindBaselineWarning)
        return _run(random_state, progress)


def _canaries(models: dict[str, Any], members: list[str]) -> Any:
    """Secret-sharer canaries (3 each of 1, 4, 16 copies) fine-tuned into a copy of the target."""
    from privaudit.audits import CanaryCheck, FineTuneRecipe
    from privaudit.llm import SecretSpace

    recipe = FineTuneRecipe(models["target"], models["tokenizer"], **_CANARY_TUNING)
    return CanaryCheck(train=recipe, texts=members[:_CANARY_TEXTS],
                       space=SecretSpace.digits(2), repetitions=(1, 4, 16), per_repetition=3,
                       batch_size=100)


def _run(random_state: int, progress: Any) -> list[Any]:
    from privaudit.audits import LLM_STATISTICS, audit_llm
    from privaudit.studies._tiny_lm import load_tweets
    from privaudit.targets import CausalLMTarget

    say = progress if callable(progress) else (lambda message: None)
    tweets = load_tweets(800, random_state=random_state)["text"].tolist()
    texts = {"members": tweets[:_N_MEMBERS], "held_out": tweets[_N_MEMBERS:2 * _N_MEMBERS],
             "public": tweets[2 * _N_MEMBERS:]}
    models = _models(texts, random_state, progress)
    tok = models["tokenizer"]
    held = texts["held_out"]
    say("Auditing the tiny GPT-2: training tweets vs held-out tweets, every statistic, "
        "extraction, and canaries repeated 1, 4 and 16 times")
    results = audit_llm(
        CausalLMTarget(models["target"], tok, name="tiny-gpt2"),
        members=texts["members"][:_N_AUDITED], non_members=held[:_N_AUDITED],
        attacks=LLM_STATISTICS, reference_model=models["reference"],
        token_frequencies=_token_counts(tok, texts["public"]),
        recall_prefix=" ".join(held[-3:]), dataset="dslabs::trump_tweets",
        random_state=random_state, batch_size=16, progress=progress, **_EXTRACTION,
        canaries=_canaries(models, texts["members"]))
    say("Auditing the unlearning: forget vs holdout, before and after, beside a retrain")
    results += audit_llm(
        CausalLMTarget(models["unlearned"], tok, name="tiny-gpt2 unlearned"),
        forget=texts["members"][:_N_FORGET], holdout=held[:_N_FORGET],
        attacks=("loss", "min-k", "min-k-plus-plus", "zlib"),
        compare={"tiny-gpt2 before unlearning": models["target"]},
        retrained=models["retrained"], dataset="dslabs::trump_tweets",
        random_state=random_state, batch_size=16, progress=progress)
    return results
