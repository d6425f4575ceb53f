"""Saliency-masked unlearning: SalUn and SFR-on."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from privaudit.unlearn._common import (
    DataPair,
    Task,
    batches,
    checked,
    descend,
    finish,
    optimizer,
    prepare,
    seeded,
    step,
    student,
)

__all__ = ["salun", "sfr_on"]


def _forget_gradients(net: Any, task: Task) -> dict[str, Any]:
    F = task.torch.nn.functional
    net.eval()
    net.zero_grad(set_to_none=True)
    (-F.cross_entropy(net(task.X_forget), task.y_forget)).backward()
    grads = {n: p.grad.detach().clone() for n, p in net.named_parameters() if p.grad is not None}
    net.zero_grad(set_to_none=True)
    net.train()
    return grads


def _salun_mask(net: Any, task: Task, fraction: float) -> dict[str, Any]:
    """1 on the ``fraction`` of weights with the largest forget-loss gradient magnitude."""
    torch = task.torch
    grads = _forget_gradients(net, task)
    names = [n for n, _ in net.named_parameters()]
    flat = torch.cat([grads[n].abs().flatten() if n in grads else
                      torch.zeros(p.numel()) for n, p in net.named_parameters()])
    chosen = torch.zeros_like(flat)
    chosen[torch.topk(flat, max(1, round(fraction * flat.numel()))).indices] = 1.0
    shapes = [p.shape for _, p in net.named_parameters()]
    parts = torch.split(chosen, [math.prod(s) for s in shapes])
    return {n: part.reshape(s) for n, part, s in zip(names, parts, shapes, strict=True)}


def salun(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    saliency_fraction: float = 0.5,
    epochs: int = 10,
    lr: float = 0.01,
    batch_size: int = 64,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    optimizer_name: str = "sgd",
    random_state: int = 0,
) -> Any:
    """SalUn: random-label fine-tuning of the weights most salient to the forget loss.

    The saliency map is the magnitude of the gradient of the forget set's (negated)
    cross-entropy at the original weights; the ``saliency_fraction`` largest entries, over
    all parameters, form the mask. Each forget record then gets a random wrong label, and the
    masked weights are trained on the forget set (random labels) plus the retain set (true
    labels); the others stay as they were.

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier; not modified.
    forget, retain : (X, y)
        The records to forget and to keep (rows must not overlap).
    saliency_fraction : float in (0, 1], default=0.5
        Fraction of the weights updated (the paper's 50% threshold).
    epochs : int, default=10
        Passes over forget + retain (the paper's 10).
    lr : float, default=0.01
        Learning rate (the paper searches [0.005, 0.1] for classification).
    batch_size : int, default=64
        Mini-batch size.
    momentum, weight_decay, optimizer_name
        Optimiser settings (SGD, momentum 0.9, weight decay 5e-4 by default).
    random_state : int, default=0
        Seeds the random labels and the batch order.

    Returns
    -------
    torch.nn.Module
        The unlearned copy, in evaluation mode.

    References
    ----------
    .. [1] Fan, C., Liu, J., Zhang, Y., Wong, E., Wei, D., Liu, S. "SalUn: Empowering
       Machine Unlearning via Gradient-based Weight Saliency in Both Image Classification
       and Generation." ICLR 2024.
    """
    func = "salun"
    task = prepare(model, forget, retain, func)
    fraction, epochs, lr, batch_size, momentum, weight_decay, optimizer_name = checked(
        func, saliency_fraction=saliency_fraction, epochs=epochs, lr=lr,
        batch_size=batch_size, momentum=momentum, weight_decay=weight_decay,
        optimizer_name=optimizer_name)
    torch, F = task.torch, task.torch.nn.functional
    with seeded(torch, random_state, func) as gen:
        net = student(model)
        mask = _salun_mask(net, task, fraction)
        shift = torch.randint(1, task.n_classes, task.y_forget.shape, generator=gen)
        X = torch.cat([task.X_forget, task.X_retain])
        y = torch.cat([(task.y_forget + shift) % task.n_classes, task.y_retain])
        opt = optimizer(net, optimizer_name, lr, momentum, weight_decay, func)
        descend(opt, X.shape[0], epochs, batch_size, gen,
                lambda idx: F.cross_entropy(net(X[idx]), y[idx]), mask, net)
    return finish(net)


def _cycle(n: int, batch_size: int, gen: Any) -> Iterator[Any]:
    while True:
        yield from batches(n, batch_size, gen)


def _fisher(net: Any, X: Any, y: Any, batch_size: int, gen: Any, torch: Any) -> dict[str, Any]:
    """Mean over mini-batches of the squared batch gradient of the cross-entropy."""
    out = {n: torch.zeros_like(p) for n, p in net.named_parameters()}
    chunks = list(batches(X.shape[0], batch_size, gen))
    for idx in chunks:
        net.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(X[idx]), y[idx]).backward()
        for n, p in net.named_parameters():
            if p.grad is not None:
                out[n] += p.grad.detach() ** 2 / len(chunks)
    net.zero_grad(set_to_none=True)
    return out


def _sfr_mask(net: Any, task: Task, threshold: float, batch_size: int,
              gen: Any) -> dict[str, Any]:
    """Forget-remain balanced saliency: forget Fisher / retain Fisher >= ``threshold``."""
    net.eval()
    f_forget = _fisher(net, task.X_forget, task.y_forget, batch_size, gen, task.torch)
    f_retain = _fisher(net, task.X_retain, task.y_retain, batch_size, gen, task.torch)
    net.train()
    return {n: ((f_forget[n] + 1e-15) / (f_retain[n] + 1e-15) >= threshold).float()
            for n in f_forget}


def _adaptive_ce(logits: Any, y: Any, lambd: float, F: Any) -> Any:
    """Cross-entropy with per-record weights proportional to ``1 / loss**lambd`` (mean 1)."""
    loss = F.cross_entropy(logits, y, reduction="none")
    coef = 1.0 / (loss.detach() ** lambd + 1e-15)
    return (coef / coef.sum() * loss * logits.shape[0]).mean()


def sfr_on(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    n_iters: int = 1500,
    forget_freq: int = 5,
    forget_alpha: float = 25.0,
    lambd: float = 0.5,
    saliency_threshold: float = 1.0,
    max_norm: float = 7.0,
    lr: float = 0.01,
    batch_size: int = 128,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    optimizer_name: str = "sgd",
    random_state: int = 0,
) -> Any:
    """SFR-on: saliency forgetting in the remain-preserving manifold, online.

    Follows the authors' classification code: a weight mask keeps the parameters whose
    forget-set Fisher diagonal is at least ``saliency_threshold`` times their retain-set
    one; then for ``n_iters`` steps, every ``forget_freq``-th step first makes a masked,
    norm-clipped gradient-ascent step on a forget batch with the adaptive loss (records
    weighted by ``1 / CE**lambd``, coefficient ``forget_alpha`` on a cosine schedule), and
    every step makes a cross-entropy descent step on a retain batch (learning rate on a
    cosine schedule). The alternation of the two steps is the paper's fast-slow update that
    implicitly approximates the retain-Hessian-modulated direction.

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier; not modified.
    forget, retain : (X, y)
        The records to forget and to keep (rows must not overlap).
    n_iters : int, default=1500
        Retain steps (the authors' CIFAR-10 setting).
    forget_freq : int, default=5
        A forget step every ``forget_freq`` retain steps.
    forget_alpha : float, default=25.0
        Initial weight of the forget loss (cosine-decayed to 0).
    lambd : float, default=0.5
        Exponent of the adaptive per-record weights (lambda in the paper).
    saliency_threshold : float, default=1.0
        Forget/retain Fisher ratio above which a weight is unlearned (gamma in the paper).
    max_norm : float, default=7.0
        Gradient-norm clip of the forget steps.
    lr, batch_size, momentum, weight_decay, optimizer_name
        Optimiser settings (SGD, 0.01, 128, 0.9, 5e-4: the authors' CIFAR-10 values).
    random_state : int, default=0
        Seeds the batch order.

    Returns
    -------
    torch.nn.Module
        The unlearned copy, in evaluation mode.

    Notes
    -----
    The authors' code also has an EMA of the weights, disabled in their setting
    (``ema_beta=1``); it is left out.

    References
    ----------
    .. [1] Huang, Z., Cheng, X., Zheng, J., Wang, H., He, Z., Li, T., Huang, X. "Unified
       Gradient-Based Machine Unlearning with Remain Geometry Enhancement." NeurIPS 2024.
    """
    func = "sfr_on"
    task = prepare(model, forget, retain, func)
    (n_iters, freq, alpha, lambd, threshold, max_norm, lr, batch_size, momentum,
     weight_decay, optimizer_name) = checked(
        func, n_iters=n_iters, forget_freq=forget_freq, forget_alpha=forget_alpha,
        lambd=lambd, saliency_threshold=saliency_threshold, max_norm=max_norm, lr=lr,
        batch_size=batch_size, momentum=momentum, weight_decay=weight_decay,
        optimizer_name=optimizer_name)
    torch, F = task.torch, task.torch.nn.functional
    with seeded(torch, random_state, func) as gen:
        net = student(model)
        mask = _sfr_mask(net, task, threshold, batch_size, gen)
        opt = optimizer(net, optimizer_name, lr, momentum, weight_decay, func)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=n_iters)
        forget_it = _cycle(task.X_forget.shape[0], batch_size, gen)
        retain_it = _cycle(task.X_retain.shape[0], batch_size, gen)
        for it in range(n_iters):
            if it % freq == 0:
                weight = alpha * (1 + math.cos(math.pi * it / n_iters)) / 2
                idx = next(forget_it)
                loss = -weight * _adaptive_ce(net(task.X_forget[idx]), task.y_forget[idx],
                                              lambd, F)
                step(opt, loss, mask, net, max_norm)
            idx = next(retain_it)
            step(opt, F.cross_entropy(net(task.X_retain[idx]), task.y_retain[idx]))
            sched.step()
    return finish(net)
