"""The machine-unlearning section: the paper's TPR@FPR table, by hand and on the page."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from privaudit.report import HtmlReport, build_report
from privaudit.report._sections_unlearning import (
    PAPER_CIFAR10,
    heatmap_grids,
    operating_point,
    rt_sanity,
    unlearning_table,
)
from privaudit.results import AttackResult, AuditInfo

LABELS = [1, 1, 1, 1, 0, 0, 0, 0]


def _result(attack: str, target: str, scores: Any, labels: Any = LABELS,
            **fields: Any) -> AttackResult:
    return AttackResult(labels=np.asarray(labels), scores=np.asarray(scores, dtype=float),
                        attack=attack, target=target, audit=AuditInfo(kind="unlearning"),
                        **fields)


def _tiny() -> list[AttackResult]:
    """Four forgotten and four never-seen records; worked out by hand in the tests."""
    return [
        # ROC: (0, .25) (.25, .25) (.25, .5) (.5, .5) ...: lowest FPR > 0 is 25%.
        _result("apollo", "GA", [0.9, 0.6, 0.3, 0.1, 0.8, 0.5, 0.2, 0.05]),
        # (.25, 0) (.25, .25) (.5, .25) (.75, .75) (.75, 1) (1, 1): TPR .25 at FPR .25.
        _result("u-mia", "GA", [0.9, 0.2, 0.2, 0.1, 0.95, 0.3, 0.2, 0.0]),
        # Nothing found below FPR 1: the best point is (0, 0), precision undefined.
        _result("u-lira", "GA", [0.1, 0.1, 0.1, 0.1, 0.9, 0.2, 0.2, 0.2]),
    ]


def test_cells_worked_out_by_hand() -> None:
    table = unlearning_table(_tiny(), n_bootstrap=0)
    (column,) = table["columns"]
    assert column["name"] == "GA" and column["fpr"] == 0.25
    assert column["fpr_source"] == "apollo"
    assert [row["attack"] for row in table["rows"]] == ["u-mia", "u-lira", "apollo"]
    umia, ulira, apollo = (row["cells"][0] for row in table["rows"])
    assert apollo["text"] == "50.0@25.0%" and apollo["tpr"] == apollo["recall"] == 0.5
    assert apollo["precision"] == pytest.approx(2 / 3)  # TP 2, FP 1
    assert apollo["auc"]["value"] == pytest.approx(10 / 16)
    assert umia["text"] == "25.0@25.0%" and umia["precision"] == 0.5
    assert umia["auc"]["value"] == pytest.approx(7 / 16)
    assert ulira["text"] == "0.0@25.0%" and ulira["achieved_fpr"] == 0.0
    assert math.isnan(ulira["precision"])  # nothing flagged: NaN, no division error
    assert math.isnan(apollo["auc"]["low"])  # no bootstrap asked
    twice = unlearning_table([*_tiny(), _tiny()[0]], n_bootstrap=0)
    assert twice["duplicates"] == [("GA", "apollo")]


def test_operating_point_prefers_the_lowest_fpr_among_equal_tprs() -> None:
    result = _result("u-mia", "GA", [0.9, 0.8, 0.1, 0.1, 0.7, 0.6, 0.2, 0.0])
    point = operating_point(result, 0.5)  # (0, .5) and (.5, .5) tie on TPR
    assert (point["tpr"], point["fpr"], point["precision"]) == (0.5, 0.0, 1.0)
    assert math.isnan(operating_point(result, math.nan)["tpr"])


def test_column_and_row_order_method_and_fallbacks() -> None:
    rng = np.random.default_rng(0)
    results = []
    for target in ("RT", "SFR-on", "MyAlgo", "model-a"):
        for attack in ("zzz", "apollo-offline", "u-mia", "aaa"):
            results.append(_result(attack, target, rng.random(8)))
    # A user's model named anything, the algorithm in parameters["method"].
    results[-4:] = [_result(r.attack, "model-a", r.scores, parameters={"method": "GA"})
                    for r in results[-4:]]
    results.append(AttackResult(labels=np.asarray(LABELS), scores=rng.random(8),
                                attack="u-mia", target="GA"))  # no unlearning audit
    table = unlearning_table(results, n_bootstrap=0)
    assert [c["name"] for c in table["columns"]] == ["GA", "SFR-on", "MyAlgo", "RT"]
    assert [r["label"] for r in table["rows"]] == ["U-MIA", "Apollo (Off)", "aaa", "zzz"]
    assert {c["fpr_source"] for c in table["columns"]} == {"apollo-offline"}
    # Without Apollo: the lowest non-zero FPR of any result in the column.
    only = [_result("u-mia", "FT", [0.9, 0.8, 0.7, 0.6, 0.85, 0.1, 0.1, 0.1], labels=LABELS),
            _result("u-lira", "FT", [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.95])]
    (column,) = unlearning_table(only, n_bootstrap=0)["columns"]
    assert column["fpr"] == 0.25 and column["fpr_source"] == "any"


def test_rt_sanity_line() -> None:
    near = [_result("u-mia", "RT", [0.9, 0.6, 0.3, 0.1, 0.8, 0.5, 0.7, 0.05]),
            _result("u-lira", "RT", [0.9, 0.2, 0.2, 0.1, 0.95, 0.3, 0.2, 0.0])]
    line = rt_sanity(unlearning_table(near, n_bootstrap=20))
    assert "no attack measures leakage on it, as it should be" in line
    assert "U-MIA AUC 0.50" in line and "U-LiRA AUC 0.44 (25.0@25.0%)" in line
    far = [*near, _result("apollo", "RT", [5, 6, 7, 8, 1, 2, 3, 4])]
    line = rt_sanity(unlearning_table(far, n_bootstrap=20))
    assert "Apollo (low leakage) on a model that never saw the forgotten records" in line
    assert "below chance" not in line
    inverted = [*near, _result("apollo", "RT", [1, 2, 3, 4, 5, 6, 7, 8])]
    line = rt_sanity(unlearning_table(inverted, n_bootstrap=20))
    assert "Apollo below chance: an artefact of the audit" in line
    assert "on a model that never saw" not in line
    assert rt_sanity(unlearning_table(_tiny(), n_bootstrap=0)) is None


def test_heatmap_grids_refuse_malformed_input() -> None:
    assert heatmap_grids({}) is None
    assert heatmap_grids({"heatmap": {"radii": [1.0, 2.0], "tpr": [[0.1]]}}) is None
    grids = heatmap_grids({"heatmap": {"radii": [1, 2], "tpr": None,
                                       "fpr": [[0.0, 0.1], [0.1, 0.2]]}})
    assert set(grids) == {"radii", "fpr"}


def _audit(rng: np.random.Generator, n: int = 200) -> list[AttackResult]:
    """GA leaks to U-MIA; RT leaks to nobody; Apollo on GA kept its search trajectories."""
    labels = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]
    grid = np.add.outer(np.arange(5), np.arange(5)) / 10
    heatmap = {"radii": [1.0, 2.0, 3.0, 4.0, 5.0], "tpr": grid.tolist(),
               "fpr": (grid / 4).tolist()}
    results = []
    for algorithm in ("RT", "GA"):
        shift = 2.5 if algorithm == "GA" else 0.0
        umia = np.r_[rng.normal(shift, 1, n), rng.normal(0, 1, n)]
        # Label-only: minus the radius at which a record was flagged, -6 when never.
        flagged = rng.random(2 * n) < np.where(labels == 1, 0.05 + shift / 10, 0.05)
        apollo = np.where(flagged, -rng.integers(1, 6, 2 * n), -6)
        extra = {"queries_per_record": 123.4, "heatmap": heatmap} if algorithm == "GA" else {}
        results += [_result("u-mia", algorithm, umia, labels, dataset="cifar10"),
                    _result("u-lira", algorithm, rng.normal(0, 1, 2 * n), labels,
                            dataset="cifar10"),
                    _result("apollo", algorithm, apollo, labels, extra=extra,
                            dataset="cifar10")]
    return results


def test_page_shows_the_table_the_paper_and_the_heatmap(tmp_path) -> None:
    results = _audit(np.random.default_rng(1))
    table = unlearning_table(results, n_bootstrap=0)
    assert [c["name"] for c in table["columns"]] == ["GA", "RT"]
    ga = {row["attack"]: row["cells"][0] for row in table["rows"]}
    assert ga["u-mia"]["tpr"] > 0.3 > ga["u-lira"]["tpr"]
    html = build_report(results, tmp_path, n_bootstrap=20).read_text(encoding="utf-8")
    section = html[html.index('<section id="unlearning">'):]
    section = section[:section.index("</section>")]
    assert 'class="unlearning-table"' in section and 'class="unlearning-paper"' in section
    for attack, values in PAPER_CIFAR10.items():
        for tpr, fpr in values.values():
            assert f"{tpr:.1f}@{fpr:.1f}%" in section, attack
    assert ga["u-mia"]["text"] in section and ga["apollo"]["text"] in section
    assert "Label queries per record (123.4 for Apollo on GA) are the labels" in section
    assert "RT (exact retraining, the reference)" in section
    assert section.count('class="unlearning-heatmap"') == 1
    assert section.count('class="unlearning-roc"') == 1  # one panel per algorithm
    assert 'href="#unlearning"' in html
    images = re.findall(r'class="unlearning-heatmap" src="data:image/png;base64,', section)
    assert images


def test_no_section_without_unlearning_results(make_result) -> None:
    html = HtmlReport([make_result(seed=1, attack="u-mia", target="GA")],
                      n_bootstrap=0).render()
    assert 'id="unlearning"' not in html and "Apollo" not in html
