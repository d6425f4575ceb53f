"""What an audit adds to a result: its run key, the baseline check, the slices.

An attack returns an :class:`~privaudit.results.AttackResult`; the audit that ran it (see
:mod:`privaudit.audits`) then stamps these typed fields on ``result.audit``, and the reports
read them. Attack-specific details (LiRA's variance rule, the size of the reference pool an
attack read, a trained attack's features...) stay in the free-form ``result.extra``.

Results saved before this structure existed kept the same facts as loose ``extra`` keys
(``audit_key``, ``baseline``, ``better_than_baseline``, ``slices``...):
:func:`split_legacy_extra` moves them here on load, so old result folders still read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from privaudit._validation import param_error

__all__ = ["AuditInfo", "BaselineCheck", "Finding", "SliceSummary", "notebook_html",
           "split_legacy_extra"]

_FUNC = "AuditInfo"
#: The roles a result can play besides a leak (None): read back only these.
ROLES = ("baseline", "fidelity", "compared")


@dataclass
class BaselineCheck:
    """The outcome of comparing a result with the baseline its audit kind calls for.

    Parameters
    ----------
    name : str
        The baseline: ``"random-guess"`` (model membership), a model-free prior (attribute
        inference), a control set (synthetic data), a reference or retrained model (LLM
        and unlearning audits).
    passed : bool or None
        Whether the attack does better than the baseline (for the random guess: the lower
        bound of the AUC interval lies above 0.5); None when it could not be decided (one
        class only).
    details : dict
        The baseline's own numbers (JSON-serialisable), e.g. the baseline's success rate.
    """

    name: str
    passed: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON-ready types."""
        return {"name": self.name, "passed": self.passed, "details": dict(self.details)}

    @classmethod
    def from_dict(cls, doc: Any, where: str = "audit.baseline") -> BaselineCheck:
        """Read what :meth:`to_dict` wrote; a clear error on a malformed entry."""
        doc = _mapping(doc, where)
        name, passed = doc.get("name", ""), doc.get("passed")
        if not isinstance(name, str) or not (passed is None or isinstance(passed, bool)):
            raise param_error(where, _FUNC, "{'name': str, 'passed': bool or null}", doc)
        return cls(name=name, passed=passed, details=_mapping(doc.get("details") or {},
                                                              f"{where}.details"))


@dataclass
class SliceSummary:
    """The leakage per slice of the audited records and the members most exposed.

    Parameters
    ----------
    rows : list of dict
        One row per slice (see :func:`privaudit.results.slice_metrics`): the slice, its
        size, its AUC and TPR at low FPR with intervals.
    most_exposed : list of dict
        The members found first (``record_id``, ``score``, ``detection_fpr``, ``rank``),
        see :func:`privaudit.results.vulnerability_ranking`.
    most_exposed_tied : int
        How many members are as exposed as the last one listed (ties are common).
    settings : dict
        How the slices were computed (bootstrap, confidence, FPRs, minimum slice size,
        number of loss percentiles, the loss used).
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    most_exposed: list[dict[str, Any]] = field(default_factory=list)
    most_exposed_tied: int = 0
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready containers."""
        return {"rows": list(self.rows), "most_exposed": list(self.most_exposed),
                "most_exposed_tied": int(self.most_exposed_tied),
                "settings": dict(self.settings)}

    @classmethod
    def from_dict(cls, doc: Any, where: str = "audit.slices") -> SliceSummary:
        """Read what :meth:`to_dict` wrote; rows that are not mappings are dropped."""
        doc = _mapping(doc, where)
        tied = doc.get("most_exposed_tied") or 0
        if isinstance(tied, bool) or not isinstance(tied, (int, float)) or not math.isfinite(
                tied):
            raise param_error(f"{where}.most_exposed_tied", _FUNC, "an integer", tied)
        return cls(rows=_rows(doc.get("rows")), most_exposed=_rows(doc.get("most_exposed")),
                   most_exposed_tied=int(tied),
                   settings=_mapping(doc.get("settings") or {}, f"{where}.settings"))


