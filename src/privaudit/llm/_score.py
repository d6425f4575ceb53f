"""``score_texts``: every membership statistic of many texts, one forward pass per batch."""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privaudit._optional import import_optional
from privaudit._progress import as_progress
from privaudit._validation import canonical_names, check_fraction, param_error
from privaudit.exceptions import DegenerateInputWarning, PrivauditWarning
from privaudit.llm._token_stats import (
    TokenStats,
    batch_statistics,
    model_device,
    token_stats,
    window_spans,
)

__all__ = ["STATISTICS", "as_text_list", "encode_texts", "frequency_table", "score_texts"]

_FUNC = "score_texts"

#: Every statistic, by its name in the one vocabulary (kebab-case, issue 21): the names
#: :func:`score_texts` takes and names its columns by. The previous names (``min_k``,
#: ``min_k_plus_plus``, ``dc_pdd``) and MIMIR's (``min_k++``, ``ref``) are accepted with a
#: :class:`FutureWarning` (:data:`privaudit._validation.RENAMED_ATTACKS`).
STATISTICS = ("loss", "min-k", "min-k-plus-plus", "zlib", "reference", "gradnorm",
              "dc-pdd", "recall")
#: The statistics read from the target's forward pass alone.
_FORWARD = ("loss", "min-k", "min-k-plus-plus", "zlib", "dc-pdd")


def _torch() -> Any:
    return import_optional("torch", extra="llm", purpose="Scoring texts with a language model")


@dataclass
class Encoded:
    """One text as token ids, and which of its tokens are scored (the answer's)."""

    ids: list[int]
    labelled: list[bool]
    text: str          # what zlib compresses: the scored part
    prompt_length: int = 0  # tokens of a (prompt, answer) pair's prompt; 0 for a plain text

    def cut(self, max_length: int | None) -> Encoded:
        """The first ``max_length`` tokens (all of them for None)."""
        if max_length is None or len(self.ids) <= max_length:
            return self
        return Encoded(self.ids[:max_length], self.labelled[:max_length], self.text,
                       self.prompt_length)

    def labelled_after(self, head: int) -> list[bool]:
        """The labels once ``head`` tokens are put before the text (ReCaLL's prefix).

        A plain text's first token becomes scored, predicted from the prefix's last token,
        as the ReCaLL authors' code (and MIMIR) label it: only the prefix is -100.
        """
        if head == 0 or self.prompt_length or not self.labelled:
            return [False] * head + self.labelled
        return [False] * head + [True] * len(self.labelled)

    def after(self, head: Sequence[int]) -> Encoded:
        """The text with ``head`` put before it (labelled as :meth:`labelled_after` says)."""
        return Encoded([*head, *self.ids], self.labelled_after(len(head)), self.text,
                       self.prompt_length)

    def window(self, begin: int, end: int, new: int) -> Encoded:
        """Tokens ``[begin, end)``, only those from ``new`` on labelled.

        A sliding window's overlap with the windows before it is masked.
        """
        marks = [lab and t >= new for t, lab in enumerate(self.labelled[begin:end], begin)]
        return Encoded(self.ids[begin:end], marks, self.text, self.prompt_length)


def encode_texts(tokenizer: Any, texts: Sequence[Any], max_length: int | None,
                 vocab: int | None = None, *, chat_template: bool = False,
                 system_prompt: str | None = None) -> list[Encoded]:
    """Token ids of each text (or ``(prompt, answer)`` pair, or token ids), cut at ``max_length``.

    The tokenizer's own template decides special tokens (none added otherwise); for a pair,
    the prompt is encoded with it and the answer without, and only the answer is scored,
    as open-unlearning's labels (-100 on the prompt) do. A plain text's first token is not
    labelled (nothing predicts it), as open-unlearning's ``preprocess_pretraining_instance``
    labels it. Token ids (a list of ints) are taken as they are, scored as a plain text's
    tokens; zlib compresses them decoded without special tokens; with ``vocab``, an id
    outside ``[0, vocab)`` is an error naming ``texts``. With ``chat_template``, every
    text is a pair, rendered by the tokenizer's chat template (:mod:`privaudit.llm._chat`).
    ``max_length=None`` keeps every token (a sliding window scores them).
    """
    out = []
    for i, text in enumerate(texts):
        if chat_template:
            out.append(_chat_encoded(tokenizer, text, i, system_prompt).cut(max_length))
            continue
        if _is_token_ids(text):
            ids = [int(t) for t in text]
            _check_token_range(ids, i, vocab)
            labelled = [j > 0 for j in range(len(ids))]
            scored = tokenizer.decode(ids, skip_special_tokens=True)
        elif isinstance(text, str):
            ids = list(tokenizer(text)["input_ids"])
            # No label on the first token: nothing predicts it (open-unlearning's labels).
            labelled, scored = [j > 0 for j in range(len(ids))], text
        elif (isinstance(text, (tuple, list)) and len(text) == 2
              and all(isinstance(part, str) for part in text)):
            prompt = list(tokenizer(text[0])["input_ids"])
            answer = list(tokenizer(text[1], add_special_tokens=False)["input_ids"])
            ids, labelled = prompt + answer, [False] * len(prompt) + [True] * len(answer)
            scored = text[1]
            out.append(Encoded(ids, labelled, scored, len(prompt)).cut(max_length))
            continue
        else:
            raise param_error("texts", _FUNC, "strings, (prompt, answer) pairs of strings "
                              "or token ids (lists of ints)",
                              f"<{type(text).__name__} at position {i}>", error=TypeError)
        out.append(Encoded(ids, labelled, scored).cut(max_length))
    return out


def _chat_encoded(tokenizer: Any, text: Any, position: int,
                  system_prompt: str | None) -> Encoded:
    """A (prompt, answer) pair rendered by the chat template; only its answer scored."""
    from privaudit.llm._chat import encode_chat_pair

    if not (isinstance(text, (tuple, list)) and len(text) == 2
            and all(isinstance(part, str) for part in text)):
        raise param_error("texts", _FUNC, "(prompt, answer) pairs of strings with "
                          "chat_template=True", f"<{type(text).__name__} at position "
                          f"{position}>", error=TypeError)
    ids, n_prompt = encode_chat_pair(tokenizer, text[0], text[1], system_prompt)
    return Encoded(ids, [j >= n_prompt for j in range(len(ids))], text[1], n_prompt)


