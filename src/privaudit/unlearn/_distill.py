"""Teacher-student unlearning: the bad teacher (BT) and SCRUB."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from privaudit.unlearn._common import (
    DataPair,
    batches,
    checked,
    descend,
    distill_kl,
    finish,
    fresh,
    frozen,
    optimizer,
    prepare,
    seeded,
    step,
    student,
)

__all__ = ["bad_teacher", "scrub"]


def bad_teacher(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    model_factory: Callable[[], Any] | None = None,
    epochs: int = 1,
    lr: float = 1e-4,
    batch_size: int = 256,
    retain_fraction: float = 0.3,
    temperature: float = 1.0,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    optimizer_name: str = "adam",
    random_state: int = 0,
) -> Any:
    """BT: distil a competent teacher on retained records and a random one on forgotten ones.

    The student starts as a copy of ``model``. On a random ``retain_fraction`` of the retain
    set it matches the original model (the competent teacher); on the forget set it matches
    a randomly initialised network of the same architecture (the incompetent teacher); the
    loss is KL(teacher || student) of the tempered softmaxes.

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier (the competent teacher); not modified.
    forget, retain : (X, y)
        The records to forget and to keep (rows must not overlap).
    model_factory : callable or None, default=None
        Builds the incompetent teacher; ``None`` re-initialises a copy of ``model``.
    epochs : int, default=1
        Passes over the distillation set (the paper uses 1).
    lr : float, default=1e-4
        Learning rate (the paper: Adam, 1e-4).
    batch_size : int, default=256
        Mini-batch size (the paper's).
    retain_fraction : float in (0, 1], default=0.3
        Fraction of the retain set distilled from the competent teacher (the paper's 30%).
    temperature : float, default=1.0
        Distillation temperature (the paper's ``KL_temperature``).
    momentum, weight_decay, optimizer_name
        Optimiser settings (``"adam"`` by default, as the paper; momentum only for SGD).
    random_state : int, default=0
        Seeds the incompetent teacher, the retain subset and the batch order.

    Returns
    -------
    torch.nn.Module
        The unlearned student, in evaluation mode.

    References
    ----------
    .. [1] Chundawat, V. S., Tarun, A. K., Mandal, M., Kankanhalli, M. "Can Bad Teaching
       Induce Forgetting? Unlearning in Deep Networks Using an Incompetent Teacher."
       AAAI 2023.
    """
    func = "bad_teacher"
    task = prepare(model, forget, retain, func)
    (model_factory, epochs, lr, batch_size, fraction, temperature, momentum, weight_decay,
     optimizer_name) = checked(
        func, model_factory=model_factory, epochs=epochs, lr=lr, batch_size=batch_size,
        retain_fraction=retain_fraction, temperature=temperature, momentum=momentum,
        weight_decay=weight_decay, optimizer_name=optimizer_name)
    torch = task.torch
    with seeded(torch, random_state, func) as gen:
        bad = frozen(fresh(model, model_factory, func))
        good, net = frozen(model), student(model)
        n_retain = task.X_retain.shape[0]
        keep = torch.randperm(n_retain, generator=gen)[:max(1, round(fraction * n_retain))]
        X = torch.cat([task.X_forget, task.X_retain[keep]])
        with torch.no_grad():
            target = torch.cat([bad(task.X_forget), good(task.X_retain[keep])])
        opt = optimizer(net, optimizer_name, lr, momentum, weight_decay, func)
        descend(opt, X.shape[0], epochs, batch_size, gen,
                lambda idx: distill_kl(net(X[idx]), target[idx], temperature))
    return finish(net)


def scrub(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    epochs: int = 10,
    max_steps: int = 5,
    lr: float = 5e-4,
    batch_size: int = 128,
    forget_batch_size: int = 32,
    temperature: float = 4.0,
    alpha: float = 0.001,
    gamma: float = 0.99,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    optimizer_name: str = "sgd",
    random_state: int = 0,
) -> Any:
    """SCRUB: a student moves away from the teacher on the forget set, stays close elsewhere.

    Each of the first ``max_steps`` epochs starts with a max-step: one pass over the forget
    set ascending KL(teacher || student). Every epoch then makes a min-step: one pass over
    the retain set descending ``gamma * CE + alpha * KL(teacher || student)``.

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier (the teacher, and the student's start); not modified.
    forget, retain : (X, y)
        The records to forget and to keep (rows must not overlap).
    epochs : int, default=10
        Min-step epochs (the reference code's ``sgda_epochs``).
    max_steps : int, default=5
        Epochs that also make a max-step (``msteps``); 0 makes SCRUB a distilled fine-tune.
    lr : float, default=5e-4
        Learning rate (``sgda_learning_rate``).
    batch_size : int, default=128
        Retain mini-batch size.
    forget_batch_size : int, default=32
        Forget mini-batch size (``del_batch_size``).
    temperature : float, default=4.0
        Distillation temperature (``kd_T``).
    alpha : float, default=0.001
        Weight of the KL term in the min-step.
    gamma : float, default=0.99
        Weight of the cross-entropy term in the min-step.
    momentum, weight_decay, optimizer_name
        Optimiser settings (SGD, momentum 0.9, weight decay 5e-4 by default).
    random_state : int, default=0
        Seeds the batch order.

    Returns
    -------
    torch.nn.Module
        The unlearned student, in evaluation mode.

    Notes
    -----
    The reference code decays the learning rate at chosen epochs; this version keeps it
    constant.

    References
    ----------
    .. [1] Kurmanji, M., Triantafillou, P., Hayes, J., Triantafillou, E. "Towards Unbounded
       Machine Unlearning." NeurIPS 2023.
    """
    func = "scrub"
    task = prepare(model, forget, retain, func)
    (epochs, max_steps, lr, batch_size, forget_batch_size, temperature, alpha, gamma,
     momentum, weight_decay, optimizer_name) = checked(
        func, epochs=epochs, max_steps=max_steps, lr=lr, batch_size=batch_size,
        forget_batch_size=forget_batch_size, temperature=temperature, alpha=alpha,
        gamma=gamma, momentum=momentum, weight_decay=weight_decay,
        optimizer_name=optimizer_name)
    torch, F = task.torch, task.torch.nn.functional
    with seeded(torch, random_state, func) as gen:
        teacher, net = frozen(model), student(model)
        with torch.no_grad():
            t_forget, t_retain = teacher(task.X_forget), teacher(task.X_retain)
        opt = optimizer(net, optimizer_name, lr, momentum, weight_decay, func)
        for epoch in range(epochs):
            if epoch < max_steps:
                for idx in batches(task.X_forget.shape[0], forget_batch_size, gen):
                    step(opt, -distill_kl(net(task.X_forget[idx]), t_forget[idx], temperature))
            for idx in batches(task.X_retain.shape[0], batch_size, gen):
                out = net(task.X_retain[idx])
                loss = gamma * F.cross_entropy(out, task.y_retain[idx]) + alpha * distill_kl(
                    out, t_retain[idx], temperature)
                step(opt, loss)
    return finish(net)
