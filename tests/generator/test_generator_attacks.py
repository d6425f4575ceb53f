"""The generator attacks: exact distances, hand-worked features, and what each one sees."""

import numpy as np
import pandas as pd
import pytest

from privaudit.attacks.generator import (
    GENERATOR_ATTACKS,
    ClosestDistanceAttack,
    DensityRatioAttack,
    GroundhogAttack,
    LocalNeighbourhoodAttack,
    TargetDistances,
    _base,
    best_thresholds,
    get_generator_attack,
    table_features,
)
from privaudit.metrics import roc_auc
from privaudit.synthetic import TableDomain, independent_marginals, nearest_neighbors
from privaudit.training import GeneratorRuns

RNG = np.random.default_rng(0)
POPULATION = pd.DataFrame({"a": RNG.normal(size=600), "b": RNG.integers(0, 4, 600),
                           "c": RNG.choice(["u", "v", "w"], 600)})
OUTLIERS = pd.DataFrame({"a": [6.0, -5.5], "b": [3, 0], "c": ["u", "w"]})


def reference_gower(target, row, ranges, categorical):
    """One pair, straight from the definition (both missing = equal)."""
    total = 0.0
    for column, span in ranges.items():
        x, y = target[column], row[column]
        if pd.isna(x) or pd.isna(y):
            total += 0.0 if pd.isna(x) and pd.isna(y) else 1.0
        elif column in categorical:
            total += float(x != y)
        else:
            total += abs(x - y) / span
    return total / len(ranges)


def test_target_distances_are_the_definition_and_the_engine_on_one_scale():
    aux = POPULATION.iloc[:300]
    table = POPULATION.iloc[300:340].reset_index(drop=True)
    table.loc[3, "a"] = np.nan
    distances = TargetDistances(OUTLIERS, aux)(table)
    ranges = {c: float(np.ptp(aux[c])) if c != "c" else 1.0 for c in aux.columns}
    expected = [[reference_gower(t, r, ranges, {"c"}) for _, r in table.iterrows()]
                for _, t in OUTLIERS.iterrows()]
    np.testing.assert_allclose(distances, expected, atol=1e-8)
    nearest, _ = nearest_neighbors(OUTLIERS, table, categorical=["c"], fit_frames=[aux])
    np.testing.assert_allclose(distances.min(axis=1), nearest[:, 0], atol=1e-8)


def test_tables_in_blocks_give_the_same_distances_and_repeated_lists_are_not_recomputed(
        monkeypatch):
    tables = [POPULATION.iloc[i:i + 50] for i in range(0, 300, 50)]
    whole = TargetDistances(OUTLIERS, POPULATION).many(tables)
    monkeypatch.setattr(_base, "_BLOCK_ELEMENTS", 150)  # 75 rows per block: one table
    _base._MEMO.clear()
    blocked = TargetDistances(OUTLIERS, POPULATION).many(tables)
    for a, b in zip(whole, blocked, strict=True):
        np.testing.assert_array_equal(a, b)
    assert TargetDistances(OUTLIERS, POPULATION).many(tables) is blocked


def test_best_thresholds_against_every_cut():
    scores = RNG.normal(size=(40, 3))
    labels = RNG.random((40, 3)) < 0.5
    cuts = best_thresholds(scores, labels)
    for t in range(3):
        best = max(np.mean((scores[:, t] >= c) == labels[:, t])
                   for c in np.r_[scores[:, t], np.inf])
        assert np.mean((scores[:, t] >= cuts[t]) == labels[:, t]) == best


def test_features_worked_by_hand():
    table = pd.DataFrame({"n": [1.0, 2.0, 3.0, np.nan], "k": ["x", "y", "x", "x"]})
    domain = TableDomain.from_frame(pd.DataFrame({"n": np.arange(11.0), "k": ["x", "y"] * 5
                                                  + ["x"]}), bins=2)
    features = table_features(table, domain)
    naive = [2.0, np.std([1, 2, 3]), 2.0, 1.0, 3.0, 0.25]
    histogram = [0.75, 0.0, 0.25, 0.75, 0.25, 0.0]  # n: 2 bins + outside; k: x, y, outside
    codes = np.array([[0, 0], [0, 1], [0, 0], [2, 0]])
    correlation = [np.corrcoef(codes, rowvar=False)[0, 1]]
    np.testing.assert_allclose(features, naive + histogram + correlation)
    only = table_features(table, domain, ["histogram"])
    np.testing.assert_allclose(only, histogram)


