"""The report's sections are listed once, in page order (issue 21): importing privaudit
registers nothing, the page follows the list, and ``register_section`` adds a user's own.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import privaudit.report._section as section_module
from privaudit.report import HtmlReport, ReportSection, register_section, registered_sections
from privaudit.report._registry import PAGE_SECTIONS, builtin_sections
from privaudit.results import AttackResult, AuditInfo, ProximityResult, RiskResult

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


@pytest.fixture
def fresh(monkeypatch):
    """A registry as in a new process: not yet read."""
    monkeypatch.setattr(section_module, "_REGISTRY", None)


class _UserSection(ReportSection):
    name, title, order = "user-count", "Counted", 12
    template_source = "<p>{{ n }} results</p>"

    def applies_to(self, results: Any) -> bool:
        return True

    def context(self, report: Any) -> dict[str, Any]:
        return {"n": len(report.all_results)}


def _ids(html: str) -> list[str]:
    """The ids of the page's top-level sections, in page order."""
    names = {s.name for s in registered_sections()}
    return [i for i in re.findall(r'id="([^"]+)"', html) if i in names]


def test_the_list_is_in_page_order_and_names_every_section_once() -> None:
    orders = [cls.order for cls in PAGE_SECTIONS]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    names = [cls.name for cls in PAGE_SECTIONS]
    assert len(set(names)) == len(names) and all(names)
    assert names[0] == "overview" and names[-1] == "methods"


def test_the_default_page_is_the_list(fresh) -> None:
    assert [type(s) for s in registered_sections()] == list(PAGE_SECTIONS)
    assert [type(s) for s in builtin_sections()] == list(PAGE_SECTIONS)


@pytest.mark.parametrize("module", [
    "privaudit.report", "privaudit.report._sections_membership",
    "privaudit.report._sections_unlearning", "privaudit.report._html", "privaudit"])
def test_importing_privaudit_registers_nothing(module: str) -> None:
    code = (f"import {module}\nimport privaudit.report._section as s\n"
            "assert s._REGISTRY is None, s._REGISTRY\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr


def test_no_sections_module_calls_register_section() -> None:
    from pathlib import Path

    import privaudit.report as report

    folder = Path(report.__file__).parent
    for path in folder.glob("_sections_*.py"):
        assert "register_section(" not in path.read_text(), path.name


def test_a_user_section_joins_every_later_report_in_its_place(fresh, make_result) -> None:
    register_section(_UserSection())
    names = [s.name for s in registered_sections()]
    assert names[:3] == ["overview", "summary", "user-count"]
    html = HtmlReport([make_result(seed=1)], n_bootstrap=0).render()
    assert "<p>1 results</p>" in html
    assert html.index('id="summary"') < html.index("<p>1 results</p>") < html.index(
        'id="metrics"')


def test_a_user_section_of_the_same_name_replaces_the_built_in_one(fresh) -> None:
    class Methods(_UserSection):
        name, order = "methods", 1000

    register_section(Methods())
    methods = [s for s in registered_sections() if s.name == "methods"]
    assert len(methods) == 1 and type(methods[0]) is Methods
    assert len(registered_sections()) == len(PAGE_SECTIONS)


@pytest.mark.parametrize("bad", [_UserSection, "methods", None, 3])
def test_register_section_takes_a_section_instance(fresh, bad: Any) -> None:
    with pytest.raises(TypeError, match="'section' parameter of register_section"):
        register_section(bad)
    assert section_module._REGISTRY is None or len(registered_sections()) == len(
        PAGE_SECTIONS)


def _mixed_results() -> list[Any]:
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(50, int), np.zeros(50, int)]
    scores = rng.normal(size=100) + labels

    def attack(name: str, kind: str | None) -> AttackResult:
        return AttackResult(labels=labels, scores=scores, attack=name, target="t",
                            audit=AuditInfo(kind=kind))

    return [attack("loss", "model"), attack("loss", "llm"),
            ProximityResult(metric="dcr", statistic="quantile", synthetic=[0.1, 0.2],
                            baseline=[0.3, 0.4], target="s"),
            RiskResult(n_attacks=100, n_success=40, n_baseline=10, attack="singling_out",
                       target="s")]


def test_the_page_shows_the_sections_in_the_list_order(fresh) -> None:
    html = HtmlReport(_mixed_results(), n_bootstrap=0).render()
    shown = _ids(html)
    order = [cls.name for cls in PAGE_SECTIONS]
    assert {"summary", "metrics", "llm", "synthetic", "risks", "methods"} <= set(shown)
    firsts = list(dict.fromkeys(shown))
    assert firsts == sorted(firsts, key=order.index)
