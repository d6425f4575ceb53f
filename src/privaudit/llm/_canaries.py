"""Canaries for language models: secret-sharer and designed canaries, exposure, epsilon.

- :func:`secret_sharer_canaries`: a format with a ``{secret}`` slot filled with secrets
  drawn at random from a :class:`SecretSpace`, each to be inserted ``repetitions`` times
  (Carlini et al. 2019); :func:`rare_token_space` gives designed canaries' secrets, made of
  the tokens rarest in the fine-tuning data (Panda et al. 2025).
- :func:`insert_canaries`: the fine-tuning set with the canaries' copies at random places.
- :func:`canary_exposures`: each canary's exposure (exact, or the distribution fit).
- :func:`canary_epsilon`: each canary included with probability 1/2, one training run
  through the user's ``train(texts, *, random_state) -> model``, and Steinke et al.'s
  one-run lower bound on epsilon from the canaries' scores
  (:func:`privaudit.metrics.canary_epsilon_lower_bound`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from privaudit._validation import check_int, check_random_state, param_error
from privaudit.llm._exposure import (
    SLOT,
    Exposure,
    SecretSpace,
    exposure,
    exposures,
    secret_log_perplexity,
    split_format,
)

__all__ = ["SLOT", "Canary", "CanaryEpsilon", "Exposure", "Inserted", "SecretSpace",
           "canary_epsilon", "canary_exposures", "canary_scores", "exposure", "exposures",
           "insert_canaries", "rare_token_space", "secret_log_perplexity",
           "secret_sharer_canaries"]


@dataclass(frozen=True)
class Canary:
    """A canary: ``format`` with its slot filled by ``secret``, inserted ``repetitions`` times."""

    format: str
    secret: str
    repetitions: int

    @property
    def text(self) -> str:
        """The filled format, as inserted into the training texts."""
        prefix, suffix = split_format(self.format, func="Canary")
        return prefix + self.secret + suffix


def _check_repetitions(repetitions: Any, func: str) -> list[int]:
    if isinstance(repetitions, (int, np.integer)) and not isinstance(repetitions, bool):
        repetitions = [repetitions]
    if isinstance(repetitions, str) or not isinstance(repetitions, Sequence) or not repetitions:
        raise param_error("repetitions", func, "a non-empty sequence of integers >= 1",
                          repetitions, error=TypeError)
    return [check_int(r, param="repetitions", func=func, low=1) for r in repetitions]


def secret_sharer_canaries(format: str | Sequence[str], space: SecretSpace,
                           repetitions: int | Sequence[int] = (1, 4, 16), *,
                           random_state: Any = None) -> list[Canary]:
    """One canary per entry of ``repetitions``, its secret drawn uniformly from ``space``.

    Carlini et al. (2019), Section 3: a format ``s`` with a slot, a secret ``r`` drawn
    uniformly at random from the randomness space ``R``, the canary ``s[r]`` inserted
    into the training data a chosen number of times. Secrets are distinct (drawn without
    replacement). Canaries sharing a format compete in each other's ranks (an inserted
    secret that the model learnt ranks before the others): give one format per canary
    (a sequence as long as ``repetitions``) to measure each alone.

    Parameters
    ----------
    format : str or sequence of str
        With one ``{secret}`` slot each.
    space : SecretSpace
    repetitions : int or sequence of int >= 1, default=(1, 4, 16)
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    list of Canary
    """
    func = "secret_sharer_canaries"
    counts = _check_repetitions(repetitions, func)
    formats = [format] * len(counts) if isinstance(format, str) else list(format)
    if len(formats) != len(counts):
        raise param_error("format", func, f"one string or {len(counts)} strings (one per "
                          "repetition count)", format)
    for f in formats:
        split_format(f, func=func)
    if not isinstance(space, SecretSpace):
        raise param_error("space", func, "a SecretSpace", space, error=TypeError)
    if space.size < len(counts):
        raise param_error("space", func, f"a space of at least {len(counts)} secrets "
                          "(one per canary)", f"<{space.size} secrets>")
    secrets = space.sample(len(counts), check_random_state(random_state, func=func))
    return [Canary(f, s, r) for f, s, r in zip(formats, secrets, counts, strict=True)]


def rare_token_space(tokenizer: Any, corpus: Sequence[str], *, length: int,
                     pool_size: int = 32) -> SecretSpace:
    """Designed canaries' secrets: ``length`` tokens among the corpus's rarest.

    Panda et al. (ICLR 2025) make canaries easier to memorise, and so audits tighter, by
    building their secrets from tokens the model rarely sees. This is the simplest
    faithful version of their rare-token (unigram) design: the ``pool_size`` tokens least
    frequent in ``corpus`` (the fine-tuning texts; never-seen tokens first, ties by token
    id), special tokens and tokens that do not survive decoding and re-encoding alone
    left out. Their new-token canaries (tokens added to the vocabulary) need the model's
    embeddings resized inside the user's training and are not built here.

    Returns
    -------
    SecretSpace
        Over the pool's decoded tokens, joined without separator: ``pool_size ** length``
        secrets; draw canaries from it with :func:`secret_sharer_canaries`.
    """
    func = "rare_token_space"
    check_int(length, param="length", func=func, low=1)
    check_int(pool_size, param="pool_size", func=func, low=2)
    counts: Counter[int] = Counter()
    for text in corpus:
        counts.update(tokenizer(text, add_special_tokens=False)["input_ids"])
    special = set(getattr(tokenizer, "all_special_ids", ()))
    pool: list[str] = []
    for token in sorted(range(len(tokenizer)), key=lambda t: (counts[t], t)):
        text = tokenizer.decode([token])
        if (token in special or not text.strip()
                or tokenizer(text, add_special_tokens=False)["input_ids"] != [token]
                or text in pool):
            continue
        pool.append(text)
        if len(pool) == pool_size:
            return SecretSpace(tuple(pool), length)
    raise param_error("pool_size", func, f"at most the {len(pool)} usable tokens of the "
                      "tokenizer", pool_size)


class Inserted(NamedTuple):
    """The training texts with the canaries in them, and where each canary's copies went."""

    texts: list[str]
    positions: list[np.ndarray]


