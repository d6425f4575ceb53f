"""Input checks shared by every layer.

All messages follow one template (see :mod:`privaudit.exceptions`), produced by
:func:`param_error`, so errors read the same wherever they are raised.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit.exceptions import DegenerateInputWarning

__all__ = [
    "check_binary_labels",
    "check_fraction",
    "check_labels_scores",
    "check_random_state",
    "check_scores",
    "param_error",
    "warn_degenerate",
]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def param_error(
    param: str, func: str, expected: str, got: Any, *, error: type[Exception] = ValueError
) -> Exception:
    """Build the one error template privaudit uses for bad arguments.

    Parameters
    ----------
    param : str
        Name of the offending parameter.
    func : str
        Name of the function or class that received it.
    expected : str
        What was expected, phrased to follow "must be", e.g. ``"in [0, 1)"``.
    got : object
        The value received (its ``repr`` is shortened), or a ready description string
        when it starts with ``"<"`` (e.g. ``"<array of length 3>"``).
    error : type of Exception
        ``ValueError`` (default) or ``TypeError``.
    """
    got_text = got if isinstance(got, str) and got.startswith("<") else _short(got)
    return error(f"The {param!r} parameter of {func} must be {expected}. Got {got_text} instead.")


def warn_degenerate(message: str, *, stacklevel: int = 3) -> None:
    """Warn that valid input is degenerate and the result is NaN."""
    warnings.warn(message, DegenerateInputWarning, stacklevel=stacklevel)


def check_scores(scores: ArrayLike, *, func: str, param: str = "scores") -> NDArray[np.float64]:
    """Return ``scores`` as a finite 1-D float array, or raise naming ``param``."""
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(
            param, func, "a 1-D array of real numbers", f"<{type(scores).__name__}>",
            error=TypeError,
        ) from None
    if arr.ndim != 1:
        raise param_error(param, func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.size == 0:
        raise param_error(param, func, "non-empty", "<an empty array>")
    if not np.all(np.isfinite(arr)):
        n_bad = int(np.sum(~np.isfinite(arr)))
        raise param_error(param, func, "finite (no NaN or inf)", f"<{n_bad} non-finite values>")
    return arr


def check_binary_labels(
    labels: ArrayLike, *, func: str, param: str = "labels"
) -> NDArray[np.int8]:
    """Return ``labels`` as a 1-D int array of 0/1 (1 = member), or raise naming ``param``.

    Booleans are accepted. Any other value (2, -1, 0.5, NaN, strings) is an error:
    silently mapping them is how other tools end up with inverted results.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise param_error(param, func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.size == 0:
        raise param_error(param, func, "non-empty", "<an empty array>")
    if arr.dtype == bool:
        return arr.astype(np.int8)
    if arr.dtype.kind not in "iuf":
        raise param_error(
            param, func, "0/1 (1 = member) or booleans", f"<array of dtype {arr.dtype}>",
            error=TypeError,
        )
    bad = ~np.isin(arr, (0, 1))
    if np.any(bad):
        examples = np.unique(arr[bad])[:3].tolist()
        raise param_error(param, func, "0/1 (1 = member)", f"<values such as {examples}>")
    return arr.astype(np.int8)


def check_labels_scores(
    labels: ArrayLike,
    scores: ArrayLike,
    *,
    func: str,
    scores_param: str = "scores",
) -> tuple[NDArray[np.int8], NDArray[np.float64]]:
    """Validate a (labels, scores) pair: 0/1 labels, finite scores, equal lengths."""
    y = check_binary_labels(labels, func=func)
    s = check_scores(scores, func=func, param=scores_param)
    if y.shape[0] != s.shape[0]:
        raise param_error(
            scores_param, func, f"the same length as 'labels' ({y.shape[0]})",
            f"<length {s.shape[0]}>",
        )
    return y, s


def check_fraction(
    value: Any, *, param: str, func: str, low: float = 0.0, high: float = 1.0,
    low_inclusive: bool = False, high_inclusive: bool = False,
) -> float:
    """Check that ``value`` is a real number in the given interval."""
    left = "[" if low_inclusive else "("
    right = "]" if high_inclusive else ")"
    expected = f"a real number in {left}{low:g}, {high:g}{right}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise param_error(param, func, expected, value, error=TypeError)
    v = float(value)
    ok_low = v >= low if low_inclusive else v > low
    ok_high = v <= high if high_inclusive else v < high
    if not (np.isfinite(v) and ok_low and ok_high):
        raise param_error(param, func, expected, value)
    return v


def check_random_state(random_state: Any, *, func: str = "privaudit") -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    ``None`` gives fresh OS entropy; an int or ``SeedSequence`` a reproducible generator;
    a ``Generator`` is used as is (shared state, as in numpy). Legacy ``RandomState``
    objects are accepted by drawing a seed from them, so scikit-learn style code works.
    """
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, numbers.Integral) and int(random_state) < 0:
            raise param_error("random_state", func, "a non-negative integer", random_state)
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise param_error(
        "random_state", func, "None, an int, a SeedSequence or a numpy Generator",
        random_state, error=TypeError,
    )
