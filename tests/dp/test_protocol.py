"""The training protocol (privaudit.dp): the canary-id check and the blind scoring."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from privaudit.dp import (
    CanarySet,
    DPTrainingRun,
    check_training_run,
    draw_inclusion,
    make_canaries,
    score_canaries,
)
from privaudit.exceptions import DegenerateInputWarning


def _canaries(m: int = 8) -> CanarySet:
    return make_canaries("dirac-gradient", m, n_parameters=100, random_state=0)


def my_train(dataset, canaries, *, random_state):  # a user's training function
    raise AssertionError("never called")


def _run(ids) -> DPTrainingRun:
    return DPTrainingRun(model=None, canary_ids=np.asarray(ids))


def test_the_ids_given_back_in_order_pass() -> None:
    c = _canaries()
    check_training_run(_run(c.ids), c, func=my_train)
    check_training_run(_run(list(c.ids)), c, func=my_train)  # a list is fine
    empty = c.subset(np.zeros(len(c), dtype=bool))
    check_training_run(_run([]), empty, func=my_train)


@pytest.mark.parametrize(("returned", "what"), [
    (lambda ids: ids[1:], r"dropped 1 of them \(canary-00000\)"),
    (lambda ids: ids[:-3], r"dropped 3 of them \(canary-00005, canary-00006, canary-00007\)"),
    (lambda ids: [], r"dropped 8 of them \(canary-00000, canary-00001, canary-00002 and 5 "),
    (lambda ids: [*ids, "canary-00099"], r"added 1 it was not given \(canary-00099\)"),
    (lambda ids: [*ids[:4], "x", *ids[4:]], r"added 1 it was not given \(x\)"),
    (lambda ids: [*ids, ids[2]], r"repeated 1 \(canary-00002\)"),
    (lambda ids: ids[::-1], r"reordered them \(position 0: canary-00007 where canary-00000"),
    (lambda ids: [ids[0], ids[2], ids[1], *ids[3:]],
     r"reordered them \(position 1: canary-00002 where canary-00001"),
])
def test_dropped_added_repeated_reordered_canaries_caught(returned, what) -> None:
    c = _canaries()
    ids = [str(i) for i in c.ids]
    with pytest.raises(ValueError, match=r"The training function my_train must return the ids "
                                         r"of the canaries it was given, in the order given "
                                         rf"\(8 ids\); it {what}"):
        check_training_run(_run(returned(ids)), c, func=my_train)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), m=st.integers(2, 30))
def test_property_any_change_of_the_ids_is_caught(data, m: int) -> None:
    c = _canaries(m)
    ids = [str(i) for i in c.ids]
    returned = data.draw(st.one_of(st.permutations(ids), st.lists(st.sampled_from(
        [*ids, "canary-99999"]), max_size=m + 2)))
    if returned == ids:
        check_training_run(_run(returned), c, func=my_train)
    else:
        with pytest.raises(ValueError, match="The training function my_train must return"):
            check_training_run(_run(returned), c, func=my_train)


@pytest.mark.parametrize("returned", [None, {"model": 1}, (None, ["canary-00000"]), "run"])
def test_a_training_function_returning_something_else_is_named(returned) -> None:
    with pytest.raises(TypeError, match="The training function my_train must return a "
                                        "DPTrainingRun"):
        check_training_run(returned, _canaries(), func=my_train)
    with pytest.raises(TypeError, match="The training function OpacusRecipe must return"):
        check_training_run(returned, _canaries(), func="OpacusRecipe")


def test_scoring_is_never_given_the_inclusion() -> None:
    assert list(inspect.signature(score_canaries).parameters) == ["run", "canaries"]


def _sklearn_run(seed: int = 0):
    """A user's own training function: logistic regression on data + included canaries."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((100, 50))  # 50 dimensions: room to memorise the canaries
    y = (X[:, 0] > 0).astype(int)
    canaries = make_canaries("flipped-label", 60, features=rng.standard_normal((200, 50)),
                             labels=rng.integers(0, 2, 200), random_state=seed)
    inc = draw_inclusion(60, random_state=seed)

    def train(dataset, included, *, random_state):
        Xd = np.vstack([dataset[0], included.features])
        yd = np.concatenate([dataset[1], included.labels])
        model = LogisticRegression(C=1.0, max_iter=500, random_state=random_state)
        return DPTrainingRun(model=model.fit(Xd, yd), canary_ids=included.ids)

    run = train((X, y), canaries.subset(inc), random_state=seed)
    check_training_run(run, canaries.subset(inc), func=train)
    return run, canaries, inc


def test_input_canaries_scored_by_negative_cross_entropy() -> None:
    run, canaries, _ = _sklearn_run()
    proba = run.model.predict_proba(canaries.features)
    expected = np.log(proba[np.arange(len(canaries)), canaries.labels])
    assert np.allclose(score_canaries(run, canaries), expected, rtol=1e-9, atol=1e-12)


def test_scores_follow_the_canaries_not_the_inclusion() -> None:
    run, canaries, inc = _sklearn_run(seed=1)
    scores = score_canaries(run, canaries)
    order = np.random.default_rng(0).permutation(len(canaries))
    assert np.array_equal(score_canaries(run, canaries.subset(order)), scores[order])
    for seed in range(3):  # another inclusion drawn after training changes nothing
        draw_inclusion(len(canaries), random_state=seed)
        assert np.array_equal(score_canaries(run, canaries), scores)
    assert scores[inc].mean() > scores[~inc].mean()  # training lowered the included losses


def test_dirac_canaries_scored_by_movement_against_the_canary_gradient() -> None:
    c = make_canaries("dirac-gradient", 5, n_parameters=10, random_state=0)
    start = np.linspace(0, 1, 10)
    end = start.copy()
    end[c.coordinates] -= np.array([0.5, 0.0, -0.25, 1.0, 0.1])
    run = DPTrainingRun(model=None, canary_ids=c.ids, initial_parameters=start,
                        final_parameters=end, learning_rate=0.5)
    assert np.allclose(score_canaries(run, c), [1.0, 0.0, -0.5, 2.0, 0.2])
    run.learning_rate = None  # no learning rate: the raw movement
    assert np.allclose(score_canaries(run, c), [0.5, 0.0, -0.25, 1.0, 0.1])


@pytest.mark.parametrize(("start", "end"), [(None, np.zeros(10)), (np.zeros(10), None),
                                            (np.zeros(10), np.zeros(9)),
                                            (np.zeros(3), np.zeros(3))])  # 5 coordinates
def test_dirac_scoring_needs_both_parameter_vectors(start, end) -> None:
    c = make_canaries("dirac-gradient", 5, n_parameters=10, random_state=0)
    run = DPTrainingRun(model=None, canary_ids=c.ids, initial_parameters=start,
                        final_parameters=end)
    with pytest.raises(ValueError, match="'run' parameter of score_canaries"):
        score_canaries(run, c)


def test_non_finite_scores_become_nan_with_a_warning() -> None:
    c = make_canaries("dirac-gradient", 4, n_parameters=4, random_state=0)
    end = np.zeros(4)
    end[c.coordinates[:2]] = [np.inf, np.nan]
    run = DPTrainingRun(model=None, canary_ids=c.ids, initial_parameters=np.zeros(4),
                        final_parameters=end)
    with pytest.warns(DegenerateInputWarning, match="2 of 4 canary scores are not finite"):
        scores = score_canaries(run, c)
    assert np.isnan(scores[:2]).all() and np.array_equal(scores[2:], [0.0, 0.0])