def leaky(train, n_rows, *, random_state):
    """Copies every training row: the target is in the output iff it trained it."""
    rng = np.random.default_rng(random_state)
    return train.iloc[rng.permutation(len(train))[:n_rows]].reset_index(drop=True)


def shifted_max(train, n_rows, *, random_state):
    """Independent marginals, but the largest 'a' of the training set is published."""
    out = independent_marginals(train, n_rows, random_state=random_state)
    out.loc[0, "a"] = train["a"].max()
    return out


@pytest.fixture(scope="module")
def games():
    def game(generator, seed):
        return GeneratorRuns(generator, POPULATION.iloc[:500], OUTLIERS, n_runs=40,
                             n_train_rows=60, random_state=seed).run()
    return {name: (game(g, 0), game(g, 1)) for name, g in
            (("leaky", leaky), ("max", shifted_max), ("safe", independent_marginals))}


def aucs(attack, train, test):
    attack.fit(list(train.synthetic_), train.in_mask_, OUTLIERS,
               auxiliary_data=POPULATION.iloc[:500], reference_data=POPULATION.iloc[500:])
    scores = attack.score(list(test.synthetic_))
    assert scores.shape == (test.n_runs, 2)
    guesses = attack.predict(list(test.synthetic_))
    assert guesses.dtype == bool and guesses.shape == scores.shape
    return [roc_auc(test.in_mask_[:, t], scores[:, t]) for t in range(2)]


@pytest.mark.parametrize("name", list(GENERATOR_ATTACKS))
def test_every_attack_sees_a_copied_outlier(games, name):
    assert min(aucs(get_generator_attack(name, **(
        {"random_state": 0} if name == "groundhog" else {})), *games["leaky"])) > 0.9


def test_groundhog_reads_a_published_maximum_that_distances_barely_see(games):
    groundhog = aucs(GroundhogAttack(random_state=0), *games["max"])
    assert groundhog[0] > 0.9  # the first outlier has the largest 'a'


def test_no_attack_finds_what_independent_marginals_cannot_hold(games):
    for attack in (ClosestDistanceAttack(), LocalNeighbourhoodAttack(), DensityRatioAttack()):
        # marginals resample each column: an outlier's 'a' comes back alone, so the
        # distance attacks see a little; far from a copied record's certainty.
        assert max(aucs(attack, *games["safe"])) < 0.9


def test_the_density_attack_needs_reference_data_and_seeds_make_groundhog_repeat(games):
    train, test = games["leaky"]
    with pytest.raises(ValueError, match="reference_data"):
        DensityRatioAttack().fit(list(train.synthetic_), train.in_mask_, OUTLIERS,
                                 auxiliary_data=POPULATION)
    first = GroundhogAttack(random_state=3).fit(list(train.synthetic_), train.in_mask_,
                                                OUTLIERS, auxiliary_data=POPULATION)
    second = GroundhogAttack(random_state=3).fit(list(train.synthetic_), train.in_mask_,
                                                 OUTLIERS, auxiliary_data=POPULATION)
    np.testing.assert_array_equal(first.score(list(test.synthetic_)),
                                  second.score(list(test.synthetic_)))


def test_bad_input_is_named(games):
    train, _ = games["leaky"]
    with pytest.raises(ValueError, match="labels"):
        ClosestDistanceAttack().fit(list(train.synthetic_), train.in_mask_[:, :1], OUTLIERS,
                                    auxiliary_data=POPULATION)
    with pytest.raises(ValueError, match="feature_sets"):
        GroundhogAttack(feature_sets=["moments"]).fit(list(train.synthetic_), train.in_mask_,
                                                      OUTLIERS, auxiliary_data=POPULATION)
    with pytest.raises(ValueError, match="radius"):
        LocalNeighbourhoodAttack(radius=2.0).fit(list(train.synthetic_), train.in_mask_,
                                                 OUTLIERS, auxiliary_data=POPULATION)
    with pytest.raises(ValueError, match="attacks"):
        get_generator_attack("tapas")
    with pytest.raises(Exception, match="not fitted"):
        ClosestDistanceAttack().score(list(train.synthetic_))
