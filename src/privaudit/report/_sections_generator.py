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

from privaudit.report._common import artefact_key, artefact_name, attack_label
from privaudit.report._epsilon import (
    ArtefactEpsilon,
    artefact_epsilons,
    epsilon_statement,
    unit_of,
)
from privaudit.report._format import EPSILON_DIGITS, cell, fmt, number
from privaudit.report._section import Finding, ReportSection, ReportView
from privaudit.report._verdict import LEVELS, LIFT_SCALE
from privaudit.results import AttackResult, result_type_of

__all__ = ["GeneratorSection", "claim_checks", "epsilon_severity", "generator_context",
           "generator_findings"]


def _is_generator(result: Any) -> bool:
    return result_type_of(result) == "attack" and result.audit_kind == "generator"


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
        ``n_bounds`` (``m``), ``level`` (each bound's confidence), ``artefact`` (where it
        was reached: :func:`~privaudit.report.artefact_name`, with the generator), and
        ``bounds``: one ``{"target", "attack", "bound", "artefact", "key", "result"}``
        per result (``key``: :func:`~privaudit.report.artefact_key`; ``result``: the
        :class:`AttackResult`).

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
    bounds = [{"target": r.target, "attack": attack_label(r),
               "bound": _bound(r, level, validation_split, random_state),
               "artefact": artefact_name(r), "key": artefact_key(r), "result": r}
              for r in family]
    found = [b for b in bounds if not math.isnan(b["bound"])]
    best = max(found, key=lambda b: b["bound"]) if found else {
        "target": "—", "attack": "—", "bound": math.nan, "artefact": "—"}
    return {"generator": generator, "claimed": claimed, "bound": best["bound"],
            "target": best["target"], "attack": best["attack"], "artefact": best["artefact"],
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
                      random_state: Any = 0,
                      headlines: Sequence[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The template variables: AUCs per target and attack across generators, the claims.

    ``headlines`` are the results' headline epsilons (``report.headline_epsilons``: each
    attack alone at ``confidence``), shown in the claims' lists of bounds so that a
    result reads the same ε there as in the metrics table; without them that list shows
    no per-result number.
    """
    indices = [i for i, r in enumerate(results) if _is_generator(r)]
    pairs = [(results[i], metric_dicts[i]) for i in indices]
    generators = list(dict.fromkeys(r.generator for r, _ in pairs))
    auc = {(r.dataset, r.target, attack_label(r), r.generator): cell(m["auc"])
           for r, m in pairs}
    rows = [{"dataset": dataset, "target": target, "attack": attack,
             "cells": [auc.get((dataset, target, attack, g), cell(None)) for g in generators]}
            for dataset, target, attack in dict.fromkeys(k[:3] for k in auc)]
    headline_of = ({id(results[i]): headlines[i] for i in indices}
                   if headlines is not None else {})
    checks = [_claim_row(row, headline_of, confidence) for row in claim_checks(
        [r for r, _ in pairs], confidence=confidence, validation_split=validation_split,
        random_state=random_state)]
    runs = pairs[0][0].parameters if pairs else {}
    return {"generator_names": generators, "generator_rows": rows,
            "generator_claims": checks,
            "generator_game": {k: runs.get(k) for k in (
                "n_train_rows", "n_synthetic_rows", "knowledge", "n_shadow_runs",
                "n_test_runs")}}


def _claim_row(row: dict[str, Any], headline_of: dict[int, dict[str, Any]],
               confidence: float) -> dict[str, Any]:
    """A claim as the template shows it: the correction said beside the attack.

    Each listed result shows its headline ε (that attack alone at ``confidence``, as in
    the metrics table), and the one that reached the claim's bound is marked.
    """
    note = (f"largest of {row['n_bounds']} target × attack bounds, {row['correction']}: "
            f"each at {row['level']:.2%}")
    best = row["bound"]
    bounds = []
    for b in row["bounds"]:
        headline = headline_of.get(id(b["result"]))
        bounds.append({"target": b["artefact"], "attack": b["attack"],
                       "headline": fmt(headline["value"], EPSILON_DIGITS) if headline
                       else "—",
                       "gives": not math.isnan(best) and best > 0 and b["bound"] == best})
    reached = not math.isnan(best) and best > 0
    where = ({"artefact": row["artefact"], "attack": row["attack"]} if reached else
             {"artefact": "no attack", "attack": "bounds ε above 0"})
    return {**{k: v for k, v in row.items() if k != "bounds"}, **where, "reached": reached,
            "claimed": fmt(row["claimed"], EPSILON_DIGITS),
            "bound": fmt(row["bound"], EPSILON_DIGITS), "correction_note": note,
            "headline_confidence": f"{confidence:.0%}", "bounds": bounds}


# ---------------------------------------------------------------------- findings
def epsilon_severity(epsilon: float) -> str:
    """The :data:`~privaudit.report.LEVELS` severity of a lower bound on ε.

    An ε-DP mechanism bounds every attack's lift: TPR / FPR <= e^ε (Jagielski et al.,
    the inequality their bound inverts). A bound ε >= b therefore demonstrates a lift of
    at least e^b on some attack, and is read on the lift scale of the membership
    verdicts (:data:`~privaudit.report._verdict.LIFT_SCALE`): ε >= ln 100 (4.61) is
    critical, >= ln 20 (3.00) high, >= ln 5 (1.61) moderate, > 0 low, 0 minimal;
    NaN (no bound) is ``"undefined"``.
    """
    if math.isnan(epsilon):
        return "undefined"
    for lift, level in LIFT_SCALE:
        if lift > 1.0 and epsilon >= math.log(lift):
            return level
    return "low" if epsilon > 0 else "minimal"


_LEVEL_LABEL = dict(LEVELS)
_RANK = [key for key, _ in LEVELS]  # worst first


def _at_least(severity: str, floor: str) -> str:
    """The worse of ``severity`` and ``floor`` (``undefined`` counts as better than any)."""
    if severity not in _RANK:
        return floor
    return _RANK[min(_RANK.index(severity), _RANK.index(floor))]


def generator_findings(report: ReportView) -> list[Finding]:
    """One answer per (generator, target record): its strongest attack against the claim.

    - A generator claiming ε (``parameters["claimed_epsilon"]``): the record's largest
      bound in the claim's test (:func:`claim_checks`: each of the generator's ``M``
      target x attack bounds at ``1 - (1 - confidence) / M``, so that "refuted" here and
      in the claims table are the same decision). Refuted (bound > claim): severity at
      least ``high``, since the guarantee the generator was chosen for is false; kept:
      the bound's own level (:func:`epsilon_severity`), with the claim said kept.
    - A generator claiming nothing: the record's bound of the effective-ε section
      (:func:`~privaudit.report._epsilon.artefact_epsilons`, its attacks corrected among
      themselves), one finding per kind of inference, at the bound's level.

    ``strength`` is the bound, the metric says it in words with its confidence and the
    interval is the one-sided ``[bound, ∞)``.
    """
    results = report.results
    claims = claim_checks(results, confidence=report.confidence,
                          validation_split=report.validation_split,
                          random_state=report.random_state)
    claimed = {c["generator"] for c in claims}
    findings = [f for c in claims for f in _claim_findings(c, report.confidence)]
    for entry in artefact_epsilons(report):
        first = results[entry.indices[0]]
        if _is_generator(first) and first.generator not in claimed:
            findings.append(_unclaimed_finding(entry, unit_of(first)))
    return findings


def _claim_findings(check: dict[str, Any], confidence: float) -> list[Finding]:
    """Per record of a claiming generator: its largest bound in the claim's test."""
    records: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for b in check["bounds"]:
        records.setdefault(b["key"], []).append(b)
    out = []
    for bounds in records.values():
        found = [b for b in bounds if not math.isnan(b["bound"])]
        best = max(found, key=lambda b: b["bound"]) if found else bounds[0]
        value, claim = best["bound"], check["claimed"]
        refuted = bool(found) and value > claim
        severity = epsilon_severity(value)
        if refuted:
            severity = _at_least(severity, "high")
        label = "DP claim refuted" if refuted else _LEVEL_LABEL.get(severity, "Undefined")
        family = (f"{confidence:.0%} confidence over the generator's {check['n_bounds']} "
                  f"target × attack bounds (each at {check['level']:.2%}, Bonferroni)")
        verdict = (f"so {check['generator']} is not {fmt(claim, EPSILON_DIGITS)}-DP"
                   if refuted else
                   f"which does not refute the claimed ε = {fmt(claim, EPSILON_DIGITS)}")
        if not found:
            text = f"No bound could be computed on {best['artefact']}: the claim is untested."
        elif value > 0:
            text = (f"{best['attack']} bounds ε ≥ {fmt(value, EPSILON_DIGITS)} with {family}, "
                    f"{verdict}.")
        else:
            text = f"No attack bounds ε above 0 with {family}, {verdict}."
        out.append(Finding(
            artefact=best["artefact"], kind="generator", severity=severity, label=label,
            attack=best["attack"] if found and value > 0 else "—",
            metric=f"ε ≥ {fmt(value, EPSILON_DIGITS)} "
            f"(claimed {fmt(claim, EPSILON_DIGITS)})",
            interval=_one_sided(value), text=text, section="generator",
            strength=value if found else 0.0))
    return out


