"""Audits: the shared run of every audit kind and the ``audit_*`` functions built on it.

:class:`AuditRun` holds what makes an audit trustworthy, once for every kind: the run key
(a digest of the target's fingerprint, the data, the seed and the parameters), reuse of a
finished result from a :class:`~privaudit.results.ResultsStore`, ``finish`` (provenance
stamp -> baseline check -> enrichers such as :class:`SliceEnricher` -> atomic save),
progress and seeding. Each ``audit_*`` function is validate -> plan (from the attacks'
tags) -> loop. The baseline is chosen per kind behind :class:`Baseline`
(:class:`RandomGuessBaseline` for membership inference on a model).
"""

from privaudit.audits._baselines import Baseline, RandomGuessBaseline
from privaudit.audits._inputs import population_overlap
from privaudit.audits._model import audit_model
from privaudit.audits._plan import (
    DEFAULT_ATTACKS,
    DEFAULT_REGRESSION_ATTACKS,
    ModelAuditPlan,
    default_attacks,
    plan_model_audit,
)
from privaudit.audits._run import AuditRun, Enricher, digest
from privaudit.audits._slices import SLICE_SETTINGS, SliceEnricher, slice_result

__all__ = [
    "DEFAULT_ATTACKS",
    "DEFAULT_REGRESSION_ATTACKS",
    "SLICE_SETTINGS",
    "AuditRun",
    "Baseline",
    "Enricher",
    "ModelAuditPlan",
    "RandomGuessBaseline",
    "SliceEnricher",
    "audit_model",
    "default_attacks",
    "digest",
    "plan_model_audit",
    "population_overlap",
    "slice_result",
]
