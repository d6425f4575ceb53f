"""ROC curves of several attack results, on linear and log-log axes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from privaudit.report._common import check_results, figure_png
from privaudit.report._plots import roc_figure
from privaudit.results import AttackResult, atomic_write

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["ROCReport"]


class ROCReport:
    r"""One figure with the ROC curves of all results: linear axes and log-log axes.

    For an attack with score :math:`s` and threshold :math:`\tau`, guessing "member" when
    :math:`s \geq \tau`, the ROC curve traces the true positive rate against the false
    positive rate over all thresholds. The linear view shows the overall separation (its
    area is the AUC); the log-log view shows the low false-positive regime, where an
    attack identifies a few records with high confidence. Rates below ``1/n`` cannot be
    measured, so the log-log axes start there.

    It is most meaningful when the results come from different attacks under the same
    threat model (same target and records).

    Parameters
    ----------
    results : sequence of AttackResult
    title : str, optional
        Title of the figure.

    References
    ----------
    .. [1] Houssiau, F., et al. "TAPAS: a Toolbox for Adversarial Privacy Auditing of
       Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    .. [2] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022.
    """

    def __init__(self, results: Sequence[AttackResult], *, title: str | None = None) -> None:
        self.results = check_results(results, "ROCReport")
        self.title = title

    def figure(self, *, aucs: Sequence[float] | None = None) -> Figure:
        """The matplotlib figure (two panels); ``aucs`` reuses AUCs already computed."""
        return roc_figure(self.results, aucs=aucs, title=self.title)

    def publish(
        self, directory: str | os.PathLike[str], *, filename: str = "roc_curves.png"
    ) -> Path:
        """Write the figure as a PNG file in ``directory`` and return its path."""
        png = figure_png(self.figure())
        return atomic_write(Path(directory) / filename, lambda tmp: tmp.write_bytes(png))
