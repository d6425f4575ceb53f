"""Machine-unlearning audits, reported as Apollo's paper does (Tang, Joshi and Kundu).

For results of an unlearning audit (``result.audit.kind == "unlearning"``; labels 1 = a
forgotten record, 0 = a record never trained on): one column per unlearning algorithm
(``parameters["method"]``, else the target's name), one row per attack, each cell the
attack's TPR at the lowest non-zero FPR the column's Apollo result reaches, never below
one never-seen record (the paper's "TPR@FPR" cells, e.g. ``18.0@6.0%``), with precision,
recall and the AUC beside it, and each column's verdict (the page's own,
:func:`~privaudit.report._verdict.result_verdict`); the paper's CIFAR-10 values (its
Table II) in a second table for comparison; one figure of log-log ROC curves with a panel
per algorithm; and, for Apollo results that kept their search trajectories, one figure of
TPR - FPR over the UNDER and OVER search radii (its Figure 5) with a panel per algorithm
and attack. Exact retraining (RT) is the reference: the section says whether any attack
measures leakage on it, draws no heatmap for it, and its finding is ``"baseline"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import privaudit.metrics as pm
from privaudit.report._common import artefact_name, figure_png, new_figure, png_data_uri
from privaudit.report._format import cell, fmt
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._sections_membership import verdict_metric
from privaudit.report._verdict import (
    Verdict,
    result_verdict,
    severity_rank,
    target_verdict,
)
from privaudit.results import AttackResult, result_type_of

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = [
    "PAPER_CIFAR10",
    "UnlearningSection",
    "algorithm_of",
    "format_tpr_at_fpr",
    "is_unlearning_result",
    "operating_point",
    "rt_sanity",
    "unlearning_findings",
    "unlearning_table",
]

#: Attacks in the paper's row order; others follow alphabetically.
ATTACK_ORDER: tuple[str, ...] = ("u-mia", "u-lira", "apollo", "apollo-offline")
ATTACK_LABELS: dict[str, str] = {"u-mia": "U-MIA", "u-lira": "U-LiRA", "apollo": "Apollo",
                                 "apollo-offline": "Apollo (Off)"}
#: Approximate algorithms in the paper's column order; unknown names follow, RT comes last.
ALGORITHM_ORDER: tuple[str, ...] = ("GA", "FT", "BT", "SCRUB", "SalUn", "SFR-on")
REFERENCE = "RT"
PAPER_ALGORITHMS: tuple[str, ...] = (*ALGORITHM_ORDER, REFERENCE)

#: Tang, Joshi and Kundu's Table II (CIFAR-10, ResNet-18, 200 forgotten + 200 test
#: records, 32 shadows): per attack and algorithm, (TPR %, FPR %).
PAPER_CIFAR10: dict[str, dict[str, tuple[float, float]]] = {
    "u-mia": {"GA": (16.5, 6.0), "FT": (11.5, 9.5), "BT": (95.0, 2.5), "SCRUB": (9.0, 4.0),
              "SalUn": (15.5, 4.5), "SFR-on": (3.0, 2.5), "RT": (5.5, 4.5)},
    "u-lira": {"GA": (68.5, 6.0), "FT": (6.5, 9.5), "BT": (28.0, 2.5), "SCRUB": (6.0, 4.0),
               "SalUn": (20.0, 4.5), "SFR-on": (2.5, 2.5), "RT": (4.0, 4.5)},
    "apollo": {"GA": (18.0, 6.0), "FT": (6.5, 9.5), "BT": (4.0, 2.5), "SCRUB": (21.5, 4.0),
               "SalUn": (4.5, 4.5), "SFR-on": (10.0, 2.5), "RT": (5.0, 4.5)},
    "apollo-offline": {"GA": (16.0, 6.0), "FT": (6.5, 9.5), "BT": (3.0, 2.5),
                       "SCRUB": (15.0, 4.0), "SalUn": (7.5, 4.5), "SFR-on": (5.0, 2.5),
                       "RT": (7.0, 4.5)},
}
#: Slack when comparing an FPR with the operating FPR (both are ratios of counts).
_TOL = 1e-12


def is_unlearning_result(result: Any) -> bool:
    """Whether ``result`` is an attack on an unlearned model (this section's results).

    The section draws their ROC curves (a panel per algorithm) and judges them; the
    page's generic ROC and histogram figures can leave them out with this test.
    """
    return result_type_of(result) == "attack" and result.audit_kind == "unlearning"


_is_unlearning = is_unlearning_result


def algorithm_of(result: AttackResult) -> str:
    """The unlearning algorithm a result audits: ``parameters["method"]``, else the target."""
    method = result.parameters.get("method")
    return method if isinstance(method, str) and method else (result.target or "—")


def paper_attack_name(attack: str) -> str:
    """The paper's name of an attack (``"u-lira"`` -> ``"U-LiRA"``)."""
    return ATTACK_LABELS.get(attack, attack or "—")


def _attack_key(attack: str) -> tuple[int, str]:
    rank = ATTACK_ORDER.index(attack) if attack in ATTACK_ORDER else len(ATTACK_ORDER)
    return rank, attack


def _algorithm_key(algorithm: str) -> tuple[int, int, str]:
    if algorithm == REFERENCE:
        return 2, 0, ""
    if algorithm in ALGORITHM_ORDER:
        return 0, ALGORITHM_ORDER.index(algorithm), ""
    return 1, 0, algorithm


def format_tpr_at_fpr(tpr: float, fpr: float) -> str:
    """The paper's cell: ``format_tpr_at_fpr(0.18, 0.06)`` -> ``"18.0@6.0%"``."""
    if not (math.isfinite(tpr) and math.isfinite(fpr)):
        return "—"
    return f"{tpr * 100:.1f}@{fpr * 100:.1f}%"


# ---------------------------------------------------------------------- ROC points
def _roc(result: AttackResult) -> tuple[np.ndarray, np.ndarray] | None:
    """Every ROC point of ``result`` (one per distinct score), or None with one class."""
    if result.n_members == 0 or result.n_non_members == 0:
        return None
    curve = pm.roc_curve(result.labels, result.scores, drop_intermediate=False)
    return curve.fpr, curve.tpr


def smallest_positive_fpr(result: AttackResult) -> float:
    """The lowest non-zero FPR among the ROC points of ``result`` (NaN with one class)."""
    points = _roc(result)
    if points is None:
        return math.nan
    positive = points[0][points[0] > 0]
    return float(positive.min()) if positive.size else math.nan


def operating_point(result: AttackResult, fpr: float) -> dict[str, float]:
    """The ROC point of ``result`` with the best TPR at FPR <= ``fpr``.

    Among the points with the same best TPR, the one with the lowest FPR (the highest
    precision).

    Parameters
    ----------
    result : AttackResult
    fpr : float
        The highest admissible false positive rate.

    Returns
    -------
    dict
        ``tpr`` (= recall), ``fpr`` (the point's own FPR), ``precision`` (TP / (TP + FP),
        NaN when nothing is flagged), ``tp`` and ``fp`` (counts); all NaN when ``fpr`` is
        NaN or the result has one class only.
    """
    points = _roc(result)
    nan = {"tpr": math.nan, "fpr": math.nan, "precision": math.nan, "tp": math.nan,
           "fp": math.nan}
    if points is None or not math.isfinite(fpr):
        return nan
    fprs, tprs = points
    ok = np.flatnonzero(fprs <= fpr + _TOL)  # never empty: the point (0, 0) is there
    best = ok[np.lexsort((fprs[ok], -tprs[ok]))[0]]
    tp = round(float(tprs[best]) * result.n_members)
    fp = round(float(fprs[best]) * result.n_non_members)
    return {"tpr": float(tprs[best]), "fpr": float(fprs[best]),
            "precision": tp / (tp + fp) if tp + fp else math.nan, "tp": tp, "fp": fp}


# ---------------------------------------------------------------------- the table
def _columns(results: Sequence[AttackResult], indices: Sequence[int]
             ) -> dict[str, list[int]]:
    """Result indices per column, columns in the paper's order.

    A column is an algorithm; when one algorithm was audited on several targets, each
    target gets its own column (``"GA · model-b"``).
    """
    by_algorithm: dict[str, list[int]] = {}
    for i in indices:
        by_algorithm.setdefault(algorithm_of(results[i]), []).append(i)
    columns: dict[str, list[int]] = {}
    for algorithm in sorted(by_algorithm, key=_algorithm_key):
        members = by_algorithm[algorithm]
        targets = list(dict.fromkeys(results[i].target for i in members))
        if len(targets) == 1:
            columns[algorithm] = members
            continue
        for target in targets:
            columns[f"{algorithm} · {target}"] = [i for i in members
                                                 if results[i].target == target]
    return columns


def resolvable_fpr(result: AttackResult) -> float:
    """The smallest FPR the never-seen records of ``result`` measure: one of them, 1 / n.

    A TPR at a lower FPR cannot be measured (with 100 never-seen records, "0.1% FPR" means
    flagging a tenth of one); NaN without never-seen records.
    """
    n = result.n_non_members
    return 1.0 / n if n else math.nan


def _lowest_fpr(results: Sequence[AttackResult], members: Sequence[int]
                ) -> tuple[float, str]:
    for attack in ("apollo", "apollo-offline"):
        found = next((i for i in members if results[i].attack == attack), None)
        if found is not None:
            fpr = smallest_positive_fpr(results[found])
            if math.isfinite(fpr):
                return fpr, attack
    fprs = [smallest_positive_fpr(results[i]) for i in members]
    finite = [f for f in fprs if math.isfinite(f)]
    return (min(finite), "any") if finite else (math.nan, "any")


def _column_floor(results: Sequence[AttackResult], members: Sequence[int]) -> float:
    """The smallest FPR every result of a column resolves (NaN: none has never-seen ones)."""
    floors = [resolvable_fpr(results[i]) for i in members]
    return max((f for f in floors if math.isfinite(f)), default=math.nan)


def _column_fpr(results: Sequence[AttackResult], members: Sequence[int]
                ) -> tuple[float, str]:
    """The column's operating FPR and where it comes from.

    The lowest non-zero FPR of the column's Apollo result (``"apollo"``, else
    ``"apollo-offline"``), else of any of its results (``"any"``); raised to the
    smallest FPR every result of the column resolves (``"resolution"``: a result with
    fewer never-seen records than the others), so that no cell is read below one of its
    own never-seen records.
    """
    fpr, source = _lowest_fpr(results, members)
    floor = _column_floor(results, members)
    if math.isfinite(fpr) and math.isfinite(floor) and fpr < floor - _TOL:
        return floor, "resolution"
    return fpr, source


def _cell(results: Sequence[AttackResult], index: int, metrics: dict[str, Any],
          target_fpr: float) -> dict[str, Any]:
    result = results[index]
    point = operating_point(result, target_fpr)
    return {"index": index, "attack": result.attack, "target": result.target,
            "tpr": point["tpr"], "recall": point["tpr"], "fpr": target_fpr,
            "achieved_fpr": point["fpr"], "precision": point["precision"],
            "tp": point["tp"], "fp": point["fp"],
            "text": format_tpr_at_fpr(point["tpr"], target_fpr),
            "auc": dict(metrics["auc"]), "n_members": result.n_members,
            "n_non_members": result.n_non_members,
            "queries_per_record": result.queries_per_record,
            "verdict": result_verdict(result, metrics)}


def _metric_dicts(results: Sequence[AttackResult], indices: Sequence[int],
                  metric_dicts: Sequence[dict[str, Any]] | None,
                  options: dict[str, Any]) -> dict[int, dict[str, Any]]:
    if metric_dicts is not None:
        return {i: metric_dicts[i] for i in indices}
    return {i: results[i].metrics(fprs=(), **options) for i in indices}


def unlearning_table(
    results: Sequence[Any],
    metric_dicts: Sequence[dict[str, Any]] | None = None,
    *,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> dict[str, Any]:
    """The paper's table of an unlearning audit: TPR at each algorithm's lowest FPR.

    Parameters
    ----------
    results : sequence
        Results of any kind; only attack results of an unlearning audit
        (``audit.kind == "unlearning"``) are read.
    metric_dicts : sequence of dict, optional
        ``results[i].metrics()`` for each result (as the HTML report computes them once);
        when None, computed here for the unlearning results with the options below.
    n_bootstrap, confidence, random_state
        Of the AUC's interval, when ``metric_dicts`` is None
        (see :meth:`AttackResult.metrics`).

    Returns
    -------
    dict
        ``columns``: one dict per algorithm (``name``, ``fpr``: the column's operating
        FPR, ``fpr_source``: ``"apollo"``, ``"apollo-offline"``, ``"any"`` or
        ``"resolution"``, ``resolvable_fpr``: the smallest FPR each of its results
        resolves, ``n_members``, ``n_non_members``) in the paper's order (RT last); ``rows``: one
        per attack (``attack``, ``label``, ``cells``: per column a dict or None) in the
        order U-MIA, U-LiRA, Apollo, Apollo (Off), then the others alphabetically. A cell
        holds ``text`` (``"18.0@6.0%"``), ``tpr`` = ``recall``, ``fpr`` (the column's),
        ``achieved_fpr`` (its point's own), ``precision``, ``tp``, ``fp``, ``auc``
        (``{"value", "low", "high"}``), ``n_members``, ``n_non_members``,
        ``queries_per_record`` (or None) and ``index`` (in ``results``). ``duplicates``
        lists the (column, attack) pairs given more than once (the first is shown).

    Notes
    -----
    The operating FPR of a column is the smallest non-zero FPR among the ROC points of its
    Apollo result (online, else offline; else of any of its results), never below one
    never-seen record of any of its results (:func:`resolvable_fpr`: a TPR at a lower FPR
    cannot be measured); each attack's TPR is the best it reaches at no more than that FPR,
    so the cells of a column compare the attacks at one false-positive budget, as in the
    paper's tables.

    References
    ----------
    .. [1] Tang, Y., Joshi, A. and Kundu, S. "Apollo: A Posteriori Label-Only Membership
       Inference Attack Towards Machine Unlearning." 2025.
    """
    results = list(results)
    indices = [i for i, r in enumerate(results) if _is_unlearning(r)]
    options = {"n_bootstrap": n_bootstrap, "confidence": confidence,
               "random_state": random_state}
    metrics = _metric_dicts(results, indices, metric_dicts, options)
    columns = _columns(results, indices)
    attacks = sorted({results[i].attack for i in indices}, key=_attack_key)
    out_columns, grid, duplicates = [], {a: [] for a in attacks}, []
    for name, members in columns.items():
        fpr, source = _column_fpr(results, members)
        out_columns.append({"name": name, "algorithm": algorithm_of(results[members[0]]),
                            "fpr": fpr, "fpr_source": source,
                            "resolvable_fpr": _column_floor(results, members),
                            "n_members": results[members[0]].n_members,
                            "n_non_members": results[members[0]].n_non_members})
        for attack in attacks:
            mine = [i for i in members if results[i].attack == attack]
            if len(mine) > 1:
                duplicates.append((name, attack))
            grid[attack].append(_cell(results, mine[0], metrics[mine[0]], fpr)
                                if mine else None)
    return {"columns": out_columns, "duplicates": duplicates,
            "rows": [{"attack": a, "label": paper_attack_name(a), "cells": grid[a]}
                     for a in attacks]}


def rt_sanity(table: dict[str, Any]) -> str | None:
    """A line on the exact-retraining (RT) column: whether any attack measures leakage on it.

    Each attack on RT is read by the page's verdict (:func:`result_verdict`, as every
    other result): a retrained model never saw the forgotten records, so a leakage level
    on it measures a difference between the two record sets (or too few records), and an
    AUC wholly below chance an artefact of the audit, not memory.

    Parameters
    ----------
    table : dict
        What :func:`unlearning_table` returns.

    Returns
    -------
    str or None
        The line, naming every attack's AUC and TPR@FPR on RT; None without an RT column.
    """
    at = next((j for j, c in enumerate(table["columns"]) if c["algorithm"] == REFERENCE),
              None)
    if at is None:
        return None
    cells = [(row["label"], row["cells"][at]) for row in table["rows"]
             if row["cells"][at] is not None]
    numbers = ", ".join(f"{label} AUC {fmt(c['auc']['value'], 2)} ({c['text']})"
                        for label, c in cells)
    leaking = [(label, c) for label, c in cells
               if severity_rank(c["verdict"].severity) > 0]
    flawed = [label for label, c in cells if c["verdict"].severity == "artefact"]
    head = "RT (exact retraining, the reference): "
    if not leaking and not flawed:
        return f"{head}no attack measures leakage on it, as it should be: {numbers}."
    parts = []
    if leaking:
        names = ", ".join(f"{label} ({c['verdict'].label.lower()})" for label, c in leaking)
        parts.append(f"{names} on a model that never saw the forgotten records: what they "
                     "separate is not left-over memory but a difference between the two "
                     "record sets (or too few records); read the other columns against RT, "
                     "not against chance.")
    if flawed:
        parts.append(f"{', '.join(flawed)} below chance: an artefact of the audit "
                     "(inverted scores, records on both sides or a leak in the split).")
    return f"{head}{' '.join(parts)} All: {numbers}."


def paper_rows() -> list[dict[str, Any]]:
    """The paper's CIFAR-10 table (Table II) as template rows, columns ``PAPER_ALGORITHMS``."""
    return [{"label": paper_attack_name(attack),
             "cells": [format_tpr_at_fpr(tpr / 100, fpr / 100)
                       for tpr, fpr in (values[a] for a in PAPER_ALGORITHMS)]}
            for attack, values in PAPER_CIFAR10.items()]


# ---------------------------------------------------------------------- figures
#: Resolution of the section's figures: small multiples read at this size, and every
#: figure of the page adds to its weight (issue 20: 21 images of this section, 1.9 MB).
FIGURE_DPI = 80
#: Panels per row of the ROC small multiples.
_ROC_COLUMNS = 4
#: At most this many labelled ticks per heatmap axis (more overlap on a small panel).
_MAX_TICKS = 4
#: Colour levels of the heatmaps (odd: the middle one, white, is centred on 0).
_HEAT_LEVELS = 11


def _style(ax: Axes) -> None:
    ax.grid(True, color="#e3e3e3", linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _attack_colours(attacks: Sequence[str]) -> dict[str, Any]:
    """One colour per attack, the same in every panel (in the table's row order)."""
    from matplotlib import colormaps

    palette = colormaps["tab10"].colors
    return {a: palette[i % len(palette)] for i, a in enumerate(sorted(set(attacks),
                                                                      key=_attack_key))}


def _floors(results: Sequence[AttackResult]) -> tuple[float, float]:
    """The lowest FPR and TPR any of ``results`` can show: one record of each side."""
    return (1.0 / max(max(r.n_non_members for r in results), 1),
            1.0 / max(max(r.n_members for r in results), 1))


def _roc_panel(ax: Axes, results: Sequence[AttackResult], colours: dict[str, Any],
               title: str, operating_fpr: float, floors: tuple[float, float]) -> None:
    """One algorithm's attacks on log-log axes, the diagonal and the column's FPR.

    ``floors`` (FPR, TPR) are those of every panel: the panels share their axes.
    """
    from matplotlib.ticker import NullLocator

    _style(ax)
    floor_x, floor_y = floors
    for result in results:
        points = _roc(result)
        if points is not None:
            ax.plot(np.maximum(points[0], floor_x), np.maximum(points[1], floor_y),
                    color=colours[result.attack], linewidth=1.3)
    low = min(floor_x, floor_y)
    ax.plot([low, 1], [low, 1], color="#888888", linestyle=":", linewidth=1)
    if math.isfinite(operating_fpr):
        ax.axvline(max(operating_fpr, floor_x), color="#b03a2e", linestyle="--",
                   linewidth=0.9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # minor log ticks: most of the drawing time
        axis.set_minor_locator(NullLocator())
    ax.set_xlim(floor_x * 0.8, 1)  # room for the operating FPR at the floor
    ax.set_ylim(floor_y, 1.05)
    ax.tick_params(labelsize=7)
    ax.set_title(title, fontsize=9)


def roc_grid_figure(panels: Sequence[tuple[str, Sequence[AttackResult], float]]
                    ) -> Figure:
    """Small multiples: one log-log ROC panel per unlearning algorithm, one legend.

    Parameters
    ----------
    panels : sequence of (title, results, operating FPR)
        One per column of the table (RT included: the reference to read the others
        against); each result is drawn once, in its attack's colour in every panel.

    Returns
    -------
    Figure
        Panels share their axes; the legend names the attacks, the dotted diagonal (a
        random guess) and the dashed line (the column's operating FPR).
    """
    from matplotlib.lines import Line2D

    colours = _attack_colours([r.attack for _, results, _ in panels for r in results])
    n_cols = min(_ROC_COLUMNS, len(panels))
    n_rows = math.ceil(len(panels) / n_cols)
    fig = new_figure(2.3 * n_cols + 0.2, 2.1 * n_rows + 0.5)
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, sharex=True, sharey=True)).ravel()
    floors = _floors([r for _, results, _ in panels for r in results])
    for ax, (title, results, fpr) in zip(axes, panels, strict=False):
        _roc_panel(ax, results, colours, title, fpr, floors)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax in axes[max(len(panels) - n_cols, 0):len(panels)]:
        ax.tick_params(labelbottom=True)  # no panel below: this one shows the x axis
    fig.supxlabel("False positive rate (never-seen records flagged)", fontsize=9)
    fig.supylabel("True positive rate (forgotten records found)", fontsize=9)
    handles = [Line2D([], [], color=c, linewidth=1.6, label=paper_attack_name(a))
               for a, c in colours.items()]
    handles += [Line2D([], [], color="#888888", linestyle=":", label="random guess"),
                Line2D([], [], color="#b03a2e", linestyle="--", label="column's FPR")]
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles),
               fontsize=8, frameon=False)
    return fig


