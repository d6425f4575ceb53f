"""Query augmentations for LiRA: each record is also queried shifted and/or mirrored.

Carlini et al. (2022, Section VI.B) query the target and every reference model on each
audited record *and* on augmented versions of it (the augmentations the model was trained
with: mirror, small shifts), fit one Gaussian per augmentation and combine them; the attack
gets markedly stronger at low FPR. An augmentation here is a picklable callable mapping a
batch of records ``X`` to a batch of the same shape (labels unchanged); the identity is
always the first query, so ``n_queries = 1 + len(augmentations)``.

Use only the augmentations the target (and the reference recipe) were trained with. Queried
on transformations a model never saw, the extra statistics are noise: on sklearn digits
with MLPs trained without shifts, adding the 8 one-pixel shifts lowers online LiRA's AUC
from 0.642 to 0.578 with 16 reference models (``benchmarks/bench_digits_attacks.py
--augment``; each shifted query alone is near chance).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import param_error

__all__ = [
    "HorizontalFlip",
    "ImageShift",
    "apply_augmentations",
    "check_augmentations",
    "horizontal_flip",
    "image_shifts",
    "query_augmented",
]

Augmentation = Callable[[Any], Any]


def _check_image_shape(image_shape: Any, func: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(s) for s in image_shape)
    except TypeError:
        shape = ()
    if len(shape) not in (2, 3) or any(s < 1 for s in shape):
        raise param_error("image_shape", func,
                          "(height, width) or (height, width, channels) of positive ints",
                          image_shape)
    return shape


def _as_images(X: Any, image_shape: tuple[int, ...], func: str) -> NDArray[Any]:
    arr = np.asarray(X)
    size = int(np.prod(image_shape))
    if arr.ndim < 1 or int(np.prod(arr.shape[1:], dtype=np.int64)) != size:
        raise param_error("X", func, f"rows of {size} values (images {image_shape})",
                          f"<array of shape {arr.shape}>")
    return arr.reshape((arr.shape[0], *image_shape))


@dataclass(frozen=True)
class ImageShift:
    """Translate images by ``(dy, dx)`` pixels, filling the uncovered border with zeros.

    ``out[i, j] = image[i - dy, j - dx]`` (content moves down by ``dy`` and right by
    ``dx``). Rows may be flat (``(n, height * width)``) or images; the output has the
    input's shape. A module-level class, so it pickles into worker processes.
    """

    image_shape: tuple[int, ...]
    dy: int
    dx: int

    def __call__(self, X: Any) -> NDArray[Any]:
        images = _as_images(X, self.image_shape, "ImageShift")
        h, w = self.image_shape[:2]
        out = np.zeros_like(images)
        dy, dx = self.dy, self.dx
        if abs(dy) < h and abs(dx) < w:
            out[:, max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = (
                images[:, max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
            )
        return out.reshape(np.asarray(X).shape)


@dataclass(frozen=True)
class HorizontalFlip:
    """Mirror images left-right (``out[i, j] = image[i, width - 1 - j]``)."""

    image_shape: tuple[int, ...]

    def __call__(self, X: Any) -> NDArray[Any]:
        images = _as_images(X, self.image_shape, "HorizontalFlip")
        return np.ascontiguousarray(images[:, :, ::-1]).reshape(np.asarray(X).shape)


def image_shifts(
    image_shape: Sequence[int] = (8, 8), max_shift: int = 1
) -> list[ImageShift]:
    """Every shift in ``[-max_shift, max_shift]^2`` except ``(0, 0)``, zero-padded.

    Parameters
    ----------
    image_shape : (height, width) or (height, width, channels), default=(8, 8)
        Shape of one image (sklearn digits: 8 x 8); rows of ``X`` may be flattened.
    max_shift : int, default=1
        Largest shift in pixels along each axis; ``(2 s + 1)^2 - 1`` augmentations.

    Returns
    -------
    list of ImageShift
        In row-major order of ``(dy, dx)``.

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership Inference Attacks From First Principles. IEEE S&P 2022 (Section VI.B).
    """
    func = "image_shifts"
    shape = _check_image_shape(image_shape, func)
    if (not isinstance(max_shift, numbers.Integral) or isinstance(max_shift, bool)
            or not 0 <= max_shift < min(shape[:2])):
        raise param_error("max_shift", func,
                          f"an int in [0, {min(shape[:2])}) (smaller than the image)",
                          max_shift)
    s = int(max_shift)
    return [ImageShift(shape, dy, dx) for dy in range(-s, s + 1) for dx in range(-s, s + 1)
            if (dy, dx) != (0, 0)]


def horizontal_flip(image_shape: Sequence[int] = (8, 8)) -> HorizontalFlip:
    """The mirror augmentation of Carlini et al. (Section VI.B) for images of ``image_shape``.

    References
    ----------
    .. [1] Carlini, N. et al. (2022). Membership Inference Attacks From First Principles.
       IEEE S&P 2022.
    """
    return HorizontalFlip(_check_image_shape(image_shape, "horizontal_flip"))


def check_augmentations(augmentations: Any, func: str) -> tuple[Augmentation, ...]:
    """A tuple of callables, or a clear error."""
    if isinstance(augmentations, str) or not isinstance(augmentations, Sequence):
        raise param_error("augmentations", func, "a list of callables X -> X'",
                          f"<{type(augmentations).__name__}>", error=TypeError)
    bad = [a for a in augmentations if not callable(a)]
    if bad:
        raise param_error("augmentations", func, "a list of callables X -> X'",
                          f"<non-callable {type(bad[0]).__name__}>", error=TypeError)
    return tuple(augmentations)


def apply_augmentations(
    X: Any, augmentations: Sequence[Augmentation], func: str
) -> NDArray[Any]:
    """All augmented copies of ``X`` stacked row-wise: ``aug_0(X), aug_1(X), ...``."""
    arr = np.asarray(X)
    parts = []
    for aug in augmentations:
        out = np.asarray(aug(X))
        if out.shape != arr.shape:
            raise param_error("augmentations", func,
                              f"callables keeping the shape of X {arr.shape}",
                              f"<{aug!r} gave shape {out.shape}>")
        parts.append(out)
    return np.concatenate(parts, axis=0)


def split_outputs(outputs: Any, n_parts: int) -> tuple[Any, ...]:
    """Cut the outputs of ``n_parts`` stacked copies of the records back into copies."""
    n = len(outputs) // n_parts
    return tuple(outputs.subset(np.arange(k * n, (k + 1) * n)) for k in range(n_parts))


def query_augmented(
    target: Any, X: Any, y: ArrayLike, augmentations: Sequence[Augmentation], *,
    func: str = "query_augmented",
) -> tuple[Any, ...]:
    """The target's outputs on each augmented copy of ``(X, y)``: one query per record.

    All copies are sent in one query (``len(augmentations) * len(X)`` records), then cut
    back into one :class:`~privaudit.targets.ModelOutputs` per augmentation, in order.
    """
    augs = check_augmentations(augmentations, func)
    if not augs:
        return ()
    X_aug = apply_augmentations(X, augs, func)
    y_aug = np.tile(np.asarray(y), len(augs))
    return split_outputs(target.query(X_aug, y_aug), len(augs))
