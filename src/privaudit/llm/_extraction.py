"""Memorisation by generation: extraction checks of a causal language model (issue 23).

Each text is cut into a prefix of ``prefix_length`` tokens and the suffix of (at most)
``suffix_length`` tokens after it. The model continues the prefix greedily (batched, with
its KV cache) and is also run teacher-forced on prefix + true suffix. Per text:

- ``k-extractability`` (Carlini et al. 2023, their definition of a string "extractable
  with k tokens of context": greedy decoding prompted with the k tokens before it in the
  training data produces it): 1 when the greedy continuation of the k-token prefix equals
  the true suffix token for token (the paper's experiments: a 50-token suffix);
- ``longest-common-prefix``: how many leading tokens of the continuation equal the suffix;
- ``extraction-strength`` (open-unlearning; Wang et al., ICLR 2025):
  ``1 - min{k : argmax f(prefix, y_<k) = y_>=k} / |y|``, the fraction of the suffix the
  model completes by itself once given its start (teacher-forced argmax from position k
  on equals greedy generation from there, so one forward pass gives it);
- ``exact-memorization`` (open-unlearning's ``exact_memorization``, Tirumala et al.): the
  fraction of suffix tokens equal to the teacher-forced argmax;
- ``verbmem`` (MUSE, Shi et al. 2024): ROUGE-L F1 of the decoded continuation against the
  decoded true suffix, on ``rouge_score``'s default tokens (lower-cased runs of
  ``[a-z0-9]``, no stemmer: MUSE's ``RougeEvalLogger``), the continuation cut at its first
  EOS (where ``generate`` stops).

Where the tools depart from their papers (not followed here): open-unlearning's
extraction strength and exact memorisation leave out the last labelled token ("-1 to
ignore eos prediction"), and its extraction strength is ``1/|y|`` instead of 0 when no
suffix of the labels matches (its loop variable stays at ``|y| - 1``).

References
----------
.. [1] Carlini, N., Ippolito, D., Jagielski, M., Lee, K., Tramèr, F. and Zhang, C.
   "Quantifying Memorization Across Neural Language Models." ICLR 2023.
.. [2] Shi, W., Lee, J., Huang, Y., et al. "MUSE: Machine Unlearning Six-Way Evaluation
   for Language Models." arXiv:2407.06460, 2024.
.. [3] Wang, Q., et al. "Towards Effective Evaluations and Comparisons for LLM Unlearning
   Methods." ICLR 2025 (extraction strength); open-unlearning,
   ``src/evals/metrics/memorization.py``.
.. [4] Lin, C.-Y. "ROUGE: A Package for Automatic Evaluation of Summaries." ACL workshop
   2004 (ROUGE-L, Section 3.1).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privaudit._optional import import_optional
from privaudit._progress import as_progress
from privaudit._validation import check_random_state, param_error
from privaudit.metrics import (
    Estimate,
    bootstrap_ci,
    newcombe_interval,
    roc_auc,
    wilson_interval,
)
from privaudit.results import AttackResult

__all__ = [
    "CHECKS",
    "common_prefix_length",
    "exact_memorization",
    "extraction_checks",
    "extraction_strength",
    "greedy_continuations",
    "rouge_l_f1",
    "rouge_tokens",
    "teacher_forced_argmax",
]

_FUNC = "extraction_checks"

#: The extraction checks, by their result names (kebab-case).
CHECKS = ("k-extractability", "longest-common-prefix", "extraction-strength",
          "exact-memorization", "verbmem")
#: The checks whose per-text value is 0 or 1 (Wilson / Newcombe intervals).
_BINARY = ("k-extractability",)


def _torch() -> Any:
    return import_optional("torch", extra="llm", purpose="Extraction checks of a language model")


@dataclass
class _Split:
    """One text's token ids: the prompt the model continues and the suffix it should give."""

    prefix: list[int]
    suffix: list[int]


