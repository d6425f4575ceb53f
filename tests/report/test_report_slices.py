"""The Slices and Most exposed records sections of the HTML report."""

from __future__ import annotations

import html as html_lib
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.tree import DecisionTreeClassifier

import privaudit
from privaudit.report import build_report, write_html_report
from privaudit.report._sections_slices import slice_sections as _slice_sections
from privaudit.results import AttackResult, AuditInfo, SliceSummary

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


@pytest.fixture(scope="module")
def results(make_result):
    """Four sliced results of an audit of a depth-8 tree on digits, and one unsliced."""
    X, y = load_digits(return_X_y=True)
    labels = (np.random.default_rng(0).random(len(y)) < 0.5).astype(int)
    model = DecisionTreeClassifier(max_depth=8, random_state=0)
    model.fit(X[labels == 1], y[labels == 1])
    audited = privaudit.audit_model(model, X, y, labels, dataset="digits")
    return [*audited, make_result(300, 300, 1.0, seed=7, target="plain", attack="loss")]


@pytest.fixture(scope="module")
def built(results, tmp_path_factory):
    directory = tmp_path_factory.mktemp("slices-report")
    index = build_report(results, directory, n_bootstrap=30)
    return directory, index.read_text(encoding="utf-8")


def _blocks(page: str, kind: str) -> dict[str, str]:
    """The HTML of each <details> block of a section, keyed by the result name shown."""
    out = {}
    for block in page.split(f'<details class="block {kind}"')[1:]:
        block = block[:block.index("</details>")]
        name = re.search(r"<summary><strong>(.*?)</strong>", block).group(1)
        out[html_lib.unescape(name)] = block
    return out


def _expected_hot(result: AttackResult) -> int:
    rows = result.audit.slices.rows
    entire_high = rows[0]["auc_high"]
    return sum(row["slice_type"] != "entire" and row["status"] == "ok"
               and row["auc_low"] > entire_high for row in rows)


def test_sections_are_in_the_nav_and_on_the_page(built, results):
    _, page = built
    nav = page[page.index('<nav class="toc">'):page.index("</nav>")]
    assert '<a href="#slices">Slices</a>' in nav
    assert '<a href="#exposed">Most exposed records</a>' in nav
    assert '<section id="slices">' in page and '<section id="exposed">' in page
    sliced = [r.name for r in results if r.audit.slices is not None]
    assert len(sliced) == 4
    assert sorted(_blocks(page, "slices")) == sorted(sliced)
    assert sorted(_blocks(page, "exposed")) == sorted(sliced)
    # Collapsed by default, so that twenty results still make a short page.
    assert "<details open" not in page


def test_highlighted_subgroups_are_marked_and_explained(built, results):
    _, page = built
    assert "lies entirely above the interval of the entire dataset" in page
    blocks = _blocks(page, "slices")
    total = 0
    for r in results[:4]:
        block = blocks[r.name]
        n_hot = _expected_hot(r)
        assert block.count('class="slice-hot"') == n_hot
        assert block.count("▲ above overall") == n_hot
        if n_hot:
            assert f"{n_hot} subgroup" in block[:block.index("</summary>")]
        total += n_hot
    # The tree's misclassified records and its top loss decile leak far more than average.
    assert total >= 4


def test_slice_table_rows_and_numbers(built, results):
    _, page = built
    r = results[0]
    block = _blocks(page, "slices")[r.name]
    rows = r.audit.slices.rows
    shown = [row for row in rows if row["status"] != "empty"]
    body = block[block.index("<tbody>"):block.index("</tbody>")]
    assert body.count("<tr") == len(shown)
    n_empty = len(rows) - len(shown)
    assert n_empty > 0 and f"{n_empty} empty slices not shown" in block
    entire = rows[0]
    assert "Entire dataset" in body and f"{entire['auc']:.3f}" in body
    assert f"[{entire['auc_low']:.3f}, {entire['auc_high']:.3f}]" in body
    assert f"{entire['n_members']:,} / {entire['n_non_members']:,}" in body
    assert "TPR @ 1% FPR" in block
    for row in shown:
        if row["status"] == "too_small":
            assert "too few records" in body


