"""One self-contained HTML report: a shell around one section per kind of result."""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from privaudit._optional import import_optional
from privaudit._progress import as_progress
from privaudit._validation import check_fraction, param_error
from privaudit.report._binary import BinaryLabelAttackReport
from privaudit.report._common import artefact_key, artefact_name, check_results, figure_png
from privaudit.report._epsilon import effective_epsilon_by_target, headline_epsilon
from privaudit.report._interpret import AucReading, interpret_auc
from privaudit.report._plots import histogram_figure, roc_figure
from privaudit.report._registry import registered_sections
from privaudit.report._section import (
    FOLD_OPEN_MAX_CHARS,
    FOLD_OPEN_ORDER,
    Finding,
    ReportSection,
)
from privaudit.report._verdict import (
    Verdict,
    result_verdict,
    strongest_finding,
    target_verdict,
)
from privaudit.results import (
    DEFAULT_FPRS,
    AttackResult,
    AttributeResult,
    DPAuditResult,
    MemorisationResult,
    ProximityResult,
    RiskResult,
    atomic_write_text,
    check_fprs,
    check_n_bootstrap,
    result_type_of,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["HtmlReport", "ResultGroups", "split_results", "write_html_report"]

TEMPLATE = "report.html"
#: Resolution of the figures in the page: the ROC figures are read closely (log-log
#: panel), the histograms, one per result, at a glance.
ROC_DPI = 80
HISTOGRAM_DPI = 72
#: Palettes (:func:`figure_png`): a dozen curves, or two filled densities and their
#: outlines, need few colours (the demo's page: 10.5 MB of true-colour figures, 2.4 MB).
ROC_COLORS = 48
HISTOGRAM_COLORS = 32


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


class ResultGroups(NamedTuple):
    """A report's results by how they are read."""

    attacks: list[AttackResult]       # membership / attribute inference: the metrics sections
    risks: list[RiskResult]           # count-based risks (anonymeter)
    proximity: list[ProximityResult]  # closeness of synthetic rows to training rows
    fidelity: list[AttackResult]      # classifiers telling synthetic from real (not a leak)
    attributes: list[AttributeResult]  # attribute guesses on a model's members
    dp: list[DPAuditResult]           # DP-training audits: claims checked against canaries
    memorisation: list[MemorisationResult]  # LLM extraction checks and canary exposure


def split_results(results: Any, func: str) -> ResultGroups:
    """``results`` (a non-empty sequence of any result kinds) grouped by kind.

    An attack result whose ``audit.role`` is ``"fidelity"`` (the synthetic-data
    distinguisher) measures how alike two tables are, not what an attacker learns about a
    record: it is reported in its own section, never in the membership verdicts.
    """
    if result_type_of(results) is not None:
        results = [results]
    if not isinstance(results, Iterable) or isinstance(results, (str, bytes)):
        return ResultGroups(check_results(results, func), [], [], [], [], [], [])
    groups: dict[str, list[Any]] = {group: [] for group in _GROUPS}
    for result in results:
        groups[_group(result)].append(result)
    others = groups["attacks"]
    if not others and any(groups.values()):
        return ResultGroups([], *(groups[g] for g in _GROUPS[1:]))
    return ResultGroups(check_results(others, func), *(groups[g] for g in _GROUPS[1:]))


#: The groups of :func:`split_results`: a result type, the fidelity classifiers, and
#: ``"attacks"``, the inference results (and whatever is no result, refused there).
_GROUPS = ("attacks", "risk", "proximity", "fidelity", "attribute", "dp", "memorisation")


def _group(result: Any) -> str:
    kind = result_type_of(result)
    if kind == "attack":
        return "fidelity" if result.audit.role == "fidelity" else "attacks"
    return kind if kind in _GROUPS else "attacks"


#: What a result that is not an attack result measures, by result type.
_SUBJECTS = {"risk": "re-identification risk",
             "proximity": "closeness to training records",
             "attribute": "attribute inference",
             "dp": "a differential-privacy claim",
             "memorisation": "memorisation"}


def _subject(result: Any) -> str:
    """What a result measures, for the page header."""
    if result.result_type in _SUBJECTS:
        return _SUBJECTS[result.result_type]
    if result.audit.role == "fidelity":
        return "fidelity"
    return f"{result.kind} inference"


class HtmlReport:
    """A single self-contained HTML page reporting a set of attack results.

    The page is a shell (header, table of contents, footer) around the sections that
    apply to the results (:class:`~privaudit.report.ReportSection`, one template each in
    ``templates/sections/``). For attack results (``index.html``) it holds, in order: a
    summary; the metrics table with
    confidence intervals (AUC, TPR at each FPR, advantage, the headline effective epsilon:
    a Clopper-Pearson lower bound on that attack alone, then TAPAS's point estimate) per
    target and attack, with a plain-language reading of each AUC and a flag when its interval
    contains 0.5; the metrics of hard predictions when there are any; ROC curves on linear
    and log-log axes; histograms of member and non-member scores per result; the
    effective-epsilon lower bounds; for results that carry them (``audit.slices``,
    added by :func:`privaudit.audit_model`), the metrics per
    slice of the records, with the subgroups more exposed than the whole highlighted, and
    the most exposed records, each result in a collapsible block; and the methods. Count-based
    risks (:class:`~privaudit.results.RiskResult`) get a table of attack, baseline and
    control success rates with the residual risk, and the closeness checks of synthetic
    data (:class:`~privaudit.results.ProximityResult`) a table of each check beside its
    holdout baseline with the DCR and NNDR histograms. Figures
    are PNG images embedded as base64 ``data:`` URIs and the style sheet is inline: the file
    needs no network and no other file, and can be mailed or archived as is.

    Parameters
    ----------
    results : sequence of AttackResult or RiskResult
    title : str
        Title of the page.
    n_bootstrap : int
        Bootstrap resamples for the confidence intervals (0 disables them).
    fprs : sequence of float
        False-positive rates at which the TPR is reported.
    confidence : float
        Confidence level of the intervals.
    validation_split, confidence_levels
        Of the effective-epsilon bound (see :class:`EffectiveEpsilonReport`).
    random_state : int, Generator or None
        Seeds the bootstrap and the effective-epsilon split.
    description : str, optional
        A paragraph under the title (e.g. what was audited and why).
    sections : sequence of ReportSection, optional
        The sections to consider (those that apply are shown, ordered by their
        ``order``); by default every registered section
        (:func:`~privaudit.report.register_section`).
    progress : None, callable(str) or Progress
        A bar over the bootstrap of the results' metrics.

    Notes
    -----
    The report computes nothing itself: metrics come from :meth:`AttackResult.metrics`
    and :mod:`privaudit.metrics`. matplotlib (Agg, without pyplot) and jinja2 are imported
    when the report is rendered.

    References
    ----------
    .. [1] Houssiau, F., et al. "TAPAS: a Toolbox for Adversarial Privacy Auditing of
       Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    .. [2] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022.
    .. [3] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private
       Machine Learning: How Private is Private SGD?" NeurIPS 2020.
    """

    def __init__(
        self,
        results: Sequence[AttackResult],
        *,
        title: str = "Privacy audit report",
        n_bootstrap: int = 1000,
        fprs: Sequence[float] = DEFAULT_FPRS,
        confidence: float = 0.95,
        validation_split: float = 0.1,
        confidence_levels: Sequence[float] = (0.9, 0.95, 0.99),
        random_state: int | np.random.Generator | None = 0,
        description: str | None = None,
        sections: Sequence[ReportSection] | None = None,
        progress: Any = None,
    ) -> None:
        func = "HtmlReport"
        self.progress = as_progress(progress, func=func)
        groups = split_results(results, func)
        self.results, self.risk_results = groups.attacks, groups.risks
        self.proximity_results, self.fidelity_results = groups.proximity, groups.fidelity
        self.attribute_results = groups.attributes
        self.dp_results = groups.dp
        self.memorisation_results = groups.memorisation
        self.title = str(title)
        self.description = description
        self.confidence = check_fraction(confidence, param="confidence", func=func)
        self.validation_split = check_fraction(validation_split, param="validation_split",
                                               func=func)
        self.confidence_levels = tuple(confidence_levels)
        self.random_state = random_state
        self.n_bootstrap = check_n_bootstrap(n_bootstrap, func)
        self.fprs = check_fprs(fprs, func)
        self.sections = registered_sections() if sections is None else list(sections)
        for section in self.sections:
            if not isinstance(section, ReportSection):
                raise param_error("sections", func, "a sequence of ReportSection",
                                  f"<an element of type {type(section).__name__}>",
                                  error=TypeError)
        self.sections.sort(key=lambda section: section.order)

    # ------------------------------------------------------------------ pieces
    @cached_property
    def metrics_report(self) -> BinaryLabelAttackReport:
        """The metrics of the attack results (computed when first needed)."""
        return BinaryLabelAttackReport(
            self.results, n_bootstrap=self.n_bootstrap, fprs=self.fprs,
            confidence=self.confidence, random_state=self.random_state,
            progress=self.progress,
        )

    @cached_property
    def fidelity_metrics(self) -> list[dict[str, Any]]:
        """The metrics (AUC with its interval...) of each fidelity classifier."""
        return [r.metrics(n_bootstrap=self.n_bootstrap, fprs=self.fprs,
                          confidence=self.confidence, random_state=self.random_state)
                for r in self.fidelity_results]

    @property
    def metric_dicts(self) -> list[dict[str, Any]]:
        """The metrics of every result, computed once (shared with other outputs)."""
        return self.metrics_report.metric_dicts

    @cached_property
    def headline_epsilons(self) -> list[dict[str, Any]]:
        """The headline ε of each attack result: its Clopper–Pearson lower bound.

        At level ``confidence``, on that attack alone, seeded by ``random_state``
        (:func:`~privaudit.report._epsilon.headline_epsilon`): ``{"value", "confidence",
        "note"}``, ``value`` NaN with the reason in ``note`` (e.g. a cross-fitted attack).
        """
        return [headline_epsilon(r, confidence=self.confidence,
                                 validation_split=self.validation_split,
                                 random_state=self.random_state) for r in self.results]

    def metrics_frame(self) -> pd.DataFrame:
        """The metrics table (:meth:`BinaryLabelAttackReport.metrics_frame`) and headline ε.

        The columns ``effective_epsilon_lower_bound`` (the headline ε, NaN when there is
        none) and ``effective_epsilon_lower_bound_note`` (why) come before TAPAS's point
        estimate ``effective_epsilon``.
        """
        frame = self.metrics_report.metrics_frame()
        at = (list(frame.columns).index("effective_epsilon")
              if "effective_epsilon" in frame.columns else len(frame.columns))
        frame.insert(at, "effective_epsilon_lower_bound_note",
                     [e["note"] for e in self.headline_epsilons])
        frame.insert(at, "effective_epsilon_lower_bound",
                     [e["value"] for e in self.headline_epsilons])
        return frame

    @cached_property
    def epsilon_frame(self) -> pd.DataFrame:
        """Effective-epsilon bounds per target (see ``effective_epsilon_by_target``)."""
        return effective_epsilon_by_target(
            self.results, validation_split=self.validation_split,
            confidence_levels=self.confidence_levels, random_state=self.random_state,
        )

    @cached_property
    def readings(self) -> list[AucReading]:
        """The plain-language reading of each result's AUC."""
        return [
            interpret_auc(m["auc"]["value"], m["auc"]["low"], m["auc"]["high"], kind=r.kind,
                          confidence=self.confidence)
            for r, m in zip(self.results, self.metric_dicts, strict=True)
        ]

    @cached_property
    def verdicts(self) -> list[Verdict]:
        """The verdict on each result, every rule applied (:func:`result_verdict`).

        The lift at a resolvable low FPR, then the AUC; baselines, artefacts and critical
        findings read as such.
        """
        return [result_verdict(r, m) for r, m in zip(self.results, self.metric_dicts,
                                                     strict=True)]

    @cached_property
    def figure_indices(self) -> list[int]:
        """Indices of the results drawn in the page's ROC and histogram figures.

        Attacks on unlearned models are drawn by the unlearning section (a panel per
        algorithm, RT the reference): drawing them again here was the "ROC curves drawn
        twice" of issue 20, and a quarter of the page's figures.
        """
        return [i for i, r in enumerate(self.results) if r.audit.kind != "unlearning"]

    def target_verdicts(self) -> list[dict[str, Any]]:
        """One headline verdict per audited artefact, from its strongest attack.

        An artefact is (dataset, generator, target) (:func:`artefact_key`): the copier's and
        the DP generator's attacks on one record are two verdicts, never one. ``name`` is
        :func:`artefact_name` (the generator and dataset named when the result has them);
        ``target``, ``dataset`` and ``generator`` are the parts (empty when none).
        """
        groups: dict[tuple[str, str, str], list[Verdict]] = {}
        names: dict[tuple[str, str, str], str] = {}
        for r, v in zip(self.results, self.verdicts, strict=True):
            if r.audit.role != "baseline":  # a baseline is compared with, not judged
                key = artefact_key(r)
                groups.setdefault(key, []).append(v)
                names.setdefault(key, artefact_name(r))
        return [
            {"name": names[key], "target": key[2] or "—", "dataset": key[0],
             "generator": key[1], "verdict": target_verdict(vs)}
            for key, vs in groups.items()
        ]

    @cached_property
    def findings(self) -> list[Finding]:
        """Every applicable section's findings (:meth:`ReportSection.findings`), in page order."""
        return [f for s in self._applicable() for f in s.findings(self)]

    @cached_property
    def overview(self) -> list[Finding]:
        """One answer per audited artefact: its strongest finding, in first-seen order.

        The report opens with these (and the terminal summary is their table): the
        strongest finding the data can support (:func:`strongest_finding`), with its attack,
        metric and interval.
        """
        groups: dict[str, list[Finding]] = {}
        for finding in self.findings:
            groups.setdefault(finding.artefact, []).append(finding)
        return [strongest_finding(group) for group in groups.values()]

    @cached_property
    def roc_png(self) -> bytes:
        """The ROC figure (linear and log-log panels) as PNG bytes."""
        aucs = [m["auc"]["value"] for m in self.metric_dicts]
        return figure_png(roc_figure(self.results, aucs=aucs))

    @cached_property
    def roc_groups(self) -> list[tuple[str, bytes]]:
        """One ROC figure per audited artefact, when there are several.

        Twenty curves of five targets on one pair of axes cannot be read; attacks are
        compared against each other on the same artefact, so that is how they are grouped:
        by :func:`artefact_key` (dataset, generator, target: the copier's and the DP
        generator's attacks on one record are two figures, each titled with its generator
        by :func:`artefact_name`); membership and attribute inference of one artefact are
        separate rows of panels of its figure (:func:`roc_figure`). With a single artefact
        this is the one figure of :attr:`roc_png`.
        """
        groups: dict[tuple[str, str, str], list[int]] = {}
        for i in self.figure_indices:
            groups.setdefault(artefact_key(self.results[i]), []).append(i)
        if len(groups) == 1 and len(self.figure_indices) == len(self.results):
            return [("", self.roc_png)]
        out = []
        for idx in groups.values():
            aucs = [self.metric_dicts[i]["auc"]["value"] for i in idx]
            title = artefact_name(self.results[idx[0]])
            figure = roc_figure([self.results[i] for i in idx], aucs=aucs, title=title)
            out.append((title, figure_png(figure, dpi=ROC_DPI, colors=ROC_COLORS)))
        return out

    def histogram_pngs(self) -> list[bytes]:
        """Member/non-member score histograms, one small PNG per result.

        At :data:`HISTOGRAM_DPI` with a reduced palette (:func:`figure_png`): a hundred of
        them must not make the page too heavy to send.
        """
        return [
            figure_png(histogram_figure(self.results[i],
                                        auc=self.metric_dicts[i]["auc"]["value"]),
                       dpi=HISTOGRAM_DPI, colors=HISTOGRAM_COLORS)
            for i in self.figure_indices
        ]

    # ------------------------------------------------------------------ rendering
    @property
    def all_results(self) -> list[Any]:
        """Every result: attacks, risks, closeness checks, fidelity classifiers."""
        return [*self.results, *self.risk_results, *self.proximity_results,
                *self.fidelity_results, *self.attribute_results, *self.dp_results,
                *self.memorisation_results]

    def shared_context(self) -> dict[str, Any]:
        """What the shell and every section's template see: names, settings, layout."""
        from privaudit._version import __version__

        results = self.all_results
        # A dimension with one value goes in the page header, not in a table column.
        datasets = sorted({r.dataset for r in results})
        generators = sorted({r.generator for r in results})
        common = [f"{name} {values[0]}" for name, values in
                  (("dataset", datasets), ("generator", generators))
                  if len(values) == 1 and values[0]]
        return {
            "title": self.title,
            "description": self.description,
            "created": _now(),
            "version": __version__,
            "n_bootstrap": self.n_bootstrap,
            "confidence": f"{self.confidence:.0%}",
            "random_state": repr(self.random_state)
            if not isinstance(self.random_state, np.random.Generator) else "a Generator",
            "validation_split": f"{self.validation_split:g}",
            "show": {
                "dataset": len(datasets) > 1,
                "generator": len(generators) > 1,
                "sensitive_attribute": any(r.kind == "attribute" for r in self.results),
            },
            "common": common,
            "kinds": sorted({_subject(r) for r in results}),
        }

    def context(self) -> dict[str, Any]:
        """The shell's variables, and ``sections``: each applicable section's own variables.

        ``sections`` is a list of ``{"name", "title", "context"}`` in page order. The
        sections draw their figures here (about a minute for the demo's report): a counted
        step, ``"Drawing the report's sections"``, shows it (issue 20: every step over
        10 s has a counted bar).
        """
        shared = self.shared_context()
        shown = self._shown()
        blocks = []
        with self.progress.task("Drawing the report's sections", total=len(shown),
                                delay=2.0) as task:
            for section in shown:
                blocks.append({"name": section.name, "title": section.title,
                               "context": section.context(self)})
                task.advance()
        shared["sections"] = blocks
        return shared

    def _applicable(self) -> list[ReportSection]:
        """The sections that apply to the results (those whose findings are read)."""
        results = self.all_results
        return [s for s in self.sections if s.applies_to(results)]

    def _shown(self) -> list[ReportSection]:
        """The applicable sections that also want to be shown (:meth:`ReportSection.shown`)."""
        return [s for s in self._applicable() if s.shown(self)]

    def render(self) -> str:
        """The HTML page as a string: the shell, with each section's template inside.

        Each section is a foldable block (:func:`fold_section`), open or closed as its
        :attr:`~ReportSection.fold` says.
        """
        import markupsafe

        env = _environment()
        context = self.context()
        blocks = []
        for section, block in zip(self._shown(), context["sections"], strict=True):
            template = (env.from_string(section.template_source) if section.template_source
                        else env.get_template(f"sections/{section.name}.html"))
            html = fold_section(template.render(**{**context, **block["context"]}),
                                section_fold(section))
            blocks.append({**block, "html": markupsafe.Markup(html)})
        return env.get_template(TEMPLATE).render(**{**context, "sections": blocks})

    def write(
        self, directory: str | os.PathLike[str], *, filename: str = "index.html"
    ) -> Path:
        """Write the page to ``directory/filename`` (atomically) and return its path."""
        return atomic_write_text(Path(directory) / filename, self.render())

    publish = write


_SECTION_HEAD = re.compile(r"\A(\s*<section\b[^>]*>\s*)(<h2\b[^>]*>.*?</h2>)(.*)(</section>\s*)\Z",
                           re.DOTALL)


def section_fold(section: ReportSection) -> str:
    """How ``section`` starts: its :attr:`~ReportSection.fold`, open at the page's opening.

    A section of ``fold = "auto"`` placed at the opening of the page (``order`` at most
    :data:`~privaudit.report._section.FOLD_OPEN_ORDER`: the overview, the summary) starts
    open however long it is: it is what a reviewer reads first.
    """
    if section.fold == "auto" and section.order <= FOLD_OPEN_ORDER:
        return "open"
    return section.fold


_DATA_URI = re.compile(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+")
#: What one embedded figure counts for in :func:`reading_length` (about half a screen).
FIGURE_READING_CHARS = 4_000


def reading_length(html: str) -> int:
    """How long a block is to read: its characters, each embedded figure as a fixed share.

    An image's base64 bytes say nothing about how long it takes to look at: one ROC figure
    is a short section, a hundred histograms a long one.
    """
    n_figures = len(_DATA_URI.findall(html))
    return len(_DATA_URI.sub("", html)) + FIGURE_READING_CHARS * n_figures


def fold_section(html: str, fold: str = "auto") -> str:
    """A section's HTML as a foldable block: its heading the ``<summary>`` of a ``<details>``.

    ``fold`` is ``"open"``, ``"closed"`` or ``"auto"``: open when the block's
    :func:`reading_length` is at most
    :data:`~privaudit.report._section.FOLD_OPEN_MAX_CHARS`. The ``<section id>`` stays
    outside, so that a link to the section lands on its heading, folded or not (the page
    runs no script; browsers open a folded block to show an anchor inside it). A
    block not of the form ``<section><h2>...</h2>...</section>`` is returned unchanged.
    """
    if fold not in ("open", "closed", "auto"):
        raise param_error("fold", "fold_section", "'open', 'closed' or 'auto'", fold)
    match = _SECTION_HEAD.match(html)
    if match is None:
        return html
    start, heading, body, end = match.groups()
    is_open = fold == "open" or (fold == "auto" and reading_length(html) <= FOLD_OPEN_MAX_CHARS)
    return (f'{start}<details class="fold"{" open" if is_open else ""}><summary>{heading}'
            f"</summary>{body}</details>{end}")


def _environment() -> Any:
    jinja2 = import_optional("jinja2", extra="report", purpose="The HTML report")
    return jinja2.Environment(
        loader=jinja2.PackageLoader("privaudit.report", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def write_html_report(
    results: Sequence[AttackResult],
    directory: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Write the self-contained ``index.html`` of ``results`` into ``directory``.

    Parameters
    ----------
    results : sequence of AttackResult
    directory : path-like
        Created if needed.
    **options
        Passed to :class:`HtmlReport` (``title``, ``n_bootstrap``, ``fprs``,
        ``confidence``, ``validation_split``, ``confidence_levels``, ``random_state``,
        ``description``).

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.
    """
    return HtmlReport(results, **options).write(directory)