# --------------------------------------------------------------------------- per-text metrics
def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def extraction_strength(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """``1 - k*/n``, ``k*`` the first index from which every prediction equals its label.

    ``predictions`` are the teacher-forced argmax tokens of the ``n`` labels; ``k* = n``
    (strength 0) when even the last one is wrong (Wang et al. 2025's definition; see the
    module notes for open-unlearning's ``1/n`` there).
    """
    pred, lab = np.asarray(predictions), np.asarray(labels)
    n = lab.shape[0]
    wrong = np.flatnonzero(pred != lab)
    first_all_right = 0 if wrong.size == 0 else int(wrong[-1]) + 1
    return 1.0 - first_all_right / n if n else math.nan


def exact_memorization(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """Fraction of labels equal to the teacher-forced argmax (open-unlearning's EM)."""
    lab = np.asarray(labels)
    return float(np.mean(np.asarray(predictions) == lab)) if lab.size else math.nan


_NON_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")


def rouge_tokens(text: str) -> list[str]:
    """``rouge_score``'s default tokens: lower-case, runs of ``[a-z0-9]`` (no stemmer)."""
    return _NON_ALPHANUMERIC.sub(" ", text.lower()).split()


def rouge_l_f1(prediction: str, target: str) -> float:
    """ROUGE-L F1 of ``prediction`` against ``target`` (Lin 2004, Section 3.1).

    ``P = LCS / len(prediction)``, ``R = LCS / len(target)``, ``F = 2PR / (P + R)`` over
    :func:`rouge_tokens`; 0 when either has no token or the LCS is empty, as
    ``rouge_score.rouge_scorer`` scores them.
    """
    pred, ref = rouge_tokens(prediction), rouge_tokens(target)
    if not pred or not ref:
        return 0.0
    previous = [0] * (len(ref) + 1)
    for word in pred:
        row = [0]
        for j, other in enumerate(ref):
            row.append(previous[j] + 1 if word == other else max(previous[j + 1], row[j]))
        previous = row
    lcs = previous[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(pred), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------- the model's side
def _device_of(model: Any, device: Any) -> Any:
    torch = _torch()
    if device is not None:
        return torch.device(device)
    first = next(iter(model.parameters()), None)
    return torch.device("cpu") if first is None else first.device


def _pad_id(tokenizer: Any) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0  # hidden by the attention mask


def _left_pad(rows: Sequence[Sequence[int]], pad_id: int, device: Any) -> tuple[Any, Any, Any]:
    """Left-padded ids, attention mask and positions counting real tokens only.

    Positions restart at 0 on each row's first real token, so a padded row sees the
    positions it would see alone.
    """
    torch = _torch()
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, width - len(row):] = torch.as_tensor(list(row), dtype=torch.long)
        mask[b, width - len(row):] = 1
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    return ids.to(device), mask.to(device), positions.to(device)


class _Forward:
    """One cached forward pass of ``model``: its logits and its KV cache.

    The cache is passed and read under the name the model's ``forward`` takes (``cache``
    in transformers 5, ``past_key_values`` before); positions are passed when it takes
    them. Its signature is read once, not at every generated token.
    """

    def __init__(self, model: Any) -> None:
        accepted = inspect.signature(model.forward).parameters
        self.model = model
        self.cache_name = "cache" if "cache" in accepted else "past_key_values"
        self.positions = "position_ids" in accepted
        self.logits_to_keep = "logits_to_keep" in accepted

    def __call__(self, ids: Any, mask: Any, positions: Any, past: Any = None,
                 last_only: bool = False) -> tuple[Any, Any]:
        """Logits and cache of one pass.

        ``last_only`` asks for the last position's logits only, when the model can
        (``logits_to_keep``): a prefill never builds the vocabulary axis for the whole
        prefix.
        """
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "use_cache": True}
        if self.positions:
            kwargs["position_ids"] = positions
        if past is not None:
            kwargs[self.cache_name] = past
        if last_only and self.logits_to_keep:
            kwargs["logits_to_keep"] = 1
        out = self.model(**kwargs)
        cache = getattr(out, "cache", None)
        return out.logits, getattr(out, "past_key_values", None) if cache is None else cache


def _greedy_batch(model: Any, prefixes: Sequence[Sequence[int]], steps: int, pad_id: int,
                  device: Any) -> Any:
    """``steps`` greedy tokens after each prefix, one cached forward step per token.

    Our own loop rather than ``generate``: it never stops at EOS (every row gets the
    same number of tokens, as one text alone would) and it passes the positions.
    """
    torch = _torch()
    forward = _Forward(model)
    ids, mask, positions = _left_pad(prefixes, pad_id, device)
    logits, cache = forward(ids, mask, positions, last_only=True)
    token = logits[:, -1].float().argmax(-1)
    tokens = [token]
    positions = positions[:, -1:]
    for _ in range(steps - 1):
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        positions = positions + 1
        logits, cache = forward(token[:, None], mask, positions, cache)
        token = logits[:, -1].float().argmax(-1)
        tokens.append(token)
    return torch.stack(tokens, dim=1).cpu()


class _EvalMode:
    """Evaluation mode inside the block, the model's own mode restored after it."""

    def __init__(self, model: Any) -> None:
        self.model, self.mode = model, bool(getattr(model, "training", False))

    def __enter__(self) -> None:
        self.model.eval()

    def __exit__(self, *exc: object) -> None:
        self.model.train(self.mode)


def _batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices in chunks of ``batch_size``, longest first (less padding)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[s:s + batch_size] for s in range(0, len(order), batch_size)]


