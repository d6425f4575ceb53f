"""What stops a reader from trusting a meaningless LLM MIA AUC: the checks of an LLM audit.

- :class:`BlindBaselineCheck`, the LLM audit's :class:`~privaudit.audits.Baseline`: a
  classifier that never sees the model (Das, Zhang and Tramèr 2024) separates the two text
  sets; when it does as well as the attack, the sets differ in distribution and the AUC
  says nothing about memorisation.
- :func:`privleak`: MUSE's PrivLeak, the AUC relative to a model retrained without the
  forget set; refused without one instead of a silent default.
- :func:`red_flags`: the rules of the MIA metrics guide on forget / retain accuracy, and
  an AUC far below 0.5 flagged as over-unlearning.

References
----------
.. [1] Das, D., Zhang, J. and Tramèr, F. "Blind Baselines Beat Membership Inference Attacks
   for Foundation Models." arXiv:2406.16201, 2024.
.. [2] Shi, W., Lee, J., Huang, Y., et al. "MUSE: Machine Unlearning Six-Way Evaluation for
   Language Models." arXiv:2407.06460, 2024.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

from privaudit._validation import check_fraction, param_error
from privaudit.exceptions import BaselineWarning
from privaudit.results import AttackResult, BaselineCheck, Finding

__all__ = [
    "RED_FLAG_THRESHOLDS",
    "BlindBaselineCheck",
    "BlindBaselineWarning",
    "check_red_flag_inputs",
    "privleak",
    "red_flags",
]


class BlindBaselineWarning(BaselineWarning):
    """A model-free classifier on the texts alone does as well as a membership attack."""


class BlindBaselineCheck:
    """Compares each statistic's AUC with a blind classifier's on the same texts.

    Parameters
    ----------
    blind : AttackResult
        The out-of-fold result of :class:`privaudit.llm.BlindBaseline` on the audited
        texts and labels.
    n_bootstrap : int, default=200
        Bootstrap resamples of the attack's AUC interval.
    confidence : float, default=0.95
        Level of that interval.

    Notes
    -----
    ``passed`` is True when the lower end of the attack's AUC interval lies above the blind
    classifier's AUC: only then does the attack show something the text sets alone do not.
    Otherwise a :class:`BlindBaselineWarning` says so and the result carries a critical
    :class:`~privaudit.results.Finding`.
    """

    name = "blind-baseline"

    def __init__(self, blind: AttackResult, n_bootstrap: int = 200,
                 confidence: float = 0.95) -> None:
        self.blind, self.n_bootstrap, self.confidence = blind, n_bootstrap, confidence

    def __repr__(self) -> str:
        return f"BlindBaselineCheck(blind_auc={self.blind_auc:.3f})"

    @property
    def blind_auc(self) -> float:
        """The blind classifier's AUC (point estimate)."""
        return float(self.blind.metrics(n_bootstrap=0)["auc"]["value"])

    def check(self, result: AttackResult, random_state: int) -> BaselineCheck | None:
        """Flag and warn when the blind classifier's AUC reaches the attack's interval."""
        if not (result.n_members and result.n_non_members):
            return None
        auc = result.metrics(fprs=(), n_bootstrap=self.n_bootstrap,
                             confidence=self.confidence, random_state=random_state)["auc"]
        blind = self.blind_auc
        passed = bool(math.isfinite(auc["low"]) and auc["low"] > blind)
        if not passed:
            message = (
                f"A blind classifier that never sees the model separates these texts with "
                f"AUC {blind:.3f}, as well as {result.name} (AUC {auc['value']:.3f}, "
                f"{self.confidence:.0%} interval [{auc['low']:.3f}, {auc['high']:.3f}]): the "
                "two text sets differ in distribution, and this AUC says nothing about "
                "memorisation (Das, Zhang and Tramèr 2024).")
            warnings.warn(message, BlindBaselineWarning, stacklevel=3)
            result.audit.findings.append(Finding("blind-baseline", "critical", message, blind))
        return BaselineCheck(self.name, passed, {
            "blind_auc": blind, "attack_auc_low": auc["low"],
            "n_bootstrap": self.n_bootstrap, "confidence": self.confidence})


def privleak(unlearned_auc: float, retrained_auc: float | None) -> float:
    """MUSE's PrivLeak: ``(AUC_unlearned - AUC_retrained) / AUC_retrained``.

    Near 0: the unlearned model is as hard to attack as one never trained on the forget
    set. Positive: under-unlearning (the forget set is still recognisable); negative:
    over-unlearning (the forget set stands out by being *less* likely than held-out text).

    Raises
    ------
    ValueError
        Without a retrained model's AUC (None or NaN): PrivLeak is relative to it by
        definition, and no default stands in for it.
    """
    if retrained_auc is None or not math.isfinite(float(retrained_auc)):
        raise param_error(
            "retrained_auc", "privleak",
            "the AUC of a model retrained without the forget set (PrivLeak is relative to "
            "it; give retrained= to audit_llm)", retrained_auc)
    unlearned = check_fraction(unlearned_auc, param="unlearned_auc", func="privleak",
                               low_inclusive=True, high_inclusive=True)
    retrained = check_fraction(retrained_auc, param="retrained_auc", func="privleak",
                               low_inclusive=False, high_inclusive=True)
    return (unlearned - retrained) / retrained


