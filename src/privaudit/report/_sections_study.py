"""The overfitting study's section: measured numbers beside the seed paper's, and a reading.

For results of :func:`privaudit.studies.run_overfitting_study` (``result.study ==
"overfitting"``): per target, its generalisation gap, the loss attack's membership AUC,
the best attribute attack's accuracy on members and non-members with Yeom et al.'s
advantage, the theory's prediction (Theorem 3) and the values the source paper reports;
then a conclusion written from the numbers for each overfit / regularised pair: does
overfitting drive membership inference here, and attribute inference?
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import privaudit.metrics as pm
from privaudit.report._format import cell, fmt
from privaudit.report._section import ReportSection, ReportView
from privaudit.results import result_type_of

__all__ = ["StudySection", "study_conclusions", "study_rows"]

#: The source paper's values (IWPC warfarin regression, CIFAR-100 classification).
SEED_VALUES: dict[str, dict[str, float]] = {
    "regression-overfit": {"mia_auc": 0.99, "aia_accuracy": 0.94},
    "regression-regularised": {"mia_auc": 0.50, "aia_accuracy": 0.98},
    "classification-overfit": {"mia_auc": 0.86, "aia_accuracy": 0.353},
    "classification-regularised": {"mia_auc": 0.49, "aia_accuracy": 0.307},
}
#: An AUC this much above the regularised model's counts as "overfitting drives MIA".
_MIA_MARGIN = 0.1


def _in_study(result: Any) -> bool:
    return result_type_of(result) in ("attack", "attribute") and (
        result.study == "overfitting")


def _gap(result: Any) -> tuple[str, float]:
    """The target's generalisation gap: in R² (regression) or in accuracy."""
    if result.train_r2 is not None:
        return "R²", result.train_r2 - result.test_r2
    return "accuracy", _or_nan(result.train_accuracy) - _or_nan(result.test_accuracy)


def _or_nan(value: float | None) -> float:
    return float("nan") if value is None else value


def _theory_mia(gaussian: Any, metric: str, gap: float) -> float | None:
    """Yeom et al.'s prediction of the membership advantage.

    Regression: Theorem 3 from the measured error spreads (the Gaussian attack's extra).
    Classification: Theorem 2 with the 0-1 loss (bounded by B = 1): Adversary 1's
    advantage is the generalisation error, the gap in accuracy.
    """
    if gaussian is not None:
        return float(gaussian.theoretical_advantage)
    if metric == "accuracy" and np.isfinite(gap):
        return pm.bounded_loss_membership_advantage(float(np.clip(gap, -1, 1)), 1.0)
    return None


def study_rows(results: Sequence[Any]) -> list[dict[str, Any]]:
    """One row of numbers per study target, in the order the targets appear."""
    targets = list(dict.fromkeys(r.target for r in results if _in_study(r)))
    rows = []
    for target in targets:
        mine = [r for r in results if _in_study(r) and r.target == target]
        attacks = [r for r in mine if r.result_type == "attack"]
        loss = next((r for r in attacks if r.attack == "loss"), None)
        gaussian = next((r for r in attacks if r.theoretical_advantage is not None), None)
        colluding = next((r for r in attacks if r.attack == "colluding"), None)
        attrs = [r for r in mine if r.result_type == "attribute"]
        best = max(attrs, key=lambda r: r.accuracy().value, default=None)
        theorem5 = next((r for r in attrs if r.theory is not None), None)
        metric, gap = _gap(mine[0])
        rows.append({
            "target": target, "dataset": mine[0].dataset, "metric": metric, "gap": gap,
            "mia_auc": None if loss is None else pm.roc_auc(loss.labels, loss.scores),
            "mia_advantage": None if loss is None else pm.advantage(loss.labels,
                                                                    loss.scores),
            "theory_mia": _theory_mia(gaussian, metric, gap),
            "theory_name": "Thm 3" if gaussian is not None else "Thm 2",
            "attribute": None if best is None else best.sensitive_attribute,
            "n_values": None if best is None else len(best.candidates),
            "aia_attack": None if best is None else best.attack,
            "aia_members": None if best is None else best.accuracy(),
            "aia_non_members": None if best is None else best.accuracy(members=False),
            "aia_advantage": None if best is None else best.advantage(),
            "prior": None if best is None or "prior" not in best.model_free else
            best.model_free_accuracy("prior").value,
            "seed": SEED_VALUES.get(target, {}),
            # Theorem 5 beside the advantage of the adversary it is about (Adversary 4).
            "theory_aia": None if theorem5 is None else theorem5.theory[
                "predicted_advantage"],
            "theorem5_measured": None if theorem5 is None else theorem5.advantage(),
            "colluding_advantage": None if colluding is None else pm.advantage(
                colluding.labels, colluding.scores),
            # Theorem 4: 1 - mu - 2^(-mk), the chance that k pseudo-random labels all match.
            "colluding_theory": None if colluding is None else 1.0 - float(
                colluding.chance_match_rate or 0.0),
        })
    return rows


