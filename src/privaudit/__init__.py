"""privaudit: measure how much a trained artefact leaks about the records it was built from.

``import privaudit`` is light: the audits, the report and the results are imported when a
name of theirs is first used (PEP 562), so a worker process that imports one subpackage
(``privaudit.training`` to train a reference model) does not pay for the others, and
heavy libraries (torch, transformers, spaCy, Ray, matplotlib) are imported where they are
used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_attributes
from privaudit._version import __version__
from privaudit.exceptions import (
    BaselineWarning,
    DegenerateInputWarning,
    FidelityWarning,
    NotFittedError,
    PrivauditWarning,
    StaleResultWarning,
)

if TYPE_CHECKING:  # the names below, for type checkers and IDEs
    from privaudit.audits import (
        PrivacyEvaluator,
        audit_attributes,
        audit_dp_training,
        audit_generator,
        audit_llm,
        audit_model,
        audit_strong_membership,
        audit_synthetic,
        audit_unlearning,
    )
    from privaudit.policy import gate, load_policy
    from privaudit.report import AuditReport
    from privaudit.results import AttackResult

#: The public names imported on first use, and the subpackage each comes from.
_LAZY_NAMES: dict[str, str] = {
    **dict.fromkeys(("PrivacyEvaluator", "audit_attributes", "audit_dp_training",
                     "audit_generator", "audit_llm", "audit_model", "audit_strong_membership",
                     "audit_synthetic", "audit_unlearning"), "privaudit.audits"),
    "AuditReport": "privaudit.report",
    # The CI gate: budgets on the audit's numbers (docs/ci_gate.md).
    **dict.fromkeys(("gate", "load_policy"), "privaudit.policy"),
    "AttackResult": "privaudit.results",
}
#: Subpackages reachable as attributes (``privaudit.metrics.roc_auc``) once imported or
#: on first use.
_SUBPACKAGES = frozenset({"attacks", "audits", "cli", "data", "dp", "integrations", "llm",
                          "metrics", "policy", "report", "results", "signals", "studies",
                          "synthetic", "targets", "training", "unlearn"})

__all__ = [
    "AttackResult",
    "AuditReport",
    "BaselineWarning",
    "DegenerateInputWarning",
    "FidelityWarning",
    "NotFittedError",
    "PrivacyEvaluator",
    "PrivauditWarning",
    "StaleResultWarning",
    "__version__",
    "audit_attributes",
    "audit_dp_training",
    "audit_generator",
    "audit_llm",
    "audit_model",
    "audit_strong_membership",
    "audit_synthetic",
    "audit_unlearning",
    "gate",
    "load_policy",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, _SUBPACKAGES)
