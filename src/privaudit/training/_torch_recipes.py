"""Built-in PyTorch training recipes: a multilayer perceptron and a small CNN.

Both follow :class:`~privaudit.training.TrainingRecipe`: ``train`` is a pure function of
``(X, y, random_state)`` on CPU, ``fingerprint`` covers every hyperparameter and the torch
version, and models are saved as a safetensors file whose header carries the
hyperparameters and the labels as JSON (never pickle). torch is imported inside the methods:
importing :mod:`privaudit.training` does not import it.
"""

from __future__ import annotations

import json
import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.training._hashing import canonical, sha256_json
from privaudit.training._recipes import RECIPE_CODE_VERSION
from privaudit.training._torch_seed import seeded

__all__ = ["TorchCNNRecipe", "TorchMLPRecipe"]

# Bump when the training loop or the networks change in a way that changes trained weights.
TORCH_RECIPE_VERSION = 1
_METADATA_KEY = "privaudit"


def _torch() -> Any:
    from privaudit.targets import import_torch

    return import_torch()


def _positive_int(value: Any, param: str, func: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise param_error(param, func, "a positive integer", value)
    return int(value)


def _non_negative_float(value: Any, param: str, func: str, *, positive: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        raise param_error(param, func, "a positive real number" if positive
                          else "a non-negative real number", value)
    return float(value)


def _int_tuple(value: Any, param: str, func: str, *, allow_empty: bool) -> tuple[int, ...]:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise param_error(param, func, "a sequence of positive integers", value, error=TypeError)
    out = tuple(_positive_int(v, param, func) for v in value)
    if not out and not allow_empty:
        raise param_error(param, func, "a non-empty sequence of positive integers", value)
    return out


def _classes_to_json(classes: NDArray[Any]) -> dict[str, Any]:
    return {"values": classes.tolist(), "dtype": classes.dtype.str}


def _classes_from_json(obj: dict[str, Any]) -> NDArray[Any]:
    return np.asarray(obj["values"], dtype=np.dtype(obj["dtype"]))


class _TorchRecipe:
    """Training loop, fingerprint and safe files shared by the built-in torch recipes."""

    suffix = ".safetensors"
    can_save = True

    # Set by subclasses: parameters, in constructor order.
    _param_names: tuple[str, ...] = ()

    def _common(self, epochs: Any, lr: Any, weight_decay: Any, batch_size: Any,
                classes: Any, num_threads: Any, stack: Any) -> None:
        func = type(self).__name__
        self.epochs = _positive_int(epochs, "epochs", func)
        self.lr = _non_negative_float(lr, "lr", func, positive=True)
        self.weight_decay = _non_negative_float(weight_decay, "weight_decay", func)
        self.batch_size = _positive_int(batch_size, "batch_size", func)
        if classes is not None:
            arr = np.asarray(classes)
            if arr.ndim != 1 or arr.size < 2 or np.unique(arr).size != arr.size:
                raise param_error("classes", func, "None or a 1-D array of at least 2 distinct "
                                  "labels", f"<array of shape {arr.shape}>")
            classes = arr
        self.classes = classes
        self.num_threads = None if num_threads is None else _positive_int(
            num_threads, "num_threads", func)
        self.stack = _positive_int(stack, "stack", func)

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters and their values."""
        return {k: getattr(self, k) for k in self._param_names}

    def _identity_params(self) -> dict[str, Any]:
        """The parameters that identify the trained weights.

        ``stack`` is left out at its default (1), so that fingerprints, file headers and
        run keys are those of the recipes from before it existed; any other value is kept:
        stacked models differ from sequential ones in the last bits.
        """
        params = self.get_params()
        if params.get("stack") == 1:
            del params["stack"]
        return params

    def _params_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self._identity_params().items():
            if isinstance(v, np.ndarray):
                out[k] = _classes_to_json(v)
            elif isinstance(v, tuple):
                out[k] = list(v)
            else:
                out[k] = v
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._identity_params().items())
        return f"{type(self).__name__}({args})"

    def fingerprint(self) -> str:
        """Hash of the recipe class, every hyperparameter and the torch version."""
        torch = _torch()
        return sha256_json({
            "recipe": type(self).__name__,
            "code_version": RECIPE_CODE_VERSION,
            "torch_recipe_version": TORCH_RECIPE_VERSION,
            "torch": torch.__version__,
            "params": canonical(self._identity_params()),
        })

    # ------------------------------------------------------------------ subclasses
    def build_network(self, n_features: int, n_classes: int) -> Any:
        """A fresh, untrained network (a ``torch.nn.Module`` on the CPU).

        The architecture this recipe trains, for records of ``n_features`` values and
        ``n_classes`` classes; public so that other trainers (``privaudit.dp.OpacusRecipe``)
        reuse it.
        """
        raise NotImplementedError

    def _check_features(self, n_features: int) -> None:
        """Raise if records of ``n_features`` values cannot feed the network."""

    # ------------------------------------------------------------------ training
    def _prepare(self, X: Any, y: ArrayLike) -> tuple[NDArray[np.float32], NDArray[np.int64],
                                                      NDArray[Any]]:
        from privaudit.targets import label_indices

        func = f"{type(self).__name__}.train"
        X_arr = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=np.float32)
        y_arr = np.asarray(y)
        if X_arr.ndim < 2 or X_arr.shape[0] == 0:
            raise param_error("X", func, "a non-empty array of records (n_records, ...)",
                              f"<array of shape {X_arr.shape}>")
        if y_arr.shape != (X_arr.shape[0],):
            raise param_error("y", func, f"one label per record ({X_arr.shape[0]})",
                              f"<array of shape {y_arr.shape}>")
        X_flat = X_arr.reshape(X_arr.shape[0], -1)
        self._check_features(X_flat.shape[1])
        classes = self.classes if self.classes is not None else np.unique(y_arr)
        if classes.size < 2:
            raise param_error("y", func, "labels of at least 2 classes (or pass classes=)",
                              "<one class only>")
        idx = label_indices(y_arr, classes, func=func).astype(np.int64)
        return np.ascontiguousarray(X_flat), idx, classes

    def train(self, X: Any, y: ArrayLike, *, random_state: int) -> Any:
        """Train one network on ``(X, y)``; the same seed gives the same weights.

        Parameters
        ----------
        X : array-like of shape (n_records, n_features) or (n_records, *shape)
            Records (flattened internally; the CNN reshapes them to ``image_shape``).
        y : array-like of shape (n_records,)
            Labels.
        random_state : int
            Seeds the initialisation and the mini-batch order.

        Returns
        -------
        TorchClassifierNet
            The trained network in evaluation mode, with ``classes_`` set; wrap it in
            :class:`~privaudit.targets.TorchTarget` to audit or query it.
        """
        torch = _torch()
        from torch.nn import functional as F

        X_flat, idx, classes = self._prepare(X, y)
        seed = int(random_state)
        with seeded(torch, seed, self.num_threads):
            net = self.build_network(X_flat.shape[1], classes.size)
            Xt = torch.from_numpy(X_flat)
            yt = torch.from_numpy(idx)
            mean = X_flat.astype(np.float64).mean(axis=0)
            std = X_flat.astype(np.float64).std(axis=0)
            std[std == 0] = 1.0  # constant features (blank pixels) pass through unscaled
            net.mean.copy_(torch.from_numpy(mean.astype(np.float32)))
            net.scale.copy_(torch.from_numpy(std.astype(np.float32)))
            gen = torch.Generator().manual_seed(seed)
            opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            n = Xt.shape[0]
            net.train()
            for _ in range(self.epochs):
                perm = torch.randperm(n, generator=gen)
                for start in range(0, n, self.batch_size):
                    batch = perm[start:start + self.batch_size]
                    opt.zero_grad(set_to_none=True)
                    loss = F.cross_entropy(net(Xt[batch]), yt[batch])
                    loss.backward()
                    opt.step()
            net.eval()
        net.classes_ = classes
        return net

    def train_many(self, datasets: Sequence[tuple[Any, ArrayLike]], *,
                   random_states: Sequence[int]) -> list[Any]:
        """Train one network per ``(X, y)`` in ``datasets``, ``stack`` of them at a time.

        Parameters
        ----------
        datasets : sequence of (X, y)
            Training sets, of any lengths.
        random_states : sequence of int
            One seed per training set, as in :meth:`train`.

        Returns
        -------
        list of TorchClassifierNet
            The networks in the order of ``datasets``. With ``stack=1``, exactly
            ``[train(X, y, random_state=s) ...]``; otherwise trained together over stacked
            parameters (``torch.func``), equal to those within float rounding; how they are
            grouped changes nothing in any of them.
        """
        if len(datasets) != len(random_states):
            raise param_error("random_states", f"{type(self).__name__}.train_many",
                              f"one seed per dataset ({len(datasets)})",
                              f"<{len(random_states)} seeds>")
        if self.stack == 1:
            return [self.train(X, y, random_state=s)
                    for (X, y), s in zip(datasets, random_states, strict=True)]
        _torch()  # an ImportError naming the extra, before _stacked imports torch
        from privaudit.training._stacked import train_stacked

        out: list[Any] = []
        for start in range(0, len(datasets), self.stack):
            end = start + self.stack
            out += train_stacked(self, datasets[start:end], random_states[start:end])
        return out

    # ------------------------------------------------------------------ files
    def _metadata(self, net: Any) -> dict[str, Any]:
        return {
            "recipe": type(self).__name__,
            "torch_recipe_version": TORCH_RECIPE_VERSION,
            "params": self._params_json(),
            "n_features": int(net.mean.numel()),
            "classes": _classes_to_json(np.asarray(net.classes_)),
        }

    def save(self, model: Any, path: str | os.PathLike[str]) -> None:
        """Write the weights as safetensors, with hyperparameters and labels in its header."""
        save_file = _safetensors("safetensors.torch").save_file
        state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        save_file(state, os.fspath(path),
                  metadata={_METADATA_KEY: json.dumps(self._metadata(model), sort_keys=True)})

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Read a network written by :meth:`save` (no code is executed).

        Raises
        ------
        ValueError
            If the file was written by another recipe or with other hyperparameters.
        """
        safe_open = _safetensors("safetensors").safe_open
        load_file = _safetensors("safetensors.torch").load_file
        file = os.fspath(path)
        try:
            with safe_open(file, framework="pt") as fh:
                raw = (fh.metadata() or {}).get(_METADATA_KEY)
        except Exception as exc:  # SafetensorError, OSError: a damaged or foreign file
            raise ValueError(
                f"{file!r} is not a readable safetensors file ({exc}); delete it to retrain. "
                "Nothing in it was executed (safetensors holds only tensors and text)."
            ) from exc
        try:
            meta = json.loads(raw) if raw is not None else None
        except ValueError:
            meta = None
        if not isinstance(meta, dict):
            raise ValueError(f"{file!r} was not written by a privaudit torch recipe.")
        expected = {"recipe": type(self).__name__, "torch_recipe_version": TORCH_RECIPE_VERSION,
                    "params": _without_stack(self._params_json())}
        found = {k: meta.get(k) for k in expected}
        found["params"] = _without_stack(found["params"])
        if json.dumps(found, sort_keys=True) != json.dumps(expected, sort_keys=True):
            raise ValueError(
                f"{file!r} was written by {meta.get('recipe')} with other hyperparameters "
                f"({meta.get('params')}); this recipe is {self!r}. Refusing to use it."
            )
        try:
            classes = _classes_from_json(meta["classes"])
            n_features = int(meta["n_features"])
            if classes.dtype.kind not in "biufUS" or classes.ndim != 1:
                raise ValueError(f"class labels of dtype {classes.dtype}")
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{file!r} has a damaged header ({exc!r}); delete it to "
                             "retrain.") from exc
        net = self.build_network(n_features, classes.size)
        try:
            net.load_state_dict(load_file(file), strict=True)
        except RuntimeError as exc:
            raise ValueError(f"The weights in {file!r} do not fit {self!r}: {exc}") from exc
        net.eval()
        net.classes_ = classes
        return net


class TorchMLPRecipe(_TorchRecipe):
    """Train a multilayer perceptron (ReLU, Adam, cross-entropy) on CPU, reproducibly.

    Inputs are standardised inside the network (training mean and standard deviation of
    each feature, stored with the weights), as scikit-learn's ``StandardScaler`` would.

    Parameters
    ----------
    hidden : sequence of int, default=(256,)
        Width of each hidden layer (empty: logistic regression).
    epochs : int, default=50
        Passes over the training set.
    lr : float, default=1e-3
        Adam learning rate.
    weight_decay : float, default=0.0
        L2 penalty (Adam's ``weight_decay``); 0 lets the network overfit, as audited
        targets often do.
    batch_size : int, default=64
        Mini-batch size.
    classes : array-like, optional
        Labels of the output columns. Default: the labels present in the training set;
        pass them when a reference model's random subset might miss a rare class.
    num_threads : int or None, default=1
        torch threads while training (restored afterwards). One thread makes the weights
        bit-identical across executors and machines with the same torch build; ``None``
        keeps torch's setting.
    stack : int, default=1
        How many models :meth:`train_many` (and so a
        :class:`~privaudit.training.ReferencePool`) trains at once, vectorised over stacked
        parameters with ``torch.func``: much faster for small networks. ``1`` trains them
        one by one with :meth:`train`. Stacked models equal sequential ones within float
        rounding, not bit for bit, so a value other than 1 is part of the fingerprint; how
        the models are grouped changes nothing in any of them. Files saved with any value
        load with any other (the networks are the same).

    Notes
    -----
    The seed given to :meth:`train` seeds the initialisation (through a forked copy of
    torch's global generator, so the caller's random state is untouched) and the mini-batch
    order. ``fingerprint`` covers every parameter, the torch version and a code version.

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A., Tramèr, F. "Membership
       Inference Attacks From First Principles." IEEE S&P 2022 (reference models trained
       with the target's architecture and recipe).
    .. [2] Shokri, R., Stronati, M., Song, C., Shmatikov, V. "Membership Inference Attacks
       Against Machine Learning Models." IEEE S&P 2017.

    Examples
    --------
    >>> from privaudit.training import TorchMLPRecipe
    >>> TorchMLPRecipe(hidden=(64,), epochs=20)  # doctest: +ELLIPSIS
    TorchMLPRecipe(hidden=(64,), epochs=20, ...)
    """

    _param_names = ("hidden", "epochs", "lr", "weight_decay", "batch_size", "classes",
                    "num_threads", "stack")

    def __init__(
        self,
        hidden: Sequence[int] = (256,),
        *,
        epochs: int = 50,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        batch_size: int = 64,
        classes: ArrayLike | None = None,
        num_threads: int | None = 1,
        stack: int = 1,
    ) -> None:
        self.hidden = _int_tuple(hidden, "hidden", "TorchMLPRecipe", allow_empty=True)
        self._common(epochs, lr, weight_decay, batch_size, classes, num_threads, stack)

    def build_network(self, n_features: int, n_classes: int) -> Any:
        from privaudit.training._torch_nets import MLPClassifierNet

        return MLPClassifierNet(n_features, n_classes, self.hidden)


class TorchCNNRecipe(_TorchRecipe):
    """Train a small convolutional network for small images (e.g. 8 x 8 digits) on CPU.

    Records may be given flat (``n_records, C*H*W``, as scikit-learn's ``load_digits``) or
    shaped (``n_records, C, H, W``); the network standardises each pixel with training
    statistics, applies ``conv3x3 -> ReLU`` per entry of ``channels``, a 2 x 2 max-pool, a
    hidden fully connected layer and the logits.

    Parameters
    ----------
    image_shape : (int, int, int), default=(1, 8, 8)
        ``(channels, height, width)`` of one image.
    channels : sequence of int, default=(16, 32)
        Output channels of each 3 x 3 convolution.
    hidden : int, default=64
        Width of the fully connected layer.
    epochs : int, default=30
        Passes over the training set.
    lr : float, default=1e-3
        Adam learning rate.
    weight_decay : float, default=0.0
        L2 penalty.
    batch_size : int, default=64
        Mini-batch size.
    classes : array-like, optional
        Labels of the output columns (default: those in the training set).
    num_threads : int or None, default=1
        torch threads while training (see :class:`TorchMLPRecipe`).
    stack : int, default=1
        Models trained together by :meth:`train_many` (see :class:`TorchMLPRecipe`).

    References
    ----------
    .. [1] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022.
    """

    _param_names = ("image_shape", "channels", "hidden", "epochs", "lr", "weight_decay",
                    "batch_size", "classes", "num_threads", "stack")

    def __init__(
        self,
        image_shape: Sequence[int] = (1, 8, 8),
        *,
        channels: Sequence[int] = (16, 32),
        hidden: int = 64,
        epochs: int = 30,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        batch_size: int = 64,
        classes: ArrayLike | None = None,
        num_threads: int | None = 1,
        stack: int = 1,
    ) -> None:
        func = "TorchCNNRecipe"
        shape = _int_tuple(image_shape, "image_shape", func, allow_empty=False)
        if len(shape) != 3 or shape[1] < 2 or shape[2] < 2:
            raise param_error("image_shape", func,
                              "(channels, height, width) with height and width >= 2",
                              image_shape)
        self.image_shape = shape
        self.channels = _int_tuple(channels, "channels", func, allow_empty=False)
        self.hidden = _positive_int(hidden, "hidden", func)
        self._common(epochs, lr, weight_decay, batch_size, classes, num_threads, stack)

    def _check_features(self, n_features: int) -> None:
        expected = int(np.prod(self.image_shape))
        if n_features != expected:
            raise param_error(
                "X", f"{type(self).__name__}.train",
                f"images of shape {self.image_shape} ({expected} values per record)",
                f"<records of {n_features} values>",
            )

    def build_network(self, n_features: int, n_classes: int) -> Any:
        from privaudit.training._torch_nets import CNNClassifierNet

        self._check_features(n_features)
        return CNNClassifierNet(self.image_shape, n_classes, self.channels, self.hidden)


def _without_stack(params: Any) -> Any:
    """File-header parameters without ``stack``: it changes how models train, not what."""
    if not isinstance(params, dict):
        return params
    return {k: v for k, v in params.items() if k != "stack"}


def _safetensors(module: str) -> Any:
    return import_optional(module, extra="torch", purpose="Caching PyTorch reference models")