def _is_token_ids(text: Any) -> bool:
    """A list or tuple of Python or NumPy ints (an empty list is an empty text)."""
    return (isinstance(text, (list, tuple))
            and all(isinstance(t, (int, np.integer)) and not isinstance(t, bool)
                    for t in text))


def as_text_list(texts: Any) -> list[Any]:
    """The texts as a list, token-id tensors and arrays turned into lists of ints.

    A 2-D tensor or array is read as one text per row (no padding in it); a list may mix
    strings, ``(prompt, answer)`` pairs and 1-D id tensors, arrays or lists.
    """
    if isinstance(texts, (str, bytes)):
        raise param_error("texts", _FUNC, "a non-empty sequence of texts", texts)
    if hasattr(texts, "tolist") and getattr(texts, "ndim", 0) == 2:
        texts = texts.tolist()
    if not isinstance(texts, Sequence) or not texts:
        raise param_error("texts", _FUNC, "a non-empty sequence of texts", texts)

    def one(text: Any) -> Any:
        if hasattr(text, "tolist") and getattr(text, "ndim", None) == 1:
            return [int(t) for t in text.tolist()]
        return text

    return [one(text) for text in texts]


def _check_token_range(ids: list[int], position: int, vocab: int | None) -> None:
    """Every token id within the model's vocabulary: one error naming ``texts``."""
    bad = [t for t in ids if t < 0 or (vocab is not None and t >= vocab)]
    if bad:
        raise param_error("texts", _FUNC, f"token ids in [0, {vocab})",
                          f"<id {bad[0]} in text {position}>")


def frequency_table(token_frequencies: Any, vocab_size: int) -> np.ndarray:
    """DC-PDD's token frequencies: add-one smoothed counts of a reference corpus.

    ``token_frequencies`` holds counts per token id (a mapping or a sequence indexed by
    id); the table is ``(count + 1) / (total + vocab_size)``, as Zhang et al. smooth it, so
    no token has frequency 0.
    """
    counts = np.zeros(vocab_size, dtype=np.float64)
    if isinstance(token_frequencies, Mapping):
        for key, value in token_frequencies.items():
            if not 0 <= int(key) < vocab_size:
                raise param_error("token_frequencies", _FUNC,
                                  f"token ids in [0, {vocab_size})", key)
            counts[int(key)] = float(value)
    else:
        given = np.asarray(token_frequencies, dtype=np.float64)
        if given.ndim != 1 or given.size > vocab_size:
            raise param_error("token_frequencies", _FUNC,
                              f"counts per token id (at most {vocab_size})",
                              f"<array of shape {given.shape}>")
        counts[:given.size] = given
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise param_error("token_frequencies", _FUNC, "finite non-negative counts",
                          "<negative or non-finite values>")
    return (counts + 1.0) / (counts.sum() + vocab_size)


@dataclass
class _Batch:
    """One padded batch: ids, attention, labelled tokens, positions (torch tensors)."""

    input_ids: Any
    attention_mask: Any
    labelled: Any
    position_ids: Any

    @property
    def scored(self) -> Any:
        """Shifted positions whose next token counts.

        Labelled, and predicted from a real token (not padding: a left-padded text's
        first token has no predecessor).
        """
        real = self.attention_mask.bool()
        return self.labelled[:, 1:] & real[:, 1:] & real[:, :-1]


def _pad(items: Sequence[Encoded], pad_id: int, side: str,
         prefix: Sequence[int] = (), limit: int | None = None) -> _Batch:
    torch = _torch()
    rows = []
    for e in items:
        # The text stays whole; a prefix that would not fit the context loses its start.
        room = len(prefix) if limit is None else max(0, min(len(prefix), limit - len(e.ids)))
        head = list(prefix)[len(prefix) - room:]
        rows.append((head + e.ids, e.labelled_after(len(head))))
    width = max(1, max(len(ids) for ids, _ in rows))
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    labelled = torch.zeros((len(rows), width), dtype=torch.bool)
    for b, (row, lab) in enumerate(rows):
        span = slice(width - len(row), width) if side == "left" else slice(0, len(row))
        ids[b, span] = torch.as_tensor(row, dtype=torch.long)
        attention[b, span] = 1
        labelled[b, span] = torch.as_tensor(lab, dtype=torch.bool)
    # Positions count real tokens only, so a left-padded text sees the positions it would
    # see alone (models that infer them from cache positions would shift them).
    position_ids = (attention.cumsum(-1) - 1).clamp_min(0)
    return _Batch(ids, attention, labelled, position_ids)


def _logits(model: Any, batch: _Batch, last: int | None = None) -> Any:
    """The model's logits of the batch; with ``last``, of its last ``last`` positions only.

    ``last`` is passed as transformers' ``logits_to_keep`` when the model takes it (the
    output layer then runs on those positions alone), else the logits are sliced.
    """
    import inspect

    kwargs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
    parameters = inspect.signature(model.forward).parameters
    if "position_ids" in parameters:
        kwargs["position_ids"] = batch.position_ids
    device = model_device(model)  # each model gets the batch where it is (its own device)
    kwargs = {key: value.to(device) for key, value in kwargs.items()}
    if last is not None and "logits_to_keep" in parameters:
        kwargs["logits_to_keep"] = last
    out = model(**kwargs)
    logits = out.logits if hasattr(out, "logits") else out[0]
    return logits if last is None else logits[:, logits.shape[1] - last:]


#: Revision of each ``compat`` mode's token handling: it enters the run and cache keys, so
#: a change of what a mode computes (revision 2: a plain text's first token is never
#: labelled, as open-unlearning's data pipeline labels it) never reuses older numbers.
#: Revision 3 of ``open-unlearning``: GradNorm without the last labelled token, as its
#: ``tokenwise_logprobs`` drops it; ``mimir`` added (revision 1).
COMPAT_REVISIONS = {"open-unlearning": 3, "mimir": 1}


