"""Input checks shared by every layer.

All messages follow one template (see :mod:`privaudit.exceptions`), produced by
:func:`param_error`, so errors read the same wherever they are raised.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit.exceptions import DegenerateInputWarning

__all__ = [
    "ParamsProblem",
    "attack_params_problem",
    "check_attack_params",
    "check_binary_labels",
    "check_fraction",
    "check_labels_scores",
    "check_random_state",
    "check_real_array",
    "check_scores",
    "paired_with_labels",
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


#: Integers up to this magnitude are exact in float64 (a 53-bit significand).
_FLOAT_EXACT_INT = 2**53


def check_real_array(values: Any, *, func: str, param: str) -> NDArray[Any]:
    """Return ``values`` as a numpy array of a numeric dtype, or raise naming ``param``.

    Booleans, integers and floats are accepted; strings (even numeric ones such as
    ``"0.5"``), bytes, dates, complex numbers and objects are refused with a ``TypeError``:
    converting them silently is how a column read as text ends up ranked as numbers.
    An object array is accepted when every element is a real number; one of Python
    integers is kept as is (exact, even beyond int64), any other becomes float64.
    """
    expected = "a 1-D array of real numbers (a numeric dtype, not strings or objects)"
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise param_error(param, func, expected, f"<{type(values).__name__}>",
                          error=TypeError) from None
    if arr.dtype.kind == "O":
        items = arr.ravel().tolist()
        where = next((i for i, v in enumerate(items) if not isinstance(v, numbers.Real)), None)
        if where is not None:
            bad = items[where]
            raise param_error(param, func, expected,
                              f"<values such as {_short(bad)} of type {type(bad).__name__}>",
                              error=TypeError)
        if all(isinstance(v, numbers.Integral) for v in items):
            return arr
        return arr.astype(np.float64)
    if arr.dtype.kind not in "biuf":
        raise param_error(param, func, expected, f"<array of dtype {arr.dtype}>",
                          error=TypeError)
    return arr


def _beyond_float64(arr: NDArray[Any]) -> bool:
    """Whether integer ``arr`` holds values that float64 cannot represent exactly."""
    if arr.dtype.kind == "O":
        return any(abs(int(v)) > _FLOAT_EXACT_INT for v in arr.tolist())
    if arr.dtype.kind in "iu":
        big = arr > _FLOAT_EXACT_INT
        if arr.dtype.kind == "i":
            big |= arr < -_FLOAT_EXACT_INT
        return bool(np.any(big))
    return False


def check_scores(scores: ArrayLike, *, func: str, param: str = "scores") -> NDArray[np.float64]:
    """Return ``scores`` as a finite 1-D float64 array, or raise naming ``param``.

    This is the one place where privaudit validates attack scores. Scores must have a
    numeric dtype (:func:`check_real_array`: numeric strings are a ``TypeError``).
    Integer scores beyond 2**53 in magnitude, which float64 would round so that
    distinct scores tie (int64 values near 2**62 would all collapse), are replaced by
    their dense ranks (0, 1, 2... in increasing order, equal scores sharing a rank):
    every metric depends on the order of the scores only, so the ROC, AUC, TPR at FPR
    and advantage are exactly those of the integers (as scikit-learn's, which ranks
    int64 scores without converting them).
    """
    arr = check_real_array(scores, func=func, param=param)
    if arr.ndim != 1:
        raise param_error(param, func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.size == 0:
        raise param_error(param, func, "non-empty", "<an empty array>")
    if _beyond_float64(arr):
        return np.unique(arr, return_inverse=True)[1].reshape(-1).astype(np.float64)
    arr = arr.astype(np.float64)
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


def paired_with_labels(labels: Any, values: Any, *, func: str, param: str) -> Any:
    """``values`` matched to ``labels`` row by row: by index when both are pandas objects.

    Every function taking ``labels`` and a per-record array (scores, predictions) pairs
    them through this one check. Two pandas Series (or DataFrame columns) are matched on
    their index, as pandas itself would: when the indexes hold the same unique labels in
    another order, ``values`` is reordered to ``labels``' index (a permutation loses
    nothing and is what a user who sorted one of them meant); when they hold different
    labels (or repeat one) no pairing is safe and a ``ValueError`` names ``param``. Pairing
    such Series by position, as numpy would, scores each record against another record's
    label without a word. Plain arrays, or one array and one Series, pair by position.
    pandas is never imported: Series are recognised by duck typing (:func:`_is_pandas`).

    Returns
    -------
    object
        ``values``, reordered when needed (still a Series then).
    """
    return align_on_index({"labels": labels, param: values}, func=func)[param]


def check_labels_scores(
    labels: ArrayLike,
    scores: ArrayLike,
    *,
    func: str,
    scores_param: str = "scores",
) -> tuple[NDArray[np.int8], NDArray[np.float64]]:
    """Validate a (labels, scores) pair: 0/1 labels, finite scores, equal lengths.

    Pandas Series are paired on their index (:func:`paired_with_labels`).
    """
    scores = paired_with_labels(labels, scores, func=func, param=scores_param)
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


# --- Shared checks of audit inputs (every ``audit_*`` function uses them) -----------------


def check_int(
    value: Any, *, param: str, func: str, low: int = 0, allow_none: bool = False,
    allowed: tuple[int, ...] = (),
) -> int | None:
    """Check that ``value`` is an int ``>= low`` (or one of ``allowed``, or None).

    Booleans and floats are refused: ``n_jobs=True`` or ``n_reference_models=2.0`` are
    mistakes, not numbers.
    """
    if value is None and allow_none:
        return None
    bound = "a non-negative integer" if low == 0 else f"an integer >= {low}"
    extra = "".join(f" or {a}" for a in allowed)
    expected = ("None, " if allow_none else "") + bound + extra
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise param_error(param, func, expected, value, error=TypeError)
    if int(value) < low and int(value) not in allowed:
        raise param_error(param, func, expected, value)
    return int(value)


@dataclass(frozen=True)
class IntRule:
    """An integer parameter's rule, written once for the API and the YAML configuration.

    The API calls :meth:`check` (privaudit's error template); the configuration's typed
    sections (:mod:`privaudit.cli`) call :meth:`ok` and name the key with
    :attr:`expected`, so the two cannot drift apart.
    """

    low: int
    allowed: tuple[int, ...] = ()
    #: What the allowed extra values mean, e.g. ``"-1 for every CPU"``.
    meaning: str = ""

    @property
    def expected(self) -> str:
        bound = {0: "a non-negative integer", 1: "a positive integer"}.get(
            self.low, f"an integer >= {self.low}")
        extra = self.meaning or " or ".join(map(str, self.allowed))
        return bound + (f", or {extra}" if extra else "")

    def ok(self, value: Any) -> bool:
        """Whether ``value`` (already known to be an int) follows the rule."""
        return int(value) >= self.low or int(value) in self.allowed

    def check(self, value: Any, *, param: str, func: str, allow_none: bool = False,
              ) -> int | None:
        """``value`` as an int, or privaudit's error naming ``param`` of ``func``."""
        return check_int(value, param=param, func=func, low=self.low,
                         allow_none=allow_none, allowed=self.allowed)


@dataclass(frozen=True)
class ChoiceRule:
    """A parameter that takes one of a few names, shared by the API and the config."""

    choices: tuple[str, ...]

    @property
    def expected(self) -> str:
        quoted = [repr(c) for c in self.choices]
        return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]

    def ok(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.choices

    def check(self, value: Any, *, param: str, func: str, alternative: str = "") -> str:
        """``value``, or privaudit's error; ``alternative`` names another accepted form."""
        if not self.ok(value):
            expected = (f"{self.expected.replace(' or ', ', ')} or {alternative}"
                        if alternative else self.expected)
            raise param_error(param, func, expected, value)
        return value


#: Rules of the audit settings, used by ``audit_*`` functions and the YAML configuration.
N_JOBS = IntRule(low=1, allowed=(-1,), meaning="-1 for every CPU")
RANDOM_STATE = IntRule(low=0)
N_REFERENCE_MODELS = IntRule(low=1)
N_BOOTSTRAP = IntRule(low=0)
EXECUTOR_NAMES = ChoiceRule(("local", "ray"))
#: Executors that connect to a cluster at an ``address``.
REMOTE_EXECUTORS = ("ray",)
REFERENCE_MODES = ChoiceRule(("auto", "online", "offline"))


def _is_pandas(obj: Any) -> bool:
    """Whether ``obj`` is a pandas Series or DataFrame, by duck typing (pandas not imported).

    An object with a row ``index`` (itself with ``equals``), ``to_numpy`` and ``loc``:
    a list has an ``index`` method but neither of the others.
    """
    return hasattr(obj, "to_numpy") and hasattr(obj, "loc") \
        and hasattr(getattr(obj, "index", None), "equals")


def _index_difference(index: Any, reference: Any) -> str:
    if len(index) != len(reference):
        return f"<an index of {len(index)} labels, not {len(reference)}>"
    if not index.is_unique:
        return "<an index with duplicated labels>"
    extra = index.difference(reference)
    if len(extra):
        return f"<an index with labels not in the first one's, e.g. {list(extra[:3])}>"
    return "<the same index labels in another order>"


def align_on_index(inputs: dict[str, Any], *, func: str) -> dict[str, Any]:
    """Align pandas inputs on their index, as pandas would; arrays stay positional.

    ``inputs`` maps parameter names to values (``None`` for an input not given); the
    first pandas input is the reference. When every given input is a pandas object and
    their indexes hold the same unique labels, the others are reordered to the
    reference's index. When some inputs are plain arrays (positional) and the pandas ones
    disagree on their index, or the indexes hold different labels, nothing can be matched
    safely: a ``ValueError`` names the parameter. (scikit-learn matches rows by position;
    a DataFrame shuffled with its labels left in the original order would otherwise be
    scored against the wrong rows without a word.)

    Returns
    -------
    dict
        ``inputs`` with the pandas values reordered where needed.
    """
    given = {k: v for k, v in inputs.items() if v is not None}
    indexed = {k: v for k, v in given.items() if _is_pandas(v)}
    if len(indexed) < 2:
        return dict(inputs)
    ref_name, ref = next(iter(indexed.items()))
    ref_index = ref.index
    disagree = [k for k, v in indexed.items() if not v.index.equals(ref_index)]
    if not disagree:
        return dict(inputs)
    name = disagree[0]
    got = _index_difference(indexed[name].index, ref_index)
    positional = sorted(set(given) - set(indexed))
    if positional:
        raise param_error(
            name, func, f"indexed like {ref_name!r}: pandas inputs are aligned on their "
            f"index, but {positional} are plain arrays, matched by position", got)
    if not ref_index.is_unique or got != "<the same index labels in another order>":
        raise param_error(
            name, func, f"indexed by the same unique labels as {ref_name!r} (pandas inputs "
            "are aligned on their index)", got if ref_index.is_unique
            else "<an index with duplicated labels>")
    out = dict(inputs)
    for key in disagree:
        out[key] = indexed[key].loc[ref_index]
    return out


def check_unique_ids(ids: Any, *, param: str, func: str) -> None:
    """Refuse record ids that repeat (naming some) or are missing."""
    import pandas as pd

    series = pd.Series(np.asarray(ids, dtype=object).ravel())
    if series.isna().any():
        raise param_error(param, func, "ids without missing values",
                          f"<{int(series.isna().sum())} missing ids>")
    # Compared as text: the results store writes ids to CSV, where 1 and "1" are the same.
    dup = series[series.astype(str).duplicated(keep=False)]
    if len(dup):
        values = list(dict.fromkeys(dup.tolist()))
        raise param_error(param, func, "unique (one id per record)",
                          f"<{len(values)} ids used more than once, e.g. {values[:5]!r}>")


def check_directory(value: Any, *, param: str, func: str) -> Any:
    """Check that ``value`` is a path where a directory exists or can be created.

    A path to an existing file, or below one, is refused before any work is done (it
    would otherwise fail after minutes of training, when the first result is written).
    Returns the path as a :class:`pathlib.Path`.
    """
    import os
    from pathlib import Path

    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)) or value == "":
        raise param_error(param, func, "a path (str or os.PathLike)", value, error=TypeError)
    path = Path(value)
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        where = "" if probe == path else f" (its parent {str(probe)!r} is a file)"
        raise param_error(param, func, "a directory, or a path where one can be created",
                          f"<{str(path)!r}, a file{where}>" if not where
                          else f"<{str(path)!r}{where}>")
    return path


