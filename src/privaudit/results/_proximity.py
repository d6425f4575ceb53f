"""Closeness of synthetic rows to the training rows, beside the same for unseen real rows.

The distance checks of synthetic data (DCR, NNDR) and the match checks (exact matches,
IMS) all compare one number per synthetic row (its distance to the closest training record,
its distance ratio, whether it copies a training record) with the same number per
*holdout* row: real records the generator never saw, compared with the training data in
the same way. A generator that copies is closer to its training data than unseen real data
is; one that generalises is not. Without a holdout there is no such baseline, and the
result says so (``passed`` is None) instead of inventing one; with one, the verdict rests
on the two intervals (overlapping intervals: undecided), never on point estimates alone.

:class:`ProximityResult` keeps both per-row arrays (the report draws their histograms side
by side) and summarises them with an interval:

- ``statistic="quantile"`` (DCR, NNDR: higher is safer): the ``quantile`` (5th
  percentile by default) of each array, with a distribution-free confidence interval from
  order statistics (Conover 1999, section 3.2), no resampling;
- ``statistic="share"`` (exact matches, IMS: lower is safer): the share of rows that
  match, with a Wilson interval.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import privaudit.metrics as pm
from privaudit._validation import check_fraction, param_error
from privaudit.exceptions import DegenerateInputWarning
from privaudit.results._audit_info import AuditInfo, notebook_html
from privaudit.results._family import ResultFamily, details_from
from privaudit.results._io import (
    ResultFileError,
    dump_json,
    read_arrays,
    read_strict_json,
    save_arrays,
)

__all__ = ["PROXIMITY_FILE", "ProximityResult", "quantile_interval"]

#: Name of the file a :class:`ProximityResult` is saved to, inside its folder.
PROXIMITY_FILE = "proximity.json"
_ARRAYS_FILE = "proximity.npz"
_FORMAT = "privaudit.proximity/1"
_FUNC = "ProximityResult"
_STATISTICS = ("quantile", "share")
_TEXTS = ("metric", "statistic", "attack", "target", "dataset", "generator")


def quantile_interval(values: np.ndarray, q: float,
                      confidence: float = 0.95) -> pm.Estimate:
    """The ``q``-quantile of ``values`` with a distribution-free confidence interval.

    The point is numpy's (linear interpolation). The interval is ``[x_(l), x_(u)]``, order
    statistics whose ranks are the binomial ``(n, q)`` quantiles at ``(1 -/+
    confidence) / 2``: it covers the true quantile with probability at least about
    ``confidence`` for any continuous distribution, without resampling; an end no order
    statistic reaches (too few values, e.g. the 5% quantile of fewer than 72) is
    infinite. NaN when ``values`` is empty.

    References
    ----------
    .. [1] Conover, W. J. "Practical Nonparametric Statistics", 3rd ed., Wiley 1999,
       section 3.2 (confidence interval for a quantile).
    """
    from scipy.stats import binom

    x = np.sort(np.asarray(values, dtype=np.float64))
    x = x[~np.isnan(x)]
    n = x.size
    if n == 0:
        return pm.Estimate(math.nan, math.nan, math.nan)
    alpha = 1.0 - confidence
    low = int(binom.ppf(alpha / 2, n, q))           # 1-based rank l: P(B < l) <= alpha/2
    high = int(binom.ppf(1 - alpha / 2, n, q)) + 1  # rank u
    # Too few rows for an order statistic to reach the confidence: that end is unbounded
    # (a one-row holdout bounds nothing), never the nearest row passed off as a bound.
    return pm.Estimate(float(np.quantile(x, q)), float(x[low - 1]) if low >= 1 else -math.inf,
                       float(x[high - 1]) if high <= n else math.inf)


#: The typed details of a closeness check, by the ``extra`` key older layouts used.
PROXIMITY_DETAILS = {"original_duplication_rate": "original_duplication_rate",
                     "closer_to_train_share": "closer_to_train_share"}


@dataclass
class ProximityResult(ResultFamily):
    """Per-row closeness of synthetic rows to the training data, and of holdout rows.

    Parameters
    ----------
    metric : str
        ``"dcr"``, ``"nndr"``, ``"exact_matches"``, ``"ims"``...
    statistic : {"quantile", "share"}
        How the rows are summarised (see the module).
    synthetic : array-like of float
        One value per synthetic row: its distance or ratio, or 1.0/0.0 for a match.
    baseline : array-like of float, optional
        The same per holdout row (real rows the generator never saw); None without one.
    higher_is_safer : bool
        True for distances (DCR, NNDR), False for match shares.
    quantile : float, default=0.05
        The quantile summarised, for ``statistic="quantile"``.
    attack, target, dataset, generator : str
        Provenance (``attack`` defaults to ``metric``; ``target`` the synthetic data's
        name).
    confidence : float, default=0.95
        Level of the intervals.
    parameters, extra : dict
        The check's settings and anything else to keep (strict-JSON types); keys of the
        typed details below given in ``extra`` (the older way) move to their attributes.
    audit : AuditInfo
        What the audit stamps (run key, kind, baseline check, findings).
    original_duplication_rate : float, optional
        Share of training rows duplicated within the training data (exact matches).
    closer_to_train_share : dict, optional
        Share of synthetic rows closer to a training row than to a holdout row
        (``value``, ``low``, ``high``, ``n_per_set``; 0.5 without copying).
    """

    metric: str
    statistic: str
    synthetic: Any
    baseline: Any = None
    higher_is_safer: bool = True
    quantile: float = 0.05
    attack: str = ""
    target: str = ""
    dataset: str = ""
    generator: str = ""
    confidence: float = 0.95
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    audit: AuditInfo = field(default_factory=AuditInfo)
    original_duplication_rate: float | None = None
    closer_to_train_share: dict[str, float] | None = None

    RESULT_TYPE: ClassVar[str] = "proximity"
    DETAIL_FIELDS: ClassVar[dict[str, str]] = PROXIMITY_DETAILS

    def __post_init__(self) -> None:
        self.attack = self.attack or self.metric
        for name in _TEXTS:
            if not isinstance(getattr(self, name), str):
                raise param_error(name, _FUNC, "a string", getattr(self, name),
                                  error=TypeError)
        if self.statistic not in _STATISTICS:
            raise param_error("statistic", _FUNC, "'quantile' or 'share'", self.statistic)
        self.synthetic = _values(self.synthetic, "synthetic")
        self.baseline = None if self.baseline is None else _values(self.baseline, "baseline")
        self.quantile = check_fraction(self.quantile, param="quantile", func=_FUNC)
        self.confidence = check_fraction(self.confidence, param="confidence", func=_FUNC)
        if not isinstance(self.higher_is_safer, bool):
            raise param_error("higher_is_safer", _FUNC, "True or False", self.higher_is_safer,
                              error=TypeError)
        if not isinstance(self.audit, AuditInfo):
            raise param_error("audit", _FUNC, "an AuditInfo", self.audit, error=TypeError)
        self._adopt_details()

    # ------------------------------------------------------------------ numbers
    @property
    def kind(self) -> str:
        """Always ``"closeness"``: what the result measures (the family's ``kind``)."""
        return "closeness"

    @property
    def name(self) -> str:
        """``"target / attack"``, as for other results."""
        return " / ".join(p for p in (self.target, self.attack) if p) or self.metric

    def _summary(self, values: np.ndarray) -> pm.Estimate:
        if values.size == 0:
            warnings.warn(f"{self.name}: no rows to summarise; the value is NaN.",
                          DegenerateInputWarning, stacklevel=3)
            return pm.Estimate(math.nan, math.nan, math.nan)
        if self.statistic == "quantile":
            return quantile_interval(values, self.quantile, self.confidence)
        k = int(np.count_nonzero(values))
        interval = pm.wilson_interval(k, values.size, self.confidence)
        return pm.Estimate(k / values.size, interval.low, interval.high)

    def value(self) -> pm.Estimate:
        """The synthetic rows' summary with its interval."""
        return self._summary(self.synthetic)

    def baseline_value(self) -> pm.Estimate | None:
        """The holdout rows' summary with its interval (None without a holdout)."""
        return None if self.baseline is None else self._summary(self.baseline)

    @property
    def passed(self) -> bool | None:
        """Whether the synthetic rows are no closer to training than unseen real rows.

        Decided on the intervals, never on point estimates alone: False when the
        synthetic interval lies wholly on the closer side of the holdout's, True when it
        lies wholly on the safer side, None when they overlap (a difference the data
        cannot tell from chance, e.g. beside a holdout of a few rows), without a holdout,
        or when a value is NaN. :attr:`verdict` says which.
        """
        return _VERDICTS[self.verdict]

    @property
    def verdict(self) -> str:
        """``"closer"``, ``"not closer"``, ``"overlap"`` or ``"no holdout"`` (see passed)."""
        base = self.baseline_value()
        if base is None:
            return "no holdout"
        ours = self.value()
        if any(math.isnan(x) for x in (*ours, *base)):
            return "overlap"
        safer_low, safer_high = (ours.low, ours.high) if self.higher_is_safer else (
            -ours.high, -ours.low)
        base_low, base_high = (base.low, base.high) if self.higher_is_safer else (
            -base.high, -base.low)
        if safer_high < base_low:
            return "closer"
        if safer_low > base_high:
            return "not closer"
        return "overlap"

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, the metrics with their intervals, ROC curves."""
        return notebook_html(self)

    # ------------------------------------------------------------------ disk
    def to_dict(self) -> dict[str, Any]:
        """Provenance, settings and summaries as a dict (arrays left out)."""
        base = self.baseline_value()
        doc: dict[str, Any] = {"format": _FORMAT}
        doc.update({name: getattr(self, name) for name in _TEXTS})
        doc.update(higher_is_safer=self.higher_is_safer, quantile=self.quantile,
                   confidence=self.confidence, parameters=self.parameters,
                   extra=self.free_extra(), details=self.details(),
                   audit=self.audit.to_dict(), value=self.value()._asdict(),
                   baseline_value=None if base is None else base._asdict(),
                   passed=self.passed, verdict=self.verdict, n_synthetic=int(self.synthetic.size),
                   n_baseline=None if self.baseline is None else int(self.baseline.size))
        return doc

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the arrays (``proximity.npz``), then ``proximity.json``, atomically."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        arrays = {"synthetic": self.synthetic}
        if self.baseline is not None:
            arrays["baseline"] = self.baseline
        spec = save_arrays(directory, _ARRAYS_FILE, arrays)
        doc = self.to_dict()
        doc["arrays"] = spec
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateInputWarning)
            return dump_json(doc, directory / PROXIMITY_FILE, where=_FUNC,
                             keep_non_finite=True, seal=[_ARRAYS_FILE])

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, require_digest: bool = False
             ) -> ProximityResult:
        """Read what :meth:`save` wrote (its folder or its ``proximity.json``).

        Raises
        ------
        FileNotFoundError
            If there is no ``proximity.json`` at ``path``.
        ResultFileError
            If a file is damaged, edited (the arrays' digests differ) or malformed.
        """
        path = Path(path)
        json_path = path if path.is_file() or path.is_symlink() else path / PROXIMITY_FILE
        if not os.path.lexists(json_path):
            raise FileNotFoundError(f"No {PROXIMITY_FILE} in {path}: is it a folder written "
                                    "by ProximityResult.save?")
        doc, check = read_strict_json(json_path, _FORMAT, "proximity result",
                                      require_digest=require_digest)
        arrays = read_arrays(json_path, doc, _ARRAYS_FILE, check)
        check.finish()
        kwargs = {k: doc[k] for k in (*_TEXTS, "higher_is_safer", "quantile", "confidence",
                                      "parameters") if k in doc}
        kwargs["extra"] = details_from(doc)
        try:
            return cls(**kwargs, synthetic=arrays["synthetic"],
                       baseline=arrays.get("baseline"),
                       audit=AuditInfo.from_dict(doc.get("audit") or {}))
        except (TypeError, ValueError) as exc:
            raise ResultFileError(f"{json_path} holds invalid data: {exc}") from None


_VERDICTS: dict[str, bool | None] = {"closer": False, "not closer": True, "overlap": None,
                                     "no holdout": None}


def _values(values: Any, param: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise param_error(param, _FUNC, "an array of numbers", values, error=TypeError) from None
    if np.isinf(arr).any() or (arr < 0).any():
        raise param_error(param, _FUNC, "non-negative finite values (NaN allowed)",
                          f"<{int(np.isinf(arr).sum() + (arr < 0).sum())} bad values>")
    return arr
