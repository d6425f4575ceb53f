from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import privaudit.metrics as pm
from privaudit.exceptions import DegenerateInputWarning
from privaudit.report import EffectiveEpsilonReport, effective_epsilon_by_target
from privaudit.results import AttackResult


def _attacks_on_shared_records(n: int = 1500, seed: int = 0) -> list[AttackResult]:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]
    ids = np.array([f"rec{i}" for i in range(2 * n)], dtype=object)
    weak = np.r_[rng.normal(0.3, 1, n), rng.normal(0, 1, n)]
    strong = np.r_[rng.normal(2.0, 1, n), rng.normal(0, 1, n)]
    return [
        AttackResult(labels, weak, record_ids=ids, attack="weak", target="m"),
        AttackResult(labels, strong, record_ids=ids, attack="strong", target="m"),
    ]


def test_validation_selection_is_the_metric_on_the_mapping_of_scores() -> None:
    results = _attacks_on_shared_records()
    report = EffectiveEpsilonReport(results, validation_split=0.2,
                                    confidence_levels=(0.9, 0.99), random_state=3,
                                    selection="validation")
    frame = report.compute()
    assert list(frame.columns) == ["confidence", "epsilon_low", "epsilon_high", "attack",
                                   "threshold", "n_validation", "n_test"]
    expected = pm.effective_epsilon_lower_bound(
        results[0].labels, {"weak": results[0].scores, "strong": results[1].scores},
        validation_split=0.2, confidence_levels=(0.9, 0.99), random_state=3,
    )
    assert frame.to_dict("records") == [b._asdict() for b in expected]
    # qualitative: the strong attack is selected and the bound is clearly above zero,
    # and a higher confidence gives a lower (more conservative) bound
    assert set(frame["attack"]) == {"strong"}
    assert frame.loc[0, "epsilon_low"] > 1.0
    assert frame.loc[1, "epsilon_low"] < frame.loc[0, "epsilon_low"]


def test_bonferroni_selection_is_the_largest_bound_at_the_corrected_level() -> None:
    # The default: every attack bounded at 1 - (1 - gamma) / m, the largest reported with
    # the attack that reached it (no attack chosen on the validation part).
    results = _attacks_on_shared_records()
    frame = EffectiveEpsilonReport(results, validation_split=0.2,
                                   confidence_levels=(0.9, 0.99), random_state=3).compute()
    for row, gamma in zip(frame.to_dict("records"), (0.9, 0.99), strict=True):
        alone = {r.attack: pm.effective_epsilon_lower_bound(
            r.labels, {r.attack: r.scores}, validation_split=0.2,
            confidence_levels=(1 - (1 - gamma) / 2,), random_state=3)[0] for r in results}
        best = max(alone.values(), key=lambda b: b.epsilon_low)
        assert row == best._replace(confidence=gamma)._asdict()
    assert set(frame["attack"]) == {"strong"} and frame.loc[0, "epsilon_low"] > 1.0


def test_a_lucky_pick_on_a_small_validation_part_no_longer_hides_a_refutation() -> None:
    # Issue 19: 20 validation records picked one attack (bound 0.00) beside another whose
    # own bound is large. With Bonferroni the headline is never below any single attack's
    # bound at the corrected level, however the validation part falls.
    rng = np.random.default_rng(0)
    n = 100
    labels = np.r_[np.ones(n), np.zeros(n)].astype(int)
    ids = np.arange(2 * n)
    leaky = labels + rng.normal(0, 0.3, 2 * n)
    noise = [rng.normal(0, 1, 2 * n) for _ in range(5)]
    results = [AttackResult(labels, leaky, record_ids=ids, attack="leaky", target="m")] + [
        AttackResult(labels, x, record_ids=ids, attack=f"noise-{i}", target="m")
        for i, x in enumerate(noise)]
    for seed in range(10):
        frame = EffectiveEpsilonReport(results, confidence_levels=(0.95,),
                                       random_state=seed).compute()
        alone = pm.effective_epsilon_lower_bound(
            labels, {"leaky": leaky}, confidence_levels=(1 - 0.05 / 6,),
            random_state=seed)[0]
        assert frame.loc[0, "epsilon_low"] >= alone.epsilon_low > 1.0
        assert frame.loc[0, "attack"] == "leaky"


def test_selection_is_checked() -> None:
    with pytest.raises(ValueError, match="'selection' parameter of EffectiveEpsilonReport"):
        EffectiveEpsilonReport(_attacks_on_shared_records(), selection="best")


