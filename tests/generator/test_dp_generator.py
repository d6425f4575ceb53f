"""The built-in generators' public domain and the epsilon-DP Bayesian network."""

import math

import numpy as np
import pandas as pd
import pytest

from privaudit.exceptions import PrivauditWarning
from privaudit.synthetic import (
    BUILTIN_GENERATORS,
    DPBayesianNetwork,
    TableDomain,
    builtin_generator,
)

PUBLIC = pd.DataFrame({
    "age": np.arange(20, 80),
    "smoker": ["yes", "no", None] * 20,
    "income": np.r_[np.nan, np.linspace(0.0, 1.0, 59)],
    "flag": [True, False] * 30,
})


def test_the_domain_bins_wide_numbers_and_lists_everything_else():
    domain = TableDomain.from_frame(PUBLIC, bins=4)
    assert domain.columns == ("age", "smoker", "income", "flag")
    assert set(domain.edges) == {"age", "income"}
    np.testing.assert_allclose(domain.edges["age"], [20, 34.75, 49.5, 64.25, 79])
    assert domain.categories["smoker"] == ("yes", "no", None)
    assert domain.integral == {"age"} and domain.missing == {"income"}
    assert domain.sizes == [4, 3, 5, 2]  # income: 4 bins and its missing cell


def test_encoding_by_hand_and_back_into_the_same_cells():
    domain = TableDomain.from_frame(PUBLIC, bins=4)
    rows = pd.DataFrame({"age": [20, 35, 79, 200], "smoker": ["no", None, "yes", "no"],
                         "income": [np.nan, 0.3, 1.0, -5.0], "flag": [False, True, True, False]})
    codes = domain.encode(rows)
    # age 200 and income -5 fall in the end bins; a missing income in its own cell.
    np.testing.assert_array_equal(codes, [[0, 1, 4, 1], [1, 2, 1, 0], [3, 0, 3, 0],
                                          [3, 1, 0, 1]])
    back = domain.decode(codes, np.random.default_rng(0))
    np.testing.assert_array_equal(domain.encode(back), codes)
    assert back["age"].dtype == np.int64 and math.isnan(back["income"][0])


def test_values_outside_the_domain_are_refused_by_name_or_put_in_an_extra_cell():
    domain = TableDomain.from_frame(PUBLIC)
    rows = PUBLIC.iloc[:2].copy()
    rows.loc[0, "smoker"] = "sometimes"
    with pytest.raises(ValueError, match=r"train\['smoker'\].*sometimes"):
        domain.encode(rows)
    assert domain.encode(rows, unknown="extra")[0, 1] == 3
    no_gaps = TableDomain.from_frame(PUBLIC.drop(columns="income").dropna())
    with pytest.raises(ValueError, match="smoker"):
        no_gaps.encode(PUBLIC.drop(columns="income"))


def test_a_huge_epsilon_reproduces_the_joint_distribution_of_a_chain():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 4000)
    b = (a + (rng.random(4000) < 0.1)) % 3  # b follows a
    train = pd.DataFrame({"a": a.astype(str), "b": b.astype(str)})
    domain = TableDomain.from_frame(train)
    out = DPBayesianNetwork(epsilon=1e6, domain=domain)(train, 20000, random_state=1)
    joint = pd.crosstab(out["a"], out["b"], normalize=True)
    expected = pd.crosstab(train["a"], train["b"], normalize=True)
    np.testing.assert_allclose(joint.to_numpy(), expected.to_numpy(), atol=0.01)
    marginals = DPBayesianNetwork(epsilon=1e6, degree=0, domain=domain)(train, 20000,
                                                                        random_state=1)
    independent = pd.crosstab(marginals["a"], marginals["b"], normalize=True).to_numpy()
    np.testing.assert_allclose(independent, np.outer(independent.sum(1), independent.sum(0)),
                               atol=0.01)


def test_the_noise_is_laplace_of_scale_two_d_over_epsilon():
    train = pd.DataFrame({"a": ["x", "y", "y"], "b": ["u", "u", "v"]})
    domain = TableDomain.from_frame(train)
    generator = DPBayesianNetwork(epsilon=0.5, domain=domain)
    conditionals = generator._noisy_conditionals(domain.encode(train), domain.sizes,
                                                 np.random.default_rng(3))
    noise = np.random.default_rng(3)
    scale = 2 * 2 / 0.5
    root = np.maximum(np.array([[1.0, 2.0]]) + noise.laplace(0, scale, (1, 2)), 0)
    pair = np.maximum(np.array([[1.0, 0.0], [1.0, 1.0]]) + noise.laplace(0, scale, (2, 2)), 0)
    expected_root = root / root.sum() if root.sum() else np.full((1, 2), 0.5)
    np.testing.assert_allclose(conditionals[0], expected_root)
    rows = pair.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(conditionals[1],
                               np.where(rows > 0, pair / np.where(rows > 0, rows, 1), 0.5))


def test_same_seed_same_table_and_a_domain_read_from_training_data_is_a_warning():
    generator = DPBayesianNetwork(epsilon=1.0, domain=TableDomain.from_frame(PUBLIC))
    first = generator(PUBLIC, 50, random_state=7)
    pd.testing.assert_frame_equal(first, generator(PUBLIC, 50, random_state=7))
    with pytest.warns(PrivauditWarning, match="public domain"):
        DPBayesianNetwork(epsilon=1.0)(PUBLIC, 5, random_state=0)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0}, "epsilon"), ({"epsilon": math.inf}, "epsilon"),
    ({"epsilon": True}, "epsilon"), ({"degree": 2}, "degree"), ({"domain": {}}, "domain"),
    ({"bins": 1}, "bins"),
])
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        DPBayesianNetwork(**kwargs)


def test_every_builtin_makes_a_table_of_the_training_columns():
    domain = TableDomain.from_frame(PUBLIC)
    for name in BUILTIN_GENERATORS:
        generator = builtin_generator(name, domain=domain if name == "dp-bayes" else None)
        out = generator(PUBLIC, 30, random_state=0)
        assert list(out.columns) == list(PUBLIC.columns) and len(out) == 30
    with pytest.raises(ValueError, match="generator"):
        builtin_generator("ctgan")
