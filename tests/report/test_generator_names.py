"""Issue 20: the generator is part of every name, table and legend; generator findings.

The copier's and the DP generator's attacks on "record 1" are two artefacts: ROC legends,
the generator section's tables, the ε section and the findings say whose record it is,
and membership and attribute curves never share a pair of axes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.report import LEVELS, HtmlReport, headline_epsilon
from privaudit.report._epsilon import epsilon_section_context
from privaudit.report._plots import curve_labels, histogram_figure, roc_figure, tick_label
from privaudit.report._sections_generator import (
    epsilon_severity,
    generator_context,
    generator_findings,
)
from privaudit.results import AttackResult

GENERATORS = {"copier": (6.0, 1.0), "dp-bayes": (0.0, 1.0), "copula": (0.5, None)}


def _result(generator: str, target: str, attack: str, separation: float,
            claimed: float | None, seed: int, kind: str = "membership",
            n: int = 150) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n), np.zeros(n)].astype(int)
    result = AttackResult(
        labels=labels, scores=separation * labels + rng.normal(0, 1, 2 * n), attack=attack,
        target=target, generator=generator, dataset="tv16", record_ids=np.arange(2 * n),
        kind=kind, parameters={"claimed_epsilon": claimed, "sensitive_attribute": "vote"})
    result.audit.kind = "generator"
    return result


def _results() -> list[AttackResult]:
    """Three generators x two records x (two membership attacks, one attribute attack)."""
    out, seed = [], 0
    for generator, (separation, claimed) in GENERATORS.items():
        for target in ("record 1", "record 2"):
            for attack, kind, n in (("closest-distance", "membership", 150),
                                    ("domias", "membership", 150),
                                    ("closest-distance", "attribute", 100)):
                seed += 1
                out.append(_result(generator, target, attack, separation, claimed, seed,
                                   kind=kind, n=n))
    return out


@pytest.fixture(scope="module")
def report() -> HtmlReport:
    return HtmlReport(_results(), n_bootstrap=0, random_state=0)


def _legend_texts(fig) -> list[list[str]]:
    """Per pair of axes (linear panel of each kind): the labels of its curves."""
    return [[line.get_label() for line in ax.get_lines()
             if not line.get_label().startswith("_") and line.get_label() != "random guess"]
            for ax in fig.get_axes() if ax.get_title() == "Linear axes"]


@pytest.mark.parametrize("target", ["record 1", "record 2"])
def test_roc_legends_name_the_generator_when_several_share_a_figure(target) -> None:
    results = [r for r in _results() if r.target == target]
    fig = roc_figure(results)
    panels = _legend_texts(fig)
    labels = [label for panel in panels for label in panel]
    assert len(labels) == len(set(labels)) == len(results)  # no two curves named alike
    for result in results:
        assert any(result.generator in label and result.attack in label
                   for label in labels)


def test_roc_legend_of_one_artefact_is_the_attacks_alone() -> None:
    results = [r for r in _results() if r.generator == "copier" and r.target == "record 1"
               and r.kind == "membership"]
    labels = curve_labels(results, [0.9, 0.8])
    assert labels == ["closest-distance (AUC 0.900)", "domias (AUC 0.800)"]
    # ... and the figure is titled by the artefact, with its generator.
    assert roc_figure(results)._suptitle.get_text() == "record 1 (copier, tv16)"


@pytest.mark.parametrize("subset", [
    lambda r: r.target == "record 1",  # three generators, both kinds
    lambda r: r.generator == "copula",  # one generator, two records, both kinds
    lambda r: True,  # everything
])
def test_membership_and_attribute_curves_never_share_axes(subset) -> None:
    results = [r for r in _results() if subset(r)]
    panels = _legend_texts(roc_figure(results, title="t"))
    assert len(panels) == 2  # one row of panels per kind
    for panel in panels:
        inferring = ["(infers vote)" in label for label in panel]
        assert all(inferring) or not any(inferring)


@pytest.mark.parametrize("kind", ["membership", "attribute"])
def test_histogram_titles_name_the_generator(kind) -> None:
    results = [r for r in _results() if r.target == "record 1" and r.kind == kind
               and r.attack == "closest-distance"]
    titles = [histogram_figure(r, auc=0.5).get_axes()[0].get_title() for r in results]
    assert len(set(titles)) == len(titles) == len(GENERATORS)
    for result, title in zip(results, titles, strict=True):
        assert f"record 1 ({result.generator}, tv16)" in title
        assert ("infers vote" in title) == (kind == "attribute")


@pytest.mark.parametrize(("value", "text"), [
    (0.0539871234, "0.054"), (0.25, "0.25"), (12.0, "12"), (0.001, "0.001"),
    (123456.789, "1.2e+05"), (math.inf, "∞"),
])
def test_tick_labels_have_a_few_significant_digits(value, text) -> None:
    assert tick_label(value) == text


def test_generator_tables_name_the_artefact_and_show_the_headline(report) -> None:
    context = generator_context(report.results, report.metric_dicts,
                                confidence=report.confidence,
                                validation_split=report.validation_split,
                                random_state=report.random_state,
                                headlines=report.headline_epsilons)
    claims = {c["generator"]: c for c in context["generator_claims"]}
    assert set(claims) == {"copier", "dp-bayes"}  # the copula claims nothing
    assert claims["copier"]["artefact"].endswith("(copier, tv16)")
    assert claims["dp-bayes"]["artefact"] == "no attack"  # no bound above 0
    headline = {(r.generator, r.target, r.kind, r.attack):
                headline_epsilon(r, random_state=0)["value"] for r in report.results}
    for generator, claim in claims.items():
        for row in claim["bounds"]:
            assert f"({generator}, tv16)" in row["target"]
        shown = sorted(row["headline"] for row in claim["bounds"])
        expected = sorted(f"{v:.2f}" for (g, *_), v in headline.items() if g == generator)
        assert shown == expected


def test_epsilon_section_has_one_block_per_generator_record_and_kind(report) -> None:
    blocks = epsilon_section_context(report)["epsilon_blocks"]
    names = [(b["artefact"], b["kind"]) for b in blocks]
    assert len(names) == len(set(names)) == 3 * 2 * 2
    for generator in GENERATORS:
        assert sum(f"({generator}, tv16)" in name for name, _ in names) == 4


def test_findings_answer_each_generator_record_against_its_claim(report) -> None:
    findings = generator_findings(report)
    levels = {key for key, _ in LEVELS}
    assert all(f.severity in levels and f.kind == "generator" for f in findings)
    by_artefact: dict[str, list] = {}
    for finding in findings:
        by_artefact.setdefault(finding.artefact, []).append(finding)
    # Claiming generators: one answer per record; the copula: one per record and kind.
    assert {a: len(f) for a, f in by_artefact.items()} == {
        f"record {i} ({g}, tv16)": 1 if GENERATORS[g][1] is not None else 2
        for g in GENERATORS for i in (1, 2)}
    for i in (1, 2):
        (copier,) = by_artefact[f"record {i} (copier, tv16)"]
        assert copier.label == "DP claim refuted" and copier.severity in ("high", "critical")
        assert "is not 1.00-DP" in copier.text and copier.strength > 1.0
        (dp,) = by_artefact[f"record {i} (dp-bayes, tv16)"]
        assert dp.label != "DP claim refuted" and dp.severity in ("minimal", "low")
        assert "does not refute the claimed ε = 1.00" in dp.text
        for copula in by_artefact[f"record {i} (copula, tv16)"]:
            assert copula.text.startswith("No differential-privacy claim.")
            assert copula.severity == epsilon_severity(copula.strength)


@pytest.mark.parametrize(("epsilon", "severity"), [
    (math.nan, "undefined"), (0.0, "minimal"), (0.3, "low"), (math.log(5), "moderate"),
    (2.9, "moderate"), (3.0, "high"), (4.7, "critical"), (math.inf, "critical"),
])
def test_epsilon_severity_reads_the_bound_on_the_lift_scale(epsilon, severity) -> None:
    # e^epsilon bounds TPR / FPR: the lift thresholds 100, 20, 5 of the verdicts.
    assert epsilon_severity(epsilon) == severity
