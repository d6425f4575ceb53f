"""The result of a memorisation check of a language model: extraction, or canaries.

A :class:`MemorisationResult` is what ``audit_llm(..., checks=[...])`` adds to its report
(issue 23), one per kind of check:

- ``check="extraction"``: each audited text's values of the extraction checks (greedy
  continuation of a prefix against the true suffix: k-extractability and the longest
  common token prefix, Carlini et al. 2023; extraction strength and exact memorisation,
  open-unlearning; VerbMem, MUSE), the members-vs-held-out comparison of each check with
  its intervals (a rate's Wilson interval, their difference's Newcombe interval, the
  AUC of the check read as a membership score), and the decoded prefixes, continuations
  and true suffixes, for the report to show what was extracted.
- ``check="canaries"``: each secret-sharer canary's exposure (Carlini et al. 2019) with
  its repetitions, and, when the canaries were included at random, the one-run epsilon
  lower bound (Steinke, Nasr and Jagielski 2023) read from their scores.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_fraction, param_error
from privaudit.results._audit_info import AuditInfo, notebook_html
from privaudit.results._family import ResultFamily
from privaudit.results._io import ResultFileError, dump_json, read_sealed_result

__all__ = ["CANARY_KEYS", "COMPARISON_KEYS", "MEMORISATION_CHECKS", "MEMORISATION_FILE",
           "MemorisationResult"]

#: Name of the file a :class:`MemorisationResult` is saved to, inside its folder.
MEMORISATION_FILE = "memorisation.json"
_FORMAT = "privaudit.memorisation/1"
_FUNC = "MemorisationResult"
#: The two kinds of memorisation check a result holds.
MEMORISATION_CHECKS = ("extraction", "canaries")
#: What each canary's row holds (``included``: None when every canary was inserted).
CANARY_KEYS = ("format", "secret", "repetitions", "exposure", "rank", "log_perplexity",
               "method", "space_size", "included", "score")
#: What each extraction check's comparison holds, each as ``{"value", "low", "high"}``.
COMPARISON_KEYS = ("member_mean", "held_out_mean", "difference", "auc")
_TEXTS = ("check", "attack", "target", "dataset")
_TEXT_LISTS = ("prefixes", "continuations", "suffixes")


def _per_text(value: Any, name: str, n: int, dtype: Any) -> NDArray[Any]:
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError):  # text, nested lists, 1e20 as int64
        raise param_error(name, _FUNC, f"one {np.dtype(dtype).name} per text ({n})",
                          f"<{type(value).__name__}>", error=TypeError) from None
    if arr.shape != (n,):
        raise param_error(name, _FUNC, f"one value per text ({n})", f"<shape {arr.shape}>")
    return arr


def _string_list(value: Any, name: str, n: int) -> list[str]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != n \
            or not all(isinstance(v, str) for v in value):
        raise param_error(name, _FUNC, f"a list of {n} strings (one per text)",
                          f"<{type(value).__name__}>", error=TypeError)
    return list(value)


def _comparison(value: Any, check: str) -> dict[str, Any]:
    """A check's comparison: each of :data:`COMPARISON_KEYS` an estimate (value, low, high)."""
    ok = isinstance(value, Mapping) and all(
        isinstance(value.get(k), Mapping) and {"value", "low", "high"} <= set(value[k])
        for k in COMPARISON_KEYS)
    if not ok:
        raise param_error(f"comparisons.{check}", _FUNC,
                          f"a mapping with {list(COMPARISON_KEYS)}, each "
                          "{'value', 'low', 'high'}", value, error=TypeError)
    return dict(value)


#: The type each field of a canary's row must have (``included``: None or a bool).
_CANARY_TYPES: dict[str, tuple[type, ...]] = {
    "format": (str,), "secret": (str,), "method": (str,), "repetitions": (numbers.Integral,),
    "space_size": (numbers.Integral,), "exposure": (numbers.Real,), "rank": (numbers.Real,),
    "log_perplexity": (numbers.Real,), "score": (numbers.Real,),
    "included": (bool, type(None))}
#: The fields of a canary bound (:class:`~privaudit.metrics.CanaryBound`) that are text.
_BOUND_TEXTS = ("method", "threshold")


