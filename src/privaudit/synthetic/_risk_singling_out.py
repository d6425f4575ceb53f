"""Singling out, as anonymeter defines it, with every predicate evaluated in bulk.

The attacker reads the synthetic table and writes *queries*: conjunctions of predicates
on a few columns ("age >= 87 & state == 'VT'") that single out exactly one synthetic
record. A query succeeds when it singles out exactly one ORIGINAL record too. The baseline
attacker writes random queries (random columns, values and operators); the control
attacker's queries are the same as the attack's, checked on control records.

- univariate: the rare values of each column (seen once), its minimum and maximum, and
  "is missing" when one value is missing;
- multivariate: a random synthetic record's values on ``n_cols`` random columns, numbers
  with ``>=`` above the column's median and ``<=`` below.

Differences from anonymeter, all on purpose: every random draw goes through
``random_state`` (anonymeter draws from an unseeded module generator); queries are
predicate lists evaluated as numpy masks, not ``DataFrame.query`` strings parsed one at a
time (strings are kept for display only), which makes a value such as ``O'Brien`` or a
column name with a space work; candidate queries are generated and checked in batches;
when a table offers few (record, column set) pairs (at most ``_ENUMERATE``), every pair is
tried once in a random order (the order in which uniform draws first reach each pair), so
the search never finds fewer queries than anonymeter's ten million draws and stops as soon
as no new query can be written, with a warning when fewer than ``n_attacks`` exist.

Checked against anonymeter 1.x (issue 19): on the same (record, column set) draws the two
write the same queries (numbers ``>=`` above the column's median, ``<=`` at or below,
categories and booleans ``==``, a missing value "is missing") and count the same matches on
the synthetic, original and control tables, query by query; the residual risk is the same
formula. The multivariate risks agree within their intervals on TV16 with 0%, 25% and 50%
of the rows copied (tests/synthetic/test_anonymeter_parity.py).

References
----------
.. [1] Giomi, M. et al. "A Unified Framework for Quantifying Privacy Risk in Synthetic
   Data." PoPETs 2023.
.. [2] Cohen, A. and Nissim, K. "Towards Formalizing the GDPR's Notion of Singling Out."
   PNAS 117(15), 2020.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privaudit._validation import check_random_state, param_error, warn_degenerate
from privaudit.synthetic._risk_counts import (
    Counts,
    PrivacyRisk,
    check_attack_count,
    check_frame,
)

__all__ = ["Predicate", "SinglingOutEvaluator", "count_matches"]

_FUNC = "SinglingOutEvaluator"
_NUMERIC_OPS = ("==", "!=", ">", "<", ">=", "<=")


@dataclass(frozen=True)
class Predicate:
    """One predicate of a query: ``column op value``.

    ``op`` is a comparison, ``isna``, ``notna``, ``true`` or ``false``.
    """

    column: str
    op: str
    value: Any = None

    def __str__(self) -> str:
        if self.op in ("isna", "notna"):
            return f"{self.column}.{self.op}()"
        if self.op in ("true", "false"):
            return f"{'' if self.op == 'true' else 'not '}{self.column}"
        return f"{self.column} {self.op} {self.value!r}"


class _Columns:
    """A table's columns as numpy arrays, each with its kind, for bulk predicates."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.n = len(frame)
        self.kinds: dict[str, str] = {}
        self.values: dict[str, np.ndarray] = {}
        self.missing: dict[str, np.ndarray] = {}
        self.lookup: dict[str, dict[Any, int]] = {}
        self.uniques: dict[str, np.ndarray] = {}
        for column in frame.columns:
            series = frame[column]
            self.missing[column] = series.isna().to_numpy()
            if pd.api.types.is_bool_dtype(series):
                self.kinds[column] = "bool"
                self.values[column] = series.to_numpy(dtype=bool)
            elif pd.api.types.is_numeric_dtype(series):
                self.kinds[column] = "numeric"
                self.values[column] = series.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                self.kinds[column] = "other"
                codes, uniques = pd.factorize(series.astype(object), use_na_sentinel=True)
                self.values[column] = codes  # equality on integer codes, not objects
                self.uniques[column] = np.asarray(uniques, dtype=object)
                self.lookup[column] = {v: i for i, v in enumerate(uniques)}

    def masks(self, column: str, op: str, values: list[Any]) -> np.ndarray:
        """Rows satisfying ``column op v`` for each ``v`` of ``values``: ``(len(values), n)``.

        pandas' semantics: a missing value compares unequal to everything.
        """
        missing = self.missing[column][None, :]
        k = len(values)
        if op in ("isna", "notna"):
            return np.repeat(missing if op == "isna" else ~missing, k, axis=0)
        data = self.values[column]
        if op in ("true", "false"):
            truth = data.astype(bool)[None, :] & ~missing
            return np.repeat(truth if op == "true" else ~truth, k, axis=0)
        if self.kinds[column] == "other":
            # -2: a value this table lacks, equal to no row.
            codes = np.array([self.lookup[column].get(v, -2) for v in values])
            equal = data[None, :] == codes[:, None]
            return equal if op == "==" else ~equal
        threshold = np.asarray(values, dtype=np.float64)[:, None]
        with np.errstate(invalid="ignore"):
            return _COMPARE[op](data[None, :], threshold)


