"""Adapter for PyTorch modules: black-box outputs and white-box per-sample features.

torch is imported inside the functions that need it, so ``import privaudit.targets`` stays
light; without torch, using this adapter raises an :class:`ImportError` naming the extra to
install.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._digest import state_digest
from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.targets._base import BaseTarget, ModelOutputs, Task, check_task, label_indices
from privaudit.targets._fingerprint import callable_identity, module_fingerprint
from privaudit.targets._records import n_records, rows

__all__ = ["TorchTarget", "import_torch", "load_torch_model", "save_torch_model"]

#: Per-sample gradients of one chunk are held in memory together; the automatic chunk size
#: keeps them below this many float values (2**25 float32 values = 128 MiB).
_GRAD_CHUNK_VALUES = 2**25


def import_torch() -> Any:
    """Import torch, or raise an ImportError naming the extra that installs it."""
    return import_optional("torch", extra="torch", purpose="A PyTorch target")


def _import_safetensors() -> Any:
    return import_optional("safetensors.torch", extra="torch",
                           purpose="Reading and writing safetensors files")


def _check_positive_int(value: Any, param: str, func: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise param_error(param, func, "a positive int", value)
    return int(value)


class TorchTarget(BaseTarget):
    """A PyTorch module seen as a classifier or regressor, with white-box access.

    Black-box use (:meth:`query`) returns class probabilities (the softmax of the logits,
    computed in float64) or regression predictions, like every other target. White-box
    attacks additionally read per-record losses (:meth:`per_sample_loss`) and per-record
    gradient norms (:meth:`per_sample_gradient_norms`).

    Parameters
    ----------
    module : torch.nn.Module
        The trained model, **in evaluation mode** (``model.eval()``). It maps a batch of
        records (rows of ``X``) to logits or probabilities of shape ``(batch, n_classes)``,
        or to predictions of shape ``(batch,)`` or ``(batch, 1)`` for regression.
    task : {"classification", "regression"}, default="classification"
        What the module predicts.
    output : {"logits", "probabilities"}, default="logits"
        What a classifier returns. Logits are turned into probabilities with a softmax in
        float64, so that confidences within 1e-7 of 1 (memorised training records) keep
        their differences; a float32 softmax would round them all to 1.
    classes : array-like, optional
        The labels of the output columns, in order. Default: the module's ``classes_``
        attribute if it has one (the built-in torch recipes set it), else ``0 .. C-1`` with
        ``C`` the ``out_features`` of the module's last layer that has one.
    name : str, optional
        Name used in results (default: the module's class name).
    batch_size : int, default=1024
        Records per forward pass.
    device : str or torch.device, optional
        Where the forward passes run. Default: the device of the module's parameters. When
        given, the module is moved there (``module.to(device)``, in place).
    max_queries : int, optional
        Query budget, in records (see :class:`~privaudit.targets.BaseTarget`). Every method
        that runs the module on records counts them: :meth:`query`,
        :meth:`per_sample_loss` and :meth:`per_sample_gradient_norms`.
    loss : callable, optional
        ``loss(outputs, targets) -> scalar`` averaged over the batch, as the
        ``torch.nn`` losses (e.g. ``torch.nn.CrossEntropyLoss()``); used by the white-box
        methods, which call it on one record at a time. ``targets`` holds class indices
        (int64, the position of each label in ``classes_``) for classification and float
        targets for regression. Default: cross-entropy of the logits (or negative log of
        the probabilities) for classification, squared error for regression.
        :meth:`query` always reports the cross-entropy (or squared error).
    input_dtype : torch.dtype, optional
        dtype of the input tensors. Default: floating-point inputs take the dtype of the
        module's first floating-point parameter; integer inputs (token ids) stay int64.

    Raises
    ------
    ValueError
        At query time, if the module (or any submodule) is in training mode: dropout and
        batch normalisation would make the outputs random and every result wrong.

    Notes
    -----
    ``n_queries`` counts records, one per row of ``X`` per call.

    Per-sample gradients use :mod:`torch.func` (``functional_call`` + ``vmap`` +
    ``grad``), in chunks sized so that the gradients of one chunk stay below 128 MiB.

    References
    ----------
    .. [1] Nasr, M., Shokri, R., Houmansadr, A. "Comprehensive Privacy Analysis of Deep
       Learning: Passive and Active White-box Inference Attacks against Centralized and
       Federated Learning." IEEE S&P 2019 (white-box features: per-record loss and
       gradients).

    Examples
    --------
    >>> import torch  # doctest: +SKIP
    >>> net = torch.nn.Linear(4, 3).eval()  # doctest: +SKIP
    >>> target = TorchTarget(net)  # doctest: +SKIP
    >>> target.classes_  # doctest: +SKIP
    array([0, 1, 2])
    """

    def __init__(
        self,
        module: Any,
        *,
        task: Task = "classification",
        output: Literal["logits", "probabilities"] = "logits",
        classes: ArrayLike | None = None,
        name: str | None = None,
        batch_size: int = 1024,
        device: Any = None,
        max_queries: int | None = None,
        loss: Callable[[Any, Any], Any] | None = None,
        input_dtype: Any = None,
    ) -> None:
        torch = import_torch()
        func = "TorchTarget"
        if not isinstance(module, torch.nn.Module):
            raise param_error(
                "module", func, "a torch.nn.Module", f"<{type(module).__name__}>",
                error=TypeError,
            )
        task = check_task(task, func=func)
        if output not in ("logits", "probabilities"):
            raise param_error("output", func, "'logits' or 'probabilities'", output)
        if loss is not None and not callable(loss):
            raise param_error("loss", func, "None or a callable loss(outputs, targets)",
                              f"<{type(loss).__name__}>", error=TypeError)
        if input_dtype is not None and not isinstance(input_dtype, torch.dtype):
            raise param_error("input_dtype", func, "None or a torch.dtype", input_dtype,
                              error=TypeError)
        super().__init__(name or type(module).__name__, task, max_queries=max_queries)
        self.batch_size = _check_positive_int(batch_size, "batch_size", func)
        if device is not None:
            module.to(device)
            self.device = torch.device(device)
        else:
            first = next(iter(module.parameters()), None)
            self.device = first.device if first is not None else torch.device("cpu")
        self.module = module
        self.output = output
        self.loss = loss
        self.input_dtype = input_dtype
        if task == "classification":
            if classes is None:
                classes = getattr(module, "classes_", None)
                if classes is not None and np.size(classes) == 0:
                    classes = None  # a privaudit network built, not trained: no labels yet
            if classes is None:
                width = _last_out_features(module)
                if width is None:
                    raise param_error(
                        "classes", func,
                        "given when the module has no classes_ attribute and no layer with "
                        "out_features", None,
                    )
                classes = np.arange(width)
            classes_arr = np.asarray(classes)
            if classes_arr.ndim != 1 or classes_arr.size < 2:
                raise param_error("classes", func, "a 1-D array of at least 2 labels",
                                  f"<array of shape {classes_arr.shape}>")
            if np.unique(classes_arr).size != classes_arr.size:
                raise param_error("classes", func, "free of duplicates", "<repeated labels>")
            self.classes_ = classes_arr

    def fingerprint(self) -> str | None:
        """Digest of the module and of every setting that changes the target's answers.

        The module's architecture, plain settings and state dict (every tensor by name,
        dtype, shape and bytes; see :func:`~privaudit.targets.module_fingerprint`), the
        task, ``output``, ``classes_``, the white-box ``loss`` and ``input_dtype``. Stable
        across loads of one file and across processes; None if a tensor cannot be read.
        """
        state = module_fingerprint(self.module)
        if state is None:
            return None
        return state_digest(
            "torch", self.task, self.output, self.classes_, callable_identity(self.loss),
            None if self.input_dtype is None else str(self.input_dtype), state,
        )

    # ------------------------------------------------------------------ helpers
    def _check_eval(self, func: str) -> None:
        training = [name or "<root>" for name, m in self.module.named_modules() if m.training]
        if training:
            raise ValueError(
                f"{func}: the torch module is in training mode (e.g. {training[:3]}); "
                "dropout and batch normalisation would make its outputs random and the "
                "audit wrong. Call model.eval() before auditing it."
            )

    def _input_dtype(self) -> Any:
        if self.input_dtype is not None:
            return self.input_dtype
        for p in self.module.parameters():
            if p.is_floating_point():
                return p.dtype
        return import_torch().get_default_dtype()

    def _to_tensor(self, X_chunk: Any) -> Any:
        torch = import_torch()
        if isinstance(X_chunk, torch.Tensor):
            t = X_chunk
        else:
            arr = np.asarray(X_chunk.to_numpy() if hasattr(X_chunk, "to_numpy") else X_chunk)
            if arr.dtype == object:
                arr = arr.astype(np.float64)
            t = torch.from_numpy(np.ascontiguousarray(arr))
        if self.input_dtype is not None:
            t = t.to(self.input_dtype)
        elif t.is_floating_point():
            t = t.to(self._input_dtype())
        elif t.dtype != torch.bool:
            t = t.to(torch.int64)
        return t.to(self.device)

    def _check_y(self, X: Any, y: ArrayLike, func: str) -> tuple[int, NDArray[Any]]:
        n = n_records(X, func=func)
        y_arr = np.asarray(y)
        if y_arr.ndim != 1 or y_arr.shape[0] != n:
            raise param_error(
                "y", func, f"a 1-D array with one entry per record of X ({n})",
                f"<array of shape {y_arr.shape}>",
            )
        return n, y_arr

    def _targets(self, y_arr: NDArray[Any], func: str) -> NDArray[Any]:
        """Loss targets: class indices (classification) or float targets (regression)."""
        if self.task == "classification":
            assert self.classes_ is not None
            return label_indices(y_arr, self.classes_, func=func).astype(np.int64)
        try:
            return y_arr.astype(np.float64)
        except (TypeError, ValueError):
            raise param_error("y", func, "real-valued regression targets",
                              f"<array of dtype {y_arr.dtype}>", error=TypeError) from None

    def _loss_fn(self) -> Callable[[Any, Any], Any]:
        if self.loss is not None:
            return self.loss
        torch = import_torch()
        F = torch.nn.functional
        if self.task == "regression":
            def mse(out: Any, t: Any) -> Any:
                return F.mse_loss(out.reshape(-1), t.reshape(-1).to(out.dtype))
            return mse
        if self.output == "logits":
            return F.cross_entropy
        tiny = torch.finfo(torch.float64).tiny

        def nll(out: Any, t: Any) -> Any:
            return F.nll_loss(torch.log(out.clamp_min(tiny)), t)
        return nll

    def _forward_chunked(self, X: Any, n: int) -> NDArray[np.float64]:
        torch = import_torch()
        chunks = []
        with torch.inference_mode():
            for start in range(0, n, self.batch_size):
                stop = min(start + self.batch_size, n)
                out = self.module(self._to_tensor(rows(X, start, stop)))
                if not isinstance(out, torch.Tensor):
                    raise TypeError(
                        f"The torch module of target {self.name!r} returned a "
                        f"{type(out).__name__}; TorchTarget needs a tensor of outputs."
                    )
                if out.shape[0] != stop - start:
                    raise ValueError(
                        f"The torch module of target {self.name!r} returned outputs of shape "
                        f"{tuple(out.shape)} for {stop - start} records."
                    )
                # float64 before the softmax: see the class docstring.
                chunks.append(out.detach().to("cpu", torch.float64).numpy())
        if not chunks:
            width = () if self.task == "regression" else (self.n_classes or 0,)
            return np.empty((0, *width), dtype=np.float64)
        return np.concatenate(chunks, axis=0)

    # ------------------------------------------------------------------ black box
    def query(self, X: Any, y: ArrayLike) -> ModelOutputs:
        """Run the module once per record and return its outputs for labels ``y``.

        Parameters
        ----------
        X : array-like, DataFrame or torch.Tensor of shape (n_records, ...)
            Records, in the shape the module takes.
        y : array-like of shape (n_records,)
            True labels (each one of ``classes_``) or regression targets.

        Returns
        -------
        ModelOutputs
            Probabilities in float64 (classification) or predictions (regression).
        """
        func = f"{type(self).__name__}.query"
        self._check_eval(func)
        n, y_arr = self._check_y(X, y, func)
        if self.task == "classification":
            assert self.classes_ is not None
            label_indices(y_arr, self.classes_, func=func)
        self._spend_queries(n)
        raw = self._forward_chunked(X, n)
        if self.task == "regression":
            if raw.ndim == 2 and raw.shape[1] == 1:
                raw = raw[:, 0]
            if raw.ndim != 1:
                raise ValueError(
                    f"The torch module of target {self.name!r} returned outputs of shape "
                    f"{raw.shape}; a regression target needs one prediction per record."
                )
            return ModelOutputs.from_regression(y_arr, raw)
        assert self.classes_ is not None
        n_classes = len(self.classes_)
        if raw.ndim != 2 or raw.shape[1] != n_classes:
            raise ValueError(
                f"The torch module of target {self.name!r} returned outputs of shape "
                f"{raw.shape}, but the target has {n_classes} classes {self.classes_[:8]}: "
                "pass the module's classes (in output order) as classes=."
            )
        if not np.all(np.isfinite(raw)):
            raise ValueError(
                f"The torch module of target {self.name!r} returned non-finite outputs "
                f"for {int(np.sum(~np.isfinite(raw).all(axis=1)))} records."
            )
        if self.output == "logits":
            proba = softmax64(raw)
        else:
            proba = raw
            if np.any(proba < 0) or not np.allclose(proba.sum(axis=1), 1.0, atol=1e-4):
                raise ValueError(
                    f"The torch module of target {self.name!r} was declared to return "
                    "probabilities, but its rows are negative or do not sum to 1; use "
                    "output='logits' if it returns logits."
                )
        return ModelOutputs.from_probabilities(y_arr, proba, self.classes_)

    # ------------------------------------------------------------------ white box
    def per_sample_loss(self, X: Any, y: ArrayLike) -> NDArray[np.float64]:
        """The loss of every record, one forward pass per chunk.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_records, ...)
            Records.
        y : array-like of shape (n_records,)
            True labels or regression targets.

        Returns
        -------
        ndarray of shape (n_records,)
            The target's ``loss`` on each record alone, in float64.
        """
        torch = import_torch()
        from torch.func import vmap

        func = f"{type(self).__name__}.per_sample_loss"
        self._check_eval(func)
        n, y_arr = self._check_y(X, y, func)
        targets = self._targets(y_arr, func)
        self._spend_queries(n)
        loss_fn = self._loss_fn()

        def one(out: Any, t: Any) -> Any:
            return loss_fn(out.unsqueeze(0), t.unsqueeze(0))

        per_record = vmap(one)
        losses = np.empty(n, dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, n, self.batch_size):
                stop = min(start + self.batch_size, n)
                out = self.module(self._to_tensor(rows(X, start, stop)))
                t = torch.from_numpy(targets[start:stop]).to(self.device)
                losses[start:stop] = per_record(out, t).to("cpu", torch.float64).numpy()
        return losses

    def _selected_parameters(self, params: Any, func: str) -> list[str]:
        named = dict(self.module.named_parameters())
        if isinstance(params, str):
            if params != "all":
                raise param_error("params", func, "'all' or a list of parameter names", params)
            names = [k for k, p in named.items() if p.requires_grad]
        else:
            if not isinstance(params, Sequence) or not all(isinstance(k, str) for k in params):
                raise param_error("params", func, "'all' or a list of parameter names",
                                  params, error=TypeError)
            unknown = [k for k in params if k not in named]
            if unknown:
                raise param_error(
                    "params", func, f"names of the module's parameters (e.g. {list(named)[:4]})",
                    f"<unknown names {unknown[:4]}>",
                )
            names = list(dict.fromkeys(params))
        if not names:
            raise param_error("params", func, "a non-empty selection of parameters",
                              "<no trainable parameters>")
        return names

    def per_sample_gradient_norms(
        self,
        X: Any,
        y: ArrayLike,
        *,
        params: str | Sequence[str] = "all",
        batch_size: int | None = None,
        return_loss: bool = False,
    ) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
        """L2 norm of the gradient of each record's loss with respect to the parameters.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_records, ...)
            Records.
        y : array-like of shape (n_records,)
            True labels or regression targets.
        params : "all" or list of str, default="all"
            The parameters whose gradient is measured: every parameter with
            ``requires_grad`` (``"all"``), or the given names from
            ``module.named_parameters()``.
        batch_size : int, optional
            Records per vectorised chunk. Default: at most the target's ``batch_size``, and
            few enough that the chunk's per-sample gradients fit in 128 MiB.
        return_loss : bool, default=False
            Also return each record's loss (computed in the same pass).

        Returns
        -------
        norms : ndarray of shape (n_records,)
            ``||grad_theta loss(f_theta(x_i), y_i)||_2`` over the selected parameters
            together, accumulated in float64.
        loss : ndarray of shape (n_records,)
            Only with ``return_loss=True``.

        References
        ----------
        .. [1] Nasr, M., Shokri, R., Houmansadr, A. "Comprehensive Privacy Analysis of Deep
           Learning." IEEE S&P 2019 (the gradient norm separates members from
           non-members).
        """
        torch = import_torch()
        from torch.func import functional_call, grad_and_value, vmap

        func = f"{type(self).__name__}.per_sample_gradient_norms"
        self._check_eval(func)
        names = self._selected_parameters(params, func)
        n, y_arr = self._check_y(X, y, func)
        targets = self._targets(y_arr, func)
        named = dict(self.module.named_parameters())
        n_values = sum(named[k].numel() for k in names)
        if batch_size is None:
            chunk = max(1, min(self.batch_size, _GRAD_CHUNK_VALUES // max(n_values, 1)))
        else:
            chunk = _check_positive_int(batch_size, "batch_size", func)
        self._spend_queries(n)

        selected = {k: named[k].detach() for k in names}
        frozen = {k: p.detach() for k, p in named.items() if k not in selected}
        buffers = {k: b.detach() for k, b in self.module.named_buffers()}
        module = self.module
        loss_fn = self._loss_fn()

        def loss_one(p: dict[str, Any], x: Any, t: Any) -> Any:
            out = functional_call(module, (p, frozen, buffers), (x.unsqueeze(0),))
            return loss_fn(out, t.unsqueeze(0))

        per_record = vmap(grad_and_value(loss_one), in_dims=(None, 0, 0))
        norms = np.empty(n, dtype=np.float64)
        losses = np.empty(n, dtype=np.float64)
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            xb = self._to_tensor(rows(X, start, stop))
            tb = torch.from_numpy(targets[start:stop]).to(self.device)
            grads, value = per_record(selected, xb, tb)
            sq = torch.zeros(stop - start, dtype=torch.float64, device=xb.device)
            for g in grads.values():
                sq += g.reshape(stop - start, -1).to(torch.float64).pow(2).sum(dim=1)
            norms[start:stop] = sq.sqrt().cpu().numpy()
            losses[start:stop] = value.detach().to("cpu", torch.float64).numpy()
        return (norms, losses) if return_loss else norms

    def __repr__(self) -> str:
        return (
            f"TorchTarget({type(self.module).__name__}, name={self.name!r}, "
            f"task={self.task!r}, output={self.output!r})"
        )


def softmax64(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax in float64, stable for large logits."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _last_out_features(module: Any) -> int | None:
    width = None
    for m in module.modules():
        value = getattr(m, "out_features", None)
        if isinstance(value, int):
            width = value
    return width


# ---------------------------------------------------------------------------- files

def _is_safetensors(path: str) -> bool:
    # A safetensors file starts with an 8-byte little-endian header length and the JSON
    # header itself; a torch.save file is a zip archive ("PK").
    with open(path, "rb") as fh:
        head = fh.read(9)
    return len(head) == 9 and head[8:9] == b"{"


def save_torch_model(module: Any, path: str | os.PathLike[str]) -> None:
    """Write a module's weights to a safetensors file (never pickle).

    Parameters
    ----------
    module : torch.nn.Module
        The model.
    path : path-like
        Destination (conventionally ``*.safetensors``).
    """
    torch = import_torch()
    if not isinstance(module, torch.nn.Module):
        raise param_error("module", "save_torch_model", "a torch.nn.Module",
                          f"<{type(module).__name__}>", error=TypeError)
    _import_safetensors().save_model(module, os.fspath(path))


def load_torch_model(
    path: str | os.PathLike[str],
    module_factory: Callable[[], Any] | Any,
    *,
    key: str | None = None,
    strict: bool = True,
    map_location: str = "cpu",
    allow_pickle: bool = False,
) -> Any:
    """Load saved weights into a freshly built module, without executing code from the file.

    Parameters
    ----------
    path : path-like
        A safetensors file (recognised by its content), or a ``torch.save`` file holding a
        state dict, read with ``torch.load(..., weights_only=True)``.
    module_factory : callable or torch.nn.Module
        Builds the architecture (``module_factory()``), or the module to fill in.
    key : str, optional
        For checkpoints that store the state dict under a key (e.g. ``"state_dict"``).
    strict : bool, default=True
        Passed to ``load_state_dict``: every weight must match.
    map_location : str, default="cpu"
        Device the weights are loaded to.
    allow_pickle : bool, default=False
        Kept so that old calls name it; only ``False`` is accepted. Unpickling a file
        executes code stored in it, so privaudit never does: a whole pickled module must
        be saved as its ``state_dict()`` (or with ``save_torch_model``) by its owner.

    Returns
    -------
    torch.nn.Module
        The module with the loaded weights, in evaluation mode.

    Raises
    ------
    ValueError
        If the file holds something other than a state dict (e.g. a pickled module,
        refused before anything in it runs), if the weights do not fit the module, or if
        ``allow_pickle`` is not False.
    """
    torch = import_torch()
    func = "load_torch_model"
    if allow_pickle:
        # The project's rule: no file a user points at may run code when loaded. A whole
        # pickled module is converted by its owner, in their own code, to a state dict.
        raise param_error(
            "allow_pickle", func, "False (privaudit never unpickles a model file: save "
            "model.state_dict() with torch.save, or use save_torch_model)", allow_pickle)
    file = os.fspath(path)
    if not os.path.isfile(file):
        raise param_error("path", func, "an existing file", file)

    def build() -> Any:
        module = module_factory if isinstance(module_factory, torch.nn.Module) \
            else module_factory() if callable(module_factory) else None
        if not isinstance(module, torch.nn.Module):
            raise param_error(
                "module_factory", func, "a torch.nn.Module or a callable returning one",
                f"<{type(module_factory).__name__}>", error=TypeError,
            )
        return module

    if _is_safetensors(file):
        module = build()
        st = _import_safetensors()
        if key is not None:
            raise param_error("key", func, "None for a safetensors file (it is flat)", key)
        try:
            st.load_model(module, file, strict=strict, device=map_location)
        except RuntimeError as exc:
            raise ValueError(f"The weights in {file!r} do not fit the module: {exc}") from exc
        except Exception as exc:  # SafetensorError: a damaged header (nothing is executed)
            raise ValueError(f"{file!r} is not a readable safetensors file: {exc}") from exc
        return module.eval()

    try:
        obj = torch.load(file, map_location=map_location, weights_only=True)
    except Exception as exc:
        raise ValueError(
            f"Refusing to load {file!r}: it is not a plain state dict, and loading it would "
            "unpickle (execute) code stored in the file. Save the weights with "
            "save_torch_model (safetensors) or torch.save(model.state_dict(), path) "
            f"({exc.__class__.__name__})."
        ) from None
    if key is not None:
        if not isinstance(obj, Mapping) or key not in obj:
            raise param_error("key", func, "a key of the checkpoint", key)
        obj = obj[key]
    if not isinstance(obj, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()
    ):
        keys = list(obj)[:5] if isinstance(obj, Mapping) else None
        raise ValueError(
            f"{file!r} does not hold a state dict of tensors"
            + (f" (keys {keys}; pass key= to pick the state dict)" if keys else "") + "."
        )
    module = build()
    try:
        module.load_state_dict(obj, strict=strict)
    except RuntimeError as exc:
        raise ValueError(f"The weights in {file!r} do not fit the module: {exc}") from exc
    return module.eval()
