"""ProximityResult: per-row closeness with a holdout baseline, its intervals and its files."""

import json
import math

import numpy as np
import pytest
from scipy.stats import binom

from privaudit.metrics import wilson_interval
from privaudit.results import (
    AttackResult,
    AuditInfo,
    DamagedResultWarning,
    ProximityResult,
    ResultFileError,
    ResultsStore,
    RiskResult,
    UnsealedResultWarning,
    load_all_results,
    load_result,
    quantile_interval,
)


def test_quantile_interval_by_hand():
    x = np.arange(1.0, 11.0)  # 1..10
    est = quantile_interval(x[::-1], 0.5, 0.95)
    # Binomial(10, 0.5): ppf(0.025) = 2 and ppf(0.975) = 8 -> ranks 2 and 9.
    assert binom.ppf(0.025, 10, 0.5) == 2 and binom.ppf(0.975, 10, 0.5) == 8
    assert est == (5.5, 2.0, 9.0)


def test_quantile_interval_covers_the_true_quantile():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        est = quantile_interval(rng.random(300), 0.05)
        hits += est.low <= 0.05 <= est.high
    assert hits / 400 >= 0.93  # distribution-free, at least about 95%


def test_quantile_interval_of_nothing_is_nan():
    assert all(math.isnan(v) for v in quantile_interval(np.array([]), 0.05))


def test_distance_check_passes_only_when_no_closer_than_the_holdout():
    holdout = np.linspace(0.1, 1.0, 100)
    far = ProximityResult("dcr", "quantile", synthetic=holdout + 0.5, baseline=holdout)
    close = ProximityResult("dcr", "quantile", synthetic=holdout / 4, baseline=holdout)
    assert far.passed is True and close.passed is False
    assert far.value().value == pytest.approx(np.quantile(holdout + 0.5, 0.05))
    assert ProximityResult("dcr", "quantile", synthetic=holdout).passed is None


@pytest.mark.parametrize(("synthetic", "baseline"), [
    (np.r_[np.ones(23), np.zeros(57)], np.zeros(1)),  # issue 19: a one-row holdout
    (np.linspace(0.1, 1.0, 100) * 0.98, np.linspace(0.1, 1.0, 100))])
def test_overlapping_intervals_are_undecided_whatever_the_point_estimates(synthetic, baseline):
    statistic = "share" if set(np.unique(synthetic)) <= {0.0, 1.0} else "quantile"
    result = ProximityResult("m", statistic, synthetic=synthetic, baseline=baseline,
                             higher_is_safer=statistic == "quantile")
    ours, base = result.value(), result.baseline_value()
    assert ours.value != base.value and ours.low <= base.high and base.low <= ours.high
    assert result.passed is None and result.verdict == "overlap"
    assert result.to_dict()["verdict"] == "overlap"


def test_share_check_uses_wilson_intervals_and_lower_is_safer():
    copies = np.r_[np.ones(30), np.zeros(70)]
    unseen = np.r_[np.ones(2), np.zeros(98)]
    result = ProximityResult("exact_matches", "share", synthetic=copies, baseline=unseen,
                             higher_is_safer=False)
    interval = wilson_interval(30, 100, 0.95)
    assert result.value() == (0.3, interval.low, interval.high)
    assert result.baseline_value().value == 0.02 and result.passed is False


def test_round_trip_keeps_arrays_audit_and_provenance(tmp_path):
    result = ProximityResult("nndr", "quantile", synthetic=[0.2, 0.5, np.nan, 0.9],
                             baseline=[0.3, 0.7], target="ctgan", dataset="TV16",
                             parameters={"columns": ["a"]}, extra={"note": math.inf},
                             audit=AuditInfo(kind="synthetic", key="k1"))
    result.save(tmp_path / "r")
    back = load_result(tmp_path / "r")
    assert isinstance(back, ProximityResult)
    np.testing.assert_array_equal(back.synthetic, result.synthetic)
    np.testing.assert_array_equal(back.baseline, result.baseline)
    assert back.audit.key == "k1" and back.extra == {"note": math.inf}
    assert back.to_dict() == result.to_dict()


def test_edited_arrays_are_refused(tmp_path):
    ProximityResult("dcr", "quantile", synthetic=[0.1, 0.2], baseline=[0.3]).save(tmp_path)
    with open(tmp_path / "proximity.npz", "wb") as fh:
        np.savez(fh, synthetic=np.array([0.9, 0.9]), baseline=np.array([0.3]))
    with pytest.raises(ResultFileError, match=r"modified after it was written: proximity\.npz"):
        ProximityResult.load(tmp_path)


