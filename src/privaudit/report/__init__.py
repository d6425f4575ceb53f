"""Reports of attack results: tables, plots, effective epsilon and one HTML page.

Reports only consume :class:`~privaudit.results.AttackResult` objects; every number comes
from :mod:`privaudit.metrics`. matplotlib and jinja2 (the ``report`` extra) are imported
when a plot or page is made, never when this package is imported.

- :class:`AuditReport`: what every ``audit_*`` returns: its results, baselines and compared
  artefacts kept apart, with the metrics table, the verdict, the files and a notebook view;
- :class:`BinaryLabelAttackReport`, :class:`MIAttackReport`, :class:`AIAttackReport`:
  metrics table with confidence intervals and comparison plots (TAPAS style);
- :class:`ROCReport`: ROC curves on linear and log-log axes;
- :class:`EffectiveEpsilonReport`: statistically valid effective epsilon (Jagielski et al.);
- :class:`HtmlReport` / :func:`write_html_report`: one self-contained ``index.html``;
- :func:`write_results_json` and :func:`build_report`: everything an audit writes;
- :class:`ReportSection` / :func:`register_section`: the page is a shell around one
  section per kind of result (membership tables and figures, slices, effective epsilon,
  count-based risks); privaudit's sections are listed once, in page order, in
  ``report/_registry.py`` (a new kind adds a section, a template
  ``templates/sections/<name>.html`` and a line there); :func:`register_section` adds a
  user's own section to every report built afterwards (importing privaudit registers
  nothing);
- :func:`headline_epsilon`: the Clopper-Pearson lower bound on epsilon of one attack,
  the headline epsilon of the tables.
"""

from privaudit.report._audit_report import AuditReport
from privaudit.report._binary import AIAttackReport, BinaryLabelAttackReport, MIAttackReport
from privaudit.report._build import build_report, write_results_json
from privaudit.report._common import artefact_key, artefact_name
from privaudit.report._epsilon import (
    EffectiveEpsilonReport,
    effective_epsilon_by_target,
    headline_epsilon,
)
from privaudit.report._html import HtmlReport, write_html_report
from privaudit.report._interpret import (
    AUC_SCALE,
    AucReading,
    closeness_reading,
    fidelity_reading,
    interpret_auc,
)
from privaudit.report._registry import register_section, registered_sections
from privaudit.report._roc import ROCReport
from privaudit.report._section import Finding, ReportSection
from privaudit.report._verdict import LEVELS, severity_rank, strongest_finding

__all__ = [
    "AUC_SCALE",
    "LEVELS",
    "AIAttackReport",
    "AucReading",
    "AuditReport",
    "BinaryLabelAttackReport",
    "EffectiveEpsilonReport",
    "Finding",
    "HtmlReport",
    "MIAttackReport",
    "ROCReport",
    "ReportSection",
    "artefact_key",
    "artefact_name",
    "build_report",
    "closeness_reading",
    "effective_epsilon_by_target",
    "fidelity_reading",
    "headline_epsilon",
    "interpret_auc",
    "register_section",
    "registered_sections",
    "severity_rank",
    "strongest_finding",
    "write_html_report",
    "write_results_json",
]
