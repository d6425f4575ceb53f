"""The sections of the HTML report: one small interface, one registry.

The page (:class:`~privaudit.report.HtmlReport`) is a shell: a header, a table of
contents and a footer around the sections that apply to the results it was given. A new
kind of result (LLM, synthetic data, attribute inference, unlearning) adds a section (a
:class:`ReportSection` subclass and a template ``templates/sections/<name>.html``) and
names it once in :mod:`privaudit.report._registry`, the list of the page's sections.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

__all__ = ["FOLD_OPEN_MAX_CHARS", "FOLD_OPEN_ORDER", "Finding", "ReportSection",
           "ReportView"]


#: A section of ``fold = "auto"`` starts closed when it is longer to read than this (a few
#: screens: HTML characters, a figure counted as a fixed share, whatever its bytes): a
#: small report stays open, the demo's hundred histograms and long tables fold.
FOLD_OPEN_MAX_CHARS = 30_000
#: A section of ``fold = "auto"`` at most this far down the page (its ``order``: the
#: overview, the summary) starts open whatever its length: it is the page's answer.
FOLD_OPEN_ORDER = 10


class Finding(NamedTuple):
    """One answer a section gives about one audited artefact, for the report's overview.

    The overview at the top of the page (and the terminal summary) shows, per artefact,
    the strongest finding the data can support: :func:`privaudit.report.strongest_finding`
    orders them by :data:`~privaudit.report.LEVELS` severity, then by ``strength``.

    Attributes
    ----------
    artefact : str
        The audited artefact's display name, with its generator and dataset when there
        are several (:func:`privaudit.report.artefact_name`).
    kind : str
        What was audited: ``"membership"``, ``"attribute"``, ``"llm"``, ``"synthetic"``,
        ``"generator"``, ``"unlearning"``...
    severity : str
        A level of :data:`~privaudit.report.LEVELS` (``critical`` ... ``minimal``), or
        ``"undefined"`` (nothing measurable), ``"baseline"`` (evidence about the data split,
        not a leak) or ``"artefact"`` (a number that signals a flaw in the audit itself,
        e.g. an AUC far below 0.5). Only the levels of LEVELS can be an artefact's answer;
        the others are shown beside it.
    label : str
        The badge text, e.g. ``"High leakage"``.
    attack : str
        The attack (or check) the finding rests on.
    metric : str
        The number it rests on, in words, e.g. ``"TPR 4.0% at 1% FPR (4x)"``.
    interval : str
        That number's confidence interval, e.g. ``"[2.1%, 6.3%]"`` (empty when none).
    text : str
        Why, in one or two sentences.
    section : str
        Anchor of the section with the details (a :attr:`ReportSection.name`).
    strength : float
        Orders findings of equal severity (larger first), e.g. the lift or the AUC.
    """

    artefact: str
    kind: str
    severity: str
    label: str
    attack: str
    metric: str
    interval: str
    text: str
    section: str
    strength: float = 0.0


class ReportView(Protocol):
    """What a section reads of the page (:class:`~privaudit.report.HtmlReport`).

    A structural type, so that sections need not import the page that imports them
    (no import cycle): the results, the shared frames and settings, by attribute.
    """

    def __getattr__(self, name: str) -> Any: ...


class ReportSection:
    """One block of the HTML report.

    Subclasses set :attr:`name` (the anchor of the block and the template
    ``templates/sections/<name>.html``), :attr:`title` (its link in the table of contents;
    empty for none) and :attr:`order` (place on the page, ascending), and implement
    :meth:`applies_to` and :meth:`context`. The template sees the page's shared context
    (``title``, ``confidence``, ``n_bootstrap``, ``random_state``, ``validation_split``,
    ``show``...; see :meth:`HtmlReport.shared_context`) plus the section's own.

    On the page each section is a foldable block (``<details>``): :attr:`fold` says
    whether it starts open (``"open"``), closed (``"closed"``) or, by default
    (``"auto"``), open when it is short (:data:`FOLD_OPEN_MAX_CHARS` of reading at most) or
    at the page's opening (:data:`FOLD_OPEN_ORDER`), and closed when long, so that the
    page reads as an overview with the details a click away.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    order: ClassVar[int] = 100
    #: Jinja2 source of the block, for sections outside privaudit's package (None: the
    #: file ``templates/sections/<name>.html``).
    template_source: ClassVar[str | None] = None
    #: Whether the block starts open: ``"open"``, ``"closed"`` or ``"auto"`` (by length).
    fold: ClassVar[str] = "auto"

    def applies_to(self, results: Sequence[Any]) -> bool:
        """Whether the section has something to show for ``results`` (all of the page's)."""
        raise NotImplementedError

    def shown(self, report: ReportView) -> bool:
        """Whether the section is shown, once it applies, reading the page (yes by default).

        For a section whose content is not the results themselves but what the page made
        of them (the overview shows the other sections' findings: none, no overview).
        """
        return True

    def context(self, report: ReportView) -> dict[str, Any]:
        """The section's template variables, computed from the ``report`` (the shell).

        The shell holds the results (``report.results``: attack results,
        ``report.risk_results``: count-based risks), the metrics computed once
        (``report.metric_dicts``) and the settings; sections compute nothing themselves
        but call :mod:`privaudit.metrics` through them.
        """
        raise NotImplementedError

    def findings(self, report: ReportView) -> list[Finding]:
        """The section's answers per audited artefact, for the overview (none by default).

        A section that judges results (membership verdicts, synthetic-data risks, generator
        claims, unlearning audits) returns one :class:`Finding` per artefact and result
        it judges; the page keeps the strongest per artefact.
        """
        return []


#: The sections every report considers: None until first read, then privaudit's own
#: plus the user's (:func:`privaudit.report.register_section`, in ``_registry``).
_REGISTRY: list[ReportSection] | None = None