_COMPARE = {"==": np.equal, "!=": np.not_equal, ">": np.greater, "<": np.less,
            ">=": np.greater_equal, "<=": np.less_equal}
#: Query x row cells evaluated at once (bounds memory on large tables).
_CELLS = 1 << 24


def count_matches(columns: _Columns, queries: Sequence[Sequence[Predicate]]) -> np.ndarray:
    """Rows matching each query (a conjunction of predicates), in bulk.

    Predicates are grouped by (column, operator) so that each group is one broadcast
    comparison over the table; queries go through in chunks of bounded memory.
    """
    out = np.zeros(len(queries), dtype=np.int64)
    step = max(1, _CELLS // max(columns.n, 1))
    for start in range(0, len(queries), step):
        chunk = queries[start:start + step]
        mask = np.ones((len(chunk), columns.n), dtype=bool)
        groups: dict[tuple[str, str], list[tuple[int, Any]]] = {}
        for i, query in enumerate(chunk):
            for p in query:
                groups.setdefault((p.column, p.op), []).append((i, p.value))
        for (column, op), items in groups.items():
            rows = np.array([i for i, _ in items])
            found = columns.masks(column, op, [v for _, v in items])
            if len(np.unique(rows)) == len(rows):
                mask[rows] &= found
            else:  # a query with two predicates of one kind on one column
                np.logical_and.at(mask, rows, found)
        out[start:start + len(chunk)] = mask.sum(axis=1)
    return out


def _univariate_candidates(frame: pd.DataFrame, cols: _Columns) -> list[tuple[Predicate, ...]]:
    out: list[tuple[Predicate, ...]] = []
    for column in sorted(frame.columns, key=str):
        if cols.missing[column].sum() == 1:
            out.append((Predicate(column, "isna"),))
        if cols.kinds[column] == "numeric" and (~cols.missing[column]).any():
            present = cols.values[column][~cols.missing[column]]
            out += [(Predicate(column, "<=", float(present.min())),),
                    (Predicate(column, ">=", float(present.max())),)]
        counts = frame[column].value_counts()
        for value in counts.index[counts.to_numpy() == 1]:
            op = "true" if cols.kinds[column] == "bool" and bool(value) else (
                "false" if cols.kinds[column] == "bool" else "==")
            out.append((Predicate(column, op, None if op in ("true", "false") else value),))
    return out


def _record_query(cols: _Columns, row: int, columns: Sequence[str],
                  medians: dict[str, float]) -> tuple[Predicate, ...]:
    """The query anonymeter writes from a record: its values on ``columns``."""
    query = []
    for column in sorted(columns, key=str):
        value = cols.values[column][row]
        if cols.missing[column][row]:
            query.append(Predicate(column, "isna"))
        elif cols.kinds[column] == "bool":
            query.append(Predicate(column, "true" if value else "false"))
        elif cols.kinds[column] == "numeric":
            op = ">=" if value > medians[column] else "<="
            query.append(Predicate(column, op, float(value)))
        else:  # the value itself, not its code in this table
            query.append(Predicate(column, "==", cols.uniques[column][value]))
    return tuple(query)


class _RecordBits:
    """Packed bitsets of every predicate a record can write on each column.

    A record writes ``>= v`` or ``<= v`` (numbers, by the median), ``== v`` (categories,
    booleans) or "is missing": for a column with ``L`` distinct values that is at most
    ``2 L + 1`` row sets, each kept as ``n / 8`` bytes. A candidate query's matches are then
    the popcount of the AND of three table rows: no comparison per candidate and row.
    Columns whose table would exceed :data:`_BITS_BUDGET` bytes are compared as before.
    """

    def __init__(self, cols: _Columns, medians: dict[str, float]) -> None:
        self.cols, self.medians = cols, medians
        self.table: dict[str, np.ndarray] = {}
        self.key: dict[str, np.ndarray] = {}
        for column in cols.kinds:
            self._build(column)

    def _build(self, column: str) -> None:
        cols = self.cols
        missing = cols.missing[column]
        if cols.kinds[column] == "numeric":
            values = cols.values[column]
            levels = np.unique(values[~missing])
            if 2 * len(levels) * cols.n > 8 * _BITS_BUDGET:
                return
            rank = np.searchsorted(levels, np.where(missing, levels[0] if len(levels) else 0,
                                                    values))
            grid = np.arange(len(levels))[:, None]
            ge = (rank[None, :] >= grid) & ~missing[None, :]
            le = (rank[None, :] <= grid) & ~missing[None, :]
            rows = np.vstack([ge, le, missing[None, :]])
            with np.errstate(invalid="ignore"):
                above = values > self.medians[column]
            key = np.where(above, rank, len(levels) + rank)
            key[missing] = 2 * len(levels)
        else:
            codes = cols.values[column].astype(np.int64)
            if cols.kinds[column] == "bool":
                truth = codes.astype(bool) & ~missing
                rows = np.vstack([~truth, truth, missing[None, :]])
                key = np.where(truth, 1, 0)
            else:
                n_codes = int(codes.max()) + 1 if codes.size else 0
                if (n_codes + 1) * cols.n > 8 * _BITS_BUDGET:
                    return
                rows = np.vstack([codes[None, :] == np.arange(n_codes)[:, None],
                                  missing[None, :]])
                key = np.where(missing, n_codes, codes)
            key = np.where(missing, len(rows) - 1, key)
        self.table[column] = np.packbits(rows, axis=1)
        self.key[column] = key.astype(np.int64)

    def bits(self, rows: np.ndarray, column: str) -> np.ndarray:
        """Packed ``(len(rows), ceil(n / 8))`` matches of each record's predicate."""
        if column in self.table:
            return self.table[column][self.key[column][rows]]
        return np.packbits(_record_masks(self.cols, rows, column, self.medians), axis=1)


#: Bytes a column's predicate table may take (else its predicates are compared).
_BITS_BUDGET = 1 << 26


def _record_counts(bits: _RecordBits, rows: np.ndarray, draws: np.ndarray,
                   columns: list[str]) -> np.ndarray:
    """Synthetic rows matching each record query (rows[i] on columns draws[i]), in bulk.

    The same predicates as :func:`_record_query`, as packed bitsets ANDed slot by slot
    and counted by popcount: no query object per candidate.
    """
    mask = None
    for slot in range(draws.shape[1]):
        slot_bits = np.empty((len(rows), (bits.cols.n + 7) // 8), dtype=np.uint8)
        for j in np.unique(draws[:, slot]):
            picked = np.flatnonzero(draws[:, slot] == j)
            slot_bits[picked] = bits.bits(rows[picked], columns[j])
        mask = slot_bits if mask is None else np.bitwise_and(mask, slot_bits, out=mask)
    if mask is None:
        return np.full(len(rows), bits.cols.n)
    return np.bitwise_count(mask).sum(axis=1, dtype=np.int64)


def _record_masks(cols: _Columns, rows: np.ndarray, column: str,
                  medians: dict[str, float]) -> np.ndarray:
    """``(len(rows), n)``: the rows matching the predicate each record writes on ``column``."""
    missing = cols.missing[column]
    data = cols.values[column]
    here = data[rows]
    if cols.kinds[column] == "numeric":
        out = np.empty((len(rows), cols.n), dtype=bool)
        with np.errstate(invalid="ignore"):
            above = here > medians[column]  # one comparison per group, not both for all
            out[above] = data[None, :] >= here[above, None]
            out[~above] = data[None, :] <= here[~above, None]
    elif cols.kinds[column] == "bool":
        truth = data.astype(bool) & ~missing
        out = np.where(here.astype(bool)[:, None], truth[None, :], ~truth[None, :])
    else:
        out = data[None, :] == here[:, None]
    out[missing[rows]] = missing[None, :]  # a missing value writes "is missing"
    return out


def _random_query(cols: _Columns, uniques: dict[str, np.ndarray], columns: Sequence[str],
                  rng: np.random.Generator) -> tuple[Predicate, ...]:
    """The baseline attacker's query: random values and operators on ``columns``."""
    query = []
    for column in sorted(columns, key=str):
        values = uniques[column]
        value = values[rng.integers(len(values))]
        if pd.isna(value):
            query.append(Predicate(column, ("notna", "isna")[rng.integers(2)]))
        elif cols.kinds[column] == "bool":
            query.append(Predicate(column, ("true", "false")[rng.integers(2)]))
        elif cols.kinds[column] == "numeric":
            query.append(Predicate(column, _NUMERIC_OPS[rng.integers(6)], float(value)))
        else:
            query.append(Predicate(column, ("==", "!=")[rng.integers(2)], value))
    return tuple(query)


#: Record x column-set pairs tried all (in a random order) rather than drawn.
_ENUMERATE = 1 << 21


class _Search:
    """The multivariate attacker's search: candidate draws counted in bulk, deduplicated.

    Only a draw that singles out a synthetic record and was not seen before becomes a
    query object, so a table where every draw singles out (two rows) costs one object
    per distinct (record, column set), not one per draw.
    """

    def __init__(self, syn: _Columns, bits: _RecordBits, columns: list[str], n_cols: int,
                 n_attacks: int, medians: dict[str, float]) -> None:
        self.syn, self.bits, self.columns = syn, bits, columns
        self.n_cols, self.n_attacks, self.medians = n_cols, n_attacks, medians
        self.found: dict[tuple, None] = {}
        self.seen: set[bytes] = set()
        self.attempts = 0
        self.step = max(1, 8 * _CELLS // max(syn.n, 1))  # packed: n / 8 bytes per candidate

    def add(self, rows: np.ndarray, draws: np.ndarray) -> int:
        """Try these draws; keep the new singling-out queries in draw order; return hits."""
        self.attempts += len(rows)
        hits = np.flatnonzero(_record_counts(self.bits, rows, draws, self.columns) == 1)
        if not len(hits):
            return 0
        keys = np.column_stack([rows[hits], np.sort(draws[hits], axis=1)])
        first = np.sort(np.unique(keys, axis=0, return_index=True)[1])
        for i in first:
            key = keys[i].tobytes()
            if len(self.found) >= self.n_attacks or key in self.seen:
                continue
            self.seen.add(key)
            query = _record_query(self.syn, rows[hits[i]],
                                  [self.columns[j] for j in draws[hits[i]]], self.medians)
            self.found.setdefault(query, None)
        return len(hits)

    def sample(self, rng: np.random.Generator, limit: float) -> None:
        """Draw as anonymeter does: a uniform record and column set each, at most ``limit``."""
        hits = 0
        while len(self.found) < self.n_attacks and self.attempts < limit:
            # Enough candidates for the queries still missing at the hit rate seen so far.
            rate = (hits + 1) / (self.attempts + 64)
            batch = int(min(max(64, 1.2 * (self.n_attacks - len(self.found)) / rate),
                            limit - self.attempts, self.step))
            rows = rng.integers(0, self.syn.n, batch)
            draws = np.argsort(rng.random((batch, len(self.columns))), axis=1)[:, :self.n_cols]
            hits += self.add(rows, draws)

    def exhaust(self, rng: np.random.Generator) -> None:
        """Every (record, column set) once, in a uniformly random order."""
        combos = np.array(list(itertools.combinations(range(len(self.columns)), self.n_cols)),
                          dtype=np.int64).reshape(-1, self.n_cols)
        order = rng.permutation(self.syn.n * len(combos))
        for start in range(0, len(order), self.step):
            if len(self.found) >= self.n_attacks:
                break
            part = order[start:start + self.step]
            self.add(part // len(combos), combos[part % len(combos)])


class SinglingOutEvaluator:
    """anonymeter's singling-out evaluator, seeded and vectorised.

    Parameters
    ----------
    ori : DataFrame
        The original (training) records: a query succeeds when it singles out one of them.
    syn : DataFrame
        The synthetic records the attacker reads to write queries.
    n_attacks : int, default=500
        Queries to write (the denominator of every rate, as in anonymeter, even when fewer
        could be written: then a ``n_queries`` below it says so).
    n_cols : int, default=3
        Columns per multivariate query.
    control : DataFrame, optional
        Records not used to train the generator: the same queries are checked on them.
    max_attempts : int or None, default=10_000_000
        Candidate multivariate queries tried at most.
    random_state : None, int or numpy Generator
        Seeds every draw.
    seed : int, optional
        anonymeter's name for ``random_state`` (give one or the other).

    Notes
    -----
    Duplicated rows are dropped from every table first, as anonymeter does. When the
    control set and the original set differ in size, the control successes are rescaled
    with anonymeter's model of how singling out depends on the table size (Cohen and
    Nissim's ``P(w, n) = n w (1 - w)^(n - 1)`` integrated over query weights, fitted on
    subsamples of the control set drawn with ``random_state``).
    """

    def __init__(self, ori: pd.DataFrame, syn: pd.DataFrame, n_attacks: int = 500,
                 n_cols: int = 3, control: pd.DataFrame | None = None,
                 max_attempts: int | None = 10_000_000, random_state: Any = None,
                 seed: int | None = None) -> None:
        self.ori = check_frame(ori, "ori", _FUNC).drop_duplicates()
        self.syn = check_frame(syn, "syn", _FUNC).drop_duplicates()
        self.control = check_frame(control, "control", _FUNC, allow_none=True)
        if self.control is not None:
            self.control = self.control.drop_duplicates()
        self.n_attacks = check_attack_count(n_attacks, _FUNC)
        if isinstance(n_cols, bool) or not isinstance(n_cols, int) or not (
                1 <= n_cols <= self.syn.shape[1]):
            raise param_error("n_cols", _FUNC, f"an integer in [1, {self.syn.shape[1]}]",
                              n_cols)
        self.n_cols = n_cols
        if max_attempts is not None and (isinstance(max_attempts, bool) or not isinstance(
                max_attempts, int) or max_attempts < 1):
            raise param_error("max_attempts", _FUNC, "None or a positive integer",
                              max_attempts)
        self.max_attempts = max_attempts
        if seed is not None and random_state is not None:
            raise param_error("seed", _FUNC, "None when random_state is given (seed is "
                              "anonymeter's name for it)", seed)
        self.random_state = seed if seed is not None else random_state
        self._counts: Counts | None = None

    def evaluate(self, mode: str = "multivariate") -> SinglingOutEvaluator:
        """Write the queries, the baseline's and check them on the original and control."""
        if mode not in ("univariate", "multivariate"):
            raise param_error("mode", f"{_FUNC}.evaluate", "'univariate' or 'multivariate'",
                              mode)
        rng = check_random_state(self.random_state, func=_FUNC)
        syn = _Columns(self.syn)
        n_cols = 1 if mode == "univariate" else self.n_cols
        uniques = {c: self.syn[c].unique() for c in self.syn.columns}
        baseline = [_random_query(syn, uniques, columns, rng)
                    for columns in _column_draws(list(self.syn.columns), self.n_attacks,
                                                 n_cols, rng)]
        self._baseline_queries = baseline
        queries = (self._univariate(syn, rng) if mode == "univariate"
                   else self._multivariate(syn, rng))
        self._queries = queries
        ori = _Columns(self.ori)
        success = count_matches(ori, queries) == 1
        self._successful = [q for q, ok in zip(queries, success, strict=True) if ok]
        n_control = None if self.control is None else self._control_successes(queries, rng)
        self._counts = Counts(self.n_attacks, int(success.sum()),
                              int((count_matches(ori, baseline) == 1).sum()), n_control,
                              extra={"mode": mode, "n_queries": len(queries)})
        return self

    def _univariate(self, syn: _Columns, rng: np.random.Generator) -> list[tuple]:
        candidates = list(dict.fromkeys(_univariate_candidates(self.syn, syn)))
        candidates = [candidates[i] for i in rng.permutation(len(candidates))]
        singles = count_matches(syn, candidates) == 1
        return [q for q, ok in zip(candidates, singles, strict=True) if ok][:self.n_attacks]

    def _multivariate(self, syn: _Columns, rng: np.random.Generator) -> list[tuple]:
        """Queries from random records on random columns, as anonymeter draws them.

        A draw is a (record, column set) pair, uniform. When the pairs are few
        (:data:`_ENUMERATE` at most, and no more than ``max_attempts``), all of them are
        tried in a random order instead: the order in which distinct pairs first appear
        in uniform draws is a uniformly random permutation, so this is anonymeter's
        attacker run to exhaustion, never fewer queries, and it stops as soon as no new
        query can be written (a 2-row table: 2 x C(columns, n_cols) pairs, not ten
        million draws).
        """
        medians = self.syn.median(numeric_only=True).to_dict()
        search = _Search(syn, _RecordBits(syn, medians), list(self.syn.columns), self.n_cols,
                         self.n_attacks, medians)
        space = syn.n * math.comb(len(search.columns), self.n_cols)
        limit = self.max_attempts if self.max_attempts is not None else np.inf
        if space <= min(_ENUMERATE, limit):
            search.exhaust(rng)
        else:
            search.sample(rng, limit)
        if len(search.found) < self.n_attacks:
            warn_degenerate(
                f"{_FUNC}: only {len(search.found)} distinct multivariate queries single out "
                f"a synthetic record ({search.attempts} of {space} record and column "
                f"choices tried) out of the {self.n_attacks} asked (n_attacks); the rates "
                "still divide by n_attacks, as anonymeter's, so the risk may be "
                "underestimated: lower n_attacks or n_cols, or give a larger synthetic "
                "table.", stacklevel=4)
        return list(search.found)

    def _control_successes(self, queries: list[tuple], rng: np.random.Generator) -> float:
        control = _Columns(self.control)
        n = float((count_matches(control, queries) == 1).sum())
        if len(self.control) == len(self.ori) or not queries:
            return n
        model = _size_model(self.control, queries, rng)
        return n * model(len(self.ori)) / model(len(self.control))

    def _evaluated(self) -> Counts:
        if self._counts is None:
            raise RuntimeError(f"{_FUNC}: call evaluate() first.")
        return self._counts

    def queries(self, baseline: bool = False) -> list[str]:
        """The successful queries (of the baseline attacker with ``baseline``), as text."""
        self._evaluated()
        chosen = self._baseline_queries if baseline else self._successful
        if baseline:
            ori = _Columns(self.ori)
            chosen = [q for q, n in zip(chosen, count_matches(ori, chosen), strict=True)
                      if n == 1]
        return [" & ".join(map(str, q)) for q in chosen]

    def results(self, confidence_level: float = 0.95) -> Counts:
        """The counts (attacks, successes, baseline and control successes).

        Read as anonymeter's ``EvaluationResults``: ``attack_rate``, ``control_rate``,
        ``risk(baseline=...)`` at ``confidence_level``.
        """
        return self._evaluated().at_level(confidence_level)

    def risk(self, confidence_level: float = 0.95, baseline: bool = False) -> PrivacyRisk:
        """The singling-out risk (anonymeter's definition) with its interval.

        ``.value`` and ``.ci`` as anonymeter's ``PrivacyRisk``; ``.low``, ``.high`` too.
        """
        return self.results(confidence_level).risk(baseline)


def _column_draws(columns: list[str], n: int, k: int,
                  rng: np.random.Generator) -> list[list[str]]:
    """``n`` draws of ``k`` distinct columns (a random permutation's first ``k`` each)."""
    order = np.argsort(rng.random((n, len(columns))), axis=1)[:, :k]
    return [[columns[j] for j in row] for row in order]


def _probability_integral(n: Any, w_min: float, w_max: Any) -> Any:
    """Cohen and Nissim's singling-out probability integrated over weights [w_min, w_max]."""
    return ((n * w_min + 1) * (1 - w_min) ** n - (n * w_max + 1) * (1 - w_max) ** n) / (n + 1)


def _size_model(control: pd.DataFrame, queries: list[tuple], rng: np.random.Generator) -> Any:
    """How many queries single out in a table of n rows: fitted on control subsamples."""
    from scipy.optimize import curve_fit

    sizes, successes = [], []
    for n_rows in np.linspace(min(1000, len(control)), len(control), 10).astype(int):
        for _ in range(5):
            part = control.iloc[np.sort(rng.choice(len(control), n_rows, replace=False))]
            successes.append(int((count_matches(_Columns(part), queries) == 1).sum()))
            sizes.append(n_rows)
    x, y = np.array(sizes, dtype=float), np.array(successes, dtype=float)

    def model(n: Any, w_eff: float, norm: float) -> Any:
        return norm * _probability_integral(n, 0.0, w_eff)

    guess = 1 / x.max()
    norm0 = 1 / _probability_integral(x.max(), 0.0, guess)
    (w_eff, norm), _ = curve_fit(model, x, y, p0=(guess, norm0), bounds=(0, (1, np.inf)))
    return lambda n: model(float(n), w_eff, norm)
