"""The networks the built-in torch recipes train (imported only when torch is in use).

This module imports torch at module level: nothing imported by ``privaudit`` or
``privaudit.training`` imports it; :mod:`privaudit.training._torch_recipes` does so inside
its methods. The classes live at module level so that trained models pickle (they travel
from worker processes and Ray workers back to the caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

__all__ = ["CNNClassifierNet", "MLPClassifierNet", "TorchClassifierNet"]


class TorchClassifierNet(nn.Module):
    """Base of the built-in networks: input standardisation, labels and numpy helpers.

    The standardisation (training mean and standard deviation of every input feature) is
    part of the module, as buffers, so the saved weights are the whole model.

    Attributes
    ----------
    classes_ : ndarray
        The label of each output column (set by the recipe).
    """

    def __init__(self, n_features: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("scale", torch.ones(n_features))
        self.classes_: NDArray[Any] = np.arange(0)

    def standardize(self, x: torch.Tensor) -> torch.Tensor:
        """Flatten records to vectors and standardise them."""
        return (x.reshape(x.shape[0], -1) - self.mean) / self.scale

    def _numpy_forward(self, X: Any) -> torch.Tensor:
        x = torch.as_tensor(np.asarray(X, dtype=np.float32))
        with torch.inference_mode():
            return self(x)

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities of the records ``X`` (softmax in float64)."""
        logits = self._numpy_forward(X).to(torch.float64)
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels of the records ``X``."""
        idx = self._numpy_forward(X).argmax(dim=1).numpy()
        return self.classes_[idx]


class MLPClassifierNet(TorchClassifierNet):
    """Fully connected ReLU network: standardise, hidden layers, logits.

    Parameters
    ----------
    n_features : int
        Input features (records are flattened).
    n_classes : int
        Output logits.
    hidden : sequence of int
        Width of each hidden layer.
    """

    def __init__(self, n_features: int, n_classes: int, hidden: Sequence[int]) -> None:
        super().__init__(n_features)
        layers: list[nn.Module] = []
        width = n_features
        for h in hidden:
            layers += [nn.Linear(width, int(h)), nn.ReLU()]
            width = int(h)
        layers.append(nn.Linear(width, n_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of a batch."""
        return self.layers(self.standardize(x))


class CNNClassifierNet(TorchClassifierNet):
    """Small convolutional network for small images (e.g. 8 x 8 digits).

    ``conv3x3 -> ReLU`` per entry of ``channels``, a 2 x 2 max-pool after the last one,
    then a hidden fully connected layer and the logits.

    Parameters
    ----------
    image_shape : (channels, height, width)
        Shape of one image; records may come flat or shaped.
    n_classes : int
        Output logits.
    channels : sequence of int
        Output channels of each convolution.
    hidden : int
        Width of the fully connected layer.
    """

    def __init__(self, image_shape: Sequence[int], n_classes: int, channels: Sequence[int],
                 hidden: int) -> None:
        c, h, w = (int(v) for v in image_shape)
        super().__init__(c * h * w)
        self.image_shape = (c, h, w)
        convs: list[nn.Module] = []
        width = c
        for ch in channels:
            convs += [nn.Conv2d(width, int(ch), kernel_size=3, padding=1), nn.ReLU()]
            width = int(ch)
        convs.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*convs)
        flat = width * (h // 2) * (w // 2)
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(flat, int(hidden)), nn.ReLU(),
            nn.Linear(int(hidden), n_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of a batch."""
        z = self.standardize(x).reshape(x.shape[0], *self.image_shape)
        return self.head(self.features(z))