def _canary_value(row: Mapping[str, Any], key: str, where: str) -> Any:
    """``row[key]`` if it has its type (:data:`_CANARY_TYPES`; no bool for a number)."""
    value = row[key]
    numeric = bool not in _CANARY_TYPES[key]
    if not isinstance(value, _CANARY_TYPES[key]) or (numeric and isinstance(value, bool)) \
            or (key in ("repetitions", "space_size") and value < 1):
        names = {"format": "a string", "secret": "a string", "method": "a string",
                 "repetitions": "an integer >= 1", "space_size": "an integer >= 1",
                 "included": "true, false or null"}
        raise param_error(f"{where}.{key}", _FUNC, names.get(key, "a number"), value,
                          error=TypeError)
    return value


def _canary_rows(rows: Any) -> list[dict[str, Any]]:
    if not isinstance(rows, Sequence) or isinstance(rows, str):
        raise param_error("canaries", _FUNC, "a list of canary rows", rows, error=TypeError)
    out = []
    for i, row in enumerate(rows):
        missing = [k for k in CANARY_KEYS if not isinstance(row, Mapping) or k not in row]
        if missing:
            raise param_error(f"canaries[{i}]", _FUNC, f"a mapping with {list(CANARY_KEYS)}",
                              f"<missing {missing}>", error=TypeError)
        out.append({k: _canary_value(row, k, f"canaries[{i}]") for k in CANARY_KEYS})
    return out