def heatmap_grids(extra: Mapping[str, Any]) -> dict[str, Any] | None:
    """:func:`checked_heatmap` of ``extra["heatmap"]`` (the older way to pass it)."""
    return checked_heatmap(extra.get("heatmap"))


def checked_heatmap(heat: Any) -> dict[str, Any] | None:
    """An Apollo ``result.heatmap`` checked: radii and the T x T TPR / FPR grids.

    None when it is missing or unusable (no radii, no grid of the radii's size).
    """
    if not isinstance(heat, dict) or not isinstance(heat.get("radii"), list):
        return None
    radii = [float(r) for r in heat["radii"]]
    grids = {}
    for name in ("tpr", "fpr"):
        grid = heat.get(name)
        if grid is None:
            continue
        arr = np.asarray(grid, dtype=float)
        if arr.shape == (len(radii), len(radii)):
            grids[name] = arr
    return {"radii": radii, **grids} if grids else None


def format_radius(radius: float) -> str:
    """A search radius for a tick label, two significant digits (``0.05398`` -> ``0.054``).

    Fixed notation from 0.001 to 10 000 (``123.4`` -> ``"120"``), scientific outside.
    """
    if not math.isfinite(radius):
        return str(radius)
    return f"{float(f'{radius:.2g}'):g}"


