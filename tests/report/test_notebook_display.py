"""Results and reports show themselves in a notebook (issue 24, "Notebooks").

Every result class and the report answer ``_repr_html_`` with the verdict, the metrics
with their intervals (the numbers of ``to_frame``, so of metrics.csv and results.json) and,
for attack results, the ROC figures as inline PNGs; without matplotlib the tables alone.
Every name is escaped. The figures are counted, not drawn (tests/conftest.py), except in
the one test that decodes a real one.
"""

from __future__ import annotations

import base64
import html
import re
import sys

import numpy as np
import pytest

from privaudit.metrics import canary_epsilon_lower_bound
from privaudit.report import AuditReport
from privaudit.report._common import figure_png
from privaudit.report._format import fmt
from privaudit.report._notebook import FIGURE_LIMIT, FOLD_ROWS, metric_rows
from privaudit.results import (
    AttackResult,
    AttributeResult,
    AuditInfo,
    DPAuditResult,
    ProximityResult,
    RiskResult,
)

#: Names that would run or break out of an attribute if not escaped (the ROC figure's
#: ``alt`` attribute holds the artefact's name).
CRAFTED = ("<script>alert(1)</script>", "x\" onerror=\"alert(1)\" & 'y'")
IMAGE = re.compile(r'<img alt="[^"<>]*" width="\d+" src="data:image/png;base64,([A-Za-z0-9+/=]+)">')
#: Small enough for a quick test, enough for intervals (the verdict reads them).
FAST = {"n_bootstrap": 20}


def attack(name: str = "model", attack_name: str = "loss", *, shift: float = 2.0,
           seed: int = 0) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(60, dtype=int), np.zeros(60, dtype=int)]
    scores = np.r_[rng.normal(shift, 1, 60), rng.normal(0, 1, 60)]
    return AttackResult(labels=labels, scores=scores, target=name, attack=attack_name)


def risk(name: str, attack_name: str = "singling-out") -> RiskResult:
    return RiskResult(n_attacks=100, n_success=30, n_baseline=5, n_control=10,
                      attack=attack_name, target=name)


def proximity(name: str, attack_name: str = "dcr") -> ProximityResult:
    rng = np.random.default_rng(1)
    return ProximityResult("dcr", "quantile", synthetic=rng.uniform(0, 1, 200),
                           baseline=rng.uniform(0.2, 1, 200), target=name,
                           attack=attack_name)


def attribute(name: str, attack_name: str = "model-inversion") -> AttributeResult:
    truth = np.array([0, 1] * 20)
    guesses = truth.copy()
    guesses[25:35] = 1 - truth[25:35]
    return AttributeResult(candidates=["f", "m"], guesses=guesses, truth=truth,
                           members=np.r_[np.ones(20), np.zeros(20)].astype(int),
                           model_free={"prior": np.zeros(40, dtype=int)},
                           attack=attack_name, target=name, sensitive_attribute="sex")


def dp(name: str, attack_name: str = "canaries") -> DPAuditResult:
    rng = np.random.default_rng(0)
    included = rng.random((1, 300)) < 0.5
    scores = 6.0 * included + rng.normal(size=(1, 300))
    bounds = [{"steinke": canary_epsilon_lower_bound(scores[0][included[0]],
                                                     scores[0][~included[0]], delta=1e-5,
                                                     two_sided=True)}]
    return DPAuditResult(canary_ids=[f"c{i}" for i in range(300)], scores=scores,
                         included=included, claimed_epsilon={"rdp": 1.0}, delta=1e-5,
                         bounds=bounds, attack=attack_name, target=name,
                         canaries="dirac-gradient", audit=AuditInfo(kind="dp"))


MAKERS = {"attack": attack, "risk": risk, "proximity": proximity, "attribute": attribute,
          "dp": dp}


def _cells(view: str) -> list[list[str]]:
    """The body rows of every table in ``view``, as lists of unescaped cell texts."""
    rows = re.findall(r"<tr>(.*?)</tr>", view)
    return [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)] for row in rows]


@pytest.fixture(autouse=True, scope="module")
def _figures(figures_not_drawn):
    """Every figure counted, none drawn, unless a test draws its own."""


# ---------------------------------------------------------------------- every result class
@pytest.mark.parametrize("kind", MAKERS)
def test_every_result_shows_its_verdict_and_metrics(kind: str) -> None:
    result = MAKERS[kind]("model")
    view = result._repr_html_()
    report = AuditReport([result])
    assert report.verdict is not None
    assert html.escape(report.verdict.label) in view and "Verdict:" in view
    assert type(result).__name__ in view
    rows = [r for r in _cells(view) if len(r) == 3]
    assert rows, view
    # The table is to_frame's numbers: every metric line reads the frame's value.
    shown = {metric: value for metric, value, _ in rows}
    expected = metric_rows(report.all_results, report.to_frame())
    assert [(r.metric, r.value, r.interval) for r in expected] == [tuple(r) for r in rows]
    assert len(shown) == len(rows)  # one line per metric
    assert not any(c.startswith("n_") for c in shown)  # counts are not metrics
    # Intervals shown (a DP audit's ε bound is itself one side of an interval).
    assert any(v != "—" for _, _, v in rows) == (kind != "dp")