def renamed(old_value: Any, old_name: str, new_value: Any, new_name: str, default: Any, *,
            func: str, category: type[Warning] = DeprecationWarning,
            stacklevel: int = 3) -> Any:
    """The value of a renamed parameter: the new name's, or the old name's with a warning.

    Passing both (the new one away from its default) is an error naming both. Issue 21's
    renames (one vocabulary across audits) warn with a :class:`FutureWarning`, shown to
    users, for one release.
    """
    import warnings

    if old_value is None:
        return new_value
    if new_value is not default and new_value != default:
        raise param_error(old_name, func, f"left out when '{new_name}' is given (it is the "
                          f"old name of '{new_name}')", old_value)
    warnings.warn(f"{func}: the parameter '{old_name}' is now called '{new_name}'; the old "
                  "name will be removed.", category, stacklevel=stacklevel)
    return old_value


@dataclass(frozen=True)
class ParamsProblem:
    """What is wrong in an ``attack_params`` mapping: where, what was expected, the value.

    ``key`` is relative to ``attack_params`` (``"rmia"`` or ``"lira-offline.eps"``), so a
    configuration names ``attack_params.<key>`` and the API ``attack_params[...]``.
    """

    key: str
    expected: str
    got: Any


def attack_params_problem(attacks: Any, attack_params: Any, classes: Any, *,
                          set_by_audit: Any = None) -> ParamsProblem | None:
    """The one check of ``attack_params``, for every audit and configuration kind.

    Each key must name a requested attack (parameters of an attack that does not run
    would be ignored), each parameter must be one of that attack's constructor parameters
    (the valid ones listed), and the attack built with them must accept the values: its
    ``check_params()``, when it has one, checks ranges and combinations.

    Parameters
    ----------
    attacks : sequence of str
        The attacks that run.
    attack_params : mapping
        ``{attack name: {parameter: value}}``.
    classes : callable
        ``classes(name) -> the attack's class``.
    set_by_audit : mapping, optional
        ``{attack name: parameters the audit itself sets}`` (refused: not the user's).

    Returns
    -------
    ParamsProblem or None
        The first problem, or None when the mapping is right.
    """
    import inspect

    for name, params in dict(attack_params or {}).items():
        if name not in list(attacks):
            return ParamsProblem(str(name), f"an attack listed in 'attacks' ({list(attacks)})",
                                 name)
        if not isinstance(params, dict):
            return ParamsProblem(name, "a mapping of parameter names to values", params)
        cls = classes(name)
        fixed = set((set_by_audit or {}).get(name, ()))
        allowed = sorted(set(inspect.signature(cls).parameters) - fixed)
        for param in params:
            if param not in allowed:
                return ParamsProblem(f"{name}.{param}", f"one of {allowed}", param)
        try:
            check = getattr(cls(**params), "check_params", None)
            if check is not None:
                check()
        except (TypeError, ValueError) as exc:
            return ParamsProblem(name, f"values {cls.__name__} accepts ({exc})", params)
    return None