def greedy_continuations(model: Any, tokenizer: Any, prefixes: Sequence[Sequence[int]],
                         n_tokens: int, *, batch_size: int = 8, device: Any = None,
                         progress: Any = None) -> list[list[int]]:
    """The greedy continuation of ``n_tokens`` tokens of each prefix (token ids).

    Batched (``batch_size`` prefixes per pass, left-padded, longest first) with the KV
    cache, on the model's device (or ``device``). Each continuation is the one the prefix
    gets alone (checked token for token in the tests).
    """
    torch = _torch()
    place, pad_id = _device_of(model, device), _pad_id(tokenizer)
    out: list[list[int]] = [[] for _ in prefixes]
    chunks = _batches([len(p) for p in prefixes], batch_size)
    bar = as_progress(progress, func=_FUNC)
    with _EvalMode(model), torch.inference_mode(), bar.task(
            "Generating continuations", total=len(chunks)) as step:
        for rows in chunks:
            tokens = _greedy_batch(model, [prefixes[i] for i in rows], n_tokens, pad_id, place)
            for b, i in enumerate(rows):
                out[i] = tokens[b].tolist()
            step.advance()
    return out


def teacher_forced_argmax(model: Any, tokenizer: Any, splits: Sequence[_Split], *,
                          batch_size: int = 8, device: Any = None) -> list[list[int]]:
    """The argmax token the model predicts at each suffix token, given the true history."""
    torch = _torch()
    place, pad_id = _device_of(model, device), _pad_id(tokenizer)
    out: list[list[int]] = [[] for _ in splits]
    with _EvalMode(model), torch.inference_mode():
        for rows in _batches([len(s.prefix) + len(s.suffix) for s in splits], batch_size):
            ids, mask, positions = _left_pad(
                [[*splits[i].prefix, *splits[i].suffix] for i in rows], pad_id, place)
            logits, _ = _Forward(model)(ids, mask, positions)
            longest = max(len(splits[i].suffix) for i in rows)
            # Position t predicts token t + 1: the last `longest` tokens, from one before.
            predicted = logits[:, -longest - 1:-1].float().argmax(-1).cpu()
            for b, i in enumerate(rows):
                n = len(splits[i].suffix)
                out[i] = predicted[b, longest - n:].tolist()
    return out


# --------------------------------------------------------------------------- inputs
def _split_texts(tokenizer: Any, texts: Any, param: str, prefix_length: int,
                 suffix_length: int) -> list[_Split]:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence) or not texts:
        raise param_error(param, _FUNC, "a non-empty sequence of texts", texts)
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise param_error(param, _FUNC, "a sequence of strings",
                              f"<{type(text).__name__} at position {i}>", error=TypeError)
        ids = list(tokenizer(text)["input_ids"])
        if len(ids) <= prefix_length:
            raise param_error(
                "prefix_length", _FUNC,
                f"shorter than every text, leaving a suffix to extract ({param}[{i}] has "
                f"{len(ids)} tokens)", prefix_length)
        out.append(_Split(ids[:prefix_length], ids[prefix_length:prefix_length + suffix_length]))
    return out


