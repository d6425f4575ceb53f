"""bootstrap_cis: several metrics on the same bootstrap draws, one counting pass.

The reference is the slow, obviously-correct path: one ``bootstrap_ci`` call per metric
with the same seed. Every interval must be bit for bit the same.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privaudit.metrics._intervals as intervals
from privaudit.exceptions import DegenerateInputWarning
from privaudit.metrics import (
    Estimate,
    advantage,
    bootstrap_ci,
    bootstrap_cis,
    roc_auc,
    tpr_at_fpr,
)
from privaudit.results import AttackResult, fpr_key, slice_metrics

FPRS = (0.0, 0.001, 0.01, 0.1, 0.3)


def builtins() -> dict:
    metrics = {"auc": roc_auc, "advantage": advantage}
    metrics.update({f"tpr@{f}": functools.partial(tpr_at_fpr, fpr=f) for f in FPRS})
    return metrics


def mean_gap(labels, scores) -> float:
    """A metric bootstrap_ci does not know: it must take the loop path."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=float)
    if labels.min() == labels.max():
        return math.nan
    return float(scores[labels == 1].mean() - scores[labels == 0].mean())


def separately(metrics, labels, scores, **kwargs) -> dict[str, Estimate]:
    return {name: bootstrap_ci(m, labels, scores, **kwargs) for name, m in metrics.items()}


def assert_bitwise_equal(ours: dict, reference: dict) -> None:
    assert list(ours) == list(reference)
    for name in reference:
        a = np.array(tuple(ours[name]), dtype=np.float64)
        b = np.array(tuple(reference[name]), dtype=np.float64)
        # Same bits (NaN included), not just close.
        assert a.tobytes() == b.tobytes(), (name, ours[name], reference[name])


def tied_data(n: int, seed: int, *, decimals: int = 1, member_fraction: float = 0.5):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < member_fraction).astype(np.int8)
    labels[:2] = [0, 1]
    scores = np.round(rng.normal(size=n) + 0.8 * labels, decimals)
    return labels, scores


# ------------------------------------------------------------ equality with bootstrap_ci


@pytest.mark.parametrize("stratified", [True, False])
@pytest.mark.parametrize(("n", "seed", "decimals"),
                         [(7, 0, 0), (40, 1, 1), (300, 2, 1), (1000, 3, 2), (513, 4, 6)])
def test_equals_separate_bootstrap_ci_calls(n, seed, decimals, stratified):
    labels, scores = tied_data(n, seed, decimals=decimals)
    metrics = {**builtins(), "mean_gap": mean_gap}
    kwargs = {"n_resamples": 150, "confidence": 0.9, "random_state": seed,
              "stratified": stratified}
    with warnings.catch_warnings():
        # Small unstratified resamples can miss a class; both paths warn alike.
        warnings.simplefilter("ignore", DegenerateInputWarning)
        ours = bootstrap_cis(metrics, labels, scores, **kwargs)
        reference = separately(metrics, labels, scores, **kwargs)
    assert_bitwise_equal(ours, reference)
    assert ours["auc"].value == roc_auc(labels, scores)


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 1), st.integers(-3, 3)), min_size=2, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    n_resamples=st.integers(1, 40),
    confidence=st.floats(0.5, 0.99),
)
def test_property_equal_to_bootstrap_ci(data, seed, n_resamples, confidence):
    labels = np.array([d[0] for d in data] + [0, 1], dtype=np.int8)
    scores = np.array([d[1] for d in data] + [0, 0], dtype=np.float64)  # heavy ties
    metrics = builtins()
    kwargs = {"n_resamples": n_resamples, "confidence": confidence, "random_state": seed}
    assert_bitwise_equal(bootstrap_cis(metrics, labels, scores, **kwargs),
                         separately(metrics, labels, scores, **kwargs))


