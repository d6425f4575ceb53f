"""Train many small torch networks of one architecture at once, over stacked parameters.

Shadow (reference) models of a machine-unlearning or membership audit share an
architecture and a recipe: only their data and seed differ. Stacking their parameters
(``torch.func.stack_module_state``) and running the forward pass under ``torch.vmap`` turns
many tiny matrix products into one batched product per layer, which is where a CPU spends
its time on small networks trained one at a time (Python and dispatch overhead).

This module imports torch at module level: it is imported only by
:meth:`privaudit.training.TorchMLPRecipe.train_many` (inside the method), never by
``import privaudit``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch.nn import functional as F

from privaudit._validation import param_error
from privaudit.training._torch_seed import seeded

__all__ = ["train_stacked"]

_FUNC = "train_stacked"
_BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults, as TorchMLPRecipe.train uses them
_EPS = 1e-8

Prepared = tuple[NDArray[np.float32], NDArray[np.int64], NDArray[Any]]


def train_stacked(recipe: Any, datasets: Sequence[tuple[Any, Any]],
                  seeds: Sequence[int]) -> list[Any]:
    """Train one network per dataset, all at once, as ``recipe.train`` would one by one.

    Model ``i`` follows the trajectory of ``recipe.train(*datasets[i],
    random_state=seeds[i])``: the same initialisation (each network is built under its own
    seed, then the parameters are stacked), the same mini-batch order (each model has its
    own generator and the same ``randperm`` calls), the same Adam updates. Datasets may have
    different lengths: a model whose epoch has fewer batches sits out the remaining steps
    of that epoch (its parameters, moments and step count stay as they are), and its short
    last batch is padded with zero-weight rows so that its loss is the mean over its real
    rows. Models are independent of each other: which models are trained together changes
    nothing in any of them, bit for bit (tested for both built-in networks).

    Parameters
    ----------
    recipe : TorchMLPRecipe or TorchCNNRecipe
        The recipe (epochs, learning rate, weight decay, batch size, threads).
    datasets : sequence of (X, y)
        One training set per model, of any lengths.
    seeds : sequence of int
        One seed per model, as ``random_state`` of :meth:`recipe.train`.

    Returns
    -------
    list of TorchClassifierNet
        The trained networks in the order of ``datasets``, in evaluation mode, with
        ``classes_`` and the standardisation buffers set. They equal the sequentially
        trained ones within float tolerance, not bit for bit: a batched matrix product
        rounds differently from a single one.

    Notes
    -----
    The optimiser is written out here because torch has none that updates stacked
    parameters with a per-model step mask and per-model step counts (Adam's bias
    correction depends on each model's own step). Adam is elementwise, so the update of the
    stacked tensors is the update of each model; the arithmetic follows
    ``torch.optim.Adam``'s single-tensor implementation (L2 ``weight_decay`` added to the
    gradient). Models whose labels give a different number of output classes (or records
    of another width) are trained in separate stacks. The caller's global random state is
    untouched and torch runs on ``recipe.num_threads`` threads, as in ``train``.

    References
    ----------
    .. [1] PyTorch, "Model ensembling" (``torch.func.stack_module_state``,
       ``functional_call`` and ``vmap``), https://pytorch.org/tutorials/intermediate/ensembling.html
    .. [2] Kingma, D. P., Ba, J. "Adam: A Method for Stochastic Optimization." ICLR 2015.
    .. [3] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A., Tramèr, F. "Membership
       Inference Attacks From First Principles." IEEE S&P 2022 (many shadow models of the
       target's architecture).
    """
    if len(datasets) != len(seeds):
        raise param_error("seeds", _FUNC, f"one seed per dataset ({len(datasets)})",
                          f"<{len(seeds)} seeds>")
    prepared = [recipe._prepare(X, y) for X, y in datasets]
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (X_flat, _, classes) in enumerate(prepared):
        groups.setdefault((X_flat.shape[1], classes.size), []).append(i)
    out: list[Any] = [None] * len(prepared)
    for members in groups.values():
        # A one-model stack runs other kernels (an ungrouped convolution, a plain matrix
        # product) that round differently from a stack of two or more: a lone model is
        # trained beside a copy of itself, so that no model depends on its companions.
        padded = members if len(members) > 1 else members * 2
        nets = _train_group(recipe, [prepared[i] for i in padded],
                            [int(seeds[i]) for i in padded])
        for i, net in zip(members, nets[:len(members)], strict=True):
            out[i] = net
    return out


def _init_net(recipe: Any, data: Prepared, seed: int) -> Any:
    """Build and standardise one network exactly as ``recipe.train`` does."""
    X_flat, _, classes = data
    with seeded(torch, seed, recipe.num_threads):
        net = recipe.build_network(X_flat.shape[1], classes.size)
    mean = X_flat.astype(np.float64).mean(axis=0)
    std = X_flat.astype(np.float64).std(axis=0)
    std[std == 0] = 1.0
    net.mean.copy_(torch.from_numpy(mean.astype(np.float32)))
    net.scale.copy_(torch.from_numpy(std.astype(np.float32)))
    net.classes_ = classes
    return net


def _padded(data: list[Prepared]) -> tuple[torch.Tensor, torch.Tensor]:
    """Every model's records and label indices, padded to the longest: (M, n, F), (M, n)."""
    n_max = max(d[0].shape[0] for d in data)
    X = torch.zeros(len(data), n_max, data[0][0].shape[1])
    y = torch.zeros(len(data), n_max, dtype=torch.int64)
    for m, (X_flat, idx, _) in enumerate(data):
        X[m, :X_flat.shape[0]] = torch.from_numpy(X_flat)
        y[m, :idx.shape[0]] = torch.from_numpy(idx)
    return X, y


