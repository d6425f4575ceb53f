"""The terminal summary is the report's overview: one row per audited artefact (issue 20).

The rows come from :attr:`privaudit.report.HtmlReport.overview`. The sections that judge
results (membership, synthetic data, generators, unlearning) give their findings in their
own modules; these tests register a judging section of their own, in a registry of their
own, so that what they check (the terminal shows the page's overview, names whole,
details behind ``--verbose``) does not depend on any particular section's verdict rule.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import typer.main
from rich.console import Console
from typer.testing import CliRunner

import privaudit.report._section as section_module
from privaudit.cli import app
from privaudit.cli._summary import (
    SEVERITY_STYLES,
    finding_from_entry,
    overview_table,
    report_overview,
)
from privaudit.report import (
    LEVELS,
    Finding,
    HtmlReport,
    ReportSection,
    artefact_name,
    register_section,
)
from privaudit.results import AttackResult, ResultsStore, load_all_results

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

runner = CliRunner()

LONG_TARGET = "a-target-name-much-longer-than-any-column-of-a-terminal-table-" * 2
DETAIL_TITLE = "Membership inference: summary"  # the first detailed table


class JudgeSection(ReportSection):
    """A test section: per attack result, "High leakage" above AUC 0.8, else "Low"."""

    name = "judge-issue20d"
    title = ""
    order = 1
    template_source = '<section id="judge-issue20d"></section>'

    def applies_to(self, results):
        return True

    def context(self, report):
        return {}

    def findings(self, report):
        out = []
        for result, metrics in zip(report.results, report.metric_dicts, strict=True):
            auc = metrics["auc"]
            severity = "high" if auc["value"] > 0.8 else "low"
            out.append(Finding(
                artefact=artefact_name(result), kind=result.kind, severity=severity,
                label=dict(LEVELS)[severity], attack=result.attack,
                metric=f"AUC {auc['value']:.3f}",
                interval=f"[{auc['low']:.3f}, {auc['high']:.3f}]",
                text="test finding", section=self.name, strength=auc["value"]))
        return out


@pytest.fixture
def judged(monkeypatch):
    """Reports in this test see the judging section alone."""
    monkeypatch.setattr(section_module, "_REGISTRY", [])
    register_section(JudgeSection())


def _result(target: str, attack: str, separation: float, seed: int, **names) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(100, int), np.zeros(100, int)]
    scores = rng.normal(size=200) + separation * labels
    return AttackResult(labels=labels, scores=scores, attack=attack, target=target,
                        dataset=names.get("dataset", "tv16"),
                        generator=names.get("generator", ""))


def _results() -> list[AttackResult]:
    return [
        _result("model-a", "loss", 0.1, 0),
        _result("model-a", "lira", 3.0, 1),   # the strongest finding of model-a: high
        _result(LONG_TARGET, "loss", 0.2, 2),
        _result("record 7", "closest-distance", 3.0, 3, generator="copier"),
        _result("record 7", "closest-distance", 0.0, 4, generator="dp-bayes"),
    ]


@pytest.fixture
def saved(tmp_path):
    ResultsStore(tmp_path / "saved").save_all(_results())
    return tmp_path / "saved"


def _cells(text: str) -> str:
    """``text`` with its whitespace taken out (a wrapped cell loses its spaces)."""
    return re.sub(r"\s", "", text)


def _column(text: str, index: int) -> str:
    """Column ``index`` of a rich table's body, its fragments joined, spaces taken out.

    A wrapped cell spans several lines, beside the other columns' fragments: read down the
    column to get it back.
    """
    fragments = [line.split("│")[index + 1] for line in text.splitlines()
                 if line.startswith("│")]
    return _cells("".join(fragments))


def test_the_overview_is_one_row_per_artefact_from_its_strongest_finding(judged, saved,
                                                                        tmp_path):
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(saved), "--out", str(out),
                                 "--n-bootstrap", "20"])
    assert result.exit_code == 0, result.output
    expected = HtmlReport(load_all_results([saved]), n_bootstrap=20).overview
    assert len(expected) == 4  # the copier's and the DP generator's record are two artefacts
    assert [f.artefact for f in report_overview(out)] == [f.artefact for f in expected]
    artefacts, intervals = _column(result.output, 0), _column(result.output, 4)
    for finding in expected:
        assert _cells(finding.artefact) in artefacts
        assert _cells(finding.interval) in intervals
    model_a = next(f for f in expected if f.artefact.startswith("model-a"))
    assert (model_a.attack, model_a.label) == ("lira", "High leakage")
    assert DETAIL_TITLE not in result.output
    assert f"Report: {out / 'index.html'}" in result.output


def test_verbose_adds_the_detailed_tables_after_the_overview(judged, saved, tmp_path):
    result = runner.invoke(app, ["report", str(saved), "--out", str(tmp_path / "r"),
                                 "--n-bootstrap", "20", "--verbose"])
    assert result.exit_code == 0, result.output
    output = result.output
    assert output.index("Overview") < output.index(DETAIL_TITLE) < output.index("Report:")


def test_without_any_finding_the_detailed_tables_are_the_answer(monkeypatch, saved, tmp_path):
    monkeypatch.setattr(section_module, "_REGISTRY", [])  # no section judges anything
    result = runner.invoke(app, ["report", str(saved), "--out", str(tmp_path / "r"),
                                 "--n-bootstrap", "0"])
    assert result.exit_code == 0, result.output
    assert "Overview" not in result.output and DETAIL_TITLE in result.output


@pytest.mark.parametrize("width", [60, 90, 140])
@pytest.mark.parametrize("name", [
    LONG_TARGET,
    "record 2289 (copying-generator, stevedata::TV16)",
    "tiny-gpt2 unlearned (tweets, forget vs holdout after gradient ascent)",
])
def test_names_are_wrapped_never_cut(name, width):
    finding = Finding(name, "membership", "moderate", "Moderate leakage", "rmia",
                      "TPR 4.0% at 1% FPR (4x)", "[2.1%, 6.3%]", "", "metrics", 4.0)
    console = Console(width=width, record=True)
    console.print(overview_table([finding]))
    text = console.export_text()
    assert "…" not in text
    assert _column(text, 0) == _cells(name)
    assert _column(text, 3) == _cells("TPR 4.0% at 1% FPR (4x)")


def test_results_json_overview_reads_back_as_findings(tmp_path):
    entries = [
        {"artefact": "model-a (tv16)", "kind": "membership", "severity": "high",
         "label": "High leakage", "attack": "lira", "metric": "TPR 30% at 1% FPR (30x)",
         "interval": "[22%, 38%]", "text": "why", "section": "metrics", "strength": 30.0},
        {"artefact": "texts-only", "kind": "llm", "severity": "baseline", "label": "Split",
         "attack": "blind-baseline", "metric": "AUC 0.9", "interval": "", "text": "",
         "section": "llm", "strength": None, "strength_status": "infinite"},
        {"artefact": "a model", "severity": "undefined"},  # fields left out read empty
    ]
    (tmp_path / "results.json").write_text(json.dumps({"results": [], "overview": entries}))
    findings = report_overview(tmp_path)
    assert [f.artefact for f in findings] == ["model-a (tv16)", "texts-only", "a model"]
    assert findings[0] == Finding(**entries[0])
    assert math.isinf(findings[1].strength)  # null + status: the float read back
    assert findings[2].attack == "" and findings[2].strength == 0.0
    assert math.isnan(finding_from_entry({"artefact": "x", "strength": None}).strength)


def test_without_a_recorded_overview_the_same_rows_are_computed(judged, tmp_path):
    results = _results()
    (tmp_path / "results.json").write_text(json.dumps(
        {"results": [], "settings": {"n_bootstrap": 20, "confidence": 0.9}}))
    expected = HtmlReport(results, n_bootstrap=20, confidence=0.9, random_state=5).overview
    assert report_overview(tmp_path, results=results, random_state=5) == expected
    ResultsStore(tmp_path / "results").save_all(results)  # read from the report folder
    assert sorted(report_overview(tmp_path, random_state=5)) == sorted(expected)


def test_every_severity_has_its_own_look():
    severities = [key for key, _ in LEVELS] + ["baseline", "artefact", "undefined"]
    assert set(SEVERITY_STYLES) == set(severities)
    notes = [SEVERITY_STYLES[s] for s in ("baseline", "artefact", "undefined")]
    assert not set(notes) & {SEVERITY_STYLES[key] for key, _ in LEVELS}


def _commands(group=None, prefix=()):
    group = group or typer.main.get_command(app)
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def test_every_command_that_writes_a_report_takes_verbose():
    # `card --out` names a Markdown file, not a report folder: it prints one line.
    writers = {path: cmd for path, cmd in _commands()
               if any("--out" in p.opts for p in cmd.params) and path != ("card",)}
    assert {" ".join(p) for p in writers} >= {
        "demo", "report", "study overfitting", "study unlearning", "audit model",
        "audit llm", "audit synthetic", "audit generator", "audit attribute",
        "audit unlearning"}
    for path, command in writers.items():
        assert any("--verbose" in p.opts for p in command.params), path


def test_the_demo_prints_the_overview_and_verbose_its_details(judged, monkeypatch, tmp_path):
    import privaudit.studies as studies

    monkeypatch.setattr(studies, "run_demo_parts", lambda only, **kw: _results())
    short = runner.invoke(app, ["demo", "--out", str(tmp_path / "a"), "--n-bootstrap", "20"])
    assert short.exit_code == 0, short.output
    assert "Overview" in short.output and DETAIL_TITLE not in short.output
    assert _cells(LONG_TARGET) in _column(short.output, 0)
    full = runner.invoke(app, ["demo", "--out", str(tmp_path / "b"), "--n-bootstrap", "20",
                               "-v"])
    assert full.exit_code == 0, full.output
    assert DETAIL_TITLE in full.output
    assert len(short.output.splitlines()) < len(full.output.splitlines())


def test_an_audit_commands_overview_has_the_reports_intervals(judged, tmp_path):
    # The overview reads the report's own numbers: with the configuration's seed (7), the
    # same bootstrap intervals as results.json, not those of another seed.
    import yaml
    from sklearn.datasets import load_breast_cancer
    from sklearn.tree import DecisionTreeClassifier

    from privaudit.targets import save_sklearn_model

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    model = DecisionTreeClassifier(random_state=0).fit(X.iloc[:100], y.iloc[:100])
    save_sklearn_model(model, tmp_path / "model.skops")
    audited = X.iloc[:200].assign(diagnosis=y.iloc[:200].to_numpy(),
                                  member=np.r_[np.ones(100, int), np.zeros(100, int)])
    audited.to_csv(tmp_path / "audited.csv", index=False)
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump({
        "target": {"path": "model.skops", "name": "tree"},
        "data": {"path": "audited.csv", "label_column": "diagnosis",
                 "membership_column": "member"},
        "attacks": ["loss", "confidence"], "random_state": 7,
        "report": {"out": "report", "n_bootstrap": 30}}))
    result = runner.invoke(app, ["audit", "model", "--config", str(tmp_path / "audit.yaml")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "report" / "results.json").read_text())
    written = {f"[{e['metrics']['auc']['low']:.3f}, {e['metrics']['auc']['high']:.3f}]"
               for e in data["results"]}
    (row,) = report_overview(tmp_path / "report", random_state=7)
    assert row.artefact.startswith("tree") and row.interval in written
    assert _cells(row.interval) in _column(result.output, 4)
