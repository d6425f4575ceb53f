"""Per-text membership statistics of one batch, from one forward pass of a causal LM.

For a text tokenised to ``x_1..x_T`` and ``l_t = log p(x_t | x_<t)`` over its scored
positions (``t >= 2``, answer tokens only, padding excluded), the statistics are the MIA
metrics guide's "higher = less likely member" ones:

- LOSS ``-mean(l_t)``;
- Min-K ``-mean`` of the ``max(1, floor(k n))`` smallest ``l_t`` (``n`` scored tokens);
- Min-K++ the same over ``z_t = (l_t - mu_t) / sigma_t``, ``mu_t`` and ``sigma_t^2`` the
  mean and variance of ``log p`` under ``p`` over the whole vocabulary at position ``t``
  (``sigma_t^2`` clamped at 1e-6; the variance is taken around ``mu_t``, which float32
  keeps exact where ``E[(log p)^2] - mu^2`` loses most digits on a near-uniform ``p``);
- DC-PDD ``-mean`` over the first occurrence of each token of
  ``min(p(x_t) log(1 / f(x_t)), a)``, ``f`` the token's add-one smoothed frequency in a
  reference corpus.

Written by hand: no library computes these from one pass. The logits are read once, in
chunks of positions, in float32 whatever the model's dtype: the extra memory is one chunk
of ``batch x chunk x vocabulary``, never a kept ``T x V`` tensor per text.

References
----------
.. [1] Shi, W., Ajith, A., Xia, M., et al. "Detecting Pretraining Data from Large Language
   Models." ICLR 2024 (Min-K% Prob).
.. [2] Zhang, J., Sun, J., Yeats, E., et al. "Min-K%++: Improved Baseline for Detecting
   Pre-Training Data from Large Language Models." ICLR 2025.
.. [3] Zhang, W., Zhang, R., Guo, J., et al. "Pretraining Data Detection for Large Language
   Models: A Divergence-based Calibration Method." EMNLP 2024 (DC-PDD).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TokenStats", "batch_statistics", "model_device", "token_stats", "window_spans"]

#: Logit elements read at once (1 MiB of float32): the float32 working copies of a block
#: stay in the processor's cache; larger blocks made bigger batches slower (issue 23).
_CHUNK_ELEMENTS = 1 << 18
_SIGMA2_FLOOR = 1e-6


def model_device(model: Any) -> Any:
    """Where a model runs.

    Its ``device`` (transformers' models say it), else the device of its input embeddings
    or first parameter (CPU for a model without parameters).
    """
    import torch

    declared = getattr(model, "device", None)
    if isinstance(declared, torch.device):
        return declared
    embeddings = getattr(model, "get_input_embeddings", None)
    weight = getattr(embeddings() if callable(embeddings) else None, "weight", None)
    if isinstance(weight, torch.Tensor):
        return weight.device
    first = next(iter(model.parameters()), None)
    return torch.device("cpu") if first is None else first.device


@dataclass
class TokenStats:
    """Per-token quantities of one batch, on the shifted positions (B, T - 1).

    ``log_prob[b, j]`` is ``log p(x_{j+1} | x_<=j)``; ``mask`` says which positions count.
    """

    log_prob: Any      # torch float32 (B, T-1)
    mu: Any            # torch float32 (B, T-1), or None when not asked for
    sigma: Any         # torch float32 (B, T-1), or None
    mask: Any          # torch bool (B, T-1)
    targets: Any       # torch long (B, T-1): x_{j+1}


def token_stats(logits: Any, input_ids: Any, mask: Any, *, moments: bool) -> TokenStats:
    """Log-probability of each next token (and the Min-K++ moments) from the logits.

    Parameters
    ----------
    logits : torch.Tensor of shape (B, T, V)
        The model's logits, any dtype.
    input_ids : torch.LongTensor of shape (B, T)
    mask : torch.BoolTensor of shape (B, T - 1)
        The positions (of the shifted targets ``x_2..x_T``) that are scored.
    moments : bool
        Also compute ``mu_t`` and ``sigma_t`` (Min-K++).
    """
    import torch

    batch, length, vocab = logits.shape
    # Everything is computed where the logits are (the model's device), in float32.
    targets = input_ids[:, 1:].to(logits.device)
    mask = mask.to(logits.device)
    # Zeros (and sigma 1) where nothing is scored: those positions are never computed.
    log_prob = torch.zeros(batch, length - 1, dtype=torch.float32, device=logits.device)
    mu = torch.zeros_like(log_prob) if moments else None
    sigma = torch.ones_like(log_prob) if moments else None
    for rows, start, stop in _chunks(mask, vocab):
        z = logits[rows, start:stop].float()  # a view when already float32: never written
        lse = torch.logsumexp(z, dim=-1, keepdim=True)
        log_prob[rows, start:stop] = (z.gather(-1, targets[rows, start:stop, None])
                                      - lse)[..., 0]
        if moments:
            # With log p = z - lse: mu = sum p log p = c - lse for c = sum p z, and
            # log p - mu = z - c, so the variance is taken around c, two-pass (never
            # E[(log p)^2] - mu^2, which cancels catastrophically in float32 when p is
            # near uniform); two V-wide temporaries per chunk instead of five.
            p = torch.sub(z, lse).exp_()
            centre = torch.linalg.vecdot(p, z, dim=-1)
            spread = torch.linalg.vecdot(p, torch.sub(z, centre[..., None]).square_(), dim=-1)
            mu[rows, start:stop] = centre - lse[..., 0]
            sigma[rows, start:stop] = spread.clamp_min(_SIGMA2_FLOOR).sqrt()
    return TokenStats(log_prob, mu, sigma, mask, targets)


def window_spans(length: int, window: int, stride: int) -> list[tuple[int, int, int]]:
    """The sliding windows over a text of ``length`` tokens, as ``(begin, end, new)``.

    Hugging Face's perplexity recipe ("Perplexity of fixed-length models", transformers
    documentation): windows of ``window`` tokens ``[begin, end)`` start every ``stride``
    tokens until one reaches the text's end; each scores only its tokens ``[new, end)``,
    those no earlier window scored (the overlap's labels are masked). Every token is so
    scored once, from the ``window - stride`` to ``window - 1`` tokens before it (all of
    them in the first window). A text of at most ``window`` tokens is one window.
    """
    spans, scored_until = [], 0
    for begin in range(0, max(length, 1), stride):
        end = min(begin + window, length)
        spans.append((begin, end, scored_until))
        scored_until = end
        if end == length:
            break
    return spans


def _chunks(mask: Any, vocab: int) -> list[tuple[slice, int, int]]:
    """Blocks ``(rows, start, stop)`` of the logits to read, about ``_CHUNK_ELEMENTS`` each.

    Only the span of each row's scored positions is read (no padding, no prompt); rows
    are grouped while a group's spans fit the budget (texts sorted by length have similar
    spans), and a long span is cut into runs of positions. Small blocks keep the float32
    working copies in the processor's cache: one block the size of the whole batch's
    logits made a batch of 8 texts slower per text than one text at a time (issue 23).
    """
    if mask.shape[-1] == 0:  # one-token texts: no next token anywhere
        return []
    scored = mask.any(-1).tolist()
    positions = mask.long().cumsum(-1)  # 1 from the first scored position on
    last = _last_true(mask)
    first = (positions == 1).long().argmax(-1).tolist()
    out = []
    row, batch = 0, mask.shape[0]
    while row < batch:
        if not scored[row]:
            row += 1
            continue
        group = [row]
        lo, hi = first[row], last[row] + 1
        while row + len(group) < batch and scored[row + len(group)]:
            nxt = row + len(group)
            wider = max(hi, last[nxt] + 1) - min(lo, first[nxt])
            if (len(group) + 1) * wider * vocab > _CHUNK_ELEMENTS:
                break
            group.append(nxt)
            lo, hi = min(lo, first[nxt]), max(hi, last[nxt] + 1)
        rows = slice(row, row + len(group))
        steps = max(1, _CHUNK_ELEMENTS // (len(group) * vocab))
        out.extend((rows, start, min(start + steps, hi)) for start in range(lo, hi, steps))
        row += len(group)
    return out


def _last_true(mask: Any) -> list[int]:
    """Index of each row's last True (0 for a row without one)."""
    import torch

    index = torch.arange(mask.shape[-1], device=mask.device)
    return torch.where(mask, index, 0).max(-1).values.tolist()


