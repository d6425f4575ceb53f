"""AuditReport: the one typed return of every audit (issue 21, "One typed return").

The report is a read-only sequence over the flat list the audits used to return, and reads
its results exactly as the HTML report does: the rows of metrics.csv, the overview's
strongest finding, the same files.
"""

from __future__ import annotations

import collections.abc
import html
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privaudit
from privaudit.report import AuditReport, Finding, strongest_finding
from privaudit.results import AttackResult, load_all_results

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


def gaussian_result(n_members: int, n_non_members: int, shift: float, *, seed: int,
                    **provenance: Any) -> AttackResult:
    """Members' scores ~ N(shift, 1), non-members' ~ N(0, 1) (as conftest's make_result)."""
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_members, dtype=int), np.zeros(n_non_members, dtype=int)]
    scores = np.r_[rng.normal(shift, 1, n_members), rng.normal(0, 1, n_non_members)]
    return AttackResult(labels=labels, scores=scores, **provenance)

DEMO = Path("/tmp/demo1/results")
needs_demo = pytest.mark.skipif(not DEMO.is_dir(), reason="the demo's saved results")
#: Small enough for a quick test, enough for intervals (the verdict reads them).
FAST = {"n_bootstrap": 20}


def _pool(n: int) -> list[AttackResult]:
    """``n`` distinct small results (different targets, attacks and signal strengths)."""
    return [gaussian_result(30, 30, 0.2 * i, seed=i, target=f"model-{i % 3}",
                            attack=f"attack-{i}") for i in range(n)]


POOL = _pool(9)


@pytest.fixture(scope="module")
def demo() -> dict[str, list[Any]]:
    """The demo's saved results by audit kind (``audit.kind``)."""
    if not DEMO.is_dir():
        pytest.skip("the demo's saved results are not in /tmp/demo1")
    out: dict[str, list[Any]] = {}
    for result in load_all_results(DEMO):
        out.setdefault(result.audit.kind, []).append(result)
    return out


# ---------------------------------------------------------------------- construction
def test_parts_are_kept_apart_as_tuples_in_order() -> None:
    a, b, c, d = POOL[:4]
    report = AuditReport([a, b], baselines=[c], compared=(d,), kind="llm", func="audit_llm")
    assert report.results == (a, b) and report.baselines == (c,) and report.compared == (d,)
    assert report.all_results == (a, b, c, d)
    assert [report.role(r) for r in (a, b, c, d)] == ["result", "result", "baseline",
                                                      "compared"]
    assert (report.kind, report.func) == ("llm", "audit_llm")
    assert list(report) == [a, b, c, d]  # flat by default: results, baselines, compared


def test_flat_gives_the_old_order() -> None:
    a, b, c, d = POOL[:4]
    report = AuditReport([a, b], baselines=[c], compared=[d], flat=[d, a, c, b])
    assert list(report) == [d, a, c, b] and report[0] is d
    assert report.all_results == (a, b, c, d)  # the parts keep their own order


@pytest.mark.parametrize("flat", [[POOL[0]], [POOL[0], POOL[1], POOL[1]],
                                  [POOL[0], POOL[2]]])
def test_flat_must_hold_the_same_results(flat: list[Any]) -> None:
    with pytest.raises(ValueError, match=r"'flat' parameter of AuditReport"):
        AuditReport(POOL[:1], baselines=POOL[1:2], flat=flat)


@pytest.mark.parametrize("param,value", [("results", "loss"), ("results", [1.0]),
                                         ("baselines", [object()]), ("compared", 3),
                                         ("results", {"a": POOL[0]})])
def test_bad_parts_are_refused_naming_the_parameter(param: str, value: Any) -> None:
    kwargs: dict[str, Any] = {"results": POOL[:1], param: value}
    with pytest.raises(TypeError, match=rf"'{param}' parameter of AuditReport"):
        AuditReport(kwargs.pop("results"), **kwargs)


@pytest.mark.parametrize("param", ["kind", "func"])
def test_kind_and_func_are_text(param: str) -> None:
    with pytest.raises(TypeError, match=rf"'{param}' parameter of AuditReport"):
        AuditReport(POOL[:1], **{param: 3})


def test_role_of_a_foreign_result_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'result' parameter of AuditReport\.role"):
        AuditReport(POOL[:1]).role(POOL[1])


# ---------------------------------------------------------------------- sequence
@st.composite
def _split(draw: Any) -> tuple[AuditReport, list[Any]]:
    """A report over a few results of the pool, split in three parts, with an old order."""
    n = draw(st.integers(0, len(POOL)))
    chosen = draw(st.permutations(POOL))[:n]
    cut1 = draw(st.integers(0, n))
    cut2 = draw(st.integers(cut1, n))
    flat = draw(st.permutations(chosen))
    report = AuditReport(chosen[:cut1], baselines=chosen[cut1:cut2], compared=chosen[cut2:],
                         flat=flat)
    return report, list(flat)


