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

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

import privaudit.metrics as pm
from privaudit._validation import check_fraction, param_error
from privaudit.results import RiskResult

__all__ = ["Counts", "check_attack_count", "check_frame"]


@dataclass(frozen=True)
class Counts:
    """An evaluation's counts (anonymeter's ``EvaluationResults`` inputs).

    ``n_control`` may be fractional: singling out rescales it when the control set and
    the original set differ in size (anonymeter's correction); the result rounds it.
    """

    n_attacks: int
    n_success: int
    n_baseline: int
    n_control: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_result(self, *, confidence: float = 0.95, **provenance: Any) -> RiskResult:
        """These counts as a :class:`~privaudit.results.RiskResult`."""
        control = None if self.n_control is None else round(self.n_control)
        extra = dict(self.extra)
        if self.n_control is not None and control != self.n_control:
            extra["n_control_before_rounding"] = float(self.n_control)
        return RiskResult(n_attacks=self.n_attacks, n_success=self.n_success,
                          n_baseline=self.n_baseline,
                          n_control=None if control is None else min(control, self.n_attacks),
                          confidence=confidence, extra={**extra, **provenance.pop(
                              "extra", {})}, **provenance)

    def risk(self, confidence_level: float = 0.95, baseline: bool = False) -> pm.Estimate:
        """The risk as anonymeter's ``risk()`` gives it, clipped to [0, 1].

        The residual risk over the control (or, with ``baseline``, the baseline
        attacker's success rate: Wilson centre and half-width).
        """
        level = check_fraction(confidence_level, param="confidence_level", func="risk")
        result = self.to_result(confidence=level)
        if not baseline:
            return result.risk()
        rate = result.baseline_rate
        centre, error = (rate.low + rate.high) / 2, (rate.high - rate.low) / 2
        return pm.Estimate(*(min(max(v, 0.0), 1.0) for v in (centre, centre - error,
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
