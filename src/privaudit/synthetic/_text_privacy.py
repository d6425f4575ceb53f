"""Text privacy of a synthetic corpus: entities, nominal mentions, style, memorisation.

The source's ``text_privacy`` metric, for a synthetic corpus against the original
(training) corpus, and a holdout corpus of real texts the generator never saw when given:

- **named entities** (spaCy; or a flair tagger with ``ner="flair"``, read by
  :func:`~privaudit.synthetic.load_flair_tagger`, which runs no code from the file):
  persons, organisations, places and other named things (the CoNLL scheme PER / ORG /
  LOC / MISC; dates and numbers are not entities here), filtered as the source does
  (shorter than 2 or longer than 50 characters, digits only, URLs, e-mail addresses);
  the entity density (entities per token, over the corpus) and the overlap: the share of
  the original's distinct entities found again in the synthetic corpus, beside the
  holdout's overlap with the original (unseen real text shares names too: only overlap
  above it is alarming);
- **nominal mentions**: proper nouns, nouns in subject position and nouns naming a role,
  a relationship or a family member; density and overlap the same way;
- **stylistic outliers**: texts whose mean cosine distance to their own corpus lies more
  than ``z`` standard deviations above the corpus's mean, in ONE embedding space for both
  corpora (the source trains a Word2Vec per corpus, whose spaces cannot be compared). For
  unit vectors ``mean_j (1 - e_i . e_j) = 1 - e_i . mean(E)``: linear in the corpus, no
  ``n x n`` matrix;
- **memorisation** (not in the source; Carlini et al.): each synthetic text's highest
  cosine similarity to a training text, the share above ``memorization_similarity``, and
  the same for holdout texts as the baseline; the closest pairs for the report.

References
----------
.. [1] Carlini, N. et al. "Extracting Training Data from Large Language Models." USENIX
   Security 2021.
.. [2] Reimers, N. and Gurevych, I. "Sentence-BERT." EMNLP 2019.
.. [3] Tjong Kim Sang, E. F. and De Meulder, F. "Introduction to the CoNLL-2003 Shared
   Task: Language-Independent Named Entity Recognition." CoNLL 2003.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privaudit._validation import param_error
from privaudit.exceptions import DegenerateInputWarning
from privaudit.synthetic._text_models import SPACY_PIPELINE, cached, load_embedder, load_spacy

__all__ = ["TEXT_THRESHOLDS", "mean_cosine_distances", "nearest_similarities", "text_distances",
           "text_privacy"]

_FUNC = "text_privacy"

#: The source's alert levels, all configurable (``thresholds=``).
TEXT_THRESHOLDS: dict[str, float] = {
    "entity_density_high": 0.10, "entity_density_moderate": 0.05,
    "entity_overlap_high": 50.0,
    "nominal_density_high": 0.15, "nominal_density_moderate": 0.10,
    "nominal_overlap_high": 50.0,
    "outlier_percentage_high": 10.0, "outlier_percentage_moderate": 5.0,
    "outlier_z": 2.0, "outlier_ratio_high": 2.0,
    "memorization_similarity": 0.95, "memorization_percentage_high": 1.0,
}

#: spaCy's OntoNotes labels (and flair's, which are the same or CoNLL's) to CoNLL's.
_LABELS = {"PERSON": "PER", "PER": "PER", "MISC": "MISC", "ORG": "ORG", "GPE": "LOC",
           "LOC": "LOC", "FAC": "LOC", "NORP": "MISC", "PRODUCT": "MISC", "EVENT": "MISC",
           "WORK_OF_ART": "MISC", "LAW": "MISC", "LANGUAGE": "MISC"}
_URL = re.compile(r"(https?://|www\.)\S+|\S+@\S+\.\w+")
#: Roles, relationships and family terms counted as nominal mentions wherever they stand.
ROLE_WORDS = frozenset("""
mother father mom dad mum parent son daughter child kid baby brother sister sibling
husband wife spouse partner boyfriend girlfriend fiance fiancee grandmother grandfather
grandma grandpa grandparent grandson granddaughter aunt uncle cousin niece nephew family
friend colleague coworker neighbor neighbour roommate classmate boss manager employee
employer teacher student professor doctor nurse patient lawyer client customer
president senator governor mayor minister officer soldier pastor priest coach player
""".split())


# --------------------------------------------------------------------------- annotation


def _keep_entity(text: str) -> bool:
    stripped = text.strip()
    return (2 <= len(stripped) <= 50 and not stripped.replace(" ", "").isdigit()
            and not _URL.search(stripped) and any(c.isalpha() for c in stripped))


def _annotate(doc: Any) -> dict[str, Any]:
    """One parsed text: its entities, its nominal mentions, its number of tokens."""
    entities = [[e.text.strip().lower(), _LABELS[e.label_]] for e in doc.ents
                if e.label_ in _LABELS and _keep_entity(e.text)]
    nominals = [t.lemma_.lower() for t in doc if (
        t.pos_ == "PROPN" or (t.pos_ == "NOUN" and (
            t.dep_ in ("nsubj", "nsubjpass") or t.lemma_.lower() in ROLE_WORDS)))
        and not t.is_stop and len(t.text) > 1 and t.text.isalpha()]
    return {"entities": entities, "nominals": nominals,
            "tokens": sum(1 for t in doc if not t.is_space)}


def _ner_pipeline(nlp: Any = None, ner: str = "spacy", flair_model: Any = None,
                 func: str = "annotate_texts") -> Any:
    """The pipeline that annotates texts: spaCy's, or spaCy's with flair's entities.

    Parameters
    ----------
    nlp : spacy.Language or FlairNER, optional
        A ready pipeline (default: the packaged English spaCy pipeline).
    ner : {"spacy", "flair"}, default="spacy"
        The named-entity recogniser. ``"flair"`` reads the tagger ``flair_model`` with
        :func:`~privaudit.synthetic.load_flair_tagger` (no code in the file runs) and keeps
        ``nlp`` for tokens and nominal mentions.
    flair_model : path-like, optional
        The flair SequenceTagger file; required with ``ner="flair"`` only.
    func : str
        The public function whose arguments these are (for error messages).

    Returns
    -------
    object
        A pipeline with ``pipe(texts, batch_size=...)`` and ``meta``.
    """
    if ner not in ("spacy", "flair"):
        raise param_error("ner", func, "'spacy' or 'flair'", ner)
    if ner == "spacy":
        if flair_model is not None:
            raise param_error("flair_model", func, "None unless ner='flair'", flair_model)
        return nlp if nlp is not None else load_spacy()
    if flair_model is None:
        raise param_error("flair_model", func, "a flair SequenceTagger file with ner='flair'",
                          None, error=TypeError)
    from privaudit.synthetic._flair import flair_ner

    return flair_ner(flair_model, nlp)


def annotate_texts(texts: Sequence[str], *, nlp: Any = None, batch_size: int = 64,
                   cache_dir: Any = None, ner: str = "spacy",
                   flair_model: Any = None) -> list[dict[str, Any]]:
    """Entities, nominal mentions and token counts of each text (cached when asked).

    Parameters
    ----------
    texts : sequence of str
        The texts.
    nlp : spacy.Language or FlairNER, optional
        The pipeline (default: the packaged English spaCy pipeline). A
        :class:`~privaudit.synthetic.FlairNER` takes its entities from a flair tagger.
    batch_size : int, default=64
        Texts per batch.
    cache_dir : path, optional
        Where the annotations are cached, keyed by the pipeline's name and version (a
        flair tagger's file digest) and the texts. A pipeline without a name is not cached.
    ner : {"spacy", "flair"}, default="spacy"
        The named-entity recogniser; ``"flair"`` needs ``flair_model``.
    flair_model : path-like, optional
        A flair SequenceTagger file (``privaudit[flair]``), read without unpickling code.

    Returns
    -------
    list of dict
        Per text: ``entities`` (``[text, label]``, lower-cased, labels PER / ORG / LOC /
        MISC), ``nominals`` (lemmas) and ``tokens`` (spaCy's, whichever recogniser).
    """
    model = _ner_pipeline(nlp, ner, flair_model, "annotate_texts")
    name = model.meta.get("name", SPACY_PIPELINE)
    if name is None:
        cache_dir = None  # a pipeline without an identity is never cached
    key = ["annotate/1", f"{name}@{model.meta.get('version', '?')}", list(texts)]
    return cached(cache_dir, "json", key, lambda: [
        _annotate(doc) for doc in model.pipe(list(texts), batch_size=batch_size)])


# --------------------------------------------------------------------------- numbers


def mean_cosine_distances(embeddings: np.ndarray) -> np.ndarray:
    """Each unit vector's mean cosine distance to all vectors of its set (itself too).

    ``1 - e_i . mean(E)``: exact for unit vectors, linear in the number of texts.
    """
    e = np.asarray(embeddings, dtype=np.float64)
    return 1.0 - e @ e.mean(axis=0) if len(e) else np.zeros(0)


def nearest_similarities(queries: np.ndarray, corpus: np.ndarray,
                         chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Highest cosine similarity of each query to a corpus vector, and its position.

    Chunked matrix products: memory ``chunk x len(corpus)``.
    """
    best = np.full(len(queries), -np.inf)
    where = np.zeros(len(queries), dtype=np.int64)
    for start in range(0, len(queries), chunk):
        # float32 embeddings can give 1 + 1e-7 for identical texts: clipped.
        sims = np.clip(queries[start:start + chunk] @ corpus.T, -1.0, 1.0)
        where[start:start + chunk] = np.argmax(sims, axis=1)
        best[start:start + chunk] = sims[np.arange(len(sims)), where[start:start + chunk]]
    return best, where


def _level(value: float, high: float, moderate: float | None = None) -> str:
    if math.isnan(value):
        return "undefined"
    if value > high:
        return "high"
    return "moderate" if moderate is not None and value > moderate else "low"


def _density(annotations: list[dict[str, Any]], key: str) -> tuple[int, float]:
    total = sum(len(a[key]) for a in annotations)
    tokens = sum(a["tokens"] for a in annotations)
    return total, (total / tokens if tokens else math.nan)


def _overlap(original: list[dict[str, Any]], other: list[dict[str, Any]], key: str) -> float:
    """Share (%) of the original's distinct items found in ``other``."""
    def items(parsed: list[dict[str, Any]]) -> set[Any]:
        return {tuple(x) if isinstance(x, list) else x for a in parsed for x in a[key]}

    source = items(original)
    return 100.0 * len(source & items(other)) / len(source) if source else math.nan


# --------------------------------------------------------------------------- the checks


def _mention_section(ann: dict[str, list[dict[str, Any]]], key: str, prefix: str,
                     th: dict[str, float]) -> dict[str, Any]:
    label = "entities" if key == "entities" else "nominals"
    out: dict[str, Any] = {}
    for corpus in ("synthetic", "original"):
        total, density = _density(ann[corpus], key)
        out[corpus] = {f"total_{label}": total, f"avg_{prefix}_density": density,
                       "risk_level": _level(density, th[f"{prefix}_density_high"],
                                            th[f"{prefix}_density_moderate"])}
    overlap = _overlap(ann["original"], ann["synthetic"], key)
    out["overlap"] = {"overlap_percentage": overlap,
                      "risk_level": _level(overlap, th[f"{prefix}_overlap_high"])}
    if "holdout" in ann:
        base = _overlap(ann["original"], ann["holdout"], key)
        out["overlap"].update(holdout_overlap_percentage=base,
                              above_holdout=None if math.isnan(overlap) or math.isnan(base)
                              else bool(overlap > base))
    return out


def _outliers(emb: dict[str, np.ndarray], th: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for corpus in ("synthetic", "original"):
        distances = mean_cosine_distances(emb[corpus])
        spread = distances.std()
        z = (distances - distances.mean()) / spread if spread > 0 else np.zeros_like(distances)
        count = int((z > th["outlier_z"]).sum())
        share = 100.0 * count / len(z) if len(z) else math.nan
        out[corpus] = {"num_outliers": count, "outlier_percentage": share,
                       "risk_level": _level(share, th["outlier_percentage_high"],
                                            th["outlier_percentage_moderate"])}
    syn, ori = out["synthetic"]["outlier_percentage"], out["original"]["outlier_percentage"]
    ratio = syn / ori if ori > 0 else (math.nan if syn == 0 or math.isnan(syn) else math.inf)
    out["comparison"] = {"outlier_ratio": ratio,
                         "risk_level": _level(ratio, th["outlier_ratio_high"])}
    return out


def _memorization(emb: dict[str, np.ndarray], th: dict[str, float], n_pairs: int = 5
                  ) -> dict[str, Any]:
    cut = th["memorization_similarity"]
    best, where = nearest_similarities(emb["synthetic"], emb["original"])
    share = 100.0 * float((best >= cut).mean()) if len(best) else math.nan
    out: dict[str, Any] = {
        "similarity_threshold": cut, "memorized_percentage": share,
        "median_nearest_similarity": float(np.median(best)) if len(best) else math.nan,
        "risk_level": _level(share, th["memorization_percentage_high"]),
        "closest_pairs": [{"synthetic_index": int(i), "original_index": int(where[i]),
                           "similarity": float(best[i])}
                          for i in np.argsort(-best, kind="stable")[:n_pairs]]}
    if "holdout" in emb:
        base, _ = nearest_similarities(emb["holdout"], emb["original"])
        held = 100.0 * float((base >= cut).mean()) if len(base) else math.nan
        out.update(holdout_memorized_percentage=held,
                   above_holdout=None if math.isnan(share) or math.isnan(held)
                   else bool(share > held))
    return out


def _corpus(texts: Any, param: str) -> list[str]:
    if texts is None:
        return []
    if isinstance(texts, str) or not hasattr(texts, "__iter__"):
        raise param_error(param, _FUNC, "a sequence of strings", texts, error=TypeError)
    values = list(texts)
    bad = [v for v in values if not (isinstance(v, str) or v is None or (
        isinstance(v, float) and math.isnan(v)))]
    if bad:
        raise param_error(param, _FUNC, "strings (missing values allowed)", bad[0],
                          error=TypeError)
    return [v if isinstance(v, str) else "" for v in values]


def _thresholds(given: Any) -> dict[str, float]:
    given = dict(given or {})
    unknown = set(given) - set(TEXT_THRESHOLDS)
    if unknown:
        raise param_error("thresholds", _FUNC, f"keys among {sorted(TEXT_THRESHOLDS)}",
                          sorted(unknown))
    return {**TEXT_THRESHOLDS, **given}


def text_privacy(synthetic: Sequence[str], original: Sequence[str], *,
                 holdout: Sequence[str] | None = None, thresholds: Any = None,
                 cache_dir: Any = None, batch_size: int = 64, nlp: Any = None,
                 embed: Callable[[Sequence[str]], np.ndarray] | None = None,
                 checks: Sequence[str] = ("named_entities", "nominal_mentions",
                                          "stylistic_outliers", "memorization"),
                 ner: str = "spacy", flair_model: Any = None,
                 ) -> dict[str, Any]:
    """The source's text privacy metrics, with the holdout baselines (see the module).

    Parameters
    ----------
    synthetic, original : sequence of str
        The synthetic corpus and the corpus its generator was trained on.
    holdout : sequence of str, optional
        Real texts the generator never saw: the baselines of overlap and memorisation.
    thresholds : mapping, optional
        Overrides of :data:`TEXT_THRESHOLDS`.
    cache_dir : path, optional
        Where the parses and embeddings are cached (keyed by a hash of the content).
    batch_size : int, default=64
        Texts per spaCy / encoder batch.
    nlp, embed : optional
        A spaCy pipeline (or a :class:`~privaudit.synthetic.FlairNER`) and an encoder
        (texts -> unit vectors) to use instead of the packaged ones.
    checks : sequence of str
        Which of the four analyses to run.
    ner : {"spacy", "flair"}, default="spacy"
        The named-entity recogniser; ``"flair"`` reads the tagger ``flair_model`` (a
        SequenceTagger file, ``privaudit[flair]``) without unpickling code, and spaCy still
        gives the tokens and nominal mentions.
    flair_model : path-like, optional
        The flair tagger's file, with ``ner="flair"``.

    Returns
    -------
    dict
        ``named_entities``, ``nominal_mentions``, ``stylistic_outliers``,
        ``memorization``, in the source's shapes, baselines beside them.

    Warns
    -----
    DegenerateInputWarning
        When a corpus has no token (its numbers are NaN).
    """
    th = _thresholds(thresholds)
    corpora = {"synthetic": _corpus(synthetic, "synthetic"),
               "original": _corpus(original, "original")}
    if holdout is not None:
        corpora["holdout"] = _corpus(holdout, "holdout")
    unknown = set(checks) - {"named_entities", "nominal_mentions", "stylistic_outliers",
                             "memorization"}
    if unknown:
        raise param_error("checks", _FUNC, "names among named_entities, nominal_mentions, "
                          "stylistic_outliers, memorization", sorted(unknown))
    out: dict[str, Any] = {}
    if {"named_entities", "nominal_mentions"} & set(checks):
        pipeline = _ner_pipeline(nlp, ner, flair_model, _FUNC)
        ann = {k: annotate_texts(v, nlp=pipeline, batch_size=batch_size, cache_dir=cache_dir)
               for k, v in corpora.items()}
        _warn_empty(ann)
        if "named_entities" in checks:
            out["named_entities"] = _mention_section(ann, "entities", "entity", th)
        if "nominal_mentions" in checks:
            out["nominal_mentions"] = _mention_section(ann, "nominals", "nominal", th)
    if {"stylistic_outliers", "memorization"} & set(checks):
        emb = _embeddings(corpora, embed, batch_size, cache_dir)
        if "stylistic_outliers" in checks:
            out["stylistic_outliers"] = _outliers(emb, th)
        if "memorization" in checks:
            out["memorization"] = _memorization(emb, th)
    return out


def _embeddings(corpora: dict[str, list[str]], embed: Any, batch_size: int,
                cache_dir: Any) -> dict[str, np.ndarray]:
    encoder = embed if embed is not None else load_embedder(batch_size)
    name = getattr(encoder, "model_id", None)
    if name is None:
        cache_dir = None  # an encoder without an identity is never cached
    return {k: np.asarray(cached(cache_dir, "npz", ["embed/1", name, v],
                                 lambda v=v: encoder(v)), dtype=np.float64)
            for k, v in corpora.items()}


def _warn_empty(ann: dict[str, list[dict[str, Any]]]) -> None:
    for corpus, parsed in ann.items():
        if not sum(a["tokens"] for a in parsed):
            warnings.warn(f"{_FUNC}: the {corpus} corpus has no token; its densities and "
                          "overlaps are NaN.", DegenerateInputWarning, stacklevel=3)


def text_distances(synthetic: Any, original: Any, holdout: Any, columns: Sequence[str], *,
                   embed: Any = None, cache_dir: Any = None) -> tuple[np.ndarray, Any]:
    """``1 - cosine`` from each synthetic (and holdout) text to its closest training text.

    Over the text ``columns`` of the three tables, pooled (one value per row and column);
    the holdout's array is None without a holdout. Empty texts are left out.
    """
    encoder = embed if embed is not None else load_embedder()
    syn_all, held_all = [], []
    for column in columns:
        corpora = {"synthetic": _corpus(synthetic[column], "synthetic"),
                   "original": _corpus(original[column], "original")}
        if holdout is not None:
            corpora["holdout"] = _corpus(holdout[column], "holdout")
        corpora = {k: [t for t in v if t.strip()] for k, v in corpora.items()}
        emb = _embeddings(corpora, encoder, 64, cache_dir)
        syn_all.append(1.0 - nearest_similarities(emb["synthetic"], emb["original"])[0])
        if holdout is not None:
            held_all.append(1.0 - nearest_similarities(emb["holdout"], emb["original"])[0])
    syn = np.clip(np.concatenate(syn_all), 0.0, 2.0) if syn_all else np.zeros(0)
    held = None if holdout is None else np.clip(np.concatenate(held_all), 0.0, 2.0)
    return syn, held