@settings(max_examples=60, deadline=None)
@given(_split(), st.integers(-12, 12), st.integers(-12, 12), st.sampled_from([None, 1, 2,
                                                                              -1, -3]))
def test_the_report_behaves_as_the_old_list(case: tuple[AuditReport, list[Any]],
                                            start: int, stop: int, step: int | None) -> None:
    report, old = case
    assert isinstance(report, collections.abc.Sequence)
    assert len(report) == len(old) and bool(report) == bool(old)
    assert list(report) == old and list(reversed(report)) == old[::-1]
    assert report == old and report == tuple(old) and old == report
    assert report[start:stop:step] == old[start:stop:step]
    assert isinstance(report[start:stop:step], list)
    for i in range(-len(old), len(old)):
        assert report[i] is old[i]
    for index in (len(old), -len(old) - 1):
        with pytest.raises(IndexError):
            report[index]
    assert report + [POOL[0]] == [*old, POOL[0]]  # noqa: RUF005  # what old code did
    assert [POOL[0]] + report == [POOL[0], *old]  # noqa: RUF005
    if old:
        assert report != old[1:] and report.index(old[-1]) == old.index(old[-1])
        assert old[0] in report and report.count(old[0]) == 1


def test_old_code_patterns_keep_working(tmp_path: Path) -> None:
    one = AuditReport(POOL[:1])
    [only] = one
    first, = one
    assert only is first is POOL[0]
    results = AuditReport(POOL[1:3])
    results += AuditReport(POOL[3:4])  # studies add audits up: a plain list, as before
    assert results == POOL[1:4] and isinstance(results, list)
    total: list[Any] = []
    total += AuditReport(POOL[4:6])
    assert total == POOL[4:6]
    assert [r.attack for r in one] == [POOL[0].attack]
    for a, b in zip(one, AuditReport(POOL[:1]), strict=True):
        assert a is b
    assert one != "not a list" and one != [POOL[1]]
    with pytest.raises(TypeError):
        hash(one)  # equal to a list, so unhashable like one
    with pytest.raises(TypeError):
        one[0] = POOL[1]  # type: ignore[index]  # read-only


def test_two_reports_are_equal_only_with_the_same_parts() -> None:
    a, b = POOL[:2]
    assert AuditReport([a], baselines=[b]) == AuditReport([a], baselines=[b])
    assert AuditReport([a], baselines=[b]) != AuditReport([a], compared=[b])
    assert AuditReport([a], kind="llm") != AuditReport([a], kind="model")


def test_a_pickled_report_is_the_same_report() -> None:
    report = AuditReport(POOL[:2], baselines=POOL[2:3], kind="model").with_settings(**FAST)
    report.verdict  # noqa: B018  # fills the cache, which is not pickled
    again = pickle.loads(pickle.dumps(report))
    assert [r.attack for r in again] == [r.attack for r in report]
    assert again.baselines[0].attack == POOL[2].attack and again.settings == report.settings
    assert again.verdict == report.verdict


def test_an_empty_report() -> None:
    report = AuditReport([], kind="synthetic", func="audit_synthetic")
    assert len(report) == 0 and report == [] and report.verdict is None
    assert report.findings == []
    assert list(report.to_frame().columns)[:6] == ["target", "attack", "dataset", "generator",
                                                   "kind", "role"]
    assert "0 results" in repr(report) and "No result" in report._repr_html_()


# ---------------------------------------------------------------------- settings
@pytest.mark.parametrize("settings_,match", [
    ({"n_bootstrap": -1}, "n_bootstrap"), ({"fprs": [2.0]}, "fprs"),
    ({"confidence": 1.5}, "confidence"), ({"validation_split": -0.1}, "validation_split"),
    ({"bootstraps": 10}, "'settings' parameter of AuditReport.with_settings.*bootstraps")])
