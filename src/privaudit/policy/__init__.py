"""The CI gate: a policy's budgets checked on audit results, with pass/fail and JUnit XML.

A policy (:func:`load_policy`, a YAML file) lists rules; each covers results by
``fnmatch`` patterns on their target, attack and audit kind, and sets a budget per metric
(:data:`METRICS`: ``auc``, ``advantage``, ``tpr_at_fpr``, ``effective_epsilon``, ``risk``,
``attribute_advantage``, ``attribute_simulator_advantage``, ``epsilon_lower_bound``,
``extraction``, ``exposure``; a kind of result none reads is in :data:`NOT_BUDGETED`).
:func:`gate` checks every budget on every result it covers, reading the lower end of the
metric's 95% interval (a budget is exceeded only when the evidence says so) or, at basis
``point``, the point estimate, and returns a :class:`GateResult`: the checks, ``passed``,
a table, and :meth:`GateResult.to_junit`; the results no check read are counted and named
with the reason (:attr:`GateResult.left_out`), never silently passed. ``privaudit gate``
and ``privaudit audit ... --gate`` are the same in the shell (exit 0: passed, 1: a budget
exceeded, 2: bad input).
See ``docs/ci_gate.md``.

Layering: reads results (:mod:`privaudit.results`) and the report's readings
(:mod:`privaudit.report`); imported by the CLI and the integrations.
"""

from privaudit.policy._gate import GateCheck, GateResult, NotGated, UnmatchedBudgetWarning, gate
from privaudit.policy._schema import (
    BASES,
    EXTRACTION_BUDGET_CHECKS,
    METRICS,
    NOT_BUDGETED,
    UNMEASURABLE,
    Budget,
    MetricSpec,
    Policy,
    PolicyError,
    Rule,
    load_policy,
    reading_type,
)

__all__ = [
    "BASES",
    "EXTRACTION_BUDGET_CHECKS",
    "METRICS",
    "NOT_BUDGETED",
    "UNMEASURABLE",
    "Budget",
    "GateCheck",
    "GateResult",
    "MetricSpec",
    "NotGated",
    "Policy",
    "PolicyError",
    "Rule",
    "UnmatchedBudgetWarning",
    "gate",
    "load_policy",
    "reading_type",
]