def check_attack_params(attacks: Any, attack_params: Any, classes: Any, *, func: str,
                        set_by_audit: Any = None) -> None:
    """Raise :func:`attack_params_problem`'s problem as the API's ``ValueError``."""
    problem = attack_params_problem(attacks, attack_params, classes,
                                    set_by_audit=set_by_audit)
    if problem is not None:
        raise param_error("attack_params", func, f"{problem.expected} (at "
                          f"{problem.key!r})", problem.got)


# --- Declared constraints (the scikit-learn ``validate_params`` way) ----------------------


@dataclass(frozen=True)
class RealRule:
    """A real number in an interval (``RealRule(0, 1)`` is ``(0, 1)``).

    ``closed`` says which ends belong: "neither", "left", "right" or "both". Booleans and
    NaN are refused.
    """

    low: float = -np.inf
    high: float = np.inf
    closed: str = "neither"

    @property
    def expected(self) -> str:
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        if np.isinf(self.low) and np.isinf(self.high):
            return "a real number"
        return f"a real number in {left}{self.low:g}, {self.high:g}{right}"

    def ok(self, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            return False
        v = float(value)
        above = v >= self.low if self.closed in ("left", "both") else v > self.low
        below = v <= self.high if self.closed in ("right", "both") else v < self.high
        return not np.isnan(v) and above and below


@dataclass(frozen=True)
class TypeRule:
    """An instance of one of ``types``, described as ``expected``.

    ``bool`` never counts as an int; ``None`` in ``types`` accepts ``None``.
    """

    types: tuple[Any, ...]
    expected: str

    def ok(self, value: Any) -> bool:
        if value is None:
            return None in self.types
        kinds = tuple(t for t in self.types if t is not None)
        if isinstance(value, (bool, np.bool_)) and bool not in kinds:
            return False
        return isinstance(value, kinds)


@dataclass(frozen=True)
class PredicateRule:
    """A value for which ``test(value)`` is true, described as ``expected``.

    For what a type cannot say: a callable, a non-empty list of names...
    """

    test: Any
    expected: str

    def ok(self, value: Any) -> bool:
        return bool(self.test(value))


#: Often-declared rules.
NONE = TypeRule((None,), "None")
BOOL = TypeRule((bool, np.bool_), "True or False")
STR = TypeRule((str,), "a str")
CALLABLE = PredicateRule(callable, "a callable")
MAPPING = PredicateRule(lambda v: hasattr(v, "keys") and hasattr(v, "items"), "a dict")
NAMES = PredicateRule(lambda v: (not isinstance(v, str) and hasattr(v, "__iter__")
                                 and len(list(v)) > 0 and all(isinstance(n, str) for n in v)),
                      "a non-empty list of names")


def check_declared(value: Any, rules: Any, *, param: str, func: str) -> Any:
    """``value`` when it follows one of ``rules``, else the error naming ``param``.

    Each rule has ``ok(value)`` and ``expected``; the error lists every accepted form.
    A ``TypeError`` when no rule even accepts the value's type (an ``IntRule`` refusing
    ``2.0``, a ``TypeRule``), else a ``ValueError`` (right type, out of range).
    """
    rules = tuple(rules)
    if any(_rule_ok(rule, value) for rule in rules):
        return value
    expected = " or ".join(rule.expected for rule in rules)
    typed = any(_right_type(rule, value) for rule in rules)
    raise param_error(param, func, expected, value, error=ValueError if typed else TypeError)


def _rule_ok(rule: Any, value: Any) -> bool:
    if isinstance(rule, IntRule):
        return (not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Integral)
                and rule.ok(value))
    return bool(rule.ok(value))


