"""Shared plumbing of the unlearning algorithms: checks, tensors, seeding, small steps.

torch is imported inside the functions (``import privaudit.unlearn`` stays light).
"""

from __future__ import annotations

import contextlib
import copy
import numbers
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error
from privaudit.targets import import_torch

#: A data set as the algorithms take it: ``(X, y)`` with one label per record.
DataPair = tuple[Any, Any]




def positive_int(value: Any, param: str, func: str, *, zero: bool = False) -> int:
    """``value`` as an int >= 1 (>= 0 with ``zero``), else a ValueError naming ``param``."""
    low = 0 if zero else 1
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise param_error(param, func, "a non-negative integer" if zero
                          else "a positive integer", value)
    return int(value)


def positive_float(value: Any, param: str, func: str, *, zero: bool = False,
                   high: float | None = None) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``zero``; <= ``high`` when given)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero) or (high is not None and value > high):
        low = "0 <= x" if zero else "0 < x"
        expected = f"a real number {low} <= {high}" if high is not None else (
            "a non-negative real number" if zero else "a positive real number")
        raise param_error(param, func, expected, value)
    return float(value)


@dataclass
class Task:
    """The checked inputs of one unlearning run, as CPU tensors."""

    torch: Any
    X_forget: Any
    y_forget: Any
    X_retain: Any
    y_retain: Any
    n_classes: int
    raw_retain: tuple[NDArray[Any], NDArray[Any]]


def _pair(value: Any, param: str, func: str) -> tuple[NDArray[np.float32], NDArray[Any]]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise param_error(param, func, "a pair (X, y) of records and labels",
                          f"<{type(value).__name__}>", error=TypeError)
    X, y = value
    X_arr = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=np.float32)
    y_arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if X_arr.ndim < 2 or X_arr.shape[0] == 0:
        raise param_error(param, func, "a pair (X, y) with X a non-empty array of records "
                          "(n_records, ...)", f"<X of shape {X_arr.shape}>")
    if y_arr.shape != (X_arr.shape[0],):
        raise param_error(param, func, f"a pair (X, y) with one label per record "
                          f"({X_arr.shape[0]})", f"<y of shape {y_arr.shape}>")
    return np.ascontiguousarray(X_arr), y_arr


def _check_disjoint(X_forget: NDArray[Any], X_retain: NDArray[Any], func: str) -> None:
    from privaudit._rows import rows_found_in

    shared = int(rows_found_in(X_retain, X_forget).sum())
    if shared:
        raise param_error("retain", func, "disjoint from the forget set (no record in both)",
                          f"<{shared} record(s) also in forget>")


def _n_classes(torch: Any, model: Any, X: NDArray[np.float32], func: str) -> int:
    probe = copy.deepcopy(model).eval()
    try:
        with torch.no_grad():
            out = probe(torch.from_numpy(X[:2]))
    except Exception as exc:  # a shape mismatch inside the network
        raise param_error("forget", func, "records the model accepts",
                          f"<records of shape {X.shape[1:]}: {exc}>") from exc
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[1] < 2:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise param_error("model", func, "a classifier returning logits of shape "
                          "(n_records, n_classes >= 2)", f"<output {shape}>")
    return int(out.shape[1])


def _label_idx(model: Any, y: NDArray[Any], n_classes: int, param: str,
               func: str) -> NDArray[np.int64]:
    classes = getattr(model, "classes_", None)
    if classes is not None and np.asarray(classes).size == n_classes:
        from privaudit.targets import label_indices

        return label_indices(y, classes, func=func, param=param).astype(np.int64)
    if y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= n_classes:
        raise param_error(param, func, f"integer labels in [0, {n_classes}) (the model has no "
                          "classes_ attribute)", f"<labels {np.unique(y)[:5].tolist()}...>")
    return y.astype(np.int64)


def prepare(model: Any, forget: Any, retain: Any, func: str) -> Task:
    """Check the model and the two sets and turn them into tensors."""
    torch = import_torch()
    if not isinstance(model, torch.nn.Module):
        raise param_error("model", func, "a torch.nn.Module", f"<{type(model).__name__}>",
                          error=TypeError)
    X_f, y_f = _pair(forget, "forget", func)
    X_r, y_r = _pair(retain, "retain", func)
    if X_f.shape[1:] != X_r.shape[1:]:
        raise param_error("retain", func, f"records of the forget set's shape {X_f.shape[1:]}",
                          f"<records of shape {X_r.shape[1:]}>")
    _check_disjoint(X_f, X_r, func)
    n_classes = _n_classes(torch, model, X_f, func)
    yf = _label_idx(model, y_f, n_classes, "forget", func)
    yr = _label_idx(model, y_r, n_classes, "retain", func)
    return Task(torch, torch.from_numpy(X_f), torch.from_numpy(yf), torch.from_numpy(X_r),
                torch.from_numpy(yr), n_classes, (X_r, y_r))


@contextlib.contextmanager
def seeded(torch: Any, random_state: Any, func: str) -> Iterator[Any]:
    """Seed torch in a forked RNG on one thread; yield a Generator for the batch order.

    The caller's global random state and thread count are restored afterwards; one thread
    makes the weights bit-identical whatever the machine's core count.
    """
    seed = positive_int(random_state, "random_state", func, zero=True)
    old_threads = torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        try:
            yield torch.Generator().manual_seed(seed)
        finally:
            torch.set_num_threads(old_threads)


def student(model: Any) -> Any:
    """A deep copy of ``model`` in training mode (the input model is never modified)."""
    return copy.deepcopy(model).train()


def frozen(model: Any) -> Any:
    """A deep copy of ``model`` in evaluation mode with gradients off (a teacher)."""
    net = copy.deepcopy(model).eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net


