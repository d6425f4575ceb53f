from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.report import (
    AUC_SCALE,
    HtmlReport,
    build_report,
    interpret_auc,
    write_html_report,
    write_results_json,
)
from privaudit.results import AttackResult, load_results, result_folder_name

# Figures are counted, embedded and written but not drawn (tests/conftest.py): what is
# drawn is tested in test_report_size.py (every figure of a page a palette PNG) and
# test_report_tables.py (roc_curves.png).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
N_BOOT = 60


@pytest.fixture(scope="module")
def audit(make_result):
    """Five results covering every reading: strong, moderate, random, reversed, attribute."""
    return [
        make_result(300, 300, 1.6, seed=1, target="overfit", attack="loss", predictions=True,
                    raw=True),
        make_result(300, 300, 0.6, seed=2, target="regularised", attack="loss"),
        make_result(300, 300, 0.0, seed=3, target="regularised", attack="lira"),
        make_result(300, 300, -1.0, seed=4, target="buggy", attack="flipped"),
        make_result(300, 300, 1.0, seed=5, target="overfit", attack="aia", kind="attribute",
                    parameters={"sensitive_attribute": "race"}),
    ]


@pytest.fixture(scope="module")
def built(audit, tmp_path_factory):
    directory = tmp_path_factory.mktemp("report")
    index = build_report(audit, directory, n_bootstrap=N_BOOT, title="Test <audit>")
    return directory, index


def test_build_report_writes_every_file(built, audit) -> None:
    directory, index = built
    assert index == directory / "index.html"
    for name in ("index.html", "results.json", "metrics.csv", "effective_epsilon.csv",
                 "roc_curves.png"):
        assert (directory / name).is_file(), name
    assert (directory / "roc_curves.png").read_bytes().startswith(PNG_MAGIC)
    folders = sorted(p.name for p in (directory / "results").iterdir())
    assert folders == sorted(result_folder_name(r.target, r.attack) for r in audit)
    assert [f.split("-")[0] for f in folders] == [
        "buggy", "overfit", "overfit", "regularised", "regularised"]
    for folder in folders:
        assert sorted(p.name for p in (directory / "results" / folder).iterdir()) == [
            "result.json", "scores.csv"]
    assert not list(directory.rglob("*.tmp"))


def test_report_result_folders_are_the_stores(built, audit) -> None:
    from privaudit.results import ResultsStore

    directory, _ = built
    store = ResultsStore(directory / "results")
    doc = json.loads((directory / "results.json").read_text())
    # The folders the report links are the store's own: path_for finds each result ...
    assert [directory / e["folder"] for e in doc["results"]] == [
        store.path_for(r.target, r.attack) for r in audit]
    assert sorted(directory / e["folder"] for e in doc["results"]) == store.paths()
    # ... and the store reads every one back unchanged.
    for result in audit:
        loaded = store.load(result.target, result.attack)
        assert loaded is not None and np.array_equal(loaded.scores, result.scores)
        assert np.array_equal(loaded.labels, result.labels)


def test_results_json_layout_and_numbers(built, audit) -> None:
    directory, _ = built

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    doc = json.loads((directory / "results.json").read_text(), parse_constant=refuse)
    assert set(doc) >= {"privaudit_version", "created", "results"}
    assert len(doc["results"]) == len(audit)
    metrics_csv = pd.read_csv(directory / "metrics.csv")
    for entry, result, (_, row) in zip(doc["results"], audit, metrics_csv.iterrows(),
                                       strict=True):
        assert {"target", "attack", "dataset", "generator", "kind", "parameters", "extra",
                "metrics"} <= set(entry)
        assert entry["folder"] == f"results/{result_folder_name(result.target, result.attack)}"
        m = result.metrics(n_bootstrap=N_BOOT, random_state=0)
        assert entry["metrics"]["auc"] == m["auc"]
        assert entry["metrics"]["tpr_at_fpr"]["0.001"] == m["tpr_at_fpr"]["0.001"]
        assert entry["metrics"]["advantage"]["low"] == m["advantage"]["low"]
        assert row["auc"] == pytest.approx(m["auc"]["value"], abs=1e-15)
        assert row["auc_high"] == pytest.approx(m["auc"]["high"], abs=1e-15)
        assert entry["metrics"]["auc"]["low"] <= entry["metrics"]["auc"]["value"] <= entry[
            "metrics"]["auc"]["high"]


def test_report_can_be_rebuilt_from_saved_results(built, audit, tmp_path) -> None:
    directory, _ = built
    reloaded = load_results(directory / "results")
    assert sorted(r.name for r in reloaded) == sorted(r.name for r in audit)
    by_name = {r.name: r for r in audit}
    for r in reloaded:
        assert r.scores.tobytes() == by_name[r.name].scores.tobytes()
    path = write_results_json(reloaded, tmp_path / "again.json", n_bootstrap=N_BOOT)
    again = {(e["target"], e["attack"]): e["metrics"]
             for e in json.loads(path.read_text())["results"]}
    first = {(e["target"], e["attack"]): e["metrics"]
             for e in json.loads((directory / "results.json").read_text())["results"]}
    assert again == first