def test_equal_over_several_chunks(monkeypatch):
    # 64 indices per chunk: 200 records -> 1 resample per chunk, 50 records -> 1 as well,
    # so the draws are spread over many chunks in both paths.
    monkeypatch.setattr(intervals, "_CHUNK_ELEMENTS", 64)
    for n in (50, 200):
        labels, scores = tied_data(n, n)
        metrics = {**builtins(), "mean_gap": mean_gap}
        kwargs = {"n_resamples": 37, "random_state": 11}
        assert_bitwise_equal(bootstrap_cis(metrics, labels, scores, **kwargs),
                             separately(metrics, labels, scores, **kwargs))


def test_generator_random_state_is_used_once_for_all_metrics():
    labels, scores = tied_data(120, 5)
    metrics = builtins()
    ours_rng = np.random.default_rng(9)
    ours = bootstrap_cis(metrics, labels, scores, n_resamples=60, random_state=ours_rng)
    ref_rng = np.random.default_rng(9)
    first = bootstrap_ci(roc_auc, labels, scores, n_resamples=60, random_state=ref_rng)
    assert tuple(ours["auc"]) == tuple(first)
    # One set of draws, as a single bootstrap_ci call would consume.
    assert ours_rng.integers(2**62) == ref_rng.integers(2**62)
    # Every metric is on those draws: the same as bootstrap_ci with a fresh copy.
    for name, metric in metrics.items():
        again = bootstrap_ci(metric, labels, scores, n_resamples=60,
                             random_state=np.random.default_rng(9))
        assert tuple(ours[name]) == tuple(again)


def test_result_keeps_the_order_and_names_of_the_mapping():
    labels, scores = tied_data(80, 6)
    metrics = {"z": mean_gap, "a": roc_auc, "m": functools.partial(tpr_at_fpr, fpr=0.1)}
    out = bootstrap_cis(metrics, labels, scores, n_resamples=10, random_state=0)
    assert list(out) == ["z", "a", "m"]
    assert all(isinstance(e, Estimate) for e in out.values())


def test_pinned_small_case():
    # Members score 3, 2; non-members 2, 1. AUC = (1 + 1 + 0.5 + 1) / 4 = 0.875;
    # advantage: threshold 3 gives TPR - FPR = 0.5, threshold 2 gives 1 - 0.5 = 0.5.
    labels = np.array([1, 1, 0, 0])
    scores = np.array([3.0, 2.0, 2.0, 1.0])
    out = bootstrap_cis({"auc": roc_auc, "advantage": advantage}, labels, scores,
                        n_resamples=50, random_state=3)
    assert out["auc"].value == 0.875
    assert out["advantage"].value == 0.5
    assert 0.0 <= out["auc"].low <= out["auc"].high <= 1.0


# ------------------------------------------------------------------------ fallback


def test_unknown_callables_take_the_loop_on_the_same_draws():
    labels, scores = tied_data(90, 7)
    calls = {"n": 0}

    def counted(y, s):
        calls["n"] += 1
        return roc_auc(y, s)

    metrics = {
        "builtin": roc_auc,
        "wrapped": counted,  # same function behind a wrapper: not recognised
        "lambda": lambda y, s: advantage(y, s),
        # A partial of something other than tpr_at_fpr itself.
        "partial": functools.partial(lambda y, s, f: tpr_at_fpr(y, s, fpr=f), f=0.1),
    }
    out = bootstrap_cis(metrics, labels, scores, n_resamples=25, random_state=4)
    # Once on the full data, then once per resample.
    assert calls["n"] == 1 + 25
    # Loop and batched paths on the same draws give the same intervals.
    assert tuple(out["wrapped"]) == tuple(out["builtin"])
    reference = bootstrap_ci(advantage, labels, scores, n_resamples=25, random_state=4)
    assert tuple(out["lambda"]) == tuple(reference)
    reference = bootstrap_ci(functools.partial(tpr_at_fpr, fpr=0.1), labels, scores,
                             n_resamples=25, random_state=4)
    assert tuple(out["partial"]) == tuple(reference)


