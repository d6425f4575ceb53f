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

from privaudit.metrics import fpr_is_resolvable
from privaudit.report._interpret import interpret_auc

__all__ = ["DP_CLAIM_LABELS", "LEVELS", "LIFT_SCALE", "OTHER_LABELS", "REFUTED_CLAIM_STRENGTH",
           "SHARE_SCALE", "Verdict", "artefact_verdict", "attack_verdict", "baseline_verdict",
           "dp_claim_level", "result_verdict", "severity_label", "severity_rank",
           "share_level", "strongest_finding", "target_verdict"]

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
#: false-positive rate) needed for each level, best first. A lift counts only at an FPR the
#: non-members resolve and when it survives chance (see :func:`attack_verdict`).
LIFT_SCALE: tuple[tuple[float, str], ...] = (
    (100.0, "critical"),
    (20.0, "high"),
    (5.0, "moderate"),
    (1.0, "low"),
)
#: FPRs read for the lift: the low-FPR regime of Carlini et al. Higher FPRs say little
#: about confident identification.
_MAX_FPR = 0.01
#: The largest "smallest resolvable FPR" (1 / n_non_members) read when no FPR up to
#: :data:`_MAX_FPR` is resolvable: beyond 5% (fewer than 20 non-members) nothing is read
#: at low FPR.
_MAX_SMALLEST_FPR = 0.05
#: Badge text of the severities that are not leakage levels.
OTHER_LABELS: dict[str, str] = {
    "undefined": "Undefined",
    "baseline": "Split baseline",
    "artefact": "Audit artefact",
}
#: Without an AUC interval, an AUC below this is read as an artefact (the "anomalous"
#: band of :data:`~privaudit.report.AUC_SCALE`).
_ARTEFACT_AUC = 0.40

_AUC_LEVEL = {"clear": "critical", "strong": "high", "moderate": "moderate", "weak": "low"}


class Verdict(NamedTuple):
    """The verdict on one attack result, or on a target (from its strongest attack).

    Attributes
    ----------
    severity : str
        ``critical``, ``high``, ``moderate``, ``low``, ``minimal``, ``undefined``,
        ``baseline`` (a blind baseline: evidence about the data split) or ``artefact`` (an
        AUC interval wholly below 0.5: a flaw of the audit, not a measurement).
    label : str
        E.g. ``"High leakage"``.
    attack : str
        The attack the verdict rests on.
    text : str
        Why, in one or two sentences with the numbers.
    lift : float
        The largest significant TPR / FPR at a resolvable FPR <= 1% (NaN when none is).
    fpr : float
        The FPR at which that lift was measured (NaN when none).
    auc : float
        The attack's AUC.
    p_value : float
        Bonferroni-corrected exact p-value of that lift (NaN when none).
    tpr : float
        The TPR at ``fpr`` (NaN when no lift).
    """

    severity: str
    label: str
    attack: str
    text: str
    lift: float
    fpr: float
    auc: float
    p_value: float = math.nan
    tpr: float = math.nan


class _Lift(NamedTuple):
    lift: float
    fpr: float
    tpr: float
    p_value: float


_NO_LIFT = _Lift(math.nan, math.nan, math.nan, math.nan)


def _value(estimate: Any, key: str = "value") -> float:
    if not isinstance(estimate, Mapping):
        return math.nan
    value = estimate.get(key)
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


class _Reading(NamedTuple):
    """One FPR the verdict reads: its TPR estimate and exact p-value (None: not given)."""

    fpr: float
    estimate: Mapping[str, Any]
    p_value: float | None


def _read_fprs(metrics: Mapping[str, Any]) -> list[_Reading]:
    """The FPRs the verdict reads: 0 < FPR <= 1% and resolvable by the sample.

    A rate asked for that the sample cannot resolve is replaced by the smallest FPR its
    non-members resolve (one false positive, ``1 / n_non_members``), so the result is
    still read as finely as its sample allows (e.g. 1/600 = 0.17% when 0.1% is asked for
    with 600 non-members: issue 20, "report each result at the smallest FPR its
    non-members resolve"). When none of the FPRs asked for is resolvable and at most 1%
    (fewer than 100 non-members), that smallest FPR is read alone, up to
    :data:`_MAX_SMALLEST_FPR`.
    """
    resolution = metrics.get("fpr_resolution") or {}
    resolvable = resolution.get("resolvable")
    n_neg = metrics.get("n_non_members")
    p_values = metrics.get("tpr_p_value") or {}
    out = []
    unresolved = False
    for key, estimate in (metrics.get("tpr_at_fpr", {}) or {}).items():
        try:
            fpr = float(key)
        except ValueError:
            continue
        if not 0 < fpr <= _MAX_FPR:
            continue
        if isinstance(resolvable, Mapping) and key in resolvable:
            ok = bool(resolvable[key])
        elif isinstance(n_neg, int):
            ok = fpr_is_resolvable(fpr, n_neg)
        else:  # a hand-made dict without counts: nothing says it is not
            ok = True
        if ok:
            out.append(_Reading(fpr, estimate, p_values.get(key)))
        unresolved = unresolved or not ok
    smallest = resolution.get("smallest")
    if isinstance(smallest, Mapping) and (unresolved or not out):
        fpr = float(smallest["fpr"])
        limit = _MAX_FPR if out else _MAX_SMALLEST_FPR
        if fpr <= limit and all(fpr < r.fpr for r in out):
            out.append(_Reading(fpr, smallest["tpr"], smallest["p_value"]))
    return out


