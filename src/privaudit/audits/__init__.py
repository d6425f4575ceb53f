"""Audits: the audit template, every audit kind on it, and the ``audit_*`` functions.

Every kind is a small :class:`AuditKind` that :func:`drive` runs: its frozen
:class:`AuditSettings` (constraints declared once, checked before any work; ``NOT_IN_KEY``
lists the fields that cannot change a result), the shared :class:`RunOptions`
(``random_state``, ``executor``, ``n_jobs``, ``address``, ``cache_dir``, ``results_dir``,
``progress``, ``dataset``: checked and resolved once), its baseline and enrichers, its plan
(one :class:`Job` per result) and the work of one job (or of every missing job in one pass:
:class:`SharedPassKind`). Every ``audit_*`` is a keyword wrapper returning a
:class:`~privaudit.report.AuditReport`.

:class:`AuditRun` holds what makes an audit trustworthy, once for every kind: the run key
(a digest of the target's fingerprint, the data, the seed and the parameters), reuse of a
finished result from a :class:`~privaudit.results.ResultsStore`, ``finish`` (provenance
stamp -> baseline check -> enrichers such as :class:`SliceEnricher` -> atomic save),
progress and seeding. Each ``audit_*`` function is validate -> plan (from the attacks'
tags) -> loop. The baseline is chosen per kind behind :class:`Baseline`
(:class:`RandomGuessBaseline` for membership inference on a model,
:class:`BlindBaselineCheck` for a language model: a classifier reading the texts alone).

Kinds: :func:`audit_model` (classifiers and regressors), :func:`audit_llm` (causal
language models: members vs non-members, or an unlearned model's forget vs holdout) and
:func:`audit_synthetic` (a synthetic table against its training records, beside unseen
holdout records; :class:`PrivacyEvaluator` gives its results in the source document's
dict shapes) and :func:`audit_generator` (the generator behind synthetic data, attacked
through shadow runs as in TAPAS, one result per target record and attack) and
:func:`audit_attributes` (attribute inference against a model: guesses on members and
non-members beside model-free guesses, :class:`ModelFreeBaseline`) and
:func:`audit_unlearning` (an unlearned model: its forgotten records against records it never
trained on, with U-MIA, U-LiRA and the label-only Apollo attack).
"""

from privaudit.audits._attributes import (
    AUDIT_SET_PARAMS,
    DEFAULT_ATTRIBUTE_ATTACKS,
    MODEL_FREE_GUESSES,
    SHADOW_AI,
    THEORIES,
    AttributeAudit,
    AttributeSettings,
    AuditSetParam,
    ModelFreeBaseline,
    audit_attributes,
)
from privaudit.audits._baselines import Baseline, RandomGuessBaseline
from privaudit.audits._dp_training import (
    BOUND_METHODS,
    DPTrainingAudit,
    DPTrainingSettings,
    audit_dp_training,
)
from privaudit.audits._generator import (
    DEFAULT_GENERATOR_ATTACKS,
    DEFAULT_SHADOW_RUNS,
    EVEN_RUNS,
    GeneratorAudit,
    GeneratorSettings,
    TargetRuns,
    audit_generator,
    vulnerable_records,
)
from privaudit.audits._inputs import population_overlap
from privaudit.audits._llm import (
    DEFAULT_LLM_STATISTICS,
    LLM_STATISTIC_REGISTRY,
    LLM_STATISTICS,
    BlindBaselineAudit,
    LLMAudit,
    LLMSettings,
    LLMStatistic,
    audit_llm,
    guide_output,
)
from privaudit.audits._llm_checks import (
    RED_FLAG_THRESHOLDS,
    BlindBaselineCheck,
    BlindBaselineWarning,
    privleak,
    red_flags,
)
from privaudit.audits._llm_memorisation import (
    MEMORISATION_CHECKS,
    CanaryCheck,
    FineTuneRecipe,
    MemorisationAudit,
    MemorisationSettings,
    fine_tune_causal_lm,
)
from privaudit.audits._model import ModelAudit, ModelSettings, audit_model
from privaudit.audits._plan import (
    DEFAULT_ATTACKS,
    DEFAULT_REGRESSION_ATTACKS,
    ModelAuditPlan,
    default_attacks,
    plan_model_audit,
)
from privaudit.audits._privacy_evaluator import (
    DEFAULT_THRESHOLDS,
    PRIVACY_METRICS,
    PrivacyEvaluator,
)
from privaudit.audits._run import AuditRun, Enricher, digest
from privaudit.audits._slices import SLICE_SETTINGS, SliceEnricher, slice_result
from privaudit.audits._strong_membership import (
    SMI_ATTACKS,
    SMI_METRICS,
    StrongMembershipAudit,
    StrongMembershipSettings,
    audit_strong_membership,
    strong_membership_inference,
)
from privaudit.audits._synthetic import (
    DEFAULT_SYNTHETIC_CHECKS,
    SYNTHETIC_CHECKS,
    SyntheticAudit,
    SyntheticBaseline,
    SyntheticSettings,
    audit_synthetic,
)
from privaudit.audits._template import (
    AuditKind,
    AuditSettings,
    Job,
    RunOptions,
    SharedPassKind,
    drive,
)
from privaudit.audits._unlearning import (
    UNLEARNING_ATTACKS,
    UnlearningAudit,
    UnlearningSettings,
    audit_unlearning,
)

