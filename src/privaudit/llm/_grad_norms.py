"""GradNorm: the norm of each text's own loss gradient, per text but not one pass per text.

For text ``i`` with scored tokens ``t`` and ``L_i = -mean_t log p(x_t | x_<t)``, GradNorm is
the mean over the model's trainable parameter tensors ``W`` of ``||dL_i / dW||_p``
(open-unlearning's definition, in evaluation mode). The batch is run forward once; the
per-text gradients come from ONE vectorised backward pass over the batch
(``torch.autograd.grad(..., is_grads_batched=True)``: a ``vmap`` over the backward graph
with one-hot output gradients). It is exact because in evaluation mode no operation mixes
texts of a batch, so ``dL_i / dW`` on the batched graph is text ``i``'s own gradient.
Written by hand because no library offers per-example gradient norms of an arbitrary
Hugging Face model; where the vectorised backward is not supported by some operation, each
text's gradient is taken from the same graph in turn (one forward pass, one backward per
text), with a warning.

References
----------
.. [1] Wang, Z., et al. / open-unlearning, "GradNorm" in the MIA metrics guide (gradient
   norm of the text's loss as a membership signal).
.. [2] Horace He, R. Zou et al., ``torch.func`` per-sample-gradients tutorial (the
   vectorised-backward technique).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

__all__ = ["gradient_norms"]

#: Texts whose gradients are held at once by the vectorised backward (bounds memory).
CHUNK_SIZE = 8
_warned: list[bool] = []


def _per_text_loss(model: Any, input_ids: Any, attention_mask: Any, scored: Any,
                   position_ids: Any) -> Any:
    import inspect

    import torch

    kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if position_ids is not None and "position_ids" in inspect.signature(
            model.forward).parameters:
        kwargs["position_ids"] = position_ids
    out = model(**kwargs)
    logits = out.logits if hasattr(out, "logits") else out[0]
    log_p = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    token = log_p.gather(-1, input_ids[:, 1:, None])[..., 0]
    mask = scored.float()
    return -(token * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)


def _norms(grads: list[Any], p: float) -> Any:
    """Mean over parameter tensors of each text's gradient p-norm: (B,)."""
    import torch

    per_tensor = [torch.linalg.vector_norm(g.flatten(1).double(), ord=p, dim=1)
                  for g in grads]
    return torch.stack(per_tensor, dim=1).mean(dim=1)


def _batched(losses: Any, params: list[Any], rows: range) -> list[Any]:
    import torch

    eye = torch.zeros(len(rows), losses.shape[0], dtype=losses.dtype)
    eye[torch.arange(len(rows)), torch.tensor(list(rows))] = 1.0
    return list(torch.autograd.grad(losses, params, grad_outputs=eye, retain_graph=True,
                                    is_grads_batched=True))


def _looped(losses: Any, params: list[Any], rows: range) -> list[Any]:
    import torch

    per_text = [torch.autograd.grad(losses[i], params, retain_graph=True) for i in rows]
    return [torch.stack(parts) for parts in zip(*per_text, strict=True)]


def gradient_norms(model: Any, input_ids: Any, attention_mask: Any, scored: Any, *,
                   p: float = 2, position_ids: Any = None,
                   chunk_size: int = CHUNK_SIZE) -> np.ndarray:
    """GradNorm of each text of a padded batch, float64 (NaN for a text with no scored token).

    Parameters
    ----------
    model : torch module
        Put in evaluation mode for the call (restored after); its parameters'
        ``requires_grad`` flags are left as they are, and ``.grad`` is never written.
    input_ids, attention_mask : torch tensors of shape (B, T)
    scored : torch bool tensor of shape (B, T - 1)
        Which next-token positions count in each text's loss.
    p : {1, 2, inf}
    position_ids : torch tensor of shape (B, T), optional
    chunk_size : int
        Texts whose gradients are held at once.
    """
    import torch

    p = math.inf if p == "inf" else p
    params = [w for w in model.parameters() if w.requires_grad]
    if not params:
        raise ValueError("gradient_norms: the model has no parameter that requires a "
                         "gradient.")
    mode = model.training
    model.eval()
    try:
        with torch.enable_grad():
            losses = _per_text_loss(model, input_ids, attention_mask, scored, position_ids)
            out = torch.empty(losses.shape[0], dtype=torch.float64)
            for start in range(0, losses.shape[0], chunk_size):
                rows = range(start, min(start + chunk_size, losses.shape[0]))
                out[start:rows.stop] = _norms(_chunk_grads(losses, params, rows), p)
    finally:
        model.train(mode)
    result = out.numpy()
    result[(scored.sum(-1) == 0).numpy()] = np.nan
    return result


def _chunk_grads(losses: Any, params: list[Any], rows: range) -> list[Any]:
    try:
        return _batched(losses, params, rows)
    except (RuntimeError, NotImplementedError) as exc:
        if not _warned:
            _warned.append(True)
            warnings.warn(f"gradient_norms: the vectorised backward is not supported by this "
                          f"model ({str(exc).splitlines()[0][:120]}); taking each text's "
                          "gradient in turn from the same forward pass.", RuntimeWarning,
                          stacklevel=4)
        return _looped(losses, params, rows)