def _best_lift(metrics: Mapping[str, Any]) -> _Lift:
    """The largest lift that survives chance at a resolvable FPR (see :func:`_read_fprs`).

    Evidence is the exact p-value of each TPR (``metrics["tpr_p_value"]``,
    :func:`privaudit.metrics.lift_p_value`), Bonferroni-corrected for the FPRs read and
    compared with ``1 - confidence``. Without p-values (a dict made by hand or by an older
    privaudit) the lower end of the TPR's interval must clear the FPR instead.
    """
    read = _read_fprs(metrics)
    alpha = 1.0 - float(metrics.get("confidence") or 0.95)
    best = _NO_LIFT
    for fpr, estimate, raw_p in read:
        tpr = _value(estimate)
        if not math.isfinite(tpr) or tpr <= fpr:
            continue
        if raw_p is not None and math.isfinite(float(raw_p)):
            p_value = min(1.0, float(raw_p) * len(read))
            if p_value > alpha:
                continue
        else:
            p_value = math.nan
            low = _value(estimate, "low")
            if (low if math.isfinite(low) else tpr) <= fpr:
                continue
        if not tpr / fpr <= best.lift:  # also true while best is NaN
            best = _Lift(tpr / fpr, fpr, tpr, p_value)
    return best


def _lift_level(lift: float) -> str:
    for threshold, level in LIFT_SCALE:
        if lift >= threshold:
            return level
    return "minimal"


def _p_text(p_value: float) -> str:
    """``"= 0.0013"``, or ``"< 1e-15"`` below what a float sum can tell from 0."""
    return "< 1e-15" if p_value < 1e-15 else f"= {p_value:.2g}"


def _percent(rate: float) -> str:
    """``0.01`` -> ``"1%"``, ``1 / 75`` -> ``"1.33%"``."""
    return f"{rate * 100:.3g}%"


def _no_lift_text(attack: str, positives: str, metrics: Mapping[str, Any]) -> str:
    """Why no lift counts: none survived chance, or no FPR up to 1% is resolvable."""
    n_neg = metrics.get("n_non_members")
    read = _read_fprs(metrics)
    if not read and isinstance(n_neg, int) and n_neg > 0:
        return (f"{attack}: with {n_neg:,} non-members no FPR up to "
                f"{_MAX_SMALLEST_FPR:.0%} can be measured (the smallest is 1/{n_neg:,} = "
                f"{1 / n_neg:.2%}), so no lift is claimed")
    largest = max((r.fpr for r in read), default=_MAX_FPR)
    return (f"{attack} identifies no more {positives} than a random guess at FPR up to "
            f"{_percent(largest)} (no lift survives an exact test against chance)")


def artefact_verdict(attack: str, metrics: Mapping[str, Any]) -> Verdict | None:
    """The ``artefact`` verdict of an AUC wholly below 0.5, or None.

    An attack cannot be systematically wrong by chance: an AUC interval that lies below
    0.5 signals inverted scores, records shared by members and non-members, or a leak in
    the split, not privacy. Without an interval, an AUC below 0.40 (the "anomalous" band)
    is read the same way.
    """
    auc_est = metrics.get("auc", {})
    auc, high = _value(auc_est), _value(auc_est, "high")
    below = high < 0.5 if math.isfinite(high) else auc < _ARTEFACT_AUC
    if not below:
        return None
    interval = (f" [{_value(auc_est, 'low'):.3f}, {high:.3f}]" if math.isfinite(high)
                else "")
    text = (f"{attack}: AUC {auc:.3f}{interval} lies below chance. An attack cannot be "
            "systematically wrong by accident: check for inverted scores, records shared "
            "by both sides (duplicates) or a leak in the split. The number measures the "
            "audit, not the leakage.")
    return Verdict("artefact", OTHER_LABELS["artefact"], attack, text, math.nan, math.nan,
                   auc)


