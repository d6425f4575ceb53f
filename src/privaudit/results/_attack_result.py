"""``AttackResult``: labels, scores, record ids and provenance of one attack run."""

from __future__ import annotations

import functools
import json
import math
import numbers
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

import privaudit.metrics as pm
from privaudit._optional import import_optional
from privaudit._validation import (
    check_binary_labels,
    check_fraction,
    check_random_state,
    check_real_array,
    check_scores,
    param_error,
)
from privaudit.exceptions import BaselineWarning, DegenerateInputWarning
from privaudit.results._io import (
    DamagedResultWarning,
    ResultFileError,
    atomic_write,
    csv_safe_cell,
    dump_json,
    restore_csv_cell,
    to_jsonable,
    write_csv,
)

__all__ = [
    "DEFAULT_FPRS",
    "AttackResult",
    "Convention",
    "ScoreView",
    "fpr_key",
    "load_results",
]

#: False-positive rates at which :meth:`AttackResult.metrics` reports the TPR by default.
DEFAULT_FPRS: tuple[float, ...] = (0.0, 0.001, 0.01, 0.1)

#: Version of the on-disk layout written by :meth:`AttackResult.save`.
SCHEMA_VERSION = 1

RESULT_FILE = "result.json"
_SCORES_FILES = {"csv": "scores.csv", "parquet": "scores.parquet"}
_RESERVED_COLUMNS = ("record_id", "label", "score", "prediction")

Convention = Literal["privaudit", "open-unlearning"]


class ScoreView(NamedTuple):
    """Labels and scores of a result written in one sign convention.

    Attributes
    ----------
    labels : ndarray of int8
        Ground truth in the convention's coding.
    scores : ndarray of float64
        Scores in the convention's orientation.
    convention : str
        ``"privaudit"`` (1 = member, higher = more likely member) or ``"open-unlearning"``
        (0 = forget/member, 1 = holdout/non-member, higher = less likely member).
    """

    labels: NDArray[np.int8]
    scores: NDArray[np.float64]
    convention: str


def fpr_key(fpr: float) -> str:
    """Key under which the TPR at false-positive rate ``fpr`` is stored (``"0.001"``).

    ``str(float(fpr))``: the shortest text that reads back as the same float, so keys never
    collide and ``float(key) == fpr``.
    """
    return str(float(fpr))


def _check_fprs(fprs: Iterable[float], func: str) -> tuple[float, ...]:
    if isinstance(fprs, (str, bytes)) or not isinstance(fprs, Iterable):
        raise param_error("fprs", func, "a sequence of rates in [0, 1)", fprs, error=TypeError)
    out = tuple(
        check_fraction(f, param="fprs", func=func, low_inclusive=True) for f in fprs
    )
    # Duplicates would collide in the dict; keep the first occurrence, in order.
    return tuple(dict.fromkeys(out))


def _check_n_bootstrap(n_bootstrap: Any, func: str) -> int:
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, numbers.Integral):
        raise param_error(
            "n_bootstrap", func, "a non-negative integer", n_bootstrap, error=TypeError
        )
    if n_bootstrap < 0:
        raise param_error("n_bootstrap", func, "a non-negative integer", n_bootstrap)
    return int(n_bootstrap)


