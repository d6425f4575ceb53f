"""Issue 20: one ε per result everywhere (metrics table, results.json, CSVs, ε section).

A result's ε is its headline epsilon (:func:`headline_epsilon`: Jagielski et al.'s
Clopper-Pearson bound on that attack alone at the report's confidence). The artefact's
ε (Bonferroni over its attacks) is a different quantity, stated in words with the attack
and the runs it rests on, and equal in the section and in ``effective_epsilon.csv``.
"""

from __future__ import annotations

import html as html_text
import json
import math

import numpy as np
import pandas as pd
import pytest

from privaudit.report import HtmlReport, ReportSection, build_report, headline_epsilon
from privaudit.report._epsilon import (
    artefact_epsilons,
    effective_epsilon_by_target,
    epsilon_section_context,
)
from privaudit.report._format import fmt
from privaudit.results import AttackResult

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

CONFIDENCE = 0.95


def _attack(attack: str, separation: float, seed: int, *, target: str = "model",
            generator: str = "", kind: str = "membership", n: int = 150,
            out_of_fold: bool = False) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n), np.zeros(n)].astype(int)
    result = AttackResult(labels=labels, scores=separation * labels + rng.normal(0, 1, 2 * n),
                          attack=attack, target=target, generator=generator, dataset="tv16",
                          record_ids=np.arange(2 * n), kind=kind, out_of_fold=out_of_fold)
    if generator:
        result.audit.kind = "generator"
    return result


def _several_targets() -> list[AttackResult]:
    return [_attack("loss", 3.0, 0, target="overfit"), _attack("entropy", 1.0, 1,
                                                                target="overfit"),
            _attack("loss", 0.0, 2, target="regularised"),
            _attack("entropy", 0.5, 3, target="regularised")]


def _with_out_of_fold() -> list[AttackResult]:
    return [_attack("loss", 2.0, 4), _attack("lira", 2.5, 5),
            _attack("trained-lr", 4.0, 6, out_of_fold=True)]


def _single_attack() -> list[AttackResult]:
    return [_attack("loss", 2.5, 7)]


def _generators() -> list[AttackResult]:
    """Two generators on one record, membership (300 runs) and attribute (200) each."""
    out = []
    for generator, separation in (("copier", 6.0), ("dp", 0.0)):
        out += [_attack("closest-distance", separation, 8, target="record 1",
                        generator=generator),
                _attack("domias", separation / 2, 9, target="record 1", generator=generator),
                _attack("closest-distance", separation, 10, target="record 1",
                        generator=generator, kind="attribute", n=100)]
    return out


CASES = {"several targets": _several_targets, "out of fold": _with_out_of_fold,
         "single attack": _single_attack, "generators and kinds": _generators}


class _EpsilonSection(ReportSection):
    """The ε section as the page shows it once its class calls epsilon_section_context."""

    name, title, order = "epsilon", "Effective ε", 70

    def applies_to(self, results):
        return True

    def context(self, report):
        return epsilon_section_context(report)


@pytest.fixture(scope="module", params=list(CASES))
def built(request, tmp_path_factory):
    results = CASES[request.param]()
    directory = tmp_path_factory.mktemp(request.param.replace(" ", "-"))
    build_report(results, directory, n_bootstrap=0, random_state=3)
    report = HtmlReport(results, n_bootstrap=0, random_state=3, sections=[_EpsilonSection()])
    return results, directory, report


def _headlines(results):
    return [headline_epsilon(r, confidence=CONFIDENCE, random_state=3)["value"]
            for r in results]


def test_metrics_csv_and_results_json_carry_each_result_headline(built) -> None:
    results, directory, _ = built
    expected = _headlines(results)
    frame = pd.read_csv(directory / "metrics.csv")
    doc = json.loads((directory / "results.json").read_text())
    for i, value in enumerate(expected):
        in_csv = frame.loc[i, "effective_epsilon_lower_bound"]
        in_json = doc["results"][i]["metrics"]["effective_epsilon_lower_bound"]["value"]
        if math.isnan(value):
            assert math.isnan(in_csv) and in_json is None
        else:
            assert in_csv == pytest.approx(value, abs=1e-12) and in_json == value