def _check_lengths(prefix_length: Any, suffix_length: Any, batch_size: Any) -> None:
    for name, value, low in (("prefix_length", prefix_length, 1),
                             ("suffix_length", suffix_length, 1),
                             ("batch_size", batch_size, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise param_error(name, _FUNC, "an integer", value, error=TypeError)
        if value < low:
            raise param_error(name, _FUNC, f"an integer >= {low}", value)


def _check_context(model: Any, prefix_length: int, suffix_length: int) -> None:
    """Prefix and suffix must fit the model's context (its config's position count)."""
    config = getattr(model, "config", None)
    context = getattr(config, "max_position_embeddings", None) or getattr(
        config, "n_positions", None)
    if isinstance(context, int) and prefix_length + suffix_length > context:
        raise param_error(
            "suffix_length", _FUNC,
            f"at most {context - prefix_length} (prefix_length + suffix_length within the "
            f"model's context of {context} tokens)", suffix_length)


def _check_names(checks: Any) -> tuple[str, ...]:
    names = (checks,) if isinstance(checks, str) else tuple(checks)
    unknown = [c for c in names if c not in CHECKS]
    if unknown or not names:
        raise param_error("checks", _FUNC, f"a non-empty list among {list(CHECKS)}", checks)
    return tuple(dict.fromkeys(names))


# --------------------------------------------------------------------------- per-text values
def _until_eos(tokens: Sequence[int], eos_id: int | None) -> list[int]:
    """The tokens before the first EOS (where ``generate`` would have stopped)."""
    tokens = list(tokens)
    return tokens[:tokens.index(eos_id)] if eos_id in tokens else tokens


def _decode(tokenizer: Any, tokens: Sequence[int]) -> str:
    # MUSE also asks for clean_up_tokenization_spaces, which only moves spaces around
    # punctuation: ROUGE's tokens (runs of [a-z0-9]) are the same either way.
    return str(tokenizer.decode(list(tokens), skip_special_tokens=True))


def per_text_values(tokenizer: Any, splits: Sequence[_Split],
                    continuations: Sequence[Sequence[int]],
                    predictions: Sequence[Sequence[int]] | None) -> dict[str, np.ndarray]:
    """Every check's value of each text, from its continuation and teacher-forced argmax."""
    eos_id = tokenizer.eos_token_id
    values: dict[str, list[float]] = {name: [] for name in CHECKS}
    for i, split in enumerate(splits):
        generated = list(continuations[i])[:len(split.suffix)]
        shared = common_prefix_length(generated, split.suffix)
        values["k-extractability"].append(float(shared == len(split.suffix)))
        values["longest-common-prefix"].append(float(shared))
        values["verbmem"].append(rouge_l_f1(_decode(tokenizer, _until_eos(generated, eos_id)),
                                            _decode(tokenizer, split.suffix)))
        if predictions is not None:
            values["extraction-strength"].append(extraction_strength(predictions[i],
                                                                     split.suffix))
            values["exact-memorization"].append(exact_memorization(predictions[i],
                                                                   split.suffix))
    return {name: np.asarray(v, dtype=np.float64) for name, v in values.items() if v}


# --------------------------------------------------------------------------- summaries
def _estimate(e: Estimate) -> dict[str, float]:
    return {"value": float(e.value), "low": float(e.low), "high": float(e.high)}


def _class_mean(label: int) -> Callable[[np.ndarray, np.ndarray], float]:
    def mean(labels: np.ndarray, scores: np.ndarray) -> float:
        return float(np.mean(scores[labels == label]))
    return mean


def _difference(labels: np.ndarray, scores: np.ndarray) -> float:
    return float(np.mean(scores[labels == 1]) - np.mean(scores[labels == 0]))


def comparison(name: str, labels: np.ndarray, values: np.ndarray, *, n_bootstrap: int,
               confidence: float, rng: np.random.Generator) -> dict[str, Any]:
    """Means on members and held-out texts, their difference and the AUC, with intervals.

    A 0/1 check gets Wilson intervals for its rates and Newcombe's for their difference;
    the others percentile bootstrap intervals (resampled within each set). The AUC treats
    the value as a membership score (higher = member), bootstrap interval.
    """
    boot = {"n_resamples": n_bootstrap, "confidence": confidence}
    if name in _BINARY:
        k1, n1 = int(values[labels == 1].sum()), int((labels == 1).sum())
        k0, n0 = int(values[labels == 0].sum()), int((labels == 0).sum())
        members, held_out = wilson_interval(k1, n1, confidence), wilson_interval(k0, n0,
                                                                                  confidence)
        difference, method = newcombe_interval(k1, n1, k0, n0, confidence), "wilson"
    else:
        members, held_out, difference = (
            bootstrap_ci(f, labels, values, random_state=rng, **boot)
            for f in (_class_mean(1), _class_mean(0), _difference))
        method = "bootstrap"
    auc = bootstrap_ci(roc_auc, labels, values, random_state=rng, **boot)
    return {"member_mean": _estimate(members), "held_out_mean": _estimate(held_out),
            "difference": _estimate(difference), "auc": _estimate(auc),
            "interval": method, "confidence": confidence}


# --------------------------------------------------------------------------- the checks
def extraction_checks(
    model: Any,
    tokenizer: Any,
    members: Sequence[str],
    non_members: Sequence[str],
    *,
    checks: Sequence[str] = CHECKS,
    prefix_length: int = 32,
    suffix_length: int = 50,
    batch_size: int = 8,
    device: Any = None,
    random_state: Any = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    target: str = "",
    progress: Any = None,
) -> dict[str, AttackResult]:
    """Extraction checks of members against held-out texts: what greedy decoding gives back.

    Parameters
    ----------
    model : transformers causal LM (torch module)
        Run in evaluation mode without gradients (its mode restored afterwards), on its
        own device unless ``device`` is given.
    tokenizer : transformers tokenizer
        Encodes each text with its own template (special tokens as it adds them).
    members, non_members : sequence of str
        Texts the model was trained on, and held-out texts of the same kind.
    checks : sequence of str, default=all of :data:`CHECKS`
        ``"k-extractability"``, ``"longest-common-prefix"``, ``"extraction-strength"``,
        ``"exact-memorization"``, ``"verbmem"`` (see the module notes for each
        definition).
    prefix_length : int, default=32
        Tokens of context ``k`` (Carlini et al. 2023), counting the special tokens the
        tokenizer's template adds (a BOS); every text must be longer.
    suffix_length : int, default=50
        Tokens to extract after the prefix (the paper's 50); a text with fewer tokens left
        is checked on the tokens it has.
    batch_size : int, default=8
        Texts per generation or forward pass.
    device : torch device or str, optional
        Where the batches go (default: where the model's parameters are).
    random_state : None, int or numpy.random.Generator
        The bootstrap draws of the intervals.
    n_bootstrap : int, default=1000
        Bootstrap resamples of each interval (0: no intervals, NaN bounds).
    confidence : float in (0, 1), default=0.95
        Level of every interval.
    target : str
        The model's name in the results.
    progress : None, bool, callable(str) or Progress
        A bar over the generation batches.

    Returns
    -------
    dict of str to AttackResult
        One result per check, by name: ``labels`` 1 for the members (first, in order) and
        0 for the held-out texts, ``scores`` and ``raw_statistic`` the per-text value
        (higher = more memorised: a membership score, so the report's AUC is the
        members-vs-held-out comparison). ``extra`` holds the comparison
        (:func:`comparison`: ``member_mean``, ``held_out_mean``, ``difference``, ``auc``
        as ``{"value", "low", "high"}``); the ``k-extractability`` result also holds each
        text's ``common_prefix_length``, ``suffix_tokens``, and its decoded
        ``continuations`` and ``suffixes``.

    Raises
    ------
    ValueError
        A text with no more than ``prefix_length`` tokens (named with its position),
        ``suffix_length`` or ``batch_size`` below 1, prefix and suffix longer than the
        model's context, an empty text list, an unknown check.
    """
    names = _check_names(checks)
    _check_lengths(prefix_length, suffix_length, batch_size)
    _check_context(model, prefix_length, suffix_length)
    rng = check_random_state(random_state, func=_FUNC)
    splits = (_split_texts(tokenizer, members, "members", prefix_length, suffix_length)
              + _split_texts(tokenizer, non_members, "non_members", prefix_length,
                             suffix_length))
    labels = np.repeat(np.array([1, 0], dtype=np.int8), [len(members), len(non_members)])
    generated = greedy_continuations(
        model, tokenizer, [s.prefix for s in splits], suffix_length, batch_size=batch_size,
        device=device, progress=progress)
    teacher = {"extraction-strength", "exact-memorization"} & set(names)
    predictions = (teacher_forced_argmax(model, tokenizer, splits, batch_size=batch_size,
                                         device=device) if teacher else None)
    values = per_text_values(tokenizer, splits, generated, predictions)
    parameters = {"prefix_length": int(prefix_length), "suffix_length": int(suffix_length),
                  "sets": ["members", "non_members"]}
    out = {}
    for name in names:
        extra = comparison(name, labels, values[name], n_bootstrap=n_bootstrap,
                           confidence=confidence, rng=rng)
        if name == "k-extractability":
            extra.update(_texts_of(tokenizer, splits, generated))
        out[name] = AttackResult(
            labels=labels, scores=values[name], attack=name, target=target,
            raw_statistic=values[name], raw_statistic_name=name.replace("-", "_"),
            parameters=parameters, extra=extra)
    return out


def _texts_of(tokenizer: Any, splits: Sequence[_Split],
              generated: Sequence[Sequence[int]]) -> dict[str, list[Any]]:
    """Per text: tokens matched, suffix length, decoded continuation and true suffix."""
    cut = [list(g)[:len(s.suffix)] for g, s in zip(generated, splits, strict=True)]
    return {
        "common_prefix_length": [common_prefix_length(c, s.suffix)
                                 for c, s in zip(cut, splits, strict=True)],
        "suffix_tokens": [len(s.suffix) for s in splits],
        "continuations": [_decode(tokenizer, c) for c in cut],
        "suffixes": [_decode(tokenizer, s.suffix) for s in splits],
    }
