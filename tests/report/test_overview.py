"""Issue 20: the report opens with one answer per audited artefact, then folded details.

The sections that judge results (membership, synthetic data, generators, unlearning)
register findings in their own files; these tests use sections of their own, so that the
overview is tested whatever those sections say.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest

from privaudit.report import (
    Finding,
    HtmlReport,
    ReportSection,
    artefact_name,
    registered_sections,
)
from privaudit.report._html import fold_section, reading_length
from privaudit.report._sections_overview import overview_rows

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


def _finding(artefact: str, severity: str, *, attack: str = "loss", strength: float = 0.0,
             section: str = "judged", label: str = "") -> Finding:
    return Finding(artefact=artefact, kind="membership", severity=severity, label=label,
                   attack=attack, metric=f"{attack} metric", interval="[0.1, 0.2]",
                   text=f"{attack} on {artefact}: {severity}", section=section,
                   strength=strength)


class _JudgingSection(ReportSection):
    """A section that judges each result with the findings it is given (by artefact)."""

    name, title, order = "judged", "Judged", 25
    template_source: ClassVar[str] = '<section id="judged"><h2>Judged</h2><p>{{ n }}</p></section>'

    def __init__(self, findings: list[Finding]) -> None:
        self._findings = findings

    def applies_to(self, results: Any) -> bool:
        return True

    def context(self, report: Any) -> dict[str, Any]:
        return {"n": len(self._findings)}

    def findings(self, report: Any) -> list[Finding]:
        return list(self._findings)


def _silent_sections() -> list[ReportSection]:
    """The registered sections that judge nothing, so that the findings are the test's."""
    return [s for s in registered_sections()
            if type(s).findings is ReportSection.findings]


def _page(make_result, findings: list[Finding], **options: Any) -> str:
    sections = [*_silent_sections(), _JudgingSection(findings)]
    return HtmlReport([make_result(seed=1)], n_bootstrap=0, sections=sections,
                      **options).render()


def _section_ids(html: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)">', html)


def _overview_table(html: str) -> str:
    start = html.index('id="overview-table"')
    return html[start:html.index("</table>", start)]


def _rows(html: str) -> list[str]:
    return re.findall(r"<tr>\s*<td class=\"name\">.*?</tr>", _overview_table(html), re.DOTALL)


def test_the_overview_comes_first_with_one_row_per_artefact(make_result) -> None:
    findings = [_finding("model A", "low", strength=2), _finding("model A", "high", strength=30,
                                                                 attack="lira"),
                _finding("model B", "moderate", attack="rmia"),
                _finding("model A", "moderate", attack="loss", strength=9)]
    html = _page(make_result, findings)
    assert _section_ids(html)[:2] == ["overview", "summary"]
    rows = _rows(html)
    assert len(rows) == 2  # one per artefact, in first-seen order
    assert "model A" in rows[0] and "model B" in rows[1]
    assert '<span class="badge high">High leakage</span>' in rows[0]  # the strongest level
    assert "<td>lira</td>" in rows[0] and "lira metric" in rows[0] and "[0.1, 0.2]" in rows[0]
    assert "strongest of 3 findings" in rows[0]
    assert '<a href="#judged">details</a>' in rows[0]
    assert '<span class="badge moderate">Moderate leakage</span>' in rows[1]


@pytest.mark.parametrize("note", ["baseline", "artefact", "undefined"])
def test_a_note_is_never_the_answer_when_a_level_was_measured(make_result, note) -> None:
    findings = [_finding("table", note, attack="blind", strength=1e6),  # strong, not a level
                _finding("table", "minimal", attack="closest-distance")]
    row = _rows(_page(make_result, findings))[0]
    assert '<span class="badge minimal">No leakage measured</span>' in row
    assert "<td>closest-distance</td>" in row
    assert f'class="flag note-{note}"' in row and "blind" in row  # shown beside the answer


def test_notes_alone_give_the_answer_with_their_own_wording(make_result) -> None:
    findings = [_finding("texts", "baseline", attack="blind", strength=0.9),
                _finding("texts", "artefact", attack="distinguisher", strength=0.1)]
    row = _rows(_page(make_result, findings))[0]
    assert '<span class="badge baseline">Baseline</span>' in row  # not "High leakage"
    assert "leakage" not in row.split("</span>")[0]
    assert 'class="flag note-artefact"' in row


def test_repeated_notes_of_one_attack_are_one_note() -> None:
    findings = [_finding("m", "high"), *(_finding("m", "baseline", attack="blind",
                                                  strength=s) for s in (1, 5, 3))]
    (row,) = overview_rows(findings)
    assert len(row["notes"]) == 1 and row["notes"][0]["text"].startswith("blind on m")
    assert row["n_findings"] == 4


def test_no_findings_no_overview(make_result) -> None:
    html = HtmlReport([make_result(seed=1)], n_bootstrap=0,
                      sections=_silent_sections()).render()
    assert "summary" in _section_ids(html) and "overview" not in _section_ids(html)
    assert 'id="overview-table"' not in html


def test_an_artefact_name_carries_its_generator_and_dataset(make_result) -> None:
    copier = make_result(target="record 2289", generator="copier", dataset="adult")
    private = make_result(target="record 2289", generator="dp", dataset="adult")
    assert artefact_name(copier) == "record 2289 (copier, adult)"
    assert artefact_name(copier) != artefact_name(private)
    assert artefact_name(make_result(target="")) == "—"