#: Revision of a statistic whose definition changed (revision 2 of ``recall``: the text's
#: first token is scored after the prefix, as the authors' code scores it): it enters the
#: cache keys of the runs that ask for it, so older numbers are never reused.
STATISTIC_REVISIONS = {"recall": 2}


def statistic_key(name: str) -> str:
    """A statistic's name as it enters a cache key (unchanged when never revised)."""
    return f"{name}@{STATISTIC_REVISIONS[name]}" if name in STATISTIC_REVISIONS else name


def compat_key(compat: str | None) -> str | None:
    """``compat`` as it enters a run or cache key (None unchanged: older keys still match)."""
    return None if compat is None else f"{compat}@{COMPAT_REVISIONS[compat]}"


def _open_unlearning_masks(batch: _Batch) -> tuple[Any, Any]:
    """open-unlearning's token handling, as masks.

    LOSS is divided by the number of labelled tokens (``labels != -100`` before the shift,
    so a labelled token at index 0, which nothing predicts, would count: an answer after an
    empty prompt; open-unlearning's own data never label index 0, so for them this is the
    number of scored tokens); Min-K and Min-K++ leave out the last labelled token
    (``tokenwise_logprobs``: "-1 to ignore eos prediction").
    """
    torch = _torch()
    scored = batch.scored
    denominator = (batch.labelled & batch.attention_mask.bool()).sum(-1)
    width = batch.labelled.shape[1]
    last = torch.where(batch.labelled, torch.arange(width, device=batch.labelled.device),
                       -1).max(-1).values
    min_k = scored.clone()
    rows = torch.nonzero(last >= 1)[:, 0]
    min_k[rows, last[rows] - 1] = False
    return denominator, min_k


def _score_batch(model: Any, batch: _Batch, names: tuple[str, ...], s: dict[str, Any],
                 logits: Any = None) -> dict[str, np.ndarray]:
    """The forward statistics of a batch (from ``logits`` when the pass was already run)."""
    logits = _logits(model, batch) if logits is None else logits
    stats = token_stats(logits, batch.input_ids, batch.scored,
                        moments="min-k-plus-plus" in names)
    del logits
    return _statistics(stats, batch, names, s)


def _score_items(model: Any, items: Sequence[Encoded], names: tuple[str, ...],
                 s: dict[str, Any], pad_id: int, head: Sequence[int] = (),
                 padded: tuple[_Batch, Any] | None = None) -> dict[str, np.ndarray]:
    """The forward statistics of texts with ``head`` put before each, in one batch.

    In one pass when every text fits (``head`` losing its start when it and a text would
    not fit the context, see :func:`_pad`; ``padded``: the texts' batch and its logits,
    already computed), or by the sliding window (``stride``) when a text is longer than
    the window: then ``head`` and the text are scored as one sequence.
    """
    if s["stride"] is None or max(len(head) + len(e.ids) for e in items) <= s["window"]:
        batch, logits = padded or (_pad(items, pad_id, s["padding_side"], head,
                                        s["context"]), None)
        return _score_batch(model, batch, names, s, logits)
    joined = [e.after(head) for e in items]
    stats, whole = _windowed_stats(model, joined, s, pad_id,
                                   moments="min-k-plus-plus" in names)
    return _statistics(stats, whole, names, s)


def _windowed_stats(model: Any, items: Sequence[Encoded], s: dict[str, Any], pad_id: int,
                    *, moments: bool) -> tuple[Any, _Batch]:
    """Per-token quantities of whole texts, each token read from the window scoring it.

    The windows of :func:`~privaudit.llm._token_stats.window_spans` (Hugging Face's
    perplexity recipe); the ``w``-th windows of all texts make one padded batch, so memory
    is bounded by ``batch_size x window`` positions whatever the texts' length (the logits
    by ``batch_size x stride`` after the first window). Returned
    as :func:`token_stats` returns one pass over the texts padded on the right (which is
    also returned): the statistics then read them as from one pass of unbounded context.
    """
    torch = _torch()
    whole = _pad(items, pad_id, "right")
    device = model_device(model)
    shape = (len(items), whole.input_ids.shape[1] - 1)
    log_prob = torch.zeros(shape, dtype=torch.float32, device=device)
    mu = torch.zeros_like(log_prob) if moments else None
    sigma = torch.ones_like(log_prob) if moments else None
    spans = [window_spans(len(e.ids), s["window"], s["stride"]) for e in items]
    for w in range(max(len(spans_of) for spans_of in spans)):
        rows = [b for b in range(len(items)) if w < len(spans[b])]
        pieces = [items[b].window(*spans[b][w]) for b in rows]
        batch = _pad(pieces, pad_id, s["padding_side"])
        scored_at = torch.nonzero(batch.scored.any(0))[:, 0]
        if scored_at.numel() == 0:  # nothing labelled in these windows (a long prompt)
            continue
        # Logits from the first scored position on only: a window's overlap costs the
        # output layer nothing (and its memory: batch x stride x vocabulary).
        first, width = int(scored_at[0]), batch.input_ids.shape[1]
        stats = token_stats(_logits(model, batch, last=width - first),
                            batch.input_ids[:, first:], batch.scored[:, first:],
                            moments=moments)
        # Local shifted position c of a piece starting at token `begin` (after `lead`
        # padding on the left) predicts the text's token begin + first + c + 1 - lead.
        shift = torch.tensor([spans[b][w][0] + first - (width - len(piece.ids)
                                                        if s["padding_side"] == "left" else 0)
                              for b, piece in zip(rows, pieces, strict=True)], device=device)
        local_row, local_col = torch.nonzero(stats.mask.to(device), as_tuple=True)
        row = torch.tensor(rows, device=device)[local_row]
        col = shift[local_row] + local_col
        log_prob[row, col] = stats.log_prob.to(device)[local_row, local_col]
        if moments:
            mu[row, col] = stats.mu.to(device)[local_row, local_col]
            sigma[row, col] = stats.sigma.to(device)[local_row, local_col]
    mask = whole.scored.to(device)
    return TokenStats(log_prob, mu, sigma, mask, whole.input_ids[:, 1:].to(device)), whole


