"""Issue 20, the unlearning section a reviewer can read: few figures, each curve once, no
heatmap for the reference (RT), readable ticks, no number at an FPR the never-seen records
cannot resolve, label queries explained, and one finding per unlearned model."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from privaudit.report import HtmlReport
from privaudit.report._sections_unlearning import (
    REFERENCE,
    UnlearningSection,
    format_radius,
    heatmap_figure,
    heatmap_grids,
    queries_explanation,
    radius_ticks,
    roc_grid_figure,
    unlearning_findings,
    unlearning_table,
)
from privaudit.report._verdict import result_verdict, target_verdict
from privaudit.results import AttackResult, AuditInfo

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

ALGORITHMS = ("GA", "FT", "BT", "SCRUB", "SalUn", "SFR-on", "RT")
ATTACKS = ("u-mia", "u-lira", "apollo", "apollo-offline")
N_ROUNDS = 6


def _heatmap(rng: np.random.Generator, eps: float = 0.0539870818456014) -> dict[str, Any]:
    tpr = rng.random((N_ROUNDS, N_ROUNDS))
    return {"radii": [(t + 1) * eps for t in range(N_ROUNDS)], "tpr": tpr.tolist(),
            "fpr": (tpr * rng.random((N_ROUNDS, N_ROUNDS))).tolist()}


def _result(attack: str, algorithm: str, scores: Any, labels: Any,
            dataset: str = "tv16", **extra: Any) -> AttackResult:
    return AttackResult(labels=np.asarray(labels), scores=np.asarray(scores, dtype=float),
                        attack=attack, target=algorithm, dataset=dataset,
                        parameters={"method": algorithm, "n_rounds": N_ROUNDS},
                        extra=extra, audit=AuditInfo(kind="unlearning"))


def _audit(algorithms: tuple[str, ...] = ALGORITHMS, *, n: int = 100, seed: int = 0,
           dataset: str = "tv16", trajectories: bool = True) -> list[AttackResult]:
    """Every attack on every algorithm; GA leaks, RT does not; Apollo kept its grids."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]
    results = []
    for algorithm in algorithms:
        shift = {"GA": 2.0, "RT": 0.0}.get(algorithm, 0.4)
        for attack in ATTACKS:
            scores = np.r_[rng.normal(shift, 1, n), rng.normal(0, 1, n)]
            extra: dict[str, Any] = {}
            if attack.startswith("apollo"):
                extra = {"queries_per_record": 2.0 * N_ROUNDS if trajectories else 4.2,
                         "kind": "under"}
                if trajectories:
                    extra["heatmap"] = _heatmap(rng)
            results.append(_result(attack, algorithm, scores, labels, dataset, **extra))
    return results


def _section(results: list[AttackResult]) -> str:
    html = HtmlReport(results, n_bootstrap=0, sections=[UnlearningSection()]).render()
    start = html.index('<section id="unlearning">')
    return html[start:html.index("</section>", start)]


# ---------------------------------------------------------------- item 1: the figures
@pytest.mark.parametrize("algorithms", [("GA",), ("GA", "RT"), ALGORITHMS])
def test_two_figures_per_dataset_whatever_the_number_of_algorithms(algorithms) -> None:
    section = _section(_audit(algorithms))
    assert section.count('class="unlearning-roc"') == 1
    expected_heatmaps = int(any(a != REFERENCE for a in algorithms))
    assert section.count('class="unlearning-heatmap"') == expected_heatmaps
    assert len(re.findall(r'src="data:image/png;base64,', section)) == 1 + expected_heatmaps


def test_figures_per_dataset_and_none_without_trajectories() -> None:
    two = _audit(("GA", "RT"), dataset="a") + _audit(("GA", "RT"), dataset="b", seed=1)
    assert len(re.findall(r"data:image/png", _section(two))) == 4
    plain = _section(_audit(("GA", "RT"), trajectories=False))
    assert plain.count('class="unlearning-roc"') == 1
    assert 'class="unlearning-heatmap"' not in plain


def _curves(ax: Any) -> list[Any]:
    """The ROC curves of a panel: lines other than the diagonal and the FPR marker."""
    return [line for line in ax.get_lines()
            if line.get_linestyle() == "-" and len(line.get_xdata()) > 2]