_SEVERITIES = ("info", "warning", "critical")


@dataclass
class Finding:
    """Something the audit wants a reader to see beside the numbers.

    Parameters
    ----------
    code : str
        A stable identifier, e.g. ``"privleak"``, ``"blind-baseline"``,
        ``"over-unlearning"``, ``"red-flag:mode-collapse"``.
    severity : {"info", "warning", "critical"}
        ``critical``: the result should not be trusted as it stands (e.g. a blind
        classifier does as well as the attack: the member and non-member sets differ in
        distribution); ``warning``: a rule of the field's guides fired; ``info``: a
        derived number (e.g. MUSE's PrivLeak).
    message : str
        One or two sentences for the report.
    value : float, optional
        The number the finding is about, when there is one.
    """

    code: str
    severity: str = "info"
    message: str = ""
    value: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not self.code:
            raise param_error("code", "Finding", "a non-empty string", self.code)
        if self.severity not in _SEVERITIES:
            raise param_error("severity", "Finding", f"one of {list(_SEVERITIES)}",
                              self.severity)
        if self.value is not None:
            if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
                raise param_error("value", "Finding", "a number or None", self.value,
                                  error=TypeError)
            self.value = float(self.value)

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready types."""
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "value": self.value}

    @classmethod
    def from_dict(cls, doc: Any, where: str = "audit.findings") -> Finding:
        """Read what :meth:`to_dict` wrote; a clear error on a malformed entry."""
        doc = _mapping(doc, where)
        value = doc.get("value")
        if not isinstance(doc.get("message", ""), str):
            raise param_error(f"{where}.message", _FUNC, "a string", doc.get("message"))
        try:
            return cls(code=doc.get("code", ""), severity=doc.get("severity", "info"),
                       message=doc.get("message", ""), value=value)
        except (TypeError, ValueError) as exc:
            raise param_error(where, _FUNC, "a finding {code, severity, message, value}",
                              f"{doc!r:.80} ({exc})") from None


@dataclass
class AuditInfo:
    """The typed part of a result written by the audit that produced it.

    Parameters
    ----------
    kind : str or None
        The audit kind that produced the result (``"model"``, ``"llm"``...): the report
        gives each kind its own section.
    role : str or None
        ``"baseline"`` for a result that is a baseline the attacks are compared with (an
        LLM audit's blind classifier): reported, but never a target's leakage verdict;
        ``"fidelity"`` for a distinguisher reported as fidelity, never as a leak;
        ``"compared"`` for a result on another artefact run for comparison (an LLM
        audit's ``compare=`` and ``retrained=`` models): shown beside the audited one,
        never gated as the audited artefact, in memory or saved.
    key : str or None
        The run key (digest of the target's fingerprint, the data, the seed and the
        parameters) under which the result is reused by a rerun.
    baseline : BaselineCheck or None
        The comparison with the audit kind's baseline.
    slices : SliceSummary or None
        The leakage per slice and the most exposed members.
    findings : list of Finding
        What the audit wants a reader to see beside the numbers (red flags, PrivLeak, a
        blind baseline as good as the attack...).
    """

    kind: str | None = None
    role: str | None = None
    key: str | None = None
    baseline: BaselineCheck | None = None
    slices: SliceSummary | None = None
    findings: list[Finding] = field(default_factory=list)

    def is_empty(self) -> bool:
        """Whether no audit stamped anything (a result built by hand)."""
        return self == AuditInfo()

    def to_dict(self) -> dict[str, Any]:
        """The set fields as JSON-ready types (unset ones are left out)."""
        out: dict[str, Any] = {}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.role is not None:
            out["role"] = self.role
        if self.key is not None:
            out["key"] = self.key
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_dict()
        if self.slices is not None:
            out["slices"] = self.slices.to_dict()
        if self.findings:
            out["findings"] = [f.to_dict() for f in self.findings]
        return out

    @classmethod
    def from_dict(cls, doc: Any, where: str = "audit") -> AuditInfo:
        """Read what :meth:`to_dict` wrote; a clear error naming the malformed key."""
        doc = _mapping(doc, where)
        key, kind, role = doc.get("key"), doc.get("kind"), doc.get("role")
        for name, value in (("key", key), ("kind", kind), ("role", role)):
            if value is not None and not isinstance(value, str):
                raise param_error(f"{where}.{name}", _FUNC, "a string", value)
        if role is not None and role not in ROLES:
            raise param_error(f"{where}.role", _FUNC, f"null or one of {', '.join(ROLES)}",
                              repr(role))
        baseline, slices = doc.get("baseline"), doc.get("slices")
        findings = doc.get("findings") or []
        if not isinstance(findings, list):
            raise param_error(f"{where}.findings", _FUNC, "a list", findings)
        return cls(
            kind=kind, role=role, key=key,
            findings=[Finding.from_dict(f, f"{where}.findings[{i}]")
                      for i, f in enumerate(findings)],
            baseline=None if baseline is None else BaselineCheck.from_dict(
                baseline, f"{where}.baseline"),
            slices=None if slices is None else SliceSummary.from_dict(slices, f"{where}.slices"),
        )


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise param_error(where, _FUNC, "a mapping", f"<{type(value).__name__}>",
                          error=TypeError)
    return value


def _rows(value: Any) -> list[dict[str, Any]]:
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []


#: ``extra`` keys of results saved before :class:`AuditInfo` (result schema 1).
LEGACY_AUDIT_KEYS = ("audit_key", "baseline", "better_than_baseline", "better_than_random",
                     "slices", "most_exposed", "most_exposed_tied", "slice_settings")


def split_legacy_extra(extra: dict[str, Any]) -> tuple[AuditInfo, dict[str, Any]]:
    """Move the audit facts a schema-1 result kept in ``extra`` into an :class:`AuditInfo`.

    Returns the audit info and the rest of ``extra`` (attack-specific details), unchanged.
    Values of the wrong type are left in the rest rather than trusted.
    """
    rest = {k: v for k, v in extra.items() if k not in LEGACY_AUDIT_KEYS}
    info = AuditInfo()
    if isinstance(extra.get("audit_key"), str):
        info.key = extra["audit_key"]
    passed = extra.get("better_than_baseline", extra.get("better_than_random"))
    if isinstance(extra.get("baseline"), str) or isinstance(passed, bool):
        name = extra.get("baseline") if isinstance(extra.get("baseline"), str) else (
            "random-guess")
        info.baseline = BaselineCheck(name=name, passed=passed if isinstance(passed, bool)
                                      else None)
    if isinstance(extra.get("slices"), list) or isinstance(extra.get("most_exposed"), list):
        tied = extra.get("most_exposed_tied")
        info.slices = SliceSummary(
            rows=_rows(extra.get("slices")), most_exposed=_rows(extra.get("most_exposed")),
            most_exposed_tied=int(tied) if isinstance(tied, int) else 0,
            settings=extra["slice_settings"] if isinstance(extra.get("slice_settings"), dict)
            else {})
    return info, rest


def notebook_html(result: Any) -> str:
    """The notebook view of one result: the view of the report of this one result.

    Every result class's ``_repr_html_``: the verdict, the metrics with their intervals
    and, for attack results, the ROC curves (:class:`privaudit.report.AuditReport`'s
    ``_repr_html_``, read at its default settings), so that a result and a report of it
    read the same. The figures need matplotlib (without it, the tables alone).
    """
    # At display time only (tests/test_layering.py's DISPLAY_TIME): loading a result never
    # loads the report package.
    from privaudit.report import AuditReport

    return str(AuditReport([result], func=type(result).__name__)._repr_html_())