__all__ = [
    "AUDIT_SET_PARAMS",
    "BOUND_METHODS",
    "DEFAULT_ATTACKS",
    "DEFAULT_ATTRIBUTE_ATTACKS",
    "DEFAULT_GENERATOR_ATTACKS",
    "DEFAULT_LLM_STATISTICS",
    "DEFAULT_REGRESSION_ATTACKS",
    "DEFAULT_SHADOW_RUNS",
    "DEFAULT_SYNTHETIC_CHECKS",
    "DEFAULT_THRESHOLDS",
    "EVEN_RUNS",
    "LLM_STATISTICS",
    "LLM_STATISTIC_REGISTRY",
    "MEMORISATION_CHECKS",
    "MODEL_FREE_GUESSES",
    "PRIVACY_METRICS",
    "RED_FLAG_THRESHOLDS",
    "SHADOW_AI",
    "SLICE_SETTINGS",
    "SMI_ATTACKS",
    "SMI_METRICS",
    "SYNTHETIC_CHECKS",
    "THEORIES",
    "UNLEARNING_ATTACKS",
    "AttributeAudit",
    "AttributeSettings",
    "AuditKind",
    "AuditRun",
    "AuditSetParam",
    "AuditSettings",
    "Baseline",
    "BlindBaselineAudit",
    "BlindBaselineCheck",
    "BlindBaselineWarning",
    "CanaryCheck",
    "DPTrainingAudit",
    "DPTrainingSettings",
    "Enricher",
    "FineTuneRecipe",
    "GeneratorAudit",
    "GeneratorSettings",
    "Job",
    "LLMAudit",
    "LLMSettings",
    "LLMStatistic",
    "MemorisationAudit",
    "MemorisationSettings",
    "ModelAudit",
    "ModelAuditPlan",
    "ModelFreeBaseline",
    "ModelSettings",
    "PrivacyEvaluator",
    "RandomGuessBaseline",
    "RunOptions",
    "SharedPassKind",
    "SliceEnricher",
    "StrongMembershipAudit",
    "StrongMembershipSettings",
    "SyntheticAudit",
    "SyntheticBaseline",
    "SyntheticSettings",
    "TargetRuns",
    "UnlearningAudit",
    "UnlearningSettings",
    "audit_attributes",
    "audit_dp_training",
    "audit_generator",
    "audit_llm",
    "audit_model",
    "audit_strong_membership",
    "audit_synthetic",
    "audit_unlearning",
    "default_attacks",
    "digest",
    "drive",
    "fine_tune_causal_lm",
    "guide_output",
    "plan_model_audit",
    "population_overlap",
    "privleak",
    "red_flags",
    "slice_result",
    "strong_membership_inference",
    "vulnerable_records",
]
