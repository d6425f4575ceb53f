"""The DP-training audit kind on the template: settings, the protocol, reuse, resumption.

A stand-in training function makes the mechanics fast and the expected answer known: it
"trains" by moving each included dirac canary's coordinate by ``signal`` plus Gaussian
noise of scale ``sigma`` (a Gaussian mechanism with the canary as sensitivity, the
idealised setting of Steinke et al. 2023, Sec. 6). With ``signal / sigma`` large the
canaries are found and the claim of eps = 1 refuted; with ``sigma`` large the bound stays
below it. The end-to-end test with Opacus is in tests/audit/test_dp_training_opacus.py.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.audits import DPTrainingAudit, audit_dp_training
from privaudit.dp import DPTrainingRun
from privaudit.results import DPAuditResult, load_all_results

N_PARAMETERS = 400
DATA = (np.random.default_rng(0).normal(size=(60, 3)), np.arange(60) % 2)
#: Seeds of the runs the stand-in was asked to train, in call order (inline runs only).
CALLS: list[int] = []
#: Runs whose seed is listed here raise (a crash mid-audit).
CRASH_SEEDS: set[int] = set()


class Crash(RuntimeError):
    """Raised by the stand-in to simulate a crash."""


@dataclass
class GaussianCanaryTrainer:
    """Moves each included canary's coordinate by -signal, plus N(0, sigma) on every one."""

    signal: float = 1.0
    sigma: float = 0.1
    order: str = "kept"  # "dropped" / "reordered": a faulty training function

    def n_parameters(self, dataset: Any) -> int:
        return N_PARAMETERS

    def __call__(self, dataset: Any, canaries: Any, *, random_state: int) -> DPTrainingRun:
        CALLS.append(random_state)
        if random_state in CRASH_SEEDS:
            raise Crash(random_state)
        rng = np.random.default_rng(random_state)
        start = rng.normal(size=N_PARAMETERS)
        end = start + self.sigma * rng.normal(size=N_PARAMETERS)
        end[canaries.coordinates] -= self.signal
        ids = np.asarray(canaries.ids)
        if self.order == "dropped":
            ids = ids[1:]
        elif self.order == "reordered":
            ids = ids[::-1]
        return DPTrainingRun(model=None, canary_ids=ids, claimed_epsilon={"rdp": 1.0},
                             delta=1e-5, initial_parameters=start, final_parameters=end,
                             learning_rate=1.0, n_steps=1, train_seconds=0.0)


LEAKY, PRIVATE = GaussianCanaryTrainer(sigma=0.1), GaussianCanaryTrainer(sigma=20.0)
SETTINGS = {"dataset": DATA, "claimed_epsilon": 1.0, "delta": 1e-5,
            "canaries": "dirac-gradient", "n_canaries": 200}


def _same(a: DPAuditResult, b: DPAuditResult) -> bool:
    """Equal documents (NaN equal to NaN, e.g. the threshold of a rule that made no guess)."""
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


def _audit(train: Any = LEAKY, **kwargs: Any) -> DPAuditResult:
    report = audit_dp_training(train, **{**SETTINGS, **kwargs})
    assert len(report) == 1
    return report[0]


@pytest.mark.parametrize(("kwargs", "param", "error"), [
    ({"claimed_epsilon": 0.0}, "claimed_epsilon", ValueError),
    ({"claimed_epsilon": -1.0}, "claimed_epsilon", ValueError),
    ({"claimed_epsilon": {"rdp": 0.0}}, "claimed_epsilon", TypeError),
    ({"claimed_epsilon": {}}, "claimed_epsilon", TypeError),
    ({"claimed_epsilon": "8"}, "claimed_epsilon", TypeError),
    ({"delta": -0.1}, "delta", ValueError),
    ({"delta": 1.0}, "delta", ValueError),
    ({"delta": 0.0}, "delta", ValueError),  # 0 with the default methods (fdp among them)
    ({"confidence": 0.0}, "confidence", ValueError),
    ({"confidence": 1.0}, "confidence", ValueError),
    ({"confidence": 1.5}, "confidence", ValueError),
    ({"n_canaries": 1}, "n_canaries", ValueError),
    ({"n_canaries": 0}, "n_canaries", ValueError),
    ({"n_canaries": 2.5}, "n_canaries", TypeError),
    ({"canaries": "pixels"}, "canaries", ValueError),
    ({"methods": ("steinke", "steinke")}, "methods", TypeError),
    ({"methods": ("exact",)}, "methods", TypeError),
    ({"methods": "steinke"}, "methods", TypeError),
    ({"threshold": "best"}, "threshold", ValueError),
    ({"n_runs": 0}, "n_runs", ValueError),
    ({"two_sided": "yes"}, "two_sided", TypeError),
    ({"dataset": (np.zeros(5), np.zeros(5))}, "dataset", ValueError),
    ({"dataset": np.zeros((5, 2))}, "dataset", TypeError),
    ({"random_state": -1}, "random_state", ValueError),
    ({"n_jobs": 0}, "n_jobs", ValueError),
])
def test_every_bad_setting_is_refused_by_name_before_any_training(kwargs, param, error):
    CALLS.clear()
    with pytest.raises(error, match=rf"'{param}' parameter of audit_dp_training"):
        _audit(**kwargs)
    assert CALLS == []