@dataclass(eq=False)
class MemorisationResult(ResultFamily):
    """Memorisation measured by generation (extraction) or by canaries (exposure).

    Parameters
    ----------
    check : {"extraction", "canaries"}
        Which kind of check the result holds.
    labels : array of int, shape (n,)
        Extraction: 1 for a member (trained-on) text, 0 for a held-out one.
    record_ids : array, shape (n,), optional
        Extraction: the texts' ids (default ``0..n-1``).
    values : dict of str to array, shape (n,)
        Extraction: each check's per-text value (higher = more memorised).
    comparisons : dict of str to dict
        Extraction: per check, ``member_mean``, ``held_out_mean`` (a rate for a 0/1
        check), ``difference`` and ``auc`` as ``{"value", "low", "high"}``, with
        ``interval`` (``"wilson"``: Wilson rates, Newcombe difference; ``"bootstrap"``)
        and ``confidence``.
    prefixes, continuations, suffixes : list of str
        Extraction: per text, the decoded prefix given, the greedy continuation and the
        true suffix (the continuation cut to the suffix's token count).
    matched_tokens, suffix_tokens : array of int, shape (n,)
        Extraction: tokens of the continuation equal to the suffix's (from the start),
        and the suffix's token count.
    canaries : list of dict
        Canaries: one row per canary with :data:`CANARY_KEYS` (``exposure`` in bits,
        ``included`` None unless the canaries were included at random, ``score`` the
        membership score the epsilon bound reads).
    epsilon : CanaryBound, optional
        Canaries included at random: the one-run lower bound from their scores.
    delta, confidence : float
        The bound's delta (None without a bound) and the intervals' and bound's level.
    attack, target, dataset : str
        Provenance (``attack``: ``"extraction"`` or ``"canaries"``).
    parameters, extra : dict
        Settings (``prefix_length``, ``suffix_length``, the canaries' space...) and free
        details (strict-JSON types).
    audit : AuditInfo
        What the audit stamps (run key, kind ``"llm"``).

    References
    ----------
    .. [1] Carlini, N., Ippolito, D., Jagielski, M., Lee, K., Tramèr, F. and Zhang, C.
       "Quantifying Memorization Across Neural Language Models." ICLR 2023.
    .. [2] Carlini, N., Liu, C., Erlingsson, U., Kos, J. and Song, D. "The Secret Sharer."
       USENIX Security 2019 (exposure, Definition 3).
    .. [3] Steinke, T., Nasr, M. and Jagielski, M. "Privacy Auditing with One (1)
       Training Run." NeurIPS 2023.
    """

    check: str
    labels: NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, np.int8))
    record_ids: NDArray[Any] | None = None
    values: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)
    prefixes: list[str] = field(default_factory=list)
    continuations: list[str] = field(default_factory=list)
    suffixes: list[str] = field(default_factory=list)
    matched_tokens: NDArray[np.int64] | None = None
    suffix_tokens: NDArray[np.int64] | None = None
    canaries: list[dict[str, Any]] = field(default_factory=list)
    epsilon: Any = None
    delta: float | None = None
    confidence: float = 0.95
    attack: str = ""
    target: str = ""
    dataset: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    audit: AuditInfo = field(default_factory=AuditInfo)

    RESULT_TYPE: ClassVar[str] = "memorisation"

    def __post_init__(self) -> None:
        if self.check not in MEMORISATION_CHECKS:
            raise param_error("check", _FUNC, f"one of {list(MEMORISATION_CHECKS)}",
                              self.check)
        self.attack = self.attack or self.check
        for name in _TEXTS:
            if not isinstance(getattr(self, name), str):
                raise param_error(name, _FUNC, "a string", getattr(self, name),
                                  error=TypeError)
        self.confidence = check_fraction(self.confidence, param="confidence", func=_FUNC)
        if self.check == "extraction":
            self._check_extraction()
        else:
            self._check_canaries()
        if not isinstance(self.audit, AuditInfo):
            raise param_error("audit", _FUNC, "an AuditInfo", self.audit, error=TypeError)
        self._adopt_details()

    def _check_extraction(self) -> None:
        labels = np.asarray(self.labels)
        if labels.ndim != 1 or labels.size == 0 or labels.dtype.kind not in "biuf" \
                or not np.isin(labels, (0, 1)).all():  # checked before a cast wraps 257 to 1
            raise param_error("labels", _FUNC, "a non-empty 1-D array of 0/1 labels",
                              f"<{labels.dtype} array of shape {labels.shape}>")
        self.labels = labels.astype(np.int8)
        n = self.labels.shape[0]
        from privaudit.results._attack_result import _check_record_ids

        self.record_ids = _check_record_ids(self.record_ids, n, _FUNC)
        if not self.values or set(self.comparisons) != set(self.values):
            raise param_error("values", _FUNC, "per-text values of at least one check, "
                              "with one comparison per check", f"<{sorted(self.values)}>")
        self.values = {str(k): _per_text(v, f"values[{k!r}]", n, np.float64)
                       for k, v in self.values.items()}
        self.comparisons = {str(k): _comparison(v, k) for k, v in self.comparisons.items()}
        for name in _TEXT_LISTS:
            setattr(self, name, _string_list(getattr(self, name), name, n))
        self.matched_tokens = _per_text(self.matched_tokens, "matched_tokens", n, np.int64)
        self.suffix_tokens = _per_text(self.suffix_tokens, "suffix_tokens", n, np.int64)

    def _check_canaries(self) -> None:
        self.canaries = _canary_rows(self.canaries)
        if not self.canaries:
            raise param_error("canaries", _FUNC, "at least one canary", "<none>")
        if self.epsilon is not None:
            from privaudit.metrics import CanaryBound

            if isinstance(self.epsilon, Mapping):
                self.epsilon = CanaryBound(**self.epsilon)
            if not isinstance(self.epsilon, CanaryBound) or self.delta is None or any(
                    not isinstance(v, str if k in _BOUND_TEXTS else numbers.Real)
                    for k, v in self.epsilon._asdict().items()):
                raise param_error("epsilon", _FUNC, "a CanaryBound (numbers, its method and "
                                  "threshold text), with delta",
                                  self.epsilon, error=TypeError)
            self.delta = float(self.delta)

    # ------------------------------------------------------------------ header
    @property
    def kind(self) -> str:
        """Always ``"memorisation"``: what the result measures."""
        return "memorisation"

    @property
    def generator(self) -> str:
        """Always empty: a language model (or its training) is audited."""
        return ""

    @property
    def name(self) -> str:
        """``"target / attack"``."""
        return " / ".join(p for p in (self.target, self.attack) if p)

    # ------------------------------------------------------------------ extraction
    @property
    def checks(self) -> list[str]:
        """The extraction checks held, in the order computed."""
        return list(self.values)

    @property
    def matched_chars(self) -> list[int]:
        """Per text: characters of the continuation equal to the true suffix's, from the start.

        What the report highlights: the decoded span the model gave back verbatim.
        """
        return [next((i for i, (x, y) in enumerate(zip(c, s, strict=False)) if x != y),
                     min(len(c), len(s)))
                for c, s in zip(self.continuations, self.suffixes, strict=True)]

    def as_attack_results(self) -> list[Any]:
        """Each extraction check as a membership attack (score = value, higher = member).

        The report's AUC, TPR at low FPR and their intervals then read the check as any
        other membership score.
        """
        from privaudit.results._attack_result import AttackResult

        return [AttackResult(labels=self.labels, scores=values, record_ids=self.record_ids,
                             attack=name, target=self.target, dataset=self.dataset,
                             raw_statistic=values, raw_statistic_name=name)
                for name, values in self.values.items()]

    # ------------------------------------------------------------------ canaries
    def exposure_by_repetitions(self) -> dict[int, list[float]]:
        """The exposures (bits) of the inserted canaries, by their repetition count."""
        out: dict[int, list[float]] = {}
        for row in self.canaries:
            if row["included"] is not False:
                out.setdefault(int(row["repetitions"]), []).append(float(row["exposure"]))
        return dict(sorted(out.items()))

    @property
    def max_exposure(self) -> float:
        """The largest exposure possible: log2 of the secret space's size."""
        sizes = [int(r["space_size"]) for r in self.canaries]
        return math.log2(max(sizes)) if sizes else math.nan

    # ------------------------------------------------------------------ numbers
    def summary(self) -> dict[str, Any]:
        """The numbers a table shows: per check its comparison, or exposures and epsilon.

        Extraction: ``<check>`` -> ``{member_mean, held_out_mean, difference, auc}`` as
        estimates. Canaries: the median exposure per repetition count
        (``exposure_r<k>``), the largest possible, and the epsilon bound when there is one.
        """
        out: dict[str, Any] = {name: getattr(self, name) for name in _TEXTS}
        out.update(kind=self.kind, confidence=self.confidence)
        if self.check == "extraction":
            out["n_members"] = int(self.labels.sum())
            out["n_held_out"] = int((self.labels == 0).sum())
            for name, comparison in self.comparisons.items():
                out[name] = {k: comparison[k] for k in COMPARISON_KEYS}
            return out
        out["n_canaries"] = len(self.canaries)
        out["max_exposure"] = self.max_exposure
        for reps, values in self.exposure_by_repetitions().items():
            out[f"exposure_r{reps}"] = float(np.median(values))
        if self.epsilon is not None:
            out.update(epsilon_lower_bound=float(self.epsilon.epsilon), delta=self.delta)
        return out

    # ------------------------------------------------------------------ disk
    def to_dict(self) -> dict[str, Any]:
        """Everything, as JSON-ready types."""
        doc: dict[str, Any] = {"format": _FORMAT, "result_type": self.RESULT_TYPE}
        doc.update({name: getattr(self, name) for name in _TEXTS})
        doc.update(confidence=self.confidence, parameters=self.parameters,
                   extra=self.free_extra(), audit=self.audit.to_dict(),
                   summary=self.summary())
        if self.check == "extraction":
            doc.update(labels=self.labels.tolist(),
                       record_ids=np.asarray(self.record_ids).tolist(),
                       values={k: v.tolist() for k, v in self.values.items()},
                       comparisons=self.comparisons,
                       **{name: getattr(self, name) for name in _TEXT_LISTS},
                       matched_tokens=np.asarray(self.matched_tokens).tolist(),
                       suffix_tokens=np.asarray(self.suffix_tokens).tolist())
        else:
            doc.update(canaries=self.canaries, delta=self.delta,
                       epsilon=None if self.epsilon is None else self.epsilon._asdict())
        return doc

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict and the members-vs-held-out numbers."""
        return notebook_html(self)

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``memorisation.json`` (strict JSON, atomically, sealed); return its path."""
        return dump_json(self.to_dict(), Path(directory) / MEMORISATION_FILE, where=_FUNC,
                         keep_non_finite=True, seal=[])

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, require_digest: bool = False
             ) -> MemorisationResult:
        """Read a result written by :meth:`save` (its folder or its ``memorisation.json``).

        Raises
        ------
        FileNotFoundError
            If there is no ``memorisation.json`` at ``path``.
        ResultFileError
            If the file is not strict JSON, misses fields, holds invalid values, or was
            modified after it was written.
        """
        doc, json_path = read_sealed_result(
            path, MEMORISATION_FILE, _FORMAT, "memorisation result", "MemorisationResult",
            require_digest=require_digest)
        try:
            return cls(**_fields_of(doc), audit=AuditInfo.from_dict(doc.get("audit") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultFileError(f"{json_path} holds invalid data: {exc}") from None


def _fields_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor's arguments from a saved document."""
    out = {name: doc[name] for name in (*_TEXTS, "confidence", "parameters", "extra")}
    for name in ("parameters", "extra"):
        if not isinstance(out[name], dict):
            raise TypeError(f"the key {name!r} must be an object")
    if doc["check"] == "extraction":
        out.update({name: doc[name] for name in (
            "labels", "record_ids", "values", "comparisons", *_TEXT_LISTS,
            "matched_tokens", "suffix_tokens")})
    else:
        out.update(canaries=doc["canaries"], delta=doc.get("delta"),
                   epsilon=doc.get("epsilon"))
    return out
