"""The section of the HTML report for generator audits (``result.audit.kind == "generator"``).

TAPAS's two uses, on the results of :func:`privaudit.audit_generator`:

- **comparison**: per target record, each attack's AUC (with its interval) for every
  generator side by side, so a reader sees which generator leaks which record;
- **a claim put to the test**: per generator that claims differential privacy, the
  largest effective-epsilon lower bound over its targets and attacks (Clopper-Pearson,
  Jagielski et al.), each bound taken at a Bonferroni-corrected level so that the
  largest is valid at the stated confidence, beside the claimed epsilon
  (:func:`claim_checks`). A bound above the claim means the claim is false (with the
  stated confidence); a bound below it means these attacks could not refute it, which
  is not a proof that it holds.

References
----------
.. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for Adversarial
   Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
.. [2] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private Machine
   Learning: How Private is Private SGD?" NeurIPS 2020.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privaudit.report._format import cell, fmt, number
from privaudit.report._section import ReportSection, ReportView, register_section
from privaudit.results import AttackResult

__all__ = ["GeneratorSection", "claim_checks", "generator_context"]


def _is_generator(result: Any) -> bool:
    return isinstance(result, AttackResult) and result.audit.kind == "generator"


#: How the claim test corrects for taking the largest of many bounds.
CORRECTION = "Bonferroni"


def claim_checks(results: Sequence[AttackResult], *, confidence: float = 0.95,
                 validation_split: float = 0.1,
                 random_state: int | np.random.Generator | None = 0) -> list[dict[str, Any]]:
    """Per generator with a ``claimed_epsilon``: its largest corrected bound against the claim.

    A generator's claim is tested on every result that carries it: ``m`` = its targets x
    attacks (results scored out of fold left out). Each result gets its own
    Jagielski et al. lower bound (:func:`privaudit.metrics.effective_epsilon_lower_bound`:
    a ``validation_split`` of its test runs picks the threshold, the rest bound the
    rates) at the Bonferroni level ``1 - (1 - confidence) / m``; the headline is the
    largest of the ``m`` bounds, and the claim is refuted when it exceeds the claim.

    Why this design (issue 19). Taking the largest of ``m`` bounds each valid at
    ``confidence`` refutes a true claim up to ``m`` times too often (five targets and
    four attacks: up to 20 x 5%). With each bound at ``1 - alpha / m``, the union bound
    gives: if the generator is ``claimed``-DP, the probability that any of the ``m``
    bounds exceeds the claim is at most ``alpha = 1 - confidence``, whatever the
    dependence between targets and attacks. Holm's step-down procedure rejects the
    global claim exactly when Bonferroni does (its first step is Bonferroni's), so it
    would refute nothing more. No attack is chosen on a small validation part (the
    per-target bound of the effective-epsilon table picks one attack on a tenth of the
    runs and could show 0.00 beside a single attack's 2.00): every attack is bounded,
    the headline names the attack and target that reached it, and a refutation any one
    attack finds at the corrected level is shown.

    Parameters
    ----------
    results : sequence of AttackResult
        Generator audit results (others are ignored).
    confidence : float, default=0.95
        Family-wise confidence of the test: ``1 - alpha``.
    validation_split : float, default=0.1
        Share of each result's test runs choosing its threshold (the report's setting,
        as the metrics table's headline epsilon).
    random_state : int, Generator or None
        Seeds each result's split.

    Returns
    -------
    list of dict
        ``generator``, ``claimed`` (float), ``bound`` (the largest corrected lower bound,
        NaN when none could be computed), ``target`` and ``attack`` (where it was
        reached), ``broken`` (bound > claim), ``correction`` (``"Bonferroni"``),
        ``n_bounds`` (``m``), ``level`` (each bound's confidence), and ``bounds``: one
        ``{"target", "attack", "bound"}`` per result.

    References
    ----------
    .. [1] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private
       Machine Learning: How Private is Private SGD?" NeurIPS 2020.
    .. [2] Bonferroni, C. E. "Teoria statistica delle classi e calcolo delle
       probabilita." 1936; Holm, S. "A Simple Sequentially Rejective Multiple Test
       Procedure." Scandinavian Journal of Statistics 6(2), 1979.
    """
    families: dict[str, tuple[float, list[AttackResult]]] = {}
    for result in results:
        value = number(result.parameters.get("claimed_epsilon"))
        if _is_generator(result) and not math.isnan(value) and not result.out_of_fold:
            families.setdefault(result.generator, (value, []))[1].append(result)
    return [_claim_check(generator, claimed, family, confidence, validation_split,
                         random_state) for generator, (claimed, family) in families.items()]


def _claim_check(generator: str, claimed: float, family: list[AttackResult],
                 confidence: float, validation_split: float, random_state: Any,
                 ) -> dict[str, Any]:
    """One generator's claim against the largest of its Bonferroni-corrected bounds."""
    level = 1.0 - (1.0 - confidence) / len(family)
    bounds = [{"target": r.target, "attack": _attack_label(r),
               "bound": _bound(r, level, validation_split, random_state)} for r in family]
    found = [b for b in bounds if not math.isnan(b["bound"])]
    best = max(found, key=lambda b: b["bound"]) if found else {
        "target": "—", "attack": "—", "bound": math.nan}
    return {"generator": generator, "claimed": claimed, "bound": best["bound"],
            "target": best["target"], "attack": best["attack"],
            "broken": bool(found) and best["bound"] > claimed, "correction": CORRECTION,
            "n_bounds": len(family), "level": level, "bounds": bounds}


def _bound(result: AttackResult, level: float, validation_split: float,
           random_state: Any) -> float:
    """Jagielski et al.'s lower bound of one result at ``level`` (NaN if it has none)."""
    import warnings

    import privaudit.metrics as pm
    from privaudit.exceptions import DegenerateInputWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateInputWarning)  # too few runs: NaN
            (bound,) = pm.effective_epsilon_lower_bound(
                result.labels, result.scores, validation_split=validation_split,
                confidence_levels=(level,), random_state=random_state)
    except ValueError:
        return math.nan
    return float(bound.epsilon_low)


def generator_context(results: Sequence[Any], metric_dicts: Sequence[dict[str, Any]], *,
                      confidence: float, validation_split: float = 0.1,
                      random_state: Any = 0) -> dict[str, Any]:
    """The template variables: AUCs per target and attack across generators, the claims."""
    pairs = [(r, m) for r, m in zip(results, metric_dicts, strict=True) if _is_generator(r)]
    generators = list(dict.fromkeys(r.generator for r, _ in pairs))
    auc = {(r.dataset, r.target, _attack_label(r), r.generator): cell(m["auc"])
           for r, m in pairs}
    rows = [{"dataset": dataset, "target": target, "attack": attack,
             "cells": [auc.get((dataset, target, attack, g), cell(None)) for g in generators]}
            for dataset, target, attack in dict.fromkeys(k[:3] for k in auc)]
    checks = [_claim_row(row) for row in claim_checks(
        [r for r, _ in pairs], confidence=confidence, validation_split=validation_split,
        random_state=random_state)]
    runs = pairs[0][0].parameters if pairs else {}
    return {"generator_names": generators, "generator_rows": rows,
            "generator_claims": checks,
            "generator_game": {k: runs.get(k) for k in (
                "n_train_rows", "n_synthetic_rows", "knowledge", "n_shadow_runs",
                "n_test_runs")}}


def _claim_row(row: dict[str, Any]) -> dict[str, Any]:
    """A claim as the template shows it: the correction said beside the attack."""
    note = (f"largest of {row['n_bounds']} target × attack bounds, {row['correction']}: "
            f"each at {row['level']:.2%}")
    return {**row, "claimed": fmt(row["claimed"], 2), "bound": fmt(row["bound"], 2),
            "correction_note": note,
            "bounds": [{**b, "bound": fmt(b["bound"], 2)} for b in row["bounds"]]}


def _attack_label(result: AttackResult) -> str:
    """The attack's name, and for attribute inference the attribute it infers."""
    if result.kind != "attribute":
        return result.attack
    secret = result.parameters.get("sensitive_attribute") or "an attribute"
    return f"{result.attack} (infers {secret})"


class GeneratorSection(ReportSection):
    """Membership inference against generators: comparison and differential-privacy claims."""

    name, title, order = "generator", "Generators", 38

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(_is_generator(r) for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        return generator_context(report.results, report.metric_dicts,
                                 confidence=report.confidence,
                                 validation_split=report.validation_split,
                                 random_state=report.random_state)


register_section(GeneratorSection())
