"""One headline verdict per audited target, from its strongest attack.

The AUC alone is an average over every threshold: an attack can reach AUC 0.90 by
recognising members slightly more often everywhere yet identify none of them with
confidence, while another at AUC 0.64 picks out 3% of members at 0.1% FPR, thirty times a
random guess. Carlini et al. (2022) argue that the second is the privacy failure that
matters. The verdict therefore reads the true-positive rate at low false-positive rates
first, and lets the AUC raise it by one level at most.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from privaudit.report._interpret import interpret_auc

__all__ = ["LEVELS", "LIFT_SCALE", "Verdict", "attack_verdict", "severity_rank",
           "strongest_finding", "target_verdict"]

#: The levels from worst to best, with the label shown in the report. The severity names are
#: the CSS classes of the HTML report's badges.
LEVELS: tuple[tuple[str, str], ...] = (
    ("critical", "Severe leakage"),
    ("high", "High leakage"),
    ("moderate", "Moderate leakage"),
    ("low", "Low leakage"),
    ("minimal", "No leakage measured"),
)
_RANK = {key: len(LEVELS) - i - 1 for i, (key, _) in enumerate(LEVELS)}  # minimal = 0
_LABEL = dict(LEVELS)

#: Lift (TPR / FPR: how many times more members than a random guess an attack finds at that
#: false-positive rate) needed for each level, best first. A lift counts only when the lower
#: end of the TPR's interval is above the FPR (the attack is better than a guess there).
LIFT_SCALE: tuple[tuple[float, str], ...] = (
    (100.0, "critical"),
    (20.0, "high"),
    (5.0, "moderate"),
    (1.0, "low"),
)
#: FPRs read for the lift: the low-FPR regime of Carlini et al. Higher FPRs say little
#: about confident identification.
_MAX_FPR = 0.01

_AUC_LEVEL = {"clear": "critical", "strong": "high", "moderate": "moderate", "weak": "low"}


class Verdict(NamedTuple):
    """The verdict on one attack result, or on a target (from its strongest attack).

    Attributes
    ----------
    severity : str
        ``critical``, ``high``, ``moderate``, ``low``, ``minimal`` or ``undefined``.
    label : str
        E.g. ``"High leakage"``.
    attack : str
        The attack the verdict rests on.
    text : str
        Why, in one or two sentences with the numbers.
    lift : float
        The largest significant TPR / FPR at FPR <= 1% (NaN when none is).
    fpr : float
        The FPR at which that lift was measured (NaN when none).
    auc : float
        The attack's AUC.
    """

    severity: str
    label: str
    attack: str
    text: str
    lift: float
    fpr: float
    auc: float


def _value(estimate: Any, key: str = "value") -> float:
    if not isinstance(estimate, Mapping):
        return math.nan
    value = estimate.get(key)
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def _best_lift(tpr_at_fpr: Mapping[str, Any]) -> tuple[float, float, float]:
    """(lift, fpr, tpr) of the largest significant lift at FPR <= 1%, NaNs when none."""
    best = (math.nan, math.nan, math.nan)
    for key, estimate in tpr_at_fpr.items():
        try:
            fpr = float(key)
        except ValueError:
            continue
        tpr, low = _value(estimate), _value(estimate, "low")
        if not 0 < fpr <= _MAX_FPR or not math.isfinite(tpr):
            continue
        # Without an interval the point estimate must do; with one, its lower end must
        # clear the FPR (a lift of 3 from two members out of 500 is noise).
        floor = low if math.isfinite(low) else tpr
        if floor <= fpr:
            continue
        lift = tpr / fpr
        if not lift <= best[0]:  # also true while best is NaN
            best = (lift, fpr, tpr)
    return best


def _lift_level(lift: float) -> str:
    for threshold, level in LIFT_SCALE:
        if lift >= threshold:
            return level
    return "minimal"


def attack_verdict(
    attack: str, metrics: Mapping[str, Any], *, kind: str = "membership"
) -> Verdict:
    """The verdict on one result, from its metrics dictionary.

    Parameters
    ----------
    attack : str
        Name shown in the verdict.
    metrics : mapping
        As returned by :meth:`privaudit.results.AttackResult.metrics`: ``auc`` and
        ``tpr_at_fpr`` (keyed by FPR strings), each estimate with ``value``, ``low``,
        ``high``.
    kind : {"membership", "attribute"}
        Names the positives in the text: members, or records with the sensitive value.

    Returns
    -------
    Verdict
        The level is that of the lift at low FPR (:data:`LIFT_SCALE`), raised by one level
        at most when the AUC's band (:func:`interpret_auc`) is higher; an AUC whose interval
        contains 0.5 raises nothing.

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022.
    """
    auc_est = metrics.get("auc", {})
    auc = _value(auc_est)
    reading = interpret_auc(auc, _value(auc_est, "low"), _value(auc_est, "high"), kind=kind)
    positives = "records with the sensitive value" if kind == "attribute" else "members"
    lift, fpr, tpr = _best_lift(metrics.get("tpr_at_fpr", {}) or {})
    if not math.isfinite(auc) and not math.isfinite(lift):
        return Verdict("undefined", "Undefined", attack,
                       f"{attack}: no metric could be computed (one class only?).",
                       lift, fpr, auc)
    lift_level = _lift_level(lift) if math.isfinite(lift) else "minimal"
    auc_level = _AUC_LEVEL.get(reading.key, "minimal")
    if reading.better_than_random is False:
        auc_level = "minimal"
    rank = max(_RANK[lift_level], min(_RANK[auc_level], _RANK[lift_level] + 1))
    severity = next(key for key, r in _RANK.items() if r == rank)
    if math.isfinite(lift):
        found = (f"{attack} identifies {tpr:.1%} of {positives} at {fpr:.1%} FPR "
                 f"({lift:.0f}x a random guess)")
    else:
        found = (f"{attack} identifies no more {positives} than a random guess at FPR up to "
                 f"{_MAX_FPR:.0%}")
    auc_part = f"AUC {auc:.3f}" if math.isfinite(auc) else "AUC undefined"
    if rank > _RANK[lift_level]:
        why = (f"; its {auc_part} ({reading.label.lower()}) raises the verdict one level: "
               f"{positives} are recognised on average beyond what the low-FPR "
               "identification shows.")
    elif _RANK[auc_level] > rank:
        why = (f"; its {auc_part} ({reading.label.lower()}) is an average over all "
               "thresholds and overstates what an attacker can confidently identify.")
    else:
        why = f"; {auc_part}."
    return Verdict(severity, _LABEL[severity], attack, found + why, lift, fpr, auc)


def disqualified(verdict: Verdict, reasons: Sequence[str]) -> Verdict:
    """``verdict``, unless the audit found the result meaningless (a critical finding).

    A result with a critical finding (e.g. a blind classifier that never sees the model does
    as well as the attack: the member and non-member texts differ in distribution) cannot
    carry a target's headline verdict: it becomes ``undefined``, "Not interpretable", with
    the reason, and :func:`target_verdict` takes the strongest of the others.
    """
    if not reasons:
        return verdict
    return verdict._replace(severity="undefined", label="Not interpretable",
                            text=f"{verdict.attack}: not interpretable. " + " ".join(reasons))


def target_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """The headline verdict of a target: that of its strongest attack.

    Strongest means the highest level, then the largest lift, then the largest AUC. An
    empty sequence gives an ``undefined`` verdict.
    """
    if not verdicts:
        nan = math.nan
        return Verdict("undefined", "Undefined", "", "No attack result.", nan, nan, nan)

    def strength(v: Verdict) -> tuple[int, float, float]:
        rank = _RANK.get(v.severity, -1)
        lift = v.lift if math.isfinite(v.lift) else 0.0
        auc = v.auc if math.isfinite(v.auc) else 0.0
        return rank, lift, auc

    return max(verdicts, key=strength)


def severity_rank(severity: str) -> int:
    """The rank of a severity: 0 (``minimal``) to 4 (``critical``).

    -1 for anything that is not a leakage level (``undefined``, ``baseline``,
    ``artefact``), which never outranks a measured level.
    """
    return _RANK.get(severity, -1)


def strongest_finding(findings: Sequence[Any]) -> Any:
    """The finding (:class:`~privaudit.report.Finding`) an artefact's answer rests on.

    The highest severity, then the largest ``strength``; a finding whose severity is not a
    leakage level is chosen only when there is nothing else. None for no findings.
    """
    if not findings:
        return None

    def key(finding: Any) -> tuple[int, float]:
        strength = finding.strength if math.isfinite(finding.strength) else 0.0
        return severity_rank(finding.severity), strength

    return max(findings, key=key)