@pytest.mark.parametrize("generators", [("copier", "dp"), ("copier", "copula", "dp")])
def test_verdicts_and_roc_figures_are_per_generator(make_result, generators) -> None:
    results = [make_result(seed=i, target="record 2289", generator=g, dataset="adult",
                           attack=a)
               for i, (g, a) in enumerate((g, a) for g in generators
                                          for a in ("closest-distance", "density"))]
    report = HtmlReport(results, n_bootstrap=0)
    verdicts = report.target_verdicts()
    assert [v["generator"] for v in verdicts] == list(generators)
    assert [v["name"] for v in verdicts] == [f"record 2289 ({g}, adult)" for g in generators]
    assert [title for title, _ in report.roc_groups] == [
        f"record 2289 ({g}, adult)" for g in generators]
    summary = report.render().split('<section id="summary">')[1].split("</section>")[0]
    for g in generators:
        assert f"<strong>record 2289 ({g}, adult)</strong>" in summary


def test_one_roc_figure_per_artefact_whatever_the_kinds(make_result) -> None:
    results = [make_result(seed=1, target="model"), make_result(seed=2, target="model",
                                                                attack="lira"),
               make_result(seed=3, target="model", attack="inversion", kind="attribute"),
               make_result(seed=4, target="other", dataset="adult")]
    titles = [title for title, _ in HtmlReport(results, n_bootstrap=0).roc_groups]
    assert titles == ["model", "other (adult)"]


def test_sections_fold_short_open_long_closed() -> None:
    short = '<section id="a">\n  <h2>A</h2>\n  <p>few words</p>\n</section>'
    long = '<section id="b"><h2>B</h2>' + "<p>row</p>" * 5000 + "</section>"
    assert '<details class="fold" open><summary><h2>A</h2></summary>' in fold_section(short)
    assert '<details class="fold"><summary><h2>B</h2></summary>' in fold_section(long)
    assert fold_section(long).startswith('<section id="b">')  # the anchor stays outside
    assert "open>" in fold_section(long, "open") and " open" not in fold_section(short,
                                                                                "closed")
    custom = "<div>no section heading</div>"
    assert fold_section(custom) == custom
    with pytest.raises(ValueError, match="'fold' parameter of fold_section"):
        fold_section(short, "shut")


def test_figures_count_by_number_not_by_bytes() -> None:
    one_figure = '<img src="data:image/png;base64,' + "A" * 90_000 + '">'
    many = one_figure * 12
    assert reading_length(one_figure) < 5_000 < reading_length(many)
    assert '<details class="fold" open>' in fold_section(
        f"<section id='roc'><h2>ROC</h2>{one_figure}</section>")
    assert '<details class="fold">' in fold_section(
        f"<section id='h'><h2>H</h2>{many}</section>")


def test_the_page_opens_on_the_overview_and_summary(make_result) -> None:
    results = [make_result(seed=i, target=f"model {i % 3}", attack=f"attack {i}")
               for i in range(12)]
    sections = [*_silent_sections(), _JudgingSection([_finding("model 0", "low")])]
    html = HtmlReport(results, n_bootstrap=0, sections=sections).render()
    opened = dict(re.findall(r'<section id="([^"]+)">\s*<details class="fold"( open)?>', html))
    assert opened["overview"] == opened["summary"] == " open"  # long or not: the opening
    assert opened["histograms"] == ""  # twelve histograms: closed
    assert "<script" not in html  # folding is HTML alone: the page runs no code


def test_no_greek_letter_is_upper_cased(make_result) -> None:
    html = HtmlReport([make_result(seed=1)], n_bootstrap=0).render()
    style = html[html.index("<style>"):html.index("</style>")]
    assert "text-transform: uppercase" not in style
    assert "ε lower bound" in html


@pytest.mark.parametrize(("order", "fold", "expected"), [
    (5, "auto", "open"), (10, "auto", "open"), (11, "auto", "auto"), (60, "auto", "auto"),
    (5, "closed", "closed"), (60, "open", "open")])
def test_the_opening_of_the_page_starts_open(order, fold, expected) -> None:
    from privaudit.report._html import section_fold

    section = type("Long", (_JudgingSection,), {"order": order, "fold": fold})([])
    assert section_fold(section) == expected


def test_results_json_records_the_overview_the_page_shows(tmp_path):
    # The terminal summary reads it from results.json instead of bootstrapping again.
    import json

    import numpy as np

    from privaudit.report import HtmlReport, build_report
    from privaudit.results import AttackResult

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(200, int), np.zeros(200, int)]
    results = [AttackResult(labels=labels, scores=rng.random(400) + shift * labels,
                            attack="loss", target=target)
               for target, shift in (("leaky", 2.0), ("private", 0.0))]
    build_report(results, tmp_path, n_bootstrap=20)
    doc = json.loads((tmp_path / "results.json").read_text())
    expected = HtmlReport(results, n_bootstrap=20).overview
    assert [e["artefact"] for e in doc["overview"]] == ["leaky", "private"]
    assert [e["severity"] for e in doc["overview"]] == [f.severity for f in expected]
    assert doc["overview"][0]["severity"] == "critical"
    assert doc["overview"][1]["severity"] == "minimal"


def test_drawing_the_sections_is_a_counted_step():
    # The figures take about a minute in the demo's report: a counted step shows them.
    import numpy as np

    from privaudit._progress import Progress
    from privaudit.report import HtmlReport
    from privaudit.results import AttackResult

    class Recording(Progress):
        def __init__(self):
            self.steps = []

        def _closed(self, task):
            self.steps.append((task.description, task.total, task.counts()))

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(50, int), np.zeros(50, int)]
    report = HtmlReport([AttackResult(labels=labels, scores=rng.random(100), attack="loss",
                                      target="t")], n_bootstrap=0, progress=Recording())
    report.render()
    (step,) = [s for s in report.progress.steps if s[0] == "Drawing the report's sections"]
    assert step[1] == len(report.context()["sections"]) > 3
    assert step[2].startswith(f"{step[1]}/{step[1]}")
