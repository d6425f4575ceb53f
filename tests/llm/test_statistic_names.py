"""The LLM engine speaks the one vocabulary (issue 21): kebab-case statistic names in and
out; the previous names and MIMIR's aliases accepted with one FutureWarning per call, for
the same numbers; an unknown name refused once, listing the valid ones."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privaudit
from conftest import corpus, make_model
from privaudit._validation import RENAMED_ATTACKS
from privaudit.llm import STATISTICS, score_texts
from privaudit.llm._frame import PREVIOUS_COLUMNS
from privaudit.llm._score import _check_names

TEXTS = corpus(10, seed=21)
PREFIX = "The holdout text was on the forget data."

#: Every name the engine accepts besides its own, and the statistic it means.
OLD_NAMES = {old: new for old, new in RENAMED_ATTACKS.items() if new in STATISTICS}


def test_the_accepted_names_are_the_previous_columns_and_mimirs_aliases():
    assert OLD_NAMES == {"min_k": "min-k", "min_k_plus_plus": "min-k-plus-plus",
                         "dc_pdd": "dc-pdd", "min_k++": "min-k-plus-plus",
                         "min-k++": "min-k-plus-plus", "ref": "reference"}
    assert all(n == n.lower() and "_" not in n and "+" not in n for n in STATISTICS)
    # The audit's registry and the engine name the statistics alike, in the same order.
    assert privaudit.audits.LLM_STATISTICS == STATISTICS
    assert set(PREVIOUS_COLUMNS.items()) <= set(OLD_NAMES.items())


@pytest.fixture(scope="module")
def inputs(tiny_model, tiny_tokenizer):
    """Every statistic's input, so that any name can be asked for."""
    return {"reference_model": make_model(tiny_tokenizer, seed=4),
            "token_frequencies": np.arange(len(tiny_tokenizer)) % 7,
            "recall_prefix": PREFIX, "batch_size": 4}