def _statistics(stats: Any, batch: _Batch, names: tuple[str, ...],
                s: dict[str, Any]) -> dict[str, np.ndarray]:
    """The statistics of a batch's per-token quantities, in the ``compat`` mode's way."""
    extra: dict[str, Any] = {}
    if s["compat"] == "open-unlearning":
        extra["loss_denominator"], extra["min_k_mask"] = _open_unlearning_masks(batch)
    elif s["compat"] == "mimir":
        extra["min_k_at_least_one"] = False  # int(len(probs) * k) tokens
    return batch_statistics(stats, names, k=s["k"], frequencies=s["frequencies"],
                            dc_pdd_a=s["dc_pdd_a"], **extra)


def score_texts(
    model: Any,
    tokenizer: Any,
    texts: Sequence[Any],
    *,
    attacks: Sequence[str] = ("loss", "min-k", "min-k-plus-plus", "zlib"),
    k: float = 0.2,
    p: float = 2,
    reference_model: Any = None,
    token_frequencies: Any = None,
    dc_pdd_a: float = 0.01,
    recall_prefix: str | Sequence[str] | None = None,
    batch_size: int = 8,
    max_length: int = 512,
    stride: int | None = None,
    window: int | None = None,
    compat: str | None = None,
    padding_side: str | None = None,
    chat_template: bool = False,
    system_prompt: str | None = None,
    device: Any = None,
    dtype: Any = None,
    progress: Any = None,
    executor: Any = None,
    n_jobs: int | None = None,
    cache_dir: Any = None,
    devices: Any = None,
) -> Any:
    """Every requested membership statistic of every text, in one pass per batch.

    Parameters
    ----------
    model : transformers causal LM (torch module)
        Scored in evaluation mode without gradients (its mode is restored afterwards);
        any dtype (bf16, fp16): statistics are computed in float32 and returned as float64.
    tokenizer : transformers tokenizer
        Never modified: a missing pad token is replaced by its EOS (else 0) in the batch
        only (the attention mask hides it).
    texts : sequence of str, (prompt, answer) pairs or token ids
        For a pair, only the answer's tokens are scored (labels -100 on the prompt).
        Pretokenized texts as users of MIMIR and open-unlearning hold them: lists of
        ints, 1-D tensors or arrays, or a 2-D tensor (one text per row, no padding in
        it), scored as plain texts (every token but the first); ids outside the model's
        vocabulary are an error.
    attacks : sequence of str
        Statistics to compute, among :data:`STATISTICS` (kebab-case). ``loss``,
        ``min-k``, ``min-k-plus-plus``, ``zlib`` and ``dc-pdd`` share one forward pass
        per batch; ``reference`` adds one pass of ``reference_model``, ``recall`` one
        pass with the prefix, ``gradnorm`` one backward pass. The previous names
        (``min_k``, ``min_k_plus_plus``, ``dc_pdd``) and MIMIR's (``min_k++``,
        ``min-k++``, ``ref``) are accepted, with one :class:`FutureWarning` per call.
    k : float in (0, 1], default=0.2
        Fraction of tokens Min-K and Min-K++ average.
    p : {1, 2, inf}, default=2
        Norm of GradNorm.
    reference_model : causal LM, optional
        For ``reference`` (LOSS under the target minus LOSS under it); same tokenizer.
    token_frequencies : mapping or sequence, optional
        Token counts of a reference corpus (never downloaded), for ``dc-pdd``; see
        :func:`frequency_table`.
    dc_pdd_a : float, default=0.01
        DC-PDD's upper bound on each token's term (Zhang et al.'s default).
    recall_prefix : str or list of str, optional
        Known non-member text, or a list of such texts (shots, joined with nothing between
        them, as the ReCaLL authors' code joins them), for ``recall``; encoded with the
        tokenizer's template and put before each text, whose every token is then scored
        (the first one predicted from the prefix's last token, as in the authors' code).
    batch_size, max_length : int
        Texts per forward pass; tokens kept per text (the first ``max_length``, and never
        more than the model's context; a text cut so is counted in one
        :class:`~privaudit.exceptions.PrivauditWarning`), unless ``stride`` is given.
        ReCaLL's prefix keeps its end when prefix and text would not fit the context
        together: the text is always scored whole.
    stride : int, optional
        Score every text whole, a text longer than ``window`` by a sliding window moving
        ``stride`` tokens at a time (Hugging Face's perplexity recipe): each token scored
        once, from the window that first reaches it, with the ``window - stride`` to
        ``window - 1`` tokens before it as context (the overlap's labels masked).
        ``max_length`` then cuts nothing. Every statistic of the per-token log-probabilities
        is read so: LOSS, zlib, Min-K, Min-K++ (its moments per window), DC-PDD (first
        occurrences over the whole text), ``reference`` (the reference model windowed
        alike), ``recall`` (the prefix and the text as one sequence: a text token sees the
        prefix while it is within its window), MIMIR's DC-PDD (EOS and text as one
        sequence). ``gradnorm`` differentiates the whole text's loss in one pass and cannot
        be read window by window: a text longer than the window is then an error naming
        ``stride``. Texts that fit the window are scored exactly as without ``stride``.
        Default: None (texts cut at ``max_length``, as before).
    window : int, optional
        Tokens per window with ``stride`` (more than ``stride``, at most the model's
        context and the reference model's). Default: ``max_length`` (never more than
        those contexts), so that a window costs the memory a cut text did.
    compat : {None, "open-unlearning", "mimir"}
        ``None``: the papers' definitions (LOSS over every scored token; Min-K over
        ``max(1, floor(k n))`` tokens; DC-PDD from the second token; GradNorm the mean
        over trainable parameter tensors of ``||dL/dW||_p``, in evaluation mode). The
        modes reproduce a tool's token handling, each checked in the tests against a
        transcription of the tool's code on several texts padded on both sides.
        ``"open-unlearning"``: LOSS divided by the number of labelled tokens, index 0
        included when labelled (only an answer after an empty prompt: a plain text's first
        token is never labelled); Min-K, Min-K++ and GradNorm without the last labelled
        token (its ``tokenwise_logprobs`` drops it, "to ignore eos prediction"; its
        answers end with EOS: append the tokenizer's EOS to match them); zlib over the
        labelled tokens decoded without special tokens. Where it scores an empty Min-K as
        0, this gives NaN; it computes GradNorm in training mode (dropout on, so its
        values are random on a model with dropout), this in evaluation mode.
        ``"mimir"``: Min-K and Min-K++ average ``floor(k n)`` tokens (NaN when that is 0,
        as MIMIR's mean of an empty list); GradNorm negated (MIMIR returns ``-mean
        ||g||_p``; its default ``p`` is inf, pass ``p=inf`` to match); DC-PDD puts the
        tokenizer's EOS before the text and scores every token, the first one included.
        Both tools average GradNorm over the parameters that received a gradient (here:
        every trainable one, an unused one counting 0; the same on a model that uses all
        its parameters). Other statistics are the default's.
    padding_side : {"right", "left"}, optional
        Where the batches are padded; default: the tokenizer's ``padding_side``. The
        statistics do not depend on it (positions count real tokens only).
    chat_template : bool, default=False
        Render every text, a ``(prompt, answer)`` pair, with the tokenizer's chat template
        (``tokenizer.apply_chat_template``, as a chat model is fine-tuned): the prompt as
        the user's turn, the answer as the assistant's; the tokens after the prompt
        rendered with ``add_generation_prompt=True`` are scored (the answer and the end of
        turn, EOS appended when the template omits it), as open-unlearning does for chat
        models. A tokenizer without a template is an error naming ``chat_template``.
    system_prompt : str, optional
        With ``chat_template``: a system turn put before the user's.
    device : str or torch.device, optional
        Where to score: the model (and the reference model) are moved there in place, as
        ``model.to(device)`` moves them. Default: where each model already is. Every batch
        goes to its model's device (the device of its input embeddings); the statistics
        are computed there and returned to the CPU.
    dtype : {"float32", "bfloat16", "float16"} or torch.dtype, optional
        The models' floating-point type: cast in place (``model.to(dtype)``), as loading
        them in it would (``torch_dtype=``). Default: as they are. Whatever the dtype, the
        statistics are accumulated in float32 (the logits and GradNorm's per-token loss
        read in float32, sums in float64). A dtype the device cannot run is an error
        naming ``dtype``.
    progress : None, callable(str) or Progress
        A bar over the batches (or the shards).
    executor : {"local", "ray"} or Executor, optional
        Shard the corpus over worker processes or a Ray cluster (one model copy per
        worker; shards cut on batch boundaries, so the numbers are those of one process
        under the executor's thread limits). Default: this process.
    n_jobs : int, optional
        Local worker processes (``executor="local"``), or a local Ray instance's CPUs.
    cache_dir : path, optional
        Write each finished shard there (atomically); a rerun with the same model, texts
        and settings scores only the missing shards.
    devices : "auto" or list of str, optional
        Score on several devices, one worker process per device (``["cuda:0",
        "cuda:1"]``; ``"auto"``: every visible CUDA device; with ``executor="ray"``,
        ``"auto"`` only: one task per GPU of the cluster, ``num_gpus=1``). Each worker
        moves its copy of the model(s) to its device once and scores its shards there, so
        N devices score N times the texts; the numbers are those of one worker (bit for
        bit in float32 on identical devices). Not with ``device`` or ``n_jobs``.

    Returns
    -------
    pandas.DataFrame
        One row per text, in input order; one float64 column per statistic asked for,
        named by :data:`STATISTICS`, each in the guide's convention (higher = less likely
        member): ``loss``, ``min-k``, ``min-k-plus-plus``, ``zlib`` (LOSS /
        zlib-compressed length of the UTF-8 text), ``reference``, ``gradnorm``, ``dc-pdd``
        (minus Zhang et al.'s score), ``recall`` (minus ReCaLL's ``LL(x | prefix) /
        LL(x)``, Xie et al.). A text with no scored token (empty, one token, an answer cut
        off) gets NaN, with a :class:`~privaudit.exceptions.DegenerateInputWarning`. For
        one release, a column read by its previous name (``frame["min_k"]``) answers with
        a :class:`FutureWarning` (:class:`~privaudit.llm._frame.StatisticFrame`).

    Notes
    -----
    Texts are sorted by length (stable, longest first) before batching, which cuts
    padding; each text's statistics do not depend on its batch (checked against a
    one-text-at-a-time reference in the tests).

    References
    ----------
    .. [1] Yeom, S., et al. "Privacy Risk in Machine Learning." CSF 2018 (LOSS).
    .. [2] Carlini, N., et al. "Extracting Training Data from Large Language Models."
       USENIX Security 2021 (zlib, reference).
    .. [3] Xie, R., et al. "ReCaLL: Membership Inference via Relative Conditional
       Log-Likelihoods." EMNLP 2024.
    .. [4] Wang, Z., et al. / open-unlearning: GradNorm as in the MIA metrics guide.
    """
    from privaudit.llm._frame import StatisticFrame

    names = _check_names(attacks)
    settings = _settings(model, names, k=k, p=p, reference_model=reference_model,
                         token_frequencies=token_frequencies, dc_pdd_a=dc_pdd_a,
                         recall_prefix=recall_prefix, batch_size=batch_size,
                         max_length=max_length, stride=stride, window=window, compat=compat,
                         padding_side=_padding_side(padding_side, tokenizer),
                         chat_template=chat_template, system_prompt=system_prompt,
                         dtype=None if dtype is None else str(resolve_dtype(dtype)))
    _check_chat(tokenizer, chat_template, system_prompt)
    texts = as_text_list(texts)
    if devices is not None and device is not None:
        raise param_error("device", _FUNC, "None when 'devices' is given (each worker "
                          "moves its copy to its own device)", device)
    place_models((model, settings["reference_model"]), device=device, dtype=dtype)
    encoded = _encode_all(tokenizer, texts, names, settings)
    if executor is None and n_jobs is None and cache_dir is None and devices is None:
        columns = _run_batches(model, tokenizer, encoded, names, settings, progress)
    else:
        columns = _sharded(model, tokenizer, texts, encoded, names, settings, executor=executor,
                           n_jobs=n_jobs, cache_dir=cache_dir, progress=progress,
                           devices=devices)
    degenerate = int(np.isnan(columns["loss"]).sum()) if "loss" in columns else 0
    if degenerate:
        warnings.warn(f"{_FUNC}: {degenerate} of {len(texts)} texts have no scored token "
                      "(empty, one token, or an answer cut off by max_length): their "
                      "statistics are NaN.", DegenerateInputWarning, stacklevel=2)
    return StatisticFrame({name: columns[name] for name in names})


