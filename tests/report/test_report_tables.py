from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from privaudit.report import (
    AIAttackReport,
    BinaryLabelAttackReport,
    MIAttackReport,
    ROCReport,
)
from privaudit.results import AttackResult, file_name_part

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def grid(make_result):
    """2 datasets x 2 targets x 2 attacks, one generator: a TAPAS-like grid."""
    results = []
    seed = 0
    for dataset in ("loans", "census"):
        for target, leak in (("overfit", 1.2), ("regularised", 0.2)):
            for attack, boost in (("loss", 0.0), ("lira", 0.4)):
                seed += 1
                results.append(make_result(120, 120, leak + boost, seed=seed,
                                           dataset=dataset, target=target, attack=attack,
                                           generator="none"))
    return results


def test_metrics_frame_is_the_results_metrics(grid) -> None:
    report = MIAttackReport(grid, n_bootstrap=30, random_state=1)
    frame = report.metrics_frame()
    assert list(frame.columns[:7]) == ["dataset", "target", "generator", "attack", "kind",
                                       "n_members", "n_non_members"]
    assert len(frame) == len(grid)
    expected_metrics = ["auc", "advantage", "tpr_at_fpr_0.0", "tpr_at_fpr_0.001",
                        "tpr_at_fpr_0.01", "tpr_at_fpr_0.1", "effective_epsilon"]
    for name in expected_metrics:
        assert {name, f"{name}_low", f"{name}_high"} <= set(frame.columns)
    assert "accuracy" not in frame.columns  # no result has predictions
    # Reference: the same numbers straight from each result, row by row.
    for row, result in zip(frame.to_dict("records"), grid, strict=True):
        m = result.metrics(n_bootstrap=30, random_state=1)
        assert (row["dataset"], row["target"], row["attack"]) == (
            result.dataset, result.target, result.attack)
        assert row["auc"] == m["auc"]["value"]
        assert row["auc_low"] == m["auc"]["low"]
        assert row["tpr_at_fpr_0.01_high"] == m["tpr_at_fpr"]["0.01"]["high"]
        assert row["better_than_random"] == m["better_than_random"]


def test_metric_selection(grid, make_result) -> None:
    frame = BinaryLabelAttackReport(grid, metrics=["auc", "tpr_at_fpr_0.01"]).metrics_frame()
    metric_columns = [c for c in frame.columns if c.startswith(("auc", "tpr"))]
    assert metric_columns == ["auc", "auc_low", "auc_high", "tpr_at_fpr_0.01",
                              "tpr_at_fpr_0.01_low", "tpr_at_fpr_0.01_high"]
    with pytest.raises(ValueError, match="The 'metrics' parameter of BinaryLabelAttackReport"):
        BinaryLabelAttackReport(grid, metrics=["auroc"])
    # prediction metrics appear, NaN for results without predictions
    mixed = [make_result(predictions=True), make_result(seed=9)]
    frame = BinaryLabelAttackReport(mixed).metrics_frame()
    assert not math.isnan(frame.loc[0, "accuracy"]) and math.isnan(frame.loc[1, "accuracy"])
    assert frame["better_than_random"].isna().all()  # n_bootstrap=0 by default, as TAPAS


def test_kind_checks_and_attribute_column(make_result) -> None:
    member = make_result()
    attribute = make_result(kind="attribute", parameters={"sensitive_attribute": "race"},
                            attack="aia")
    with pytest.raises(ValueError, match="results of kind 'membership'"):
        MIAttackReport([member, attribute])
    with pytest.raises(ValueError, match="results of kind 'attribute'"):
        AIAttackReport([member])
    frame = AIAttackReport([attribute]).metrics_frame()
    assert frame.loc[0, "sensitive_attribute"] == "race"
    assert "sensitive_attribute" not in MIAttackReport([member]).metrics_frame().columns
    with pytest.raises(ValueError, match="non-empty"):
        MIAttackReport([])
    with pytest.raises(TypeError, match="a sequence of AttackResult"):
        MIAttackReport([member, "not a result"])


def test_compare_writes_one_plot_per_fixed_pair(grid, tmp_path) -> None:
    report = MIAttackReport(grid, n_bootstrap=20)
    paths = report.compare(["dataset", "generator"], "attack", tmp_path)
    assert sorted(p.name for p in paths) == [
        f"compare_attack__dataset-{file_name_part('census')}__generator-"
        f"{file_name_part('none')}.png",
        f"compare_attack__dataset-{file_name_part('loans')}__generator-"
        f"{file_name_part('none')}.png",
    ]
    for path in paths:
        assert path.read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(ValueError, match="The 'fixed_pair_columns' parameter"):
        report.compare(["dataset", "dataset"], "attack", tmp_path)
    with pytest.raises(ValueError, match="The 'comparison_column' parameter"):
        report.compare(["dataset", "generator"], "generator", tmp_path)


def test_publish_skips_single_valued_dimensions(grid, tmp_path) -> None:
    written = MIAttackReport(grid, metrics=["auc", "advantage"]).publish(tmp_path)
    names = [p.name for p in written]
    assert names[0] == "metrics.csv"
    # generator has one value: no generator comparison; 2 x 1 pairs for the others
    assert sum(n.startswith("compare_attack__") for n in names) == 2
    assert sum(n.startswith("compare_dataset__") for n in names) == 2
    assert sum(n.startswith("compare_target__") for n in names) == 2
    assert not any(n.startswith("compare_generator__") for n in names)
    frame = pd.read_csv(tmp_path / "metrics.csv")
    assert len(frame) == len(grid)
    np.testing.assert_allclose(frame["auc"], MIAttackReport(grid).metrics_frame()["auc"])


def test_roc_report_writes_a_png(grid, tmp_path) -> None:
    path = ROCReport(grid[:3], title="ROC").publish(tmp_path)
    assert path.name == "roc_curves.png"
    assert path.read_bytes().startswith(PNG_MAGIC)
    fig = ROCReport(grid[:3]).figure()
    lin, log = fig.axes[:2]
    assert lin.get_xscale() == "linear" and log.get_xscale() == "log"
    # log-log axes start at 1/n (n = 120 records per class): nothing below is measurable
    assert log.get_xlim()[0] == pytest.approx(1 / 120)
    assert log.get_ylim()[0] == pytest.approx(1 / 120)
    for line in log.get_lines():
        assert np.min(line.get_xdata()) >= 1 / 120 - 1e-15


def test_importing_reports_does_not_import_plotting() -> None:
    code = ("import sys, privaudit.report, privaudit.results; "
            "print(','.join(m for m in ('matplotlib', 'jinja2', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""


def test_histograms_switch_to_symlog_for_heavy_tails(make_result) -> None:
    from privaudit.report._plots import histogram_figure

    normal = make_result(200, 200, 1.0)
    assert histogram_figure(normal).axes[0].get_xscale() == "linear"
    # minus a loss: members near 0, non-members spread over decades below
    rng = np.random.default_rng(0)
    loss = np.r_[rng.lognormal(-7, 1, 200), rng.lognormal(1, 1.5, 200)]
    heavy = AttackResult(labels=np.r_[np.ones(200), np.zeros(200)], scores=-loss)
    ax = histogram_figure(heavy).axes[0]
    assert ax.get_xscale() == "symlog"
    # both classes are drawn as shares of their records: each histogram sums to one
    heights = [sum(p.get_height() for p in c.patches) for c in ax.containers]
    assert heights == pytest.approx([1.0, 1.0])
