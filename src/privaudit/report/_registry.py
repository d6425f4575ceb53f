"""The sections of the HTML report, listed once, in page order; and the user's own.

Every section privaudit ships is named here, in the order the page shows them; the
``_sections_*`` modules only define the classes, and importing them registers nothing.
A user adds a section of their own with :func:`register_section` (say, a table for a new
kind of result): it joins every report built afterwards, placed by its ``order``.

The list every report reads is ``privaudit.report._section._REGISTRY``: None until a
report or :func:`register_section` first asks for it, then the built-in sections below
plus the user's. A test that wants a page of its own sections replaces that list.
"""

from __future__ import annotations

from privaudit.report import _section
from privaudit.report._section import ReportSection
from privaudit.report._sections_attribute import AttributeSection
from privaudit.report._sections_dp import DPTrainingSection
from privaudit.report._sections_generator import GeneratorSection
from privaudit.report._sections_llm import LLMSection
from privaudit.report._sections_membership import (
    EpsilonSection,
    HistogramSection,
    MethodsSection,
    MetricsSection,
    PredictionsSection,
    ReadingSection,
    RocSection,
    SummarySection,
)
from privaudit.report._sections_memorisation import MemorisationSection
from privaudit.report._sections_overview import OverviewSection
from privaudit.report._sections_risk import RiskSection
from privaudit.report._sections_slices import ExposedSection, SlicesSection
from privaudit.report._sections_strong import StrongMembershipSection
from privaudit.report._sections_study import StudySection
from privaudit.report._sections_synthetic import SyntheticSection
from privaudit.report._sections_unlearning import UnlearningSection

__all__ = ["PAGE_SECTIONS", "builtin_sections", "register_section", "registered_sections"]

#: privaudit's sections, in page order (each class's ``order`` agrees: a user's section
#: is placed between them by its own ``order``).
PAGE_SECTIONS: tuple[type[ReportSection], ...] = (
    OverviewSection,
    SummarySection,
    StudySection,
    MetricsSection,
    ReadingSection,
    LLMSection,
    MemorisationSection,
    GeneratorSection,
    PredictionsSection,
    AttributeSection,
    SyntheticSection,
    RiskSection,
    DPTrainingSection,
    StrongMembershipSection,
    UnlearningSection,
    RocSection,
    HistogramSection,
    EpsilonSection,
    SlicesSection,
    ExposedSection,
    MethodsSection,
)


def builtin_sections() -> list[ReportSection]:
    """A new instance of each of privaudit's sections, in page order."""
    return [section() for section in PAGE_SECTIONS]


def _sections() -> list[ReportSection]:
    """The list every report reads, made of the built-in sections when first asked for."""
    if _section._REGISTRY is None:
        _section._REGISTRY = builtin_sections()
    return _section._REGISTRY


def register_section(section: ReportSection) -> ReportSection:
    """Add ``section`` to every report built from now on.

    A section of the same :attr:`~ReportSection.name` is replaced (so a user can also
    replace one of privaudit's); the page places it by its :attr:`~ReportSection.order`.

    Parameters
    ----------
    section : ReportSection
        An instance of a :class:`~privaudit.report.ReportSection` subclass, with its
        ``name``, ``title``, ``order``, ``applies_to`` and ``context`` (and a template:
        ``template_source``).

    Returns
    -------
    ReportSection
        ``section``, so the call can decorate an instance's creation.

    Examples
    --------
    >>> from privaudit.report import ReportSection, register_section
    >>> class CountSection(ReportSection):
    ...     name, title, order = "count", "Count", 95
    ...     template_source = "<p>{{ n }} results</p>"
    ...     def applies_to(self, results):
    ...         return True
    ...     def context(self, report):
    ...         return {"n": len(report.all_results)}
    >>> section = register_section(CountSection())  # every later report shows it
    """
    if not isinstance(section, ReportSection):
        raise TypeError("The 'section' parameter of register_section must be a "
                        f"ReportSection instance. Got {type(section).__name__} instead.")
    sections = _sections()
    sections[:] = [s for s in sections if s.name != section.name]
    sections.append(section)
    return section


def registered_sections() -> list[ReportSection]:
    """The sections every report considers, in page order (by their ``order``)."""
    return sorted(_sections(), key=lambda s: s.order)
