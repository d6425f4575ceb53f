"""The baselines: retraining (RT), fine-tuning (FT) and gradient ascent (GA)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from privaudit._validation import param_error
from privaudit.unlearn._common import (
    DataPair,
    checked,
    descend,
    finish,
    fresh,
    optimizer,
    positive_int,
    prepare,
    seeded,
    student,
)

__all__ = ["fine_tune", "gradient_ascent", "retrain"]


def _train_recipe(recipe: Any, task: Any, random_state: int, func: str) -> Any:
    X_r, y_r = task.raw_retain
    net = recipe.train(X_r, y_r, random_state=random_state)
    torch = task.torch
    if not isinstance(net, torch.nn.Module):
        raise param_error("model_factory", func, "a recipe whose train returns a "
                          "torch.nn.Module", f"<{type(net).__name__}>", error=TypeError)
    with torch.no_grad():
        width = net.eval()(task.X_forget[:1]).shape[1]
    if width != task.n_classes:
        raise param_error("model_factory", func, f"a recipe giving {task.n_classes} output "
                          "columns like the model (pass classes= to the recipe)",
                          f"<{width} columns>")
    return net.eval()


def _refit_input_statistics(net: Any, X: Any) -> None:
    """Recompute a privaudit net's input standardisation on the retain set (duck-typed).

    privaudit's torch nets keep the training mean and standard deviation of each feature as
    buffers ``mean`` and ``scale``; after re-initialisation they would still describe the
    original training set, forget records included.
    """
    buffers = dict(net.named_buffers())
    flat = X.reshape(X.shape[0], -1).double()
    if not callable(getattr(net, "standardize", None)) or not {"mean", "scale"} <= set(buffers) \
            or buffers["mean"].shape != flat.shape[1:]:
        return
    std = flat.std(dim=0, unbiased=False)
    std[std == 0] = 1.0  # as the recipes: constant features pass through unscaled
    buffers["mean"].copy_(flat.mean(dim=0).float())
    buffers["scale"].copy_(std.float())


def _is_recipe(model_factory: Any, torch: Any) -> bool:
    """A training recipe (``train(X, y, *, random_state)``), not a module or a class."""
    return (model_factory is not None and callable(getattr(model_factory, "train", None))
            and not isinstance(model_factory, (type, torch.nn.Module)))


def retrain(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    model_factory: Callable[[], Any] | Any | None = None,
    epochs: int = 30,
    lr: float = 1e-3,
    batch_size: int = 64,
    weight_decay: float = 0.0,
    random_state: int = 0,
) -> Any:
    """RT: retrain from scratch on the retain set only (exact unlearning).

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier (logits of shape ``(n, n_classes)``); not modified.
    forget, retain : (X, y)
        The records to forget and the records to keep; ``forget`` is only checked (its rows
        must not appear in ``retain``): the new model never sees it.
    model_factory : callable, TorchMLPRecipe, TorchCNNRecipe or None, default=None
        How to build the fresh model. A privaudit torch recipe (anything with
        ``train(X, y, *, random_state)``) is trained on the retain set with its own
        hyperparameters (``epochs``, ``lr``... here are then ignored); a callable returning
        a fresh ``torch.nn.Module`` is trained by Adam on cross-entropy; ``None``
        re-initialises a copy of ``model`` (``reset_parameters`` of each layer; a privaudit
        net's input statistics are recomputed on the retain set, other buffers are kept)
        and trains it the same way.
    epochs, lr, batch_size, weight_decay
        Adam training when ``model_factory`` is not a recipe (defaults of
        :class:`~privaudit.training.TorchMLPRecipe`).
    random_state : int, default=0
        Seeds the initialisation and the batch order.

    Returns
    -------
    torch.nn.Module
        The retrained model, in evaluation mode.

    References
    ----------
    .. [1] Cao, Y., Yang, J. "Towards Making Systems Forget with Machine Unlearning."
       IEEE S&P 2015.
    .. [2] Tang, Joshi, Kundu. "Apollo: A Posteriori Label-Only Membership Inference Attack
       Towards Machine Unlearning" (RT is the sanity baseline).
    """
    func = "retrain"
    task = prepare(model, forget, retain, func)
    epochs, lr, batch_size, weight_decay, model_factory = checked(
        func, epochs=epochs, lr=lr, batch_size=batch_size, weight_decay=weight_decay,
        model_factory=model_factory)
    if _is_recipe(model_factory, task.torch):
        seed = positive_int(random_state, "random_state", func, zero=True)
        return _train_recipe(model_factory, task, seed, func)
    F = task.torch.nn.functional
    with seeded(task.torch, random_state, func) as gen:
        net = fresh(model, model_factory, func)
        if model_factory is None:
            _refit_input_statistics(net, task.X_retain)
        opt = optimizer(net, "adam", lr, 0.0, weight_decay, func)
        descend(opt, task.X_retain.shape[0], epochs, batch_size, gen,
                lambda idx: F.cross_entropy(net(task.X_retain[idx]), task.y_retain[idx]))
    return finish(net)


def fine_tune(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    epochs: int = 5,
    lr: float = 0.01,
    batch_size: int = 64,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    optimizer_name: str = "sgd",
    random_state: int = 0,
) -> Any:
    """FT: fine-tune the model on the retain set (catastrophic forgetting of the rest).

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier; not modified (a deep copy is trained).
    forget, retain : (X, y)
        The records to forget (only checked against ``retain``) and to keep.
    epochs : int, default=5
        Passes over the retain set.
    lr : float, default=0.01
        Learning rate.
    batch_size : int, default=64
        Mini-batch size.
    momentum : float, default=0.9
        SGD momentum (ignored by Adam).
    weight_decay : float, default=5e-4
        L2 penalty.
    optimizer_name : {"sgd", "adam"}, default="sgd"
        The optimiser.
    random_state : int, default=0
        Seeds the batch order.

    Returns
    -------
    torch.nn.Module
        The unlearned copy, in evaluation mode.

    References
    ----------
    .. [1] Golatkar, A., Achille, A., Soatto, S. "Eternal Sunshine of the Spotless Net:
       Selective Forgetting in Deep Networks." CVPR 2020.
    .. [2] Warnecke, A., Pirch, L., Wressnegger, C., Rieck, K. "Machine Unlearning of
       Features and Labels." NDSS 2023.
    """
    func = "fine_tune"
    task = prepare(model, forget, retain, func)
    epochs, lr, batch_size, momentum, weight_decay, optimizer_name = checked(
        func, epochs=epochs, lr=lr, batch_size=batch_size, momentum=momentum,
        weight_decay=weight_decay, optimizer_name=optimizer_name)
    F = task.torch.nn.functional
    with seeded(task.torch, random_state, func) as gen:
        net = student(model)
        opt = optimizer(net, optimizer_name, lr, momentum, weight_decay, func)
        descend(opt, task.X_retain.shape[0], epochs, batch_size, gen,
                lambda idx: F.cross_entropy(net(task.X_retain[idx]), task.y_retain[idx]))
    return finish(net)


def gradient_ascent(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    epochs: int = 10,
    lr: float = 0.01,
    batch_size: int = 32,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    optimizer_name: str = "sgd",
    random_state: int = 0,
) -> Any:
    """GA: ascend the cross-entropy of the forget set (the retain set is not used).

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier; not modified.
    forget, retain : (X, y)
        The records to forget and to keep (``retain`` is only checked: GA never reads it).
    epochs : int, default=10
        Passes over the forget set.
    lr : float, default=0.01
        Learning rate. GA has no canonical setting and diverges quickly (the retain
        accuracy collapses): the number of steps grows with the forget set, so tune
        ``epochs * lr`` to it.
    batch_size : int, default=32
        Mini-batch size.
    momentum, weight_decay, optimizer_name
        As in :func:`fine_tune`.
    random_state : int, default=0
        Seeds the batch order.

    Returns
    -------
    torch.nn.Module
        The unlearned copy, in evaluation mode.

    References
    ----------
    .. [1] Thudi, A., Deza, G., Chandrasekaran, V., Papernot, N. "Unrolling SGD:
       Understanding Factors Influencing Machine Unlearning." IEEE EuroS&P 2022.
    .. [2] Graves, L., Nagisetty, V., Ganesh, V. "Amnesiac Machine Learning." AAAI 2021.
    """
    func = "gradient_ascent"
    task = prepare(model, forget, retain, func)
    epochs, lr, batch_size, momentum, weight_decay, optimizer_name = checked(
        func, epochs=epochs, lr=lr, batch_size=batch_size, momentum=momentum,
        weight_decay=weight_decay, optimizer_name=optimizer_name)
    F = task.torch.nn.functional
    with seeded(task.torch, random_state, func) as gen:
        net = student(model)
        opt = optimizer(net, optimizer_name, lr, momentum, weight_decay, func)
        descend(opt, task.X_forget.shape[0], epochs, batch_size, gen,
                lambda idx: -F.cross_entropy(net(task.X_forget[idx]), task.y_forget[idx]))
    return finish(net)
