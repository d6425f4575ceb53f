"""One exact nearest-neighbour engine for mixed-type tables.

The distance is Gower's (1971) for mixed data, as anonymeter and SDMetrics use it: the MEAN
over columns of a per-column distance in [0, 1],

- numeric: ``|a - b| / range``, the range taken over every frame the encoder was fitted on;
- categorical: ``0`` if equal, else ``1``;
- missing values: NaN and NaN count 0 (both missing agree), NaN against a value counts 1.

anonymeter sums the columns instead of averaging (same ranking, distances scaled by the
number of columns), counts NaN against NaN as 1 and lets NaN against a number poison the
distance with NaN; SDMetrics' DCR cross-merges the two tables in pandas. Here every
distance is finite and in [0, 1].

Speed without approximation: the sum of the per-column distances is written as
``c_a + c_b - 2 <l_a, r_b> + L1(x_a, x_b) + mismatches(k_a, k_b)`` and computed as one
BLAS product, one scipy C ``cdist(..., "cityblock")`` and a pass per wide categorical
column. A categorical column with few categories is one-hot encoded (a "missing" slot
included); a numeric column with few distinct values is "thermometer" encoded
(indicators ``[v >= t_i]`` weighted by the gaps between its sorted distinct values), so
that its ``|a - b|`` is a weighted Hamming distance; other numeric columns go to
``cdist``. A numeric column with missing values adds the bilinear correction
``m_a + m_b - m_a v_b - v_a m_b - 2 m_a m_b`` (``m`` the missing flag, ``v`` the value
the product or ``cdist`` saw, 0 for a missing one) to the product, which is why the
query side ``l`` and the candidate side ``r`` of the product differ.
Queries are scanned in chunks of bounded memory (``chunk_size x n_candidates`` distances
at a time), the chunks optionally spread over the executor (local processes or Ray; same
numbers whatever the executor). Top-k is exact, ties broken by the lowest candidate
position, or, given one seed per query row (``tie_seeds``), at random and independently
per row: row ``i`` orders equally distant candidates by the SplitMix64 stream [3]_ seeded
with its seed (candidate ``j``'s key is the stream's ``j + 1``-th draw), so a row's
neighbours depend on its own seed only, never on the chunking or the executor.

References
----------
.. [1] Gower, J. C. "A General Coefficient of Similarity and Some of Its Properties."
   Biometrics 27(4), 1971.
.. [2] Giomi, M., Boenisch, F., Wehmeyer, C. and Tasnádi, B. "A Unified Framework for
   Quantifying Privacy Risk in Synthetic Data." PoPETs 2023 (anonymeter).
.. [3] Steele, G. L., Lea, D. and Flood, C. H. "Fast Splittable Pseudorandom Number
   Generators." OOPSLA 2014 (SplitMix64).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privaudit._validation import param_error
from privaudit.synthetic._metadata import first_non_numeric

__all__ = ["PARALLEL_MIN_DISTANCES", "EncodedTable", "MixedTypeEncoder", "gower_distances",
           "nearest_neighbors", "worth_workers"]

_FUNC = "nearest_neighbors"
#: Categories (or distinct numeric values) up to which a column joins the matrix product.
_MAX_INDICATORS = 32
#: Distances computed at once per chunk (float64, 32 MiB: small chunks stay in cache).
_CHUNK_ELEMENTS = 1 << 22
#: Distances below which a new local worker pool costs more than it saves: the scan runs
#: in this process, where BLAS already uses every core (issue 19: 20,000 x 2,000 rows took
#: 3.6x longer with two fresh workers). About a minute of scanning on two cores.
PARALLEL_MIN_DISTANCES = 1 << 30
#: Added and removed to snap column sums (at most the number of columns) to a 2**-30 grid.
_SNAP = float(2**22)
#: SplitMix64's increment and output multipliers (Steele et al. 2014).
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


@dataclass
class EncodedTable:
    """A table encoded for :func:`gower_distances` (rows in the order given).

    ``left`` and ``right`` (n, W): the row's vectors on the query and the candidate
    side of the product, ``[-2 l, c, 1]`` and ``[r, 1, c]``; ``constant`` (n,): its
    ``c``; ``continuous`` (n, p): numeric columns scaled by their range, shifted to
    start at 0, missing values at 0; ``codes`` (n, q): integer codes of wide
    categorical columns (-1: missing).
    """

    left: np.ndarray
    right: np.ndarray
    constant: np.ndarray
    continuous: np.ndarray
    codes: np.ndarray
    n_columns: int

    def __len__(self) -> int:
        return len(self.constant)

    def rows(self, part: slice | np.ndarray) -> EncodedTable:
        return EncodedTable(self.left[part], self.right[part], self.constant[part],
                            self.continuous[part], self.codes[part], self.n_columns)


@dataclass
class _Column:
    name: str
    kind: str  # "categorical", "codes", "thermometer", "continuous"
    values: np.ndarray = field(default_factory=lambda: np.empty(0))  # categories or levels
    origin: float = 0.0  # the smallest value of every fitted frame: scaled values >= 0
    scale: float = 1.0
    has_missing: bool = False


class MixedTypeEncoder:
    """Learns each column's kind, range and values from frames, then encodes them.

    Parameters
    ----------
    columns : sequence of str, optional
        Columns compared (default: every column of the first frame fitted).
    categorical : sequence of str, optional
        Columns compared as categories (default: those whose dtype is not numeric;
        booleans are categorical).

    Notes
    -----
    Fit on every frame that will be encoded (the categories and distinct values of all
    of them are needed for exact distances); ``range_frames`` sets the numeric ranges
    (e.g. the original data's alone). A numeric column whose values are all equal gets
    range 1, as anonymeter does.
    """

    def __init__(self, columns: Sequence[str] | None = None,
                 categorical: Sequence[str] | None = None) -> None:
        self.columns = columns
        self.categorical = categorical

    def fit(self, *frames: pd.DataFrame,
            range_frames: Sequence[pd.DataFrame] | None = None) -> MixedTypeEncoder:
        """Learn kinds, categories and distinct values from ``frames``.

        Numeric ranges come from ``range_frames`` (default: ``frames``).
        """
        func = "MixedTypeEncoder.fit"
        if not frames:
            raise param_error("frames", func, "at least one DataFrame", ())
        _check_frames(frames, "frames", func)
        ranged = list(frames if range_frames is None else range_frames)
        _check_frames(ranged, "range_frames", func)
        columns = list(frames[0].columns if self.columns is None else self.columns)
        if not columns:
            raise param_error("columns", "MixedTypeEncoder", "at least one column", columns)
        _check_columns([*frames, *ranged], columns, func)
        categorical = set(self.categorical if self.categorical is not None else
                          [c for c in columns if not _is_numeric(frames[0][c])])
        unknown = categorical - set(columns)
        if unknown:
            raise param_error("categorical", "MixedTypeEncoder", f"columns among {columns}",
                              sorted(unknown))
        self.columns_ = [self._fit_column(c, c in categorical, frames, ranged)
                         for c in columns]
        return self

    @staticmethod
    def _fit_column(name: str, categorical: bool, frames: Sequence[pd.DataFrame],
                    ranged: Sequence[pd.DataFrame]) -> _Column:
        joined = pd.concat([f[name] for f in frames], ignore_index=True)
        if categorical:
            cats = np.sort(pd.unique(joined.dropna().astype(str)).astype(object))
            kind = "categorical" if len(cats) < _MAX_INDICATORS else "codes"
            return _Column(name, kind, cats)
        values = _numeric(joined, name)
        ranged_values = np.concatenate([_numeric(f[name], name) for f in ranged])
        scale = _span(ranged_values)
        levels = np.unique(values[~np.isnan(values)])
        kind = "thermometer" if len(levels) <= _MAX_INDICATORS else "continuous"
        return _Column(name, kind, levels, float(levels[0]) if levels.size else 0.0,
                       scale, bool(np.isnan(values).any()))

    def transform(self, frame: pd.DataFrame) -> EncodedTable:
        """``frame`` encoded with what :meth:`fit` learned (every value must have been seen)."""
        func = "MixedTypeEncoder.transform"
        if not hasattr(self, "columns_"):
            raise RuntimeError(f"{func}: call fit first.")
        _check_frames([frame], "frame", func)
        _check_columns([frame], [c.name for c in self.columns_], func)
        n = len(frame)
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("left", "right", "cont", "codes")}
        constant = np.zeros(n)
        for col in self.columns_:
            series = frame[col.name]
            if col.kind == "codes":
                parts["codes"].append(_codes(series, col))
                continue
            if col.kind == "categorical":
                left, right, c = _one_hot(series, col)
            else:
                left, right, c = _numeric_blocks(series, col, parts["cont"])
            parts["left"].append(left)
            parts["right"].append(right)
            constant += c
        # c_a + c_b - 2 <l_a, r_b> as ONE product: [-2 l_a, c_a, 1] . [r_b, 1, c_b].
        ones = np.ones((n, 1))
        left = np.hstack([-2.0 * _stack(parts["left"], n, np.float64), constant[:, None], ones])
        right = np.hstack([_stack(parts["right"], n, np.float64), ones, constant[:, None]])
        return EncodedTable(left, right, constant, _stack(parts["cont"], n, np.float64),
                            _stack(parts["codes"], n, np.int64), len(self.columns_))


# Product blocks: a column's distance is c_a + c_b - 2 <l_a, r_b> (+ its cdist part).


def _one_hot(series: pd.Series, col: _Column) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mismatch = 1 - <u_a, u_b> for one-hot u (a "missing" slot included): weights 1/2."""
    missing = series.isna().to_numpy()
    u = np.zeros((len(series), len(col.values) + 1))
    u[missing, -1] = 1.0
    present = np.flatnonzero(~missing)
    u[present, _positions(series.iloc[present].astype(str).to_numpy(object), col)] = 1.0
    u *= np.sqrt(0.5)
    return u, u, np.full(len(series), 0.5)


def _numeric_blocks(series: pd.Series, col: _Column,
                    continuous: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A numeric column's product blocks; its continuous part appended to ``continuous``.

    Thermometer: ``|a - b| / scale = sum_i g_i |u_ai - u_bi|`` with ``u_i = [v >= t_i]``
    and ``g_i`` the scaled gaps, i.e. ``T_a + T_b - 2 <u_a, g u_b>`` with ``T = <g, u>``
    the scaled value. Missing values (flag ``m``, value 0) add ``m_a + m_b - m_a v_b -
    v_a m_b - 2 m_a m_b``, making it 1 against a value and 0 against another missing one.
    """
    values = _numeric(series, col.name)
    missing = np.isnan(values)
    scaled = np.where(missing, 0.0, (values - col.origin) / col.scale)
    n = len(values)
    if col.kind == "thermometer":
        _positions(values[~missing], col)  # every value was seen in fitting
        gaps = np.diff(col.values) / col.scale
        u = (np.nan_to_num(values, nan=col.origin)[:, None] >= col.values[None, 1:]) * np.sqrt(
            gaps)[None, :]
        left, right, constant = u, u, scaled.copy()
    else:
        continuous.append(scaled)
        left = right = np.zeros((n, 0))
        constant = np.zeros(n)
    if col.has_missing:
        m = missing.astype(np.float64)
        left = np.column_stack([left, m, scaled, m])
        right = np.column_stack([right, 0.5 * scaled, 0.5 * m, m])
        constant = constant + m
    return left, right, constant


def _codes(series: pd.Series, col: _Column) -> np.ndarray:
    out = np.full(len(series), -1, dtype=np.int64)
    present = np.flatnonzero(series.notna().to_numpy())
    out[present] = _positions(series.iloc[present].astype(str).to_numpy(object), col)
    return out


def _positions(values: np.ndarray, col: _Column) -> np.ndarray:
    position = np.searchsorted(col.values, values)
    inside = position < len(col.values)
    seen = inside.copy()
    seen[inside] = col.values[position[inside]] == values[inside]
    if not seen.all():
        raise param_error("frame", "MixedTypeEncoder.transform", "only values seen by fit "
                          f"in column {col.name!r}", values[~seen][0])
    return position


def _numeric(series: pd.Series, name: str) -> np.ndarray:
    bad = first_non_numeric(series)
    if bad is not None:
        raise ValueError(f"Column {name!r} holds text ({bad[1]!r} at row {bad[0]} from 0) "
                         "but is compared as numbers: declare it categorical in the "
                         "metadata.")
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64,
                                                           na_value=np.nan)


def _stack(parts: list[np.ndarray], n: int, dtype: Any) -> np.ndarray:
    if not parts:
        return np.zeros((n, 0), dtype=dtype)
    return np.column_stack([p.reshape(n, -1) for p in parts]).astype(dtype, copy=False)


def _span(values: np.ndarray) -> float:
    """The spread (max - min) of the non-missing values; 1 when they are all equal or none."""
    finite = values[~np.isnan(values)]
    span = float(finite.max() - finite.min()) if finite.size else 0.0
    return span if span > 0 else 1.0


def _is_numeric(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def _check_frames(frames: Sequence[Any], param: str, func: str) -> None:
    for frame in frames:
        if not isinstance(frame, pd.DataFrame):
            raise param_error(param, func, "pandas DataFrames", f"<{type(frame).__name__}>",
                              error=TypeError)


def _check_columns(frames: Sequence[pd.DataFrame], columns: list[str], func: str) -> None:
    for frame in frames:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise param_error("columns", func, "columns present in every table",
                              missing)


# --------------------------------------------------------------------------- distances


def gower_distances(a: EncodedTable, b: EncodedTable) -> np.ndarray:
    """Dense ``(len(a), len(b))`` Gower distances between two encoded tables."""
    total = _column_sums(a, b)
    total /= a.n_columns
    return total


def _column_sums(a: EncodedTable, b: EncodedTable) -> np.ndarray:
    """Sums over the columns of the per-column distances (n_columns x Gower), snapped."""
    from scipy.spatial.distance import cdist

    total = a.left @ b.right.T
    if a.continuous.shape[1]:
        total += cdist(a.continuous, b.continuous, "cityblock")
    for j in range(a.codes.shape[1]):
        total += a.codes[:, j, None] != b.codes[None, :, j]
    # The product leaves rounding of order 1e-16 x width: adding and removing 2**22 snaps
    # every sum to a grid of 2**-30 (about 1e-9), so equal distances tie exactly and
    # identical rows are exactly 0 (two passes, cheaper than np.round's three).
    total += _SNAP
    total -= _SNAP
    return total


def _top_k(distances: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest of each row, nearest first, ties by lowest column."""
    rows = np.arange(distances.shape[0])
    if k <= 8:  # k passes of argmin: first occurrence wins, so ties go to the lowest column
        idx = np.empty((len(rows), k), dtype=np.int64)
        dist = np.empty((len(rows), k))
        for j in range(k):
            idx[:, j] = np.argmin(distances, axis=1)
            dist[:, j] = distances[rows, idx[:, j]]
            distances[rows, idx[:, j]] = np.inf
        return dist, idx
    # Larger k: the k-th smallest value by partition (linear), then every column below it
    # and, among the columns equal to it, the lowest ones until k are taken.
    kth = np.partition(distances, k - 1, axis=1)[:, k - 1:k]
    below = distances < kth
    tied = distances == kth
    room = k - below.sum(axis=1, keepdims=True)
    chosen = below | (tied & (np.cumsum(tied, axis=1) <= room))
    columns = np.nonzero(chosen)[1].reshape(len(rows), k)  # ascending per row
    values = np.take_along_axis(distances, columns, axis=1)
    order = np.lexsort((columns, values), axis=1)  # nearest first, then lowest column
    return (np.take_along_axis(values, order, axis=1),
            np.take_along_axis(columns, order, axis=1).astype(np.int64))


def _tie_keys(seeds: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The draws number ``positions + 1`` of the SplitMix64 streams of ``seeds`` (broadcast).

    SplitMix64's n-th output is a bijective mix of ``seed + n * gamma`` [3]_, so any draw of
    a row's stream is computed directly from its position: the keys of the tied
    candidates alone, vectorised over rows, without running the stream up to them.
    """
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps, as SplitMix64 intends
        z = seeds + (positions.astype(np.uint64) + np.uint64(1)) * _GAMMA
        z = (z ^ (z >> np.uint64(30))) * _MIX[0]
        z = (z ^ (z >> np.uint64(27))) * _MIX[1]
        return z ^ (z >> np.uint64(31))


def _random_ties(sums: np.ndarray, nearest: np.ndarray, index: np.ndarray,
                 seeds: np.ndarray) -> np.ndarray:
    """``index`` (``_top_k``'s) with ties among equal ``sums`` broken at random, per row.

    Every candidate nearer than the row's k-th distance is kept; when others lie AT it
    besides the kept ones, the places left go to a uniform draw without replacement
    among all of them; then equal distances are put in the order of the candidates'
    keys. Each row draws from its own seed only. Rows without ties keep ``_top_k``'s
    neighbours, in the same order. ``sums`` is overwritten.
    """
    k = index.shape[1]
    kth = nearest[:, -1:]
    # With the k kept out of the way, a row's minimum is at its k-th distance only when
    # the boundary holds more candidates than places: one fast reduction finds those rows.
    sums[np.arange(len(sums))[:, None], index] = np.inf
    redraw = np.flatnonzero(sums.min(axis=1) <= kth[:, 0])
    if len(redraw):
        index = index.copy()
        ties = sums[redraw]
        ties[np.arange(len(redraw))[:, None], index[redraw]] = nearest[redraw]
        at_kth = ties == kth[redraw]
        nearer = np.count_nonzero(nearest[redraw] < kth[redraw], axis=1)
        # The boundary's positions, grouped by row (every candidate, for copies of a row).
        tied = np.flatnonzero(at_kth)
        tied %= sums.shape[1]
        drawn, group, slot = _draw_without_replacement(
            tied, np.count_nonzero(at_kth, axis=1), k - nearer, seeds[redraw])
        index[redraw[group], nearer[group] + slot] = drawn
    if k == 1:
        return index
    order = np.lexsort((_tie_keys(seeds[:, None], index), nearest), axis=1)
    return np.take_along_axis(index, order, axis=1)


def _draw_without_replacement(values: np.ndarray, sizes: np.ndarray, takes: np.ndarray,
                              seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``takes[g]`` of group ``g``'s ``sizes[g]`` values, uniformly without replacement.

    ``values`` holds the groups one after the other; it is shuffled in place. The first
    ``takes[g]`` steps of a Fisher-Yates shuffle of each group, vectorised over the
    groups: at most k passes over the groups, however large they are (sorting every tied
    candidate by its key took 20 times the search itself on a table of copies). Group
    ``g``'s draws are the SplitMix64 stream of ``seeds[g]`` with its top bit flipped: a
    stretch of the stream that never meets the candidates' keys (they would meet only
    2**63 draws apart). The modulo's bias is below ``sizes / 2**64``.

    Returns the drawn values, each one's group and its rank in its group's draw.
    """
    start = np.cumsum(sizes) - sizes
    stream = seeds ^ np.uint64(1 << 63)
    for step in range(int(takes.max())):
        live = np.flatnonzero(takes > step)
        here = start[live] + step
        left = (sizes[live] - step).astype(np.uint64)
        there = here + (_tie_keys(stream[live], np.uint64(step)) % left).astype(np.int64)
        values[here], values[there] = values[there], values[here]
    group = np.repeat(np.arange(len(sizes)), takes)
    slot = np.arange(len(group)) - np.repeat(np.cumsum(takes) - takes, takes)
    return values[start[group] + slot], group, slot


def _chunk_neighbors(start: int, stop: int, queries: EncodedTable, candidates: EncodedTable,
                     k: int, exclude_self: bool,
                     tie_seeds: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    sums = _column_sums(queries.rows(slice(start, stop)), candidates)
    if exclude_self:
        rows = np.arange(stop - start)
        sums[rows, start + rows] = np.inf
    # The division by the number of columns keeps the order: only the k kept are divided.
    nearest, index = _top_k(sums, k)
    if tie_seeds is not None:
        index = _random_ties(sums, nearest, index, tie_seeds[start:stop])
    return nearest / queries.n_columns, index


def nearest_neighbors(
    queries: pd.DataFrame, candidates: pd.DataFrame, *, n_neighbors: int = 1,
    columns: Sequence[str] | None = None, categorical: Sequence[str] | None = None,
    fit_frames: Sequence[pd.DataFrame] | None = None, exclude_self: bool = False,
    executor: Any = None, n_jobs: int | None = None, chunk_size: int | None = None,
    progress: Any = None, tie_seeds: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_neighbors`` nearest candidates of every query row, exactly.

    Parameters
    ----------
    queries, candidates : pandas.DataFrame
        The rows searched from and the rows searched in.
    n_neighbors : int, default=1
        Neighbours returned per query (at most the number of candidates).
    columns : sequence of str, optional
        Columns compared (default: the candidates' columns).
    categorical : sequence of str, optional
        Columns compared as categories (default: non-numeric dtypes and booleans).
    fit_frames : sequence of DataFrame, optional
        Frames whose union sets the numeric ranges (default: queries and candidates).
    exclude_self : bool, default=False
        ``queries`` and ``candidates`` are the same table and a row is not its own
        neighbour (the distance to the closest OTHER record, as DCR's train-train
        baseline needs: a duplicated row still finds its twin at 0).
    executor : {"local", "ray"} or Executor, optional
        Spread the query chunks over worker processes or a Ray cluster (default: inline,
        where BLAS already uses every core). Same numbers whatever the executor. A local
        pool is started only for scans of at least :data:`PARALLEL_MIN_DISTANCES`
        distances (see :func:`worth_workers`); pass an Executor object to reuse its
        workers across calls.
    n_jobs : int, optional
        Workers, with an executor name.
    chunk_size : int, optional
        Query rows per chunk (default: about 4 million distances at a time).
    progress : None, bool, callable(str) or Progress
        A bar over the chunks.
    tie_seeds : array of n_queries unsigned 64-bit integers, optional
        Break exact ties at random, independently per query row: row ``i`` orders its
        equally distant candidates by the SplitMix64 stream seeded with ``tie_seeds[i]``
        (see the module). Each row's neighbours are then a draw of its own, the same
        whatever the chunking or the executor; an attack on many targets needs this,
        where one shared order would give every target the same pick among tied rows.
        Default: ties go to the lowest position.

    Returns
    -------
    distances : ndarray of shape (n_queries, n_neighbors)
        Gower distances in [0, 1] (see the module), nearest first.
    indices : ndarray of shape (n_queries, n_neighbors)
        Positions in ``candidates``; ties go to the lowest position (without
        ``tie_seeds``).
    """
    from privaudit._progress import as_progress

    k, chunk = _check_search(queries, candidates, n_neighbors, exclude_self, chunk_size)
    seeds = _check_tie_seeds(tie_seeds, len(queries))
    cols = list(candidates.columns if columns is None else columns)
    frames = [queries] if exclude_self else [queries, candidates]
    encoder = MixedTypeEncoder(cols, categorical).fit(*frames, range_frames=fit_frames)
    q, c = encoder.transform(queries), (encoder.transform(candidates) if not exclude_self
                                        else None)
    c = q if c is None else c
    tasks = [(s, min(s + chunk, len(q))) for s in range(0, len(q), chunk)]
    dist = np.empty((len(q), k))
    idx = np.empty((len(q), k), dtype=np.int64)
    bar = as_progress(progress)
    with bar.task("Nearest neighbours", total=len(tasks)) as step:
        for i, (d, j) in _map_chunks(tasks, q, c, k, exclude_self, seeds, executor, n_jobs):
            start, stop = tasks[i]
            dist[start:stop], idx[start:stop] = d, j
            step.advance()
    return dist, idx


def worth_workers(n_distances: int, executor: Any, n_jobs: Any) -> bool:
    """Whether a scan of ``n_distances`` should go to worker processes.

    An executor object (its workers already started, or Ray) is always used. A pool this
    call would start (``executor`` None or ``"local"``) is started only for at least
    :data:`PARALLEL_MIN_DISTANCES` distances: below that, starting Python and importing
    numpy in every worker takes longer than the scan it would share, so parallel would be
    slower than serial. The numbers are the same either way.
    """
    if executor is None and n_jobs is None:
        return False
    if executor is not None and not isinstance(executor, str):
        return True
    if executor == "ray":
        return True
    return n_jobs not in (None, 1) and n_distances >= PARALLEL_MIN_DISTANCES


def _map_chunks(tasks: list[tuple[int, int]], q: EncodedTable, c: EncodedTable, k: int,
                exclude_self: bool, tie_seeds: np.ndarray | None, executor: Any,
                n_jobs: Any) -> Any:
    if not worth_workers(len(q) * len(c), executor, n_jobs):
        for i, (start, stop) in enumerate(tasks):
            yield i, _chunk_neighbors(start, stop, q, c, k, exclude_self, tie_seeds)
        return
    from privaudit.training import get_executor

    runner = get_executor("local" if executor is None else executor, n_jobs=n_jobs,
                          func=_FUNC)
    shared = {"queries": q, "candidates": c, "k": k, "exclude_self": exclude_self,
              "tie_seeds": tie_seeds}
    yield from runner.map_unordered(_chunk_neighbors, tasks, shared=shared)


def _check_search(queries: Any, candidates: Any, n_neighbors: Any, exclude_self: Any,
                  chunk_size: Any) -> tuple[int, int]:
    _check_frames([queries], "queries", _FUNC)
    _check_frames([candidates], "candidates", _FUNC)
    if not isinstance(exclude_self, bool):
        raise param_error("exclude_self", _FUNC, "True or False", exclude_self, error=TypeError)
    if exclude_self and len(queries) != len(candidates):
        raise param_error("exclude_self", _FUNC, "False unless queries and candidates are "
                          "the same table", exclude_self)
    available = len(candidates) - exclude_self
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, (int, np.integer)) or not (
            1 <= n_neighbors <= available):
        raise param_error("n_neighbors", _FUNC, f"an integer in [1, {available}] (the "
                          "candidates available)", n_neighbors)
    if chunk_size is None:
        return int(n_neighbors), max(1, min(len(queries), _CHUNK_ELEMENTS // max(
            1, len(candidates))))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or (
            chunk_size < 1):
        raise param_error("chunk_size", _FUNC, "a positive integer", chunk_size)
    return int(n_neighbors), int(chunk_size)


def _check_tie_seeds(tie_seeds: Any, n_queries: int) -> np.ndarray | None:
    """``tie_seeds`` as uint64, one per query row (None: ties to the lowest position)."""
    if tie_seeds is None:
        return None
    seeds = np.asarray(tie_seeds)
    if seeds.shape != (n_queries,) or seeds.dtype.kind not in "ui" or (
            seeds.dtype.kind == "i" and seeds.size and seeds.min() < 0):
        raise param_error("tie_seeds", _FUNC, f"None or {n_queries} non-negative integers "
                          "(one seed per query row)", f"<array of shape {seeds.shape}, "
                          f"dtype {seeds.dtype}>")
    return seeds.astype(np.uint64)
