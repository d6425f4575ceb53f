"""The report's Memorisation section (issue 23): extraction, extracted texts, canaries.

Results are built by hand (no model): the page shows the members-vs-held-out table, the
texts greedy decoding gave back with the matched span highlighted and every text
HTML-escaped, and the canaries' exposure against their repetitions; the findings read
the shares on privaudit's share scale; the results go through results.json, the store and
a rebuild from the saved folder.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.metrics import CanaryBound, newcombe_interval, wilson_interval
from privaudit.report import build_report
from privaudit.report._html import HtmlReport
from privaudit.report._sections_memorisation import (
    MemorisationSection,
    extracted_texts,
    extraction_rows,
)
from privaudit.results import MemorisationResult, load_all_results
from privaudit.results._memorisation import COMPARISON_KEYS

HOSTILE = "<script>alert('x')</script> & co"
#: The largest exposure of a four-digit secret: log2 of 10,000 candidates (rank 1).
TOP = math.log2(10_000)


def _estimate(e):
    return {"value": float(e.value), "low": float(e.low), "high": float(e.high)}


def extraction_result(extracted=(1, 1, 1, 0), held_extracted=(0, 0, 0, 0), target="lm"):
    """Members first; an extracted member recites its suffix, whose text is hostile."""
    ext = np.r_[extracted, held_extracted].astype(float)
    labels = np.r_[np.ones(len(extracted)), np.zeros(len(held_extracted))].astype(int)
    n = len(labels)
    k1, n1, k0, n0 = int(sum(extracted)), len(extracted), int(sum(held_extracted)), \
        len(held_extracted)
    comparison = {"member_mean": _estimate(wilson_interval(k1, n1)),
                  "held_out_mean": _estimate(wilson_interval(k0, n0)),
                  "difference": _estimate(newcombe_interval(k1, n1, k0, n0)),
                  "auc": {"value": 0.8, "low": 0.6, "high": 1.0}, "interval": "wilson",
                  "confidence": 0.95}
    suffixes = [f"{HOSTILE} number {i}" for i in range(n)]
    continuations = [s if e else f"something else {i}" for i, (s, e) in
                     enumerate(zip(suffixes, ext, strict=True))]
    continuations[0] = suffixes[0][:12] + " diverges"  # a partial match of 12 characters
    matched = np.where(ext > 0, 9, 0)
    matched[0] = 3
    return MemorisationResult(
        check="extraction", labels=labels, values={"k-extractability": ext},
        comparisons={"k-extractability": comparison},
        prefixes=[f"prefix {i} &" for i in range(n)], continuations=continuations,
        suffixes=suffixes, matched_tokens=matched, suffix_tokens=np.full(n, 9),
        target=target, parameters={"prefix_length": 4, "suffix_length": 9})


def canary_result(exposures=(1.0, 6.0, TOP), included=None, bound=None):
    rows = [{"format": f"the <b>code</b> of canary {i} is {{secret}}", "secret": f"{i:04d}",
             "repetitions": r, "exposure": e, "rank": 2.0 ** (TOP - e),
             "log_perplexity": 10.0 - e, "method": "exact", "space_size": 10_000,
             "included": None if included is None else bool(included[i]), "score": e}
            for i, (r, e) in enumerate(zip((1, 4, 16) * (len(exposures) // 3), exposures,
                                           strict=True))]
    return MemorisationResult(check="canaries", canaries=rows, epsilon=bound,
                              delta=None if bound is None else 1e-5, target="lm",
                              parameters={"recipe": "built-in fine-tuning"})


def _section_html(results) -> str:
    page = HtmlReport(results, n_bootstrap=0).render()
    match = re.search(r'<section id="memorisation">.*?</section>', page, re.S)
    assert match, "the Memorisation section is missing"
    return match.group(0)


def test_extracted_texts_are_escaped_and_the_matched_span_highlighted():
    html = _section_html([extraction_result()])
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&amp; co" in html and "prefix 0 &amp;" in html
    # Member 0 matched its first 12 characters only; members 1 and 2 the whole suffix.
    assert "<mark>&lt;script&gt;aler</mark> diverges" in html
    marks = re.findall(r"<mark>(.*?)</mark>", html)
    assert sum("number 1" in m or "number 2" in m for m in marks) == 2
    assert html.count('<span class="flag">extracted</span>') == 2


def test_canary_table_escapes_formats_and_shows_the_exposure_plot():
    bound = CanaryBound(0.7, "steinke", "bonferroni", 6, 3, 3, 3, 0, 3, 5.0, float("nan"),
                        0.95, 1e-5)
    html = _section_html([canary_result((1.0, 6.0, TOP) * 2, [1, 1, 1, 0, 0, 0], bound),
                          extraction_result()])
    assert "<b>code</b>" not in html and "&lt;b&gt;code&lt;/b&gt;" in html
    assert "data:image/png;base64," in html
    assert "ε ≥ <strong>0.70</strong>" in html and "left out" in html


def test_extraction_rows_give_rates_with_their_intervals():
    row = extraction_rows(extraction_result())[0]
    assert row["rate"] and row["members"]["value"] == "75.0%"
    low, high = wilson_interval(3, 4).low, wilson_interval(3, 4).high
    assert row["members"]["interval"] == f"[{low:.1%}, {high:.1%}]"


@pytest.mark.parametrize(("extracted", "held", "order"), [
    ((1, 1, 1, 0), (0, 0, 0, 0), ["member", "member", "member"]),
    ((0, 0, 0, 0), (1, 0, 0, 0), ["member", "held-out"]),
    ((0, 1, 0, 1), (1, 1, 0, 0), ["member", "member", "member", "held-out", "held-out"]),
])
def test_texts_shown_members_first_then_longest_match(extracted, held, order):
    result = extraction_result(extracted, held)
    shown = extracted_texts(result)
    assert [t["side"] for t in shown] == order
    member_matches = [int(t["tokens"].split(" / ")[0]) for t in shown if t["side"] == "member"]
    assert member_matches == sorted(member_matches, reverse=True)
    assert all(t["matched"] + t["rest"] == result.continuations[int(t["id"])] for t in shown)


@pytest.mark.parametrize(("extracted", "held", "severity"), [
    ((1,) * 8, (0,) * 8, "critical"),       # Newcombe's lower end above one half
    ((1, 1, 0, 0, 0, 0, 0, 0), (0,) * 8, "minimal"),  # its interval reaches 0
    ((0,) * 8, (0,) * 8, "minimal"),
])
def test_extraction_finding_reads_the_difference_lower_end(extracted, held, severity):
    section = MemorisationSection()
    page = HtmlReport([extraction_result(extracted, held)], n_bootstrap=0)
    (finding,) = section.findings(page)
    assert finding.severity == severity and finding.section == "memorisation"
    low = newcombe_interval(sum(extracted), 8, sum(held), 8).low
    assert finding.interval.startswith(f"[{low:+.1%}")


@pytest.mark.parametrize(("exposures", "first"), [
    ((1.0, 6.0, TOP), 1), ((TOP,) * 3, 3), ((0.5, 1.0, 2.0), 0)])
def test_canary_finding_counts_the_secrets_ranked_first(exposures, first):
    result = canary_result(exposures)
    (finding,) = MemorisationSection().findings(HtmlReport([result], n_bootstrap=0))
    assert finding.metric.startswith(f"{first} of 3 canaries")
    share = wilson_interval(first, 3)
    assert finding.interval == f"[{share.low:.1%}, {share.high:.1%}]"


def test_results_json_store_and_rebuild(tmp_path):
    bound = CanaryBound(0.7, "steinke", "bonferroni", 6, 3, 3, 3, 0, 3, 5.0, float("nan"),
                        0.95, 1e-5)
    results = [extraction_result(), canary_result((1.0, 6.0, TOP) * 2,
                                                  [1, 1, 1, 0, 0, 0], bound)]
    build_report(results, tmp_path / "r", n_bootstrap=0)
    doc = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    entries = {e["attack"]: e for e in doc["memorisation"]}
    assert entries["canaries"]["epsilon_lower_bound"] == 0.7
    assert entries["canaries"]["exposure_r16"] == pytest.approx(TOP)
    assert entries["extraction"]["k-extractability"]["member_mean"]["value"] == 0.75
    assert (tmp_path / "r" / entries["extraction"]["folder"] / "memorisation.json").is_file()
    loaded = load_all_results(tmp_path / "r")
    assert sorted(r.attack for r in loaded) == ["canaries", "extraction"]
    again = {r.attack: r for r in loaded}
    assert again["extraction"].continuations == results[0].continuations
    # NaN (no "out" guess) comes back NaN: compare as strings.
    assert repr(again["canaries"].epsilon) == repr(bound)
    build_report(loaded, tmp_path / "again", n_bootstrap=0)
    assert "&lt;script&gt;" in (tmp_path / "again" / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"check": "extract"}, "check"),
    ({"check": "extraction", "labels": [1, 2]}, "labels"),
    ({"check": "canaries", "canaries": []}, "canaries"),
    ({"check": "extraction", "labels": [1, 0], "values": {"verbmem": [0.0, 1.0]},
      "comparisons": {"verbmem": {"auc": 0.5}}}, "comparisons.verbmem"),
    ({"check": "canaries", "canaries": [{"format": "x"}]}, "canaries[0]"),
])
def test_bad_results_are_refused_naming_the_field(kwargs, param):
    with pytest.raises((ValueError, TypeError), match=re.escape(f"'{param}'")):
        MemorisationResult(**kwargs)


@settings(max_examples=40, deadline=None)
@given(pairs=st.lists(st.tuples(st.text("ab<&", max_size=6), st.text("ab<&", max_size=6)),
                      min_size=1, max_size=4))
def test_matched_span_is_the_common_start_and_survives_a_round_trip(pairs, tmp_path_factory):
    """The highlighted span is the longest common start; save and load keep every field."""
    n = len(pairs)
    result = MemorisationResult(
        check="extraction", labels=np.arange(n) % 2, values={"verbmem": np.linspace(0, 1, n)},
        comparisons={"verbmem": {k: {"value": 0.5, "low": 0.0, "high": 1.0}
                                 for k in COMPARISON_KEYS}},
        prefixes=["p"] * n, continuations=[c for c, _ in pairs],
        suffixes=[s for _, s in pairs], matched_tokens=np.zeros(n, int),
        suffix_tokens=np.ones(n, int))
    for (c, s), k in zip(pairs, result.matched_chars, strict=True):
        assert c[:k] == s[:k] and (k == min(len(c), len(s)) or c[k] != s[k])
    folder = tmp_path_factory.mktemp("saved")
    result.save(folder)
    back = MemorisationResult.load(folder, require_digest=True)
    assert back.to_dict() == result.to_dict()
