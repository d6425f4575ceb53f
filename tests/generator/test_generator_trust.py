"""Generator audits, issue 19: TAPAS-style objects, the tables given back, phase times,
options that would be ignored, and a cache that is read once per audit."""

import re

import numpy as np
import pandas as pd
import pytest

import privaudit
from privaudit.attacks.generator import TargetDistances
from privaudit.attacks.generator import _base as attack_base
from privaudit.training import GeneratorRecipe, GeneratorRuns

GAME = {"n_train_rows": 60, "n_shadow_runs": 6, "n_test_runs": 6, "random_state": 0,
        "attacks": ["closest-distance"]}


@pytest.fixture(scope="module")
def population():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 80, 300),
                          "city": rng.choice(["a", "b", "c"], 300)})
    frame.loc[0] = [99, "z"]
    return frame


class TapasCopier:
    """TAPAS's generator interface: ``fit(dataset)``, ``generate(num_samples, random_state)``."""

    def fit(self, dataset):
        self.data = dataset

    def generate(self, num_samples, random_state=None):
        return Wrapped(self.data.sample(num_samples, replace=True,
                                        random_state=random_state % 2**32))


class Wrapped:
    """TAPAS's ``TabularDataset``: the DataFrame in ``.data``."""

    def __init__(self, data):
        self.data = data


def copier(train, n_rows, *, random_state):
    return train.sample(n_rows, replace=True, random_state=random_state % 2**32)


def test_a_tapas_style_object_is_audited_like_the_same_callable(population):
    from_object = privaudit.audit_generator(TapasCopier(), population, n_targets=2, **GAME)
    from_callable = privaudit.audit_generator(copier, population, n_targets=2, **GAME)
    assert [r.generator for r in from_object] == ["TapasCopier"] * 2
    for a, b in zip(from_object, from_callable, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)  # same seeds, same tables


def test_the_tables_come_back_and_each_phase_is_timed(population, tmp_path):
    results = privaudit.audit_generator(copier, population, n_targets=2,
                                        cache_dir=tmp_path, **GAME)
    phases = results[0].extra["phases"]
    assert set(phases) == {"shadow_runs", "test_runs", "attack"}
    for part in ("shadow_runs", "test_runs"):
        assert phases[part]["seconds"] > 0 and phases[part]["made"] == 6
        assert phases[part]["generator_seconds"] > 0
    assert phases["attack"]["seconds"] > 0 and phases["attack"]["n_targets"] == 2
    saved = GeneratorRuns.from_cache(phases["test_runs"]["cache"])
    assert len(saved.synthetic) == 6 and saved.in_mask.shape == (6, 2)
    assert all(len(t) == 60 and list(t.columns) == ["age", "city"] for t in saved.synthetic)
    # The test runs given back are the results' records: label = target in the run.
    for t, result in enumerate(results):
        np.testing.assert_array_equal(saved.in_mask[:, t], result.labels.astype(bool))
    shadow = GeneratorRuns.from_cache(phases["shadow_runs"]["cache"])
    assert len(shadow.synthetic) == 6 and shadow.folder != saved.folder
    # A table edited after the game is refused, naming its file.
    table = sorted(saved.folder.glob("model-*.parquet"))[0]
    table.write_bytes(table.read_bytes() + b"x")
    with pytest.raises(ValueError, match=r"model-00000\.parquet does not match"):
        GeneratorRuns.from_cache(saved.folder)


@pytest.mark.parametrize("kwargs, match", [
    ({"attacks": ["domias"], "attack_params": {"groundhog": {"bins": 3}}},
     r"attack_params.*listed in 'attacks' \(\['domias'\]\).*'groundhog'"),
    ({"attack_params": {"closest-distance": {"radius": 0.1}}},  # not its parameter
     r"attack_params.*'closest-distance.radius'"),
    ({"targets": [3, 3]}, r"repeated: \[3\]"),
    ({"targets": [3], "n_targets": 2}, "n_targets"),
    ({"secret": "city", "secret_values": ["a", "nope"]},
     r"column 'city'.*absent: \['nope'\]"),
])
def test_options_that_would_be_ignored_are_refused(population, kwargs, match):
    with pytest.raises(ValueError, match=match):
        privaudit.audit_generator(copier, population, **{**GAME, **kwargs})


@pytest.mark.parametrize("builtin, params, unknown", [
    ("copying", {"domain": None}, "['domain']"),  # only dp-bayes takes a domain
    ("gaussian-copula", {"epsilon": 1.0}, "['epsilon']"),
    ("dp-bayes", {"epsilon": 1.0, "degre": 2}, "['degre']"),
])
def test_a_builtin_generator_parameter_it_does_not_take_is_refused(population, builtin,
                                                                   params, unknown):
    with pytest.raises(ValueError, match=rf"generator_params.*{builtin!r}.*unknown: "
                                         rf"{re.escape(unknown)}"):
        privaudit.audit_generator(builtin, population, generator_params=params, **GAME)


def test_repeated_target_records_are_refused(population):
    targets = population.iloc[[5, 6, 5]]
    with pytest.raises(ValueError, match=r"targets.*positions \[2\] repeat"):
        privaudit.audit_generator(copier, population.iloc[10:], targets=targets, **GAME)


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_generator_returning_another_number_of_rows_is_refused(population, delta):
    def wrong_size(train, n_rows, *, random_state):
        return train.sample(n_rows + delta, replace=True, random_state=0)

    with pytest.raises(ValueError, match=rf"wrong_size returned {60 + delta} rows; "
                                         r"n_synthetic_rows asked for 60"):
        privaudit.audit_generator(wrong_size, population, targets=[0], **GAME)


def test_a_cached_audit_reads_each_table_once(population, tmp_path, monkeypatch):
    loads = []
    original = GeneratorRecipe.load
    monkeypatch.setattr(GeneratorRecipe, "load",
                        lambda self, path: loads.append(path) or original(self, path))
    game = {**GAME, "attacks": ["closest-distance", "local-neighbourhood", "domias"]}
    first = privaudit.audit_generator(copier, population, n_targets=2, cache_dir=tmp_path,
                                      **game)
    assert len(loads) == 12  # 6 shadow + 6 test tables, read once for three attacks
    loads.clear()
    again = privaudit.audit_generator(copier, population, n_targets=2, cache_dir=tmp_path,
                                      **game)
    assert len(loads) == 12
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)


def test_the_distance_cache_is_keyed_by_content(population, monkeypatch):
    tables = [population.sample(50, random_state=i).reset_index(drop=True) for i in range(3)]
    distances = TargetDistances(population.iloc[:2], population)
    first = distances.many(tables)
    blocks = []
    monkeypatch.setattr(TargetDistances, "_block",
                        lambda self, block: blocks.append(block) or [])
    copies = [t.copy() for t in tables]  # the same tables read again: other objects
    assert distances.many(copies) is first and blocks == []
    changed = [t.copy() for t in tables]
    changed[1].loc[0, "age"] = -5  # another content: computed again
    distances.many(changed)
    assert len(blocks) == 1
    assert attack_base.table_digest(changed[1]) != attack_base.table_digest(tables[1])


def test_a_generator_object_returning_fewer_rows_is_refused_naming_its_class(population):
    class ShortTapas(TapasCopier):
        def generate(self, num_samples, random_state=None):
            return self.data.iloc[:num_samples // 2]

    with pytest.raises(ValueError, match=r"ShortTapas returned 30 rows; n_synthetic_rows "
                                         r"asked for 60"):
        privaudit.audit_generator(ShortTapas(), population, targets=[0], **GAME)
