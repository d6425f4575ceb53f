"""Figures of the reports: ROC curves, score histograms, metric comparisons.

matplotlib is imported inside the functions (through :func:`new_figure`), never at module
import, so that ``import privaudit`` stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import privaudit.metrics as pm
from privaudit.report._common import (
    artefact_key,
    artefact_name,
    attack_label,
    is_finite,
    metric_label,
    new_figure,
)
from privaudit.results import AttackResult

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["closeness_figure", "comparison_figure", "curve_labels", "histogram_figure",
           "roc_figure", "tick_label"]

MEMBER_COLOR = "#d1495b"
NON_MEMBER_COLOR = "#00798c"
_LINESTYLES = ("-", "--", "-.", ":")


def _style(ax: Axes) -> None:
    ax.grid(True, color="#e3e3e3", linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def roc_figure(
    results: Sequence[AttackResult],
    *,
    aucs: Sequence[float] | None = None,
    title: str | None = None,
) -> Figure:
    """ROC curves of ``results`` on linear axes (left) and log-log axes (right).

    Membership and attribute inference are never drawn on one pair of axes (their rates
    are of different positives: members, or records with the sensitive value): with both
    kinds, each gets its own row of panels. Each curve is named by its attack (and the
    attribute it infers); when the results audit several artefacts, by the artefact too
    (:func:`~privaudit.report.artefact_name`: target, generator, dataset), so that the
    copier's and the DP generator's attacks on one record are told apart.

    Parameters
    ----------
    results : sequence of AttackResult
    aucs : sequence of float, optional
        AUCs for the legend, when already computed (else computed with
        :func:`privaudit.metrics.roc_auc`).
    title : str, optional
        Figure title; by default the artefact's name when all results audit one.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The log-log view shows the low-FPR regime, where a few records are exposed with high
    confidence and which the AUC averages away. No empirical rate below ``1/n`` can be
    observed, so the axes start at one over the largest class size and rates of zero are
    drawn at that floor.

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022.
    """
    if aucs is None:
        aucs = [pm.roc_auc(r.labels, r.scores) for r in results]
    labels = curve_labels(results, aucs)
    if title is None and len({artefact_key(r) for r in results}) == 1:
        title = artefact_name(results[0]) if artefact_key(results[0]) != ("", "", "") else None
    kinds = list(dict.fromkeys(r.kind for r in results))
    rows = [[i for i, r in enumerate(results) if r.kind == kind] for kind in kinds]
    heights = [_PANEL_HEIGHT + _legend_height([labels[i] for i in row]) for row in rows]
    fig = new_figure(_WIDTH, sum(heights) + (0.4 if title else 0.0))
    subfigs = fig.subfigures(len(rows), 1, squeeze=False, height_ratios=heights).ravel()
    for subfig, kind, row in zip(subfigs, kinds, rows, strict=True):
        _roc_panels(subfig, [results[i] for i in row], [labels[i] for i in row])
        if len(rows) > 1:
            subfig.suptitle(_KIND_TITLES.get(kind, kind), fontsize=11)
    if title:
        fig.suptitle(title, fontsize=13)
    return fig


_WIDTH, _PANEL_HEIGHT = 12.0, 5.2
#: Inches per legend line and per character of a legend entry, at font size 8.
_LINE_HEIGHT, _CHAR_WIDTH = 0.17, 0.062


def _inline_legend(labels: Sequence[str]) -> bool:
    """Whether the legend fits inside the linear panel without hiding the curves."""
    return len(labels) <= _INLINE_LEGEND and max(map(len, labels), default=0) <= 40


def _legend_columns(labels: Sequence[str]) -> int:
    """As many columns as the longest entry lets fit across the figure (1 to 3)."""
    longest = max(map(len, labels), default=1) * _CHAR_WIDTH + 0.6
    return int(min(3, max(1, _WIDTH // longest)))


def _legend_height(labels: Sequence[str]) -> float:
    """Inches the legend below the panels needs (0 when it sits inside)."""
    if _inline_legend(labels):
        return 0.0
    return (math.ceil((len(labels) + 1) / _legend_columns(labels)) + 1) * _LINE_HEIGHT


#: Legends of at most this many curves sit inside the linear panel; longer ones below.
_INLINE_LEGEND = 6
_KIND_TITLES = {"membership": "Membership inference (positives: members)",
                "attribute": "Attribute inference (positives: records with the sensitive "
                             "value)"}


def curve_labels(results: Sequence[AttackResult], aucs: Sequence[float]) -> list[str]:
    """Legend entries: attack (and attribute), the artefact when several, and the AUC."""
    several = len({artefact_key(r) for r in results}) > 1
    out = []
    for result, auc in zip(results, aucs, strict=True):
        name = attack_label(result)
        if several:
            name = f"{name} on {artefact_name(result)}"
        auc_text = f"AUC {auc:.3f}" if auc is not None and math.isfinite(auc) else (
            "AUC undefined")
        out.append(f"{name} ({auc_text})")
    return out


def _roc_panels(fig: Any, results: Sequence[AttackResult], labels: Sequence[str]) -> None:
    """The linear and log-log panels of one kind of inference, with their legend."""
    from matplotlib import colormaps

    ax_lin, ax_log = fig.subplots(1, 2)
    floor_x = 1.0 / max(max(r.n_non_members for r in results), 1)
    floor_y = 1.0 / max(max(r.n_members for r in results), 1)
    palette = colormaps["tab10"].colors
    for i, (result, label) in enumerate(zip(results, labels, strict=True)):
        curve = pm.roc_curve(result.labels, result.scores, drop_intermediate=True)
        if not np.all(np.isfinite(curve.fpr)) or not np.all(np.isfinite(curve.tpr)):
            continue  # one class only: no curve to draw
        style = {"color": palette[i % len(palette)], "linewidth": 1.6,
                 "linestyle": _LINESTYLES[(i // len(palette)) % len(_LINESTYLES)]}
        ax_lin.plot(curve.fpr, curve.tpr, label=label, **style)
        ax_log.plot(np.maximum(curve.fpr, floor_x), np.maximum(curve.tpr, floor_y),
                    label=label, **style)
    for ax in (ax_lin, ax_log):
        _style(ax)
        ax.set_xlabel("False positive rate")
        ax.set_ylabel("True positive rate")
    ax_lin.plot([0, 1], [0, 1], color="#888888", linestyle=":", linewidth=1,
                label="random guess")
    ax_lin.set_xlim(0, 1)
    ax_lin.set_ylim(0, 1.01)
    ax_lin.set_title("Linear axes")
    low = min(floor_x, floor_y)
    ax_log.plot([low, 1], [low, 1], color="#888888", linestyle=":", linewidth=1)
    ax_log.set_xscale("log")
    ax_log.set_yscale("log")
    ax_log.set_xlim(floor_x, 1)
    ax_log.set_ylim(floor_y, 1.05)
    ax_log.set_title("Log-log axes (low false-positive rates)")
    handles, names = ax_lin.get_legend_handles_labels()
    if _inline_legend(labels):
        ax_lin.legend(handles, names, loc="lower right", fontsize=8, frameon=True)
    else:
        fig.legend(handles, names, loc="outside lower center", fontsize=8, frameon=False,
                   ncols=_legend_columns(labels))


def tick_label(value: float, digits: int = 2) -> str:
    """A tick label with ``digits`` significant digits: ``0.0539871`` -> ``"0.054"``.

    Long labels (``0.0539871...``) overlap on a crowded axis; a few significant digits
    tell ticks apart. Integers stay whole (``12``), large and tiny numbers go to
    scientific notation.
    """
    if not math.isfinite(value):
        return "∞" if value > 0 else ("-∞" if value < 0 else "—")
    if value == int(value) and abs(value) < 1e6:
        return f"{int(value)}"
    return f"{value:.{digits}g}"


def histogram_figure(result: AttackResult, *, auc: float | None = None) -> Figure:
    """Histograms of the scores of members and non-members of one result.

    Titled by the attack and, on a second line, the artefact
    (:func:`~privaudit.report.artefact_name`: target, generator, dataset), so that the
    histograms of one record under two generators are told apart.

    Each class is drawn as shares of its records (each sums to one, whatever the class
    sizes), on shared bins over the central 99.5% of all scores; the few scores beyond are
    clipped into the end bins and counted in the legend. Heavy-tailed scores (e.g. minus
    a loss, which spans orders of magnitude) get a symmetric-log axis, on which both
    classes stay visible.
    """
    from matplotlib.scale import SymmetricalLogTransform

    scores = result.scores
    member = scores[result.labels == 1]
    non_member = scores[result.labels == 0]
    low, q25, q75, high = (float(q) for q in np.quantile(scores, [0.0025, 0.25, 0.75, 0.9975]))
    if not high > low:
        low, high = float(scores.min()), float(scores.max())
    if not high > low:
        low, high = low - 0.5, high + 0.5
    # Heavy tails: a normal sample spans about 4 IQRs over its central 99.5%, so 20 means
    # far more; or one-signed scores over more than 3 decades (minus a loss: members near
    # 0, non-members far below), whose members a linear axis crushes into one bin.
    central = np.clip(scores, low, high)  # never empty, unlike a mask on tiny inputs
    magnitudes = np.abs(central)
    m05, m95 = (float(q) for q in np.quantile(magnitudes, [0.05, 0.95]))
    one_signed = bool(np.all(central <= 0) or np.all(central >= 0))
    symlog = bool(
        (q75 > q25 and (high - low) > 20 * (q75 - q25))
        or (one_signed and m95 > 1000 * max(m05, 1e-300))
    )
    if symlog:
        linthresh = max(m05, (high - low) * 1e-12)
        transform = SymmetricalLogTransform(10, linthresh, 1.0)
        ends = transform.transform(np.array([low, high]))
        bins = transform.inverted().transform(np.linspace(ends[0], ends[1], 31))
    else:
        bins = np.linspace(low, high, 31)
    if result.kind == "attribute":
        names = ("sensitive value = 1", "sensitive value = 0")
        likely = "more likely the sensitive value"
    else:
        names = ("members", "non-members")
        likely = "more likely member"

    fig = new_figure(6.0, 3.4)
    ax = fig.subplots()
    _style(ax)
    for values, name, color in ((non_member, names[1], NON_MEMBER_COLOR),
                                (member, names[0], MEMBER_COLOR)):
        if values.size == 0:
            continue
        outside = int(np.sum((values < low) | (values > high)))
        label = f"{name} (n={values.size:,}" + (f", {outside} clipped)" if outside else ")")
        shown = np.clip(values, bins[0], bins[-1])
        weights = np.full(values.size, 1.0 / values.size)
        ax.hist(shown, bins=bins, weights=weights, color=color, alpha=0.35, label=label)
        ax.hist(shown, bins=bins, weights=weights, color=color, histtype="step",
                linewidth=1.4)
    if symlog:
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.set_xlim(bins[0], bins[-1])
        ticks = [t for t in ax.get_xticks() if bins[0] <= t <= bins[-1]]
        if len(ticks) > 7:
            # Keep 0 (when shown) and thin the decades so labels do not overlap.
            step = math.ceil(len(ticks) / 7)
            zero = [t for t in ticks if t == 0]
            ticks = sorted(set(ticks[::-step]) | set(zero))
            ax.set_xticks(ticks)
        ax.set_xlabel(f"score (higher = {likely}; symmetric log scale)")
    else:
        ax.set_xlabel(f"score (higher = {likely})")
    ax.set_ylabel("share of records")
    # Headroom above the bars for the legend.
    ax.set_ylim(0, ax.get_ylim()[1] * 1.28)
    auc_value = auc if auc is not None else pm.roc_auc(result.labels, result.scores)
    subtitle = f"AUC {auc_value:.3f}" if auc_value is not None and math.isfinite(
        auc_value) else "AUC undefined"
    ax.set_title(f"{attack_label(result)}\n{artefact_name(result)}  ·  {subtitle}",
                 fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", ncols=2)
    return fig


def closeness_figure(result: Any) -> Figure:
    """Histogram of a closeness check's values: synthetic rows beside holdout rows.

    For a :class:`~privaudit.results.ProximityResult` with ``statistic="quantile"`` (DCR,
    NNDR): each group as shares of its rows on shared bins, its quantile marked by a
    dashed line. Synthetic rows piled up near 0, left of the holdout's, sit on training
    records.
    """
    groups = [("synthetic rows", result.synthetic, MEMBER_COLOR)]
    if result.baseline is not None:
        groups.insert(0, ("holdout rows (baseline)", result.baseline, NON_MEMBER_COLOR))
    finite = np.concatenate([v[~np.isnan(v)] for _, v, _ in groups])
    high = float(np.quantile(finite, 0.995)) if finite.size else 1.0
    bins = np.linspace(0.0, high if high > 0 else 1.0, 31)
    fig = new_figure(6.0, 3.2)
    ax = fig.subplots()
    _style(ax)
    for name, values, color in groups:
        values = values[~np.isnan(values)]
        if values.size == 0:
            continue
        weights = np.full(values.size, 1.0 / values.size)
        shown = np.clip(values, bins[0], bins[-1])
        ax.hist(shown, bins=bins, weights=weights, color=color, alpha=0.35,
                label=f"{name} (n={values.size:,})")
        ax.hist(shown, bins=bins, weights=weights, color=color, histtype="step", linewidth=1.4)
        ax.axvline(float(np.quantile(values, result.quantile)), color=color, linestyle="--",
                   linewidth=1.2)
    label = {"dcr": "distance to the closest training record (Gower)",
             "nndr": "nearest / second-nearest training distance",
             "text_memorization": "1 - cosine similarity to the closest training text"
             }.get(result.metric,
                                                                        result.metric)
    ax.set_xlabel(f"{label}; dashed: {result.quantile:.0%} quantile")
    ax.set_ylabel("share of rows")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)
    generator = getattr(result, "generator", "") or ""
    ax.set_title(f"{result.name} ({generator})" if generator else result.name, fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", ncols=2)
    return fig


def comparison_figure(
    frame: pd.DataFrame,
    *,
    comparison_column: str,
    series_column: str,
    metric_columns: Sequence[str],
    title: str,
    series_title: str | None = None,
) -> Figure | None:
    """Bars of each metric across ``comparison_column``, one bar per series.

    Error bars show the ``<metric>_low`` / ``<metric>_high`` columns where they are
    finite. Metrics with no finite value in ``frame`` are left out; returns ``None`` when
    none is left.
    """
    from matplotlib import colormaps

    columns = [c for c in metric_columns
               if any(is_finite(v) for v in frame[c].tolist())]
    if not columns:
        return None
    comparisons = list(dict.fromkeys(frame[comparison_column].tolist()))
    series = list(dict.fromkeys(frame[series_column].tolist()))
    ncols = min(3, len(columns))
    nrows = math.ceil(len(columns) / ncols)
    width = max(4.2 * ncols, 0.9 * len(comparisons) * ncols)
    fig = new_figure(width, 3.0 * nrows + 0.9)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    palette = colormaps["tab10"].colors
    bar_width = 0.8 / max(len(series), 1)
    x = np.arange(len(comparisons))
    for ax, column in zip(axes, columns, strict=False):
        _style(ax)
        for j, name in enumerate(series):
            sub = frame[frame[series_column] == name]
            heights = np.full(len(comparisons), np.nan)
            lows = np.full(len(comparisons), np.nan)
            highs = np.full(len(comparisons), np.nan)
            for _, row in sub.iterrows():
                i = comparisons.index(row[comparison_column])
                heights[i] = _as_float(row[column])
                lows[i] = _as_float(row.get(f"{column}_low"))
                highs[i] = _as_float(row.get(f"{column}_high"))
            offset = (j - (len(series) - 1) / 2) * bar_width
            finite = np.isfinite(heights)
            ax.bar(x + offset, np.where(finite, heights, 0.0), width=bar_width * 0.92,
                   color=palette[j % len(palette)], label=name or "(unnamed)")
            for xi in (x + offset)[np.isposinf(heights)]:
                # An infinite value (e.g. effective epsilon with no false positive) has no
                # bar height: mark it at the top of the panel instead.
                ax.annotate("∞", (xi, 0.98), xycoords=("data", "axes fraction"),
                            ha="center", va="top", fontsize=13,
                            color=palette[j % len(palette)])
            has_ci = np.isfinite(lows) & np.isfinite(highs) & np.isfinite(heights)
            if np.any(has_ci):
                err = np.vstack([np.maximum(heights - lows, 0), np.maximum(highs - heights, 0)])
                ax.errorbar((x + offset)[has_ci], heights[has_ci], yerr=err[:, has_ci],
                            fmt="none", ecolor="#333333", elinewidth=1, capsize=3)
        chance = _chance_level(column)
        if chance is not None:
            ax.axhline(chance, color="#888888", linestyle=":", linewidth=1)
        ax.set_title(metric_label(column), fontsize=10)
        ax.set_xticks(x, [c or "(unnamed)" for c in comparisons],
                      rotation=20 if max(len(str(c)) for c in comparisons) > 8 else 0,
                      ha="right" if max(len(str(c)) for c in comparisons) > 8 else "center",
                      fontsize=8)
        ax.set_xlabel(comparison_column, fontsize=9)
    for ax in axes[len(columns):]:
        ax.set_visible(False)
    if len(series) > 1 or (series and series[0]):
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(series), 5),
                   fontsize=8, frameon=False, title=series_title or series_column,
                   title_fontsize=8)
    fig.suptitle(title, fontsize=12)
    return fig


def _as_float(value: Any) -> float:
    return float(value) if is_finite(value) else math.nan


def _chance_level(column: str) -> float | None:
    """What a random guess scores on ``column``, drawn as a dotted line."""
    if column == "auc":
        return 0.5
    if column.startswith("tpr_at_fpr_"):
        return float(column[len("tpr_at_fpr_"):])
    return None