def _check_chat(tokenizer: Any, chat_template: Any, system_prompt: Any) -> None:
    """The chat options checked (transformers' template code imported only when used)."""
    if chat_template is not False or system_prompt is not None:
        from privaudit.llm._chat import check_chat_options

        check_chat_options(tokenizer, chat_template, system_prompt)


def _encode_all(tokenizer: Any, texts: list[Any], names: tuple[str, ...],
                s: dict[str, Any]) -> list[Encoded]:
    """Every text encoded; cut at ``max_length`` (with a warning) unless windowed.

    With ``stride``, a text longer than the window and ``gradnorm`` is an error naming
    ``stride`` (GradNorm's gradient is of the whole text's loss, one pass).
    """
    encoded = encode_texts(tokenizer, texts, None, s["vocab"],
                           chat_template=s["chat_template"], system_prompt=s["system_prompt"])
    if s["stride"] is not None:
        longer = sum(len(e.ids) > s["window"] for e in encoded)
        if longer and "gradnorm" in names:
            raise param_error("stride", _FUNC, f"None with 'gradnorm' on texts longer than "
                              f"the window ({s['window']} tokens): GradNorm differentiates "
                              "a text's whole loss in one pass, not window by window",
                              f"<stride={s['stride']}, {longer} longer texts>")
        return encoded
    cut = sum(len(e.ids) > s["max_length"] for e in encoded)
    if cut:
        warnings.warn(f"{_FUNC}: {cut} of {len(encoded)} texts are longer than max_length "
                      f"({s['max_length']} tokens) and are scored on their first "
                      f"{s['max_length']} tokens only; pass stride= to score them whole by a "
                      "sliding window.", PrivauditWarning, stacklevel=3)
    return [e.cut(s["max_length"]) for e in encoded]