def radius_ticks(radii: Sequence[float], max_ticks: int = _MAX_TICKS
                 ) -> tuple[list[int], list[str]]:
    """Positions (grid indices) and labels of at most ``max_ticks`` radius ticks.

    Evenly spaced from the first radius; labels by :func:`format_radius`, so that they
    fit side by side on a small panel.
    """
    step = max(1, math.ceil(len(radii) / max_ticks))
    ticks = list(range(0, len(radii), step))
    return ticks, [format_radius(radii[t]) for t in ticks]


def best_radii(grids: dict[str, Any]) -> dict[str, float]:
    """The radius pair where Apollo's search separates best: the largest TPR - FPR.

    Returns ``under`` and ``over`` (the radii), ``tpr``, ``fpr`` and ``gap`` (TPR - FPR)
    there; the first such pair in row order when several tie.
    """
    gap = grids["tpr"] - grids["fpr"]
    row, col = np.unravel_index(int(np.argmax(gap)), gap.shape)
    return {"under": grids["radii"][row], "over": grids["radii"][col],
            "tpr": float(grids["tpr"][row, col]), "fpr": float(grids["fpr"][row, col]),
            "gap": float(gap[row, col])}


def heatmap_figure(panels: Sequence[tuple[str, str, dict[str, Any]]]) -> Figure:
    """TPR - FPR of "UNDER at radius r_u or OVER at radius r_o", one panel per result.

    Parameters
    ----------
    panels : sequence of (algorithm, attack label, grids)
        Grids as :func:`heatmap_grids` returns them, with both ``tpr`` and ``fpr``.
        Columns of the figure are the algorithms, rows the attacks (Apollo, Apollo (Off)).

    Returns
    -------
    Figure
        Rows of a grid are UNDER radii, columns OVER radii (the paper's Figure 5). One
        diverging colour scale centred on 0 for every panel: red where the search flags
        forgotten records more often than never-seen ones, blue where less, white where
        it does not separate them (the paper shows TPR and FPR apart; their difference
        is what a reviewer compares, on one scale).
    """
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    algorithms = list(dict.fromkeys(p[0] for p in panels))
    attacks = list(dict.fromkeys(p[1] for p in panels))
    limit = max(max(float(np.abs(g["tpr"] - g["fpr"]).max()) for _, _, g in panels), 1e-6)
    norm = Normalize(vmin=-limit, vmax=limit)  # symmetric: white is 0
    # Discrete levels read off the colour bar, and survive a palette PNG unchanged.
    cmap = colormaps["RdBu_r"].resampled(_HEAT_LEVELS)
    fig = new_figure(1.9 * len(algorithms) + 1.0, 1.9 * len(attacks) + 0.6)
    # One set of tick labels per row and column when every search used the same radii.
    shared = all(g["radii"] == panels[0][2]["radii"] for _, _, g in panels)
    axes = fig.subplots(len(attacks), len(algorithms), squeeze=False, sharex=shared,
                        sharey=shared)
    for ax in axes.ravel():
        ax.set_visible(False)
    image = None
    for algorithm, attack, grids in panels:
        ax = axes[attacks.index(attack), algorithms.index(algorithm)]
        ax.set_visible(True)
        image = ax.imshow(grids["tpr"] - grids["fpr"], origin="lower", aspect="auto",
                          cmap=cmap, norm=norm, interpolation="nearest")
        ticks, labels = radius_ticks(grids["radii"])
        ax.set_xticks(ticks, labels, fontsize=7)
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_title(f"{algorithm}: {attack}", fontsize=9)
    for row, col in zip(*np.nonzero([[ax.get_visible() for ax in r] for r in axes]),
                        strict=True):
        if row + 1 == len(attacks) or not axes[row + 1, col].get_visible():
            axes[row, col].tick_params(labelbottom=True)  # the lowest panel of its column
    fig.supxlabel("OVER-unlearning search radius", fontsize=9)
    fig.supylabel("UNDER-unlearning search radius", fontsize=9)
    fig.colorbar(image, ax=axes, label="TPR − FPR", shrink=0.9)
    return fig