def _pairs(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    by_name = {r["target"]: r for r in rows}
    return [(r, by_name[r["target"].replace("-overfit", "-regularised")]) for r in rows
            if r["target"].endswith("-overfit")
            and r["target"].replace("-overfit", "-regularised") in by_name]


def study_conclusions(rows: list[dict[str, Any]]) -> list[str]:
    """A reading of each overfit / regularised pair, written from the numbers."""
    out = [_colluding_reading(r) for r in rows if r["colluding_advantage"] is not None]
    for over, reg in _pairs(rows):
        name = over["target"].removesuffix("-overfit")
        text = (f"{name} ({over['dataset']}): generalisation gap in {over['metric']} "
                f"{over['gap']:.2f} (overfit) vs {reg['gap']:.2f} (regularised). ")
        if over["mia_auc"] is not None and reg["mia_auc"] is not None:
            drives = over["mia_auc"] - reg["mia_auc"] >= _MIA_MARGIN
            text += (f"Membership inference: loss-attack AUC {over['mia_auc']:.2f} vs "
                     f"{reg['mia_auc']:.2f}: overfitting "
                     f"{'drives' if drives else 'does not drive'} it here. ")
        if over["aia_advantage"] is not None and reg["aia_advantage"] is not None:
            a, b = over["aia_advantage"], reg["aia_advantage"]
            leaks = a.low > 0 and a.value - b.value > 0
            text += (f"Attribute inference of {over['attribute']}: advantage (members minus "
                     f"non-members) {a.value:.3f} [{a.low:.3f}, {a.high:.3f}] vs "
                     f"{b.value:.3f} [{b.low:.3f}, {b.high:.3f}]; accuracy on members "
                     f"{over['aia_members'].value:.3f} vs {reg['aia_members'].value:.3f} "
                     f"(most common value: {over['prior']:.3f}). ")
            if over["theory_aia"] is not None:
                m = over["theorem5_measured"]
                text += (f"Theorem 5 predicts {over['theory_aia']:.3f} for Adversary 4 on the "
                         f"overfit model; measured {m.value:.3f} [{m.low:.3f}, {m.high:.3f}]. ")
            text += ("Overfitting drives it too: the overfit model tells its own members' "
                     "attribute better than anyone else's (Yeom et al.'s reading)."
                     if leaks else
                     "Overfitting does not make it work: the model reveals its members' "
                     "attribute no better than other people's (Zhao et al.'s reading).")
        out.append(text)
    return out


def _colluding_reading(row: dict[str, Any]) -> str:
    small_gap = abs(row["gap"]) < 0.1 and (row["mia_auc"] or 0.5) < 0.6
    return (f"{row['target']} ({row['dataset']}): trained by Yeom et al.'s colluding "
            f"algorithm, the model generalises (gap in {row['metric']} {row['gap']:.2f}, "
            f"loss-attack AUC {row['mia_auc']:.2f}) yet the colluding adversary's "
            f"membership advantage is {row['colluding_advantage']:.3f} (Theorem 4: "
            f"{row['colluding_theory']:.3f}). "
            + ("Overfitting is not necessary for membership leakage."
               if small_gap and row["colluding_advantage"] > 0.5 else
               "Here the model does not generalise well enough to make that point."))


def _view(row: dict[str, Any]) -> dict[str, Any]:
    def est(e: Any) -> dict[str, str]:
        return cell(None if e is None else e._asdict())

    seed = row["seed"]
    return {**row, "gap": fmt(row["gap"]), "mia_auc": fmt(row["mia_auc"]),
            "mia_advantage": fmt(row["mia_advantage"]), "theory_mia": fmt(row["theory_mia"]),
            "aia_members": est(row["aia_members"]),
            "aia_non_members": est(row["aia_non_members"]),
            "aia_advantage": est(row["aia_advantage"]), "prior": fmt(row["prior"]),
            "colluding_advantage": fmt(row["colluding_advantage"]),
            "theory_aia": fmt(row["theory_aia"]),
            "theorem5_measured": est(row["theorem5_measured"]),
            "seed_mia": fmt(seed.get("mia_auc")), "seed_aia": fmt(seed.get("aia_accuracy"))}


class StudySection(ReportSection):
    """Yeom et al. vs Zhao et al. on the user's machine: measured beside the paper.

    The section gives no findings (:meth:`ReportSection.findings`): its conclusions judge
    a hypothesis (does overfitting drive the attacks?), comparing two models, not how much
    one artefact leaks. Each study model's own answer comes from the sections that judge
    its results (membership verdicts of the metrics section, attribute inference), so it
    is counted once in the overview.
    """

    name, title, order = "study", "Overfitting study", 15

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(_in_study(r) for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        rows = study_rows(report.all_results)
        return {"study_rows": [_view(r) for r in rows],
                "study_conclusions": study_conclusions(rows)}
