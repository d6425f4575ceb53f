"""Privacy of synthetic data: what a synthetic table or corpus gives away about its source.

Everything distance-based (DCR, NNDR, linkability, inference, the generator attacks)
reads one exact mixed-type nearest-neighbour engine (:func:`nearest_neighbors`): numeric
columns scaled by their range, categorical mismatch, an explicit NaN policy, chunked
top-k in bounded memory, one BLAS product where the algebra allows. The closeness checks
(:func:`exact_matches`, :func:`identical_match_share`, :func:`closeness_checks`) compare
the synthetic rows with the training rows beside unseen holdout rows, and
:class:`Distinguisher` tells synthetic rows from original ones. The anonymeter
risks (:class:`SinglingOutEvaluator`, :class:`LinkabilityEvaluator`,
:class:`InferenceEvaluator`, anonymeter's arguments plus ``random_state``) count how often
an attacker reading the synthetic table singles out, links or infers training records,
beside a random-guess baseline and control records. :func:`text_privacy` reads text
columns: named entities (spaCy, or a flair tagger loaded without unpickling code:
:func:`load_flair_tagger`) and nominal mentions (spaCy), stylistic outliers and
memorisation in one sentence-embedding space.
:func:`privaudit.audit_synthetic` runs them all on the audit spine.

Generators with known privacy, for demos, tests and the generator audit
(:data:`BUILTIN_GENERATORS`): :func:`independent_marginals`, :func:`gaussian_copula`,
:func:`copying_generator` (leaky) and :class:`DPBayesianNetwork` (epsilon-DP over a public
:class:`TableDomain`). :func:`sdv_generator` runs one of SDV's synthesizers (Gaussian
copula, CTGAN, TVAE, CopulaGAN; ``privaudit[sdv]``) as such a generator, and
:func:`from_sdv_synthesizer` turns an SDV synthesizer object into one.

Nothing here imports spaCy, torch, flair, SDV or sentence-transformers at module level.
"""

from privaudit.synthetic._distinguish import Distinguisher
from privaudit.synthetic._flair import (
    FLAIR_EMBEDDINGS,
    FLAIR_SAFE_GLOBALS,
    FlairCheckpointError,
    FlairNER,
    flair_ner,
    load_flair_tagger,
)
from privaudit.synthetic._generators import (
    BUILTIN_GENERATORS,
    DPBayesianNetwork,
    TableDomain,
    builtin_generator,
    copying_generator,
    gaussian_copula,
    independent_marginals,
)
from privaudit.synthetic._metadata import SDTYPES, TableMetadata
from privaudit.synthetic._neighbors import (
    EncodedTable,
    MixedTypeEncoder,
    gower_distances,
    nearest_neighbors,
)
from privaudit.synthetic._risk_counts import Counts, PrivacyRisk, SuccessRate
from privaudit.synthetic._risk_linkage import (
    InferenceEvaluator,
    LinkabilityEvaluator,
    inference_guesses_correct,
)
from privaudit.synthetic._risk_singling_out import SinglingOutEvaluator
from privaudit.synthetic._sdv import from_sdv_synthesizer, sdv_generator
from privaudit.synthetic._tabular import closeness_checks, exact_matches, identical_match_share
from privaudit.synthetic._text_privacy import (
    TEXT_THRESHOLDS,
    annotate_texts,
    mean_cosine_distances,
    nearest_similarities,
    text_distances,
    text_privacy,
)

__all__ = [
    "BUILTIN_GENERATORS",
    "FLAIR_EMBEDDINGS",
    "FLAIR_SAFE_GLOBALS",
    "SDTYPES",
    "TEXT_THRESHOLDS",
    "Counts",
    "DPBayesianNetwork",
    "Distinguisher",
    "EncodedTable",
    "FlairCheckpointError",
    "FlairNER",
    "InferenceEvaluator",
    "LinkabilityEvaluator",
    "MixedTypeEncoder",
    "PrivacyRisk",
    "SinglingOutEvaluator",
    "SuccessRate",
    "TableDomain",
    "TableMetadata",
    "annotate_texts",
    "builtin_generator",
    "closeness_checks",
    "copying_generator",
    "exact_matches",
    "flair_ner",
    "from_sdv_synthesizer",
    "gaussian_copula",
    "gower_distances",
    "identical_match_share",
    "independent_marginals",
    "inference_guesses_correct",
    "load_flair_tagger",
    "mean_cosine_distances",
    "nearest_neighbors",
    "nearest_similarities",
    "sdv_generator",
    "text_distances",
    "text_privacy",
]