# ---------------------------------------------------------------------- the section
def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%" if math.isfinite(rate) else "—"


def _cell_view(c: dict[str, Any] | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"text": c["text"], "auc": cell(c["auc"]), "precision": fmt(c["precision"]),
            "recall": fmt(c["recall"]), "achieved_fpr": _percent(c["achieved_fpr"]),
            "counts": f"TP {c['tp']:.0f} · FP {c['fp']:.0f}"
            if math.isfinite(c["tp"]) else ""}


def queries_explanation(result: AttackResult) -> str | None:
    """What ``result.queries_per_record`` of an Apollo result counts, in one sentence.

    The labels the unlearned model returned during the attack, divided by the audited
    records (forgotten and never-seen); the calibration on a model playing the target and
    the shadows' own queries are not counted. With the search trajectories kept (for the
    heatmaps and the rule's ROC over ``tau``), both searches ask at every round: 2 x
    ``n_rounds`` (60 with the default 30 rounds). Otherwise a search asks only at rounds
    where the shadows' confidence reaches a new extreme, until the answer changes
    (Tang, Joshi and Kundu's Algorithm 1 needs no other label). None without a count.
    """
    count = result.queries_per_record
    if isinstance(count, bool) or not isinstance(count, (int, float)):
        return None
    rounds = result.parameters.get("n_rounds")
    counted = ("labels the unlearned model returned during the attack, divided by the "
               "records audited (forgotten and never-seen; the shadow models' queries are "
               "not counted)")
    if result.heatmap is not None:
        every = (f"each of the {rounds} rounds: 2 x {rounds} = {2 * rounds} per record"
                 if isinstance(rounds, int) else "every round")
        return (f"{counted}: the search trajectories were kept for the heatmaps, so both "
                f"searches (UNDER and OVER) asked at {every}.")
    kind = str(result.search_kind or "").upper()
    searches = "UNDER and OVER searches" if kind == "BOTH" else f"{kind or 'its'} search"
    return (f"{counted}: the {searches} asked only at rounds where the shadows' confidence "
            "reached a new extreme, until the answer changed (at most one query a round).")


