"""Issue 20: a report rebuilt from its saved results keeps its title, description and order."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from privaudit.report import build_report
from privaudit.results import ResultsStore, RiskResult, load_all_results

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")

TITLE = "Quarterly audit: models & tables"


def _results(make_result) -> list:
    # Names whose sorted order is not the report's: a rebuild sorted by path would differ.
    return [make_result(seed=1, target="zeta model", attack="loss"),
            make_result(seed=2, target="alpha model", attack="lira"),
            RiskResult(n_attacks=100, n_success=30, n_baseline=5, n_control=10,
                       target="synthetic table", attack="singling-out"),
            make_result(seed=3, target="mid model", attack="rmia")]


def _order(results) -> list[tuple[str, str]]:
    return [(r.target, r.attack) for r in results]


def _metric_targets(index: Path) -> list[str]:
    html = index.read_text(encoding="utf-8")
    table = html[html.index('id="metrics-table"'):]
    table = table[:table.index("</table>")]
    return re.findall(r'<td class="name">([^<]+)', table)


@pytest.fixture(scope="module")
def _first_report(make_result, tmp_path_factory) -> Path:
    """The report every test starts from, built once for the module (it takes seconds)."""
    folder = tmp_path_factory.mktemp("rebuild") / "first"
    build_report(_results(make_result), folder, title=TITLE, description="Why we audit.",
                 n_bootstrap=0)
    return folder


@pytest.fixture
def report_dir(_first_report, tmp_path) -> Path:
    """A copy of the built report of this test's own (tests edit its manifest)."""
    return Path(shutil.copytree(_first_report, tmp_path / "first"))


@pytest.mark.parametrize("where", ["results", "."])
def test_reloaded_results_keep_the_reports_order_and_title(make_result, report_dir,
                                                           where) -> None:
    loaded = load_all_results(report_dir / where)
    assert _order(loaded) == _order(_results(make_result))
    assert loaded.title == TITLE and loaded.description == "Why we audit."


def test_a_rebuild_keeps_title_description_and_order(report_dir, tmp_path) -> None:
    index = build_report(load_all_results(report_dir / "results"), tmp_path / "again",
                         n_bootstrap=0)
    html = index.read_text(encoding="utf-8")
    assert f"<title>{TITLE.replace('&', '&amp;')}</title>" in html and "Why we audit." in html
    assert _metric_targets(index) == _metric_targets(report_dir / "index.html") == [
        "zeta model", "alpha model", "mid model"]
    # ... and again from the rebuilt one (the manifest is written by every build).
    third = build_report(load_all_results(tmp_path / "again"), tmp_path / "third",
                         n_bootstrap=0)
    assert f"<title>{TITLE.replace('&', '&amp;')}</title>" in third.read_text()


def test_a_given_title_wins_over_the_saved_one(report_dir, tmp_path) -> None:
    index = build_report(load_all_results(report_dir), tmp_path / "renamed",
                         title="New name", n_bootstrap=0)
    assert "<title>New name</title>" in index.read_text(encoding="utf-8")


@pytest.mark.parametrize("manifest", [None, "not json", '{"format": "other"}',
                                      '{"format": "privaudit-report-manifest", "title": 3, '
                                      '"description": null, "folders": []}'])
def test_without_a_good_manifest_the_order_is_by_path_and_the_title_default(
        make_result, report_dir, tmp_path, manifest) -> None:
    path = report_dir / "report.json"
    if manifest is None:
        path.unlink()  # a report written before the manifest existed
    else:
        path.write_text(manifest, encoding="utf-8")
    loaded = load_all_results(report_dir / "results")
    assert loaded.title is None
    assert _order(loaded) == sorted(_order(loaded), key=lambda o: ResultsStore(
        "x").path_for(*o).name)
    index = build_report(loaded, tmp_path / "out", n_bootstrap=0)
    assert "<title>Privacy audit report</title>" in index.read_text(encoding="utf-8")


def test_folders_the_manifest_does_not_list_come_after_in_path_order(
        make_result, report_dir) -> None:
    path = report_dir / "report.json"
    doc = json.loads(path.read_text())
    dropped = doc["folders"].pop(0)  # the first result is now unknown to the manifest
    doc["folders"].insert(0, "results/a-folder-that-was-deleted")
    path.write_text(json.dumps(doc))
    loaded = load_all_results(report_dir / "results")
    order = _order(_results(make_result))
    assert _order(loaded) == [*order[1:], order[0]]
    assert dropped.startswith("results/zeta")


def test_the_cli_rebuild_keeps_the_title(report_dir, tmp_path) -> None:
    from typer.testing import CliRunner

    from privaudit.cli import app

    out = tmp_path / "cli"
    run = CliRunner().invoke(app, ["report", str(report_dir / "results"), "--out", str(out),
                                   "--n-bootstrap", "0"])
    assert run.exit_code == 0, run.output
    html = (out / "index.html").read_text(encoding="utf-8")
    assert f"<title>{TITLE.replace('&', '&amp;')}</title>" in html
    assert _metric_targets(out / "index.html") == ["zeta model", "alpha model", "mid model"]
