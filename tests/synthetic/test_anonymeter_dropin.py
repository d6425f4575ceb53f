"""Issue 19: anonymeter scripts run unchanged on privaudit's evaluators; tiny and
degenerate tables stop early with a warning or a message in the user's terms; n_jobs
changes no number and starts no worker where workers would not pay."""

import time
import warnings

import numpy as np
import pandas as pd
import pytest

from privaudit import audit_synthetic
from privaudit._validation import DegenerateInputWarning
from privaudit.synthetic import (
    InferenceEvaluator,
    LinkabilityEvaluator,
    SinglingOutEvaluator,
    copying_generator,
)
from privaudit.synthetic._neighbors import PARALLEL_MIN_DISTANCES, worth_workers

#: An anonymeter user's script, as anonymeter's documentation writes it.
ANONYMETER_SCRIPT = """
from anonymeter.evaluators import (InferenceEvaluator, LinkabilityEvaluator,
                                   SinglingOutEvaluator)

out = {}
so = SinglingOutEvaluator(ori=ori, syn=syn, control=ctl, n_attacks=50, n_cols=2,
                          max_attempts=100000, seed=3)
so.evaluate(mode="multivariate")
risk = so.risk(confidence_level=0.9)
out["so"] = (risk.value, risk.ci)
res = so.results(confidence_level=0.9)
out["so_rates"] = (res.attack_rate.value, res.attack_rate.error, res.control_rate.value,
                   res.baseline_rate.value, res.n_success, res.n_baseline, res.n_control)
out["so_baseline"] = so.risk(baseline=True).ci
so_uni = SinglingOutEvaluator(ori=ori, syn=syn, n_attacks=20).evaluate(mode="univariate")
out["so_uni"] = so_uni.risk().value
link = LinkabilityEvaluator(ori=ori, syn=syn, aux_cols=(["age", "city"], ["income"]),
                            n_attacks=40, n_neighbors=5, control=ctl)
link.evaluate(n_jobs=-2)
out["link"] = link.risk(n_neighbors=1).ci
out["link_res"] = link.results(n_neighbors=5).risk(baseline=False).value
inf = InferenceEvaluator(ori=ori, syn=syn, aux_cols=["age", "income"], secret="city",
                         regression=False, n_attacks=1000, control=ctl)
inf.evaluate(n_jobs=-2)
out["inf"] = inf.risk().ci
out["inf_res"] = inf.results(confidence_level=0.99).risk(baseline=True).value
"""


def _tables():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 80, 400),
                          "income": rng.lognormal(10, 1, 400).round(-2),
                          "city": rng.choice(list("abcdefg"), 400)})
    ori, ctl = frame.iloc[:200].reset_index(drop=True), frame.iloc[200:].reset_index(drop=True)
    return ori, copying_generator(ori, 200, copy_fraction=0.5, random_state=1), ctl


def test_an_anonymeter_script_runs_unchanged_on_privaudits_evaluators():
    import privaudit.synthetic as ours

    ori, syn, ctl = _tables()
    script = ANONYMETER_SCRIPT.replace("from anonymeter.evaluators import",
                                       "from privaudit.synthetic import")
    namespace = {"ori": ori, "syn": syn, "ctl": ctl}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(script, "anonymeter_script.py", "exec"), namespace)
    out = namespace["out"]
    value, (low, high) = out["so"]
    assert 0 <= low <= value <= high <= 1
    assert out["so_rates"][0] > out["so_rates"][2]  # half the rows copied: a leak
    assert out["so_rates"][4] >= out["so_rates"][6]
    assert len(out["link"]) == 2 and len(out["inf"]) == 2
    # The inference asked 1,000 attacks of 200-row tables: all rows, as anonymeter.
    assert namespace["inf"].results().n_attacks == 200
    assert isinstance(namespace["so"], ours.SinglingOutEvaluator)
    # risk() is both anonymeter's (value, ci) and privaudit's (value, low, high).
    risk = namespace["so"].risk()
    assert risk.ci == (risk.low, risk.high)


def test_anonymeter_seed_is_random_state_and_both_is_refused():
    ori, syn, _ = _tables()
    a = SinglingOutEvaluator(ori, syn, n_attacks=30, n_cols=2, seed=5).evaluate()
    b = SinglingOutEvaluator(ori, syn, n_attacks=30, n_cols=2, random_state=5).evaluate()
    assert a.results() == b.results()
    with pytest.raises(ValueError, match=r"'seed'.*random_state"):
        SinglingOutEvaluator(ori, syn, seed=1, random_state=2)


