"""What the three anonymeter-style evaluators share: their counts and their risk.

Each evaluator ends with four counts: attacks made, successes of the attack on the training
(original) records, successes of a baseline attacker who does not use the synthetic data,
and successes of the same attack on control records the generator never saw. They are
turned into a :class:`~privaudit.results.RiskResult` (Wilson rates, anonymeter's residual
risk, its file format) so that every report reads them the same way.

References
----------
.. [1] Giomi, M., Boenisch, F., Wehmeyer, C. and Tasnádi, B. "A Unified Framework for
   Quantifying Privacy Risk in Synthetic Data." PoPETs 2023 (anonymeter).
.. [2] Wilson, E. B. "Probable Inference, the Law of Succession, and Statistical
   Inference." JASA 22, 1927.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import pandas as pd

import privaudit.metrics as pm
from privaudit._validation import check_fraction, param_error
from privaudit.results import RiskResult

__all__ = ["Counts", "PrivacyRisk", "SuccessRate", "check_attack_count", "check_frame",
           "check_jobs"]


class PrivacyRisk(pm.Estimate):
    """A risk with its interval: privaudit's ``(value, low, high)`` and anonymeter's ``ci``.

    anonymeter's ``PrivacyRisk(value, ci)`` is read as ``risk.value`` and ``risk.ci``; both
    work here, as do ``risk.low`` and ``risk.high``.
    """

    __slots__ = ()

    @property
    def ci(self) -> tuple[float, float]:
        """The interval ``(low, high)``, as anonymeter's ``PrivacyRisk.ci``."""
        return (self.low, self.high)


class SuccessRate(NamedTuple):
    """A success rate as anonymeter gives it: the Wilson centre and half-width."""

    value: float
    error: float


@dataclass(frozen=True)
class Counts:
    """An evaluation's counts, read as anonymeter's ``EvaluationResults``.

    ``n_control`` may be fractional: singling out rescales it when the control set and
    the original set differ in size (anonymeter's correction); the result rounds it.
    ``attack_rate``, ``baseline_rate``, ``control_rate`` and ``risk(baseline=...)`` are
    anonymeter's, at ``confidence_level``.
    """

    n_attacks: int
    n_success: int
    n_baseline: int
    n_control: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    confidence_level: float = 0.95

    def to_result(self, *, confidence: float | None = None, **provenance: Any) -> RiskResult:
        """These counts as a :class:`~privaudit.results.RiskResult`."""
        control = None if self.n_control is None else round(self.n_control)
        extra = dict(self.extra)
        if self.n_control is not None and control != self.n_control:
            extra["n_control_before_rounding"] = float(self.n_control)
        return RiskResult(n_attacks=self.n_attacks, n_success=self.n_success,
                          n_baseline=self.n_baseline,
                          n_control=None if control is None else min(control, self.n_attacks),
                          confidence=self.confidence_level if confidence is None
                          else confidence, extra={**extra, **provenance.pop(
                              "extra", {})}, **provenance)

    def at_level(self, confidence_level: Any) -> Counts:
        """The same counts read at another confidence level."""
        level = check_fraction(confidence_level, param="confidence_level", func="results")
        return replace(self, confidence_level=level)

    @staticmethod
    def _rate(estimate: pm.Estimate | None) -> SuccessRate | None:
        if estimate is None:
            return None
        return SuccessRate((estimate.low + estimate.high) / 2,
                           (estimate.high - estimate.low) / 2)

    @property
    def attack_rate(self) -> SuccessRate:
        """The attack's success rate on the original records (Wilson centre, half-width)."""
        return self._rate(self.to_result().attack_rate)  # type: ignore[return-value]

    @property
    def baseline_rate(self) -> SuccessRate:
        """The baseline attacker's success rate (Wilson centre, half-width)."""
        return self._rate(self.to_result().baseline_rate)  # type: ignore[return-value]

    @property
    def control_rate(self) -> SuccessRate | None:
        """The attack's success rate on the control records (None without a control)."""
        return self._rate(self.to_result().control_rate)

    def risk(self, baseline: bool = False, confidence_level: float | None = None
             ) -> PrivacyRisk:
        """The risk as anonymeter's ``risk()`` gives it, clipped to [0, 1].

        The residual risk over the control (or, with ``baseline``, the baseline
        attacker's success rate: Wilson centre and half-width).
        """
        counts = self if confidence_level is None else self.at_level(confidence_level)
        if not isinstance(baseline, bool):
            raise param_error("baseline", "risk", "True or False", baseline, error=TypeError)
        result = counts.to_result()
        if not baseline:
            return PrivacyRisk(*result.risk())
        centre, error = self._rate(result.baseline_rate)  # type: ignore[misc]
        return PrivacyRisk(*(min(max(v, 0.0), 1.0) for v in (centre, centre - error,
                                                            centre + error)))


def check_frame(frame: Any, param: str, func: str, *, allow_none: bool = False) -> Any:
    """A non-empty DataFrame (or None when allowed), else a TypeError/ValueError naming it."""
    if frame is None and allow_none:
        return None
    if not isinstance(frame, pd.DataFrame):
        raise param_error(param, func, "a pandas DataFrame", f"<{type(frame).__name__}>",
                          error=TypeError)
    if len(frame) == 0:
        raise param_error(param, func, "a table with rows", "<an empty table>")
    return frame


def check_attack_count(n_attacks: Any, func: str, *limits: tuple[str, int]) -> int:
    """``n_attacks`` as a positive integer no larger than each ``(table, rows)`` limit."""
    if isinstance(n_attacks, bool) or not isinstance(n_attacks, int) or n_attacks < 1:
        raise param_error("n_attacks", func, "a positive integer", n_attacks)
    for table, rows in limits:
        if n_attacks > rows:
            raise param_error("n_attacks", func, f"at most the {rows} rows of {table!r} "
                              "(targets are drawn without replacement)", n_attacks)
    return n_attacks


def check_jobs(n_jobs: Any, func: str) -> int | None:
    """``n_jobs`` as anonymeter (joblib) reads it: -1 every core, -2 all but one, ..."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise param_error("n_jobs", func, "None, a positive integer, or -1 (every core), -2 "
                          "(all but one)...", n_jobs)
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return n_jobs