def test_pure_dp_is_accepted_with_the_steinke_method_alone():
    result = _audit(delta=0.0, methods=("steinke",), n_canaries=50)
    assert result.delta == 0.0 and result.methods == ["steinke"]


@pytest.mark.parametrize(("fault", "words"), [("dropped", "dropped 1 of them"),
                                              ("reordered", "reordered them")])
def test_a_training_function_that_loses_or_reorders_canaries_is_refused(fault, words):
    with pytest.raises(ValueError, match=words):
        _audit(GaussianCanaryTrainer(order=fault))


def test_the_scores_and_the_inclusion_give_the_verdict_both_ways():
    leaky, private = _audit(LEAKY), _audit(PRIVATE)
    assert leaky.refuted and leaky.verdict == "claim refuted"
    assert leaky.epsilon_lower_bound > 1.0
    assert not private.refuted and private.verdict == "consistent with the claim"
    assert private.epsilon_lower_bound < 1.0
    for result in (leaky, private):  # the inclusion drawn at p = 1/2, kept apart
        assert result.included.shape == (1, 200) and 60 < result.included.sum() < 140
        assert result.audit.kind == "dp" and result.audit.key.startswith("t1:")
        assert result.bound_confidence == pytest.approx(1 - 0.05 / 2)
        for bound in result.bounds[0].values():
            assert bound.n_canaries <= 200 and bound.n_correct <= bound.n_guesses


@dataclass
class DivergingTrainer(GaussianCanaryTrainer):
    """Its parameters end NaN (a training that diverged)."""

    def __call__(self, dataset: Any, canaries: Any, *, random_state: int) -> DPTrainingRun:
        run = super().__call__(dataset, canaries, random_state=random_state)
        run.final_parameters = np.full_like(run.final_parameters, np.nan)
        return run


def test_a_diverged_training_gives_nan_bounds_a_warning_and_no_verdict():
    from privaudit.exceptions import DegenerateInputWarning

    with pytest.warns(DegenerateInputWarning, match="scored 200 of 200 canaries NaN"):
        result = _audit(DivergingTrainer())
    assert np.isnan(result.epsilon_lower_bound) and result.verdict == "undefined"
    assert not result.refuted
    loaded = DPAuditResult(**{k: getattr(result, k) for k in (
        "canary_ids", "scores", "included", "claimed_epsilon", "delta", "bounds")})
    assert loaded.verdict == "undefined"


def test_included_canaries_score_higher_when_the_mechanism_leaks():
    result = _audit(LEAKY)
    inside, outside = result.in_out_scores()
    assert inside.min() > outside.max()  # signal 1 against noise 0.1: separable


def test_a_claim_per_accountant_is_read_at_its_strongest():
    result = _audit(claimed_epsilon={"rdp": 50.0, "prv": 1.0})
    assert result.claim == 1.0 and result.claim_accountant == "prv" and result.refuted
    loose = _audit(claimed_epsilon={"rdp": 50.0, "prv": 40.0})
    assert loose.claim == 40.0 and not loose.refuted


def test_reuse_through_results_dir_gives_the_identical_result(tmp_path):
    CALLS.clear()
    first = _audit(results_dir=tmp_path)
    assert len(CALLS) == 1
    again = _audit(results_dir=tmp_path, progress=lambda message: None)
    assert len(CALLS) == 1  # reused: not trained again
    assert _same(again, first)
    loaded = load_all_results(tmp_path)
    assert len(loaded) == 1 and isinstance(loaded[0], DPAuditResult)
    assert _same(loaded[0], first)
    _audit(results_dir=tmp_path, claimed_epsilon=2.0)  # another claim: another key
    assert len(CALLS) == 2


def test_a_modified_saved_result_is_recomputed_not_trusted(tmp_path):
    first = _audit(results_dir=tmp_path)
    path = next(tmp_path.rglob("dp_audit.json"))
    doc = json.loads(path.read_text())
    doc["scores"][0][0] = 99.0
    path.write_text(json.dumps(doc))
    CALLS.clear()
    with pytest.warns(Warning, match="damaged"):
        again = _audit(results_dir=tmp_path)
    # Recomputed from the finished training run saved beside the results (not retrained).
    assert CALLS == [] and _same(again, first)
    assert _same(load_all_results(tmp_path)[0], first)