def test_only_unknown_callables():
    labels, scores = tied_data(60, 8)
    metrics = {"gap": mean_gap, "neg_gap": lambda y, s: -mean_gap(y, s)}
    out = bootstrap_cis(metrics, labels, scores, n_resamples=30, random_state=2)
    assert_bitwise_equal(out, separately(metrics, labels, scores, n_resamples=30,
                                         random_state=2))
    # Same draws: the quantiles mirror (up to the rounding of the interpolation).
    assert out["neg_gap"].low == pytest.approx(-out["gap"].high, rel=1e-12)


# ---------------------------------------------------------------- degenerate input


def test_one_class_is_nan_for_builtins_and_looped_for_others():
    labels = np.ones(30, dtype=np.int8)
    scores = np.linspace(0, 1, 30)
    metrics = {**builtins(), "mean": lambda y, s: float(np.mean(s))}
    with pytest.warns(DegenerateInputWarning):
        ours = bootstrap_cis(metrics, labels, scores, n_resamples=40, random_state=1)
    with pytest.warns(DegenerateInputWarning):
        reference = separately(metrics, labels, scores, n_resamples=40, random_state=1)
    assert_bitwise_equal(ours, reference)
    assert math.isnan(ours["auc"].value) and math.isnan(ours["auc"].low)
    assert math.isfinite(ours["mean"].low)


def test_metric_nan_on_every_resample_warns_and_names_it():
    labels = np.zeros(20, dtype=np.int8)
    scores = np.arange(20.0)
    with pytest.warns(DegenerateInputWarning, match="'gap' was NaN on all 15 resamples"):
        out = bootstrap_cis({"gap": mean_gap}, labels, scores, n_resamples=15,
                            random_state=0)
    assert math.isnan(out["gap"].low) and math.isnan(out["gap"].high)


def test_unstratified_nan_resamples_dropped_with_a_warning_naming_the_metric():
    labels = np.array([1] + [0] * 9, dtype=np.int8)
    scores = np.arange(10.0)
    kwargs = {"n_resamples": 100, "random_state": 0, "stratified": False}
    with pytest.warns(DegenerateInputWarning, match=r"'auc' was NaN on \d+ of 100"):
        ours = bootstrap_cis({"auc": roc_auc}, labels, scores, **kwargs)
    with pytest.warns(DegenerateInputWarning):
        reference = bootstrap_ci(roc_auc, labels, scores, **kwargs)
    assert tuple(ours["auc"]) == tuple(reference)


def test_zero_resamples_gives_values_without_intervals():
    labels, scores = tied_data(50, 9)
    metrics = {**builtins(), "gap": mean_gap}
    out = bootstrap_cis(metrics, labels, scores, n_resamples=0, random_state=0)
    assert_bitwise_equal(out, separately(metrics, labels, scores, n_resamples=0))
    assert out["gap"].value == mean_gap(labels, scores)
    assert all(math.isnan(e.low) and math.isnan(e.high) for e in out.values())


# ----------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("metrics", "error", "match"),
    [
        ([roc_auc], TypeError, r"'metrics' parameter of bootstrap_cis must be a mapping"),
        ({}, ValueError, r"'metrics' parameter of bootstrap_cis must be a non-empty"),
        ({1: roc_auc}, TypeError, r"'metrics' .* keyed by strings"),
        ({"auc": 0.5}, TypeError, r"'metrics' .* callables. Got <float under key 'auc'>"),
        ({"t": functools.partial(tpr_at_fpr, fpr=1.5)}, ValueError,
         r"'fpr' parameter of tpr_at_fpr"),
    ],
)
def test_bad_metrics(metrics, error, match):
    with pytest.raises(error, match=match):
        bootstrap_cis(metrics, [0, 1, 1], [0.1, 0.2, 0.3])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_resamples": -1}, ValueError, r"'n_resamples' parameter of bootstrap_cis"),
        ({"n_resamples": 2.5}, TypeError, r"'n_resamples' parameter of bootstrap_cis"),
        ({"confidence": 1.0}, ValueError, r"'confidence' parameter of bootstrap_cis"),
        ({"random_state": -3}, ValueError, r"'random_state' parameter of bootstrap_cis"),
    ],
)
def test_bad_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        bootstrap_cis({"auc": roc_auc}, [0, 1, 1], [0.1, 0.2, 0.3], **kwargs)


