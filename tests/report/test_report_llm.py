"""The LLM section of the HTML report, and critical findings in the verdict."""

import numpy as np
import pytest

from privaudit.report import HtmlReport
from privaudit.report._sections_llm import llm_context
from privaudit.results import AttackResult, AuditInfo, BaselineCheck, Finding

# The report is read as text and files, never as images.
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


def _llm(attack, target, shift, seed, **audit):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(100, np.int8), np.zeros(100, np.int8)]
    stat = rng.normal(size=200) - shift * labels
    return AttackResult(labels=labels, scores=-stat, raw_statistic=stat,
                        raw_statistic_name=attack, attack=attack, target=target,
                        parameters={"sets": ["forget", "holdout"]},
                        audit=AuditInfo(kind="llm", **audit))


def _results():
    blind_check = BaselineCheck("blind-baseline", False, {"blind_auc": 0.71})
    critical = Finding("blind-baseline", "critical", "A blind classifier does as well.", 0.71)
    return [
        _llm("loss", "unlearned", 1.0, 0, baseline=blind_check, findings=[
            critical, Finding("privleak", "info", "PrivLeak +20.0%", 0.2)]),
        _llm("min-k", "unlearned", 2.0, 1, baseline=BaselineCheck(
            "blind-baseline", True, {"blind_auc": 0.71})),
        _llm("blind-baseline", "texts-only", 0.8, 2),
        _llm("loss", "retrained", 0.0, 3),
        _llm("min-k", "retrained", 0.0, 4),
    ]


def test_llm_context_groups_models_and_reads_findings():
    results = _results()
    context = llm_context(results, [r.metrics(n_bootstrap=50) for r in results])
    assert [t["target"] for t in context["llm_tables"]] == ["unlearned", "retrained"]
    first = context["llm_tables"][0]
    assert first["sets"] == "forget vs holdout"
    assert [row["statistic"] for row in first["rows"]] == ["LOSS", "Min-K%"]
    assert first["rows"][0]["privleak"] == "+20.0%" and first["rows"][0]["blind"] == "0.710"
    assert first["rows"][0]["beats_blind"] is False and first["rows"][1]["beats_blind"]
    assert first["findings"] == [{"severity": "critical",
                                  "message": "A blind classifier does as well."}]
    assert context["llm_models"] == ["unlearned", "retrained"]
    assert context["llm_blind"]["value"] != "—"
    assert len(context["llm_side_by_side"]) == 2


def test_llm_section_is_on_the_page_and_critical_findings_disqualify(tmp_path):
    report = HtmlReport(_results(), n_bootstrap=50)
    page = report.render()
    assert '<section id="llm">' in page and '<a href="#llm">Language model</a>' in page
    assert "not above the blind baseline" in page and "Models side by side" in page
    verdicts = {v["target"]: v["verdict"] for v in report.target_verdicts()}
    # The flagged LOSS result cannot carry the headline: Min-K does.
    assert verdicts["unlearned"].attack == "min-k"
    flagged = report.verdicts[0]
    assert flagged.severity == "undefined" and flagged.label == "Not interpretable"
    assert "blind classifier" in flagged.text


def test_model_audits_have_no_llm_section(make_result):
    page = HtmlReport([make_result(attack="loss")], n_bootstrap=0).render()
    assert 'id="llm"' not in page
