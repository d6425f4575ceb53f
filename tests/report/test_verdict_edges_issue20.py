"""Edges of the verdict rule found while wiring issue 20's classes together."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.report._verdict import attack_verdict
from privaudit.results import AttackResult, fpr_key, slice_metrics


def _metrics(auc: float) -> dict:
    nan = math.nan
    return {"auc": {"value": auc, "low": nan, "high": nan},
            "tpr_at_fpr": {"0.01": {"value": 0.0, "low": nan, "high": nan}},
            "n_members": 8, "n_non_members": 8}


@pytest.mark.parametrize("auc", [0.5, 0.52, 0.58])
def test_a_weak_auc_without_an_interval_raises_nothing(auc):
    # n_bootstrap=0: no interval says the AUC is above chance, so a "weak" band (which
    # contains 0.5) cannot lift a verdict that has no low-FPR evidence.
    assert attack_verdict("a", _metrics(auc)).severity == "minimal"


@pytest.mark.parametrize(("auc", "severity"), [(0.65, "low"), (0.95, "low")])
def test_a_stronger_auc_without_an_interval_still_raises_one_level(auc, severity):
    assert attack_verdict("a", _metrics(auc)).severity == severity


def test_the_entire_slice_reads_the_same_tpr_as_the_result_under_ties():
    # A tie block straddling 1% FPR: members and non-members share the top score.
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(300, int), np.zeros(300, int)]
    scores = np.r_[np.ones(300), np.where(rng.random(300) < 0.012, 1.0, rng.random(300) * .5)]
    result = AttackResult(labels=labels, scores=scores, attack="colluding", target="t")
    whole = result.metrics(fprs=(0.01,), n_bootstrap=50, random_state=0)
    frame = slice_metrics(result, fprs=(0.01,), n_bootstrap=50, random_state=0)
    entire = frame[frame["slice_type"] == "entire"].iloc[0]
    column = f"tpr_at_fpr_{fpr_key(0.01)}"
    assert entire[column] == pytest.approx(whole["tpr_at_fpr"][fpr_key(0.01)]["value"])
    assert 0 < entire[column] < 1  # the randomised threshold, not all-or-nothing