@pytest.mark.parametrize("n_jobs", [1, 2, -1, -2])
def test_n_jobs_changes_no_number_and_starts_no_pool_for_small_tables(monkeypatch, n_jobs):
    import privaudit.training as training

    def no_pool(*args, **kwargs):
        raise AssertionError("a worker pool was started for a scan it cannot pay for")

    monkeypatch.setattr(training, "get_executor", no_pool)
    ori, syn, ctl = _tables()
    base = LinkabilityEvaluator(ori, syn, aux_cols=(["age"], ["income", "city"]),
                                n_attacks=50, n_neighbors=3, control=ctl,
                                random_state=0).evaluate().results()
    got = LinkabilityEvaluator(ori, syn, aux_cols=(["age"], ["income", "city"]), n_attacks=50,
                               n_neighbors=3, control=ctl, random_state=0
                               ).evaluate(n_jobs=n_jobs).results()
    assert got == base
    inf = [InferenceEvaluator(ori, syn, aux_cols=["age", "income"], secret="city",
                              n_attacks=50, control=ctl, random_state=0
                              ).evaluate(n_jobs=j).results() for j in (None, n_jobs)]
    assert inf[0] == inf[1]


def test_workers_only_where_they_pay():
    assert not worth_workers(PARALLEL_MIN_DISTANCES - 1, None, 2)
    assert worth_workers(PARALLEL_MIN_DISTANCES, None, 2)
    assert not worth_workers(10**12, None, 1)
    assert worth_workers(1, object(), None)  # the caller's executor: its workers are up


def test_workers_give_the_same_numbers():
    from privaudit.training import LocalExecutor

    ori, syn, ctl = _tables()
    kw = {"aux_cols": (["age"], ["income", "city"]), "n_attacks": 60, "n_neighbors": 2,
          "control": ctl, "random_state": 4}
    with LocalExecutor(n_jobs=2) as pool:
        parallel = LinkabilityEvaluator(ori, syn, executor=pool, **kw).evaluate().results()
    assert parallel == LinkabilityEvaluator(ori, syn, **kw).evaluate().results()


@pytest.mark.parametrize("extra", [{}, {"const": 1.0}, {"empty": np.nan}])
def test_a_two_row_synthetic_table_stops_early_with_a_warning(extra):
    """Issue 19: 10,000,000 candidate queries for minutes; now every (row, column set)
    is tried once and the search stops when no new query can be written."""
    ori, _, ctl = _tables()
    ori, ctl = ori.assign(**extra), ctl.assign(**extra)
    syn = ori.iloc[:2]
    start = time.perf_counter()
    with pytest.warns(DegenerateInputWarning, match="only .* distinct multivariate queries"):
        ev = SinglingOutEvaluator(ori, syn, n_attacks=500, n_cols=2, control=ctl,
                                  random_state=0).evaluate()
    assert time.perf_counter() - start < 10
    columns = ori.shape[1]
    assert 1 <= ev.results().extra["n_queries"] <= 2 * columns * (columns - 1) // 2
    assert ev.results().n_attacks == 500  # the denominator stays n_attacks, as anonymeter's


def test_exhaustive_search_finds_every_singling_out_query():
    """A small space is enumerated: every (row, column set) that singles out is found."""
    ori, syn, _ = _tables()
    syn = syn.iloc[:30]
    ev = SinglingOutEvaluator(ori, syn, n_attacks=500, n_cols=2, random_state=0)
    with pytest.warns(DegenerateInputWarning):
        ev.evaluate()
    from privaudit.synthetic._risk_singling_out import _Columns, _record_query, count_matches

    cols, medians = _Columns(ev.syn), ev.syn.median(numeric_only=True).to_dict()
    pairs = [("age", "city"), ("age", "income"), ("city", "income")]
    every = {_record_query(cols, r, list(p), medians) for r in range(cols.n) for p in pairs}
    singling = {q for q in every if count_matches(cols, [q])[0] == 1}
    assert set(ev._queries) == singling


@pytest.mark.parametrize(("tables", "message"), [
    ({"synthetic": 2}, "The synthetic table has 2 rows; linkability needs at least 10"),
    ({"original": 1, "check": "nndr"}, "The original table has 1 row; nndr needs at least 2"),
    ({"original": 1, "check": "dcr"}, "The original table has 1 row; dcr needs at least 2"),
    ({"synthetic": 3, "check": "distinguishability"},
     "The synthetic table has 3 rows; distinguishability needs at least 5"),
])
def test_tables_too_small_for_a_check_are_refused_in_the_users_terms(tables, message):
    ori, syn, ctl = _tables()
    check = tables.get("check", "linkability")
    syn = syn.iloc[:tables.get("synthetic", len(syn))]
    ori = ori.iloc[:tables.get("original", len(ori))]
    with pytest.raises(ValueError, match=message):
        audit_synthetic(syn, ori, holdout=ctl, checks=[check])


def test_infinite_values_name_the_table_and_column():
    ori, syn, ctl = _tables()
    syn = syn.assign(income=syn["income"].astype(float))
    syn.loc[7, "income"] = -np.inf
    with pytest.raises(ValueError, match=r"synthetic table's column 'income' holds infinite "
                                          r"values .*row 7"):
        audit_synthetic(syn, ori, holdout=ctl, checks=["exact_matches"])