def _queries_notes(table: dict[str, Any], results: Sequence[AttackResult]) -> list[str]:
    """The label queries per record of each attack and algorithm, and what they count.

    One note per meaning of the count (with or without search trajectories), naming
    every attack and algorithm it applies to.
    """
    by_meaning: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for row in table["rows"]:
        for col, c in zip(table["columns"], row["cells"], strict=True):
            meaning = None if c is None else queries_explanation(results[c["index"]])
            if meaning is not None:
                by_meaning.setdefault(meaning, {}).setdefault(
                    paper_attack_name(row["attack"]), []).append(
                    (col["name"], f"{c['queries_per_record']:.1f}"))
    return [f"Label queries per record ({_counts_text(rows)}) are the {meaning}"
            for meaning, rows in by_meaning.items()]


def _counts_text(rows: dict[str, list[tuple[str, str]]]) -> str:
    """``"Apollo: GA 60.0, FT 12.0"``, or ``"60.0 for Apollo on GA and FT"`` when one count."""
    counts = {count for pairs in rows.values() for _, count in pairs}
    if len(counts) == 1:
        columns = list(dict.fromkeys(name for pairs in rows.values() for name, _ in pairs))
        return (f"{counts.pop()} for {' and '.join(rows)} on "
                f"{', '.join(columns[:-1]) + ' and ' if len(columns) > 1 else ''}"
                f"{columns[-1]}")
    return "; ".join(f"{attack}: {', '.join(f'{n} {c}' for n, c in pairs)}"
                     for attack, pairs in rows.items())


