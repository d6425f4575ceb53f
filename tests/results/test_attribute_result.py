"""AttributeResult: Yeom et al.'s attribute advantages, hand-worked, and its disk format."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privaudit.metrics as pm
from privaudit.results import AttributeResult, ResultFileError, ResultsStore, load_result


def _result(**kw):
    # 10 members: 8 right; 10 non-members: 4 right. Candidates a, b, c.
    truth = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0] * 2)
    guesses = truth.copy()
    guesses[[8, 9]] = (truth[[8, 9]] + 1) % 3          # 2 member misses
    guesses[10:16] = (truth[10:16] + 1) % 3            # 6 non-member misses
    members = np.r_[np.ones(10), np.zeros(10)].astype(int)
    prior = np.zeros(20, dtype=int)                    # always "a": right on truth == 0
    base = dict(candidates=["a", "b", "c"], guesses=guesses, truth=truth, members=members,
                model_free={"prior": prior}, attack="model-inversion", target="m",
                sensitive_attribute="s")
    base.update(kw)
    return AttributeResult(**base)


def test_hand_worked_accuracies_and_advantages():
    r = _result()
    assert r.accuracy().value == 0.8 and r.accuracy(members=False).value == 0.4
    adv = r.advantage()
    expected = pm.newcombe_interval(8, 10, 4, 10)
    assert adv.value == pytest.approx(0.4) and adv == expected
    # The prior ("a") is right on 4 of 10 non-members (truth 0 at positions 10, 13, 16, 19).
    assert r.model_free_accuracy("prior", members=False).value == 0.4
    assert r.best_model_free == "prior"
    assert r.simulator_advantage() == pm.newcombe_interval(8, 10, 4, 10)
    rows = {row["value"]: row for row in r.per_value()}
    assert rows["a"]["n_members"] == 4 and rows["a"]["accuracy_members"].value == 0.75
    assert rows["c"]["accuracy_members"].value == pytest.approx(2 / 3)


def test_approximate_inference_counts_guesses_within_alpha():
    grid = [0.0, 1.0, 2.0, 3.0]
    r = AttributeResult(candidates=grid, guesses=np.array([0, 1, 3, 2]),
                        truth_values=np.array([0.4, 1.6, 2.0, 2.0]),
                        members=np.array([1, 1, 0, 0]), alpha=0.5)
    np.testing.assert_array_equal(r.is_correct(), [True, False, False, True])
    assert r.advantage().value == 0.0
    with pytest.raises(ValueError, match="one-vs-rest"):
        r.to_attack_results()


def test_one_vs_rest_results_for_the_aia_report():
    r = _result(posteriors=np.full((20, 3), 1 / 3))
    out = r.to_attack_results()
    assert [o.parameters["value"] for o in out] == ["a", "b", "c"]
    assert all(o.kind == "attribute" and o.n_members + o.n_non_members == 10 for o in out)
    assert out[0].parameters["sensitive_attribute"] == "s"
    two = AttributeResult(candidates=[0, 1], guesses=np.array([0, 1, 1, 0]),
                          truth=np.array([0, 1, 1, 0]), members=np.array([1, 1, 1, 0]),
                          posteriors=np.array([[.9, .1], [.2, .8], [.4, .6], [.5, .5]]))
    (only,) = two.to_attack_results()
    np.testing.assert_array_equal(only.labels, [0, 1, 1])
    assert only.metrics()["auc"]["value"] == 1.0


def test_save_load_round_trip_and_tampering(tmp_path):
    r = _result(posteriors=np.full((20, 3), 1 / 3), candidates=[(0, 1), (1, 0), (1, 1)])
    store = ResultsStore(tmp_path)
    folder = store.save(r)
    back = load_result(folder)
    assert isinstance(back, AttributeResult)
    assert back.candidates == [(0, 1), (1, 0), (1, 1)]
    np.testing.assert_array_equal(back.guesses, r.guesses)
    np.testing.assert_array_equal(back.model_free["prior"], r.model_free["prior"])
    assert back.advantage() == r.advantage()
    doc = json.loads((folder / "attribute.json").read_text())
    assert doc["metrics"]["advantage"]["value"] == pytest.approx(0.4)
    # Edited arrays are refused, naming the file.
    data = dict(np.load(folder / "attribute.npz"))
    data["guesses"] = np.zeros_like(data["guesses"])
    with open(folder / "attribute.npz", "wb") as fh:
        np.savez(fh, **data)
    with pytest.raises(ResultFileError, match=r"modified after it was written: attribute\.npz"):
        load_result(folder)


@pytest.mark.parametrize(("change", "match"), [
    ({"guesses": np.full(20, 3)}, "'guesses' parameter.*indices in \\[-1, 3\\)"),
    ({"truth": np.full(20, -1)}, "'truth' parameter.*indices in \\[0, 3\\)"),
    ({"members": np.full(20, 2)}, "'members' parameter"),
    ({"candidates": ["a"]}, "at least two values"),
    ({"truth_values": np.zeros(20)}, "exactly one of 'truth'"),
    ({"posteriors": np.ones((20, 2))}, "'posteriors' parameter"),
    ({"alpha": 0.5}, "'alpha' parameter"),
])
def test_bad_input_names_the_parameter(change, match):
    with pytest.raises((TypeError, ValueError), match=match):
        _result(**change)


def test_no_non_members_gives_nan():
    r = AttributeResult(candidates=[0, 1], guesses=np.array([0, 1]), truth=np.array([0, 0]),
                        members=np.array([1, 1]))
    assert math.isnan(r.advantage().value) and math.isnan(r.accuracy(False).value)
    assert math.isnan(r.simulator_advantage().value)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.booleans()),
                min_size=4, max_size=40))
def test_advantage_is_the_difference_of_the_two_accuracies(rows):
    truth, guesses, member = (np.array(c) for c in zip(*rows, strict=True))
    if member.all() or not member.any():
        return
    r = AttributeResult(candidates=[0, 1, 2], guesses=guesses, truth=truth,
                        members=member.astype(int))
    adv = r.advantage()
    assert adv.value == pytest.approx(r.accuracy().value - r.accuracy(False).value)
    assert -1.0 <= adv.low <= adv.value <= adv.high <= 1.0


def test_adversary_5_has_the_attribute_advantage_as_membership_advantage():
    # Theorem 6: "member" iff the guess is right has exactly the attribute advantage.
    import privaudit.metrics as pm

    r = _result()
    member = r.to_membership_result()
    tpr = member.predictions[member.labels == 1].mean()
    fpr = member.predictions[member.labels == 0].mean()
    assert tpr - fpr == pytest.approx(r.advantage().value)
    assert member.parameters["reduction"] == "Yeom et al. Adversary 5"
    assert pm.roc_auc(member.labels, member.scores) == pytest.approx((1 + 0.4) / 2)


def test_abstentions_count_as_wrong_guesses():
    r = AttributeResult(candidates=[0, 1], guesses=np.array([-1, 1, -1, 0]),
                        truth=np.array([0, 1, 1, 0]), members=np.array([1, 1, 0, 0]))
    np.testing.assert_array_equal(r.is_correct(), [False, True, False, True])
    approx = AttributeResult(candidates=[0.0, 1.0], guesses=np.array([-1, 0]),
                             truth_values=np.array([0.0, 0.1]), members=np.array([1, 0]),
                             alpha=0.5)
    np.testing.assert_array_equal(approx.is_correct(), [False, True])


INT_IDS = np.arange(1000, 1020)[::-1]
# Text of every kind: accents, an emoji outside the BMP, an empty id, a comma.
STR_IDS = [f"person-{i}" for i in range(16)] + ["Zoë", "🦉-7", "", "a,b"]


@pytest.mark.parametrize("ids", [INT_IDS, STR_IDS], ids=["int", "str"])
def test_record_ids_round_trip_and_reach_the_membership_views(tmp_path, ids):
    r = _result(posteriors=np.full((20, 3), 1 / 3), record_ids=ids)
    store = ResultsStore(tmp_path)
    back = load_result(store.save(r))
    assert back.record_ids.tolist() == list(ids)
    assert back.record_ids.dtype == (np.int64 if isinstance(ids[0], np.integer) else object)
    member = back.to_membership_result()
    assert member.record_ids.tolist() == list(ids)
    for one in back.to_attack_results():  # one-vs-rest, on the members (the first 10)
        assert one.record_ids.tolist() == list(ids[:10])
    # The membership view's saved scores carry the same ids, of the same type.
    reloaded = load_result(store.save(member))
    assert reloaded.record_ids.tolist() == list(ids)
    (scores,) = tmp_path.rglob("scores.csv")
    column = pd.read_csv(scores, dtype={"record_id": str}, keep_default_na=False)["record_id"]
    assert column.tolist() == [str(i) for i in ids]


def test_default_ids_are_positions_and_older_results_load_with_them(tmp_path, monkeypatch):
    assert _result().record_ids.tolist() == list(range(20))
    import privaudit.results._attribute as module

    # What a privaudit without record ids wrote: no id arrays in attribute.npz (sealed).
    monkeypatch.setattr(module, "_ids_to_arrays", lambda ids: {})
    folder = ResultsStore(tmp_path).save(_result(record_ids=INT_IDS))
    monkeypatch.undo()
    assert set(np.load(folder / "attribute.npz")) == {"guesses", "members", "truth",
                                                       "model_free.prior"}
    back = load_result(folder)
    assert back.record_ids.dtype == np.int64 and back.record_ids.tolist() == list(range(20))


def test_edited_record_ids_are_refused(tmp_path):
    folder = ResultsStore(tmp_path).save(_result(record_ids=STR_IDS))
    data = dict(np.load(folder / "attribute.npz"))
    assert {"record_ids.codepoints", "record_ids.lengths"} <= set(data)
    data["record_ids.codepoints"] = data["record_ids.codepoints"][::-1].copy()
    with open(folder / "attribute.npz", "wb") as fh:
        np.savez(fh, **data)
    with pytest.raises(ResultFileError, match=r"modified after it was written: attribute\.npz"):
        load_result(folder)


@pytest.mark.parametrize(("ids", "match", "error"), [
    (np.zeros(20, dtype=int), r"'record_ids' parameter of AttributeResult must be unique",
     ValueError),
    (["a"] * 19 + ["b"], r"'record_ids' parameter.*unique.*'a'", ValueError),
    (np.arange(19), r"'record_ids' parameter of AttributeResult must be a 1-d array of "
                    r"length 20", ValueError),
    (np.arange(20.0), r"'record_ids' parameter of AttributeResult must be integers or "
                      r"strings", TypeError),
])
def test_bad_record_ids_are_refused(ids, match, error):
    with pytest.raises(error, match=match):
        _result(record_ids=ids)
