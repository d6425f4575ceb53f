"""The sections of the HTML report: one small interface, one registry.

The page (:class:`~privaudit.report.HtmlReport`) is a shell: a header, a table of
contents and a footer around the sections that apply to the results it was given. A new
kind of result (LLM, synthetic data, attribute inference, unlearning) adds a section (a
:class:`ReportSection` subclass registered with :func:`register_section` and a template
``templates/sections/<name>.html``) and touches nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

__all__ = ["ReportSection", "ReportView", "register_section", "registered_sections"]


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
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    order: ClassVar[int] = 100
    #: Jinja2 source of the block, for sections outside privaudit's package (None: the
    #: file ``templates/sections/<name>.html``).
    template_source: ClassVar[str | None] = None

    def applies_to(self, results: Sequence[Any]) -> bool:
        """Whether the section has something to show for ``results`` (all of the page's)."""
        raise NotImplementedError

    def context(self, report: ReportView) -> dict[str, Any]:
        """The section's template variables, computed from the ``report`` (the shell).

        The shell holds the results (``report.results``: attack results,
        ``report.risk_results``: count-based risks), the metrics computed once
        (``report.metric_dicts``) and the settings; sections compute nothing themselves
        but call :mod:`privaudit.metrics` through them.
        """
        raise NotImplementedError


_REGISTRY: list[ReportSection] = []


def register_section(section: ReportSection) -> ReportSection:
    """Add ``section`` to every report from now on (replacing one of the same name)."""
    _REGISTRY[:] = [s for s in _REGISTRY if s.name != section.name]
    _REGISTRY.append(section)
    return section


def registered_sections() -> list[ReportSection]:
    """The registered sections, in page order."""
    return sorted(_REGISTRY, key=lambda s: s.order)