def _unclaimed_finding(entry: ArtefactEpsilon, unit: str) -> Finding:
    """A record of a generator claiming nothing: its effective-ε bound, at its level."""
    severity = epsilon_severity(entry.value)
    kind = " (attribute inference)" if entry.kind == "attribute" else ""
    return Finding(
        artefact=entry.artefact, kind="generator", severity=severity,
        label=_LEVEL_LABEL.get(severity, "Undefined"),
        attack=entry.attack if entry.value > 0 else "—",
        metric=f"ε ≥ {fmt(entry.value, EPSILON_DIGITS)}{kind}",
        interval=_one_sided(entry.value),
        text=f"No differential-privacy claim. {epsilon_statement(entry, unit)}",
        section="epsilon",
        strength=entry.value if not math.isnan(entry.value) else 0.0)


def _one_sided(value: float) -> str:
    return "" if math.isnan(value) else f"[{fmt(value, EPSILON_DIGITS)}, ∞)"


class GeneratorSection(ReportSection):
    """Membership inference against generators: comparison and differential-privacy claims."""

    name, title, order = "generator", "Generators", 38

    def applies_to(self, results: Sequence[Any]) -> bool:
        return any(_is_generator(r) for r in results)

    def context(self, report: ReportView) -> dict[str, Any]:
        return generator_context(report.results, report.metric_dicts,
                                 confidence=report.confidence,
                                 validation_split=report.validation_split,
                                 random_state=report.random_state,
                                 headlines=report.headline_epsilons)

    def findings(self, report: ReportView) -> list[Finding]:
        """Per (generator, record): the strongest attack against the generator's claim."""
        return generator_findings(report)