def baseline_verdict(attack: str, metrics: Mapping[str, Any]) -> Verdict:
    """The verdict on a blind baseline (no model attacked): evidence about the data split.

    A classifier that never sees the model but tells members from non-members shows that
    the two sides differ in distribution: any membership attack on that split is inflated
    by it. Severity ``baseline``, never a leakage level.
    """
    auc_est = metrics.get("auc", {})
    auc, low = _value(auc_est), _value(auc_est, "low")
    interval = (f" [{low:.3f}, {_value(auc_est, 'high'):.3f}]" if math.isfinite(low)
                else "")
    # Without an interval, the "moderate distinction" band of AUC_SCALE must be reached.
    distinguishable = low > 0.5 if math.isfinite(low) else auc >= 0.6
    if distinguishable:
        text = (f"Split distinguishable without the model: AUC {auc:.3f}{interval}; "
                "membership results on this split overstate leakage.")
    else:
        text = (f"Split not distinguishable without the model: AUC {auc:.3f}{interval}; "
                "membership results on this split are not inflated by it.")
    return Verdict("baseline", OTHER_LABELS["baseline"], attack, text, math.nan, math.nan,
                   auc)


def attack_verdict(
    attack: str, metrics: Mapping[str, Any], *, kind: str = "membership",
    role: str | None = None,
) -> Verdict:
    """The verdict on one result, from its metrics dictionary.

    Parameters
    ----------
    attack : str
        Name shown in the verdict.
    metrics : mapping
        As returned by :meth:`privaudit.results.AttackResult.metrics`: ``auc``,
        ``tpr_at_fpr`` (keyed by FPR strings), each estimate with ``value``, ``low``,
        ``high``; ``fpr_resolution`` and ``tpr_p_value`` when present.
    kind : {"membership", "attribute"}
        Names the positives in the text: members, or records with the sensitive value.
    role : str, optional
        The result's ``audit.role``: ``"baseline"`` gives :func:`baseline_verdict`.

    Returns
    -------
    Verdict
        A baseline gets :func:`baseline_verdict`, an AUC wholly below 0.5
        :func:`artefact_verdict`. Otherwise the level is that of the lift at low FPR
        (:data:`LIFT_SCALE`), raised by one level at most when the AUC's band
        (:func:`interpret_auc`) is higher; an AUC whose interval contains 0.5 raises
        nothing. A lift counts only at an FPR of at most 1% that the non-members resolve
        (at least one false positive fits: a TPR "at 0.1% FPR" on 100 non-members is the
        TPR at FPR 0) and only when its exact p-value under "no membership signal"
        (:func:`privaudit.metrics.lift_p_value`, Bonferroni-corrected for the FPRs read)
        is at most ``1 - confidence``. Tied scores are handled by that test, not by a
        bootstrap interval, so a tie block cannot turn a TPR of 1.0 into "no evidence".

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022.
    """
    if role == "baseline":
        return baseline_verdict(attack, metrics)
    artefact = artefact_verdict(attack, metrics)
    if artefact is not None:
        return artefact
    auc_est = metrics.get("auc", {})
    auc = _value(auc_est)
    reading = interpret_auc(auc, _value(auc_est, "low"), _value(auc_est, "high"), kind=kind)
    positives = "records with the sensitive value" if kind == "attribute" else "members"
    best = _best_lift(metrics)
    lift, fpr, tpr = best.lift, best.fpr, best.tpr
    if not math.isfinite(auc) and not math.isfinite(lift):
        return Verdict("undefined", "Undefined", attack,
                       f"{attack}: no metric could be computed (one class only?).",
                       lift, fpr, auc)
    lift_level = _lift_level(lift) if math.isfinite(lift) else "minimal"
    auc_level = _AUC_LEVEL.get(reading.key, "minimal")
    if reading.better_than_random is False:
        auc_level = "minimal"
    elif reading.better_than_random is None and auc_level == "low":
        # No interval (n_bootstrap=0): a "weak" AUC (0.45-0.60, e.g. exactly 0.5) is no
        # evidence of anything on its own and raises nothing; stronger bands still do.
        auc_level = "minimal"
    rank = max(_RANK[lift_level], min(_RANK[auc_level], _RANK[lift_level] + 1))
    severity = next(key for key, r in _RANK.items() if r == rank)
    if math.isfinite(lift):
        evidence = (f", p {_p_text(best.p_value)} against chance"
                    if math.isfinite(best.p_value) else "")
        n_neg = metrics.get("n_non_members")
        where = (f", the smallest FPR its {n_neg:,} non-members resolve"
                 if isinstance(n_neg, int) and n_neg > 0 and math.isclose(fpr, 1 / n_neg)
                 else "")
        found = (f"{attack} identifies {tpr:.1%} of {positives} at {_percent(fpr)} FPR"
                 f"{where} ({lift:.0f}x a random guess{evidence})")
    else:
        found = _no_lift_text(attack, positives, metrics)
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
    return Verdict(severity, _LABEL[severity], attack, found + why, lift, fpr, auc,
                   best.p_value, tpr)


