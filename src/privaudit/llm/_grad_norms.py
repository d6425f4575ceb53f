"""GradNorm: the norm of each text's own loss gradient, per text but not one pass per text.

For text ``i`` with scored tokens ``t`` and ``L_i = -mean_t log p(x_t | x_<t)``, GradNorm is
the mean over the model's trainable parameter tensors ``W`` of ``||dL_i / dW||_p``
(open-unlearning's definition, in evaluation mode). The batch is run forward and backward
ONCE, on the sum of the texts' losses; each text's gradient is then rebuilt layer by layer
from the activations and output gradients that pass recorded
(:class:`~privaudit.llm._per_sample.PerSampleRecorder`). It is exact because in evaluation
mode no operation mixes the texts of a batch. A model with a layer type the recorder does
not know is scored one text at a time instead (one forward and one backward per text),
with a warning.

References
----------
.. [1] Wang, Z., et al. / open-unlearning, "GradNorm" in the MIA metrics guide (gradient
   norm of the text's loss as a membership signal).
.. [2] Yousefpour, A., et al. "Opacus: User-Friendly Differential Privacy Library in
   PyTorch." 2021.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from privaudit._validation import param_error
from privaudit.llm._per_sample import PerSampleRecorder, parameter_owners, supported
from privaudit.llm._token_stats import model_device

__all__ = ["gradient_norms"]

_warned: list[bool] = []


def _per_text_loss(model: Any, input_ids: Any, attention_mask: Any, scored: Any,
                   position_ids: Any) -> tuple[Any, Any]:
    """Each text's mean loss over its scored tokens, and the batch's logits."""
    import inspect

    kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if position_ids is not None and "position_ids" in inspect.signature(
            model.forward).parameters:
        kwargs["position_ids"] = position_ids
    out = model(**kwargs)
    logits = out.logits if hasattr(out, "logits") else out[0]
    targets = input_ids[:, 1:].to(logits.device)
    mask = scored.to(logits.device).float()
    weights = mask / mask.sum(-1, keepdim=True).clamp_min(1.0)
    return _NextTokenLoss.apply(logits, targets, weights), logits


def _next_token_loss_class() -> Any:
    import torch

    from privaudit.llm._token_stats import _chunks

    class NextTokenLoss(torch.autograd.Function):
        """``sum_t w_t (logsumexp(z_t) - z_t[x_{t+1}])`` per text, from the logits.

        Forward and backward read the logits in small blocks over the scored positions
        (:func:`privaudit.llm._token_stats._chunks`): the gradient ``w_t (softmax(z_t) -
        e_{x_{t+1}})`` is written block by block, where autograd through a log-softmax
        would hold two more ``B x T x V`` tensors and read them from memory, not cache.
        """

        @staticmethod
        def forward(ctx: Any, logits: Any, targets: Any, weights: Any) -> Any:
            lse = torch.zeros(weights.shape, dtype=torch.float32, device=logits.device)
            token = torch.zeros_like(lse)
            for rows, start, stop in _chunks(weights > 0, logits.shape[-1]):
                z = logits[rows, start:stop].float()
                lse[rows, start:stop] = torch.logsumexp(z, dim=-1)
                token[rows, start:stop] = z.gather(-1, targets[rows, start:stop, None])[..., 0]
            ctx.save_for_backward(logits, targets, weights, lse)
            return ((lse - token) * weights).sum(-1)

        @staticmethod
        def backward(ctx: Any, grad_out: Any) -> Any:
            logits, targets, weights, lse = ctx.saved_tensors
            grad = torch.zeros_like(logits)
            scale = weights * grad_out[:, None]
            for rows, start, stop in _chunks(weights > 0, logits.shape[-1]):
                p = torch.sub(logits[rows, start:stop].float(),
                              lse[rows, start:stop, None]).exp_()
                p.scatter_add_(-1, targets[rows, start:stop, None],
                               torch.full_like(p[..., :1], -1.0))
                grad[rows, start:stop] = p.mul_(scale[rows, start:stop, None])
            return grad, None, None

    return NextTokenLoss


class _LazyLoss:
    """The autograd function, built on first use (torch is not imported with the module)."""

    _cls: Any = None

    @classmethod
    def apply(cls, *args: Any) -> Any:
        if cls._cls is None:
            cls._cls = _next_token_loss_class()
        return cls._cls.apply(*args)


_NextTokenLoss = _LazyLoss


def _norms(grads: list[Any], p: float) -> Any:
    """Mean over parameter tensors of each text's gradient p-norm: (B,)."""
    import torch

    per_tensor = [torch.linalg.vector_norm(g.flatten(1).double(), ord=p, dim=1)
                  for g in grads]
    return torch.stack(per_tensor, dim=1).mean(dim=1)


