"""The headline effective epsilon (a Clopper-Pearson lower bound) and strict JSON non-finites."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

import privaudit.metrics as pm
from privaudit.report import HtmlReport, build_report, headline_epsilon, write_results_json
from privaudit.results import mark_non_finite, restore_non_finite

N_BOOT = 20


def _refuse(token: str) -> None:
    raise AssertionError(f"non-standard JSON token {token}")


@pytest.fixture(scope="module")
def pair(make_result):
    """A strong attack (TAPAS point estimate inf) and a cross-fitted one on the same target."""
    strong = make_result(300, 300, 4.0, seed=11, target="overfit", attack="loss")
    crossfit = make_result(300, 300, 1.0, seed=12, target="overfit", attack="trained-lr",
                           out_of_fold=True)
    return [strong, crossfit]


@pytest.fixture(scope="module")
def built(pair, tmp_path_factory):
    directory = tmp_path_factory.mktemp("headline")
    build_report(pair, directory, n_bootstrap=N_BOOT, random_state=3)
    return directory


def _expected_bound(result, seed=3) -> float:
    (bound,) = pm.effective_epsilon_lower_bound(
        result.labels, result.scores, validation_split=0.1, confidence_levels=(0.95,),
        random_state=seed)
    return bound.epsilon_low


def test_headline_is_the_clopper_pearson_bound_of_that_attack(pair) -> None:
    strong, crossfit = pair
    assert math.isinf(strong.metrics(n_bootstrap=0)["effective_epsilon"]["value"])
    got = headline_epsilon(strong, random_state=3)
    assert got["value"] == _expected_bound(strong)
    assert 0 < got["value"] < math.inf and got["note"] == "" and got["confidence"] == 0.95
    no = headline_epsilon(crossfit, random_state=3)
    assert math.isnan(no["value"]) and "out of fold" in no["note"]
    tiny = make_tiny()
    assert math.isnan(headline_epsilon(tiny)["value"]) and headline_epsilon(tiny)["note"]


def make_tiny():
    from privaudit.results import AttackResult

    return AttackResult(labels=np.array([1, 0]), scores=np.array([0.9, 0.1]))


def test_html_table_shows_one_epsilon_the_bound(built, pair) -> None:
    html = (built / "index.html").read_text(encoding="utf-8")
    table = html[html.index('id="metrics-table"'):html.index("</table>",
                                                            html.index('id="metrics-table"'))]
    assert "ε lower bound (95%)" in table
    assert f">{_expected_bound(pair[0]):.2f}<" in table
    # One ε per result (issue 20): TAPAS's point estimate (here infinite) is not a bound
    # and is not shown beside it; metrics.csv keeps it.
    assert "Effective ε (point)" not in table and "∞" not in table
    assert "not valid: scored out of fold" in table
    assert "Clopper–Pearson lower bound at 95%" in table


def test_metrics_csv_and_results_json_carry_the_bound(built, pair) -> None:
    frame = pd.read_csv(built / "metrics.csv")
    columns = list(frame.columns)
    assert columns.index("effective_epsilon_lower_bound") < columns.index("effective_epsilon")
    assert frame.loc[0, "effective_epsilon_lower_bound"] == pytest.approx(
        _expected_bound(pair[0]), abs=1e-12)
    assert math.isnan(frame.loc[1, "effective_epsilon_lower_bound"])
    assert "out of fold" in frame.loc[1, "effective_epsilon_lower_bound_note"]
    doc = json.loads((built / "results.json").read_text(), parse_constant=_refuse)
    strong, crossfit = (e["metrics"] for e in doc["results"])
    assert strong["effective_epsilon_lower_bound"]["value"] == _expected_bound(pair[0])
    assert crossfit["effective_epsilon_lower_bound"] == {
        "value": None, "value_status": "undefined", "confidence": 0.95,
        "note": "scored out of fold, not valid for this bound"}


def test_results_json_tells_infinity_from_undefined(built, pair) -> None:
    doc = json.loads((built / "results.json").read_text(), parse_constant=_refuse)
    point = doc["results"][0]["metrics"]["effective_epsilon"]
    # the TAPAS point estimate is inf, and it has no interval (NaN: undefined)
    assert point["value"] is None and point["value_status"] == "infinite"
    assert point["low"] is None and point["low_status"] == "undefined"
    assert "value_status" not in doc["results"][0]["metrics"]["auc"]  # finite: no status
    back = restore_non_finite(doc)["results"][0]["metrics"]["effective_epsilon"]
    assert back["value"] == math.inf and math.isnan(back["low"]) and set(back) == {
        "value", "low", "high"}


def test_write_results_json_agrees_with_build_report(built, pair, tmp_path) -> None:
    path = write_results_json(pair, tmp_path / "r.json", n_bootstrap=N_BOOT, random_state=3)
    again = json.loads(path.read_text(), parse_constant=_refuse)["results"]
    first = json.loads((built / "results.json").read_text())["results"]
    assert [e["metrics"] for e in again] == [e["metrics"] for e in first]


def test_cli_summary_reads_infinity_back(built) -> None:
    from rich.console import Console

    from privaudit.cli._app import _print_summary

    buffer = io.StringIO()
    _print_summary(Console(file=buffer, width=250, force_terminal=False), built)
    text = buffer.getvalue()
    assert "ε lower bound" in text and "ε (point)" in text
    lines = [line for line in text.splitlines() if "trained-lr" in line or "│ loss" in line]
    assert len(lines) == 2
    assert "∞" in lines[0] and "—" in lines[1]


def test_mark_non_finite_round_trip() -> None:
    obj = {"a": math.inf, "b": -math.inf, "c": math.nan, "d": 1.5, "e": [math.inf, 2.0],
           "f": {"g": np.float64(np.nan)}, "h": None, "note_status": "kept"}
    encoded = mark_non_finite(obj)
    text = json.dumps(encoded, allow_nan=False)
    assert encoded["a"] is None and encoded["a_status"] == "infinite"
    assert encoded["b_status"] == "-infinite" and encoded["c_status"] == "undefined"
    assert encoded["e"] == [None, 2.0] and encoded["f"] == {"g": None, "g_status": "undefined"}
    back = restore_non_finite(json.loads(text))
    assert back["a"] == math.inf and back["b"] == -math.inf and math.isnan(back["c"])
    assert math.isnan(back["f"]["g"]) and back["h"] is None and back["d"] == 1.5
    assert back["note_status"] == "kept" and "a_status" not in back


def test_bad_validation_split_is_refused(pair) -> None:
    with pytest.raises(ValueError, match="The 'validation_split' parameter of HtmlReport"):
        HtmlReport(pair, validation_split=1.5)