def _lowest_mean(values: Any, mask: Any, k: float, at_least_one: bool = True) -> np.ndarray:
    """Mean of the ``max(1, floor(k n))`` smallest masked values per row (NaN if n = 0).

    Without ``at_least_one``, ``floor(k n)`` values (MIMIR's ``int(len * k)``): NaN when
    that is 0, as MIMIR's ``np.mean`` of an empty list is.
    """
    import torch

    n = mask.sum(-1)
    filled = values.masked_fill(~mask, float("inf"))
    ordered = filled.sort(dim=-1).values.double()
    n_k = (k * n.double()).floor().long()
    n_k = torch.clamp(n_k, min=1) if at_least_one else n_k
    keep = torch.arange(ordered.shape[-1], device=ordered.device)[None, :] < n_k[:, None]
    total = torch.where(keep, ordered, torch.zeros_like(ordered)).sum(-1)
    out = (total / n_k.clamp_min(1)).cpu().numpy()
    out[((n == 0) | (n_k == 0)).cpu().numpy()] = np.nan
    return out


def _masked_mean(values: Any, mask: Any, denominator: Any = None) -> np.ndarray:
    total = (values.double() * mask).sum(-1)
    count = (mask.sum(-1).double() if denominator is None
             else denominator.to(total.device).double())
    out = (total / count).cpu().numpy()
    out[(mask.sum(-1) == 0).cpu().numpy()] = np.nan
    return out