def test_html_is_self_contained(built, audit) -> None:
    html = built[1].read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<link" not in html and "<script" not in html and "@import" not in html
    sources = re.findall(r'<img[^>]*\ssrc="([^"]+)"', html)
    n_targets = len({(r.dataset, r.target) for r in audit})
    # one ROC figure per audited target and one histogram per result
    assert len(sources) == n_targets + len(audit)
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    assert "Test &lt;audit&gt;" in html  # escaped, never raw markup


def test_html_shows_tables_readings_and_flags(built, audit) -> None:
    html = built[1].read_text(encoding="utf-8")
    table = html[html.index('id="metrics-table"'):html.index("</table>",
                                                            html.index('id="metrics-table"'))]
    assert table.count("<tr id=\"result-") == len(audit)
    for header in ("AUC", "TPR @ 0.1% FPR", "Advantage", "ε lower bound (95%)"):
        assert header in table
    # the plain reading of each AUC, in English, phrased for membership
    assert "Clearly recognisable" in html or "Strong distinction" in html
    assert "Anomalous: the non-members are more recognisable than the members" in html
    assert "Check for a sign error" in html
    assert "No better than random: the 95% interval of the AUC" in html
    assert "Worse than random" in html
    assert "records with the sensitive value" in html  # the attribute-inference result
    assert "guide to membership-inference metrics for machine unlearning" in html
    for band in AUC_SCALE:
        assert band.label in html
    assert 'id="epsilon-table"' in html and 'id="predictions-table"' in html
    assert "race" in html


def test_no_bootstrap_report(audit, tmp_path) -> None:
    path = write_html_report(audit[:2], tmp_path, n_bootstrap=0, fprs=(0.01,),
                             description="Two models & one attack.")
    html = path.read_text(encoding="utf-8")
    assert "confidence intervals were not computed" in html
    assert "no better than random" not in html.lower()
    assert 'id="predictions-table"' in html
    assert "TPR @ 1% FPR" in html and "TPR @ 0.1% FPR" not in html
    assert "Two models &amp; one attack." in html
    assert HtmlReport(audit[:2], n_bootstrap=0).metrics_frame()["auc_low"].isna().all()


# ----------------------------------------------------------------------------- the scale


@pytest.mark.parametrize(
    ("auc", "key"),
    [(1.0, "clear"), (0.95, "clear"), (0.9499, "strong"), (0.75, "strong"),
     (0.7499, "moderate"), (0.60, "moderate"), (0.5999, "weak"), (0.5, "weak"),
     (0.45, "weak"), (0.4499, "indistinguishable"), (0.40, "indistinguishable"),
     (0.3999, "anomalous"), (0.0, "anomalous")],
)
def test_scale_boundaries(auc, key) -> None:
    assert interpret_auc(auc).key == key


def _reference_key(auc: float) -> str:
    if auc >= 0.95:
        return "clear"
    if auc >= 0.75:
        return "strong"
    if auc >= 0.60:
        return "moderate"
    if auc >= 0.45:
        return "weak"
    if auc >= 0.40:
        return "indistinguishable"
    return "anomalous"


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_reading_matches_reference_and_flag(auc, a, b) -> None:
    low, high = min(a, b), max(a, b)
    reading = interpret_auc(auc, low, high)
    assert reading.key == _reference_key(auc)
    assert reading.better_than_random is (low > 0.5)
    assert bool(reading.random_flag) is not (low > 0.5)


def test_flags_and_undefined() -> None:
    assert interpret_auc(0.52, 0.48, 0.56).random_flag.startswith(
        "No better than random: the 95% interval of the AUC [0.480, 0.560] contains 0.5")
    assert interpret_auc(0.3, 0.25, 0.35, confidence=0.9).random_flag.startswith(
        "Worse than random: the 90% interval")
    assert interpret_auc(0.8, 0.75, 0.85).random_flag == ""
    no_ci = interpret_auc(0.8)
    assert no_ci.random_flag == "" and no_ci.better_than_random is None
    undefined = interpret_auc(math.nan)
    assert undefined.key == "undefined" and "one class" in undefined.text
    assert "members" in interpret_auc(0.8).text
    assert "sensitive value" in interpret_auc(0.8, kind="attribute").text


def test_html_with_degenerate_and_tiny_results(tmp_path) -> None:
    one_class = AttackResult(labels=[1, 1, 1], scores=[0.1, 0.2, 0.3], attack="x", target="t")
    tiny = AttackResult(labels=[1, 0], scores=[0.9, 0.1], attack="y", target="u")
    with pytest.warns(Warning):
        path = write_html_report([one_class, tiny], tmp_path, n_bootstrap=10)
    html = path.read_text(encoding="utf-8")
    assert "The AUC is undefined" in html
    assert np.all([s.startswith("data:") for s in re.findall(r'src="([^"]+)"', html)])


def test_roc_curves_are_grouped_by_target(make_result) -> None:
    from privaudit.report import HtmlReport

    results = [make_result(seed=i, target=t, attack=a)
               for i, (t, a) in enumerate([("m1", "loss"), ("m1", "rmia"), ("m2", "loss")])]
    html = HtmlReport(results, n_bootstrap=0).render()
    rocs = re.findall(r'alt="ROC curves of the attacks on ([^"]+), linear', html)
    assert rocs == ["m1", "m2"]
    single = HtmlReport(results[:2], n_bootstrap=0).render()
    assert single.count('alt="ROC curves') == 1