def finish(net: Any) -> Any:
    """The unlearned network in evaluation mode, gradients cleared."""
    net.zero_grad(set_to_none=True)
    return net.eval()


def fresh(model: Any, model_factory: Callable[[], Any] | None, func: str) -> Any:
    """A freshly initialised network: ``model_factory()`` or ``model`` re-initialised.

    Re-initialisation calls ``reset_parameters`` of every layer holding parameters (from the
    seeded global generator); buffers (e.g. input statistics) are kept.
    """
    torch = import_torch()
    if model_factory is not None:
        if not callable(model_factory):
            raise param_error("model_factory", func, "None or a callable returning a fresh "
                              "torch.nn.Module", model_factory, error=TypeError)
        net = model_factory()
        if not isinstance(net, torch.nn.Module):
            raise param_error("model_factory", func, "a callable returning a torch.nn.Module",
                              f"<returned {type(net).__name__}>", error=TypeError)
        return net.train()
    net = copy.deepcopy(model)
    for layer in net.modules():
        if any(True for _ in layer.parameters(recurse=False)):
            if not callable(getattr(layer, "reset_parameters", None)):
                raise param_error("model_factory", func, "given: the model has a layer without "
                                  "reset_parameters", f"<{type(layer).__name__}>",
                                  error=TypeError)
            layer.reset_parameters()
    return net.train()


def batches(n: int, batch_size: int, gen: Any) -> Iterator[Any]:
    """Shuffled index batches of ``range(n)`` (one epoch), drawn from ``gen``."""
    torch = import_torch()
    perm = torch.randperm(n, generator=gen)
    for start in range(0, n, batch_size):
        yield perm[start:start + batch_size]


def optimizer(net: Any, name: str, lr: float, momentum: float, weight_decay: float,
              func: str) -> Any:
    """SGD (with momentum) or Adam over the network's parameters."""
    torch = import_torch()
    if name == "sgd":
        return torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum,
                               weight_decay=weight_decay)
    if name == "adam":
        return torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    raise param_error("optimizer_name", func, "'sgd' or 'adam'", name)


def descend(opt: Any, n: int, epochs: int, batch_size: int, gen: Any,
            loss_of: Callable[[Any], Any], mask: dict[str, Any] | None = None,
            net: Any = None) -> None:
    """``epochs`` passes over ``n`` records in shuffled batches, one :func:`step` each."""
    for _ in range(epochs):
        for idx in batches(n, batch_size, gen):
            step(opt, loss_of(idx), mask, net)


def step(opt: Any, loss: Any, mask: dict[str, Any] | None = None, net: Any = None,
         max_norm: float | None = None) -> None:
    """One optimiser step on ``loss``; gradients masked (``mask`` by name) and clipped."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if mask is not None:
        for name, p in net.named_parameters():
            if p.grad is not None:
                p.grad.mul_(mask[name])
    if max_norm is not None:
        import_torch().nn.utils.clip_grad_norm_(net.parameters(), max_norm)
    opt.step()


def distill_kl(student_logits: Any, teacher_logits: Any, temperature: float) -> Any:
    """KL(teacher || student) of the tempered softmaxes, times ``T**2`` (Hinton et al.)."""
    F = import_torch().nn.functional
    log_p = F.log_softmax(student_logits / temperature, dim=1)
    q = F.softmax(teacher_logits / temperature, dim=1)
    return F.kl_div(log_p, q, reduction="batchmean") * temperature ** 2


def _optimizer_name(value: Any, param: str, func: str) -> str:
    if value not in ("sgd", "adam"):
        raise param_error(param, func, "'sgd' or 'adam'", value)
    return str(value)


def _model_factory(value: Any, param: str, func: str) -> Any:
    if value is not None and not callable(value) and not callable(getattr(value, "train",
                                                                           None)):
        raise param_error(param, func, "None, a callable returning a fresh torch.nn.Module "
                          "or a training recipe", value, error=TypeError)
    return value


def _count(zero: bool = False) -> Callable[[Any, str, str], int]:
    return lambda value, param, func: positive_int(value, param, func, zero=zero)


def _real(zero: bool = False, high: float | None = None) -> Callable[[Any, str, str], float]:
    return lambda value, param, func: positive_float(value, param, func, zero=zero, high=high)


#: The rule of every hyperparameter, by name, whichever algorithm takes it: each algorithm
#: checks its values through :func:`checked`, and
#: :func:`~privaudit.unlearn.check_method_params` through the same rules before any work.
HYPERPARAMETER_RULES: dict[str, Callable[[Any, str, str], Any]] = {
    **dict.fromkeys(("epochs", "batch_size", "forget_batch_size", "n_iters", "forget_freq"),
                    _count()),
    "max_steps": _count(zero=True),
    **dict.fromkeys(("lr", "temperature", "max_norm"), _real()),
    **dict.fromkeys(("weight_decay", "alpha", "gamma", "forget_alpha", "lambd",
                     "saliency_threshold"), _real(zero=True)),
    "momentum": _real(zero=True, high=1.0),
    **dict.fromkeys(("retain_fraction", "saliency_fraction"), _real(high=1.0)),
    "optimizer_name": _optimizer_name,
    "model_factory": _model_factory,
}


def checked(func: str, **values: Any) -> list[Any]:
    """``values`` checked by :data:`HYPERPARAMETER_RULES`, in the order given.

    Raises
    ------
    ValueError or TypeError
        Naming the first bad hyperparameter (``"The 'epochs' parameter of fine_tune must
        be a positive integer. Got 0 instead."``).
    """
    return [HYPERPARAMETER_RULES[name](value, name, func) for name, value in values.items()]