def test_most_exposed_table_lists_the_records_in_order(built, results):
    _, page = built
    for r in results[:4]:
        block = _blocks(page, "exposed")[r.name]
        cells = re.findall(r'<tr><td class="num">(\d+)</td><td>([^<]*)</td>'
                           r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td></tr>', block)
        exposed = r.audit.slices.most_exposed
        assert [c[1] for c in cells] == [str(row["record_id"]) for row in exposed]
        assert [c[3] for c in cells] == [f"{row['detection_fpr']:.4f}" for row in exposed]
        fprs = [float(c[3]) for c in cells]
        assert fprs == sorted(fprs)
        if r.audit.slices.most_exposed_tied > len(exposed):
            assert f"{r.audit.slices.most_exposed_tied:,} members have a detection FPR" in block


def test_page_without_slices_has_no_section(make_result, tmp_path):
    page = write_html_report([make_result(100, 100, 1.0)], tmp_path,
                             n_bootstrap=0).read_text(encoding="utf-8")
    assert 'id="slices"' not in page and "#slices" not in page
    assert 'id="exposed"' not in page and "#exposed" not in page
    assert "Slices and exposed records." not in page


def test_malformed_slices_are_ignored(make_result, tmp_path):
    odd = [make_result(50, 50, 1.0, seed=i, attack=f"a{i}") for i in range(3)]
    for r in odd:
        r.audit.slices = SliceSummary()
    odd[0].audit.slices.rows = "not a table"
    odd[1].audit.slices.rows = [1, 2, 3]
    odd[2].audit.slices.most_exposed = []
    page = write_html_report(odd, tmp_path, n_bootstrap=0).read_text(encoding="utf-8")
    assert 'id="slices"' not in page and 'id="exposed"' not in page


def test_results_json_keeps_the_summary_lean_and_folders_keep_slices(built, results):
    directory, _ = built
    doc = json.loads((directory / "results.json").read_text())
    for entry, r in zip(doc["results"], results, strict=True):
        assert "rows" not in entry["audit"].get("slices", {})
        if r.audit.slices is not None:
            assert entry["audit"]["slices"]["most_exposed"] == r.audit.slices.most_exposed
            saved = json.loads((directory / entry["folder"] / "result.json").read_text())
            assert saved["audit"]["slices"]["rows"] == r.audit.slices.rows
    # metrics.csv is the same table with or without slices.
    bare = [AttackResult(labels=r.labels, scores=r.scores, record_ids=r.record_ids,
                         attack=r.attack, target=r.target, dataset=r.dataset,
                         extra=r.extra)
            for r in results]
    other = build_report(bare, directory / "bare", n_bootstrap=30, save_results=False)
    pd.testing.assert_frame_equal(pd.read_csv(directory / "metrics.csv"),
                                  pd.read_csv(other.parent / "metrics.csv"))
    assert "Slices" not in other.read_text(encoding="utf-8").split("<main")[0]


def _row(kind: str, status: str, auc: float | None, width: float) -> dict:
    low = None if auc is None else auc - width
    high = None if auc is None else auc + width
    return {"slice_type": kind, "slice_value": "v", "n_members": 10, "n_non_members": 10,
            "status": status, "auc": auc, "auc_low": low, "auc_high": high,
            "advantage": None, "advantage_low": None, "advantage_high": None,
            "tpr_at_fpr_0.01": 0.0, "tpr_at_fpr_0.01_low": 0.0, "tpr_at_fpr_0.01_high": 0.0,
            "loss_low": None, "loss_high": None}


slice_rows = st.lists(
    st.tuples(st.sampled_from(["class", "correctness", "loss_percentile", "sex"]),
              st.sampled_from(["ok", "ok", "too_small", "one_class", "empty"]),
              st.floats(0, 1), st.floats(0, 0.2)),
    max_size=15,
)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1), st.floats(0, 0.2), slice_rows)
def test_highlight_rule_matches_a_direct_count(entire_auc, entire_width, rows):
    entire = _row("entire", "ok", entire_auc, entire_width)
    stored = [entire] + [_row(k, s, a if s == "ok" else None, w) for k, s, a, w in rows]
    result = AttackResult(labels=[1, 0], scores=[1.0, 0.0],
                          audit=AuditInfo(slices=SliceSummary(rows=stored)))
    (section,) = _slice_sections([result])
    expected = [s == "ok" and a - w > entire_auc + entire_width for _, s, a, w in rows]
    assert section["n_hot"] == sum(expected)
    assert [r["hot"] for r in section["rows"][1:]] == [
        hot for hot, (_, s, _, _) in zip(expected, rows, strict=True) if s != "empty"]
    assert section["n_empty"] == sum(s == "empty" for _, s, _, _ in rows)
    assert section["n_scored"] == 1 + sum(s == "ok" for _, s, _, _ in rows)
    assert not section["rows"][0]["hot"]  # the entire dataset is the reference
    # A slice that was not scored shows a dash and why; a scored one, a number.
    for shown in section["rows"]:
        assert (shown["auc"]["value"] == "—") is (shown["status"] != "")
        if shown["status"] == "":
            assert math.isfinite(float(shown["auc"]["value"]))


# ------------------------------------------------------------------- in a real browser

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
]


@pytest.mark.browser
def test_open_blocks_render_the_highlighted_rows(built, tmp_path):
    import matplotlib.image

    chromium = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if chromium is None:
        pytest.fail("Chromium is missing: install it with `apt-get install -y chromium`.")
    _, page = built
    # Opened blocks only: the rest of the page is dropped so that the sections fill the shot.
    start, end = page.index('<section id="slices">'), page.index('<section id="methods">')
    head = page[:page.index("<body>") + len("<body>")]
    opened = head + page[start:end].replace("<details class=", "<details open class=")
    path = tmp_path / "open.html"
    path.write_text(opened + "</body></html>", encoding="utf-8")
    png = tmp_path / "open.png"
    proc = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}",
         "--window-size=1280,9000", path.as_uri()],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0 and png.is_file(), proc.stderr[-2000:]
    pixels = np.round(matplotlib.image.imread(png)[..., :3] * 255).astype(int)

    def count(hex_color: str, tolerance: int = 3) -> int:
        match = np.ones(pixels.shape[:2], dtype=bool)
        for channel, i in enumerate((1, 3, 5)):
            match &= np.abs(pixels[..., channel] - int(hex_color[i:i + 2], 16)) <= tolerance
        return int(match.sum())

    # The highlighted rows' background and their dark-red left bar are drawn.
    assert count("#fde2e1") > 20_000
    assert count("#9b1c1c", 10) > 1_000
    # Tables are drawn: plenty of dark text over the height of the content.
    content = np.flatnonzero(~np.all(pixels >= 250, axis=-1).all(axis=1))
    assert content.size and content.max() > 3_000
    assert np.all(pixels[:content.max()] < 100, axis=-1).mean() > 0.005
