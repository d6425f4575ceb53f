"""The one typed return of every audit: its results, baselines and compared artefacts.

Every ``audit_*`` function returns an :class:`AuditReport`. It keeps apart what was
audited (``results``), the evidence about the data split (``baselines``, e.g. the LLM
audit's blind "texts-only" classifier) and the other artefacts run for comparison
(``compared``, e.g. a retrained model), and reads them the way the HTML report does: the
metrics table of ``metrics.csv`` (:meth:`AuditReport.to_frame`), the overview's answer
(:attr:`AuditReport.verdict`), the same files (:meth:`AuditReport.save`,
:meth:`AuditReport.report`), and a summary table in a notebook. Old code that indexed,
iterated or compared the flat list the audits used to return keeps working: the report is
a read-only sequence over that list.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from privaudit._validation import check_fraction, param_error
from privaudit.report._binary import BinaryLabelAttackReport
from privaudit.report._build import build_report
from privaudit.report._common import artefact_name
from privaudit.report._html import HtmlReport
from privaudit.report._notebook import report_html
from privaudit.report._section import Finding
from privaudit.report._verdict import strongest_finding
from privaudit.results import (
    DEFAULT_FPRS,
    RESULT_KINDS,
    ResultsStore,
    check_fprs,
    check_n_bootstrap,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["ROLES", "AuditReport"]

#: The role of each part of a report, as :meth:`AuditReport.to_frame` names it.
ROLES: tuple[str, ...] = ("result", "baseline", "compared")
#: The report's settings and their defaults: those of :func:`build_report` (and so of the
#: CLI), so that the verdict and the table are the page's.
REPORT_SETTINGS: dict[str, Any] = {"n_bootstrap": 1000, "fprs": tuple(DEFAULT_FPRS),
                                   "confidence": 0.95, "validation_split": 0.1,
                                   "random_state": 0}
#: The first columns of :meth:`AuditReport.to_frame`, before the metrics.
HEADER_COLUMNS: tuple[str, ...] = ("target", "attack", "dataset", "generator", "kind", "role",
                                   "result_kind")
#: The keys of a metric estimate in the results' documents (results.json).
_ESTIMATE_KEYS = frozenset({"value", "low", "high"})


def _as_results(value: Any, param: str, func: str) -> tuple[Any, ...]:
    """``value`` as a tuple of privaudit results, or a clear error naming ``param``."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise param_error(param, func, "a sequence of privaudit results", value,
                          error=TypeError)
    out = tuple(value)
    kinds = tuple(RESULT_KINDS.values())
    for item in out:
        if not isinstance(item, kinds):
            raise param_error(param, func, "a sequence of privaudit results (AttackResult, "
                              "RiskResult, ProximityResult or AttributeResult)",
                              f"<an element of type {type(item).__name__}>", error=TypeError)
    return out


def _check_flat(flat: tuple[Any, ...], parts: tuple[Any, ...], func: str) -> None:
    """``flat`` must hold exactly the results of the three parts, in any order."""
    if sorted(map(id, flat)) != sorted(map(id, parts)):
        raise param_error("flat", func, "the results, baselines and compared results "
                          "(each once) in the order the audit used to return them",
                          f"<{len(flat)} results, not those {len(parts)}>")


def _check_settings(settings: Mapping[str, Any], func: str) -> dict[str, Any]:
    """The report's settings, checked once, with :data:`REPORT_SETTINGS` for those not given."""
    unknown = sorted(set(settings) - set(REPORT_SETTINGS))
    if unknown:
        raise param_error("settings", func, f"names among {sorted(REPORT_SETTINGS)}",
                          unknown[0], error=TypeError)
    out = {**REPORT_SETTINGS, **settings}
    out["n_bootstrap"] = check_n_bootstrap(out["n_bootstrap"], func)
    out["fprs"] = tuple(check_fprs(out["fprs"], func))
    out["confidence"] = check_fraction(out["confidence"], param="confidence", func=func)
    out["validation_split"] = check_fraction(out["validation_split"],
                                             param="validation_split", func=func)
    return out


