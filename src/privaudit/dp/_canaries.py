"""Canaries for auditing DP training in one run, and their random inclusion.

A canary is an example the auditor controls. Each one is included in training independently
with probability 1/2 (:func:`draw_inclusion`); after training, the auditor scores every
canary and guesses which were included. Steinke, Nasr and Jagielski (2023, Sec. 2 and
Thm. 5.2) show that the number of correct guesses bounds the epsilon of one training run.

Input-space canaries are records (features and a label) scored by the model's loss
(black box); white-box "Dirac" canaries are gradients, zero except on one parameter
coordinate, added to the per-example gradients of DP-SGD and scored by that coordinate's
movement (Steinke et al. 2023, Sec. 6; Nasr et al. 2023, Sec. 4).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_random_state, param_error

__all__ = ["CANARY_KINDS", "CanarySet", "draw_inclusion", "make_canaries"]

#: The canaries :func:`make_canaries` builds.
CANARY_KINDS = ("flipped-label", "random-label", "out-of-distribution", "dirac-gradient")

#: How far beyond the data the out-of-distribution canaries lie: this many times the largest
#: standardised norm of a record, so that every canary is outside the ball holding the data.
OOD_RADIUS_FACTOR = 1.5


@dataclass(frozen=True)
class CanarySet:
    """Canaries of one kind, each with a unique string id.

    Attributes
    ----------
    ids : ndarray of str, shape (m,)
        ``"canary-00000"``, ``"canary-00001"``... unique.
    kind : str
        One of :data:`CANARY_KINDS`.
    features : ndarray of shape (m, d), or None
        The canaries' inputs (input-space kinds); None for ``"dirac-gradient"``.
    labels : ndarray of shape (m,), or None
        The canaries' class labels (input-space kinds); None for ``"dirac-gradient"``.
    coordinates : ndarray of int, shape (m,), or None
        The flat parameter index of each Dirac canary (distinct); None otherwise.
    """

    ids: NDArray[np.str_]
    kind: str
    features: NDArray[np.float64] | None = None
    labels: NDArray[Any] | None = None
    coordinates: NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def subset(self, mask_or_index: ArrayLike) -> CanarySet:
        """The canaries selected by a boolean mask or an index array, in that order."""
        sel = np.asarray(mask_or_index)
        if sel.dtype == bool and sel.shape != (len(self),):
            raise param_error("mask_or_index", "CanarySet.subset",
                              f"a boolean mask of length {len(self)} or an index array",
                              f"<boolean array of shape {sel.shape}>")
        if sel.dtype != bool and sel.size == 0:
            sel = sel.astype(np.intp)

        def pick(arr: NDArray[Any] | None) -> NDArray[Any] | None:
            return None if arr is None else arr[sel]

        return CanarySet(ids=self.ids[sel], kind=self.kind, features=pick(self.features),
                         labels=pick(self.labels), coordinates=pick(self.coordinates))


def _canary_ids(n: int) -> NDArray[np.str_]:
    return np.array([f"canary-{i:05d}" for i in range(n)])


def draw_inclusion(n_canaries: int, *, random_state: Any = None) -> NDArray[np.bool_]:
    """Include each canary independently with probability 1/2.

    The independent fair coins are what the one-run analysis needs (Steinke et al. 2023,
    Sec. 2: the inclusion vector S is uniform on {-1, 1}^m).

    Parameters
    ----------
    n_canaries : int
        How many canaries (at least 2).
    random_state : None, int or numpy Generator
        Seeds the coins.

    Returns
    -------
    ndarray of bool, shape (n_canaries,)
        True where the canary is included in training.
    """
    m = _check_n_canaries(n_canaries, "draw_inclusion")
    rng = check_random_state(random_state, func="draw_inclusion")
    return rng.random(m) < 0.5


def _check_n_canaries(n: Any, func: str) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 2:
        raise param_error("n_canaries", func, "an integer >= 2 (the one-run bound compares "
                          "canaries)", n)
    return int(n)


def make_canaries(kind: str, n_canaries: int, *, features: ArrayLike | None = None,
                  labels: ArrayLike | None = None, n_classes: int | None = None,
                  classes: ArrayLike | None = None,
                  n_parameters: int | None = None, parameter_indices: ArrayLike | None = None,
                  random_state: Any = None) -> CanarySet:
    """Build ``n_canaries`` canaries of one kind.

    Parameters
    ----------
    kind : {"flipped-label", "random-label", "out-of-distribution", "dirac-gradient"}
        - ``"flipped-label"``: a record of ``features`` (drawn without replacement while
          there are enough) with a label drawn uniformly among the classes other than its
          own ``labels`` entry. Pass records the training set does not hold (a held-out
          part of the population): the canary is then the only record of its kind.
        - ``"random-label"``: a record of ``features`` with a label drawn uniformly from
          the classes (those in ``labels``, or ``0 .. n_classes - 1``).
        - ``"out-of-distribution"``: a point far from every record, with a random label:
          ``mean + std * u * r``, ``u`` uniform on the unit sphere, ``r`` =
          :data:`OOD_RADIUS_FACTOR` times the largest standardised norm of a record. Far
          from the data, no real record pulls the model's prediction there, so the
          canary's own gradient decides its loss: the strongest black-box canary when the
          model extrapolates (Jagielski et al. 2020 use such crafted inputs).
        - ``"dirac-gradient"``: white-box gradient canaries, one distinct flat parameter
          coordinate each, drawn uniformly without replacement from
          ``0 .. n_parameters - 1``, or from ``parameter_indices`` (Steinke et al. 2023,
          Sec. 6; Nasr et al. 2023, Sec. 4.2): distinct coordinates keep the canaries
          from interfering with each other.
    n_canaries : int
        At least 2.
    features : array-like of shape (n, d), optional
        Records of the population (input-space kinds).
    labels : array-like of shape (n,), optional
        Their labels (``"flipped-label"``; ``"random-label"`` and
        ``"out-of-distribution"`` take the classes from them unless ``n_classes`` is given).
    n_classes : int, optional
        Labels ``0 .. n_classes - 1`` (instead of those in ``labels``).
    classes : array-like, optional
        The classes the canary labels are drawn among, instead of those in ``labels`` (or
        ``n_classes``): at least 2, holding every value of ``labels``. For records
        sampled from a dataset, pass the dataset's classes: the sample's may be fewer
        (a rare class it missed), which would narrow the flipped labels or leave one
        class.
    n_parameters : int, optional
        Flat parameter count of the model (``"dirac-gradient"``; at least ``n_canaries``).
    parameter_indices : array-like of int, optional
        ``"dirac-gradient"``: draw the coordinates from these distinct flat indices (in
        ``[0, n_parameters)``) instead of all of them, e.g. parameters the data never
        moves (:meth:`OpacusRecipe.dirac_coordinates
        <privaudit.dp.OpacusRecipe.dirac_coordinates>`).
    random_state : None, int or numpy Generator
        Seeds every draw.

    Returns
    -------
    CanarySet
    """
    func = "make_canaries"
    if kind not in CANARY_KINDS:
        raise param_error("kind", func, f"one of {CANARY_KINDS}", kind)
    m = _check_n_canaries(n_canaries, func)
    rng = check_random_state(random_state, func=func)
    if kind == "dirac-gradient":
        return _dirac_canaries(m, n_parameters, parameter_indices, rng)
    X = _check_features(features, func)
    classes = (_classes(labels, n_classes, X.shape[0], kind, func) if classes is None
               else _given_classes(classes, labels, X.shape[0], kind, func))
    if kind == "out-of-distribution":
        feats = _far_points(X, m, rng)
        labs = classes[rng.integers(0, classes.size, size=m)]
    else:
        rows = rng.choice(X.shape[0], size=m, replace=m > X.shape[0])
        feats = X[rows].copy()
        if kind == "random-label":
            labs = classes[rng.integers(0, classes.size, size=m)]
        else:
            labs = _flipped(np.asarray(labels)[rows], classes, rng)
    return CanarySet(ids=_canary_ids(m), kind=kind, features=feats, labels=labs)


def _dirac_canaries(m: int, n_parameters: Any, indices: Any,
                    rng: np.random.Generator) -> CanarySet:
    if (isinstance(n_parameters, bool) or not isinstance(n_parameters, numbers.Integral)
            or n_parameters < m):
        raise param_error("n_parameters", "make_canaries",
                          f"an integer >= n_canaries ({m}): one distinct parameter coordinate "
                          "per dirac-gradient canary", n_parameters)
    pool = np.arange(int(n_parameters)) if indices is None else np.asarray(indices)
    if (pool.ndim != 1 or pool.dtype.kind not in "iu" or pool.size < m
            or np.unique(pool).size != pool.size or pool.min() < 0 or pool.max() >= n_parameters):
        raise param_error("parameter_indices", "make_canaries",
                          f"at least n_canaries ({m}) distinct integers in [0, n_parameters)",
                          f"<array of shape {pool.shape}, dtype {pool.dtype}>")
    coords = pool[rng.choice(pool.size, size=m, replace=False)].astype(np.int64)
    return CanarySet(ids=_canary_ids(m), kind="dirac-gradient", coordinates=coords)


def _check_features(features: Any, func: str) -> NDArray[np.float64]:
    if features is None:
        raise param_error("features", func, "records of the population, shape (n, d), for "
                          "input-space canaries", None)
    X = np.asarray(features)
    if X.ndim != 2 or X.shape[0] < 1 or X.dtype.kind not in "biuf":
        raise param_error("features", func, "a non-empty 2-D numeric array (n, d)",
                          f"<array of shape {X.shape}, dtype {X.dtype}>")
    X = X.astype(np.float64)
    if not np.all(np.isfinite(X)):
        raise param_error("features", func, "finite numbers", "<NaN or infinite values>")
    return X


def _classes(labels: Any, n_classes: Any, n: int, kind: str, func: str) -> NDArray[Any]:
    if labels is not None:
        y = np.asarray(labels)
        if y.shape != (n,):
            raise param_error("labels", func, f"one label per record ({n})",
                              f"<array of shape {y.shape}>")
    if n_classes is not None and kind != "flipped-label":
        if isinstance(n_classes, bool) or not isinstance(n_classes, numbers.Integral) \
                or n_classes < 2:
            raise param_error("n_classes", func, "an integer >= 2", n_classes)
        return np.arange(int(n_classes))
    if labels is None:
        need = "the records' labels" if kind == "flipped-label" else "labels or n_classes"
        raise param_error("labels", func, f"given for {kind!r} canaries ({need})", None)
    classes = np.unique(y)
    if classes.size < 2:
        raise param_error("labels", func, "labels of at least 2 classes", "<one class only>")
    return classes


def _given_classes(classes: Any, labels: Any, n: int, kind: str,
                   func: str) -> NDArray[Any]:
    """``classes`` checked: at least 2, and holding every label a flipped one starts from."""
    values = np.unique(np.asarray(classes))
    if values.ndim != 1 or values.size < 2:
        raise param_error("classes", func, "at least 2 distinct classes",
                          f"<{values.size} class(es)>")
    if labels is not None:
        y = np.asarray(labels)
        if y.shape != (n,):
            raise param_error("labels", func, f"one label per record ({n})",
                              f"<array of shape {y.shape}>")
        if not np.isin(y, values).all():
            raise param_error("labels", func, "labels among `classes`",
                              "<labels outside them>")
    elif kind == "flipped-label":
        raise param_error("labels", func, "given for 'flipped-label' canaries (the "
                          "records' labels)", None)
    return values


def _flipped(own: NDArray[Any], classes: NDArray[Any], rng: np.random.Generator) -> NDArray[Any]:
    """A label uniform among the classes other than ``own`` (shift by 1..C-1, mod C)."""
    pos = np.searchsorted(classes, own)
    shift = rng.integers(1, classes.size, size=own.size)
    return classes[(pos + shift) % classes.size]


def _far_points(X: NDArray[np.float64], m: int, rng: np.random.Generator) -> NDArray[np.float64]:
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    std[std == 0] = 1.0
    radius = OOD_RADIUS_FACTOR * max(float(np.linalg.norm((X - mean) / std, axis=1).max()), 1.0)
    u = rng.standard_normal((m, X.shape[1]))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return mean + std * u * radius