def _check_record_ids(record_ids: Any, n: int, func: str) -> NDArray[Any]:
    """Return ids as int64 or as an object array of ``str``; nothing else round-trips."""
    if record_ids is None:
        return np.arange(n, dtype=np.int64)
    arr = np.asarray(record_ids)
    if arr.ndim != 1:
        raise param_error("record_ids", func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.shape[0] != n:
        raise param_error(
            "record_ids", func, f"the same length as 'labels' ({n})", f"<length {arr.shape[0]}>"
        )
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise param_error(
                "record_ids", func, "integers that fit in int64", "<values above 2**63 - 1>"
            )
        return _check_unique_ids(arr.astype(np.int64), func)
    if arr.dtype.kind == "U" or (
        arr.dtype.kind == "O" and all(isinstance(v, str) for v in arr.tolist())
    ):
        out = np.empty(n, dtype=object)
        out[:] = [str(v) for v in arr.tolist()]
        return _check_unique_ids(out, func)
    raise param_error(
        "record_ids", func, "integers or strings", f"<array of dtype {arr.dtype}>",
        error=TypeError,
    )


def _check_unique_ids(ids: NDArray[Any], func: str) -> NDArray[Any]:
    """Refuse ids used more than once: each row must be one record (naming a few repeats)."""
    values, counts = np.unique(ids, return_counts=True)
    if values.shape[0] != ids.shape[0]:
        repeated = values[counts > 1]
        raise param_error(
            "record_ids", func, "unique (one id per record)",
            f"<{repeated.shape[0]} ids used more than once, e.g. {repeated[:3].tolist()!r}>",
        )
    return ids


def _optional_float_array(
    values: Any, n: int, *, param: str, func: str
) -> NDArray[np.float64] | None:
    if values is None:
        return None
    # A numeric dtype, as the scores (numeric strings are refused); NaN is allowed.
    arr = check_real_array(values, func=func, param=param).astype(np.float64)
    if arr.ndim != 1:
        raise param_error(param, func, "a 1-D array", f"<array of shape {arr.shape}>")
    if arr.shape[0] != n:
        raise param_error(
            param, func, f"the same length as 'labels' ({n})", f"<length {arr.shape[0]}>"
        )
    return arr


def _estimate_dict(value: float, low: float = math.nan, high: float = math.nan) -> dict[str, float]:
    return {"value": float(value), "low": float(low), "high": float(high)}


@dataclass(eq=False)
class AttackResult:
    """Outcome of one attack against one target on one set of audited records.

    Parameters
    ----------
    labels : ndarray of shape (n_records,)
        Ground truth, 1 = member (or forgotten record), 0 = non-member. For an attribute
        inference attack, 1 = the record has the sensitive value the attack guesses.
    scores : ndarray of shape (n_records,)
        Attack scores, higher = more likely member. Must be finite.
    record_ids : ndarray of shape (n_records,), optional
        Identifiers of the audited records, integers or strings (defaults to ``0..n-1``).
        Stored as ``int64`` or as an object array of ``str``.
    attack, target, dataset, generator : str
        Provenance: names of the attack, the audited artefact, the dataset and (for
        synthetic data) the generator.
    kind : {"membership", "attribute"}
        Which inference the labels answer.
    predictions : ndarray of shape (n_records,), optional
        Hard 0/1 guesses, when the attack makes them (e.g. at a calibrated threshold).
    raw_statistic : ndarray of shape (n_records,), optional
        The statistic before it was turned into a score (e.g. the per-record loss, for
        which lower = more likely member). Kept so both sign conventions can be printed.
    raw_statistic_name : str
        Name of ``raw_statistic`` (e.g. ``"loss"``); ``"raw_statistic"`` when left empty.
    parameters : dict
        The attack's parameters (JSON-serialisable). For attribute inference,
        ``parameters["sensitive_attribute"]`` names the attribute in reports.
    extra : dict
        Attack-specific numbers reported beside the metrics (e.g. the theoretical advantage
        of Yeom et al.'s Theorem 3). ``extra["raw_advantage"]``, when present, is the
        advantage of the same attack against the raw data, used by the privacy gain
        (default 1, as in TAPAS).

    Notes
    -----
    The arrays are validated and converted on construction (labels to ``int8``, scores to
    ``float64``); fields assigned afterwards are not re-validated.

    Two sign conventions are in use in the field. privaudit's (1 = member, higher = more
    likely member) is the one stored; :meth:`scores_as` gives the other one
    (open-unlearning's: 0 = forget, 1 = holdout, higher = less likely member). The AUC is
    the same number in both.

    References
    ----------
    .. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for Adversarial
       Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    .. [2] Stadler, T., Oprisanu, B. and Troncoso, C. "Synthetic Data -- Anonymisation
       Groundhog Day." USENIX Security 2022.
    .. [3] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
       "Membership Inference Attacks From First Principles." IEEE S&P 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from privaudit.results import AttackResult
    >>> result = AttackResult(labels=np.array([1, 1, 0, 0]), scores=np.array([0.9, 0.4, 0.5, 0.1]),
    ...                       attack="loss", target="model")
    >>> result.n_members, result.n_non_members
    (2, 2)
    """

    labels: NDArray[np.int8]
    scores: NDArray[np.float64]
    record_ids: NDArray[Any] | None = None
    attack: str = ""
    target: str = ""
    dataset: str = ""
    generator: str = ""
    kind: Literal["membership", "attribute"] = "membership"
    predictions: NDArray[np.int8] | None = None
    raw_statistic: NDArray[np.float64] | None = None
    raw_statistic_name: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        func = "AttackResult"
        self.labels = check_binary_labels(self.labels, func=func)
        n = self.labels.shape[0]
        self.scores = check_scores(self.scores, func=func)
        if self.scores.shape[0] != n:
            raise param_error(
                "scores", func, f"the same length as 'labels' ({n})",
                f"<length {self.scores.shape[0]}>",
            )
        self.record_ids = _check_record_ids(self.record_ids, n, func)
        if self.predictions is not None:
            self.predictions = check_binary_labels(self.predictions, func=func,
                                                   param="predictions")
            if self.predictions.shape[0] != n:
                raise param_error(
                    "predictions", func, f"the same length as 'labels' ({n})",
                    f"<length {self.predictions.shape[0]}>",
                )
        self.raw_statistic = _optional_float_array(
            self.raw_statistic, n, param="raw_statistic", func=func
        )
        for name in ("attack", "target", "dataset", "generator", "raw_statistic_name"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise param_error(name, func, "a string", value, error=TypeError)
        if self.kind not in ("membership", "attribute"):
            raise param_error("kind", func, "'membership' or 'attribute'", self.kind)
        if self.raw_statistic is not None and not self.raw_statistic_name:
            self.raw_statistic_name = "raw_statistic"
        if self.raw_statistic_name in _RESERVED_COLUMNS:
            raise param_error(
                "raw_statistic_name", func, f"none of {list(_RESERVED_COLUMNS)}",
                self.raw_statistic_name,
            )
        for name in ("parameters", "extra"):
            value = getattr(self, name)
            if value is None:
                setattr(self, name, {})
            elif not isinstance(value, dict):
                raise param_error(name, func, "a dict", f"<{type(value).__name__}>",
                                  error=TypeError)
        if "raw_advantage" in self.extra:
            # Read by metrics() for the privacy gain: checked now, not when a report is built.
            check_fraction(self.extra["raw_advantage"], param="extra['raw_advantage']",
                           func=func, low=-1.0, high=1.0, low_inclusive=True,
                           high_inclusive=True)

    def __repr__(self) -> str:
        return (
            f"AttackResult(attack={self.attack!r}, target={self.target!r}, "
            f"dataset={self.dataset!r}, kind={self.kind!r}, n_members={self.n_members}, "
            f"n_non_members={self.n_non_members})"
        )

    # ------------------------------------------------------------------ properties
    @property
    def n_records(self) -> int:
        """Number of audited records."""
        return int(self.labels.shape[0])

    @property
    def n_members(self) -> int:
        """Number of records labelled 1 (members)."""
        return int(np.count_nonzero(self.labels))

    @property
    def n_non_members(self) -> int:
        """Number of records labelled 0 (non-members)."""
        return self.n_records - self.n_members

    @property
    def name(self) -> str:
        """``"attack on target"``, for plot legends and table rows."""
        attack = self.attack or "attack"
        return f"{attack} on {self.target}" if self.target else attack

    # ------------------------------------------------------------------ metrics
    def metrics(
        self,
        fprs: Sequence[float] = DEFAULT_FPRS,
        n_bootstrap: int = 1000,
        confidence: float = 0.95,
        random_state: int | np.random.Generator | None = 0,
    ) -> dict[str, Any]:
        """Every metric of the result, each with a confidence interval.

        Parameters
        ----------
        fprs : sequence of float
            False-positive rates in [0, 1) at which to report the TPR.
        n_bootstrap : int
            Number of bootstrap resamples. ``0`` skips the bootstrap: the bootstrap
            intervals are then ``NaN`` (the exact Clopper-Pearson intervals of the rates
            are still given, they cost nothing) and ``better_than_random`` is ``None``.
        confidence : float
            Confidence level of every interval, in (0, 1).
        random_state : int, Generator or None
            Seeds the bootstrap. All bootstrapped metrics use the same resamples, so their
            intervals describe the same resampled datasets.

        Returns
        -------
        dict
            ``n_members``, ``n_non_members`` (ints); ``auc``, ``advantage`` (best
            TPR - FPR over thresholds), ``effective_epsilon`` (TAPAS point estimate,
            always without interval: ``low``/``high`` are NaN) and,
            when the result has hard ``predictions``, ``accuracy``,
            ``true_positive_rate``, ``false_positive_rate``, ``precision``,
            ``mia_advantage`` (TPR - FPR of the predictions) and ``privacy_gain``, each a
            dict ``{"value", "low", "high"}``; ``tpr_at_fpr``, a dict of such dicts keyed by
            :func:`fpr_key` (``"0.001"``); ``better_than_random`` (the lower bound of the
            AUC interval is above 0.5; ``None`` without bootstrap); ``confidence``,
            ``n_bootstrap``; and ``interval_method``, naming for each metric how its
            interval was computed: ``"bootstrap"`` (percentile bootstrap over records),
            ``"clopper-pearson"`` (exact binomial interval, for accuracy, TPR, FPR and
            precision of the predictions) or ``"none"``. The bootstrap is stratified by
            label (the member and non-member counts are fixed by the audit's design).

        Notes
        -----
        The point estimates are the outputs of the :mod:`privaudit.metrics` functions on
        all records. The effective epsilon point estimate is noisy; use
        :class:`privaudit.report.EffectiveEpsilonReport` for a statistically valid lower
        bound (Jagielski et al.).

        References
        ----------
        .. [1] Houssiau, F., et al. "TAPAS: a Toolbox for Adversarial Privacy Auditing of
           Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
        .. [2] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private
           Machine Learning: How Private is Private SGD?" NeurIPS 2020.
        """
        func = "AttackResult.metrics"
        fprs = _check_fprs(fprs, func)
        n_bootstrap = _check_n_bootstrap(n_bootstrap, func)
        confidence = check_fraction(confidence, param="confidence", func=func)
        rng = check_random_state(random_state, func=func)
        # One seed for every bootstrap: each metric is resampled on the same index draws.
        seed = int(rng.integers(2**63 - 1)) if n_bootstrap else 0
        y, s = self.labels, self.scores
        method = "bootstrap" if n_bootstrap else "none"

        def boot(
            metrics: dict[str, Callable[..., float]], values: NDArray[Any] = s
        ) -> dict[str, dict[str, float]]:
            # One call for all metrics of the same values: the resamples are drawn once
            # from ``seed`` (the same draws each metric would get alone) and the built-in
            # threshold metrics share one pass of the counting engine.
            cis = pm.bootstrap_cis(
                metrics, y, values, n_resamples=n_bootstrap, confidence=confidence,
                random_state=seed,
            )
            if not n_bootstrap:
                return {name: _estimate_dict(ci.value) for name, ci in cis.items()}
            return {name: _estimate_dict(*ci) for name, ci in cis.items()}

        out: dict[str, Any] = {
            "n_members": self.n_members,
            "n_non_members": self.n_non_members,
        }
        intervals: dict[str, str] = {}
        # Partials of tpr_at_fpr (not wrappers) let bootstrap_cis use its batched path.
        tpr_metrics = {fpr_key(f): functools.partial(pm.tpr_at_fpr, fpr=f) for f in fprs}
        threshold = boot({"auc": pm.roc_auc, "advantage": pm.advantage, **{
            f"tpr_at_fpr:{key}": metric for key, metric in tpr_metrics.items()
        }})
        out["auc"] = threshold["auc"]
        intervals["auc"] = method
        out["advantage"] = threshold["advantage"]
        intervals["advantage"] = method
        out["tpr_at_fpr"] = {key: threshold[f"tpr_at_fpr:{key}"] for key in tpr_metrics}
        intervals["tpr_at_fpr"] = method
        # A point estimate only: the plug-in maximum over thresholds is biased upwards and
        # often infinite, so a bootstrap interval around it would be misleading. The
        # valid bound is EffectiveEpsilonReport's (Jagielski et al.).
        out["effective_epsilon"] = _estimate_dict(pm.effective_epsilon(y, s))
        intervals["effective_epsilon"] = "none"

        if self.predictions is not None:
            p = self.predictions
            binary = pm.binary_metrics(y, p)
            n1 = self.n_members
            n0 = self.n_non_members
            tp = int(np.count_nonzero(p[y == 1]))
            fp = int(np.count_nonzero(p[y == 0]))
            correct = int(np.count_nonzero(p == y))
            rates = {
                "accuracy": (binary.accuracy, correct, self.n_records),
                "true_positive_rate": (binary.true_positive_rate, tp, n1),
                "false_positive_rate": (binary.false_positive_rate, fp, n0),
                "precision": (binary.precision, tp, tp + fp),
            }
            for name, (value, k, n) in rates.items():
                if n > 0:
                    ci = pm.clopper_pearson(k, n, confidence)
                    out[name] = _estimate_dict(value, ci.low, ci.high)
                else:
                    out[name] = _estimate_dict(value)
                intervals[name] = "clopper-pearson"
            raw_advantage = float(self.extra.get("raw_advantage", 1.0))
            on_predictions = boot(
                {"mia_advantage": _MiaAdvantage(), "privacy_gain": _PrivacyGain(raw_advantage)},
                p,
            )
            out["mia_advantage"] = on_predictions["mia_advantage"]
            intervals["mia_advantage"] = method
            out["privacy_gain"] = on_predictions["privacy_gain"]
            intervals["privacy_gain"] = method

        low = out["auc"]["low"]
        out["better_than_random"] = bool(low > 0.5) if math.isfinite(low) else None
        out["confidence"] = confidence
        out["n_bootstrap"] = n_bootstrap
        out["interval_method"] = intervals
        return out

    def check_baseline(
        self,
        *,
        n_bootstrap: int = 1000,
        confidence: float = 0.95,
        random_state: int | np.random.Generator | None = 0,
    ) -> bool:
        """Whether the attack beats random guessing; warn when it does not.

        The attack is better than random when the lower bound of the bootstrap interval
        of its AUC is above 0.5.

        Returns
        -------
        bool
            ``True`` when better than random.

        Warns
        -----
        BaselineWarning
            When the interval contains (or lies below) 0.5.
        """
        func = "AttackResult.check_baseline"
        n_bootstrap = _check_n_bootstrap(n_bootstrap, func)
        if n_bootstrap == 0:
            raise param_error("n_bootstrap", func, "a positive integer", n_bootstrap)
        confidence = check_fraction(confidence, param="confidence", func=func)
        auc = pm.roc_auc(self.labels, self.scores)
        ci = pm.bootstrap_ci(
            pm.roc_auc, self.labels, self.scores, n_resamples=n_bootstrap,
            confidence=confidence, random_state=check_random_state(random_state, func=func),
        )
        better = bool(math.isfinite(ci.low) and ci.low > 0.5)
        if not better:
            warnings.warn(
                f"{self.name} is no better than random guessing: the {confidence:.0%} "
                f"interval of its AUC, [{ci.low:.3f}, {ci.high:.3f}] (AUC {auc:.3f}), "
                f"does not lie above 0.5.",
                BaselineWarning,
                stacklevel=2,
            )
        return better

    # ------------------------------------------------------------------ views
    def scores_as(self, convention: Convention = "privaudit") -> ScoreView:
        """Labels and scores in the given sign convention.

        Parameters
        ----------
        convention : {"privaudit", "open-unlearning"}
            ``"privaudit"``: labels 1 = member, scores higher = more likely member (the
            stored arrays). ``"open-unlearning"``: labels 0 = forget (member), 1 = holdout
            (non-member), scores higher = less likely member, as open-unlearning's
            ``mia_auc`` computes them; this is ``(1 - labels, -scores)``.

        Returns
        -------
        ScoreView
            ``(labels, scores, convention)``. ``roc_auc(view.labels, view.scores)`` is the
            same number in both conventions: flipping both the labels and the score sign
            swaps the roles of the two classes twice.
        """
        if convention == "privaudit":
            return ScoreView(self.labels.copy(), self.scores.copy(), convention)
        if convention == "open-unlearning":
            return ScoreView((1 - self.labels).astype(np.int8), -self.scores, convention)
        raise param_error(
            "convention", "AttackResult.scores_as", "'privaudit' or 'open-unlearning'",
            convention,
        )

    def to_frame(self, convention: Convention = "privaudit") -> Any:
        """One row per record: ``record_id``, ``label``, ``score``, ``prediction``, raw statistic.

        ``prediction`` is present when the result has predictions, and the raw statistic
        (under its name, e.g. ``loss``) when it has one. ``convention`` chooses how
        ``label`` and ``score`` are written (see :meth:`scores_as`); the raw statistic is
        always written as measured.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        view = self.scores_as(convention)
        data: dict[str, Any] = {
            "record_id": self.record_ids,
            "label": view.labels,
            "score": view.scores,
        }
        if self.predictions is not None:
            data["prediction"] = self.predictions
        if self.raw_statistic is not None:
            data[self.raw_statistic_name] = self.raw_statistic
        return pd.DataFrame(data)

    def to_dict(
        self,
        *,
        fprs: Sequence[float] = DEFAULT_FPRS,
        n_bootstrap: int = 1000,
        confidence: float = 0.95,
        random_state: int | np.random.Generator | None = 0,
        metrics: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Provenance, parameters, extra and metrics, as strict-JSON-ready types.

        Parameters
        ----------
        fprs, n_bootstrap, confidence, random_state
            Passed to :meth:`metrics`.
        metrics : dict, optional
            Metrics already computed by :meth:`metrics`, to avoid computing them again.

        Returns
        -------
        dict
            ``attack``, ``target``, ``dataset``, ``generator``, ``kind``,
            ``raw_statistic_name``, ``n_records``, ``parameters``, ``extra`` and
            ``metrics``. numpy values become Python numbers and non-finite floats become
            ``None``, so ``json.dumps(d, allow_nan=False)`` works.

        Raises
        ------
        TypeError
            If ``parameters`` or ``extra`` hold values JSON cannot represent.
        """
        if metrics is None:
            metrics = self.metrics(
                fprs=fprs, n_bootstrap=n_bootstrap, confidence=confidence,
                random_state=random_state,
            )
        return {
            "attack": self.attack,
            "target": self.target,
            "dataset": self.dataset,
            "generator": self.generator,
            "kind": self.kind,
            "raw_statistic_name": self.raw_statistic_name,
            "n_records": self.n_records,
            "parameters": to_jsonable(self.parameters, where="AttackResult.parameters"),
            "extra": to_jsonable(self.extra, where="AttackResult.extra"),
            "metrics": to_jsonable(metrics, where="metrics"),
        }

    # ------------------------------------------------------------------ disk
    def save(
        self,
        directory: str | os.PathLike[str],
        *,
        format: Literal["csv", "parquet"] = "csv",
        n_bootstrap: int = 0,
        random_state: int | np.random.Generator | None = 0,
    ) -> Path:
        """Write the result to ``directory``: ``result.json`` and per-record scores.

        Parameters
        ----------
        directory : path-like
            Created if needed.
        format : {"csv", "parquet"}
            Format of the per-record file, ``scores.csv`` or ``scores.parquet`` (parquet
            needs pyarrow: ``pip install 'privaudit[report]'``). Both read back the exact
            float64 values.
        n_bootstrap : int
            Bootstrap resamples for the metrics written into ``result.json`` for people
            reading it (default 0: point estimates only, so saving stays fast).
            :meth:`load` ignores them.
        random_state : int, Generator or None
            Seeds that bootstrap.

        Returns
        -------
        pathlib.Path
            The path of ``result.json``.

        Notes
        -----
        Each file is written atomically (temporary file, then :func:`os.replace`), the
        scores first and ``result.json`` last: a ``result.json`` on disk always names a
        complete scores file, so an interrupted run is detected and redone on resume.
        """
        func = "AttackResult.save"
        if format not in _SCORES_FILES:
            raise param_error("format", func, "'csv' or 'parquet'", format)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        frame = self.to_frame()
        scores_file = _SCORES_FILES[format]
        if format == "csv":
            # repr-precision floats and "NaN" for missing raw values read back exactly;
            # text cells (string ids, the raw statistic's name) never start a formula.
            write_csv(frame, directory / scores_file, na_rep="NaN")
        else:
            _require_pyarrow()
            atomic_write(
                directory / scores_file,
                lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False),
            )
        with warnings.catch_warnings():
            # Saving is not analysing: a one-class result is saved as is, and its NaN
            # metrics warn when someone computes them.
            warnings.simplefilter("ignore", DegenerateInputWarning)
            doc = self.to_dict(n_bootstrap=n_bootstrap, random_state=random_state)
        doc = {
            "privaudit_result": SCHEMA_VERSION,
            "privaudit_version": _version(),
            **doc,
            "files": {
                "scores": scores_file,
                "record_id_type": "int" if self.record_ids.dtype.kind == "i" else "str",
                "has_predictions": self.predictions is not None,
                # Text cells of scores.csv are written by csv_safe_cell: undone on load.
                "csv_escaped": format == "csv",
            },
        }
        path = dump_json(doc, directory / RESULT_FILE, where="result")
        for other in _SCORES_FILES.values():
            if other != scores_file and (directory / other).exists():
                # A stale file of the other format would be misleading beside the new one.
                (directory / other).unlink()
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AttackResult:
        """Read a result written by :meth:`save`.

        Parameters
        ----------
        path : path-like
            The result folder, or its ``result.json``.

        Returns
        -------
        AttackResult
            Equal to the saved one: same arrays (float64 bit for bit, ids of the same type),
            same provenance, parameters and extra (non-finite floats inside ``parameters``
            and ``extra`` come back as ``None``, since JSON has no NaN).

        Raises
        ------
        FileNotFoundError
            If there is no ``result.json`` at ``path``.
        ResultFileError
            If the result is damaged, tampered or unsafe: ``result.json`` is not JSON,
            lacks a key or has one of the wrong type; it names a scores file other than
            ``scores.csv`` / ``scores.parquet`` in its own folder (``../x``, an absolute
            path, a symbolic link leading out of the folder: only files inside the
            result's folder are read); the scores file is missing, unreadable, has a
            number of rows other than ``n_records``, repeated record ids, labels other
            than 0/1, or non-numeric or non-finite scores. The message names the file
            and what is wrong.
        """
        path = Path(path)
        json_path = path if path.is_file() else path / RESULT_FILE
        if not json_path.is_file():
            raise FileNotFoundError(
                f"No {RESULT_FILE} in {path}: is it a folder written by AttackResult.save?"
            )
        doc = _read_result_json(json_path)
        files = doc["files"]
        scores_path = _scores_path(json_path, files["scores"])
        raw_name = doc.get("raw_statistic_name") or ""
        frame = _read_scores(scores_path, doc, raw_name)
        try:
            return cls(
                labels=frame["label"].to_numpy(),
                scores=frame["score"].to_numpy(),
                record_ids=frame["record_id"].to_numpy(),
                attack=doc.get("attack", ""),
                target=doc.get("target", ""),
                dataset=doc.get("dataset", ""),
                generator=doc.get("generator", ""),
                kind=doc.get("kind", "membership"),
                predictions=(frame["prediction"].to_numpy()
                             if files.get("has_predictions") else None),
                raw_statistic=frame[raw_name].to_numpy() if raw_name else None,
                raw_statistic_name=raw_name,
                parameters=doc.get("parameters") or {},
                extra=doc.get("extra") or {},
            )
        except (TypeError, ValueError) as exc:
            raise ResultFileError(f"{scores_path} holds invalid data: {exc}") from None


# --- Reading saved results defensively --------------------------------------------------

#: Keys of result.json checked on load: (key, accepted types, required).
_DOC_KEYS: tuple[tuple[str, tuple[type, ...], bool], ...] = (
    ("n_records", (int,), True),
    ("files", (dict,), True),
    ("attack", (str,), False),
    ("target", (str,), False),
    ("dataset", (str,), False),
    ("generator", (str,), False),
    ("kind", (str,), False),
    ("raw_statistic_name", (str, type(None)), False),
    ("parameters", (dict, type(None)), False),
    ("extra", (dict, type(None)), False),
)
_FILES_KEYS: tuple[tuple[str, tuple[type, ...], bool], ...] = (
    ("scores", (str,), True),
    ("record_id_type", (str,), True),
    ("has_predictions", (bool,), False),
    ("csv_escaped", (bool,), False),
)


def _damaged(json_path: Path, key: str, expected: str, got: Any) -> ResultFileError:
    return ResultFileError(
        f"{json_path} is damaged: the key {key!r} must be {expected}. Got {got} instead."
    )


def _check_keys(doc: dict[str, Any], spec: Any, json_path: Path, prefix: str = "") -> None:
    for key, types, required in spec:
        if key not in doc:
            if required:
                raise _damaged(json_path, prefix + key, "present", "a file without it")
            continue
        value = doc[key]
        # bool is an int in Python, but never a count.
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise _damaged(json_path, prefix + key, f"of type {names}",
                           f"{value!r:.60} ({type(value).__name__})")


def _read_result_json(json_path: Path) -> dict[str, Any]:
    """Parse and check ``result.json``: strict JSON, the keys :meth:`load` uses, their types."""
    if json_path.resolve().parent != json_path.parent.resolve():
        raise ResultFileError(
            f"{json_path} is a link to {json_path.resolve()}, outside the result's folder: "
            "only files inside a result's folder are read."
        )
    try:
        doc = json.loads(json_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultFileError(f"{json_path} is damaged: it is not valid JSON ({exc}).") from None
    if not isinstance(doc, dict) or "privaudit_result" not in doc:
        raise ResultFileError(f"{json_path} is not a privaudit result file.")
    version = doc["privaudit_result"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _damaged(json_path, "privaudit_result", "a positive integer", repr(version))
    if version > SCHEMA_VERSION:
        raise ResultFileError(
            f"{json_path} was written by a newer privaudit (result schema {version}); "
            f"this version reads schema {SCHEMA_VERSION}."
        )
    _check_keys(doc, _DOC_KEYS, json_path)
    _check_keys(doc["files"], _FILES_KEYS, json_path, prefix="files.")
    if doc["n_records"] < 1:
        raise _damaged(json_path, "n_records", "a positive integer", repr(doc["n_records"]))
    if doc.get("kind", "membership") not in ("membership", "attribute"):
        raise _damaged(json_path, "kind", "'membership' or 'attribute'", repr(doc["kind"]))
    if doc["files"]["record_id_type"] not in ("int", "str"):
        raise _damaged(json_path, "files.record_id_type", "'int' or 'str'",
                       repr(doc["files"]["record_id_type"]))
    return doc


def _scores_path(json_path: Path, name: str) -> Path:
    """The scores file named by ``files.scores``, refused unless it lies in the folder."""
    folder = json_path.parent
    allowed = " or ".join(repr(v) for v in _SCORES_FILES.values())
    if name not in _SCORES_FILES.values():
        raise ResultFileError(
            f"{json_path}: the key 'files.scores' must be {allowed}, a file inside the "
            f"result's own folder. Got {name!r:.100} instead: only files inside a result's "
            "folder are read."
        )
    path = folder / name
    if not path.is_file():
        raise ResultFileError(
            f"{json_path} is damaged: its scores file {path} (key 'files.scores') is missing."
        )
    if path.resolve().parent != folder.resolve():
        raise ResultFileError(
            f"{path} (key 'files.scores' of {json_path}) is a link to {path.resolve()}, "
            "outside the result's folder: only files inside a result's folder are read."
        )
    return path


def _read_scores(scores_path: Path, doc: dict[str, Any], raw_name: str) -> Any:
    """The per-record frame, checked: readable, its columns present, ``n_records`` rows."""
    files = doc["files"]
    id_is_str = files["record_id_type"] == "str"
    escaped = bool(files.get("csv_escaped"))
    try:
        if scores_path.suffix == ".parquet":
            _require_pyarrow()
            import pandas as pd

            frame = pd.read_parquet(scores_path, engine="pyarrow")
        else:
            frame = _read_scores_csv(scores_path, id_is_str, raw_name, escaped)
    except (ValueError, OverflowError, OSError) as exc:
        raise ResultFileError(f"{scores_path} cannot be read: {exc}") from None
    columns = ["record_id", "label", "score"]
    if files.get("has_predictions"):
        columns.append("prediction")
    if raw_name:
        columns.append(raw_name)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ResultFileError(f"{scores_path} is damaged: it has no column {missing[0]!r}.")
    if len(frame) != doc["n_records"]:
        raise ResultFileError(
            f"{scores_path} is damaged: it has {len(frame)} rows, but 'n_records' in "
            f"{RESULT_FILE} is {doc['n_records']} (rows were removed or added)."
        )
    ids = frame["record_id"]
    if id_is_str != (ids.dtype.kind not in "iu"):
        raise ResultFileError(
            f"{scores_path} is damaged: its record ids are not of the type "
            f"'files.record_id_type' says ({files['record_id_type']!r})."
        )
    return frame


def _read_scores_csv(path: Path, id_is_str: bool, raw_name: str, escaped: bool) -> Any:
    """Read ``scores.csv`` with exact types; on a bad cell, a ValueError naming it."""
    import pandas as pd

    with open(path, "rb") as handle:
        crlf = handle.readline().endswith(b"\r\n")
    # Files are written with "\n" line ends, so a "\r" inside a quoted id is data; a file
    # saved again with "\r\n" line ends (by an editor) is still read.
    options: dict[str, Any] = {"keep_default_na": False, "encoding": "utf-8"}
    if not crlf:
        options["lineterminator"] = "\n"
    kinds: dict[str, Any] = {"label": np.int64, "prediction": np.int64, "score": np.float64,
                             "record_id": object if id_is_str else np.int64}
    if raw_name:
        kinds[raw_name] = np.float64
    on_disk = csv_safe_cell if escaped else str
    # pandas < 3 parses floats exactly only with float_precision="round_trip";
    # pandas 3 does by default and deprecates the option.
    if int(pd.__version__.split(".")[0]) < 3:
        options["float_precision"] = "round_trip"
    try:
        frame = pd.read_csv(
            path, dtype={on_disk(k): v for k, v in kinds.items()},
            na_values={on_disk(raw_name): ["NaN"]} if raw_name else None, **options)
    except pd.errors.EmptyDataError:
        raise ValueError("the file is empty") from None
    except (ValueError, OverflowError):
        options.pop("float_precision", None)
        text = pd.read_csv(path, dtype=str, **options)
        for column, kind in kinds.items():
            if kind is not object and on_disk(column) in text.columns:
                _parse_column(text[on_disk(column)].to_numpy(dtype=str), column, kind)
        raise
    if escaped:
        frame.columns = [restore_csv_cell(c) for c in frame.columns]
        if id_is_str and "record_id" in frame.columns:
            frame["record_id"] = frame["record_id"].map(restore_csv_cell)
    return frame


def _parse_column(values: NDArray[np.str_], column: str, dtype: Any) -> NDArray[Any]:
    """``values`` as ``dtype`` (numpy parses floats exactly), or a ValueError naming a cell."""
    try:
        return values.astype(dtype)
    except (ValueError, OverflowError):
        convert = int if dtype is np.int64 else float
        what = "an integer" if dtype is np.int64 else "a number"
        for line, value in enumerate(values.tolist(), start=2):
            try:
                dtype(convert(value))
            except (ValueError, OverflowError):
                raise ValueError(
                    f"the column {column!r} holds {value!r:.40} on line {line}, which is "
                    f"not {what}"
                ) from None
        raise


class _MiaAdvantage:
    def __call__(self, labels: ArrayLike, predictions: ArrayLike) -> float:
        return pm.binary_metrics(labels, np.asarray(predictions).astype(np.int8)).advantage


class _PrivacyGain:
    def __init__(self, raw_advantage: float) -> None:
        self.raw_advantage = raw_advantage

    def __call__(self, labels: ArrayLike, predictions: ArrayLike) -> float:
        return pm.privacy_gain(
            labels, np.asarray(predictions).astype(np.int8), raw_advantage=self.raw_advantage
        )


def _version() -> str:
    from privaudit import __version__

    return __version__


def _require_pyarrow() -> None:
    import_optional("pyarrow", extra="report", purpose="Reading or writing parquet")


def load_results(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    strict: bool = False,
) -> list[AttackResult]:
    """Load every saved result found under ``paths``.

    Parameters
    ----------
    paths : path-like or iterable of path-like
        Result folders, ``result.json`` files, or folders searched recursively for
        ``result.json`` files (e.g. the ``results/`` folder of a report).
    strict : bool
        What to do with a damaged result (:class:`ResultFileError`: not JSON, keys missing
        or of the wrong type, a scores file outside its folder, truncated or edited
        scores...). ``False`` (default): skip it with a :class:`DamagedResultWarning`
        naming it and what is wrong, and load the others. ``True``: raise.

    Returns
    -------
    list of AttackResult
        In the order of ``paths``; within a searched folder, sorted by path, so the order
        is the same on every machine. A result reached twice is loaded once. Empty when
        every result found was damaged (and ``strict`` is false).

    Raises
    ------
    FileNotFoundError
        If a path does not exist, or no ``result.json`` is found at all.
    ResultFileError
        If ``strict`` and a result is damaged.
    """
    if not isinstance(strict, bool):
        raise param_error("strict", "load_results", "a bool", strict, error=TypeError)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist.")
        if path.is_file():
            found.append(path)
        else:
            found.extend(sorted(path.rglob(RESULT_FILE)))
    # Deduplicated on the absolute path, not the resolved one: a result.json that is a link
    # is refused by AttackResult.load, not silently replaced by the file it points to.
    unique = list(dict.fromkeys(Path(os.path.abspath(p)) for p in found))
    if not unique:
        shown = ", ".join(str(p) for p in paths)
        raise FileNotFoundError(
            f"No {RESULT_FILE} found under {shown}: save results with AttackResult.save."
        )
    results = []
    for path in unique:
        try:
            results.append(AttackResult.load(path))
        except ResultFileError as exc:
            if strict:
                raise
            warnings.warn(f"Skipped the damaged result {path}: {exc}", DamagedResultWarning,
                          stacklevel=2)
    return results