def _settings_key(settings: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A cache key of the settings, None when they hold a Generator (drawn from once)."""
    if isinstance(settings["random_state"], np.random.Generator):
        return None
    return tuple(sorted(settings.items()))


def flatten_estimates(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The estimates of a result's document as ``<name>``, ``<name>_low``, ``<name>_high``.

    ``doc`` is the entry a result writes in ``results.json`` (its ``to_dict()``); every
    ``{"value", "low", "high"}`` in it, at any depth, is one metric named by its path
    (``rates`` -> ``attack`` gives ``rates_attack``; the ``metrics`` level is not named).
    Plain numbers (counts, the quantile) are kept under their path too.
    """
    out: dict[str, Any] = {}
    for key, value in doc.items():
        name = f"{prefix}{key}" if key != "metrics" else prefix.rstrip("_")
        if isinstance(value, Mapping) and _ESTIMATE_KEYS <= set(value):
            out.update({name: value["value"], f"{name}_low": value["low"],
                        f"{name}_high": value["high"]})
        elif isinstance(value, Mapping) and key not in ("parameters", "extra", "audit"):
            out.update(flatten_estimates(value, f"{name}_" if name else ""))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
    return out


def _strongest_first(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` ordered by :func:`strongest_finding`'s own rule, strongest first."""
    rest, out = list(findings), []
    while rest:
        best = strongest_finding(rest)
        rest.pop(next(i for i, f in enumerate(rest) if f is best))
        out.append(best)
    return out


class AuditReport(Sequence[Any]):
    """What an audit returns: its results, baselines and compared artefacts, kept apart.

    A read-only sequence over the flat list the audits used to return (``res[0]``,
    ``len(res)``, ``for r in res``, ``res == [...]`` and ``res + [...]`` work as on that
    list), that also reads the results as the HTML report does.

    Parameters
    ----------
    results : sequence of results
        The audited artefact's results (:class:`~privaudit.results.AttackResult`,
        :class:`~privaudit.results.AttributeResult`, :class:`~privaudit.results.RiskResult`
        or :class:`~privaudit.results.ProximityResult`).
    baselines : sequence of results
        Evidence about the data split, not leakage (e.g. the LLM audit's blind
        "texts-only" classifier, which never sees the model).
    compared : sequence of results
        Results on other artefacts, run for comparison (the LLM audit's ``compare=`` and
        ``retrained=`` models).
    kind : str
        The audit kind (``"model"``, ``"llm"``, ``"synthetic"``...).
    func : str
        The audit function (``"audit_llm"``...), named in the summary.
    flat : sequence of results, optional
        The same results in the order the audit returned them before it returned a report
        (default: results, then baselines, then compared): the order of indexing and
        iteration.

    Attributes
    ----------
    results, baselines, compared : tuple
        The three parts.
    kind, func : str
    settings : dict
        The report settings :attr:`verdict`, :attr:`findings` and the summary read
        (:func:`build_report`'s defaults; see :meth:`with_settings`).

    Examples
    --------
    >>> import numpy as np
    >>> from privaudit.report import AuditReport
    >>> from privaudit.results import AttackResult
    >>> result = AttackResult(labels=np.r_[np.ones(50), np.zeros(50)],
    ...                       scores=np.linspace(1, 0, 100), attack="loss", target="model")
    >>> report = AuditReport([result], kind="model", func="audit_model")
    >>> report[0] is result, len(report), report == [result]
    (True, 1, True)
    >>> report.to_frame(n_bootstrap=0).loc[0, ["target", "attack", "role", "auc"]].tolist()
    ['model', 'loss', 'result', 1.0]
    """

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so not hashable either

    def __init__(
        self,
        results: Sequence[Any],
        *,
        baselines: Sequence[Any] = (),
        compared: Sequence[Any] = (),
        kind: str = "",
        func: str = "",
        flat: Sequence[Any] | None = None,
    ) -> None:
        name = "AuditReport"
        self.results = _as_results(results, "results", name)
        self.baselines = _as_results(baselines, "baselines", name)
        self.compared = _as_results(compared, "compared", name)
        for param, value in (("kind", kind), ("func", func)):
            if not isinstance(value, str):
                raise param_error(param, name, "a str", value, error=TypeError)
        self.kind, self.func = kind, func
        parts = self.all_results
        self._flat = parts if flat is None else _as_results(flat, "flat", name)
        _check_flat(self._flat, parts, name)
        self.settings = dict(REPORT_SETTINGS)
        self._pages: dict[tuple[Any, ...], HtmlReport] = {}

    # ------------------------------------------------------------------ parts
    @property
    def all_results(self) -> tuple[Any, ...]:
        """Every result: the results, then the baselines, then the compared results."""
        return (*self.results, *self.baselines, *self.compared)

    def role(self, result: Any) -> str:
        """``"result"``, ``"baseline"`` or ``"compared"``: the part ``result`` is in."""
        for role, part in zip(ROLES, (self.results, self.baselines, self.compared),
                              strict=True):
            if any(r is result for r in part):
                return role
        raise param_error("result", "AuditReport.role", "one of the report's results",
                          f"<{type(result).__name__} not in the report>")

    # ------------------------------------------------------------------ sequence
    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(self._flat[index])
        return self._flat[index]

    def __len__(self) -> int:
        return len(self._flat)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._flat)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AuditReport):
            return (self._flat == other._flat and self.results == other.results
                    and self.baselines == other.baselines and self.kind == other.kind)
        if isinstance(other, (list, tuple)):
            return list(self._flat) == list(other)
        return NotImplemented

    def __add__(self, other: object) -> list[Any]:
        """``report + [...]``: a list, as the audits' lists added up (``results += ...``)."""
        if isinstance(other, (list, tuple, AuditReport)):
            return [*self._flat, *other]
        return NotImplemented

    def __radd__(self, other: object) -> list[Any]:
        if isinstance(other, (list, tuple)):
            return [*other, *self._flat]
        return NotImplemented

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the cached pages (recomputed when needed)."""
        return {**self.__dict__, "_pages": {}}

    # ------------------------------------------------------------------ the page's reading
    def with_settings(self, **settings: Any) -> AuditReport:
        """The same report read with other settings; the results are shared, not copied.

        ``n_bootstrap``, ``fprs``, ``confidence``, ``validation_split`` or ``random_state``
        (e.g. ``n_bootstrap=200`` for a quicker verdict); the others keep theirs.
        """
        func = "AuditReport.with_settings"
        new = AuditReport(self.results, baselines=self.baselines, compared=self.compared,
                          kind=self.kind, func=self.func, flat=self._flat)
        new.settings = _check_settings({**self.settings, **settings}, func)
        new._pages = self._pages  # keyed by the settings: shared safely
        return new

    def page(self, **settings: Any) -> HtmlReport:
        """The HTML report of these results (:class:`HtmlReport`), computed once per settings.

        Over every result in the order of iteration, as :meth:`report` writes it; the
        settings not given are :attr:`settings`.
        """
        func = "AuditReport.page"
        if not self._flat:
            raise param_error("results", func, "at least one result", "<an empty report>")
        chosen = _check_settings({**self.settings, **settings}, func)
        key = _settings_key(chosen)
        if key is None or key not in self._pages:
            page = HtmlReport(list(self._flat), fprs=chosen["fprs"],
                              n_bootstrap=chosen["n_bootstrap"],
                              confidence=chosen["confidence"],
                              validation_split=chosen["validation_split"],
                              random_state=chosen["random_state"])
            if key is None:
                return page
            self._pages[key] = page
        return self._pages[key]

    def _compared_artefacts(self) -> set[str]:
        """The names of the compared artefacts (none of them also audited)."""
        audited = {artefact_name(r) for r in (*self.results, *self.baselines)}
        return {artefact_name(r) for r in self.compared} - audited

    @property
    def findings(self) -> list[Finding]:
        """Every finding of the report's sections (:attr:`HtmlReport.findings`).

        Strongest first by :func:`~privaudit.report.strongest_finding`'s rule; those on
        compared artefacts included (their ``artefact`` says which).
        """
        return _strongest_first(self.page().findings) if self._flat else []

    @property
    def verdict(self) -> Finding | None:
        """The answer for the audited artefact(s): the strongest of the page's overview.

        The overview (:attr:`HtmlReport.overview`) gives one answer per artefact, the
        strongest finding its data supports; this is the strongest of those answers
        (:func:`~privaudit.report.strongest_finding`), compared artefacts left out. None
        for an empty report. Read at :attr:`settings` (see :meth:`with_settings`).
        """
        if not self._flat:
            return None
        compared = self._compared_artefacts()
        return strongest_finding([f for f in self.page().overview
                                  if f.artefact not in compared])

    # ------------------------------------------------------------------ table and files
    def to_frame(self, **settings: Any) -> pd.DataFrame:
        """One row per result of :attr:`all_results`: its header, its role, its metrics.

        Columns :data:`HEADER_COLUMNS` (``kind`` is the audit kind, ``role`` one of
        :data:`ROLES`, ``result_kind`` what the result infers), then each metric as
        ``<metric>``, ``<metric>_low``, ``<metric>_high``. The metrics of attack results
        are the rows of ``metrics.csv`` (:meth:`HtmlReport.metrics_frame`, the same
        numbers for the same settings; the fidelity classifiers' by
        :meth:`BinaryLabelAttackReport.metrics_frame`); those of the other results are the
        estimates of their ``results.json`` entries (:func:`flatten_estimates`).

        Parameters
        ----------
        **settings
            ``n_bootstrap``, ``fprs``, ``confidence``, ``validation_split``,
            ``random_state``, as :func:`build_report` takes them (default
            :attr:`settings`).
        """
        import pandas as pd

        if not self._flat:
            return pd.DataFrame(columns=list(HEADER_COLUMNS))
        rows = self._metric_rows(self.page(**settings))
        out = []
        for result in self.all_results:
            row = dict(rows[id(result)])
            header = {"target": result.target, "attack": result.attack,
                      "dataset": result.dataset, "generator": result.generator,
                      "kind": result.audit.kind or self.kind, "role": self.role(result),
                      "result_kind": row.pop("kind", getattr(result, "kind", ""))}
            out.append({**header, **{k: v for k, v in row.items() if k not in header}})
        return pd.DataFrame(out)

    @staticmethod
    def _metric_rows(page: HtmlReport) -> dict[int, dict[str, Any]]:
        """The metrics row of each result (by ``id``), as the report tabulates it."""
        rows: dict[int, dict[str, Any]] = {}
        if page.results:
            frame = page.metrics_frame()
            rows.update(zip(map(id, page.results), frame.to_dict("records"), strict=True))
        if page.fidelity_results:
            frame = BinaryLabelAttackReport(
                page.fidelity_results, n_bootstrap=page.n_bootstrap, fprs=page.fprs,
                confidence=page.confidence, random_state=page.random_state).metrics_frame()
            rows.update(zip(map(id, page.fidelity_results), frame.to_dict("records"),
                            strict=True))
        for result in (*page.risk_results, *page.proximity_results, *page.attribute_results):
            rows[id(result)] = flatten_estimates(result.to_dict())
        for result in (*page.dp_results, *page.memorisation_results):
            rows[id(result)] = flatten_estimates(result.summary())
        return rows

    def save(self, directory: str | os.PathLike[str], **save: Any) -> list[Path]:
        """Save every result in ``ResultsStore(directory)``; return their folders.

        The layout the audits write with ``results_dir`` (one folder per target and
        attack); :func:`~privaudit.results.load_all_results` reads them back. ``save`` is
        passed to each result's ``save`` (``format="parquet"``...).
        """
        return ResultsStore(directory).save_all(list(self._flat), **save)

    def report(self, out: str | os.PathLike[str], **options: Any) -> Path:
        """Write the report the CLI writes (:func:`build_report`) into ``out``.

        ``options`` as :func:`build_report` takes them (``title``...); the settings not
        given are :attr:`settings`. Returns the path of ``index.html``.
        """
        return build_report(list(self._flat), out, **{**self.settings, **options})

    # ------------------------------------------------------------------ display
    def _counts(self) -> str:
        return (f"{len(self.results)} results, {len(self.baselines)} baselines, "
                f"{len(self.compared)} compared")

    def _known_verdict(self) -> Finding | None:
        """The verdict when it was already computed at :attr:`settings` (else None)."""
        key = _settings_key(self.settings)
        page = self._pages.get(key) if key is not None else None
        if page is None or "overview" not in page.__dict__:
            return None
        return self.verdict

    def __repr__(self) -> str:
        """Kind, counts and, once computed, the verdict's label (a repr never bootstraps)."""
        known = self._known_verdict()
        label = ("not computed (see .verdict)" if known is None and self._flat
                 else getattr(known, "label", "none"))
        return (f"AuditReport(kind={self.kind!r}, func={self.func!r}, {self._counts()}, "
                f"verdict: {label})")

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, the answers, the metrics, the ROC curves.

        :func:`~privaudit.report._notebook.report_html`, read at :attr:`settings`.
        """
        return report_html(self)