def result_verdict(result: Any, metrics: Mapping[str, Any]) -> Verdict:
    """The verdict on one :class:`~privaudit.results.AttackResult`, all rules applied.

    :func:`attack_verdict` with the result's kind and audit role (a blind baseline reads
    as one), then :func:`disqualified` by the audit's critical findings, or when the
    attack measured nothing (``extra["degenerate"]``).
    """
    audit = getattr(result, "audit", None)
    role = getattr(audit, "role", None)
    verdict = attack_verdict(result.attack or result.name, metrics, kind=result.kind,
                             role=role)
    if verdict.severity in ("baseline", "artefact"):
        return verdict
    reasons = [f.message for f in getattr(audit, "findings", ()) or ()
               if f.severity == "critical"]
    # An attack that could not measure anything (its scores all 0: AUC 0.5) is no
    # evidence of safety either.
    degenerate = (getattr(result, "extra", None) or {}).get("degenerate")
    if isinstance(degenerate, str):
        reasons.append(f"It measured nothing: {degenerate}.")
    return disqualified(verdict, reasons)


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


#: Level of a proven share (a residual risk, an attribute advantage over a model-free
#: guess: the lower end of its interval), best first. privaudit's own scale: a fifth of
#: the records exposed is high, half of them critical, one in twenty moderate.
SHARE_SCALE: tuple[tuple[float, str], ...] = (
    (0.5, "critical"),
    (0.2, "high"),
    (0.05, "moderate"),
    (0.0, "low"),
)


def share_level(low: float, value: float) -> str:
    """The level of a share whose interval is ``[low, ...]`` (:data:`SHARE_SCALE`).

    ``minimal`` when the interval reaches 0 (nothing proven); ``undefined`` when the value
    is not a number. With no interval (NaN ``low``) the value is read instead.
    """
    if not math.isfinite(value):
        return "undefined"
    floor = low if math.isfinite(low) else value
    if floor <= 0:
        return "minimal"
    return next(level for threshold, level in SHARE_SCALE if floor >= threshold)


#: Badge text of a DP-training audit's answer, by severity: a lower bound can refute an
#: epsilon claim, never prove one, so nothing reads "private".
DP_CLAIM_LABELS: dict[str, str] = {"critical": "Claim refuted",
                                   "low": "Consistent with the claim",
                                   "minimal": "Consistent with the claim"}
#: Added to a refuted claim's strength (its bound over the claim): a refuted epsilon claim
#: is a proof, at the confidence asked, that a published guarantee is false, so it
#: outranks every other critical finding of the artefact (whose strengths, lifts and
#: AUCs, stay far below).
REFUTED_CLAIM_STRENGTH = 1e6


def dp_claim_level(bound: float, claim: float) -> tuple[str, float]:
    """The severity and strength of an epsilon lower bound read against its claim.

    ``critical`` when the bound exceeds the claim (the claim is refuted: the strongest
    kind of finding, :data:`REFUTED_CLAIM_STRENGTH` plus ``bound / claim``); ``low`` when
    a positive bound stays within it (leakage measured, the claim holds); ``minimal`` when
    the bound is 0; ``undefined`` when it is not a number.
    """
    if not (math.isfinite(claim) and claim > 0) or bound != bound:
        return "undefined", 0.0
    if bound > claim:
        return "critical", REFUTED_CLAIM_STRENGTH + min(bound / claim, 1e5)
    return ("low" if bound > 0 else "minimal"), bound / claim


def severity_label(severity: str) -> str:
    """The badge text of a severity (a level of :data:`LEVELS` or :data:`OTHER_LABELS`)."""
    return _LABEL.get(severity) or OTHER_LABELS.get(severity, severity.capitalize())


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