def _sharded(model: Any, tokenizer: Any, texts: Sequence[Any], encoded: list[Encoded],
             names: tuple[str, ...], s: dict[str, Any], *, executor: Any, n_jobs: Any,
             cache_dir: Any, progress: Any, devices: Any = None) -> dict[str, np.ndarray]:
    """:func:`score_sharded` with the executor resolved and the cache key computed."""
    from privaudit.llm._sharded import device_workers
    from privaudit.training import get_executor

    if devices is None:
        runner = get_executor("local" if executor is None else executor, n_jobs=n_jobs)
        return _sharded_on(model, tokenizer, texts, encoded, names, s, runner=runner,
                           pins=None, cache_dir=cache_dir, progress=progress)
    with device_workers(devices, executor=executor, n_jobs=n_jobs, func=_FUNC) as (runner, pins):
        return _sharded_on(model, tokenizer, texts, encoded, names, s, runner=runner,
                           pins=pins, cache_dir=cache_dir, progress=progress)


def _sharded_on(model: Any, tokenizer: Any, texts: Sequence[Any], encoded: list[Encoded],
                names: tuple[str, ...], s: dict[str, Any], *, runner: Any, pins: Any,
                cache_dir: Any, progress: Any) -> dict[str, np.ndarray]:
    """:func:`score_sharded` on ``runner`` (``pins``: one device per worker)."""
    from privaudit._digest import run_digest
    from privaudit.llm._sharded import score_sharded
    from privaudit.targets import module_fingerprint

    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i].ids))
    keys = ("k", "p", "dc_pdd_a", "recall_prefix", "batch_size", "max_length", "compat",
            "token_frequencies", "reference_model", "padding_side", "dtype", *_NEW_OPTIONS)
    settings = {key: s[key] for key in keys}
    reference = s["reference_model"]
    key = run_digest(
        module_fingerprint(model), sorted(tokenizer.get_vocab().items()),
        [statistic_key(name) for name in names],
        {k: (v.tolist() if isinstance(v, np.ndarray) else compat_key(v) if k == "compat"
             # The template's text, not True: another template, other numbers.
             else tokenizer.chat_template if k == "chat_template" else v)
         for k, v in settings.items()
         # The padding side changes no statistic: not in the key (older keys still match);
         # nor the dtype when not given (then the model's own, in its fingerprint); nor
         # an option added since, when not given.
         if k not in ("reference_model", "token_frequencies", "padding_side")
         and not (k == "dtype" and v is None)
         and not (k in _NEW_OPTIONS and v in (None, False))},
        None if s["frequencies"] is None else s["frequencies"],
        None if reference is None else module_fingerprint(reference))
    # LOSS always (the degeneracy check reads it), as in one process.
    with_loss = tuple(dict.fromkeys(("loss", *names)))
    return score_sharded(model, tokenizer, texts, order, with_loss, settings,
                         executor=runner, cache_dir=cache_dir, key=key, progress=progress,
                         score_texts=score_texts, pins=pins)


#: Options added with issue 23: in a cache key only when given, so older keys still match.
_NEW_OPTIONS = ("stride", "window", "chat_template", "system_prompt")


def _check_names(attacks: Any) -> tuple[str, ...]:
    """The statistics asked for, in the one vocabulary, repeats dropped.

    One error naming every unknown name and listing the valid ones; one FutureWarning
    when any name is an old one or an alias.
    """
    try:
        given = [attacks] if isinstance(attacks, str) else list(attacks)
    except TypeError:
        raise param_error("attacks", _FUNC, f"names among {list(STATISTICS)}", attacks,
                          error=TypeError) from None
    # stacklevel 4: canonical_names, here, score_texts, then its caller.
    names = canonical_names(given, param="attacks", func=_FUNC, stacklevel=4)
    unknown = [a for a in names if not isinstance(a, str) or a not in STATISTICS]
    if unknown or not names:
        raise param_error("attacks", _FUNC, f"names among {list(STATISTICS)}",
                          unknown or "an empty list")
    return tuple(dict.fromkeys(names))


