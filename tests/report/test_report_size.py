"""Issue 20: a report light enough to send - compressed figures, self-contained, folded.

The demo's page was 10.5 MB with 173 true-colour images; its figures are now palette PNGs
at a resolution made for the page, and the histograms small multiples.
"""

from __future__ import annotations

import base64
import re
import struct

import pytest

from privaudit.report import HtmlReport
from privaudit.report._common import figure_png, new_figure

_PNG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _pngs(html: str) -> list[bytes]:
    return [base64.b64decode(data) for data in _PNG.findall(html)]


def _colour_type(png: bytes) -> int:
    """Byte 25 of a PNG: 2 true colour, 6 true colour with alpha, 3 palette."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return png[25]


def _width(png: bytes) -> int:
    return struct.unpack(">I", png[16:20])[0]


@pytest.fixture(scope="module")
def page(make_result) -> str:
    results = [make_result(seed=i, target=f"model {i % 6}", attack=f"attack {i // 6}",
                           n_members=300, n_non_members=300) for i in range(24)]
    return HtmlReport(results, n_bootstrap=0).render()


def test_every_figure_is_a_palette_png(page) -> None:
    pngs = _pngs(page)
    assert len(pngs) == 6 + 24  # a ROC figure per artefact, a histogram per result
    assert {_colour_type(png) for png in pngs} == {3}


def test_histograms_are_small_multiples(page) -> None:
    histograms = _pngs(page.split('<section id="histograms">')[1])
    assert len(histograms) == 24
    assert max(len(png) for png in histograms) < 10_000  # 24 kB each in true colour
    assert max(_width(png) for png in histograms) <= 500
    assert 'class="grid3"' in page


def test_the_page_weighs_what_its_figures_need(page) -> None:
    size = len(page.encode("utf-8"))
    assert size < 900_000, f"{size / 1e6:.2f} MB for 24 results on 6 artefacts"
    rocs = _pngs(page.split('<section id="roc">')[1].split("</section>")[0])
    assert max(len(png) for png in rocs) < 70_000


def test_the_page_loads_nothing(page) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "<script" not in page and "<link" not in page and "@import" not in page


@pytest.mark.parametrize("colors", [2, 16, 128, 256])
def test_a_palette_is_smaller_than_true_colour(colors) -> None:
    def figure():
        fig = new_figure(5, 3)
        ax = fig.add_subplot()
        for k in range(6):
            ax.plot([0, 1, 2, 3], [k, k + 1, k - 1, k * 2], label=f"curve {k}")
        ax.legend()
        return fig

    palette, true = figure_png(figure(), colors=colors), figure_png(figure(), colors=None)
    assert _colour_type(palette) == 3 and _colour_type(true) in (2, 6)
    assert len(palette) < len(true)
    assert _width(palette) == _width(true) == 550  # 5 inches at 110 dpi: same pixels


@pytest.mark.parametrize("colors", [0, 1, 257, 2.5, "many", True])
def test_a_bad_palette_size_is_refused(colors) -> None:
    with pytest.raises((ValueError, TypeError), match="'colors' parameter of figure_png"):
        figure_png(new_figure(2, 2), colors=colors)