def insert_canaries(texts: Sequence[str], canaries: Sequence[Canary], *,
                    random_state: Any = None) -> Inserted:
    """``texts`` with ``canary.repetitions`` copies of each canary, at random places.

    The texts keep their order; the copies are spread uniformly (``random_state``) among
    them. ``positions[i]`` holds the indices of canary ``i``'s copies in the new texts.
    """
    func = "insert_canaries"
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise param_error("texts", func, "a sequence of strings", texts, error=TypeError)
    if not all(isinstance(c, Canary) for c in canaries):
        raise param_error("canaries", func, "Canary objects", canaries, error=TypeError)
    for c in canaries:
        check_int(c.repetitions, param="repetitions", func=func, low=1)
    rng = check_random_state(random_state, func=func)
    owner = np.concatenate([np.full(len(texts), -1)] + [
        np.full(c.repetitions, i) for i, c in enumerate(canaries)]).astype(int)
    n_copies = len(owner) - len(texts)
    # Copies go to random slots of the merged list; the texts fill the rest in order.
    slots = np.sort(rng.choice(len(owner), size=n_copies, replace=False))
    merged = np.full(len(owner), -1)
    merged[slots] = rng.permutation(owner[len(texts):])
    out, source = [], iter(texts)
    for who in merged:
        out.append(next(source) if who < 0 else canaries[who].text)
    positions = [np.flatnonzero(merged == i) for i in range(len(canaries))]
    return Inserted(out, positions)


