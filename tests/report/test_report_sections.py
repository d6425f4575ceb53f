"""The report is a shell plus sections: only the sections that apply, a new one plugs in."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

import pytest

from privaudit.report import HtmlReport, ReportSection, build_report, registered_sections
from privaudit.results import RiskResult

# This module reads the pages' sections and text, never their images: figures are counted
# but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

# The overview (one answer per artefact, issue 20) opens every page that judges results.
MEMBERSHIP_NAV = ["Overview", "Summary", "Metrics", "Reading", "ROC curves", "Score distributions",
                  "Effective ε", "Methods"]


def _nav(html: str) -> list[str]:
    nav = html[html.index('<nav class="toc">'):html.index("</nav>")]
    return re.findall(r'<a href="#[^"]+">([^<]+)</a>', nav)


def _risk() -> RiskResult:
    return RiskResult(n_attacks=100, n_success=30, n_baseline=5, n_control=10,
                      target="synthetic table", attack="singling-out")


def test_membership_page_keeps_its_sections_in_order(make_result) -> None:
    html = HtmlReport([make_result(seed=1)], n_bootstrap=0).render()
    assert _nav(html) == MEMBERSHIP_NAV
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert ids == ["overview", "summary", "metrics", "reading", "roc", "histograms", "epsilon",
                   "methods"]
    assert "risk-table" not in html


def test_risk_only_page_has_the_risk_section_alone(tmp_path) -> None:
    index = build_report([_risk()], tmp_path)
    html = index.read_text(encoding="utf-8")
    assert _nav(html) == ["Overview", "Risks"]
    assert 'id="metrics-table"' not in html and "<img" not in html
    table = html[html.index('id="risk-table"'):html.index("</table>",
                                                          html.index('id="risk-table"'))]
    assert "0.300" in table and "[0.219, 0.396]" in table  # attack rate, Wilson
    assert "<strong>0.218</strong>" in table and "[0.105, 0.331]" in table  # residual risk
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["results"] == [] and doc["risks"][0]["risk"]["value"] == pytest.approx(
        0.217579, abs=1e-6)
    assert RiskResult.load(tmp_path / doc["risks"][0]["folder"]) == _risk()
    assert not (tmp_path / "metrics.csv").exists()


def test_mixed_page_shows_both(make_result, tmp_path) -> None:
    index = build_report([make_result(seed=2), _risk()], tmp_path, n_bootstrap=0)
    html = index.read_text(encoding="utf-8")
    assert _nav(html) == [*MEMBERSHIP_NAV[:4], "Risks", *MEMBERSHIP_NAV[4:]]
    assert 'id="metrics-table"' in html and 'id="risk-table"' in html
    doc = json.loads((tmp_path / "results.json").read_text())
    assert len(doc["results"]) == 1 and len(doc["risks"]) == 1
    assert doc["results"][0]["folder"] != doc["risks"][0]["folder"]


class _CountSection(ReportSection):
    """A section from outside the package: a new kind of result touches nothing else."""

    name, title, order = "counted", "Counted", 15
    template_source: ClassVar[str] = (
        '<section id="counted"><h2>{{ title }}: {{ n }} results</h2></section>')

    def applies_to(self, results: Any) -> bool:
        return len(results) > 1

    def context(self, report: HtmlReport) -> dict[str, Any]:
        return {"n": len(report.all_results)}


def test_a_new_section_plugs_in(make_result) -> None:
    results = [make_result(seed=3), make_result(seed=4, attack="lira")]
    sections = [*registered_sections(), _CountSection()]
    html = HtmlReport(results, n_bootstrap=0, sections=sections).render()
    assert _nav(html)[:4] == ["Overview", "Summary", "Counted", "Metrics"]
    assert "<h2>Privacy audit report: 2 results</h2>" in html
    one = HtmlReport(results[:1], n_bootstrap=0, sections=sections).render()
    assert "Counted" not in _nav(one)  # applies_to said no


def test_sections_must_be_report_sections(make_result) -> None:
    with pytest.raises(TypeError, match="The 'sections' parameter of HtmlReport must be a "
                                        "sequence of ReportSection"):
        HtmlReport([make_result()], sections=["metrics"])