def _settings(model: Any, names: tuple[str, ...], **s: Any) -> dict[str, Any]:
    s["k"] = check_fraction(s["k"], param="k", func=_FUNC, high_inclusive=True)
    if s["p"] not in (1, 2, math.inf, "inf"):
        raise param_error("p", _FUNC, "1, 2 or inf", s["p"])
    for key in ("batch_size", "max_length"):
        if isinstance(s[key], bool) or not isinstance(s[key], int) or s[key] < 1:
            raise param_error(key, _FUNC, "a positive integer", s[key])
    if s["compat"] not in (None, *COMPAT_REVISIONS):
        raise param_error("compat", _FUNC, f"None or one of {list(COMPAT_REVISIONS)}",
                          s["compat"])
    needs = {"reference": "reference_model", "dc-pdd": "token_frequencies",
             "recall": "recall_prefix"}
    for name, key in needs.items():
        if name in names and s[key] is None:
            raise param_error(key, _FUNC, f"given for the {name!r} statistic", None)
    vocab = s["vocab"] = int(model.get_output_embeddings().weight.shape[0])
    if "reference" in names:
        ref_vocab = int(s["reference_model"].get_output_embeddings().weight.shape[0])
        if ref_vocab != vocab:
            raise param_error("reference_model", _FUNC, f"a model with the target's "
                              f"vocabulary ({vocab} tokens)", f"<{ref_vocab} tokens>")
    s["context"] = _context_length(model)
    s["max_length"] = min(s["max_length"], s["context"] or s["max_length"])
    s["window"] = _window(s, names)
    if "recall" in names:
        s["recall_prefix"] = _recall_shots(s["recall_prefix"])
    s["frequencies"] = (frequency_table(s["token_frequencies"], vocab)
                        if "dc-pdd" in names else None)
    return s


def _window(s: dict[str, Any], names: tuple[str, ...]) -> int | None:
    """The sliding window's length (None without ``stride``); ``stride`` checked.

    At most the target's context and the reference model's (when ``reference`` is
    scored); by default ``max_length`` (already at most the target's context), so a
    window costs the memory a cut text did.
    """
    stride, window = s["stride"], s["window"]
    if stride is None:
        if window is not None:
            raise param_error("stride", _FUNC, "given with window (the tokens each window "
                              "moves by)", None)
        return None
    contexts = [s["context"]]
    if "reference" in names:
        contexts.append(_context_length(s["reference_model"]))
    known = [c for c in contexts if c is not None]
    context = min(known) if known else None
    window = min(s["max_length"], context or s["max_length"]) if window is None else window
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise param_error("window", _FUNC, "an integer of at least 2 tokens", window)
    if context is not None and window > context:
        raise param_error("window", _FUNC, f"at most the model's context ({context} "
                          "tokens)", window)
    if isinstance(stride, bool) or not isinstance(stride, int) or not 0 < stride < window:
        raise param_error("stride", _FUNC, f"a positive integer smaller than the window "
                          f"({window} tokens)", stride)
    return window


def _recall_shots(prefix: Any) -> str | list[str]:
    """ReCaLL's prefix: one non-empty string, or a non-empty list of shots (strings)."""
    if isinstance(prefix, str) and prefix:
        return prefix
    if (isinstance(prefix, Sequence) and not isinstance(prefix, (str, bytes)) and prefix
            and all(isinstance(shot, str) for shot in prefix) and "".join(prefix)):
        return list(prefix)
    raise param_error("recall_prefix", _FUNC, "a non-empty string or a list of shots "
                      "(strings)", prefix)


def recall_prefix_ids(tokenizer: Any, prefix: str | Sequence[str]) -> list[int]:
    """The token ids put before each text for ReCaLL.

    The shots are joined with nothing between them and encoded with the tokenizer's own
    template, as the authors' ``get_conditional_ll`` (and MIMIR's) do:
    ``tokenizer("".join(shots))``.
    """
    joined = prefix if isinstance(prefix, str) else "".join(prefix)
    return list(tokenizer(joined)["input_ids"])


#: The floating-point types a model may be scored in, by name.
DTYPES = ("float32", "bfloat16", "float16")


def resolve_dtype(dtype: Any) -> Any:
    """``dtype`` as a torch dtype (None unchanged): a name of :data:`DTYPES` or the type."""
    torch = _torch()
    if dtype is None:
        return None
    by_name = {name: getattr(torch, name) for name in DTYPES}
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in by_name:
        return by_name[dtype.removeprefix("torch.")]
    if dtype in by_name.values():
        return dtype
    raise param_error("dtype", _FUNC, f"one of {list(DTYPES)}", dtype)


def resolve_device(device: Any) -> Any:
    """``device`` as a torch device (None unchanged), one that this machine has."""
    torch = _torch()
    if device is None:
        return None
    try:
        resolved = torch.device(device)
        torch.empty(1, device=resolved)
    except (RuntimeError, TypeError, AssertionError) as exc:
        raise param_error("device", _FUNC, f"a device this machine has ({exc})".rstrip(),
                          device) from None
    return resolved


def check_dtype_runs(dtype: Any, device: Any) -> None:
    """A clear error when ``device`` cannot run a layer of a model in ``dtype``.

    A linear layer, a layer norm and a softmax in ``dtype`` on a small input: what every
    transformer block computes (bfloat16 on an old CPU, float16 on some backends fail).
    """
    torch = _torch()
    try:
        x = torch.ones(2, 4, dtype=dtype, device=device)
        y = torch.nn.functional.layer_norm(x @ x.T, (2,))
        torch.log_softmax(y, dim=-1).float().sum().item()
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        raise param_error("dtype", _FUNC, f"a type the device {device} runs ({exc})",
                          str(dtype)) from None