def _epoch_layout(gens: list[torch.Generator], sizes: list[int],
                  width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each model's shuffled record order for one epoch, and 1/0 weights of real rows.

    Row ``m`` holds ``randperm(sizes[m])`` (the call ``train`` makes) followed by padding;
    columns ``[s * batch_size, (s + 1) * batch_size)`` are every model's batch ``s``.
    """
    order = torch.zeros(len(sizes), width, dtype=torch.int64)
    weight = torch.zeros(len(sizes), width)
    for m, (gen, n) in enumerate(zip(gens, sizes, strict=True)):
        order[m, :n] = torch.randperm(n, generator=gen)
        weight[m, :n] = 1.0
    return order, weight


@dataclass
class _MaskedAdam:
    """Adam (L2 weight decay) over stacked parameters, stepping only the models in a mask.

    Follows ``torch.optim.Adam``'s single-tensor arithmetic elementwise; the bias
    corrections use each model's own step count.
    """

    params: dict[str, torch.Tensor]
    lr: float
    weight_decay: float

    def __post_init__(self) -> None:
        self.exp_avg = {k: torch.zeros_like(p) for k, p in self.params.items()}
        self.exp_avg_sq = {k: torch.zeros_like(p) for k, p in self.params.items()}
        self.steps = np.zeros(next(iter(self.params.values())).shape[0], dtype=np.int64)

    def _coefficients(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Per model: ``-lr / (1 - beta1**t)`` and ``sqrt(1 - beta2**t)``, as Adam's floats."""
        beta1, beta2 = _BETAS
        t = [float(max(s, 1)) for s in self.steps]
        neg_step = [-(self.lr / (1 - beta1**s)) for s in t]
        bc2_sqrt = [(1 - beta2**s) ** 0.5 for s in t]
        return torch.tensor(neg_step), torch.tensor(bc2_sqrt)

    def step(self, grads: Sequence[torch.Tensor], active: torch.Tensor) -> None:
        """Update the models where ``active`` (bool, one per model) with ``grads``."""
        self.steps += active.numpy()
        neg_step, bc2_sqrt = self._coefficients()
        everyone = bool(active.all())  # most steps: update in place, nothing to mask
        for (k, p), g in zip(self.params.items(), grads, strict=True):
            shape = (-1,) + (1,) * (p.dim() - 1)
            if self.weight_decay != 0:
                g = g.add(p, alpha=self.weight_decay)
            ea, eas = self._moments(k, g, in_place=everyone)
            denom = eas.sqrt().div_(bc2_sqrt.view(shape)).add_(_EPS)
            update = ea.mul(neg_step.view(shape)).div_(denom)  # addcdiv: value * t1 / t2
            if everyone:
                p.add_(update)
                continue
            mask = active.view(shape)
            self.exp_avg[k].copy_(torch.where(mask, ea, self.exp_avg[k]))
            self.exp_avg_sq[k].copy_(torch.where(mask, eas, self.exp_avg_sq[k]))
            p.copy_(torch.where(mask, p + update, p))

    def _moments(self, k: str, g: torch.Tensor, *,
                 in_place: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Adam's first and second moments after gradient ``g`` (same kernels either way)."""
        beta1, beta2 = _BETAS
        ea, eas = self.exp_avg[k], self.exp_avg_sq[k]
        if in_place:
            return ea.lerp_(g, 1 - beta1), eas.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        return ea.lerp(g, 1 - beta1), eas.mul(beta2).addcmul_(g, g, value=1 - beta2)


def _stacked_loss(base: Any, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor],
                  xb: torch.Tensor, yb: torch.Tensor, wb: torch.Tensor) -> torch.Tensor:
    """Sum over models of each model's mean cross-entropy on its real rows."""
    def logits_of(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor],
                  x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(base, (p, b), (x,))

    logits = torch.vmap(logits_of)(params, buffers, xb)
    ce = F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="none")
    ce = ce.view(wb.shape)
    return ((ce * wb).sum(dim=1) / wb.sum(dim=1).clamp(min=1.0)).sum()


def _train_group(recipe: Any, data: list[Prepared], seeds: list[int]) -> list[Any]:
    """Train models of one shape together; see :func:`train_stacked`."""
    nets = [_init_net(recipe, d, s) for d, s in zip(data, seeds, strict=True)]
    sizes = [d[0].shape[0] for d in data]
    bs = recipe.batch_size
    n_batches = max(-(-n // bs) for n in sizes)
    with seeded(torch, seeds[0], recipe.num_threads):  # threads as train; RNG untouched
        params, buffers = torch.func.stack_module_state(nets)
        base = copy.deepcopy(nets[0]).to("meta")
        X, y = _padded(data)
        rows = torch.arange(len(data))[:, None]
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        adam = _MaskedAdam(params, recipe.lr, recipe.weight_decay)
        for _ in range(recipe.epochs):
            order, weight = _epoch_layout(gens, sizes, n_batches * bs)
            for start in range(0, n_batches * bs, bs):
                idx, wb = order[:, start:start + bs], weight[:, start:start + bs]
                loss = _stacked_loss(base, params, buffers, X[rows, idx], y[rows, idx], wb)
                grads = torch.autograd.grad(loss, list(params.values()))
                with torch.no_grad():
                    adam.step(grads, wb[:, 0] > 0)
    return _unstack(nets, params)


def _unstack(nets: list[Any], params: dict[str, torch.Tensor]) -> list[Any]:
    """Copy each model's slice of the stacked parameters into its own network."""
    with torch.no_grad():
        for m, net in enumerate(nets):
            for name, p in net.named_parameters():
                p.copy_(params[name][m])
            net.eval()
    return nets
