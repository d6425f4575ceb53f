"""The section of the HTML report for generator audits (``result.audit.kind == "generator"``).

TAPAS's two uses, on the results of :func:`privaudit.audit_generator`:

- **comparison**: per target record, each attack's AUC (with its interval) for every
  generator side by side, so a reader sees which generator leaks which record;
- **a claim put to the test**: per generator that claims differential privacy, the
  effective-epsilon lower bound of its most vulnerable target (the best over attacks,
  Clopper-Pearson, Jagielski et al.) beside the claimed epsilon. A bound above the claim
  means the claim is false (with the stated confidence); a bound below it means these
  attacks could not refute it, which is not a proof that it holds.

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
from typing import TYPE_CHECKING, Any

from privaudit.report._format import cell, fmt, number
from privaudit.report._section import ReportSection, register_section
from privaudit.results import AttackResult

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from privaudit.report._html import HtmlReport

__all__ = ["GeneratorSection", "claim_checks", "generator_context"]


def _is_generator(result: Any) -> bool:
    return isinstance(result, AttackResult) and result.audit.kind == "generator"


def claim_checks(results: Sequence[AttackResult], epsilon_frame: pd.DataFrame,
                 confidence: float) -> list[dict[str, Any]]:
    """Per generator with a ``claimed_epsilon``: its largest bound against the claim.

    Returns
    -------
    list of dict
        ``generator``, ``claimed`` (float), ``bound`` (the largest lower bound over its
        targets at level ``confidence``, NaN when none could be computed), ``target``
        and ``attack`` (where it was reached), ``broken`` (bound > claim).
    """
    claims: dict[str, float] = {}
    for result in results:
        value = number(result.parameters.get("claimed_epsilon"))
        if _is_generator(result) and not math.isnan(value):
            claims.setdefault(result.generator, value)
    rows = []
    for generator, claimed in claims.items():
        frame = epsilon_frame[(epsilon_frame["generator"] == generator)
                              & (abs(epsilon_frame["confidence"] - confidence) < 1e-12)]
        frame = frame[frame["epsilon_low"].notna()]
        if frame.empty:
            rows.append({"generator": generator, "claimed": claimed, "bound": math.nan,
                         "target": "—", "attack": "—", "broken": False})
            continue
        best = frame.loc[frame["epsilon_low"].idxmax()]
        bound = float(best["epsilon_low"])
        rows.append({"generator": generator, "claimed": claimed, "bound": bound,
                     "target": str(best["target"]), "attack": str(best["attack"]),
                     "broken": bound > claimed})
    return rows


def generator_context(results: Sequence[Any], metric_dicts: Sequence[dict[str, Any]],
                      epsilon_frame: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """The template variables: AUCs per target and attack across generators, the claims."""
    pairs = [(r, m) for r, m in zip(results, metric_dicts, strict=True) if _is_generator(r)]
    generators = list(dict.fromkeys(r.generator for r, _ in pairs))
    auc = {(r.dataset, r.target, _attack_label(r), r.generator): cell(m["auc"])
           for r, m in pairs}
    rows = [{"dataset": dataset, "target": target, "attack": attack,
             "cells": [auc.get((dataset, target, attack, g), cell(None)) for g in generators]}
            for dataset, target, attack in dict.fromkeys(k[:3] for k in auc)]
    checks = [{**row, "claimed": fmt(row["claimed"], 2), "bound": fmt(row["bound"], 2)}
              for row in claim_checks([r for r, _ in pairs], epsilon_frame, confidence)]
    runs = pairs[0][0].parameters if pairs else {}
    return {"generator_names": generators, "generator_rows": rows,
            "generator_claims": checks,
            "generator_game": {k: runs.get(k) for k in (
                "n_train_rows", "n_synthetic_rows", "knowledge", "n_shadow_runs",
                "n_test_runs")}}


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

    def context(self, report: HtmlReport) -> dict[str, Any]:
        return generator_context(report.results, report.metric_dicts, report.epsilon_frame,
                                 report.confidence)


register_section(GeneratorSection())