def test_bad_settings_are_refused_naming_them(settings_: dict[str, Any], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        AuditReport(POOL[:1]).with_settings(**settings_)


def test_settings_default_to_the_cli_report_and_are_cached_per_value() -> None:
    report = AuditReport(POOL[:3])
    assert report.settings["n_bootstrap"] == 1000 and report.settings["random_state"] == 0
    quick = report.with_settings(**FAST)
    assert quick.page() is quick.page() and quick.page() is report.page(**FAST)
    assert quick.page(n_bootstrap=0) is not quick.page()
    generator = np.random.default_rng(0)  # drawn from: a new page each time
    assert quick.page(random_state=generator) is not quick.page(random_state=generator)


# ---------------------------------------------------------------------- verdict
def test_the_verdict_is_the_page_overviews_strongest_and_ignores_compared() -> None:
    weak = gaussian_result(300, 300, 0.5, seed=1, target="audited", attack="loss")
    split = gaussian_result(300, 300, 0.3, seed=2, target="texts-only", attack="blind")
    split.audit.role = "baseline"
    strong = gaussian_result(300, 300, 4.0, seed=3, target="retrained", attack="loss")
    report = AuditReport([weak], baselines=[split], compared=[strong]).with_settings(**FAST)
    overview = report.page().overview
    assert {f.artefact for f in overview} == {"audited", "texts-only", "retrained"}
    assert strongest_finding(overview).artefact == "retrained"  # the page's strongest...
    assert report.verdict.artefact == "audited"  # ...is a compared model: not the answer
    assert report.verdict == next(f for f in overview if f.artefact == "audited")
    assert report.verdict.severity in ("low", "moderate", "high")
    assert report.findings[0].artefact == "retrained"  # findings: all, strongest first
    assert isinstance(report.verdict, Finding)


def test_findings_are_strongest_first_by_the_reports_rule() -> None:
    report = AuditReport(POOL).with_settings(**FAST)
    ordered = report.findings
    assert sorted(map(id, ordered)) == sorted(map(id, report.page().findings))
    for i, finding in enumerate(ordered):
        assert strongest_finding(ordered[i:]) is finding


@needs_demo
@pytest.mark.parametrize("kind", ["model", "attribute", "synthetic", "generator",
                                  "unlearning", "llm"])
def test_every_audit_kind_gets_the_overviews_answer(demo: dict[str, list[Any]],
                                                    kind: str, tmp_path: Path) -> None:
    report = AuditReport(demo[kind], kind=kind).with_settings(**FAST)
    page = report.page()
    assert report.verdict == strongest_finding(page.overview)
    assert report.verdict.artefact in {f.artefact for f in page.overview}


@needs_demo
def test_the_verdict_is_what_the_written_report_says(demo: dict[str, list[Any]],
                                                     tmp_path: Path) -> None:
    llm = demo["llm"]
    results = [r for r in llm if r.target == "tiny-gpt2"][:3]
    baselines = [r for r in llm if r.audit.role == "baseline"][:1]
    compared = [r for r in llm if r.target == "retrained"][:2]
    report = AuditReport(results, baselines=baselines, compared=compared, kind="llm",
                         func="audit_llm").with_settings(**FAST)
    index = report.report(tmp_path / "out", title="An <LLM> audit")
    assert index == tmp_path / "out" / "index.html" and index.is_file()
    page = index.read_text(encoding="utf-8")
    assert "An &lt;LLM&gt; audit" in page and report.verdict.label in page
    written = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    overview = [Finding(**entry) for entry in written["overview"]]
    assert report.verdict == strongest_finding(
        [f for f in overview if not f.artefact.startswith("retrained")])


# ---------------------------------------------------------------------- to_frame
def _mixed(demo: dict[str, list[Any]]) -> AuditReport:
    """Every result class: attack results, a fidelity classifier, risks, closeness checks
    (synthetic) and attribute guesses, a baseline and a compared artefact."""
    synthetic = demo["synthetic"]
    by_type: dict[str, list[Any]] = {}
    for result in synthetic:
        by_type.setdefault(type(result).__name__, []).append(result)
    model = demo["model"]
    return AuditReport(
        [*model[:3], *by_type["RiskResult"][:2], *by_type["ProximityResult"][:2],
         *by_type["AttackResult"][:1], *demo["attribute"][:2]],
        baselines=model[3:4], compared=model[4:5], kind="mixed", func="test")


@needs_demo
def test_to_frame_has_the_numbers_of_metrics_csv_and_results_json(
        demo: dict[str, list[Any]], tmp_path: Path) -> None:
    report = _mixed(demo).with_settings(**FAST)
    frame = report.to_frame()
    assert len(frame) == len(report.all_results)
    assert list(frame.columns[:7]) == ["target", "attack", "dataset", "generator", "kind",
                                       "role", "result_kind"]
    assert frame["role"].tolist() == ["result"] * 10 + ["baseline", "compared"]
    assert frame["kind"].tolist() == [r.audit.kind for r in report.all_results]
    report.report(tmp_path, save_results=False)
    csv = pd.read_csv(tmp_path / "metrics.csv")
    page = report.page()
    rows = [i for i, r in enumerate(report.all_results) if any(r is p for p in page.results)]
    assert len(rows) == len(csv) == len(page.results) == 5  # the fidelity one apart
    attacks = frame.iloc[rows].reset_index(drop=True)
    assert attacks[["target", "attack"]].equals(csv[["target", "attack"]])
    # (an all-empty text column, e.g. generator, reads back from CSV as numbers)
    numeric = [c for c in csv.select_dtypes("number").columns
               if pd.api.types.is_numeric_dtype(attacks[c])]
    assert len(numeric) > 20 and "effective_epsilon_lower_bound" in numeric
    np.testing.assert_allclose(attacks[numeric].to_numpy(float), csv[numeric].to_numpy(float),
                               rtol=1e-12, equal_nan=True)
    written = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    risks = frame.iloc[3:5]
    assert risks["risk"].tolist() == pytest.approx([d["risk"]["value"]
                                                    for d in written["risks"]])
    near = frame.iloc[5:7]
    assert near["value_low"].tolist() == pytest.approx(
        [d["value"]["low"] for d in written["proximity"]])
    guesses = frame.iloc[8:10]
    assert guesses["advantage_high"].tolist() == pytest.approx(
        [d["metrics"]["advantage"]["high"] for d in written["attributes"]])


def test_to_frame_without_the_demo_reads_every_attack_result() -> None:
    report = AuditReport(POOL[:2], baselines=POOL[2:3], compared=POOL[3:4], kind="model")
    frame = report.to_frame(n_bootstrap=0, fprs=[0.01, 0.1])
    assert frame["role"].tolist() == ["result", "result", "baseline", "compared"]
    assert frame["kind"].tolist() == ["model"] * 4 and set(frame["result_kind"]) == {
        "membership"}
    assert {"tpr_at_fpr_0.01", "tpr_at_fpr_0.1_low", "auc_high"} <= set(frame.columns)
    assert "tpr_at_fpr_0.001" not in frame.columns
    expected = [r.metrics(n_bootstrap=0)["auc"]["value"] for r in report.all_results]
    assert frame["auc"].tolist() == pytest.approx(expected)


# ---------------------------------------------------------------------- files
@needs_demo
def test_save_then_load_all_results_gives_the_results_back(demo: dict[str, list[Any]],
                                                           tmp_path: Path) -> None:
    report = _mixed(demo)
    paths = report.save(tmp_path / "results")
    assert len(paths) == len(report) and all(p.parent == tmp_path / "results" for p in paths)
    back = load_all_results(tmp_path / "results")
    assert len(back) == len(report)
    key = lambda r: (type(r).__name__, r.target, r.attack, r.dataset)  # noqa: E731
    assert sorted(map(key, back)) == sorted(map(key, report))
    saved = {key(r): r for r in back}
    for result in report:
        again = saved[key(result)]
        if isinstance(result, AttackResult):
            np.testing.assert_array_equal(again.scores, result.scores)
        else:
            assert json.dumps(again.to_dict(), default=str) == json.dumps(result.to_dict(),
                                                                          default=str)


# ---------------------------------------------------------------------- display
@pytest.mark.parametrize("name", ["<script>alert(1)</script>", "a & b \"quoted\" 'x'",
                                  "<img src=x onerror=alert(1)>"])
def test_the_notebook_view_escapes_names(name: str) -> None:
    crafted = gaussian_result(100, 100, 3.0, seed=4, target=name, attack=name, dataset=name)
    report = AuditReport([crafted], baselines=[POOL[0]], kind=name, func="audit_model")
    view = report.with_settings(**FAST)._repr_html_()
    assert "<script" not in view and "<img src=x" not in view
    assert html.escape(name) in view
    # The overview table: the header and one row per artefact (the crafted and the pool's).
    assert view.split("</table>")[0].count("<tr>") == 3
    assert "Severe leakage" in view and "audit_model" in view


def test_the_plain_repr_is_quick_and_says_the_verdict_once_known() -> None:
    report = AuditReport(POOL[:2], baselines=POOL[2:3], kind="model",
                         func="audit_model").with_settings(**FAST)
    text = repr(report)
    assert text.startswith("AuditReport(kind='model', func='audit_model', 2 results, "
                           "1 baselines, 0 compared")
    assert "not computed" in text and not report._pages  # a repr never bootstraps
    label = report.verdict.label
    assert repr(report).endswith(f"verdict: {label})")


def test_the_root_package_exports_it_and_stays_light() -> None:
    assert privaudit.AuditReport is AuditReport and "AuditReport" in privaudit.__all__
    code = ("import sys, privaudit; print(','.join(m for m in ('jinja2', 'matplotlib', "
            "'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"import privaudit pulled in: {out}"