def _by_format(canaries: Sequence[Canary]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, canary in enumerate(canaries):
        groups.setdefault(canary.format, []).append(i)
    return groups


def canary_exposures(model: Any, tokenizer: Any, canaries: Sequence[Canary],
                     space: SecretSpace, *, method: str = "auto", n_samples: int = 10_000,
                     batch_size: int = 64, random_state: Any = None) -> Any:
    """Each canary's :func:`exposure` in ``space``, as a DataFrame in canary order.

    Columns: ``format``, ``secret``, ``repetitions``, ``exposure`` (bits), ``rank``,
    ``log_perplexity`` (bits), ``method``, ``space_size``. Canaries of one format share
    one enumeration (or one sample) of the space.
    """
    import pandas as pd

    rng = check_random_state(random_state, func="canary_exposures")
    results: list[Exposure | None] = [None] * len(canaries)
    for fmt, members in _by_format(canaries).items():
        found = exposures(model, tokenizer, fmt, [canaries[i].secret for i in members],
                          space, method=method, n_samples=n_samples,
                          batch_size=batch_size, random_state=rng)
        for i, result in zip(members, found, strict=True):
            results[i] = result
    return pd.DataFrame([
        {"format": c.format, "secret": c.secret, "repetitions": c.repetitions,
         "exposure": r.exposure, "rank": r.rank, "log_perplexity": r.log_perplexity,
         "method": r.method, "space_size": r.space_size}
        for c, r in zip(canaries, results, strict=True) if r is not None])


def canary_scores(model: Any, tokenizer: Any, canaries: Sequence[Canary], *,
                  score: str = "loss", space: SecretSpace | None = None,
                  batch_size: int = 64, random_state: Any = None) -> np.ndarray:
    """Membership scores of the canaries (higher = more likely trained on).

    ``score="loss"``: minus the secret's mean negative log-likelihood per token (nats),
    given the format's prefix (the tokens :func:`secret_log_perplexity` sums);
    ``score="exposure"``: the canary's exposure in ``space``.
    """
    func = "canary_scores"
    if score == "exposure":
        if space is None:
            raise param_error("space", func, "a SecretSpace for score='exposure'", space)
        return canary_exposures(model, tokenizer, canaries, space, batch_size=batch_size,
                                random_state=random_state)["exposure"].to_numpy()
    if score != "loss":
        raise param_error("score", func, "'loss' or 'exposure'", score)
    out = np.empty(len(canaries))
    for fmt, members in _by_format(canaries).items():
        bits, counts = secret_log_perplexity(model, tokenizer, fmt,
                                             [canaries[i].secret for i in members],
                                             batch_size=batch_size, per_token=True)
        out[members] = -bits * np.log(2.0) / np.maximum(counts, 1)
    return out


class CanaryEpsilon(NamedTuple):
    """An epsilon lower bound from canaries included at random in one training run."""

    bound: Any                 # privaudit.metrics.CanaryBound
    included: np.ndarray       # bool, one per canary
    scores: np.ndarray         # canary_scores of the trained model
    model: Any


def canary_epsilon(train: Callable[..., Any], texts: Sequence[str],
                   canaries: Sequence[Canary], *, tokenizer: Any, delta: float,
                   score: str = "loss", space: SecretSpace | None = None,
                   confidence: float = 0.95, batch_size: int = 64,
                   random_state: Any = None, **bound_options: Any) -> CanaryEpsilon:
    """One-run epsilon lower bound from canaries each included with probability 1/2.

    Steinke, Nasr and Jagielski (2023): each canary is included independently with
    probability 1/2 (``random_state``), the included ones inserted (each
    ``repetitions`` times: a canary repeated ``k`` times is one record only for a
    training whose privacy unit is the group of its copies) and the model trained once,
    ``train(texts, *, random_state) -> model``; the canaries' scores
    (:func:`canary_scores`) go to :func:`privaudit.metrics.canary_epsilon_lower_bound`,
    with ``confidence``, ``delta`` and ``bound_options`` (``method``, ``threshold``,
    ``two_sided``).

    Returns
    -------
    CanaryEpsilon
        The bound, which canaries were included, their scores, the trained model.
    """
    from privaudit.metrics import canary_epsilon_lower_bound

    func = "canary_epsilon"
    if not callable(train):
        raise param_error("train", func, "a callable train(texts, *, random_state) -> "
                          "model", train, error=TypeError)
    if len(canaries) < 2:
        raise param_error("canaries", func, "at least 2 canaries", f"<{len(canaries)}>")
    rng = check_random_state(random_state, func=func)
    included = rng.random(len(canaries)) < 0.5
    chosen = [c for c, keep in zip(canaries, included, strict=True) if keep]
    inserted = insert_canaries(texts, chosen, random_state=rng)
    model = train(inserted.texts, random_state=int(rng.integers(2**31 - 1)))
    scores = canary_scores(model, tokenizer, canaries, score=score, space=space,
                           batch_size=batch_size, random_state=rng)
    bound = canary_epsilon_lower_bound(scores[included], scores[~included], delta=delta,
                                       confidence=confidence, random_state=rng,
                                       **bound_options)
    return CanaryEpsilon(bound, included, scores, model)
