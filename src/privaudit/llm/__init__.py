"""Membership inference on causal language models: the statistics of the MIA metrics guide.

:func:`score_texts` computes, for each text, LOSS, Min-K%, Min-K%++, zlib and DC-PDD from
ONE forward pass per batch (plus one pass of a reference model for ``reference``, one pass
with a known non-member prefix for ``recall``, one vectorised backward pass for
``gradnorm``), in bounded memory; texts longer than the model's context by a sliding
window (``stride=``, Hugging Face's perplexity recipe), (prompt, answer) pairs through the
tokenizer's chat template (``chat_template=True``). :class:`BlindBaseline` reads the
texts alone (Das et al.): when it separates the two sets as well as an attack, that
attack's AUC says nothing about memorisation. :func:`privaudit.audit_llm` runs both on
the audit spine (members vs non-members, or forget vs holdout).

Memorisation measured by generation: :func:`extraction_checks` (k-extractability, Carlini
et al. 2023; extraction strength and exact memorisation, open-unlearning; VerbMem, MUSE)
from batched greedy continuations (:func:`greedy_continuations`). Canaries: secret-sharer
canaries and their exposure (Carlini et al. 2019: :func:`secret_sharer_canaries`,
:func:`insert_canaries`, :func:`canary_exposures`) and an epsilon lower bound from canaries
included at random (:func:`canary_epsilon`).

Nothing here imports torch or transformers at module level, nor scikit-learn:
:class:`BlindBaseline` (a scikit-learn estimator) is imported on first use, so that a
scoring worker process (``devices=``, ``n_jobs=``) does not spend two CPU-seconds
importing scikit-learn, SciPy and pandas it never uses.
"""

from privaudit._lazy import lazy_attributes
from privaudit.llm._canaries import (
    Canary,
    CanaryEpsilon,
    Exposure,
    Inserted,
    SecretSpace,
    canary_epsilon,
    canary_exposures,
    canary_scores,
    exposure,
    exposures,
    insert_canaries,
    rare_token_space,
    secret_log_perplexity,
    secret_sharer_canaries,
)
from privaudit.llm._extraction import CHECKS as EXTRACTION_CHECKS
from privaudit.llm._extraction import extraction_checks, greedy_continuations
from privaudit.llm._grad_norms import gradient_norms
from privaudit.llm._score import (
    COMPAT_REVISIONS,
    STATISTIC_REVISIONS,
    STATISTICS,
    compat_key,
    encode_texts,
    frequency_table,
    score_texts,
    statistic_key,
)

__all__ = [
    "COMPAT_REVISIONS",
    "EXTRACTION_CHECKS",
    "STATISTICS",
    "STATISTIC_REVISIONS",
    "BlindBaseline",
    "Canary",
    "CanaryEpsilon",
    "Exposure",
    "Inserted",
    "SecretSpace",
    "canary_epsilon",
    "canary_exposures",
    "canary_scores",
    "compat_key",
    "date_features",
    "encode_texts",
    "exposure",
    "exposures",
    "extraction_checks",
    "frequency_table",
    "gradient_norms",
    "greedy_continuations",
    "insert_canaries",
    "rare_token_space",
    "score_texts",
    "secret_log_perplexity",
    "secret_sharer_canaries",
    "statistic_key",
]

#: Public names imported on first use (PEP 562), and their modules.
_LAZY_NAMES = {"BlindBaseline": "privaudit.llm._blind", "date_features": "privaudit.llm._blind"}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES)
