"""Classification-metric reports of membership and attribute inference (TAPAS style)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privaudit._progress import as_progress
from privaudit._validation import check_fraction, param_error
from privaudit.report._common import (
    DIMENSIONS,
    PREDICTION_METRICS,
    SCORE_METRICS,
    check_results,
    figure_png,
    safe_name,
)
from privaudit.report._plots import comparison_figure
from privaudit.results import (
    DEFAULT_FPRS,
    AttackResult,
    atomic_write,
    check_fprs,
    check_n_bootstrap,
    fpr_key,
    write_csv,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["AIAttackReport", "BinaryLabelAttackReport", "MIAttackReport"]

#: For each comparison column: the two fixed columns (one plot per pair of their values)
#: and the column whose values are drawn as separate bars, as TAPAS's ``publish`` does.
_PUBLISH_LAYOUT: dict[str, tuple[tuple[str, str], str]] = {
    "attack": (("dataset", "generator"), "target"),
    "dataset": (("attack", "generator"), "target"),
    "generator": (("dataset", "attack"), "target"),
    "target": (("dataset", "generator"), "attack"),
}


def sensitive_attribute(result: AttackResult) -> str:
    """Name of the attribute an attribute-inference result guesses ('' if not recorded)."""
    value = result.parameters.get("sensitive_attribute", result.sensitive_attribute)
    return "" if value is None else str(value)


class BinaryLabelAttackReport:
    """Classification metrics of binary-label attacks, as a table and comparison plots.

    One row per :class:`~privaudit.results.AttackResult`, disaggregated by the four
    dimensions of TAPAS (dataset, generator, target, attack). The report only consumes
    results: every number comes from :meth:`AttackResult.metrics`, which calls
    :mod:`privaudit.metrics`.

    Parameters
    ----------
    results : sequence of AttackResult
        The results to report.
    metrics : sequence of str, optional
        Metrics to report (table and plots), among ``auc``, ``advantage``, ``tpr_at_fpr``
        (all rates in ``fprs``) or ``tpr_at_fpr_<rate>`` (one of them),
        ``effective_epsilon``, and the metrics of hard predictions ``accuracy``,
        ``true_positive_rate``, ``false_positive_rate``, ``precision``,
        ``mia_advantage``, ``privacy_gain``. By default all metrics of the scores, plus
        those of the predictions when a result has predictions.
    n_bootstrap : int
        Bootstrap resamples for the confidence intervals; 0 (default, as TAPAS) reports
        point estimates only (the ``_low``/``_high`` columns are then NaN, except the exact
        Clopper-Pearson intervals of prediction rates).
    fprs : sequence of float
        False-positive rates at which the TPR is reported.
    confidence : float
        Confidence level of the intervals.
    random_state : int, Generator or None
        Seeds the bootstrap; the same seed gives the same table.
    progress : None, bool, callable(str) or Progress
        A bar over the bootstrap of the results' metrics.

    References
    ----------
    .. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for Adversarial
       Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    .. [2] Stadler, T., Oprisanu, B. and Troncoso, C. "Synthetic Data -- Anonymisation
       Groundhog Day." USENIX Security 2022.
    """

    #: Required ``kind`` of every result (``None``: any).
    required_kind: ClassVar[str | None] = None

    def __init__(
        self,
        results: Sequence[AttackResult],
        metrics: Sequence[str] | None = None,
        n_bootstrap: int = 0,
        fprs: Sequence[float] = DEFAULT_FPRS,
        confidence: float = 0.95,
        random_state: int | np.random.Generator | None = 0,
        progress: Any = None,
    ) -> None:
        func = type(self).__name__
        self.results = check_results(results, func)
        self.progress = as_progress(progress, func=func)
        if self.required_kind is not None:
            for result in self.results:
                if result.kind != self.required_kind:
                    raise param_error(
                        "results", func, f"results of kind {self.required_kind!r}",
                        f"<a result of kind {result.kind!r} ({result.name})>",
                    )
        self.n_bootstrap = check_n_bootstrap(n_bootstrap, func)
        self.fprs = check_fprs(fprs, func)
        self.confidence = check_fraction(confidence, param="confidence", func=func)
        self.random_state = random_state
        self.metrics = self._resolve_metrics(metrics, func)

    # ------------------------------------------------------------------ metrics
    def _resolve_metrics(self, metrics: Sequence[str] | None, func: str) -> list[str]:
        tpr_columns = [f"tpr_at_fpr_{fpr_key(f)}" for f in self.fprs]
        if metrics is None:
            names: list[str] = list(SCORE_METRICS)
            if any(r.predictions is not None for r in self.results):
                names += PREDICTION_METRICS
        else:
            if isinstance(metrics, str):
                metrics = [metrics]
            names = list(metrics)
        allowed = [*SCORE_METRICS, *PREDICTION_METRICS, *tpr_columns]
        columns: list[str] = []
        for name in names:
            if name == "tpr_at_fpr":
                columns += tpr_columns
            elif name in allowed:
                columns.append(name)
            else:
                raise param_error("metrics", func, f"names among {allowed}", name)
        return list(dict.fromkeys(columns))

    @cached_property
    def metric_dicts(self) -> list[dict[str, Any]]:
        """:meth:`AttackResult.metrics` of every result (computed once, then cached)."""
        out = []
        label = "Bootstrap" if self.n_bootstrap else "Metrics"
        with self.progress.task(f"{label} of {len(self.results)} results",
                                total=len(self.results)) as step:
            for result in self.results:
                out.append(result.metrics(
                    fprs=self.fprs, n_bootstrap=self.n_bootstrap,
                    confidence=self.confidence, random_state=self.random_state))
                step.advance()
        return out

    @property
    def has_sensitive_attribute(self) -> bool:
        """Whether the table has a ``sensitive_attribute`` column (attribute inference)."""
        return any(r.kind == "attribute" for r in self.results)

    def metrics_frame(self) -> pd.DataFrame:
        """The metrics table: one row per result.

        Returns
        -------
        pandas.DataFrame
            Columns ``dataset``, ``target``, ``generator``, ``attack``, ``kind``,
            ``sensitive_attribute`` (when a result is an attribute inference),
            ``n_members``, ``n_non_members``, then for each metric its value and its
            ``<metric>_low`` and ``<metric>_high`` bounds (``tpr_at_fpr_<rate>`` for the
            TPR at each rate; empty (NaN) at a rate below ``1 / n_non_members``, which the
            result's non-members cannot resolve), ``better_than_random`` (``None``
            without bootstrap) and ``smallest_resolvable_fpr`` (``1 / n_non_members``).
        """
        import pandas as pd

        rows = []
        for result, m in zip(self.results, self.metric_dicts, strict=True):
            row: dict[str, Any] = {
                "dataset": result.dataset,
                "target": result.target,
                "generator": result.generator,
                "attack": result.attack,
                "kind": result.kind,
            }
            if self.has_sensitive_attribute:
                row["sensitive_attribute"] = sensitive_attribute(result)
            row["n_members"] = m["n_members"]
            row["n_non_members"] = m["n_non_members"]
            resolvable = (m.get("fpr_resolution") or {}).get("resolvable", {})
            for column in self.metrics:
                if column.startswith("tpr_at_fpr_"):
                    key = column[len("tpr_at_fpr_"):]
                    # An FPR its non-members cannot resolve has no TPR: left empty.
                    estimate = m["tpr_at_fpr"][key] if resolvable.get(key, True) else None
                else:
                    estimate = m.get(column)
                if estimate is None:
                    estimate = {"value": np.nan, "low": np.nan, "high": np.nan}
                row[column] = estimate["value"]
                row[f"{column}_low"] = estimate["low"]
                row[f"{column}_high"] = estimate["high"]
            row["better_than_random"] = m["better_than_random"]
            row["smallest_resolvable_fpr"] = (m.get("fpr_resolution") or {}).get(
                "smallest_fpr", np.nan)
            rows.append(row)
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ plots
    def compare(
        self,
        fixed_pair_columns: Sequence[str],
        comparison_column: str,
        directory: str | os.PathLike[str],
        *,
        series_column: str | None = None,
    ) -> list[Path]:
        """Plot each metric across ``comparison_column``, one figure per fixed pair.

        For every pair of values of the two ``fixed_pair_columns`` (e.g. one dataset and
        one generator), a figure with one panel per metric shows a bar for each value of
        ``comparison_column`` (e.g. each attack), split by ``series_column`` (by default
        the remaining dimension, e.g. the target). Error bars show the confidence
        intervals when ``n_bootstrap > 0``; a dotted line marks a random guess where
        it is known (AUC 0.5, TPR@FPR x = x).

        Parameters
        ----------
        fixed_pair_columns : pair of str
            Two distinct dimensions among ``dataset``, ``generator``, ``target``,
            ``attack``.
        comparison_column : str
            A third dimension, compared within each figure.
        directory : path-like
            Where to write ``compare_<comparison>__<fixed1>-<v1>__<fixed2>-<v2>.png``.
        series_column : str, optional
            Dimension drawn as separate bars (default: the fourth dimension).

        Returns
        -------
        list of pathlib.Path
            The PNG files written.
        """
        func = f"{type(self).__name__}.compare"
        fixed = list(fixed_pair_columns)
        if len(fixed) != 2 or len(set(fixed)) != 2 or not set(fixed) <= set(DIMENSIONS):
            raise param_error("fixed_pair_columns", func,
                              f"two distinct names among {list(DIMENSIONS)}", fixed_pair_columns)
        if comparison_column not in DIMENSIONS or comparison_column in fixed:
            raise param_error("comparison_column", func,
                              f"a name among {list(DIMENSIONS)} not in fixed_pair_columns",
                              comparison_column)
        rest = [d for d in DIMENSIONS if d not in fixed and d != comparison_column]
        if series_column is None:
            series_column = rest[0]
        elif series_column not in rest:
            raise param_error("series_column", func, f"{rest[0]!r}", series_column)

        frame = self.metrics_frame()
        # The series label also carries the sensitive attribute, and a counter for results
        # of identical provenance, so that no row hides another.
        label = frame[series_column].astype(str)
        if self.has_sensitive_attribute:
            label = label + frame["sensitive_attribute"].map(
                lambda a: f" [{a}]" if a else "")
        group_keys = [*fixed, comparison_column]
        occurrence = frame.assign(_label=label).groupby([*group_keys, "_label"]).cumcount()
        label = label + occurrence.map(lambda k: f" #{k + 1}" if k else "")
        frame = frame.assign(_series=label)

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for values, sub in frame.groupby(fixed, sort=False, dropna=False):
            v0, v1 = (str(v) for v in values)
            title = (f"{comparison_column.capitalize()} comparison — "
                     f"{fixed[0]}: {v0 or '(unnamed)'}, {fixed[1]}: {v1 or '(unnamed)'}")
            fig = comparison_figure(sub, comparison_column=comparison_column,
                                    series_column="_series", metric_columns=self.metrics,
                                    title=title, series_title=series_column)
            if fig is None:
                continue
            name = (f"compare_{comparison_column}__{fixed[0]}-{safe_name(v0)}"
                    f"__{fixed[1]}-{safe_name(v1)}.png")
            png = figure_png(fig)
            written.append(atomic_write(directory / name, lambda tmp, png=png:
                                        tmp.write_bytes(png)))
        return written

    def publish(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``metrics.csv`` and the comparison plots across every dimension.

        For each of dataset, generator, target and attack taking more than one value, it
        calls :meth:`compare` with the layout of TAPAS (attacks compared per dataset and
        generator, split by target; datasets per attack and generator; generators per
        dataset and attack; targets per dataset and generator, split by attack).

        Returns
        -------
        list of pathlib.Path
            ``metrics.csv`` first, then the plots.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        frame = self.metrics_frame()
        written = [write_frame_csv(frame, directory / "metrics.csv")]
        for comparison, (fixed, series) in _PUBLISH_LAYOUT.items():
            if frame[comparison].nunique(dropna=False) < 2:
                continue
            written += self.compare(fixed, comparison, directory, series_column=series)
        return written


class MIAttackReport(BinaryLabelAttackReport):
    """:class:`BinaryLabelAttackReport` of membership-inference results only.

    References
    ----------
    .. [1] Houssiau, F., et al. "TAPAS: a Toolbox for Adversarial Privacy Auditing of
       Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    """

    required_kind = "membership"


class AIAttackReport(BinaryLabelAttackReport):
    """:class:`BinaryLabelAttackReport` of (binary) attribute-inference results only.

    The table has a ``sensitive_attribute`` column, read from
    ``result.parameters["sensitive_attribute"]`` (or ``result.sensitive_attribute``).

    References
    ----------
    .. [1] Houssiau, F., et al. "TAPAS: a Toolbox for Adversarial Privacy Auditing of
       Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    """

    required_kind = "attribute"


def write_frame_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write a DataFrame as CSV atomically (no index), no text cell starting a formula.

    Through :func:`privaudit.results.write_csv`: a target named ``=HYPERLINK(...)`` is
    written ``'=HYPERLINK(...)`` (OWASP's rule); numbers stay numbers.
    """
    return write_csv(frame, path)
