"""Apollo's adversarial search (Algorithm 1) over a stack of shadow models.

The shadows are queried together through :mod:`torch.func` (``stack_module_state`` and
``vmap`` over ``functional_call``): one batched forward and backward per search round for
every shadow and every record, instead of a loop over models. torch is imported here only;
this module is imported by :class:`~privaudit.attacks.unlearning.ApolloAttack` when it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.targets import import_torch

__all__ = ["SearchSettings", "ShadowStack", "search_rounds"]


class ShadowStack:
    """Shadow classifiers of one architecture, evaluated as one batched function.

    Parameters
    ----------
    models : sequence of torch.nn.Module
        Networks returning logits; all of the same architecture (else they are evaluated
        one by one, with the same results).
    """

    def __init__(self, models: Sequence[Any]) -> None:
        torch = import_torch()
        self.torch = torch
        self.models = [m.eval() for m in models]
        self.n_models = len(self.models)
        try:
            params, buffers = torch.func.stack_module_state(self.models)
        except (RuntimeError, ValueError):  # architectures differ: evaluate one by one
            self._vmapped: Callable[[Any], Any] | None = None
            return
        base = self.models[0]

        def one(p: Any, b: Any, x: Any) -> Any:
            return torch.func.functional_call(base, (p, b), (x,))

        params = {k: v.detach() for k, v in params.items()}
        buffers = {k: v.detach() for k, v in buffers.items()}
        self._vmapped = lambda x: torch.vmap(one, in_dims=(0, 0, None))(params, buffers, x)

    def logits(self, x: Any) -> Any:
        """Logits of every shadow on the batch ``x``: a tensor (n_models, n_records, C)."""
        if self._vmapped is not None:
            return self._vmapped(x)
        return self.torch.stack([m(x) for m in self.models])


@dataclass(frozen=True)
class SearchSettings:
    """Checked settings of one search (see :class:`ApolloAttack` for their meaning)."""

    kind: str  # "under" or "over"
    offline: bool
    eps: float
    n_rounds: int
    alpha: float
    beta: float
    low: NDArray[np.float32]
    high: NDArray[np.float32]


def _masked_mean(values: Any, mask: Any) -> Any:
    """Mean over models (dim 0) of ``values`` where ``mask``; 0 where no model is masked."""
    count = mask.sum(dim=0)
    return (values * mask).sum(dim=0) / count.clamp(min=1)


def _loss(stack: ShadowStack, x: Any, y: Any, include: Any, exclude: Any,
          s: SearchSettings) -> tuple[Any, Any]:
    """Per-record search loss and the never-trained shadows' true-class logit (conf)."""
    torch = stack.torch
    logits = stack.logits(x)  # (m, n, C)
    m = logits.shape[0]
    ce = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), y.repeat(m), reduction="none").reshape(m, -1)
    true_logit = logits.gather(2, y.expand(m, -1).unsqueeze(-1)).squeeze(-1)
    conf = _masked_mean(true_logit, exclude)
    ce_out = _masked_mean(ce, exclude)
    if s.offline:
        top2 = logits.topk(2, dim=2).values
        margin = (top2[..., 0] - top2[..., 1]).mean(dim=0)  # distance to the boundary
        sign = -1.0 if s.kind == "under" else 1.0
        loss = s.alpha * margin + sign * s.beta * ce_out
    else:
        ce_in = _masked_mean(ce, include)
        under = s.alpha * ce_in - s.beta * ce_out
        loss = under if s.kind == "under" else -under
    return loss, conf


def _project(x: Any, x0: Any, inner: float, outer: float, low: Any, high: Any) -> Any:
    """Radially onto the L2 shell ``inner <= |x - x0| <= outer``, then into the bounds."""
    delta = x - x0
    norm = delta.norm(dim=1, keepdim=True)
    safe = norm.clamp(min=1e-12)
    one = norm.new_ones(())
    # A record still at x0 has no direction to push along: it stays (only possible at t=0
    # or with a zero gradient).
    scale = (one.where(norm <= outer, outer / safe)
             .where((norm >= inner) | (norm == 0), inner / safe))
    return (x0 + delta * scale).clamp(min=low, max=high)


def search_rounds(stack: ShadowStack, X: NDArray[np.float32], y_index: NDArray[np.int64],
                  include: NDArray[np.bool_], exclude: NDArray[np.bool_],
                  settings: SearchSettings) -> Any:
    """Yield ``(t, x_t, conf_t)`` for every round of Algorithm 1, all records at once.

    Round ``t`` (from 0) takes a step along the loss gradient, normalised per record to the
    shell width ``eps`` (the authors' code takes a plain SGD step of learning rate 0.1 on
    [0, 1] pixels; normalising makes the search independent of the features' scale), then
    projects radially onto the shell ``t eps <= |x' - x|_2 <= (t + 1) eps`` and clips to
    the features' bounds (as the code clips to [0, 1]). ``conf_t`` is the mean raw
    true-class logit of the shadows that never trained on the record, the statistic the
    early stop of Algorithm 1 compares with ``tau``.
    """
    torch = stack.torch
    x0 = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    y = torch.from_numpy(y_index.astype(np.int64))
    inc = torch.from_numpy(include.astype(np.float32))
    exc = torch.from_numpy(exclude.astype(np.float32))
    low, high = torch.from_numpy(settings.low), torch.from_numpy(settings.high)
    x = x0.clone()
    for t in range(settings.n_rounds):
        x.requires_grad_(True)
        loss, conf = _loss(stack, x, y, inc, exc, settings)
        if t:  # this forward pass also gives the previous round's conf
            yield t - 1, x.detach().numpy(), conf.detach().numpy().astype(np.float64)
        (grad,) = torch.autograd.grad(loss.sum(), x)
        with torch.no_grad():
            norm = grad.norm(dim=1, keepdim=True).clamp(min=1e-30)
            x = x - settings.eps * grad / norm
            x = _project(x, x0, t * settings.eps, (t + 1) * settings.eps, low, high)
    with torch.no_grad():
        _, conf = _loss(stack, x, y, inc, exc, settings)
    yield settings.n_rounds - 1, x.numpy(), conf.numpy().astype(np.float64)