def _right_type(rule: Any, value: Any) -> bool:
    """Whether ``value`` is of the type ``rule`` reads (its range or choices aside)."""
    if isinstance(rule, IntRule):
        return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Integral)
    if isinstance(rule, RealRule):
        return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real)
    if isinstance(rule, ChoiceRule):
        return isinstance(value, str)
    return False


# --- One vocabulary (issue 21) -------------------------------------------------------------

#: Attack and check names renamed to the one style of every registry (kebab-case):
#: old name -> new name. Old names are accepted from users with a :class:`FutureWarning`
#: for one release (:func:`canonical_names`), and saved results named the old way load
#: under the new name (:func:`canonical_name`).
RENAMED_ATTACKS: dict[str, str] = {
    "min_k": "min-k",
    "min_k_plus_plus": "min-k-plus-plus",
    "dc_pdd": "dc-pdd",
    "exact_matches": "exact-matches",
    "singling_out_univariate": "singling-out-univariate",
    "singling_out_multivariate": "singling-out-multivariate",
    "text_memorization": "text-memorization",
    # The names users of MIMIR (Duan et al. 2024) and open-unlearning type for the LLM
    # statistics, accepted the same way: MIMIR's ``min_k++`` and ``ref``.
    "min_k++": "min-k-plus-plus",
    "min-k++": "min-k-plus-plus",
    "ref": "reference",
}


def canonical_name(name: Any) -> Any:
    """``name`` in the one style (kebab-case): its new name if it was renamed, else itself."""
    return RENAMED_ATTACKS.get(name, name) if isinstance(name, str) else name


def canonical_names(names: Any, *, param: str, func: str, stacklevel: int = 3) -> Any:
    """``names`` with every old name replaced by its new one, warning once if any was.

    Anything that is not a list of names is returned as it is, for the caller's own check
    to refuse with its message.
    """
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        return names
    old = [n for n in names if isinstance(n, str) and n in RENAMED_ATTACKS]
    if old:
        new = ", ".join(f"'{n}' -> '{RENAMED_ATTACKS[n]}'" for n in old)
        warnings.warn(f"{func}: {param}: names follow privaudit's one vocabulary now ({new}); "
                      "the other names will be removed.", FutureWarning, stacklevel=stacklevel)
    return type(names)(canonical_name(n) for n in names)