def _first_occurrences(stats: TokenStats) -> Any:
    """The scored positions holding the first occurrence of their token in the text."""
    import torch

    targets = stats.targets.masked_fill(~stats.mask, -1)
    # A position is a first occurrence when no earlier scored position has its token:
    # stable-sort each row by token and keep the first of every run.
    order = torch.sort(targets, dim=-1, stable=True).indices
    ordered = torch.gather(targets, 1, order)
    starts = torch.ones_like(ordered, dtype=torch.bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = torch.zeros_like(starts)
    first.scatter_(1, order, starts)
    return first & stats.mask


def batch_statistics(
    stats: TokenStats, names: tuple[str, ...], *, k: float,
    frequencies: np.ndarray | None = None, dc_pdd_a: float = 0.01,
    loss_denominator: Any = None, min_k_mask: Any = None, min_k_at_least_one: bool = True,
) -> dict[str, np.ndarray]:
    """The requested statistics of each text of the batch, float64 (NaN: nothing scored).

    ``names`` among ``loss``, ``min-k``, ``min-k-plus-plus`` and ``dc-pdd`` (the names
    of :data:`privaudit.llm.STATISTICS`); the result is keyed by them.

    ``loss_denominator`` replaces the number of scored tokens in LOSS, and
    ``min_k_mask`` the scored positions of Min-K and Min-K++ (open-unlearning's token
    handling, see :func:`privaudit.llm.score_texts`); without ``min_k_at_least_one``,
    Min-K and Min-K++ average ``floor(k n)`` tokens, not at least one (MIMIR's).
    """
    import torch

    out: dict[str, np.ndarray] = {}
    mask = stats.mask
    if "loss" in names:
        out["loss"] = -_masked_mean(stats.log_prob, mask, loss_denominator)
    kmask = mask if min_k_mask is None else min_k_mask.to(mask.device)
    if "min-k" in names:
        out["min-k"] = -_lowest_mean(stats.log_prob, kmask, k, min_k_at_least_one)
    if "min-k-plus-plus" in names:
        z = (stats.log_prob - stats.mu) / stats.sigma
        out["min-k-plus-plus"] = -_lowest_mean(z, kmask, k, min_k_at_least_one)
    if "dc-pdd" in names:
        first = _first_occurrences(stats)
        table = torch.as_tensor(frequencies, dtype=torch.float64, device=mask.device)
        f = table[stats.targets.clamp(0, table.numel() - 1)]
        alpha = (stats.log_prob.double().exp() * torch.log(1.0 / f)).clamp_max(dc_pdd_a)
        out["dc-pdd"] = -_masked_mean(alpha, first)
    return out
