"""GeneratorRuns: the shadow training sets of TAPAS's game, parallel, cached, resumable."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest

from privaudit.exceptions import PrivauditWarning
from privaudit.synthetic import independent_marginals
from privaudit.training import GeneratorRecipe, GeneratorRuns

AUX = pd.DataFrame({"x": np.arange(200) % 17, "c": np.array(list("abcde"))[np.arange(200) % 5],
                    "id": np.arange(200)})
TARGETS = pd.DataFrame({"x": [100, 101, 102], "c": ["z", "z", "y"], "id": [-1, -2, -3]})


def echo(train, n_rows, *, random_state):
    """The training table itself, shuffled: shows which rows a run trained on."""
    rng = np.random.default_rng(random_state)
    return train.iloc[rng.permutation(len(train))[:n_rows]].reset_index(drop=True)


def runs(**kwargs):
    params = {"n_runs": 8, "n_train_rows": 20, "random_state": 0, **kwargs}
    return GeneratorRuns(params.pop("generator", echo), AUX, TARGETS, **params)


def test_every_target_is_in_half_the_runs_and_every_set_has_the_same_size():
    made = runs(n_runs=10).run()
    assert made.in_mask_.shape == (10, 3)
    np.testing.assert_array_equal(made.in_mask_.sum(axis=0), [5, 5, 5])
    for r, table in enumerate(made.synthetic_):
        assert len(made.train_indices_[r]) == 20 and len(table) == 20
        np.testing.assert_array_equal(np.isin(TARGETS["id"], table["id"]), made.in_mask_[r])
        assert len(set(table["id"])) == 20  # drawn without replacement


def test_exact_knowledge_keeps_the_other_rows_and_one_stand_in_per_target():
    made = runs(knowledge="exact").run()
    others = [set(t["id"]) - set(TARGETS["id"]) for t in made.synthetic_]
    known = set.intersection(*others)
    assert len(known) == 17  # 20 rows - 3 targets
    for r, ids in enumerate(others):
        assert len(ids - known) == int((~made.in_mask_[r]).sum())
    stand_ins = {t: {frozenset(ids - known) for r, ids in enumerate(others)
                     if not made.in_mask_[r, t] and made.in_mask_[r].sum() == 2}
                 for t in range(3)}
    assert all(len(v) <= 1 for v in stand_ins.values())


def test_auxiliary_rows_identical_to_a_target_are_never_drawn():
    aux = pd.concat([AUX, TARGETS.iloc[[0]]], ignore_index=True)
    with pytest.warns(PrivauditWarning, match="1 auxiliary rows are identical"):
        made = GeneratorRuns(echo, aux, TARGETS, n_runs=6, n_train_rows=150,
                             random_state=0).run()
    for r, table in enumerate(made.synthetic_):
        assert (table["id"] == -1).sum() == int(made.in_mask_[r, 0])


def test_same_seed_same_tables_whatever_the_number_of_workers():
    one = runs(generator=independent_marginals).run()
    two = runs(generator=independent_marginals, n_jobs=2).run()
    for a, b in zip(one.synthetic_, two.synthetic_, strict=True):
        pd.testing.assert_frame_equal(a, b)
    other = runs(generator=independent_marginals, random_state=1).run()
    assert not one.synthetic_[0].equals(other.synthetic_[0])


def test_a_rerun_makes_nothing_and_a_tampered_table_is_made_again(tmp_path):
    first = runs(cache_dir=tmp_path).run()
    assert first.n_made_ == 8
    again = runs(cache_dir=tmp_path).run()
    assert again.n_made_ == 0
    pd.DataFrame({"x": [1]}).to_parquet(again.cache_path_ / "model-00002.parquet")
    with pytest.warns(PrivauditWarning, match="synthetic table 2 .* does not match"):
        healed = runs(cache_dir=tmp_path).run()
    assert healed.n_made_ == 1
    pd.testing.assert_frame_equal(healed.synthetic_[2], echo(
        pd.concat([AUX, TARGETS], ignore_index=True).iloc[first.train_indices_[2]], 20,
        random_state=int(first.seeds_[2])))


def test_an_interrupted_run_remakes_only_the_missing_tables(tmp_path):
    counter = {"calls": 0}

    def counted(train, n_rows, *, random_state):
        counter["calls"] += 1
        if counter["calls"] == 4:
            raise KeyboardInterrupt
        return echo(train, n_rows, random_state=random_state)

    with pytest.raises(KeyboardInterrupt):
        runs(generator=counted, cache_dir=tmp_path).run()
    finished = len(list(tmp_path.glob("genruns-*/model-*.json")))
    assert finished == 3
    made = runs(generator=counted, cache_dir=tmp_path).run()
    assert made.n_made_ == 8 - finished


def test_the_cache_holds_parquet_data_only(tmp_path):
    made = runs(cache_dir=tmp_path).run()
    files = sorted(os.listdir(made.cache_path_))
    assert {f.rsplit(".", 1)[-1] for f in files} <= {"parquet", "json", "npy", "lock"}
    assert isinstance(made.synthetic_[0], pd.DataFrame)


class SdvLike:
    """An object generator: fit, then sample, seeded through random_state."""

    def __init__(self):
        self.random_state = None

    def fit(self, data):
        self.data_ = data

    def sample(self, n_rows):
        return independent_marginals(self.data_, n_rows, random_state=self.random_state)


def test_objects_with_fit_and_sample_are_copied_and_seeded_per_run():
    template = SdvLike()
    made = runs(generator=template).run()
    assert not hasattr(template, "data_")
    again = runs(generator=SdvLike()).run()
    pd.testing.assert_frame_equal(made.synthetic_[3], again.synthetic_[3])

    class Unseeded:
        def fit(self, data):
            self.data_ = data

        def sample(self, n_rows):
            return self.data_.iloc[:n_rows]

    with pytest.warns(PrivauditWarning, match="not reproducible"):
        runs(generator=Unseeded(), n_runs=2).run()


@pytest.mark.parametrize("kwargs, match", [
    ({"n_runs": 7}, "n_runs"), ({"n_runs": 0}, "n_runs"), ({"n_train_rows": 2}, "n_train_rows"),
    ({"n_train_rows": 1000}, "n_train_rows"), ({"knowledge": "partial"}, "knowledge"),
    ({"generator": 3}, "generator"), ({"n_synthetic_rows": 0}, "n_synthetic_rows"),
])
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        runs(**kwargs).run()


def test_targets_must_have_the_auxiliary_columns_and_the_generator_a_table():
    with pytest.raises(ValueError, match="targets"):
        GeneratorRuns(echo, AUX, TARGETS[["x"]], n_runs=2, n_train_rows=10).run()
    with pytest.raises(GeneratorRecipe.Failed, match=r"run 0 of 2: .*DataFrame"):
        runs(generator=lambda train, n, random_state: train.to_numpy(), n_runs=2).run()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs(n_runs=2).run()


def test_attribute_inference_runs_hold_each_target_or_its_alternative():
    alternatives = TARGETS.assign(id=[-11, -12, -13])
    made = runs(alternatives=alternatives).run()
    for r, table in enumerate(made.synthetic_):
        ids = set(table["id"])
        for t in range(3):
            assert (TARGETS["id"][t] in ids) == made.in_mask_[r, t]
            assert (alternatives["id"][t] in ids) != made.in_mask_[r, t]
        assert len(ids) == 20
    exact = runs(alternatives=alternatives, knowledge="exact").run()
    others = [set(t["id"]) - set(TARGETS["id"]) - set(alternatives["id"])
              for t in exact.synthetic_]
    assert all(o == others[0] for o in others) and len(others[0]) == 17
    with pytest.raises(TypeError, match="alternatives"):
        runs(alternatives=alternatives.iloc[:2]).run()


class SdvStyle:
    """SDV's shape: the model exists after fit, seeded by _set_random_state."""

    def fit(self, data):
        self._model = data

    def _set_random_state(self, seed):
        self._model_seed = seed

    def sample(self, num_rows):
        return independent_marginals(self._model, num_rows, random_state=self._model_seed)


def test_sdv_style_synthesizers_are_seeded_after_fitting():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = runs(generator=SdvStyle(), n_runs=4).run()
        second = runs(generator=SdvStyle(), n_runs=4).run()
    pd.testing.assert_frame_equal(first.synthetic_[1], second.synthetic_[1])