def _notes(table: dict[str, Any], results: Sequence[AttackResult]) -> list[str]:
    notes = _queries_notes(table, results)
    notes += [f"{paper_attack_name(a)} on {name} was given more than once; the first is shown."
              for name, a in table["duplicates"]]
    return notes


def _png(fig: Figure) -> str:
    return png_data_uri(figure_png(fig, dpi=FIGURE_DPI))


def _column_results(table: dict[str, Any], results: Sequence[AttackResult]
                    ) -> list[tuple[dict[str, Any], list[AttackResult]]]:
    """Each column of the table with its results, each result once (the cells shown)."""
    return [(col, [results[row["cells"][j]["index"]] for row in table["rows"]
                   if row["cells"][j] is not None])
            for j, col in enumerate(table["columns"])]


def _heatmap_panels(columns: Sequence[tuple[dict[str, Any], list[AttackResult]]]
                    ) -> list[tuple[str, str, dict[str, Any]]]:
    """(algorithm, attack, grids) of every result with both grids, RT left out.

    RT is exact retraining, the reference: its search has nothing to find, and its own
    row in the table already says whether the attacks stay near chance on it.
    """
    return [(col["name"], paper_attack_name(r.attack), grids)
            for col, mine in columns if col["algorithm"] != REFERENCE
            for r in mine
            if (grids := checked_heatmap(r.heatmap)) is not None and {"tpr", "fpr"} <= set(grids)]


