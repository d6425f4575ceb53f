"""The result of a DP-training audit: canary scores, their inclusion, the epsilon bounds.

A :class:`DPAuditResult` is what :func:`privaudit.audit_dp_training` returns for one
training procedure: per training run, the score of every canary (higher = more likely
included) and whether it was included, and per run and bound method the
:class:`~privaudit.metrics.CanaryBound` (the epsilon lower bound with the guesses,
correct guesses and abstentions that gave it); the claimed epsilon (per accountant) and
delta it is read against; with several runs, the Gaussian-DP estimate of Nasr et al.
(2023). Its verdict is "claim refuted" when a bound exceeds the claim, otherwise
"consistent with the claim": an audit never proves a procedure private.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_fraction, param_error
from privaudit.results._audit_info import AuditInfo, notebook_html
from privaudit.results._family import ResultFamily
from privaudit.results._io import ResultFileError, dump_json, read_sealed_result

__all__ = ["DP_AUDIT_FILE", "REFUTED", "SUPPORTED", "UNDEFINED", "DPAuditResult"]

#: Name of the file a :class:`DPAuditResult` is saved to, inside its folder.
DP_AUDIT_FILE = "dp_audit.json"
_FORMAT = "privaudit.dp-audit/1"
_FUNC = "DPAuditResult"
#: The verdict's two wordings: a lower bound can refute a claim, never prove it.
REFUTED = "claim refuted"
SUPPORTED = "consistent with the claim"
UNDEFINED = "undefined"
_TEXTS = ("attack", "target", "dataset", "canaries", "threshold")


def _claims(value: Any) -> dict[str, float]:
    """The claimed epsilon per accountant: positive finite numbers, at least one."""
    if not isinstance(value, Mapping) or not value:
        raise param_error("claimed_epsilon", _FUNC, "a non-empty mapping accountant -> "
                          "epsilon", value, error=TypeError)
    out = {}
    for name, eps in value.items():
        if (isinstance(eps, bool) or not isinstance(eps, (int, float, np.number))
                or not 0 < float(eps) < math.inf):
            raise param_error(f"claimed_epsilon[{name!r}]", _FUNC, "a real number > 0", eps)
        out[str(name)] = float(eps)
    return out


def _grid(value: Any, name: str, dtype: Any, shape: tuple[int, ...] | None) -> NDArray[Any]:
    arr = np.asarray(value, dtype=dtype)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or (shape is not None and arr.shape != shape):
        raise param_error(name, _FUNC, "an (n_runs, n_canaries) array" + (
            f" of shape {shape}" if shape else ""), f"<shape {np.shape(value)}>")
    return arr


@dataclass(eq=False)
class DPAuditResult(ResultFamily):
    """Canary scores and inclusion of DP training runs, with the epsilon lower bounds.

    Parameters
    ----------
    canary_ids : array of str, shape (m,)
        The canaries' ids (``"canary-00000"``...).
    scores : array, shape (n_runs, m)
        Each canary's score in each run (higher = more likely included).
    included : array of bool, shape (n_runs, m)
        Whether each canary was trained on in each run (drawn with probability 1/2).
    claimed_epsilon : dict
        The claim audited, per accountant (``{"rdp": 8.0, "prv": 7.6}``; ``{"claimed":
        eps}`` for a number). The verdict reads the smallest: the strongest claim made.
    delta : float
        The claim's delta.
    bounds : list of dict
        Per run, per method (``"steinke"``, ``"fdp"``...), its
        :class:`~privaudit.metrics.CanaryBound`.
    confidence : float
        The confidence asked. Each bound is computed at ``1 - (1 - confidence) / k`` for
        ``k`` bounds (methods x runs, Bonferroni): the verdict reads the largest and holds
        at ``confidence``.
    gdp : GdpEstimate, optional
        With several runs, Nasr et al.'s Gaussian-DP estimate over every run's scores.
    runs : list of dict
        Per run, what the training reported (``accountant_epsilon``,
        ``noise_multiplier``, ``n_steps``, ``train_seconds``).
    canaries, threshold, two_sided
        The canaries' kind and the guess rule.
    attack, target, dataset : str
        Provenance (``target``: the audited training procedure's name).
    parameters, extra : dict
        Settings and free details (strict-JSON types).
    audit : AuditInfo
        What the audit stamps (run key, kind ``"dp"``).

    References
    ----------
    .. [1] Steinke, T., Nasr, M. and Jagielski, M. "Privacy Auditing with One (1)
       Training Run." NeurIPS 2023.
    .. [2] Mahloujifar, S., Melis, L. and Chaudhuri, K. "Auditing f-Differential Privacy
       in One Run." 2024.
    .. [3] Nasr, M. et al. "Tight Auditing of Differentially Private Machine Learning."
       USENIX Security 2023.
    """

    canary_ids: NDArray[Any]
    scores: NDArray[np.float64]
    included: NDArray[np.bool_]
    claimed_epsilon: dict[str, float]
    delta: float
    bounds: list[dict[str, Any]]
    confidence: float = 0.95
    gdp: Any = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    canaries: str = ""
    threshold: str = "bonferroni"
    two_sided: bool = True
    attack: str = ""
    target: str = ""
    dataset: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    audit: AuditInfo = field(default_factory=AuditInfo)

    RESULT_TYPE: ClassVar[str] = "dp"

    def __post_init__(self) -> None:
        self.canary_ids = np.asarray(self.canary_ids).astype(str)
        m = self.canary_ids.shape[0]
        if self.canary_ids.ndim != 1 or m < 2 or len(set(self.canary_ids)) != m:
            raise param_error("canary_ids", _FUNC, "at least 2 unique ids",
                              f"<{m} ids>")
        self.scores = _grid(self.scores, "scores", np.float64, None)
        if self.scores.shape[1] != m:
            raise param_error("scores", _FUNC, f"{m} columns (one per canary)",
                              f"<shape {self.scores.shape}>")
        self.included = _grid(self.included, "included", bool, self.scores.shape)
        self.claimed_epsilon = _claims(self.claimed_epsilon)
        if not 0.0 <= float(self.delta) < 1.0:
            raise param_error("delta", _FUNC, "a real number in [0, 1)", self.delta)
        self.delta = float(self.delta)
        self.confidence = check_fraction(self.confidence, param="confidence", func=_FUNC)
        self.bounds = [_bounds_of(run, i) for i, run in enumerate(self.bounds)]
        if len(self.bounds) != self.n_runs or not all(self.bounds):
            raise param_error("bounds", _FUNC, f"one non-empty mapping per run ({self.n_runs})",
                              f"<{len(self.bounds)} runs>")
        self.runs = [dict(r) for r in self.runs] or [{} for _ in range(self.n_runs)]
        for name in _TEXTS:
            if not isinstance(getattr(self, name), str):
                raise param_error(name, _FUNC, "a string", getattr(self, name),
                                  error=TypeError)
        if not isinstance(self.audit, AuditInfo):
            raise param_error("audit", _FUNC, "an AuditInfo", self.audit, error=TypeError)
        self._adopt_details()

    # ------------------------------------------------------------------ header
    @property
    def kind(self) -> str:
        """Always ``"dp-training"``: what the result audits."""
        return "dp-training"

    @property
    def generator(self) -> str:
        """Always empty: a training procedure is audited (reports group by it)."""
        return ""

    @property
    def name(self) -> str:
        """``"target / attack"``."""
        return " / ".join(p for p in (self.target, self.attack) if p) or "dp-training"

    # ------------------------------------------------------------------ numbers
    @property
    def n_runs(self) -> int:
        """Training runs audited."""
        return int(self.scores.shape[0])

    @property
    def n_canaries(self) -> int:
        """Canaries per run."""
        return int(self.canary_ids.shape[0])

    @property
    def methods(self) -> list[str]:
        """The bound methods, in the order asked."""
        return list(self.bounds[0])

    @property
    def claim(self) -> float:
        """The epsilon the verdict reads: the smallest claimed (the strongest claim)."""
        return min(self.claimed_epsilon.values())

    @property
    def claim_accountant(self) -> str:
        """The accountant whose claim is :attr:`claim`."""
        return min(self.claimed_epsilon, key=self.claimed_epsilon.__getitem__)

    def bound_of(self, method: str) -> float:
        """The largest lower bound of ``method`` over the runs (NaN if one run's is NaN)."""
        values = [float(run[method].epsilon) for run in self.bounds]
        return math.nan if any(v != v for v in values) else max(values)

    @property
    def undefined_methods(self) -> list[str]:
        """The methods whose bound is NaN (:meth:`bound_of`), in the order asked."""
        return [m for m in self.methods if math.isnan(self.bound_of(m))]

    @property
    def diverged(self) -> bool:
        """Whether a run has no defined bound at all (its canary scores were not finite)."""
        return any(all(math.isnan(float(b.epsilon)) for b in run.values())
                   for run in self.bounds)

    @property
    def epsilon_lower_bound(self) -> float:
        """The audited epsilon: the largest defined bound over methods and runs.

        Valid at :attr:`confidence`: each bound was computed at the Bonferroni-adjusted
        level (:attr:`bound_confidence`). NaN when a run's canary scores were not finite
        (a diverged training) and nothing refutes the claim, or when no method's bound
        is defined. A method undefined on its own (``"clopper-pearson"`` with every
        canary included, or none) is left out: the others' bounds still hold.
        """
        values = [self.bound_of(m) for m in self.methods]
        finite = [v for v in values if v == v]
        if finite and max(finite) > self.claim:
            return max(finite)  # the NaN runs cannot undo a refutation by the others
        return math.nan if self.diverged or not finite else max(finite)

    @property
    def best_method(self) -> str:
        """The method whose bound is :attr:`epsilon_lower_bound` (the first if tied)."""
        return max(self.methods, key=lambda m: (self.bound_of(m) == self.bound_of(m),
                                                 self.bound_of(m)))

    @property
    def bound_confidence(self) -> float:
        """The level each bound was computed at: ``1 - (1 - confidence) / k``."""
        return 1.0 - (1.0 - self.confidence) / (len(self.methods) * self.n_runs)

    @property
    def refuted(self) -> bool:
        """Whether the audited epsilon exceeds the claim (at :attr:`confidence`)."""
        return self.epsilon_lower_bound > self.claim

    @property
    def verdict(self) -> str:
        """The answer: ``"claim refuted"`` or ``"consistent with the claim"``.

        Never "private": a lower bound can refute a claim, not prove it. ``"undefined"``
        when a run's scores were not finite and no other bound refutes the claim.
        """
        if self.refuted:
            return REFUTED
        return UNDEFINED if math.isnan(self.epsilon_lower_bound) else SUPPORTED

    def in_out_scores(self, run: int | None = None) -> tuple[NDArray[np.float64],
                                                               NDArray[np.float64]]:
        """The scores of included and of excluded canaries (of one run, or all runs)."""
        rows = slice(None) if run is None else slice(run, run + 1)
        s, inc = self.scores[rows], self.included[rows]
        return s[inc], s[~inc]

    def summary(self) -> dict[str, Any]:
        """The numbers a table shows (no per-canary arrays): bounds, claim, verdict.

        ``epsilon_lower_bound`` overall and per method (``epsilon_lower_bound_<method>``,
        the largest over runs), the claim per accountant, the GDP estimate when there is
        one; what ``results.json`` lists for this result.
        """
        out: dict[str, Any] = {name: getattr(self, name) for name in _TEXTS}
        out.update(kind=self.kind, n_canaries=self.n_canaries, n_runs=self.n_runs,
                   delta=self.delta, confidence=self.confidence,
                   bound_confidence=self.bound_confidence,
                   epsilon_lower_bound=self.epsilon_lower_bound,
                   claimed_epsilon=self.claim, claim_accountant=self.claim_accountant,
                   verdict=self.verdict)
        out.update({f"epsilon_lower_bound_{m}": self.bound_of(m) for m in self.methods})
        out.update({f"claimed_epsilon_{k}": v for k, v in self.claimed_epsilon.items()})
        if self.gdp is not None:
            out.update(gdp_epsilon=self.gdp.epsilon, gdp_epsilon_point=self.gdp.epsilon_point,
                       gdp_mu=self.gdp.mu)
        return out

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, the metrics with their intervals, ROC curves."""
        return notebook_html(self)

    # ------------------------------------------------------------------ disk
    def to_dict(self) -> dict[str, Any]:
        """Everything, as JSON-ready types (the bounds as dicts)."""
        doc: dict[str, Any] = {"format": _FORMAT, "result_type": self.RESULT_TYPE}
        doc.update({name: getattr(self, name) for name in _TEXTS})
        doc.update(
            canary_ids=self.canary_ids.tolist(), scores=self.scores.tolist(),
            included=self.included.astype(int).tolist(),
            claimed_epsilon=dict(self.claimed_epsilon), delta=self.delta,
            confidence=self.confidence, two_sided=bool(self.two_sided),
            bounds=[{m: b._asdict() for m, b in run.items()} for run in self.bounds],
            gdp=None if self.gdp is None else self.gdp._asdict(), runs=self.runs,
            parameters=self.parameters, extra=self.free_extra(),
            audit=self.audit.to_dict(),
            summary={"epsilon_lower_bound": self.epsilon_lower_bound, "claim": self.claim,
                     "verdict": self.verdict, "bound_confidence": self.bound_confidence})
        return doc

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``dp_audit.json`` (strict JSON, atomically, sealed); return its path."""
        return dump_json(self.to_dict(), Path(directory) / DP_AUDIT_FILE, where=_FUNC,
                         keep_non_finite=True, seal=[])

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, require_digest: bool = False
             ) -> DPAuditResult:
        """Read a result written by :meth:`save` (its folder or its ``dp_audit.json``).

        Raises
        ------
        FileNotFoundError
            If there is no ``dp_audit.json`` at ``path``.
        ResultFileError
            If the file is not strict JSON, misses fields, holds invalid values, or was
            modified after it was written.
        """
        doc, json_path = read_sealed_result(
            path, DP_AUDIT_FILE, _FORMAT, "DP-training audit result", "DPAuditResult",
            require_digest=require_digest)
        try:
            return cls(**_fields_of(doc), audit=AuditInfo.from_dict(doc.get("audit") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultFileError(f"{json_path} holds invalid data: {exc}") from None


def _bounds_of(run: Any, i: int) -> dict[str, Any]:
    """One run's bounds as CanaryBound, from CanaryBound or the dicts :meth:`to_dict` wrote."""
    from privaudit.metrics import CanaryBound

    if not isinstance(run, Mapping):
        raise param_error(f"bounds[{i}]", _FUNC, "a mapping method -> CanaryBound", run,
                          error=TypeError)
    out = {}
    for method, bound in run.items():
        if isinstance(bound, Mapping):
            bound = CanaryBound(**bound)
        if not isinstance(bound, CanaryBound):
            raise param_error(f"bounds[{i}][{method!r}]", _FUNC, "a CanaryBound", bound,
                              error=TypeError)
        out[str(method)] = bound
    return out


def _fields_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor's arguments from a saved document."""
    from privaudit.metrics import GdpEstimate

    out = {name: doc[name] for name in (*_TEXTS, "canary_ids", "scores", "claimed_epsilon",
                                        "delta", "confidence", "two_sided", "bounds",
                                        "runs", "parameters", "extra")}
    out["included"] = np.asarray(doc["included"], dtype=np.int64).astype(bool)
    for name in ("runs", "parameters", "extra"):
        if not isinstance(out[name], (dict, list)):
            raise TypeError(f"the key {name!r} must be an object or a list")
    gdp = doc.get("gdp")
    out["gdp"] = None if gdp is None else GdpEstimate(**gdp)
    return out