def place_models(models: Sequence[Any], *, device: Any = None, dtype: Any = None) -> None:
    """Move and cast the models in place (``model.to``); None leaves them as they are."""
    device, dtype = resolve_device(device), resolve_dtype(dtype)
    for model in models:
        if model is None or (device is None and dtype is None):
            continue
        if dtype is not None:
            check_dtype_runs(dtype, device if device is not None else model_device(model))
        model.to(**{k: v for k, v in (("device", device), ("dtype", dtype)) if v is not None})


def _padding_side(given: Any, tokenizer: Any) -> str:
    """``padding_side``, or the tokenizer's (right when it has none)."""
    side = getattr(tokenizer, "padding_side", "right") if given is None else given
    if side not in ("left", "right"):
        raise param_error("padding_side", _FUNC, "'left' or 'right'", given)
    return side


def _context_length(model: Any) -> int | None:
    """The most positions the model takes (None when its configuration does not say)."""
    config = getattr(model, "config", None)
    for key in ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _zlib_lengths(encoded: Sequence[Encoded], tokenizer: Any = None) -> np.ndarray:
    """Compressed length of each scored text (UTF-8 bytes).

    With ``tokenizer`` (open-unlearning compat), the text compressed is its labelled
    tokens decoded without special tokens, as its ``extract_target_texts_from_processed_data``
    does, not the text given.
    """
    def text(e: Encoded) -> str:
        if tokenizer is None:
            return e.text
        kept = [i for i, lab in zip(e.ids, e.labelled, strict=True) if lab]
        return tokenizer.decode(kept, skip_special_tokens=True)

    return np.array([len(zlib.compress(text(e).encode("utf-8"))) for e in encoded],
                    dtype=np.float64)


def _gradnorm_mask(batch: _Batch, s: dict[str, Any]) -> Any:
    """The tokens of GradNorm's loss: open-unlearning's drop the last labelled one."""
    if s["compat"] == "open-unlearning":
        return _open_unlearning_masks(batch)[1]
    return batch.scored


def _eos_id(tokenizer: Any) -> int:
    """The EOS token MIMIR's DC-PDD puts before each text."""
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        raise param_error("compat", _FUNC, "a tokenizer with an EOS token for MIMIR's "
                          "DC-PDD (it puts one before each text)", "'mimir'")
    return int(eos)


class _EvalMode:
    """Evaluation mode and no gradients for the models, restored on exit."""

    def __init__(self, *models: Any) -> None:
        self.models = [m for m in models if m is not None]

    def __enter__(self) -> None:
        self.modes = [m.training for m in self.models]
        for m in self.models:
            m.eval()

    def __exit__(self, *exc: object) -> None:
        for m, mode in zip(self.models, self.modes, strict=True):
            m.train(mode)


def _run_batches(model: Any, tokenizer: Any, encoded: list[Encoded], names: tuple[str, ...],
                 s: dict[str, Any], progress: Any) -> dict[str, np.ndarray]:
    """Every statistic of every text, batch by batch (longest texts first)."""
    torch = _torch()
    n = len(encoded)
    order = sorted(range(n), key=lambda i: -len(encoded[i].ids))
    pad_id = tokenizer.pad_token_id
    pad_id = tokenizer.eos_token_id if pad_id is None else pad_id
    pad_id = 0 if pad_id is None else int(pad_id)
    prefix = recall_prefix_ids(tokenizer, s["recall_prefix"]) if "recall" in names else []
    # MIMIR's DC-PDD reads its own pass, with an EOS put before the text.
    eos_dc_pdd = s["compat"] == "mimir" and "dc-pdd" in names
    eos = [_eos_id(tokenizer)] if eos_dc_pdd else []
    # LOSS always: zlib, reference and recall are read from it, and so is degeneracy.
    forward = ("loss", *(x for x in _FORWARD if x in names and x != "loss"
                         and not (eos_dc_pdd and x == "dc-pdd")))
    out: dict[str, np.ndarray] = {name: np.full(n, np.nan) for name in (*names, "loss")}
    extra = {name: np.full(n, np.nan) for name in ("ref_loss", "cond_loss")}
    bar = as_progress(progress, func=_FUNC)
    with _EvalMode(model, s["reference_model"]), bar.task(
            "Scoring texts", total=math.ceil(n / s["batch_size"])) as step:
        for start in range(0, n, s["batch_size"]):
            rows = order[start:start + s["batch_size"]]
            items = [encoded[i] for i in rows]
            padded = None
            if "gradnorm" in names:  # then every text fits the window (_encode_all)
                from privaudit.llm._grad_norms import gradient_norms

                batch = _pad(items, pad_id, s["padding_side"])
                # Its forward pass gives the other statistics their logits too.
                out["gradnorm"][rows], logits = gradient_norms(
                    model, batch.input_ids, batch.attention_mask, _gradnorm_mask(batch, s),
                    p=s["p"], position_ids=batch.position_ids, keep_logits=True)
                padded = (batch, logits)
                del batch, logits
            # Inference mode: no autograd bookkeeping at all (faster than no_grad).
            with torch.inference_mode():
                for name, values in _score_items(model, items, forward, s, pad_id,
                                                 padded=padded).items():
                    out[name][rows] = values
                del padded
                if eos_dc_pdd:
                    out["dc-pdd"][rows] = _score_items(model, items, ("dc-pdd",), s, pad_id,
                                                       eos)["dc-pdd"]
                if "reference" in names:
                    extra["ref_loss"][rows] = _score_items(
                        s["reference_model"], items, ("loss",), s, pad_id)["loss"]
                if "recall" in names:
                    extra["cond_loss"][rows] = _score_items(
                        model, items, ("loss",), {**s, "compat": None}, pad_id,
                        prefix)["loss"]
            step.advance()
    loss = out["loss"]
    if s["compat"] == "mimir" and "gradnorm" in names:
        out["gradnorm"] = -out["gradnorm"]  # MIMIR returns the negated norm
    if "zlib" in names:
        out["zlib"] = loss / _zlib_lengths(
            encoded, tokenizer if s["compat"] == "open-unlearning" else None)
    if "reference" in names:
        out["reference"] = loss - extra["ref_loss"]
    if "recall" in names:
        # ReCaLL = LL(x | prefix) / LL(x) with LL = -loss; negated: higher = non-member.
        out["recall"] = -(extra["cond_loss"] / loss)
    return out
