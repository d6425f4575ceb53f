"""Shared helpers of the reports: metric names, matplotlib access, file names."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.results import AttackResult, file_name_part, result_type_of

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "DIMENSIONS",
    "FIGURE_COLORS",
    "artefact_key",
    "artefact_name",
    "attack_label",
    "check_results",
    "figure_png",
    "format_fpr",
    "is_inference_result",
    "metric_label",
    "new_figure",
    "safe_name",
]

#: The four dimensions TAPAS disaggregates results by.
DIMENSIONS: tuple[str, ...] = ("dataset", "generator", "target", "attack")

#: Metrics of the scores, then of the hard predictions, in report order.
SCORE_METRICS: tuple[str, ...] = ("auc", "advantage", "tpr_at_fpr", "effective_epsilon")
PREDICTION_METRICS: tuple[str, ...] = (
    "accuracy",
    "true_positive_rate",
    "false_positive_rate",
    "precision",
    "mia_advantage",
    "privacy_gain",
)

_LABELS = {
    "auc": "AUC",
    "advantage": "Advantage (max TPR - FPR)",
    "effective_epsilon": "Effective ε (point estimate)",
    "accuracy": "Accuracy",
    "true_positive_rate": "True positive rate",
    "false_positive_rate": "False positive rate",
    "precision": "Precision",
    "mia_advantage": "MIA advantage (TPR - FPR)",
    "privacy_gain": "Privacy gain",
}


def format_fpr(fpr: float) -> str:
    """``0.001`` -> ``"0.1%"``; ``0`` -> ``"0%"``."""
    return f"{fpr * 100:g}%"


def metric_label(column: str) -> str:
    """Human-readable name of a metric column (``tpr_at_fpr_0.001`` -> ``TPR @ 0.1% FPR``)."""
    if column.startswith("tpr_at_fpr_"):
        return f"TPR @ {format_fpr(float(column[len('tpr_at_fpr_'):]))} FPR"
    return _LABELS.get(column, column)


def is_inference_result(result: Any) -> bool:
    """An attack result read as inference on records (not a fidelity classifier)."""
    return result_type_of(result) == "attack" and result.audit.role != "fidelity"


def check_results(results: Any, func: str) -> list[AttackResult]:
    """Return ``results`` as a non-empty list of :class:`AttackResult`, or raise."""
    if isinstance(results, AttackResult):
        return [results]
    if not isinstance(results, Iterable) or isinstance(results, (str, bytes)):
        raise param_error("results", func, "a sequence of AttackResult", results,
                          error=TypeError)
    out = list(results)
    if not out:
        raise param_error("results", func, "a non-empty sequence of AttackResult", "<[]>")
    for item in out:
        if not isinstance(item, AttackResult):
            raise param_error(
                "results", func, "a sequence of AttackResult",
                f"<an element of type {type(item).__name__}>", error=TypeError,
            )
    return out


def safe_name(text: str, default: str = "unnamed") -> str:
    """A file-name-safe part unique to ``text`` (safe characters, ``-`` and a short hash).

    Two different texts never give the same part (``"model v1"`` and ``"model_v1"``
    differ), so that no file derived from one user name overwrites another's: see
    :func:`privaudit.results.file_name_part`.
    """
    return file_name_part(text, default)


def unique_names(names: Sequence[str]) -> list[str]:
    """Make names unique by appending ``__2``, ``__3``... to repeats, in order."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        count = seen.get(name, 0) + 1
        seen[name] = count
        out.append(name if count == 1 else f"{name}__{count}")
    return out


def require_matplotlib() -> None:
    """Raise a clear ImportError naming the extra when matplotlib is missing."""
    import_optional("matplotlib", extra="report", purpose="A plot")


def new_figure(width: float, height: float) -> Figure:
    """A matplotlib figure drawn by the Agg canvas, without pyplot.

    Using :class:`matplotlib.figure.Figure` directly neither changes the user's backend
    nor keeps figures alive in pyplot's global registry, and works in threads.
    """
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


#: Colours of a page figure's palette (:func:`figure_png`): lines, fills and text
#: antialiased on white need no more, and a palette PNG is a third of a true-colour one.
FIGURE_COLORS = 128


def figure_png(fig: Figure, *, dpi: int = 110, colors: int | None = FIGURE_COLORS) -> bytes:
    """The figure as PNG bytes (no timestamp metadata, so output is reproducible).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    dpi : int
        Resolution.
    colors : int or None
        Quantise to a palette of this many colours (2 to 256; median cut, no dithering,
        with Pillow, which matplotlib requires), for a page light enough to send; None
        keeps true colour.
    """
    if colors is not None and not (isinstance(colors, int) and 2 <= colors <= 256):
        raise param_error("colors", "figure_png", "an int from 2 to 256, or None", colors)
    buffer = io.BytesIO()
    fig.patch.set_facecolor("white")
    if colors is None:
        fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None},
                    facecolor="white")
        return buffer.getvalue()
    from PIL import Image

    fig.set_dpi(dpi)
    fig.canvas.draw()
    pixels = Image.frombuffer("RGBA", fig.canvas.get_width_height(physical=True),
                              bytes(fig.canvas.buffer_rgba()), "raw", "RGBA", 0, 1)
    palette = pixels.convert("RGB").quantize(colors=colors, method=Image.Quantize.MEDIANCUT,
                                             dither=Image.Dither.NONE)
    palette.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def png_data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` for embedding in HTML."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def artefact_key(result: Any) -> tuple[str, str, str]:
    """What a result audits: ``(dataset, generator, target)``.

    A generator is part of the artefact: the copier's and the DP generator's attacks on
    "record 2289" are two audits, never one (issue 20). Results without a generator (or
    a dataset) have an empty string there.
    """
    return (getattr(result, "dataset", "") or "", getattr(result, "generator", "") or "",
            getattr(result, "target", "") or "")


def artefact_name(result: Any) -> str:
    """The display name of what a result audits: ``"target (generator, dataset)"``.

    The generator and dataset are named whenever the result has them, so that every
    table, legend and verdict says whose record it is; an empty target reads "—".
    """
    dataset, generator, target = artefact_key(result)
    extra = ", ".join(part for part in (generator, dataset) if part)
    target = target or "—"
    return f"{target} ({extra})" if extra else target


def attack_label(result: Any) -> str:
    """The attack's name, and for attribute inference the attribute it infers."""
    if result.kind != "attribute":
        return result.attack or "attack"
    secret = result.parameters.get("sensitive_attribute") or "an attribute"
    return f"{result.attack or 'attack'} (infers {secret})"


def is_finite(value: Any) -> bool:
    """Whether ``value`` is a finite real number (None and NaN are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value
    )
