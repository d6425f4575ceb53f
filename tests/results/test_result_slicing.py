from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import privaudit.metrics as pm
from privaudit.exceptions import DegenerateInputWarning
from privaudit.results import AttackResult, fpr_key
from privaudit.results._slicing import SLICE_TYPES, slice_metrics, vulnerability_ranking

FPRS = (0.001, 0.01, 0.1)


def metric_columns(fprs: tuple[float, ...] = FPRS) -> list[str]:
    names = ["auc", "advantage", *(f"tpr_at_fpr_{fpr_key(f)}" for f in fprs)]
    return [c for name in names for c in (name, f"{name}_low", f"{name}_high")]


def random_audit(n: int = 300, seed: int = 0) -> dict[str, Any]:
    """A result with a real signal, plus class / correctness / loss / group attributes."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = rng.normal(0.8 * labels, 1.0)
    loss = np.round(-scores + rng.normal(0, 0.3, n), 1)  # rounded: ties across edges
    classes = rng.integers(0, 4, n)
    classes[:3] = 9  # a class of three records: too small
    sex = rng.choice(np.array(["f", "m", None], dtype=object), n)
    return {
        "result": AttackResult(labels=labels, scores=scores, attack="loss", target="model"),
        "by_class": classes,
        "correct": rng.random(n) < 0.7,
        "loss": loss,
        "groups": {"sex": sex},
    }


# ----------------------------------------------------------------------------- reference


def _sort_values(values: list[Any]) -> list[Any]:
    present = sorted({v for v in values if not pd.isna(v)})
    return present + ([math.nan] if any(pd.isna(v) for v in values) else [])


def reference_slice_metrics(
    result: AttackResult,
    *,
    by_class: Any = None,
    correct: Any = None,
    loss: Any = None,
    n_percentiles: int = 10,
    groups: dict[str, Any] | None = None,
    fprs: tuple[float, ...] = FPRS,
    n_bootstrap: int = 200,
    min_slice_size: int = 10,
    random_state: int = 0,
) -> list[dict[str, Any]]:
    """Slow and obvious: one Python mask per slice, metrics on the masked arrays."""
    n = result.n_records
    masks: list[tuple[str, Any, list[bool], float, float]] = [
        ("entire", "all", [True] * n, math.nan, math.nan)
    ]
    if by_class is not None:
        for value in _sort_values(list(by_class)):
            masks.append(("class", value, [c == value for c in by_class], math.nan, math.nan))
    if correct is not None:
        masks.append(("correctness", "correct", [bool(c) for c in correct], math.nan, math.nan))
        masks.append(("correctness", "incorrect", [not c for c in correct], math.nan,
                      math.nan))
    if loss is not None:
        edges = np.quantile(loss, np.linspace(0, 1, n_percentiles + 1))
        for k in range(n_percentiles):
            lo, hi = edges[k], edges[k + 1]
            last = k == n_percentiles - 1
            mask = [lo <= x < hi or (last and x == hi) for x in loss]
            label = f"[{k / n_percentiles:.2f}, {(k + 1) / n_percentiles:.2f}" + (
                "]" if last else ")")
            masks.append(("loss_percentile", label, mask, lo, hi))
    for name, values in (groups or {}).items():
        for value in _sort_values(list(values)):
            mask = [pd.isna(v) if pd.isna(value) else v == value for v in values]
            masks.append((name, value, mask, math.nan, math.nan))

    rng = np.random.default_rng(random_state)
    rows = []
    for slice_type, value, mask, lo, hi in masks:
        seed = int(rng.integers(2**63 - 1))
        m = np.array(mask)
        y, s = result.labels[m], result.scores[m]
        n1, n0 = int(y.sum()), int((1 - y).sum())
        row: dict[str, Any] = {"slice_type": slice_type, "slice_value": value,
                               "n_records": n1 + n0, "n_members": n1, "n_non_members": n0,
                               "loss_low": lo, "loss_high": hi}
        metrics = [("auc", pm.roc_auc), ("advantage", pm.advantage)] + [
            (f"tpr_at_fpr_{fpr_key(f)}", functools.partial(pm.tpr_at_fpr, fpr=f)) for f in fprs
        ]
        scored = n1 >= min_slice_size and n0 >= min_slice_size
        row["status"] = ("ok" if scored else "empty" if n1 + n0 == 0
                         else "one_class" if n1 == 0 or n0 == 0 else "too_small")
        for key, metric in metrics:
            if scored:
                est = pm.bootstrap_ci(metric, y, s, n_resamples=n_bootstrap,
                                      random_state=seed)
                row[key], row[f"{key}_low"], row[f"{key}_high"] = est
            else:
                row[key] = row[f"{key}_low"] = row[f"{key}_high"] = math.nan
        rows.append(row)
    return rows


def assert_rows_equal(frame: pd.DataFrame, rows: list[dict[str, Any]]) -> None:
    assert len(frame) == len(rows)
    for got, want in zip(frame.to_dict("records"), rows, strict=True):
        assert set(got) == set(want)
        for key, value in want.items():
            if isinstance(value, float) and math.isnan(value):
                assert pd.isna(got[key]), (want["slice_type"], want["slice_value"], key)
            else:
                assert got[key] == value, (want["slice_type"], want["slice_value"], key)


# ----------------------------------------------------------------------------- slice_metrics


def test_every_slice_equals_the_metrics_on_its_masked_records() -> None:
    audit = random_audit()
    kwargs = {k: audit[k] for k in ("by_class", "correct", "loss", "groups")}
    with pytest.warns(DegenerateInputWarning):
        frame = slice_metrics(audit["result"], **kwargs, n_bootstrap=40, min_slice_size=5,
                              random_state=3)
    rows = reference_slice_metrics(audit["result"], **kwargs, n_bootstrap=40,
                                   min_slice_size=5, random_state=3)
    assert_rows_equal(frame, rows)
    assert list(frame.columns[:6]) == ["slice_type", "slice_value", "n_records", "n_members",
                                       "n_non_members", "status"]
    assert list(frame.columns[6:-2]) == metric_columns()
    assert list(frame["slice_type"].unique()) == ["entire", "class", "correctness",
                                                  "loss_percentile", "sex"]


def test_entire_row_is_exactly_attack_result_metrics() -> None:
    result = random_audit(seed=1)["result"]
    frame = slice_metrics(result, n_bootstrap=100, random_state=7)
    metrics = result.metrics(fprs=FPRS, n_bootstrap=100, random_state=7)
    row = frame.iloc[0]
    assert (row["slice_type"], row["slice_value"], row["status"]) == ("entire", "all", "ok")
    for name in ("auc", "advantage"):
        assert [row[name], row[f"{name}_low"], row[f"{name}_high"]] == list(
            metrics[name].values())
    for f in FPRS:
        key = f"tpr_at_fpr_{fpr_key(f)}"
        assert [row[key], row[f"{key}_low"], row[f"{key}_high"]] == list(
            metrics["tpr_at_fpr"][fpr_key(f)].values())


def test_class_aucs_match_scikit_learn() -> None:
    audit = random_audit(n=400, seed=2)
    result, classes = audit["result"], audit["by_class"]
    with pytest.warns(DegenerateInputWarning):
        frame = slice_metrics(result, entire=False, by_class=classes, n_bootstrap=0)
    assert frame["slice_type"].eq("class").all()
    for row in frame.itertuples():
        mask = classes == row.slice_value
        if row.status == "ok":
            assert row.auc == pytest.approx(
                roc_auc_score(result.labels[mask], result.scores[mask]), abs=1e-12)
            assert math.isnan(row.auc_low) and math.isnan(row.auc_high)
        else:
            assert row.slice_value == 9 and math.isnan(row.auc)


def test_hand_worked_numbers() -> None:
    # Class "a": members score 3 and 1, non-members 2 and 0: member wins 3 of 4 pairs.
    # Class "b": member 5 between non-members 4 and 6: AUC 1/2; its best threshold (5)
    # catches the member with one false alarm: advantage 1 - 1/2 = 1/2.
    result = AttackResult(labels=[1, 1, 0, 0, 1, 0, 0], scores=[3, 1, 2, 0, 5, 4, 6])
    frame = slice_metrics(result, by_class=["a", "a", "a", "a", "b", "b", "b"],
                          n_bootstrap=0, min_slice_size=1, fprs=(0.0, 0.5))
    a = frame.set_index("slice_value").loc["a"]
    b = frame.set_index("slice_value").loc["b"]
    assert (a["auc"], a["advantage"], a["tpr_at_fpr_0.0"], a["tpr_at_fpr_0.5"]) == (
        0.75, 0.5, 0.5, 1.0)
    assert (b["auc"], b["advantage"], b["tpr_at_fpr_0.0"], b["tpr_at_fpr_0.5"]) == (
        0.5, 0.5, 0.0, 1.0)
    assert (b["n_members"], b["n_non_members"], b["n_records"]) == (1, 2, 3)


def test_one_class_slices_give_nan_and_a_single_warning() -> None:
    # Class 2 holds only members, class 3 only non-members: two degenerate slices.
    labels = np.array([1, 0] * 20 + [1, 1, 0, 0])
    scores = np.linspace(0, 1, labels.shape[0])
    classes = np.array([0, 1] * 10 + [1, 0] * 10 + [2, 2, 3, 3])
    result = AttackResult(labels=labels, scores=scores)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = slice_metrics(result, by_class=classes, n_bootstrap=20, min_slice_size=1)
    assert len(caught) == 1
    assert issubclass(caught[0].category, DegenerateInputWarning)
    message = str(caught[0].message)
    assert "2 of 5 slices" in message
    assert "class=2 (2 members, 0 non-members)" in message
    assert "class=3 (0 members, 2 non-members)" in message
    assert caught[0].filename == __file__  # points at the caller, not at privaudit
    by_value = frame.set_index("slice_value")
    for value in (2, 3):
        assert by_value.loc[value, "status"] == "one_class"
        assert by_value.loc[value, metric_columns()].isna().all()
    assert by_value.loc[[0, 1], "status"].eq("ok").all()
    assert by_value.loc[[0, 1], "auc"].notna().all()


def test_small_slices_are_flagged_not_scored() -> None:
    audit = random_audit(n=200, seed=4)
    with pytest.warns(DegenerateInputWarning, match=r"min_slice_size=40"):
        frame = slice_metrics(audit["result"], by_class=audit["by_class"], n_bootstrap=0,
                              min_slice_size=40)
    small = frame[["n_members", "n_non_members"]].min(axis=1) < 40
    assert small.any() and (~small).any()
    assert frame.loc[small, "status"].isin(["too_small", "one_class"]).all()
    assert frame.loc[small, "auc"].isna().all()
    assert frame.loc[~small, "status"].eq("ok").all()
    assert frame.loc[~small, "auc"].notna().all()


def test_no_warning_when_every_slice_is_scored() -> None:
    audit = random_audit(n=400, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = slice_metrics(audit["result"], correct=audit["correct"], n_bootstrap=20)
    assert frame["status"].eq("ok").all()
    assert list(frame["slice_value"]) == ["all", "correct", "incorrect"]


def test_correctness_slices_are_always_both_present() -> None:
    result = random_audit(n=100, seed=6)["result"]
    with pytest.warns(DegenerateInputWarning, match="correctness=incorrect"):
        frame = slice_metrics(result, entire=False, correct=np.ones(100, dtype=int),
                              n_bootstrap=0)
    assert list(frame["slice_value"]) == ["correct", "incorrect"]
    assert list(frame["status"]) == ["ok", "empty"]
    assert list(frame["n_records"]) == [100, 0]


@settings(max_examples=40, deadline=None)
@given(
    loss=st.lists(st.integers(0, 6), min_size=1, max_size=80),
    n_percentiles=st.integers(1, 12),
    seed=st.integers(0, 2**16),
)
def test_percentile_slices_partition_the_records(
    loss: list[int], n_percentiles: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, len(loss))
    result = AttackResult(labels=labels, scores=rng.normal(size=len(loss)))
    loss_arr = np.array(loss, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)
        frame = slice_metrics(result, entire=False, loss=loss_arr, n_percentiles=n_percentiles,
                              n_bootstrap=0, min_slice_size=1)
    assert len(frame) == n_percentiles
    assert frame["n_records"].sum() == len(loss)
    assert frame["n_members"].sum() == result.n_members
    assert frame["slice_value"].is_unique
    assert frame["slice_value"].iloc[-1].endswith("]")
    # Each record falls in exactly one bin, by the reference rule.
    edges = np.quantile(loss_arr, np.linspace(0, 1, n_percentiles + 1))
    np.testing.assert_array_equal(frame["loss_low"], edges[:-1])
    np.testing.assert_array_equal(frame["loss_high"], edges[1:])
    hits = np.zeros(len(loss), dtype=int)
    for k, row in enumerate(frame.itertuples()):
        inside = (loss_arr >= row.loss_low) & (
            (loss_arr < row.loss_high) | ((k == n_percentiles - 1) & (loss_arr == row.loss_high))
        )
        hits += inside
        assert row.n_records == inside.sum()
        assert row.n_members == labels[inside].sum()
        assert (row.status == "empty") == (row.n_records == 0)
    np.testing.assert_array_equal(hits, 1)


def test_percentile_labels() -> None:
    result = random_audit(n=60, seed=7)["result"]
    loss = np.arange(60.0)
    frame = slice_metrics(result, entire=False, loss=loss, n_percentiles=4, n_bootstrap=0,
                          min_slice_size=1)
    assert list(frame["slice_value"]) == ["[0.00, 0.25)", "[0.25, 0.50)", "[0.50, 0.75)",
                                          "[0.75, 1.00]"]
    assert list(frame["n_records"]) == [15, 15, 15, 15]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)
        fine = slice_metrics(result, entire=False, loss=loss, n_percentiles=200,
                             n_bootstrap=0)
    assert fine["slice_value"].is_unique
    assert fine["slice_value"].iloc[1] == "[0.005, 0.010)"


def test_groups_one_slice_per_value_in_mapping_order() -> None:
    audit = random_audit(n=300, seed=8)
    rng = np.random.default_rng(108)
    region = pd.Series(rng.choice(["north", "south"], 300), index=np.arange(300)[::-1])
    groups = {"sex": audit["groups"]["sex"], "region": region}
    frame = slice_metrics(audit["result"], entire=False, groups=groups, n_bootstrap=0)
    assert list(frame["slice_type"]) == ["sex"] * 3 + ["region"] * 2
    assert list(frame["slice_value"][:2]) == ["f", "m"]
    assert pd.isna(frame["slice_value"].iloc[2])  # missing values form their own slice
    # A Series is aligned by position, not by its index.
    north = (region == "north").to_numpy()
    row = frame[frame["slice_value"] == "north"].iloc[0]
    assert row["n_records"] == north.sum()
    assert row["auc"] == pm.roc_auc(audit["result"].labels[north], audit["result"].scores[north])
    sex = audit["groups"]["sex"]
    assert frame.iloc[2]["n_records"] == sum(v is None for v in sex)
    assert frame["n_records"].iloc[:3].sum() == 300


def test_same_seed_same_frame_and_attrs() -> None:
    audit = random_audit(seed=9)
    kwargs = {"by_class": audit["by_class"], "loss": audit["loss"], "n_bootstrap": 30,
              "min_slice_size": 5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)
        a = slice_metrics(audit["result"], random_state=11, **kwargs)
        b = slice_metrics(audit["result"], random_state=11, **kwargs)
        c = slice_metrics(audit["result"], random_state=12, **kwargs)
    pd.testing.assert_frame_equal(a, b)
    assert not a["auc_low"].equals(c["auc_low"])
    assert a["auc"].equals(c["auc"])  # point estimates do not depend on the seed
    assert a.attrs == {"attack": "loss on model", "fprs": list(FPRS), "n_bootstrap": 30,
                       "confidence": 0.95, "min_slice_size": 5}


def test_intervals_bracket_plausible_values() -> None:
    audit = random_audit(n=600, seed=10)
    frame = slice_metrics(audit["result"], correct=audit["correct"], n_bootstrap=100)
    for name in ("auc", "advantage"):
        assert (frame[f"{name}_low"] <= frame[f"{name}_high"]).all()
        assert (frame[f"{name}_low"] >= 0).all() and (frame[f"{name}_high"] <= 1).all()
    assert (frame["auc_low"] <= frame["auc"]).all() and (frame["auc"] <= frame["auc_high"]).all()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"by_class": [0, 1]}, ValueError,
         r"^The 'by_class' parameter of slice_metrics must be one value per audited record "
         r"\(6\)\. Got <length 2> instead\.$"),
        ({"by_class": np.zeros((6, 2))}, ValueError,
         "The 'by_class' parameter of slice_metrics must be a 1-D array"),
        ({"by_class": "aaaaaa"}, TypeError,
         "The 'by_class' parameter of slice_metrics must be an array with one value"),
        ({"correct": [0, 1, 2, 0, 1, 0]}, ValueError,
         "The 'correct' parameter of slice_metrics must be booleans or 0/1"),
        ({"correct": ["y"] * 6}, TypeError, "The 'correct' parameter of slice_metrics"),
        ({"loss": [0, 1, np.nan, 0, 1, 0]}, ValueError,
         "The 'loss' parameter of slice_metrics must be finite"),
        ({"loss": [0.0, 1.0]}, ValueError,
         r"The 'loss' parameter of slice_metrics must be one value per audited record \(6\)"),
        ({"loss": np.arange(6.0), "n_percentiles": 0}, ValueError,
         "The 'n_percentiles' parameter of slice_metrics must be a positive integer"),
        ({"min_slice_size": 0}, ValueError,
         "The 'min_slice_size' parameter of slice_metrics must be a positive integer"),
        ({"min_slice_size": 2.5}, TypeError,
         "The 'min_slice_size' parameter of slice_metrics must be a positive integer"),
        ({"groups": {"class": [0] * 6}}, ValueError,
         r"The 'groups' parameter of slice_metrics must be keyed by names other than"),
        ({"groups": {1: [0] * 6}}, TypeError,
         "The 'groups' parameter of slice_metrics must be keyed by non-empty strings"),
        ({"groups": [[0] * 6]}, TypeError,
         "The 'groups' parameter of slice_metrics must be a mapping"),
        ({"groups": {"sex": [0] * 5}}, ValueError,
         r"The \"groups\['sex'\]\" parameter of slice_metrics must be one value per"),
        ({"fprs": (1.5,)}, ValueError, "The 'fprs' parameter of slice_metrics"),
        ({"n_bootstrap": -1}, ValueError, "The 'n_bootstrap' parameter of slice_metrics"),
        ({"confidence": 1.0}, ValueError, "The 'confidence' parameter of slice_metrics"),
        ({"random_state": "seed"}, TypeError, "The 'random_state' parameter of slice_metrics"),
        ({"entire": "yes"}, TypeError, "The 'entire' parameter of slice_metrics must be"),
        ({"by_class": [[0], [1], [0], [1], [0], [1]]}, TypeError,
         "The 'by_class' parameter of slice_metrics must be hashable values"),
    ],
)
def test_bad_input_is_refused_with_the_template(kwargs, error, message) -> None:
    result = AttackResult(labels=[1, 0, 1, 0, 1, 0], scores=np.arange(6.0))
    with pytest.raises(error, match=message):
        slice_metrics(result, **kwargs)


def test_result_must_be_an_attack_result() -> None:
    with pytest.raises(TypeError, match="The 'result' parameter of slice_metrics must be an"):
        slice_metrics({"labels": [0, 1]})
    assert "class" in SLICE_TYPES


@pytest.mark.slow
def test_interpolating_tree_leaks_only_through_its_mistakes() -> None:
    """End to end on sklearn digits: a fully grown tree, attacked by its loss.

    Every training record sits in a pure leaf (loss 0), so members are never
    misclassified, and a member ties with every correctly classified non-member. The
    LOSS attack then separates nothing but the non-members the tree gets wrong (Yeom et
    al.'s link between generalisation error and membership advantage): on the "correct"
    slice it is exactly random, the "incorrect" slice holds no member at all, and within a
    class c, AUC = 1/2 + err_c / 2, with err_c the tree's error on non-members of class c.
    No single member is exposed: each is detected only at an FPR equal to the tree's
    accuracy on non-members.
    """
    from sklearn.datasets import load_digits
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    labels = np.zeros(y.shape[0], dtype=int)
    labels[rng.permutation(y.shape[0])[: y.shape[0] // 2]] = 1
    tree = DecisionTreeClassifier(random_state=0).fit(X[labels == 1], y[labels == 1])
    proba = tree.predict_proba(X)[np.arange(y.shape[0]), y]
    loss = -np.log(np.clip(proba, 1e-12, None))
    correct = tree.predict(X) == y
    assert correct[labels == 1].all()
    result = AttackResult(labels=labels, scores=-loss, raw_statistic=loss,
                          raw_statistic_name="loss", attack="loss", target="tree")

    with pytest.warns(DegenerateInputWarning) as caught:
        frame = slice_metrics(result, by_class=y, correct=correct, loss=loss,
                              n_bootstrap=100)
    assert len(caught) == 1
    rows = frame.set_index(["slice_type", "slice_value"])
    err = 1 - correct[labels == 0].mean()
    assert rows.loc[("entire", "all"), "auc"] == pytest.approx(0.5 + err / 2)
    assert rows.loc[("correctness", "correct"), "auc"] == 0.5
    assert rows.loc[("correctness", "correct"), "advantage"] == 0.0
    incorrect = rows.loc[("correctness", "incorrect")]
    assert (incorrect["status"], incorrect["n_members"]) == ("one_class", 0)
    for c in range(10):
        nm = (labels == 0) & (y == c)
        err_c = 1 - correct[nm].mean()
        assert rows.loc[("class", c), "auc"] == pytest.approx(0.5 + err_c / 2, abs=1e-12)
        assert rows.loc[("class", c), "auc_low"] <= rows.loc[("class", c), "auc"]
    # Most losses are exactly 0: their percentile slices are empty but for the one that
    # holds all the ties, and the partition still covers every record once.
    pct = frame[frame["slice_type"] == "loss_percentile"]
    assert pct["n_records"].sum() == y.shape[0]
    assert (pct["status"] == "empty").sum() >= 5
    assert "empty" in str(caught[0].message) or "0 members, 0 non-members" in str(
        caught[0].message)

    ranking = vulnerability_ranking(result, record_features={"digit": y})
    assert (ranking["rank"] == 1).all()
    assert ranking["detection_fpr"].unique().tolist() == [pytest.approx(1 - err)]
    assert list(ranking.columns) == ["record_id", "label", "score", "detection_fpr", "rank",
                                     "loss", "digit"]


# ----------------------------------------------------------------------------- ranking


def slow_detection_fpr(labels: np.ndarray, scores: np.ndarray) -> list[float]:
    """Straight from the definition, one record at a time."""
    out = []
    for i in range(labels.shape[0]):
        others = [scores[j] for j in range(labels.shape[0]) if labels[j] == 0 and j != i]
        if not others:
            out.append(math.nan)
        else:
            out.append(sum(1 for s in others if s >= scores[i]) / len(others))
    return out


@pytest.mark.parametrize("include_non_members", [False, True])
def test_detection_fpr_equals_the_slow_loop(include_non_members: bool) -> None:
    rng = np.random.default_rng(12)
    labels = rng.integers(0, 2, 150)
    scores = np.round(rng.normal(labels * 0.7, 1), 1)  # ties
    result = AttackResult(labels=labels, scores=scores, record_ids=[f"r{i}" for i in range(150)])
    ranking = vulnerability_ranking(result, include_non_members=include_non_members)
    slow = slow_detection_fpr(labels, scores)
    expected = {f"r{i}": slow[i] for i in range(150) if include_non_members or labels[i] == 1}
    assert len(ranking) == len(expected)
    got = dict(zip(ranking["record_id"], ranking["detection_fpr"], strict=True))
    assert got == pytest.approx(expected, abs=1e-15)
    np.testing.assert_array_equal(ranking["label"].to_numpy(),
                                  labels[[int(r[1:]) for r in ranking["record_id"]]])


def test_planted_exposed_member_is_ranked_first() -> None:
    rng = np.random.default_rng(13)
    labels = np.r_[np.ones(300, dtype=int), np.zeros(300, dtype=int)]
    scores = rng.normal(0.2 * labels, 1.0)
    scores[123] = 50.0  # one memorised record, far above every non-member
    result = AttackResult(labels=labels, scores=scores, record_ids=np.arange(600) + 1000)
    ranking = vulnerability_ranking(result, top=3)
    assert len(ranking) == 3
    first = ranking.iloc[0]
    assert (first["record_id"], first["detection_fpr"], first["rank"]) == (1123, 0.0, 1)
    assert list(ranking.index) == [0, 1, 2]
    assert ranking["detection_fpr"].is_monotonic_increasing


def test_ties_share_a_rank_and_sorting_is_by_fpr_then_score() -> None:
    # Members 0..3 score 5, 5, 3, 2.5; non-members 4, 1. Members 2 and 3 are both above
    # non-member 1 only (FPR 1/2) but 3 > 2.5 puts member 2 first.
    result = AttackResult(labels=[1, 1, 1, 1, 0, 0], scores=[5, 5, 3, 2.5, 4, 1])
    ranking = vulnerability_ranking(result)
    assert list(ranking["record_id"]) == [0, 1, 2, 3]
    assert list(ranking["rank"]) == [1, 1, 3, 4]
    assert list(ranking["detection_fpr"]) == [0.0, 0.0, 0.5, 0.5]
    both = vulnerability_ranking(result, include_non_members=True)
    # Non-member 4 scores above the only other non-member: LOO FPR 0, ranked with members.
    assert list(both["record_id"]) == [0, 1, 4, 2, 3, 5]
    assert list(both["detection_fpr"]) == [0.0, 0.0, 0.0, 0.5, 0.5, 1.0]
    assert list(both["rank"]) == [1, 1, 3, 4, 5, 6]


def test_record_features_and_raw_statistic_are_carried() -> None:
    result = AttackResult(labels=[1, 0, 1, 0], scores=[0.1, 0.2, 0.9, 0.3],
                          raw_statistic=[2.3, 1.6, 0.1, 1.2], raw_statistic_name="loss")
    features = pd.DataFrame({"digit": [7, 1, 3, 5], "group": list("abcd")}, index=[9, 8, 7, 6])
    ranking = vulnerability_ranking(result, record_features=features)
    assert list(ranking.columns) == ["record_id", "label", "score", "detection_fpr", "rank",
                                     "loss", "digit", "group"]
    assert ranking.to_dict("list") == {
        "record_id": [2, 0], "label": [1, 1], "score": [0.9, 0.1],
        "detection_fpr": [0.0, 1.0], "rank": [1, 2], "loss": [0.1, 2.3],
        "digit": [3, 7], "group": ["c", "a"],
    }
    with pytest.raises(ValueError, match="The 'record_features' parameter of "
                                         "vulnerability_ranking must be columns named"):
        vulnerability_ranking(result, record_features={"loss": [0, 0, 0, 0]})
    with pytest.raises(ValueError, match=r"must be one value per audited record \(4\)"):
        vulnerability_ranking(result, record_features={"digit": [1, 2]})
    with pytest.raises(TypeError, match="must be a DataFrame or a mapping"):
        vulnerability_ranking(result, record_features=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="The 'top' parameter of vulnerability_ranking"):
        vulnerability_ranking(result, top=0)
    with pytest.raises(TypeError, match="The 'result' parameter of vulnerability_ranking"):
        vulnerability_ranking([1, 0])


def test_no_non_members_gives_nan_and_a_warning() -> None:
    result = AttackResult(labels=[1, 1, 1], scores=[0.2, 0.9, 0.5])
    with pytest.warns(DegenerateInputWarning, match="0 non-member"):
        ranking = vulnerability_ranking(result)
    assert ranking["detection_fpr"].isna().all()
    assert list(ranking["record_id"]) == [1, 2, 0]
    assert list(ranking["rank"]) == [1, 2, 3]
    only_non_members = AttackResult(labels=[0, 0], scores=[0.2, 0.9])
    assert len(vulnerability_ranking(only_non_members)) == 0


@st.composite
def audits(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(2, 60))
    labels = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    labels[0], labels[1] = 1, 0  # both classes present
    scores = np.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), dtype=float)
    return labels, scores


@settings(max_examples=60, deadline=None)
@given(audit=audits(), include=st.booleans())
def test_detection_fpr_properties(audit: tuple[np.ndarray, np.ndarray], include: bool) -> None:
    labels, scores = audit
    result = AttackResult(labels=labels, scores=scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)  # a single non-member
        ranking = vulnerability_ranking(result, include_non_members=include)
    members = ranking[ranking["label"] == 1]
    d = members["detection_fpr"].to_numpy()
    assert ((d >= 0) & (d <= 1)).all()
    # Non-increasing in the score: a higher score is detected at a lower (or equal) FPR.
    by_score = members.sort_values("score", kind="stable")["detection_fpr"].to_numpy()
    assert (np.diff(by_score) <= 0).all()
    # Ranks start at 1 and never decrease down the table.
    assert ranking["rank"].iloc[0] == 1 and ranking["rank"].is_monotonic_increasing
    # The ranking decomposes the ROC curve: TPR at FPR f = share of members detected at f.
    for f in (0.0, 0.05, 0.2, 0.5, 0.75):
        assert np.mean(d <= f) == pm.tpr_at_fpr(labels, scores, f)