@pytest.mark.parametrize("kind", MAKERS)
@pytest.mark.parametrize("name", CRAFTED)
def test_every_name_is_escaped(kind: str, name: str) -> None:
    result = MAKERS[kind](name, name)
    view = result._repr_html_()
    assert name not in view, "a name reached the page unescaped"
    assert "<script" not in view and '" onerror="' not in view
    assert html.escape(name, quote=True) in view or html.escape(name, quote=False) in view


def test_attack_values_and_intervals_are_the_results_own() -> None:
    """A reference: the AUC line reads AttackResult.metrics at the report's settings."""
    result = attack("model", shift=1.0, seed=3)
    view = result._repr_html_()
    metrics = result.metrics(n_bootstrap=1000, random_state=0)
    auc = metrics["auc"]
    line = next(r for r in _cells(view) if r and r[0] == "AUC")
    assert line == ["AUC", fmt(auc["value"]), f"[{fmt(auc['low'])}, {fmt(auc['high'])}]"]


def test_a_metric_undefined_for_a_result_is_left_out() -> None:
    import pandas as pd

    result = attack("model")
    frame = pd.DataFrame([{"target": "model", "attack": "loss", "auc": 0.7, "auc_low": 0.6,
                           "auc_high": 0.8, "precision": float("nan"),
                           "precision_low": float("nan"), "precision_high": float("nan"),
                           "effective_epsilon_lower_bound": 1.5,
                           "effective_epsilon_lower_bound_note": "", "n_members": 60,
                           "confidence": 0.95, "details_train_r2": 0.9}])
    rows = metric_rows([result], frame)
    assert [(r.metric, r.value, r.interval) for r in rows] == [
        ("AUC", "0.700", "[0.600, 0.800]"), ("Effective ε lower bound", "1.500", "—")]


# ---------------------------------------------------------------------- figures
def test_attack_results_carry_their_roc_figure_and_the_others_none() -> None:
    assert len(IMAGE.findall(attack("model")._repr_html_())) == 1
    for kind in ("risk", "proximity", "attribute", "dp"):
        assert "<img" not in MAKERS[kind]("model")._repr_html_(), kind


def test_without_matplotlib_the_tables_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    with_figure = attack("model")._repr_html_()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    view = attack("model")._repr_html_()
    assert "<img" not in view
    assert view == IMAGE.sub("", with_figure)  # the same view, the figure left out


def test_a_real_figure_is_a_small_png(monkeypatch: pytest.MonkeyPatch) -> None:
    import privaudit.report._html as page_module

    # figure_png as imported before figures_not_drawn replaced it: really drawn.
    monkeypatch.setattr(page_module, "figure_png", figure_png)
    view = attack("model")._repr_html_()
    (data,) = IMAGE.findall(view)
    png = base64.b64decode(data)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert 5_000 < len(png) < 120_000, len(png)


# ---------------------------------------------------------------------- the report
def test_the_report_shows_verdict_answers_folded_metrics_and_figures() -> None:
    results = [attack(f"model-{i % 2}", f"attack-{i}", shift=0.5 * i, seed=i)
               for i in range(4)]
    report = AuditReport(results[:3], baselines=results[3:], kind="model",
                         func="audit_model").with_settings(**FAST)
    view = report._repr_html_()
    assert "audit_model" in view and "3 results, 1 baselines, 0 compared" in view
    assert html.escape(report.verdict.text) in view
    answers = [r for r in _cells(view) if len(r) == 5 and r[4] in
               {f.label for f in report.page().overview}]
    assert [a[0] for a in answers] == [f.artefact for f in report.page().overview]
    lines = metric_rows(report.all_results, report.to_frame())
    assert len(lines) > FOLD_ROWS and f"<summary>All metrics ({len(lines)} lines)" in view
    assert len(IMAGE.findall(view)) == len(report.page().roc_groups) == 2  # one per model


@pytest.mark.parametrize("n_models", [FIGURE_LIMIT, FIGURE_LIMIT + 2])
def test_at_most_a_few_figures_then_a_pointer_to_the_html_report(n_models: int) -> None:
    results = [attack(f"model-{i}", seed=i) for i in range(n_models)]
    view = AuditReport(results).with_settings(**FAST)._repr_html_()
    assert len(IMAGE.findall(view)) == FIGURE_LIMIT
    more = n_models - FIGURE_LIMIT
    assert ("more ROC figures in the HTML report" in view) == (more > 0)
    assert f"<p>{more} more ROC" in view or more == 0


def test_a_small_report_is_not_folded_and_an_empty_one_says_so() -> None:
    report = AuditReport([risk("a"), risk("b")], kind="synthetic").with_settings(**FAST)
    view = report._repr_html_()
    assert "<details>" not in view and "Residual risk" in view
    assert "No result." in AuditReport([])._repr_html_()


def test_a_report_and_its_one_result_read_the_same() -> None:
    result = attribute("model")
    assert result._repr_html_() == AuditReport([result],
                                               func="AttributeResult")._repr_html_()
