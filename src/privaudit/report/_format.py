"""Numbers as table cells of the HTML report: fixed decimals, em dash, infinity."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["EPSILON_DIGITS", "cell", "fmt", "fmt_int", "number"]

#: Decimals of an effective epsilon wherever the report shows one (metrics table, the
#: effective-epsilon section, the generator claims), so that one result reads the same.
EPSILON_DIGITS = 2


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell: fixed decimals, an em dash for missing, ∞ for infinity."""
    if value is None:
        return "—"
    value = float(value)
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}f}"


def cell(estimate: dict[str, float] | None, digits: int = 3) -> dict[str, str]:
    """``{"value", "ci"}`` of an estimate dict (``value``, ``low``, ``high``)."""
    if estimate is None:
        return {"value": "—", "ci": ""}
    low, high = estimate["low"], estimate["high"]
    if math.isnan(low) and math.isnan(high):
        return {"value": fmt(estimate["value"], digits), "ci": ""}
    ci = f"[{fmt(low, digits)}, {fmt(high, digits)}]"
    return {"value": fmt(estimate["value"], digits), "ci": ci}


def number(value: Any) -> float:
    """A stored number as a float: ``None`` (NaN written to JSON) and junk become NaN."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def fmt_int(value: Any) -> str:
    """An integer with thousands separators, or an em dash for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{int(value):,}"