def test_same_seed_same_numbers_whatever_n_jobs():
    one = _audit(n_runs=3, n_jobs=1, n_canaries=60)
    two = _audit(n_runs=3, n_jobs=2, n_canaries=60)
    assert _same(one, two)
    assert one.gdp is not None and one.gdp.epsilon >= 0
    assert not np.array_equal(one.included[0], one.included[1])  # fresh inclusion per run
    other = _audit(n_runs=3, n_jobs=1, n_canaries=60, random_state=1)
    assert not np.array_equal(other.scores, one.scores)


def test_finished_runs_are_saved_and_read_back_after_a_crash(tmp_path):
    from privaudit.audits._dp_training import _TRAINING, _seed

    seeds = [_seed(0, _TRAINING, i) for i in range(3)]
    CALLS.clear()
    CRASH_SEEDS.add(seeds[2])
    try:
        with pytest.raises(Crash):
            _audit(n_runs=3, n_jobs=1, n_canaries=60, cache_dir=tmp_path / "cache")
    finally:
        CRASH_SEEDS.clear()
    assert CALLS == seeds
    CALLS.clear()
    resumed = _audit(n_runs=3, n_jobs=1, n_canaries=60, cache_dir=tmp_path / "cache")
    assert CALLS == [seeds[2]]  # the two finished runs were read back
    fresh = _audit(n_runs=3, n_jobs=1, n_canaries=60)
    assert _same(resumed, fresh)


def test_a_trainers_cache_leaves_the_key_but_its_settings_change_it(tmp_path):
    trainer = GaussianCanaryTrainer()
    CALLS.clear()
    first = _audit(trainer, results_dir=tmp_path)
    trainer._calibrated = 3.0  # a cache (OpacusRecipe keeps its calibrated sigma so)
    again = _audit(trainer, results_dir=tmp_path)
    assert len(CALLS) == 1 and _same(again, first)
    _audit(GaussianCanaryTrainer(sigma=0.2), results_dir=tmp_path)
    assert len(CALLS) == 2  # another noise: another procedure, recomputed


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 40), st.integers(1, 3), st.integers(0, 2**32 - 1),
       st.floats(0.1, 20.0))
def test_a_result_saved_and_loaded_is_the_same_and_its_verdict_reads_its_bound(
        m, n_runs, seed, claim):
    import tempfile

    from privaudit.metrics import canary_epsilon_lower_bound

    rng = np.random.default_rng(seed)
    included = rng.random((n_runs, m)) < 0.5
    included[:, 0], included[:, 1] = True, False  # both groups non-empty
    scores = rng.normal(size=(n_runs, m)) + 3.0 * included
    bounds = [{"steinke": canary_epsilon_lower_bound(s[i], s[~i], delta=1e-5)}
              for s, i in zip(scores, included, strict=True)]
    result = DPAuditResult(canary_ids=[f"c{i}" for i in range(m)], scores=scores,
                           included=included, claimed_epsilon={"rdp": claim}, delta=1e-5,
                           bounds=bounds, attack="canaries", target="t")
    assert result.refuted == (max(b["steinke"].epsilon for b in bounds) > claim)
    with tempfile.TemporaryDirectory() as folder:
        result.save(folder)
        loaded = DPAuditResult.load(folder, require_digest=True)
    assert _same(loaded, result)
    np.testing.assert_array_equal(loaded.scores, scores)  # floats exact through JSON


def test_the_kind_declares_every_setting():
    assert DPTrainingAudit.kind == "dp" and DPTrainingAudit.func == "audit_dp_training"
    fields = {f.name for f in dataclasses.fields(DPTrainingAudit.Settings)}
    assert set(DPTrainingAudit.Settings.CONSTRAINTS) == fields


@dataclass
class SlottedTrainer(GaussianCanaryTrainer):
    """A training function that reserves coordinates for Dirac canaries, as
    ``OpacusRecipe(dirac_slots=k)`` does; records the coordinates it was given."""

    slots: int = 0
    seen: list[np.ndarray] = field(default_factory=list)

    def dirac_coordinates(self, dataset: Any) -> np.ndarray:
        return np.arange(N_PARAMETERS - self.slots, N_PARAMETERS)

    def __call__(self, dataset: Any, canaries: Any, *, random_state: int) -> DPTrainingRun:
        self.seen.append(np.asarray(canaries.coordinates))
        return super().__call__(dataset, canaries, random_state=random_state)


@pytest.mark.parametrize("slots", [200, 350, N_PARAMETERS])
def test_dirac_canaries_are_drawn_among_the_coordinates_a_trainer_reserves(slots):
    trainer = SlottedTrainer(slots=slots)
    _audit(trainer, n_runs=2)
    used = np.concatenate(trainer.seen)
    assert used.size and used.min() >= N_PARAMETERS - slots


def test_a_trainer_without_reserved_coordinates_gets_them_from_every_parameter():
    trainer = SlottedTrainer(slots=0)
    _audit(trainer, n_canaries=300)
    used = trainer.seen[0]
    # 150-odd included canaries spread over all N_PARAMETERS coordinates.
    assert used.min() < N_PARAMETERS // 4 and used.max() > 3 * N_PARAMETERS // 4
