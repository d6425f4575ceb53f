"""privaudit: measure how much a trained artefact leaks about the records it was built from.

``import privaudit`` stays light: numpy, scipy and pandas at most. Heavy libraries (torch,
transformers, spaCy, Ray, matplotlib) are imported where they are used.
"""

from privaudit._version import __version__
from privaudit.audits import (
    PrivacyEvaluator,
    audit_attributes,
    audit_generator,
    audit_llm,
    audit_model,
    audit_strong_membership,
    audit_synthetic,
    audit_unlearning,
)
from privaudit.exceptions import (
    BaselineWarning,
    DegenerateInputWarning,
    FidelityWarning,
    NotFittedError,
    PrivauditWarning,
    StaleResultWarning,
)
from privaudit.report import AuditReport
from privaudit.results import AttackResult

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
    "audit_generator",
    "audit_llm",
    "audit_model",
    "audit_strong_membership",
    "audit_synthetic",
    "audit_unlearning",
]
