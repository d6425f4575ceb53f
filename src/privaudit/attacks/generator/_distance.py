"""Attacks reading the distances from a target to the synthetic rows.

All three read the exact mixed-type Gower distance of :mod:`privaudit.synthetic` (numeric
columns scaled by their range in the auxiliary data, categorical mismatch), so a
distance means the same in every table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_fraction, check_int, param_error
from privaudit.attacks.generator._base import GeneratorAttack, TargetDistances

__all__ = ["ClosestDistanceAttack", "DensityRatioAttack", "LocalNeighbourhoodAttack"]


class ClosestDistanceAttack(GeneratorAttack):
    """The closer a synthetic row comes to the target, the likelier it was trained on.

    Score: minus the distance from the target to its nearest synthetic row (TAPAS's
    ``ClosestDistanceMIA``). Nothing to learn but the threshold of its guesses.

    References
    ----------
    .. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for
       Adversarial Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on
       Synthetic Data.
    .. [2] Chen, D., Yu, N., Zhang, Y. and Fritz, M. "GAN-Leaks: A Taxonomy of Membership
       Inference Attacks against Generative Models." ACM CCS 2020.
    """

    name = "closest-distance"

    def _prepare(self, tables: Sequence[Any], labels: NDArray[np.bool_]) -> None:
        self.distances_ = TargetDistances(self.records_, self.auxiliary_data_)

    def _signals(self, tables: Sequence[Any]) -> NDArray[np.float64]:
        return np.stack([-d.min(axis=1) for d in self.distances_.many(tables)])


class LocalNeighbourhoodAttack(GeneratorAttack):
    """The share of synthetic rows within ``radius`` of the target.

    A generator that learned a target puts more rows around it than one that did not.
    With ``radius=None`` each target's radius is learned from the shadow tables: among
    the 5%, 10%, 25% and 50% quantiles of its distance to the nearest synthetic row in
    the tables trained without it, the radius whose counts separate the tables with it
    from those without best (highest AUC).

    Parameters
    ----------
    radius : float, optional
        Gower radius, in (0, 1].

    References
    ----------
    .. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for
       Adversarial Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on
       Synthetic Data (``LocalNeighbourhoodAttack``).
    """

    name = "local-neighbourhood"

    def __init__(self, radius: float | None = None) -> None:
        self.radius = radius

    def _prepare(self, tables: Sequence[Any], labels: NDArray[np.bool_]) -> None:
        self.distances_ = TargetDistances(self.records_, self.auxiliary_data_)
        if self.radius is not None:
            radius = check_fraction(self.radius, param="radius", func=type(self).__name__,
                                    high_inclusive=True)
            self.radii_ = np.full(len(self.records_), radius)
            return
        distances = self.distances_.many(tables)
        nearest = np.stack([d.min(axis=1) for d in distances])
        out = np.where(~labels, nearest, np.nan)
        out = np.where(np.isnan(out).all(axis=0), nearest, out)
        candidates = np.maximum(np.nanquantile(out, _RADIUS_QUANTILES, axis=0), 1e-9)
        self.radii_ = np.empty(len(self.records_))
        for t in range(len(self.records_)):
            separation = [_auc(labels[:, t], [(d[t] <= r).mean() for d in distances])
                          for r in candidates[:, t]]
            self.radii_[t] = candidates[int(np.argmax(separation)), t]

    def _signals(self, tables: Sequence[Any]) -> NDArray[np.float64]:
        return np.stack([(d <= self.radii_[:, None]).mean(axis=1)
                         for d in self.distances_.many(tables)])


#: Quantiles of a target's nearest distance, out of its training sets, tried as radii.
_RADIUS_QUANTILES = (0.05, 0.1, 0.25, 0.5)


def _auc(labels: NDArray[np.bool_], scores: Any) -> float:
    """AUC, 0.5 when one class is missing (a radius is then as good as another)."""
    from privaudit.metrics import roc_auc

    if labels.all() or not labels.any():
        return 0.5
    return float(roc_auc(labels, np.asarray(scores, dtype=np.float64)))


class DensityRatioAttack(GeneratorAttack):
    """DOMIAS: the synthetic data's density at the target over the population's.

    A generator that overfits puts more density at its training records than the data's
    distribution has there; dividing by the density of reference data (drawn from the
    population, disjoint from every training set) separates "the generator learned this
    record" from "this record lies where records are common", which the plain distance
    attacks confuse. Both densities are Gaussian kernels on the Gower distance,
    ``mean_j exp(-(d(t, x_j) / h)^2 / 2)``; the score is the log of their ratio.

    DOMIAS estimates densities with a normalising flow or a KDE of encoded features; a
    kernel on the one mixed-type distance of every other attack needs no encoding of
    categories as numbers, and no training.

    Parameters
    ----------
    bandwidth : float, optional
        The kernel's width ``h`` on the Gower scale. Default: the population's spacing,
        the median distance from a reference row to its ``n_neighbors``-th nearest
        other reference row.
    n_neighbors : int, default=1
        Sets the default bandwidth.

    References
    ----------
    .. [1] van Breugel, B., Sun, H., Qian, Z. and van der Schaar, M. "Membership
       Inference Attacks against Synthetic Data through Overfitting Detection."
       AISTATS 2023.
    """

    name = "domias"

    def __init__(self, bandwidth: float | None = None, n_neighbors: int = 1) -> None:
        self.bandwidth = bandwidth
        self.n_neighbors = n_neighbors

    def _prepare(self, tables: Sequence[Any], labels: NDArray[np.bool_]) -> None:
        func = type(self).__name__
        if self.reference_data_ is None or len(self.reference_data_) == 0:
            raise param_error("reference_data", f"{func}.fit", "rows of the population "
                              "disjoint from every training set", self.reference_data_)
        k = check_int(self.n_neighbors, param="n_neighbors", func=func, low=1)
        self.distances_ = TargetDistances(self.records_, self.auxiliary_data_)
        to_reference = self.distances_(self.reference_data_)
        if self.bandwidth is None:
            self.bandwidth_ = self._spacing(min(k, len(self.reference_data_) - 1))
        else:
            self.bandwidth_ = check_fraction(self.bandwidth, param="bandwidth", func=func,
                                             high=np.inf)
        self.reference_log_density_ = self._log_density(to_reference)

    def _spacing(self, k: int) -> float:
        """The median distance from a reference row to its ``k``-th nearest other one."""
        from privaudit.synthetic import nearest_neighbors

        if k < 1:
            return 0.05
        reference = self.reference_data_[self.distances_.columns]
        distances, _ = nearest_neighbors(
            reference, reference, n_neighbors=k, exclude_self=True,
            categorical=self.distances_.categorical,
            fit_frames=[self.distances_.auxiliary_data])
        return max(float(np.median(distances[:, -1])), 1e-3)

    def _log_density(self, distances: NDArray[np.float64]) -> NDArray[np.float64]:
        from scipy.special import logsumexp

        z = -0.5 * (distances / self.bandwidth_) ** 2
        return logsumexp(z, axis=1) - np.log(distances.shape[1])

    def _signals(self, tables: Sequence[Any]) -> NDArray[np.float64]:
        return np.stack([self._log_density(d) - self.reference_log_density_
                         for d in self.distances_.many(tables)])
