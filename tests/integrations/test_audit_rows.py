"""One reading of an audit for every integration (privaudit.integrations.read_audit).

A report folder is read from its files and must give the numbers the same results give in
memory (the same table, the same verdict); each flat metric must be the result's own
estimate (the reference: ``AttackResult.metrics``, read by hand); bad input is one error
naming the parameter.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from integration_data import N_BOOTSTRAP, same_number

from privaudit.integrations import read_audit, tracking_items
from privaudit.integrations._audit_rows import row_metrics
from privaudit.report import AuditReport
from privaudit.results import AttackResult


def _same_metrics(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(same_number(a[k], b[k]) for k in a)


def test_a_report_folder_reads_as_its_results_in_memory(report_dir, results):
    """Files (metrics.csv, results.json, result folders) and memory: one table, one verdict."""
    from_files = read_audit(report_dir)
    in_memory = read_audit(AuditReport(results), n_bootstrap=N_BOOTSTRAP)
    as_list = read_audit(results, n_bootstrap=N_BOOTSTRAP)
    assert len(from_files.results) == len(in_memory.results) == len(results)
    for a, b, c in zip(from_files.results, in_memory.results, as_list.results, strict=True):
        assert (a.target, a.attack, a.kind) == (b.target, b.attack, b.kind)
        assert _same_metrics(a.metrics, b.metrics) and _same_metrics(b.metrics, c.metrics)
        assert a.reference_models == b.reference_models
    assert from_files.verdict == in_memory.verdict is not None
    assert from_files.overview == in_memory.overview
    assert from_files.title == "toy <audit>" and from_files.html == report_dir / "index.html"
    assert from_files.settings["n_bootstrap"] == in_memory.settings["n_bootstrap"]


def test_a_folder_of_saved_results_reads_as_a_report(tmp_path, results):
    """Saved results without a report: loaded, then read with the settings given."""
    AuditReport(results).save(tmp_path / "saved")
    from_folder = read_audit(tmp_path / "saved", n_bootstrap=N_BOOTSTRAP)
    in_memory = read_audit(results, n_bootstrap=N_BOOTSTRAP)

    def ordered(summary):  # a folder is read in the order of its paths
        return sorted(summary.results, key=lambda r: (r.target, r.attack, repr(r.metrics)))

    assert all((a.target, a.attack) == (b.target, b.attack) and _same_metrics(a.metrics,
                                                                              b.metrics)
               for a, b in zip(ordered(from_folder), ordered(in_memory), strict=True))
    assert from_folder.verdict == in_memory.verdict and from_folder.html is None


def test_flat_metrics_are_the_results_own_estimates(results):
    """Reference: each attack result's nested ``metrics()`` read by hand."""
    summary = read_audit(results, n_bootstrap=N_BOOTSTRAP)
    attacks = [(r, s) for r, s in zip(results, summary.results, strict=True)
               if isinstance(r, AttackResult)]
    assert len(attacks) == 3
    for result, flat in attacks:
        nested = result.metrics(n_bootstrap=N_BOOTSTRAP, random_state=0)
        for name in ("auc", "advantage"):
            for end, key in (("value", name), ("low", f"{name}_low"),
                             ("high", f"{name}_high")):
                assert same_number(flat.metrics[key], nested[name][end])
        # the report's table leaves out the rates its non-members cannot resolve
        smallest = flat.metrics["smallest_resolvable_fpr"]
        for fpr, estimate in nested["tpr_at_fpr"].items():
            key = f"tpr_at_fpr_{fpr}"
            assert (key in flat.metrics) == (float(fpr) >= smallest or float(fpr) == 0)
            if key in flat.metrics:
                assert same_number(flat.metrics[key], estimate["value"])
    assert [s.reference_models for s in summary.results] == [None, None, 4, None, None]
    assert summary.results[0].parameters == {"threshold": None, "tag": "a|b"}


