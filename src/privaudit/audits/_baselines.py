"""What an audit compares each attack with: one small interface, one baseline per kind.

DESIGN: "an attack no better than its baseline says so (a warning and a flag in the
result)". What "no better" means depends on the audit kind, so the audit is given a
:class:`Baseline` and the run object (:class:`~privaudit.audits.AuditRun`) calls it on every
finished result:

- membership inference on a model: :class:`RandomGuessBaseline` (AUC interval above 0.5);
- attribute inference (next): a model-free prior, the attack's accuracy against guessing
  the attribute's most frequent value, or the population's distribution of it, without
  the target;
- synthetic data: the control set, records the generator never saw, attacked like the
  training records (anonymeter's ``baseline`` / ``control`` rates and residual risk,
  :class:`~privaudit.results.RiskResult`);
- LLM and machine unlearning: a reference model (retrained without the forget set, or a
  model never trained on the members), whose scores give the leakage that is not due to
  the records themselves.

Only what can be tested today is implemented: the random guess. The others land with their
audit kinds, behind the same ``check``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from privaudit.results import BaselineCheck

__all__ = ["Baseline", "RandomGuessBaseline"]


@runtime_checkable
class Baseline(Protocol):
    """Compares a finished result with what an attacker would get without the leak.

    ``check(result, random_state)`` warns (a :class:`~privaudit.exceptions.BaselineWarning`
    or a subclass) when the result is no better than the baseline, and returns the
    :class:`~privaudit.results.BaselineCheck` the audit stamps on ``result.audit.baseline``
    (its name, whether the result passed, the baseline's own numbers), or None when the
    comparison does not apply (e.g. one class only).
    """

    name: str

    def check(self, result: Any, random_state: int) -> BaselineCheck | None: ...


class RandomGuessBaseline:
    """Membership inference against a coin flip: the AUC's interval must lie above 0.5.

    Parameters
    ----------
    n_bootstrap : int, default=200
        Bootstrap resamples of the AUC interval
        (:meth:`~privaudit.results.AttackResult.check_baseline`).
    confidence : float, default=0.95
        Level of that interval.

    Examples
    --------
    >>> import numpy as np
    >>> from privaudit.audits import RandomGuessBaseline
    >>> from privaudit.results import AttackResult
    >>> r = AttackResult(labels=np.r_[np.ones(50), np.zeros(50)],
    ...                  scores=np.r_[np.ones(50), np.zeros(50)])
    >>> RandomGuessBaseline().check(r, random_state=0).passed
    True
    """

    name = "random-guess"

    def __init__(self, n_bootstrap: int = 200, confidence: float = 0.95) -> None:
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence

    def __repr__(self) -> str:
        return f"RandomGuessBaseline(n_bootstrap={self.n_bootstrap}, confidence={self.confidence})"

    def check(self, result: Any, random_state: int) -> BaselineCheck | None:
        """Warn (BaselineWarning) and flag when the AUC interval does not lie above 0.5."""
        if not (result.n_members and result.n_non_members):
            return None
        better = result.check_baseline(n_bootstrap=self.n_bootstrap,
                                       confidence=self.confidence, random_state=random_state)
        return BaselineCheck(name=self.name, passed=better,
                             details={"n_bootstrap": self.n_bootstrap,
                                      "confidence": self.confidence})