@pytest.mark.parametrize("n_algorithms", [1, 4, 7])
def test_roc_small_multiples_draw_each_result_once(n_algorithms) -> None:
    results = _audit(ALGORITHMS[:n_algorithms])
    table = unlearning_table(results, n_bootstrap=0)
    panels = [(col["name"], [r for r in results if r.target == col["name"]], col["fpr"])
              for col in table["columns"]]
    fig = roc_grid_figure(panels)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == [col["name"] for col in table["columns"]]
    for ax, (_, mine, _) in zip(visible, panels, strict=True):
        assert len(_curves(ax)) == len(mine) == len(ATTACKS)
        # One colour per attack in a panel, the same in every panel.
        assert len({tuple(line.get_color()) for line in _curves(ax)}) == len(ATTACKS)
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["U-MIA", "U-LiRA", "Apollo", "Apollo (Off)", "random guess",
                      "column's FPR"]


def test_a_result_given_twice_is_drawn_once() -> None:
    results = _audit(("GA",))
    results.append(results[0])  # U-MIA on GA again
    section = _section(results)
    assert "U-MIA on GA was given more than once; the first is shown." in section
    assert section.count('class="unlearning-roc"') == 1


@pytest.mark.parametrize("algorithms", [("GA", "RT"), ("RT", "SCRUB", "FT"), ("RT",)])
def test_no_heatmap_for_exact_retraining(algorithms) -> None:
    from privaudit.report._sections_unlearning import _column_results, _heatmap_panels

    results = _audit(algorithms)
    assert all("heatmap" in r.extra for r in results if r.attack.startswith("apollo"))
    table = unlearning_table(results, n_bootstrap=0)
    panels = _heatmap_panels(_column_results(table, results))
    assert {name for name, _, _ in panels} == set(algorithms) - {REFERENCE}
    section = _section(results)
    assert not re.search(r"<td class=\"name\">RT: Apollo", section)
    if algorithms == ("RT",):
        assert 'class="unlearning-heatmap"' not in section
        return
    fig = heatmap_figure(panels)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles and not any(t.startswith("RT") for t in titles)


@pytest.mark.parametrize(("radius", "text"), [
    (0.0539870818456014, "0.054"), (1.40366, "1.4"), (0.863793, "0.86"), (123.4, "120"),
    (2.0, "2"), (0.5, "0.5"), (1e-05, "1e-05"), (9999.0, "10000"),
])
def test_radius_labels_have_two_significant_digits(radius, text) -> None:
    assert format_radius(radius) == text


@pytest.mark.parametrize("n_radii", [1, 5, 6, 30, 50])
def test_few_short_radius_ticks(n_radii) -> None:
    eps = 0.0539870818456014
    ticks, labels = radius_ticks([(t + 1) * eps for t in range(n_radii)])
    assert 1 <= len(ticks) <= 4 and ticks[0] == 0 and ticks == sorted(set(ticks))
    assert all(len(label) <= 5 for label in labels)
    assert labels[0] == "0.054"


def test_heatmap_figure_uses_the_short_tick_labels() -> None:
    rng = np.random.default_rng(3)
    grids = heatmap_grids({"heatmap": _heatmap(rng)})
    fig = heatmap_figure([("GA", "Apollo", grids), ("GA", "Apollo (Off)", grids)])
    fig.canvas.draw()
    shown = {t.get_text() for ax in fig.axes for t in ax.get_xticklabels() if t.get_text()}
    assert shown and all(len(text) <= 5 for text in shown)
    assert "0.054" in shown


# ---------------------------------------------------------------- item 2: resolution
def _table(section: str, css: str) -> str:
    start = section.index(f'class="{css}"')
    return section[start:section.index("</table>", start)]


