"""Membership inference on causal language models: the statistics of the MIA metrics guide.

:func:`score_texts` computes, for each text, LOSS, Min-K%, Min-K%++, zlib and DC-PDD from
ONE forward pass per batch (plus one pass of a reference model for ``reference``, one pass
with a known non-member prefix for ``recall``, one vectorised backward pass for
``gradnorm``), in bounded memory. :class:`BlindBaseline` reads the texts alone (Das et
al.): when it separates the two sets as well as an attack, that attack's AUC says nothing
about memorisation. :func:`privaudit.audit_llm` runs both on the audit spine (members vs
non-members, or forget vs holdout).

Nothing here imports torch or transformers at module level.
"""

from privaudit.llm._blind import BlindBaseline, date_features
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
    "STATISTICS",
    "STATISTIC_REVISIONS",
    "BlindBaseline",
    "compat_key",
    "date_features",
    "encode_texts",
    "frequency_table",
    "gradient_norms",
    "score_texts",
    "statistic_key",
]