@pytest.fixture(scope="module")
def every_statistic(tiny_model, tiny_tokenizer, inputs):
    """Every statistic of TEXTS, asked for by its name in the one vocabulary."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new names never warn
        return score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=STATISTICS, **inputs)


def test_the_output_is_named_by_the_new_names_in_the_order_asked(every_statistic):
    assert tuple(every_statistic.columns) == STATISTICS
    assert every_statistic.dtypes.eq(np.float64).all()
    assert np.isfinite(every_statistic.to_numpy()).all()


@pytest.mark.parametrize(("old", "new"), sorted(OLD_NAMES.items()))
def test_each_old_name_and_alias_warns_once_and_gives_the_new_column(
        tiny_model, tiny_tokenizer, inputs, every_statistic, old, new):
    with pytest.warns(FutureWarning, match=re.escape(f"'{old}' -> '{new}'")) as seen:
        frame = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=["loss", old],
                            **inputs)
    assert [w.category for w in seen] == [FutureWarning]
    assert seen[0].filename == __file__  # the warning points at the caller
    assert list(frame.columns) == ["loss", new]
    np.testing.assert_array_equal(frame[new].to_numpy(), every_statistic[new].to_numpy())


def test_old_and_new_names_give_the_same_frame(tiny_model, tiny_tokenizer, inputs):
    old = ["loss", "min_k", "min_k_plus_plus", "zlib", "dc_pdd", "ref", "min_k++"]
    with pytest.warns(FutureWarning) as seen:
        from_old = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=old, **inputs)
    assert len(seen) == 1  # one warning for the call, naming every old name
    assert all(f"'{name}'" in str(seen[0].message) for name in old if name in OLD_NAMES)
    new = ["loss", "min-k", "min-k-plus-plus", "zlib", "dc-pdd", "reference"]
    from_new = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=new, **inputs)
    pd.testing.assert_frame_equal(from_old, from_new)  # the repeat Min-K++ is dropped


def test_old_names_over_workers_warn_once_with_the_numbers_of_one_process(
        tiny_model, tiny_tokenizer, every_statistic):
    from privaudit.training import LocalExecutor

    with pytest.warns(FutureWarning) as seen:
        frame = score_texts(tiny_model, tiny_tokenizer, TEXTS, attacks=["min_k", "dc_pdd"],
                            token_frequencies=np.arange(len(tiny_tokenizer)) % 7,
                            batch_size=4, executor=LocalExecutor(n_jobs=1))
    assert len(seen) == 1 and list(frame.columns) == ["min-k", "dc-pdd"]
    np.testing.assert_allclose(frame.to_numpy(), every_statistic[["min-k", "dc-pdd"]],
                               rtol=1e-6)


@pytest.mark.parametrize("read", [
    lambda f: f["min_k"], lambda f: f.min_k, lambda f: f.get("min_k"),
    lambda f: f[["loss", "min_k"]]["min-k"],
])
def test_a_column_read_by_its_previous_name_answers_with_a_warning(every_statistic, read):
    with pytest.warns(FutureWarning, match="'min_k' -> 'min-k'") as seen:
        column = read(every_statistic)
    assert len(seen) == 1 and seen[0].filename == __file__
    np.testing.assert_array_equal(column.to_numpy(), every_statistic["min-k"].to_numpy())


def test_only_the_returned_frame_answers_previous_names(every_statistic):
    # Derived frames are plain pandas: the old names are not carried further.
    derived = every_statistic.copy()
    assert type(derived) is pd.DataFrame
    with pytest.raises(KeyError):
        derived["min_k"]
    with pytest.raises(KeyError), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # an unknown name: no warning
        every_statistic["min_kk"]
    with pytest.raises(AttributeError):
        every_statistic.not_a_column  # noqa: B018
    assert every_statistic.get("nope") is None


@pytest.mark.parametrize("attacks", [
    ["perplexity"], ["loss", "min_kk"], ["min-k-plus"], ["Min-K"], ["ne"],
    [5], [["loss"]], "zlibb", [], 5,
])
def test_an_unknown_name_is_one_error_listing_the_valid_names(tiny_model, tiny_tokenizer,
                                                              attacks):
    with pytest.raises((ValueError, TypeError)) as caught:
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], attacks=attacks)
    message = str(caught.value)
    assert "'attacks' parameter of score_texts" in message
    assert all(f"'{name}'" in message for name in STATISTICS)


def test_an_unknown_name_beside_an_old_one_is_refused_after_the_warning(
        tiny_model, tiny_tokenizer):
    with pytest.warns(FutureWarning, match="'min_k'"), pytest.raises(ValueError,
                                                                     match="'min_kk'"):
        score_texts(tiny_model, tiny_tokenizer, TEXTS[:2], attacks=["min_k", "min_kk"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*STATISTICS, *OLD_NAMES]), min_size=1, max_size=10))
def test_any_mix_of_names_reads_as_the_new_names_in_order(names):
    expected = tuple(dict.fromkeys(OLD_NAMES.get(n, n) for n in names))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert _check_names(names) == expected
        assert _check_names(tuple(names)) == _check_names(iter(names)) == expected
    olds = any(n in OLD_NAMES for n in names)
    assert [w.category for w in seen] == [FutureWarning] * (3 if olds else 0)


def test_the_audit_takes_mimirs_aliases_for_the_same_results(tiny_model, tiny_tokenizer,
                                                             inputs):
    args = {"members": TEXTS[:5], "non_members": corpus(5, seed=22),
            "reference_model": inputs["reference_model"], "blind_baseline": False,
            "subgroups": False}
    target = (tiny_model, tiny_tokenizer)
    with pytest.warns(FutureWarning, match="'ref' -> 'reference'") as seen:
        old = privaudit.audit_llm(target, attacks=["min_k++", "ref"], **args)
    assert sum(issubclass(w.category, FutureWarning) for w in seen) == 1
    new = privaudit.audit_llm(target, attacks=["min-k-plus-plus", "reference"], **args)
    assert [r.attack for r in old] == [r.attack for r in new] == [
        "min-k-plus-plus", "reference"]
    for a, b in zip(old, new, strict=True):
        np.testing.assert_array_equal(a.raw_statistic, b.raw_statistic)