def test_results_in_another_order_are_aligned_by_record_id() -> None:
    results = _attacks_on_shared_records(n=400)
    perm = np.random.default_rng(1).permutation(800)
    shuffled = AttackResult(results[1].labels[perm], results[1].scores[perm],
                            record_ids=results[1].record_ids[perm], attack="strong")
    labels, scores = EffectiveEpsilonReport([results[0], shuffled]).aligned_scores()
    np.testing.assert_array_equal(labels, results[0].labels)
    # Reference: a plain loop matching each id.
    position = {rid: i for i, rid in enumerate(shuffled.record_ids)}
    expected = [shuffled.scores[position[rid]] for rid in results[0].record_ids]
    np.testing.assert_array_equal(scores["strong"], expected)
    a = EffectiveEpsilonReport([results[0], shuffled], random_state=0).compute()
    b = EffectiveEpsilonReport(results, random_state=0).compute()
    pd.testing.assert_frame_equal(a, b)


def test_mismatched_labels_are_refused() -> None:
    a, b = _attacks_on_shared_records(n=50)
    flipped = AttackResult(1 - b.labels, b.scores, record_ids=b.record_ids, attack="x")
    with pytest.raises(ValueError, match=r"labels agree record by record.*disagree on 100"):
        EffectiveEpsilonReport([a, flipped]).compute()


def test_mismatched_records_are_refused() -> None:
    a, b = _attacks_on_shared_records(n=50)
    shorter = AttackResult(b.labels[:-1], b.scores[:-1], record_ids=b.record_ids[:-1])
    with pytest.raises(ValueError, match=r"same records.*99 records"):
        EffectiveEpsilonReport([a, shorter]).compute()
    other_ids = AttackResult(b.labels, b.scores, attack="x")  # ids 0..n-1, not "rec.."
    with pytest.raises(ValueError, match="record ids of x"):
        EffectiveEpsilonReport([a, other_ids]).compute()


def test_duplicate_attack_names_are_made_unique() -> None:
    a, b = _attacks_on_shared_records(n=30)
    twin = AttackResult(b.labels, b.scores, record_ids=b.record_ids, attack="weak",
                        target="m")
    _, scores = EffectiveEpsilonReport([a, twin]).aligned_scores()
    assert list(scores) == ["weak on m", "weak on m__2"]


def test_publish_writes_the_csv(tmp_path) -> None:
    frame = EffectiveEpsilonReport(_attacks_on_shared_records(n=200)).publish(tmp_path)
    on_disk = pd.read_csv(tmp_path / "effective_epsilon.csv")
    assert len(on_disk) == len(frame) == 3
    np.testing.assert_allclose(on_disk["epsilon_low"], frame["epsilon_low"])


def test_parameter_validation() -> None:
    results = _attacks_on_shared_records(n=20)
    with pytest.raises(ValueError, match="The 'validation_split' parameter"):
        EffectiveEpsilonReport(results, validation_split=1.5)
    with pytest.raises(ValueError, match="The 'confidence_levels' parameter"):
        EffectiveEpsilonReport(results, confidence_levels=())


def test_by_target_groups_mechanisms(make_result) -> None:
    shared = _attacks_on_shared_records(n=300)
    # same default ids 0..599 and labels: one mechanism, attacks compared together
    other = [make_result(300, 300, 0.5, seed=1, target="other", attack="a"),
             make_result(300, 300, 0.5, seed=2, target="other", attack="b")]
    # different record sets under one target: bounded one by one
    split = [make_result(300, 300, 0.5, seed=3, target="split", attack="c"),
             make_result(200, 200, 0.5, seed=4, target="split", attack="d")]
    tiny = [make_result(1, 1, 1.0, target="tiny", attack="t")]
    with pytest.warns(DegenerateInputWarning):  # tiny: a part lacks members
        frame = effective_epsilon_by_target(shared + other + split + tiny,
                                            confidence_levels=(0.95,))
    assert list(frame["target"]) == ["m", "other", "split", "split", "tiny"]
    assert list(frame["candidates"]) == ["weak, strong", "a, b", "c", "d", "t"]
    assert frame.loc[0, "epsilon_low"] > 1.0
    assert math.isnan(frame["epsilon_low"].iloc[-1])
    assert (frame["note"] == "").all()


def test_out_of_fold_attacks_are_not_candidates(make_result) -> None:
    from privaudit.report import effective_epsilon_by_target

    plain = make_result(n_members=2000, n_non_members=2000, seed=1, attack="loss")
    crossfit = make_result(n_members=2000, n_non_members=2000, seed=1, shift=3.0,
                           attack="trained-lr")
    crossfit.out_of_fold = True
    frame = effective_epsilon_by_target([plain, crossfit], random_state=0)
    assert set(frame["candidates"]) == {"loss"}
    assert frame["note"].str.contains("trained-lr").all()
    alone = effective_epsilon_by_target([crossfit], random_state=0)
    assert alone["epsilon_low"].isna().all()
    assert alone["note"].str.contains("out of fold").all()
