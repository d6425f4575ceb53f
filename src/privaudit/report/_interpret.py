"""Plain-language reading of an AUC, for the HTML report."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["AUC_SCALE", "AucReading", "closeness_reading", "fidelity_reading",
           "interpret_auc"]

#: Words and a CSS class for each verdict of a closeness check
#: (:attr:`privaudit.results.ProximityResult.verdict`).
_CLOSENESS = {
    "closer": ("closer to the training records than unseen real records are", "high"),
    "not closer": ("no closer than unseen real records", "low"),
    "overlap": ("undecided: the intervals overlap (the holdout cannot tell the difference "
                "from chance)", "undefined"),
    "no holdout": ("undecided: no holdout baseline", "undefined"),
}
#: The same in a few words, for a terminal table.
_CLOSENESS_SHORT = {"closer": "CLOSER than unseen rows", "not closer": "no closer than unseen rows",
                    "overlap": "undecided (intervals overlap)",
                    "no holdout": "undecided (no holdout)"}


class _Band(NamedTuple):
    low: float
    key: str
    label: str
    severity: str
    text: str


#: The scale of the seed guide (a guide to MIA metrics for LLM unlearning, where the two
#: classes are the forget and holdout sets), read here for membership in general. Bands are
#: closed below and open above; ``{pos}``/``{neg}`` name the two classes.
AUC_SCALE: tuple[_Band, ...] = (
    _Band(0.95, "clear", "Clearly recognisable", "critical",
          "{Pos} are clearly recognisable: the attack separates them from {neg} almost "
          "perfectly. The target exposes which records it was built from."),
    _Band(0.75, "strong", "Strong distinction", "high",
          "Strong distinction between {pos} and {neg}: the attack recognises most {pos} "
          "at a modest cost in false positives."),
    _Band(0.60, "moderate", "Moderate distinction", "moderate",
          "Moderate distinction: the attack tells {pos} from {neg} noticeably better than "
          "chance, though with many errors."),
    _Band(0.45, "weak", "Weak distinction", "low",
          "Weak distinction: on average {pos} are hard to tell from {neg}, close to a random "
          "guess. A few records can still be exposed: check the TPR at low FPR and the "
          "log-log ROC curve."),
    _Band(0.40, "indistinguishable", "Nearly indistinguishable", "minimal",
          "{Pos} and {neg} are nearly indistinguishable to this attack (the AUC is slightly "
          "below 0.5, which sampling noise alone can produce)."),
    _Band(0.0, "anomalous", "Anomalous", "anomalous",
          "Anomalous: the {neg} are more recognisable than the {pos}. Check for a sign "
          "error (privaudit scores must be higher for likely members) or for overfitting "
          "of the attack to the {neg} (e.g. a reference model trained on them)."),
)


class AucReading(NamedTuple):
    """A plain-language reading of an AUC.

    Attributes
    ----------
    key : str
        Band of the scale: ``clear``, ``strong``, ``moderate``, ``weak``,
        ``indistinguishable``, ``anomalous``, or ``undefined`` (NaN AUC).
    label : str
        Short label of the band, e.g. ``"Strong distinction"``.
    severity : str
        ``critical``, ``high``, ``moderate``, ``low``, ``minimal``, ``anomalous`` or
        ``undefined``; the HTML report colours by it.
    text : str
        One or two sentences for a reader who is not a specialist.
    random_flag : str
        Empty, or a warning that the attack is no better than random (its interval
        contains 0.5) or lies below it.
    better_than_random : bool or None
        Whether the interval lies above 0.5; ``None`` without an interval.
    """

    key: str
    label: str
    severity: str
    text: str
    random_flag: str
    better_than_random: bool | None


def interpret_auc(
    auc: float,
    low: float = math.nan,
    high: float = math.nan,
    *,
    kind: str = "membership",
    confidence: float = 0.95,
) -> AucReading:
    """Read an AUC on the seed guide's scale, and flag an interval containing 0.5.

    =============  ==========================  =========================================
    AUC            reading                     meaning
    =============  ==========================  =========================================
    0.95 - 1.00    clearly recognisable        members almost perfectly separated
    0.75 - 0.95    strong distinction
    0.60 - 0.75    moderate distinction
    0.45 - 0.60    weak distinction            close to chance on average
    0.40 - 0.45    nearly indistinguishable
    0.00 - 0.40    anomalous                   non-members more recognisable: check for
                                               a sign error or overfitting
    =============  ==========================  =========================================

    Parameters
    ----------
    auc : float
        The AUC (privaudit convention: 1 = member, higher score = more likely member).
    low, high : float
        Bounds of its confidence interval (NaN when not computed).
    kind : {"membership", "attribute"}
        Names the two classes: members / non-members, or records with / without the
        sensitive value.
    confidence : float
        Level of the interval, for the wording of the flag.

    Returns
    -------
    AucReading

    Notes
    -----
    The scale comes from a guide to membership-inference metrics for machine unlearning,
    where the classes are the forget set and a holdout set; an unlearning audit reads
    "members" as the forgotten records. The bands describe the average separation only:
    an attack with a weak AUC can still identify a few records with high confidence,
    which the TPR at low FPR measures.

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022 (why the
       low-FPR regime matters beyond the AUC).
    """
    if kind == "attribute":
        pos, neg = "records with the sensitive value", "records without it"
    else:
        pos, neg = "members", "non-members"

    if low <= 0.5 <= high:
        flag = (f"No better than random: the {confidence:.0%} interval of the AUC "
                f"[{low:.3f}, {high:.3f}] contains 0.5.")
        better: bool | None = False
    elif high < 0.5:
        flag = (f"Worse than random: the {confidence:.0%} interval of the AUC "
                f"[{low:.3f}, {high:.3f}] lies below 0.5.")
        better = False
    elif low > 0.5:
        flag, better = "", True
    else:
        flag, better = "", None

    if not math.isfinite(auc):
        return AucReading(
            "undefined", "Undefined", "undefined",
            "The AUC is undefined: the audited records contain only one class.", flag, better,
        )
    for band in AUC_SCALE:
        if auc >= band.low:
            text = band.text.format(pos=pos, neg=neg, Pos=pos[0].upper() + pos[1:])
            return AucReading(band.key, band.label, band.severity, text, flag, better)
    raise AssertionError("unreachable: AUC_SCALE covers [0, inf)")  # pragma: no cover


def closeness_reading(verdict: str, *, short: bool = False) -> tuple[str, str]:
    """Words and a CSS class for a closeness check's verdict (the report and the CLI).

    Parameters
    ----------
    verdict : {"closer", "not closer", "overlap", "no holdout"}
        :attr:`privaudit.results.ProximityResult.verdict`, decided on the intervals.
    short : bool, default=False
        A few words, for a terminal table.
    """
    words, css = _CLOSENESS[verdict]
    return (_CLOSENESS_SHORT[verdict] if short else words), css


def fidelity_reading(auc: Mapping[str, float], threshold: float = 0.70) -> tuple[str, str]:
    """Words and a CSS class for a distinguisher's AUC (fidelity, not leakage).

    A cross-fitted classifier whose whole interval lies below 0.5 (without an interval:
    an AUC below 0.40) is systematically wrong, which is no accident: usually the
    synthetic rows copy the original ones (duplicates on both sides of the split). It is
    read as an audit artefact (CSS class ``artefact``, never the green ``low``), not as
    "hard to tell apart".

    Parameters
    ----------
    auc : mapping
        ``value``, ``low``, ``high`` of the AUC.
    threshold : float, default=0.70
        The AUC from which the tables are "easy to tell apart".
    """
    high, value = auc.get("high"), auc.get("value")
    has_interval = high is not None and not math.isnan(high)
    below = (high < 0.5 if has_interval
             else value is not None and not math.isnan(value) and value < 0.40)
    if below:
        return ("below chance: the classifier is systematically wrong, an artefact of "
                "the audit, not a fidelity: usually the synthetic rows copy the original "
                "ones (duplicates on both sides); see the closeness checks", "artefact")
    if value is not None and not math.isnan(value) and value >= threshold:
        return f"easy to tell apart (AUC >= {threshold:.2f}): poor fidelity", "high"
    return "hard to tell apart: close to the original distribution", "low"