def _figures(table: dict[str, Any], results: Sequence[AttackResult],
             suffix: str) -> dict[str, Any]:
    """One ROC figure (a panel per algorithm) and one heatmap figure (a panel per result)."""
    columns = _column_results(table, results)
    panels = [(f"{col['name']} (reference)" if col["algorithm"] == REFERENCE
               else col["name"], mine, col["fpr"]) for col, mine in columns if mine]
    roc = ({"title": f"ROC curves per algorithm{suffix}",
            "src": _png(roc_grid_figure(panels))} if panels else None)
    heat_panels = _heatmap_panels(columns)
    heatmap = ({"title": f"Apollo's search radii{suffix}",
                "src": _png(heatmap_figure(heat_panels))} if heat_panels else None)
    best = [{"name": f"{algorithm}: {attack}", "under": format_radius(b["under"]),
             "over": format_radius(b["over"]), "tpr": _percent(b["tpr"]),
             "fpr": _percent(b["fpr"]), "gap": fmt(b["gap"], 2)}
            for algorithm, attack, grids in heat_panels for b in [best_radii(grids)]]
    return {"roc": roc, "heatmap": heatmap, "best_radii": best}


def _block(results: Sequence[AttackResult], metric_dicts: Sequence[dict[str, Any]],
           dataset: str) -> dict[str, Any]:
    table = unlearning_table(results, metric_dicts)
    answers = [f for f in unlearning_findings(results, metric_dicts)
               if f.severity != "artefact"]  # one answer per column, in the table's order
    columns = [{**c, "fpr_text": _percent(c["fpr"]), "answer": answer,
                "resolvable_text": _percent(c["resolvable_fpr"])}
               for c, answer in zip(table["columns"], answers, strict=True)]
    return {"dataset": dataset, "columns": columns,
            "rows": [{"label": r["label"], "cells": [_cell_view(c) for c in r["cells"]]}
                     for r in table["rows"]],
            "sanity": rt_sanity(table), "notes": _notes(table, results),
            **_figures(table, results, f" ({dataset})" if dataset else "")}


def unlearning_context(results: Sequence[Any], metric_dicts: Sequence[dict[str, Any]]
                       ) -> dict[str, Any]:
    """The template variables: one block per dataset audited, and the paper's table."""
    datasets: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        if _is_unlearning(r):
            datasets.setdefault(r.dataset, []).append(i)
    blocks = [_block([results[i] for i in idx], [metric_dicts[i] for i in idx], dataset)
              for dataset, idx in datasets.items()]
    return {"unlearning_blocks": blocks, "unlearning_paper_columns": list(PAPER_ALGORITHMS),
            "unlearning_paper_rows": paper_rows()}