#: The guide's qualitative rules made concrete; every one can be overridden.
RED_FLAG_THRESHOLDS: dict[str, float] = {
    "auc_high": 0.8,        # "MIA AUC > 0.8"
    "auc_near": 0.05,       # "AUC ~ 0.5": within 0.05 of it
    "auc_low": 0.4,         # "0.00 - 0.40: holdout more recognisable"
    "accuracy_low": 0.3,    # forget / retain accuracy called "low" below this
    "accuracy_high": 0.7,   # and "high" above this
}


def red_flags(
    auc: Mapping[str, float],
    *,
    forget_accuracy: float | None = None,
    retain_accuracy: float | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> list[Finding]:
    """The MIA metrics guide's red flags for one forget-vs-holdout AUC.

    Parameters
    ----------
    auc : dict
        ``{"value", "low", "high"}``, as :meth:`AttackResult.metrics` gives it.
    forget_accuracy, retain_accuracy : float in [0, 1], optional
        The unlearned model's accuracy on the forget and retain sets (e.g. answer
        accuracy or ROUGE recall); a rule that needs one that is missing is skipped.
    thresholds : dict, optional
        Overrides of :data:`RED_FLAG_THRESHOLDS`.

    Returns
    -------
    list of Finding
        ``red-flag:mode-collapse`` (AUC > 0.8 yet low forget accuracy),
        ``red-flag:over-unlearning-utility`` (AUC ~ 0.5 yet low retain accuracy),
        ``red-flag:superficial-unlearning`` (AUC ~ 0.5 yet high forget accuracy), and
        ``over-unlearning`` (AUC below ``auc_low`` with its interval below 0.5: the forget
        set is now *less* member-like than held-out text, itself a signal).
    """
    limits = _thresholds(thresholds)
    value = float(auc["value"])
    near = abs(value - 0.5) <= limits["auc_near"]
    forget = _accuracy(forget_accuracy, "forget_accuracy")
    retain = _accuracy(retain_accuracy, "retain_accuracy")
    rules = [
        ("red-flag:mode-collapse", value > limits["auc_high"] and forget is not None
         and forget < limits["accuracy_low"],
         "The forget set is still recognisable (AUC {v:.3f}) although the model answers it "
         "badly: possibly a mode collapse rather than forgetting."),
        ("red-flag:over-unlearning-utility", near and retain is not None
         and retain < limits["accuracy_low"],
         "AUC {v:.3f} is near 0.5, but retain accuracy is low: unlearning damaged the model."),
        ("red-flag:superficial-unlearning", near and forget is not None
         and forget > limits["accuracy_high"],
         "AUC {v:.3f} is near 0.5, but forget accuracy is high: the model still knows the "
         "facts; the unlearning is superficial."),
        ("over-unlearning", value < limits["auc_low"] and float(auc.get("high", value)) < 0.5,
         "AUC {v:.3f} is far below 0.5: the forget set is now less likely than held-out text, "
         "which itself reveals it (over-unlearning)."),
    ]
    return [Finding(code, "warning", text.format(v=value), value)
            for code, fired, text in rules if fired]


def check_red_flag_inputs(forget_accuracy: float | None, retain_accuracy: float | None,
                          thresholds: Mapping[str, float] | None) -> None:
    """Raise the error :func:`red_flags` would, before any work is done."""
    _accuracy(forget_accuracy, "forget_accuracy")
    _accuracy(retain_accuracy, "retain_accuracy")
    _thresholds(thresholds)


def _thresholds(thresholds: Mapping[str, float] | None) -> dict[str, float]:
    limits = dict(RED_FLAG_THRESHOLDS)
    if thresholds is not None and not isinstance(thresholds, Mapping):
        raise param_error("thresholds", "red_flags", "a mapping", thresholds, error=TypeError)
    for key, value in (thresholds or {}).items():
        if key not in limits:
            raise param_error("thresholds", "red_flags", f"keys among {sorted(limits)}", key)
        limits[key] = check_fraction(value, param=f"thresholds[{key!r}]", func="red_flags",
                                     low_inclusive=True, high_inclusive=True)
    return limits


def _accuracy(value: float | None, param: str) -> float | None:
    if value is None:
        return None
    return check_fraction(value, param=param, func="red_flags", low_inclusive=True,
                          high_inclusive=True)