def test_a_pickled_array_file_is_refused(tmp_path):
    ProximityResult("dcr", "quantile", synthetic=[0.1]).save(tmp_path)
    with open(tmp_path / "proximity.npz", "wb") as fh:
        np.savez(fh, synthetic=np.array([object()], dtype=object))
    with pytest.raises(ResultFileError):
        ProximityResult.load(tmp_path)


def test_a_tampered_json_is_refused(tmp_path):
    ProximityResult("dcr", "quantile", synthetic=[0.1]).save(tmp_path)
    doc = json.loads((tmp_path / "proximity.json").read_text())
    doc["statistic"] = "median"
    (tmp_path / "proximity.json").write_text(json.dumps(doc))
    with pytest.raises(ResultFileError, match=r"modified after it was written: proximity\.json"):
        ProximityResult.load(tmp_path)
    del doc["integrity"]  # as written before digests: the value itself is refused
    (tmp_path / "proximity.json").write_text(json.dumps(doc))
    with pytest.warns(UnsealedResultWarning, match="no digest"), pytest.raises(
            ResultFileError, match="statistic"):
        ProximityResult.load(tmp_path)


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"statistic": "mean"}, "statistic"),
    ({"synthetic": [-1.0]}, "synthetic"),
    ({"synthetic": [math.inf]}, "synthetic"),
    ({"quantile": 1.5}, "quantile"),
    ({"higher_is_safer": 1}, "higher_is_safer"),
])
def test_bad_fields_name_the_parameter(kwargs, param):
    args = {"metric": "dcr", "statistic": "quantile", "synthetic": [0.1], **kwargs}
    with pytest.raises((TypeError, ValueError), match=f"'{param}'"):
        ProximityResult(**args)


def test_store_holds_every_kind_and_replaces_a_stale_one(tmp_path):
    store = ResultsStore(tmp_path)
    attack = AttackResult(labels=np.array([1, 0]), scores=np.array([0.9, 0.1]),
                          attack="distinguish", target="syn")
    risk = RiskResult(n_attacks=10, n_success=6, n_baseline=1, attack="linkability",
                      target="syn")
    near = ProximityResult("dcr", "quantile", synthetic=[0.1, 0.2], target="syn")
    for result in (attack, risk, near):
        store.save(result)
    assert sorted(type(r).__name__ for r in store) == [
        "AttackResult", "ProximityResult", "RiskResult"]
    assert store.paths() == sorted(store.paths())
    assert isinstance(store.load("syn", "linkability"), RiskResult)
    # The same name saved as another kind: the old file goes.
    store.save(ProximityResult("dcr", "quantile", synthetic=[0.5], target="syn"),
               attack="linkability")
    assert isinstance(store.load("syn", "linkability"), ProximityResult)
    assert len(load_all_results(tmp_path)) == 3


def test_load_all_results_skips_a_damaged_one(tmp_path):
    ProximityResult("dcr", "quantile", synthetic=[0.1], target="a").save(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "risk.json").write_text("{not json")
    with pytest.warns(DamagedResultWarning, match="b"):
        results = load_all_results(tmp_path)
    assert [r.target for r in results] == ["a"]
    with pytest.raises(ResultFileError):
        load_all_results(tmp_path, strict=True)
    with pytest.raises(FileNotFoundError):
        load_all_results(tmp_path / "a" / "nothing-here")


def test_risk_result_keeps_its_audit_info(tmp_path):
    risk = RiskResult(n_attacks=10, n_success=6, n_baseline=1, n_control=2,
                      audit=AuditInfo(kind="synthetic", key="abc"))
    risk.audit.role = "baseline"  # mutable although the result is frozen
    risk.save(tmp_path)
    back = RiskResult.load(tmp_path)
    assert back.audit == AuditInfo(kind="synthetic", key="abc", role="baseline")


def test_a_quantile_of_too_few_rows_has_unbounded_ends_and_decides_nothing():
    one = quantile_interval(np.array([0.061]), 0.05)
    assert one.value == pytest.approx(0.061) and one.low == -math.inf and one.high == math.inf
    result = ProximityResult("dcr", "quantile", synthetic=np.zeros(80), baseline=[0.061])
    assert result.passed is None and result.verdict == "overlap"
    assert quantile_interval(np.linspace(0, 1, 100), 0.05).low == 0.0  # 100 rows: bounded