def _rt_like(n_non: int, seed: int) -> list[AttackResult]:
    """RT: chance everywhere, but four forgotten records above every never-seen one."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(100, dtype=int), np.zeros(n_non, dtype=int)]
    umia = np.r_[rng.normal(0, 1, 100), rng.normal(0, 1, n_non)]
    umia[:4] = 10.0
    return [_result("u-mia", "RT", umia, labels),
            _result("apollo", "RT", rng.normal(0, 1, 100 + n_non), labels)]


@pytest.mark.parametrize("n_non", [50, 100, 150])
def test_nothing_is_read_below_one_never_seen_record(n_non) -> None:
    results = _rt_like(n_non, seed=n_non)
    table = unlearning_table(results, n_bootstrap=0)
    (column,) = table["columns"]
    assert column["resolvable_fpr"] == pytest.approx(1 / n_non)
    assert column["fpr"] >= 1 / n_non - 1e-12
    report = HtmlReport(results, n_bootstrap=20, sections=[UnlearningSection()])
    findings = report.findings
    section = _section(results)
    tables = [_table(section, name) for name in ("unlearning-table", "unlearning-details")]
    texts = [*tables, *(f.text + " " + f.metric for f in findings)]
    fprs = [float(x) for t in texts for x in re.findall(r"([\d.]+)% FPR", t)]
    fprs += [float(x) for t in texts for x in re.findall(r"@([\d.]+)%", t)]
    assert len(fprs) >= 2  # the TPR@FPR cells
    assert all(f / 100 >= 1 / n_non - 1e-9 for f in fprs)
    assert f"smallest resolvable {100 / n_non:.1f}%" in section
    # RT is the reference, never "High leakage" from four records above a 0.1% FPR.
    (answer,) = [f for f in findings if f.severity != "artefact"]
    assert answer.severity == "baseline" and "High" not in answer.label


def test_a_column_is_read_where_all_its_results_resolve() -> None:
    rng = np.random.default_rng(5)
    many = np.r_[np.ones(100, dtype=int), np.zeros(400, dtype=int)]
    few = np.r_[np.ones(100, dtype=int), np.zeros(50, dtype=int)]
    results = [_result("apollo", "GA", rng.normal(0, 1, 500), many),
               _result("u-mia", "GA", rng.normal(0, 1, 150), few)]
    (column,) = unlearning_table(results, n_bootstrap=0)["columns"]
    assert column["fpr"] == pytest.approx(1 / 50)
    assert column["fpr_source"] == "resolution"


# ---------------------------------------------------------------- item 3: queries
@pytest.mark.parametrize(("rounds", "expected"), [(30, "2 x 30 = 60"), (50, "2 x 50 = 100"),
                                                  (6, "2 x 6 = 12")])
def test_queries_with_trajectories_are_two_searches_every_round(rounds, expected) -> None:
    result = _result("apollo", "GA", [1, 0], [1, 0],
                     queries_per_record=2.0 * rounds, heatmap={"radii": []})
    result.parameters["n_rounds"] = rounds
    text = queries_explanation(result)
    assert expected in text and "UNDER and OVER" in text
    assert "divided by the records audited" in text


@pytest.mark.parametrize(("kind", "searches"), [("under", "UNDER search"),
                                                ("over", "OVER search"),
                                                ("both", "UNDER and OVER searches")])
def test_queries_without_trajectories_stop_early(kind, searches) -> None:
    result = _result("apollo", "GA", [1, 0], [1, 0], queries_per_record=9.3, kind=kind)
    text = queries_explanation(result)
    assert searches in text and "new extreme" in text and "2 x" not in text


@pytest.mark.parametrize("count", [None, "60", True])
def test_no_explanation_without_a_count(count) -> None:
    extra = {} if count is None else {"queries_per_record": count}
    assert queries_explanation(_result("u-mia", "GA", [1, 0], [1, 0], **extra)) is None


def test_the_section_explains_the_count_it_shows() -> None:
    results = _audit(("GA", "FT", "RT"))
    section = _section(results)
    assert ("Label queries per record (12.0 for Apollo and Apollo (Off) on GA, FT and RT) "
            "are the labels") in section
    assert "2 x 6 = 12 per record" in section
    results[2].extra["queries_per_record"] = 11.5  # Apollo on GA
    section = _section(results)
    assert ("Label queries per record (Apollo: GA 11.5, FT 12.0, RT 12.0; Apollo (Off): "
            "GA 12.0, FT 12.0, RT 12.0) are the labels") in section
    one = _section(_audit(("GA",)))
    assert "(12.0 for Apollo and Apollo (Off) on GA) are" in one


# ---------------------------------------------------------------- item 4: findings
def test_one_finding_per_unlearned_model_rt_the_reference() -> None:
    results = _audit()
    report = HtmlReport(results, n_bootstrap=20, sections=[UnlearningSection()])
    findings = [f for f in report.findings if f.severity != "artefact"]
    assert [f.artefact for f in findings] == [f"{a} (tv16)" for a in ALGORITHMS]
    assert {f.kind for f in findings} == {"unlearning"}
    assert {f.section for f in findings} == {"unlearning"}
    for finding in findings:
        algorithm = finding.artefact.split()[0]
        mine = [(r, m) for r, m in zip(report.results, report.metric_dicts, strict=True)
                if r.target == algorithm]
        verdict = target_verdict([result_verdict(r, m) for r, m in mine])
        assert finding.attack == verdict.attack
        if algorithm == REFERENCE:
            assert finding.severity == "baseline"
            assert finding.label == "Reference (exact retraining)"
        else:
            assert (finding.severity, finding.label) == (verdict.severity, verdict.label)
            assert finding.text.startswith(f"Unlearned by {algorithm}")
            assert "On exact retraining (RT)" in finding.text
    ga = findings[0]
    assert ga.severity in ("moderate", "high", "critical") and ga.interval


def test_the_verdicts_are_shown_under_the_table() -> None:
    section = _section(_audit(("GA", "RT")))
    row = section[section.index('class="unlearning-verdicts"'):]
    row = row[:row.index("</tr>")]
    assert row.count('class="badge ') == 2
    assert "Reference (exact retraining)" in row


def test_a_result_below_chance_is_an_artefact_finding_beside_the_answer() -> None:
    results = _audit(("GA", "RT"))
    rt_umia = next(r for r in results if r.target == "RT" and r.attack == "u-mia")
    inverted = _result("u-mia", "RT", -3 * rt_umia.labels + rt_umia.scores * 0.1,
                       rt_umia.labels)
    results = [inverted if r is rt_umia else r for r in results]
    findings = HtmlReport(results, n_bootstrap=50, sections=[UnlearningSection()]).findings
    flaws = [f for f in findings if f.severity == "artefact"]
    assert [(f.artefact, f.attack) for f in flaws] == [("RT (tv16)", "u-mia")]
    assert [f.severity for f in findings if f.artefact == "RT (tv16)"] == ["baseline",
                                                                           "artefact"]


def test_findings_by_dataset_and_none_without_unlearning(make_result) -> None:
    results = _audit(("GA", "RT"), dataset="a") + _audit(("GA",), dataset="b", seed=2)
    metrics = [r.metrics(n_bootstrap=0) for r in results]
    names = [f.artefact for f in unlearning_findings(results, metrics)
             if f.severity != "artefact"]
    assert names == ["GA (a)", "RT (a)", "GA (b)"]
    other = [make_result(seed=1, attack="loss", target="m")]
    assert unlearning_findings(other, [other[0].metrics(n_bootstrap=0)]) == []


def _x_labels_shown(fig: Any) -> list[bool]:
    fig.canvas.draw()
    return [any(t.get_visible() and t.get_text() for t in ax.get_xticklabels())
            for ax in fig.axes if ax.get_visible() and ax.get_images() + ax.get_lines()]


@pytest.mark.parametrize("n_algorithms", [5, 6, 7])
def test_every_roc_column_shows_its_x_axis(n_algorithms) -> None:
    results = _audit(ALGORITHMS[:n_algorithms])
    panels = [(a, [r for r in results if r.target == a], 0.01)
              for a in ALGORITHMS[:n_algorithms]]
    shown = _x_labels_shown(roc_grid_figure(panels))
    # The lowest panel of each of the 4 columns, whichever row it is in.
    assert sum(shown) == 4
    assert all(shown[max(n_algorithms - 4, 0):])


def test_every_heatmap_column_shows_its_x_axis() -> None:
    rng = np.random.default_rng(4)
    grids = [heatmap_grids({"heatmap": _heatmap(rng)}) for _ in range(4)]
    fig = heatmap_figure([("GA", "Apollo", grids[0]), ("GA", "Apollo (Off)", grids[1]),
                          ("SFR-on", "Apollo", grids[2]), ("BT", "Apollo (Off)", grids[3])])
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_images()]
    shown = dict(zip(titles, _x_labels_shown(fig)[:len(titles)], strict=True))
    assert shown == {"GA: Apollo": False, "SFR-on: Apollo": True,
                     "GA: Apollo (Off)": True, "BT: Apollo (Off)": True}


def test_shared_roc_axes_reach_the_largest_audit_floor() -> None:
    small = _audit(("RT",), n=20)
    large = _audit(("GA",), n=200, seed=9)
    fig = roc_grid_figure([("GA", large, 0.01), ("RT", small, 0.05)])
    for ax in fig.axes:
        if ax.get_visible():
            assert ax.get_xlim()[0] <= 1 / 200 and ax.get_ylim()[0] <= 1 / 200
