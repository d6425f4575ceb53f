"""Per-text gradients from ONE batched backward pass, layer by layer (Opacus-style hooks).

For the layers a transformer is made of (linear and GPT-2's ``Conv1D`` projections,
embeddings, layer norms), a parameter's gradient is a sum over positions of products of
the layer's input and the gradient at its output; keeping the batch dimension in that sum
gives every text its own gradient, from the activations and output gradients one ordinary
backward pass already computes. Tied parameters (GPT-2's output layer shares the token
embedding) add up the contributions of every layer that uses them, text by text.

Written by hand: ``torch.func.vmap`` cannot trace Hugging Face models (their attention
masks branch on data), and a vectorised backward over one-hot output gradients costs the
batch size times a full backward.

References
----------
.. [1] Yousefpour, A., et al. "Opacus: User-Friendly Differential Privacy Library in
   PyTorch." 2021 (per-sample gradients from activations and output gradients).
.. [2] Goodfellow, I. "Efficient Per-Example Gradient Computations." arXiv:1510.01799, 2015.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

__all__ = ["PerSampleRecorder", "parameter_owners", "supported"]

#: Elements of per-text gradients held at once (bounds memory for large vocabularies).
_BUDGET = 1 << 25


def _kind(module: Any) -> str | None:
    import torch

    if isinstance(module, torch.nn.Linear):
        return "linear"
    if isinstance(module, torch.nn.Embedding):
        return "embedding"
    if isinstance(module, torch.nn.LayerNorm):
        return "layer_norm"
    if type(module).__name__ == "Conv1D" and hasattr(module, "nf"):
        return "conv1d"  # transformers' GPT-2 projection: y = x W + b, W of shape (in, out)
    return None


def parameter_owners(model: Any) -> dict[int, list[tuple[Any, str]]]:
    """For each trainable parameter (by id), the (module, attribute) pairs that use it."""
    return _owners(model)


def _owners(model: Any) -> dict[int, list[tuple[Any, str]]]:
    """For each trainable parameter (by id), the (module, attribute) pairs that use it."""
    owners: dict[int, list[tuple[Any, str]]] = defaultdict(list)
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if param.requires_grad:
                owners[id(param)].append((module, name))
    return owners


def supported(model: Any, owners: dict[int, list[tuple[Any, str]]] | None = None) -> bool:
    """Whether every trainable parameter lives in a layer type handled here."""
    owners = _owners(model) if owners is None else owners
    return all(_kind(m) is not None for uses in owners.values() for m, _ in uses)


class PerSampleRecorder:
    """Records each layer's input and output gradient during one forward/backward pass.

    Use as a context manager around the forward pass, then call :meth:`backward` with the
    SUM of the texts' own losses (so that each text's rows of an output gradient are that
    text's own); :meth:`norms` then gives every text's gradient norms. The backward pass
    asks autograd for the layers' output gradients only: the weight gradients of an
    ordinary backward (half its cost) are never computed.
    """

    def __init__(self, model: Any, owners: dict[int, list[tuple[Any, str]]] | None = None
                 ) -> None:
        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.owners = _owners(model) if owners is None else owners
        self.inputs: dict[Any, Any] = {}
        self.outputs: dict[Any, Any] = {}
        self.grads: dict[Any, Any] = {}
        self._handles: list[Any] = []

    def __enter__(self) -> PerSampleRecorder:
        modules = {m for uses in self.owners.values() for m, _ in uses}
        for module in modules:
            self._handles.append(module.register_forward_hook(self._forward_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _forward_hook(self, module: Any, args: tuple, output: Any) -> None:
        # A module called twice in one pass would need a list; transformers call each
        # layer once per forward.
        self.inputs[module] = args[0].detach()
        if output.requires_grad:
            self.outputs[module] = output

    def backward(self, loss: Any) -> None:
        """The gradient of ``loss`` at every recorded layer's output."""
        import torch

        modules = list(self.outputs)
        grads = torch.autograd.grad(loss, [self.outputs[m] for m in modules],
                                    allow_unused=True)
        for module, grad in zip(modules, grads, strict=True):
            self.grads[module] = (torch.zeros_like(self.outputs[module]) if grad is None
                                  else grad.detach())
        self.outputs.clear()

    def _contribution(self, module: Any, name: str, rows: slice,
                      part: slice = slice(None)) -> Any:
        """Per-text gradient of ``module.name`` for texts ``rows``: ``(n, *shape)``.

        ``part`` keeps only those indices of the parameter's first dimension (output rows
        of a linear layer, input rows of a Conv1D, vocabulary rows of an embedding), so a
        V x d gradient is built a block of rows at a time.
        """
        import torch

        x, g = self.inputs[module][rows], self.grads[module][rows].float()
        kind = _kind(module)
        if name == "bias":
            return g.sum(dim=tuple(range(1, g.dim() - 1)))[:, part]
        if kind == "linear":
            return torch.einsum("bto,bti->boi", g[..., part], x.float())
        if kind == "conv1d":
            return torch.einsum("bti,bto->bio", x.float()[..., part], g)
        if kind == "layer_norm":
            xhat = torch.nn.functional.layer_norm(x.float(), module.normalized_shape,
                                                  eps=module.eps)
            return (g * xhat).sum(dim=tuple(range(1, g.dim() - 1)))[:, part]
        lo, hi, _ = part.indices(module.weight.shape[0])
        index = x.reshape(g.shape[0], -1)
        # Tokens outside [lo, hi) land in one spare row, dropped after.
        local = torch.where((index >= lo) & (index < hi), index - lo, hi - lo)
        out = torch.zeros((g.shape[0], hi - lo + 1, *module.weight.shape[1:]), dtype=g.dtype,
                          device=g.device)
        out.scatter_add_(1, local[..., None].expand(-1, -1, g.shape[-1]),
                         g.reshape(g.shape[0], -1, g.shape[-1]))
        return out[:, :-1]

    def norms(self, n_texts: int, p: float) -> Any:
        """``(n_texts,)`` mean over parameter tensors of each text's gradient p-norm.

        At most about ``_BUDGET`` gradient elements are held at once: several texts of a
        small parameter, or one text's block of rows of a large one (a 50k x 768
        embedding), the blocks' partial norms combined exactly.
        """
        import torch

        device = self.params[0].device if self.params else None
        total = torch.zeros(n_texts, dtype=torch.float64, device=device)
        for param in self.params:
            owners = self.owners[id(param)]
            if p == 2 and _tied_output(owners) and self._gram_pays(owners):
                total += self._tied_l2(owners, n_texts)
                continue
            if param.numel() * n_texts <= _BUDGET:  # every text's whole gradient at once
                total += torch.linalg.vector_norm(
                    self._gradient(owners, slice(0, n_texts)).flatten(1), ord=p, dim=1,
                    dtype=torch.float64)
                continue
            step = max(1, _BUDGET // max(1, param.numel()))
            n_rows = param.shape[0] if param.dim() else 1
            block = max(1, _BUDGET // max(1, param[0].numel())) if param.dim() else 1
            for start in range(0, n_texts, step):
                rows = slice(start, min(start + step, n_texts))
                total[rows] += _combine([
                    torch.linalg.vector_norm(
                        self._gradient(owners, rows, slice(lo, lo + block)).flatten(1),
                        ord=p, dim=1, dtype=torch.float64)
                    for lo in range(0, n_rows, block)], p)
        return total / len(self.params)

    def _gram_pays(self, owners: list[tuple[Any, str]]) -> bool:
        """Whether the Gram form of a tied weight's norm costs less than building it.

        Per text, :meth:`_tied_l2` costs about ``T^2 (V + 2d)`` multiply-adds and building
        the ``V x d`` gradient ``T V d``: the Gram form pays while the texts are shorter
        (``T`` padded positions) than ``V d / (V + 2 d)``, about the width ``d``.
        """
        linear = next(m for m, _ in owners if _kind(m) == "linear")
        vocab, width = linear.weight.shape
        positions = self.inputs[linear].shape[1]
        return positions * (vocab + 2 * width) < vocab * width

    def _gradient(self, owners: list[tuple[Any, str]], rows: slice,
                  part: slice = slice(None)) -> Any:
        """Per-text gradient of one parameter: the sum over the layers that use it."""
        first, *rest = owners
        grad = self._contribution(*first, rows, part)
        for module, name in rest:
            grad = grad + self._contribution(module, name, rows, part)
        return grad

    def _tied_l2(self, owners: list[tuple[Any, str]], n_texts: int) -> Any:
        """Each text's 2-norm of a weight shared by the output layer and the embedding.

        The output layer's part ``A = sum_t g_t h_t^T`` (V x d) is never built:
        ``||A + E||^2 = ||A||^2 + 2 <A, E> + ||E||^2`` with ``||A||^2 = sum((G G^T) *
        (H H^T))``, ``<A, E> = sum_{s,t} G[s, x_t] (h_s . d_t)`` and ``||E||^2 =
        sum_{x_s = x_t} d_s . d_t`` (``E = sum_t e_{x_t} d_t^T`` the embedding's part):
        ``T^2 (V + d)`` operations per text instead of ``T V d``, and no V x d matrix.
        """
        import torch

        linear = next(m for m, _ in owners if _kind(m) == "linear")
        embedding = next(m for m, _ in owners if _kind(m) == "embedding")
        out = torch.empty(n_texts, dtype=torch.float64, device=linear.weight.device)
        per_text = self.grads[linear][0].numel() * 2  # g and its float64 copy
        step = max(1, _BUDGET // max(1, per_text))  # texts at once, memory bounded
        for start in range(0, n_texts, step):
            b = slice(start, min(start + step, n_texts))
            n = b.stop - b.start
            g = self.grads[linear][b].double().reshape(n, -1, linear.weight.shape[0])
            h = self.inputs[linear][b].double().reshape(n, -1, linear.weight.shape[1])
            ids = self.inputs[embedding][b].reshape(n, -1)
            d = self.grads[embedding][b].double().reshape(n, ids.shape[1], -1)
            a2 = (torch.bmm(g, g.transpose(1, 2)) * torch.bmm(h, h.transpose(1, 2))).sum((1, 2))
            g_at = torch.gather(g, 2, ids[:, None, :].expand(-1, g.shape[1], -1))
            cross = (g_at * torch.bmm(h, d.transpose(1, 2))).sum((1, 2))
            same = ids[:, :, None] == ids[:, None, :]
            e2 = (same * torch.bmm(d, d.transpose(1, 2))).sum((1, 2))
            out[b] = (a2 + 2 * cross + e2).clamp_min(0.0).sqrt()
        return out


def _combine(partial_norms: list[Any], p: float) -> Any:
    """The p-norm of a vector from the p-norms of the blocks it was cut into."""
    import torch

    stacked = torch.stack(partial_norms)
    if p == math.inf:
        return stacked.max(dim=0).values
    return (stacked ** p).sum(dim=0) ** (1.0 / p)


def _tied_output(owners: list[tuple[Any, str]]) -> bool:
    """A weight used by exactly one output (linear, no bias) layer and one embedding."""
    kinds = sorted(_kind(m) or "" for m, _ in owners)
    return kinds == ["embedding", "linear"] and all(name == "weight" for _, name in owners)