@pytest.mark.parametrize(
    ("labels", "scores", "match"),
    [
        ([0, 2, 1], [0.1, 0.2, 0.3], r"'labels' parameter of bootstrap_cis"),
        ([0, 1, 1], [0.1, np.nan, 0.3], r"'scores' parameter of bootstrap_cis"),
        ([0, 1, 1], [0.1, 0.2], r"'scores' parameter of bootstrap_cis"),
    ],
)
def test_bad_data(labels, scores, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_cis({"auc": roc_auc}, labels, scores)


# ------------------------------------------- the callers keep their numbers unchanged


def old_attack_result_metrics(result: AttackResult, fprs, n_bootstrap, random_state):
    """The path AttackResult.metrics took before: one bootstrap_ci call per metric."""
    seed = int(np.random.default_rng(random_state).integers(2**63 - 1))
    y, s = result.labels, result.scores

    def boot(metric):
        return tuple(bootstrap_ci(metric, y, s, n_resamples=n_bootstrap, random_state=seed))

    return {
        "auc": boot(roc_auc),
        "advantage": boot(advantage),
        # The metrics dict reads the randomised-threshold TPR (issue 20: ties).
        "tpr_at_fpr": {fpr_key(f): boot(functools.partial(tpr_at_fpr, fpr=f, randomized=True))
                       for f in fprs},
    }


def as_tuple(d: dict) -> tuple:
    return (d["value"], d["low"], d["high"])


def test_attack_result_metrics_equal_the_per_metric_path():
    labels, scores = tied_data(400, 10, decimals=2)
    result = AttackResult(labels=labels, scores=scores, attack="a", target="t")
    new = result.metrics(fprs=FPRS, n_bootstrap=80, random_state=21)
    old = old_attack_result_metrics(result, FPRS, 80, 21)
    assert as_tuple(new["auc"]) == old["auc"]
    assert as_tuple(new["advantage"]) == old["advantage"]
    assert {k: as_tuple(v) for k, v in new["tpr_at_fpr"].items()} == old["tpr_at_fpr"]


def test_slice_metrics_entire_row_equals_the_per_metric_path():
    labels, scores = tied_data(300, 12, decimals=2)
    result = AttackResult(labels=labels, scores=scores, attack="a", target="t")
    frame = slice_metrics(result, fprs=(0.01, 0.1), n_bootstrap=60, random_state=5)
    seed = int(np.random.default_rng(5).integers(2**63 - 1))
    row = frame.iloc[0]
    assert row["slice_type"] == "entire"
    for name, metric in [("auc", roc_auc), ("advantage", advantage),
                         ("tpr_at_fpr_0.1",
                          functools.partial(tpr_at_fpr, fpr=0.1, randomized=True))]:
        est = bootstrap_ci(metric, labels, scores, n_resamples=60, random_state=seed)
        assert (row[name], row[f"{name}_low"], row[f"{name}_high"]) == tuple(est)


def test_attack_result_prediction_metrics_equal_the_per_metric_path():
    from privaudit.results._metric_policy import _MiaAdvantage, _PrivacyGain

    labels, scores = tied_data(200, 13, decimals=2)
    predictions = (scores > 0.4).astype(np.int8)
    result = AttackResult(labels=labels, scores=scores, predictions=predictions,
                          raw_advantage=0.8)
    new = result.metrics(fprs=(0.1,), n_bootstrap=40, random_state=3)
    seed = int(np.random.default_rng(3).integers(2**63 - 1))
    for name, metric in [("mia_advantage", _MiaAdvantage()),
                         ("privacy_gain", _PrivacyGain(0.8))]:
        est = bootstrap_ci(metric, labels, predictions, n_resamples=40, random_state=seed)
        assert as_tuple(new[name]) == tuple(est)