def test_metrics_table_and_section_rows_show_the_same_number(built) -> None:
    results, directory, report = built
    html = (directory / "index.html").read_text(encoding="utf-8")
    start = html.index('id="metrics-table"')
    table = html[start:html.index("</table>", start)]
    rows = [row for block in epsilon_section_context(report)["epsilon_blocks"]
            for row in block["rows"]]
    assert len(rows) == len(results)  # every result once, in its artefact's block
    by_attack = {(row["attack"], row["value"]) for row in rows}
    for result, value in zip(results, _headlines(results), strict=True):
        shown = fmt(value, 2)
        if not math.isnan(value):
            assert f">{shown}<" in table
        label = result.attack if result.kind != "attribute" else (
            f"{result.attack} (infers an attribute)")
        assert (label, shown) in by_attack


def test_section_statement_is_the_csv_bound_of_the_artefact(built) -> None:
    results, directory, report = built
    csv = pd.read_csv(directory / "effective_epsilon.csv",
                      dtype={"generator": str, "target": str})
    csv[["generator", "target"]] = csv[["generator", "target"]].fillna("")
    section = html_text.unescape(report.render())
    for entry in artefact_epsilons(report):
        _, generator, target, kind = entry.key
        rows = csv[(csv["generator"] == generator) & (csv["target"] == target)
                   & (csv["kind"] == kind) & np.isclose(csv["confidence"], CONFIDENCE)]
        assert entry.value == pytest.approx(rows["epsilon_low"].max(), abs=1e-12)
        members = [results[i] for i in entry.indices if not results[i].out_of_fold]
        assert entry.n_attacks == len(members) == rows["n_attacks"].iloc[0]
        # The artefact's bound is the largest of its attacks' own bounds, each at the
        # Bonferroni level: the same per-attack computation as the headline.
        level = 1 - (1 - CONFIDENCE) / len(members)
        alone = [headline_epsilon(r, confidence=level, random_state=3)["value"]
                 for r in members]
        assert entry.value == pytest.approx(max(alone), abs=1e-12)
        if len(members) == 1:  # one attack: the artefact's ε is the result's
            assert entry.value == _headlines(members)[0]
        if entry.value > 0:
            assert entry.attack == members[int(np.argmax(alone))].attack
            assert f"ε ≥ {fmt(entry.value, 2)} with 95% confidence" in section
            assert f"{entry.attack} gives it" in section or len(members) == 1


def test_section_says_the_correction_and_the_runs_in_words(built) -> None:
    _, _, report = built
    html = html_text.unescape(report.render())
    for entry in artefact_epsilons(report):
        if entry.value > 0 and entry.n_attacks > 1:
            assert (f"the largest of {entry.n_attacks} attacks' bounds, each at "
                    f"{entry.attack_confidence * 100:.4g}% (Bonferroni)") in html
            n = entry.n_validation + entry.n_test
            assert f"chosen on {entry.n_validation:,} of {n:,}" in html
            assert f"tested on the other {entry.n_test:,}" in html
    # No second ε beside a result, nor the cryptic labels of before.
    assert "≤" not in html.split('id="epsilon"')[1] and "point estimate" not in html


def test_membership_and_attribute_are_never_one_bound() -> None:
    frame = effective_epsilon_by_target(_generators(), confidence_levels=(CONFIDENCE,))
    assert list(frame.columns[:12]) == [
        "dataset", "generator", "target", "candidates", "confidence", "epsilon_low",
        "epsilon_high", "attack", "threshold", "n_validation", "n_test", "note"]
    assert list(frame.columns[12:]) == ["kind", "n_attacks", "attack_confidence"]
    for (generator, kind), rows in frame.groupby(["generator", "kind"]):
        assert len(rows) == 1, (generator, kind)
        expected = {"membership": "closest-distance, domias",
                    "attribute": "closest-distance"}[kind]
        assert rows["candidates"].iloc[0] == expected
    copier = frame[(frame["generator"] == "copier") & (frame["kind"] == "membership")]
    assert copier["attack_confidence"].iloc[0] == pytest.approx(0.975)


def test_results_on_different_records_share_one_correction() -> None:
    # Same artefact and kind, 300 and 200 records: bounded one by one, each at the
    # group's level, so that the largest of the rows is valid for the artefact.
    results = [_attack("loss", 3.0, 11), _attack("lira", 3.0, 12, n=100)]
    frame = effective_epsilon_by_target(results, confidence_levels=(CONFIDENCE,),
                                        random_state=3)
    assert list(frame["candidates"]) == ["loss", "lira"]
    assert (frame["n_attacks"] == 2).all()
    for row, result in zip(frame.to_dict("records"), results, strict=True):
        assert row["confidence"] == CONFIDENCE
        assert row["epsilon_low"] == headline_epsilon(result, confidence=0.975,
                                                      random_state=3)["value"]