@pytest.mark.parametrize(("row", "kept"), [
    # another kind's empty column is dropped; the header is no metric
    ({"target": "t", "auc": 0.7, "auc_low": 0.6, "auc_high": 0.8, "risk": math.nan,
      "risk_low": math.nan, "risk_high": math.nan}, {"auc", "auc_low", "auc_high"}),
    # an infinite value with an undefined interval keeps its NaN bounds
    ({"effective_epsilon": math.inf, "effective_epsilon_low": math.nan,
      "effective_epsilon_high": math.nan},
     {"effective_epsilon", "effective_epsilon_low", "effective_epsilon_high"}),
    # an undefined value with a defined bound is kept; text and booleans are not numbers
    ({"auc": math.nan, "auc_low": 0.1, "note": "x", "better_than_random": True,
      "n_members": 5}, {"auc", "auc_low", "n_members"}),
])
def test_row_metrics_drops_only_other_kinds_empty_cells(row, kept):
    assert set(row_metrics(row)) == kept


def test_bad_input_is_one_error_naming_it(tmp_path, report_dir):
    with pytest.raises(TypeError, match="'report' parameter of read_audit"):
        read_audit(42)
    with pytest.raises(TypeError, match="'report' parameter of read_audit"):
        read_audit({"auc": 0.5})
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_audit(tmp_path / "missing")
    # a report whose metrics.csv lost rows: its files disagree, said before anything is read
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for name in ("results.json", "report.json"):
        (damaged / name).write_bytes((report_dir / name).read_bytes())
    pd.read_csv(report_dir / "metrics.csv").head(1).to_csv(damaged / "metrics.csv",
                                                          index=False)
    with pytest.raises(ValueError, match=r"'report' parameter of read_audit.*1 rows for 3"):
        read_audit(damaged)


def test_a_summary_read_once_is_logged_as_it_is(report_dir):
    """What read_audit returned goes to every tracker without reading the audit again."""
    summary = read_audit(report_dir)
    assert read_audit(summary) is summary
    with pytest.raises(TypeError, match=r"'settings' parameter of read_audit.*n_bootstrap"):
        read_audit(summary, n_bootstrap=10)


def test_a_report_folder_is_read_with_its_own_settings(report_dir):
    """Its numbers were computed with its results.json's settings: those are logged."""
    summary = read_audit(report_dir)
    assert summary.settings["n_bootstrap"] == N_BOOTSTRAP
    assert tracking_items(summary).params["privaudit.n_bootstrap"] == str(N_BOOTSTRAP)
    # the same settings given again are the folder's own: accepted
    same = read_audit(report_dir, n_bootstrap=N_BOOTSTRAP, confidence=0.95,
                      fprs=tuple(summary.settings["fprs"]))
    assert same.settings["n_bootstrap"] == N_BOOTSTRAP
    for setting in ({"n_bootstrap": 1000}, {"confidence": 0.9}, {"fprs": [0.01]}):
        (name,) = setting
        with pytest.raises(ValueError, match=rf"'{name}' parameter of read_audit must be "
                                             r"the report folder's own"):
            read_audit(report_dir, **setting)


def test_a_report_folder_without_settings_reads_the_defaults(tmp_path, report_dir):
    """A results.json with no settings: those given, else build_report's (1000 resamples)."""
    import json
    import shutil

    bare = Path(shutil.copytree(report_dir, tmp_path / "bare"))
    doc = json.loads((bare / "results.json").read_text())
    del doc["settings"]
    (bare / "results.json").write_text(json.dumps(doc))
    assert read_audit(bare).settings["n_bootstrap"] == 1000
    assert read_audit(bare, n_bootstrap=7).settings["n_bootstrap"] == 7


def test_a_generator_seed_gives_one_reading(results):
    """Table, verdict and page are one bootstrap: the Generator is drawn from once."""
    import numpy as np

    summary = read_audit(results, n_bootstrap=N_BOOTSTRAP,
                         random_state=np.random.default_rng(3))
    frame = summary.page.metrics_frame()
    assert [same_number(a, r.metrics["auc_low"]) for a, r in
            zip(frame["auc_low"], summary.results, strict=False)] == [True] * len(frame)