def gradient_norms(model: Any, input_ids: Any, attention_mask: Any, scored: Any, *,
                   p: float = 2, position_ids: Any = None, keep_logits: bool = False) -> Any:
    """GradNorm of each text of a padded batch, float64 (NaN for a text with no scored token).

    With ``keep_logits``, returns ``(norms, logits)``: the batch's logits from the same
    forward pass (detached), so that the forward-only statistics need no pass of their own
    (``None`` for a model scored one text at a time).

    Parameters
    ----------
    model : torch module
        Put in evaluation mode for the call (each module's mode restored after); its
        parameters' ``requires_grad`` flags are left as they are, and ``.grad`` is never
        written.
    input_ids, attention_mask : torch tensors of shape (B, T)
    scored : torch bool tensor of shape (B, T - 1)
        Which next-token positions count in each text's loss.
    p : {1, 2, inf}
    position_ids : torch tensor of shape (B, T), optional
        Default: counted from the attention mask (real tokens only).
    """
    import torch

    p = math.inf if p == "inf" else p
    if p not in (1, 2, math.inf):
        raise param_error("p", "gradient_norms", "1, 2 or inf", p)
    device = model_device(model)  # the batch goes where the model is
    input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
    position_ids = None if position_ids is None else position_ids.to(device)
    params = [w for w in model.parameters() if w.requires_grad]
    if not params:
        raise ValueError("gradient_norms: the model has no parameter that requires a "
                         "gradient.")
    modes = [(m, m.training) for m in model.modules()]  # each module's own mode
    model.eval()
    logits = None
    try:
        with torch.enable_grad():
            owners = parameter_owners(model)
            if supported(model, owners) and batched_pays(model, params):
                out, logits = _recorded(model, owners, input_ids, attention_mask, scored,
                                        position_ids, p)
            else:
                out = _one_by_one(model, params, input_ids, attention_mask, scored,
                                  position_ids, p, warn=not supported(model, owners))
    finally:
        for module, mode in modes:
            module.training = mode
    result = out.cpu().numpy()
    result[(scored.sum(-1) == 0).cpu().numpy()] = np.nan
    return (result, logits) if keep_logits else result


def _recorded(model: Any, owners: dict[int, Any], input_ids: Any, attention_mask: Any,
              scored: Any, position_ids: Any, p: float) -> tuple[Any, Any]:
    """One forward and one backward for the batch: per-text norms, and the logits."""
    if position_ids is None:  # per-text position rows, so no layer input is broadcast
        position_ids = (attention_mask.cumsum(-1) - 1).clamp_min(0)
    with PerSampleRecorder(model, owners) as recorder:
        losses, logits = _per_text_loss(model, input_ids, attention_mask, scored,
                                        position_ids)
        recorder.backward(losses.sum())
    return recorder.norms(input_ids.shape[0], p), logits.detach()


#: The output layer's share of the trainable parameters above which one backward per text
#: is about as fast as the batched pass or faster (measured on this machine, CPU time,
#: batch 8, random texts of 20-130 tokens, GPT-2s of 2-4 layers; loop / batched: 1.8-2.2x
#: with 14% of the parameters in the output layer (300 tokens, 64 dimensions), 1.2-1.4x
#: with 55% (8k, 128), 1.0-1.3x with 71% (16k, 128), 0.9-1.3x with 82% (8k, 64), 0.9x
#: with 91-95% (32k, 64-128 dimensions); ``benchmarks/bench_llm_gradnorm.py --ratios``).
LOOP_ABOVE_OUTPUT_SHARE = 0.75


def batched_pays(model: Any, params: list[Any]) -> bool:
    """Whether one batched pass beats one backward per text on this model.

    The batched pass holds the whole batch's ``B x T x V`` logits and their gradient (and
    rebuilds each text's ``V x d`` output-layer gradient), memory-bound work that one text
    at a time does in the processor's cache; the rest of the model is where batching
    pays. The rule: batched while the output layer holds at most
    :data:`LOOP_ABOVE_OUTPUT_SHARE` of the trainable parameters.
    """
    head = getattr(model, "get_output_embeddings", lambda: None)()
    weight = getattr(head, "weight", None)
    if weight is None or not weight.requires_grad:
        return True
    total = sum(w.numel() for w in params)
    return weight.numel() <= LOOP_ABOVE_OUTPUT_SHARE * total


def _one_by_one(model: Any, params: list[Any], input_ids: Any, attention_mask: Any,
                scored: Any, position_ids: Any, p: float, warn: bool = True) -> Any:
    """One forward and backward per text.

    For models the recorder does not know (with a warning), or where the batched pass
    would be slower (:func:`batched_pays`).
    """
    import torch

    if warn and not _warned:
        _warned.append(True)
        warnings.warn("gradient_norms: this model has layers whose per-text gradients are "
                      "not rebuilt from one batched pass; scoring one text at a time.",
                      RuntimeWarning, stacklevel=4)
    out = torch.empty(input_ids.shape[0], dtype=torch.float64, device=input_ids.device)
    for i in range(input_ids.shape[0]):
        keep = attention_mask[i].bool()
        row = (input_ids[i][keep][None], attention_mask[i][keep][None],
               scored[i].to(keep.device)[keep[1:] & keep[:-1]][None], None)
        loss, _ = _per_text_loss(model, *row)
        grads = torch.autograd.grad(loss.sum(), params, allow_unused=True)
        out[i] = _norms([torch.zeros_like(w)[None] if g is None else g[None]
                         for w, g in zip(params, grads, strict=True)], p)[0]
    return out
