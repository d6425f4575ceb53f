"""The report of a DP-training audit for every bound method, clopper-pearson included.

The bound-against-guesses curve used to know steinke and fdp only, so a result audited
with ``methods=["clopper-pearson"]`` could not be reported at all.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from privaudit.audits import BOUND_METHODS
from privaudit.metrics import canary_epsilon_lower_bound
from privaudit.report import build_report
from privaudit.report._sections_dp import DPTrainingSection, bound_curve
from privaudit.results import AuditInfo, DPAuditResult

M = 200


def _result(methods: tuple[str, ...], signal: float = 3.0) -> DPAuditResult:
    """One run of a Gaussian mechanism's canary scores, bounded by ``methods``."""
    rng = np.random.default_rng(0)
    included = rng.random(M) < 0.5
    scores = signal * included + rng.normal(size=M)
    level = 1 - 0.05 / len(methods)
    bounds = [{m: canary_epsilon_lower_bound(scores[included], scores[~included],
                                             delta=1e-5, confidence=level, method=m,
                                             two_sided=True) for m in methods}]
    return DPAuditResult(canary_ids=[f"canary-{i:05d}" for i in range(M)], scores=scores,
                         included=included, claimed_epsilon={"claimed": 1.0}, delta=1e-5,
                         bounds=bounds, attack="dirac-gradient-canaries", target="mech",
                         canaries="dirac-gradient", audit=AuditInfo(kind="dp"))


def test_the_clopper_pearson_curve_is_the_explicit_top_k_bound() -> None:
    result = _result(("clopper-pearson",))
    counts, bounds = bound_curve(result, "clopper-pearson")
    ranked = np.sort(result.scores[0])[::-1]  # continuous scores: no ties
    inside, outside = result.in_out_scores(0)
    for k, value in zip(counts[::5], bounds[::5], strict=True):
        expected = canary_epsilon_lower_bound(
            inside, outside, delta=1e-5, confidence=result.bound_confidence,
            method="clopper-pearson", threshold=float(ranked[k - 1])).epsilon
        assert value == pytest.approx(expected, abs=1e-12)
    assert max(bounds) > 0.0


def test_clopper_pearson_is_nan_on_the_curve_when_every_canary_was_included() -> None:
    result = _result(("steinke", "clopper-pearson"))
    result.included[:] = True  # the curve only reads scores and inclusion
    _, bounds = bound_curve(result, "clopper-pearson")
    assert all(np.isnan(bounds))
    assert not any(np.isnan(bound_curve(result, "steinke")[1]))


@pytest.mark.parametrize("methods", [("clopper-pearson",), BOUND_METHODS])
def test_a_report_is_built_for_every_bound_method(methods, tmp_path) -> None:
    result = _result(tuple(methods))
    section = DPTrainingSection()
    page = SimpleNamespace(all_results=[result])
    [block] = section.context(page)["dp_blocks"]
    assert block["curve"].startswith("data:image/png")
    [finding] = section.findings(page)
    assert finding.kind == "dp-training"
    build_report([result], tmp_path / "report", n_bootstrap=10)
    pages = [p.read_text(encoding="utf-8") for p in (tmp_path / "report").rglob("*.html")]
    assert any("clopper-pearson" in page for page in pages)
