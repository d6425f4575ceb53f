"""Open the HTML report in headless Chromium and check that it really renders.

Needs the Debian package ``chromium`` (``apt-get install -y chromium``); CI installs it.
A missing browser is a failure, not a skip: a skipped browser test would hide a broken page.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from privaudit.report import build_report

pytestmark = pytest.mark.browser

WIDTH = 1280
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
]


def _chromium() -> str:
    path = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if path is None:
        pytest.fail("Chromium is missing: the browser test of the HTML report needs it. "
                    "Install it with `apt-get update && apt-get install -y chromium` "
                    "(.ci/run does this in CI).")
    return path


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=600, check=False,
    )


def _screenshot(url: str, png: Path, height: int, profile: Path) -> np.ndarray:
    import matplotlib.image

    proc = _run([f"--screenshot={png}", f"--window-size={WIDTH},{height}", url], profile)
    assert proc.returncode == 0 and png.is_file(), proc.stderr[-2000:]
    image = matplotlib.image.imread(png)  # float RGB(A) in [0, 1]
    return np.round(image[..., :3] * 255).astype(np.int16)


def _count_color(pixels: np.ndarray, hex_color: str, tolerance: int = 10) -> int:
    match = np.ones(pixels.shape[:2], dtype=bool)
    for channel, i in enumerate((1, 3, 5)):
        match &= np.abs(pixels[..., channel] - int(hex_color[i:i + 2], 16)) <= tolerance
    return int(match.sum())


@pytest.fixture(scope="module")
def page(make_result, tmp_path_factory):
    directory = tmp_path_factory.mktemp("browser")
    results = [
        make_result(400, 400, 1.6, seed=1, target="overfit", attack="loss", predictions=True),
        make_result(400, 400, 0.9, seed=2, target="overfit", attack="lira"),
        make_result(400, 400, 0.1, seed=3, target="regularised", attack="loss"),
    ]
    index = build_report(results, directory, n_bootstrap=50, save_results=False)
    return index, results, tmp_path_factory.mktemp("chromium-profile")


def test_dom_has_the_table_and_inline_images(page) -> None:
    index, results, profile = page
    proc = _run(["--dump-dom", index.as_uri()], profile)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<table" in dom and 'id="metrics-table"' in dom
    assert len(re.findall(r'<tr id="result-\d+"', dom)) == len(results)
    assert "Strong distinction" in dom or "Clearly recognisable" in dom
    images = re.findall(r"<img\b[^>]*>", dom)
    n_targets = len({(r.dataset, r.target) for r in results})  # one ROC figure per target
    assert len(images) == n_targets + len(results)
    for tag in images:
        assert re.search(r'src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}"', tag), tag[:200]
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", dom, re.I)


def test_screenshot_shows_header_table_and_figures(page, tmp_path) -> None:
    index, results, profile = page
    top = _screenshot(index.as_uri(), tmp_path / "top.png", 2000, profile)
    assert top.shape == (2000, WIDTH, 3)
    white = np.all(top >= 250, axis=-1)
    assert white.mean() < 0.97, "the page looks blank"
    # The header band is drawn in the accent colour across the page.
    assert _count_color(top[:60], "#1d4e89") > 0.6 * 60 * WIDTH
    # The table and the text below the header are there: dark text pixels in the body.
    dark = np.all(top < 100, axis=-1)
    assert dark[150:1200].mean() > 0.005
    # Styled badges render (the "strong" badge background colour).
    assert _count_color(top, "#feecdc", 3) + _count_color(top, "#fde2e1", 3) > 200

    # The figures lie further down: a tall window shows the whole page.
    full = _screenshot(index.as_uri(), tmp_path / "full.png", 6500, profile)
    # Colours used only inside the embedded PNGs: ROC curves (tab:blue, tab:orange) and
    # the member / non-member histograms.
    assert _count_color(full, "#1f77b4") > 300, "ROC figure not rendered"
    assert _count_color(full, "#ff7f0e") > 300, "ROC figure not rendered"
    assert _count_color(full, "#d1495b") > 300 * len(results), "histograms not rendered"
    assert _count_color(full, "#00798c") > 300 * len(results), "histograms not rendered"
