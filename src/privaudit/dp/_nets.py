"""A network with a block of parameters the data never moves, for Dirac canaries.

This module imports torch at module level: only :mod:`privaudit.dp._opacus_loop` imports
it, inside a function. The class lives at module level so that trained models pickle.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

__all__ = ["DiracSlotNet"]


class DiracSlotNet(nn.Module):
    """``net`` plus ``n_slots`` parameters that only noise and Dirac canaries move.

    The slots are the weights of a bias-free ``Linear(1, n_slots)`` applied to a constant
    zero input, its outputs summed and added to the logits: that sum is exactly 0, so the
    predictions are ``net``'s, and every data example's gradient on the slots is exactly 0.
    A Dirac canary on a slot then competes with the DP noise alone, not with the data's
    gradients (which, on a coordinate of ``net``, vary from coordinate to coordinate more
    than a canary moves it). The slots start at 0.

    Parameters
    ----------
    net : torch.nn.Module
        One of privaudit's classifier networks (``standardize``, ``classes_``...).
    n_slots : int
        How many slot parameters (at least the number of Dirac canaries).
    """

    def __init__(self, net: nn.Module, n_slots: int) -> None:
        super().__init__()
        self.net = net
        self.slots = nn.Linear(1, int(n_slots), bias=False)
        nn.init.zeros_(self.slots.weight)
        self.classes_: NDArray[Any] = np.arange(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``net``'s logits, plus the slots' output on a zero input (exactly 0)."""
        zero = torch.zeros((x.shape[0], 1), dtype=self.slots.weight.dtype, device=x.device)
        return self.net(x) + self.slots(zero).sum(dim=1, keepdim=True)

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Class probabilities of the records ``X`` (softmax in float64)."""
        x = torch.as_tensor(np.asarray(X, dtype=np.float32))
        with torch.inference_mode():
            logits = self(x).to(torch.float64)
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels of the records ``X``."""
        return self.classes_[self.predict_proba(X).argmax(axis=1)]
