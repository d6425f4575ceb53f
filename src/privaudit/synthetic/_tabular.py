"""Exact matches, IMS, DCR and NNDR: synthetic rows against unseen real rows.

Is the synthetic table closer to its training data than unseen real data is?

Every check compares the synthetic rows with the training (original) rows, and beside it
the *holdout* rows (real records the generator never saw) with the training rows in the
same way: the baseline. Without a holdout the checks still report their numbers, with
``passed`` None and a finding saying the baseline is missing: privaudit never substitutes
one (comparing the training data with itself, as some tools do, makes a baseline that any
copy passes).

- **exact matches**: share of synthetic rows identical to some training row (exact,
  by hashing: :func:`privaudit._rows.rows_found_in`), beside the holdout's share and the
  training data's own duplication rate;
- **IMS** (identical match share): the same over *distinct* rows, as the source defines it;
- **DCR** (distance to closest record): each synthetic row's Gower distance to its
  nearest training row (:func:`~privaudit.synthetic.nearest_neighbors`), 5th percentile;
  beside it the share of synthetic rows closer to the training data than to the holdout
  (0.5 for a generator that does not copy, with equal-size sets);
- **NNDR** (nearest-neighbour distance ratio): ``d1 / d2``, the distance to the nearest
  training row over that to the second nearest, in [0, 1] (``0 / 0`` counts 0: a row
  with two identical training twins is as exposed as can be); low values mean a
  synthetic row sits on one particular training record. The source's code computes
  ``d2 / d1`` while its text reads the ratio as ``d1 / d2``; this is the established
  definition.

DCR and NNDR come from ONE 2-nearest-neighbour search of the synthetic rows and one of the
holdout rows.

References
----------
.. [1] Zhao, Z. et al. "CTAB-GAN: Effective Table Data Synthesizing." ACML 2021 (DCR and
   NNDR at the 5th percentile).
.. [2] Platzer, M. and Reutterer, T. "Holdout-Based Empirical Assessment of Mixed-Type
   Synthetic Data." Frontiers in Big Data 2021 (the holdout as the baseline).
.. [3] Gower, J. C. "A General Coefficient of Similarity and Some of Its Properties."
   Biometrics 27(4), 1971.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from privaudit._rows import normalised_tables, rows_found_in
from privaudit._validation import check_random_state
from privaudit.results import Finding, ProximityResult
from privaudit.synthetic._metadata import TableMetadata
from privaudit.synthetic._neighbors import nearest_neighbors

__all__ = ["closeness_checks", "exact_matches", "identical_match_share"]


def _no_holdout(result: ProximityResult) -> ProximityResult:
    if result.baseline is None:
        result.audit.findings.append(Finding(
            code="no-holdout", severity="warning",
            message=f"{result.metric}: no holdout set (real records the generator never "
                    "saw), so there is no baseline to compare with; the check is not "
                    "decided."))
    return result


def exact_matches(synthetic: pd.DataFrame, original: pd.DataFrame,
                  holdout: pd.DataFrame | None = None, **provenance: Any) -> ProximityResult:
    """Share of synthetic rows identical to some training row, beside the holdout's.

    ``original_duplication_rate`` is the training data's own duplication rate (share of
    its rows that equal another of its rows): a table with many natural duplicates (short
    records, few columns) makes matches by chance.
    """
    dup = _duplicated_share(original)
    return _no_holdout(ProximityResult(
        "exact_matches", "share", synthetic=rows_found_in(synthetic, original).astype(float),
        baseline=None if holdout is None else rows_found_in(holdout, original).astype(float),
        higher_is_safer=False, original_duplication_rate=dup, **provenance))


def identical_match_share(synthetic: pd.DataFrame, original: pd.DataFrame,
                          holdout: pd.DataFrame | None = None,
                          **provenance: Any) -> ProximityResult:
    """IMS: share of DISTINCT synthetic rows found among the training rows.

    Beside it the same share of the holdout's distinct rows.
    """
    def distinct(frame: pd.DataFrame) -> pd.DataFrame:
        normal = normalised_tables(frame, original)[0]
        return frame.loc[~normal.duplicated().to_numpy()]

    return _no_holdout(ProximityResult(
        "ims", "share", synthetic=rows_found_in(distinct(synthetic), original).astype(float),
        baseline=None if holdout is None else rows_found_in(
            distinct(holdout), original).astype(float),
        higher_is_safer=False, **provenance))


def _duplicated_share(frame: pd.DataFrame) -> float:
    if len(frame) == 0:
        return float("nan")
    normal = normalised_tables(frame)[0]
    return float(normal.duplicated(keep=False).mean())


def closeness_checks(
    synthetic: pd.DataFrame, original: pd.DataFrame, holdout: pd.DataFrame | None = None,
    *, metadata: TableMetadata | None = None, quantile: float = 0.05, random_state: Any = 0,
    executor: Any = None, n_jobs: int | None = None, progress: Any = None,
    **provenance: Any,
) -> list[ProximityResult]:
    """DCR and NNDR of the synthetic rows, beside the holdout's, from one search each.

    Distances are Gower's over the metadata's tabular columns (numeric ranges from the
    training data); see :func:`~privaudit.synthetic.nearest_neighbors`.

    Returns
    -------
    [dcr, nndr] : list of ProximityResult
        DCR's ``closer_to_train_share`` is set when there is a holdout (synthetic rows
        strictly closer to the training data than to the holdout, ties counted half, on
        equal-size subsamples drawn with ``random_state``: 0.5 without copying); its
        ``extra`` holds the source's train-vs-train 5th percentile
        (``train_train_quantile``, informational: not a baseline).
    """
    meta = metadata or TableMetadata.infer(original)
    columns, categorical = meta.tabular, meta.categorical
    tables = [meta.numeric_frame(t) for t in (synthetic, original)]
    held = None if holdout is None else meta.numeric_frame(holdout)
    search = {"columns": columns, "categorical": categorical, "fit_frames": [tables[1]],
              "executor": executor, "n_jobs": n_jobs, "progress": progress}
    syn_d, _ = nearest_neighbors(tables[0], tables[1], n_neighbors=2, **search)
    hold_d = None if held is None else nearest_neighbors(held, tables[1], n_neighbors=2,
                                                         **search)[0]
    rng = check_random_state(random_state, func="closeness_checks")
    extra = {"train_train_quantile": _train_train_quantile(tables[1], quantile, search, rng),
             "columns": columns}
    closer = None if held is None else _closer_to_train(tables[0], tables[1], held,
                                                        syn_d[:, 0], search, rng)
    params = {"quantile": quantile, "distance": "gower", "columns": columns,
              "categorical": categorical}
    dcr = ProximityResult("dcr", "quantile", synthetic=syn_d[:, 0],
                          baseline=None if hold_d is None else hold_d[:, 0],
                          quantile=quantile, parameters=params, extra=extra,
                          closer_to_train_share=closer, **provenance)
    nndr = ProximityResult("nndr", "quantile", synthetic=_ratio(syn_d),
                           baseline=None if hold_d is None else _ratio(hold_d),
                           quantile=quantile, parameters=params, **provenance)
    return [_no_holdout(dcr), _no_holdout(nndr)]


def _ratio(distances: np.ndarray) -> np.ndarray:
    """``d1 / d2`` per row; ``0 / 0`` is 0."""
    d1, d2 = distances[:, 0], distances[:, 1]
    return np.divide(d1, d2, out=np.zeros_like(d1), where=d2 > 0)


#: Training rows queried for the source's train-vs-train DCR (informational only).
TRAIN_TRAIN_QUERIES = 10_000


def _train_train_quantile(train: pd.DataFrame, quantile: float, search: dict[str, Any],
                          rng: np.random.Generator) -> float:
    """The source's train-vs-train DCR quantile: each training row to its closest OTHER one.

    On at most :data:`TRAIN_TRAIN_QUERIES` training rows (seeded) against all of them: a
    full self-scan of a large table would cost as much as the checks themselves for a
    number reported for reference only.
    """
    n = len(train)
    rows = np.arange(n) if n <= TRAIN_TRAIN_QUERIES else np.sort(
        rng.choice(n, TRAIN_TRAIN_QUERIES, replace=False))
    if n < 2:
        return float("nan")
    distances, indices = nearest_neighbors(train.iloc[rows], train, n_neighbors=2, **search)
    # The first neighbour is the row itself unless a twin at distance 0 comes first.
    own = indices[:, 0] == rows
    closest_other = np.where(own, distances[:, 1], distances[:, 0])
    return float(np.quantile(closest_other, quantile))


def _closer_to_train(synthetic: pd.DataFrame, train: pd.DataFrame, holdout: pd.DataFrame,
                     to_train_all: np.ndarray, search: dict[str, Any],
                     rng: np.random.Generator) -> dict[str, float]:
    """Share of synthetic rows closer to training than to holdout rows (ties count half).

    The larger of the two sets is subsampled (seeded) to the size of the smaller, so
    that a generator that does not copy scores 0.5 in expectation (the two sets are then
    exchangeable); the Wilson interval says whether 0.5 is excluded. When the training
    set is the smaller, the DCR search already gave each row's distance to it.
    """
    from privaudit.metrics import wilson_interval

    size = min(len(train), len(holdout))

    def distances(table: pd.DataFrame) -> np.ndarray:
        part = table if len(table) == size else table.iloc[
            np.sort(rng.choice(len(table), size, replace=False))]
        return nearest_neighbors(synthetic, part, n_neighbors=1, **search)[0][:, 0]

    to_train = to_train_all if len(train) == size else distances(train)
    to_holdout = distances(holdout)
    closer = (to_train < to_holdout) + 0.5 * (to_train == to_holdout)
    k = float(closer.sum())
    interval = wilson_interval(round(k), len(closer), 0.95)
    return {"value": k / len(closer), "low": interval.low, "high": interval.high,
            "n_per_set": int(size)}