# ---------------------------------------------------------------------- findings
def _verdicts(results: Sequence[AttackResult], metrics: Sequence[dict[str, Any]],
              members: Sequence[int]) -> dict[int, Verdict]:
    """Each result judged by the page's own rule (:func:`result_verdict`).

    A lift counts only at an FPR the never-seen records resolve and when it survives
    chance, then the AUC raises it; the section never contradicts the metrics table.
    """
    return {i: result_verdict(results[i], metrics[i]) for i in members}


def _reference_text(results: Sequence[AttackResult], metrics: Sequence[dict[str, Any]],
                    reference: Sequence[int], attack: str) -> str:
    """The same attack's AUC on exact retraining (RT), to read a column against."""
    same = next((i for i in reference if results[i].attack == attack), None)
    if same is None:
        return ""
    return (f" On exact retraining (RT), the reference that never saw the forgotten "
            f"records, {paper_attack_name(attack)} has AUC {fmt(metrics[same]['auc']['value'])}.")


def _finding(result: AttackResult, metrics: dict[str, Any], verdict: Verdict,
             **fields: Any) -> Finding:
    metric, interval, strength = verdict_metric(verdict, metrics)
    values = {"artefact": artefact_name(result), "kind": "unlearning",
              "severity": verdict.severity, "label": verdict.label,
              "attack": verdict.attack, "metric": metric, "interval": interval,
              "text": verdict.text, "section": "unlearning",
              "strength": strength if math.isfinite(strength) else 0.0}
    return Finding(**{**values, **fields})


def _column_findings(results: Sequence[AttackResult], metrics: Sequence[dict[str, Any]],
                     name: str, members: Sequence[int], reference: Sequence[int]
                     ) -> list[Finding]:
    """The column's answer (its strongest attack), then each artefact among its results."""
    verdicts = _verdicts(results, metrics, members)
    best = target_verdict(list(verdicts.values()))
    index = next(i for i, v in verdicts.items() if v is best)
    algorithm = algorithm_of(results[index])
    if algorithm == REFERENCE:
        answer = _finding(results[index], metrics[index], best, severity="baseline",
                          label="Reference (exact retraining)",
                          text=(f"{name}: exact retraining never saw the forgotten "
                                f"records, so no attack should tell them from never-seen "
                                f"ones (read 'members' as forgotten records); the "
                                f"strongest: {best.text} The other algorithms are read "
                                f"against it."))
    else:
        answer = _finding(results[index], metrics[index], best,
                          text=(f"Unlearned by {algorithm} ('members' are the forgotten "
                                f"records): {best.text}"
                                + _reference_text(results, metrics, reference,
                                                  best.attack)))
    flaws = [_finding(results[i], metrics[i], v, text=f"{name}: {v.text}")
             for i, v in verdicts.items() if v.severity == "artefact"]
    return [answer, *flaws]


def unlearning_findings(results: Sequence[Any], metric_dicts: Sequence[dict[str, Any]]
                        ) -> list[Finding]:
    """One :class:`Finding` per unlearned model: the verdict of its strongest attack.

    Parameters
    ----------
    results : sequence
        The page's attack results; only those of an unlearning audit are read.
    metric_dicts : sequence of dict
        ``results[i].metrics()`` for each result (as the page computes them once).

    Returns
    -------
    list of Finding
        Per dataset, one per column of the section's table (an algorithm, or an algorithm
        on one of several targets), in the table's order. The artefact is the unlearned
        model (:func:`~privaudit.report.artefact_name` of its results), the severity that
        of its strongest attack's verdict (:func:`result_verdict`), the text names the
        algorithm and the same attack's AUC on RT. Exact retraining (RT) is the reference:
        severity ``"baseline"`` (what an attack finds on it is evidence about the two record
        sets, not about left-over memory), never a leakage level. A result whose AUC lies
        wholly below chance adds its own ``"artefact"`` finding (a flaw of the audit to
        show beside the answer).
    """
    datasets: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        if _is_unlearning(r):
            datasets.setdefault(r.dataset, []).append(i)
    findings = []
    for indices in datasets.values():
        columns = _columns(results, indices)
        reference = [i for members in columns.values() for i in members
                     if algorithm_of(results[i]) == REFERENCE]
        for name, members in columns.items():
            findings += _column_findings(results, metric_dicts, name, members, reference)
    return findings


class UnlearningSection(ReportSection):
    """Attacks on unlearned models: TPR at each algorithm's lowest FPR, beside the paper."""

    name, title, order = "unlearning", "Machine unlearning", 48

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(_is_unlearning(r) for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        return unlearning_context(report.results, report.metric_dicts)

    def findings(self, report: ReportView) -> list[Finding]:
        """One finding per unlearned model, RT as the reference (:func:`unlearning_findings`)."""
        return unlearning_findings(report.results, report.metric_dicts)
