"""``AttackResult``: labels, scores, record ids and provenance of one attack run.

The data and its validation live here; the metric policy in :mod:`._metric_policy` and
the disk format in :mod:`._result_format`, to which the methods delegate.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import (
    check_binary_labels,
    check_fraction,
    check_real_array,
    check_scores,
    param_error,
)
from privaudit.results._audit_info import (
    LEGACY_AUDIT_KEYS,
    AuditInfo,
    notebook_html,
    split_legacy_extra,
)
from privaudit.results._family import ResultFamily
from privaudit.results._io import DamagedResultWarning, ResultFileError, to_jsonable
from privaudit.results._metric_policy import DEFAULT_FPRS, beats_random, result_metrics
from privaudit.results._result_format import find_result_files, read_result, write_result

__all__ = [
    "AttackResult",
    "Convention",
    "ScoreView",
    "load_results",
]


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


#: The typed details of an attack result, by the ``extra`` key older layouts used.
ATTACK_DETAILS = {
    "study": "study", "train_accuracy": "train_accuracy", "test_accuracy": "test_accuracy",
    "train_r2": "train_r2", "test_r2": "test_r2",
    "theoretical_advantage": "theoretical_advantage", "chance_match_rate": "chance_match_rate",
    "synthetic_confidence": "synthetic_confidence",
    "original_confidence": "original_confidence",
    "queries_per_record": "queries_per_record", "heatmap": "heatmap", "kind": "search_kind",
    "sensitive_attribute": "sensitive_attribute",
}


@dataclass(eq=False)
class AttackResult(ResultFamily):
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
        Which inference the labels answer (the family's ``kind``); the audit that made
        the result is ``audit.kind`` (:attr:`audit_kind`).
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
        Attack-specific details kept beside the metrics, free-form and JSON-serialisable
        (e.g. LiRA's variance rule, a trained attack's features). Keys of the typed
        details below given here (the older way) are moved to their attributes, and
        ``result.extra`` still reads them under these keys.
    audit : AuditInfo
        What the audit that ran the attack stamped on the result: its run key, the
        baseline check, the slices, the size of the reference pool (see
        :class:`~privaudit.results.AuditInfo`). Empty for a result built by hand.
    out_of_fold : bool
        Whether the scores were cross-fitted on the audited labels (``trained-*`` attacks):
        valid for the AUC, but not for an effective-epsilon bound, which needs scores
        fixed before the labels are seen.
    raw_advantage : float, optional
        The advantage of the same attack against the raw data, used by the privacy gain
        (None: 1, as in TAPAS).
    study : str, optional
        The study the result belongs to (``"overfitting"``, ``"unlearning"``): the
        report's study section reads it.
    train_accuracy, test_accuracy, train_r2, test_r2 : float, optional
        The target's accuracy (classification) or R² (regression) on its training and
        test records: the generalisation gap the overfitting study reports.
    theoretical_advantage : float, optional
        The membership advantage Yeom et al.'s Theorem 3 predicts (Gaussian attack).
    chance_match_rate : float, optional
        The colluding attack's chance that all keyed labels match (Theorem 4).
    synthetic_confidence, original_confidence : float, optional
        A fidelity distinguisher's mean confidence on synthetic and on real rows.
    queries_per_record : float, optional
        Label queries per audited record (Apollo).
    heatmap : dict, optional
        Apollo's TPR / FPR grids over the two search radii (the paper's Figure 5).
    search_kind : str, optional
        Apollo's search: ``"under"``, ``"over"`` or ``"both"`` (saved as ``"kind"``).
    sensitive_attribute : str, optional
        The attribute an attribute-inference result is about, when not in ``parameters``.

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
    audit: AuditInfo = field(default_factory=AuditInfo)
    out_of_fold: bool = False
    raw_advantage: float | None = None
    study: str | None = None
    train_accuracy: float | None = None
    test_accuracy: float | None = None
    train_r2: float | None = None
    test_r2: float | None = None
    theoretical_advantage: float | None = None
    chance_match_rate: float | None = None
    synthetic_confidence: float | None = None
    original_confidence: float | None = None
    queries_per_record: float | None = None
    heatmap: dict[str, Any] | None = None
    search_kind: str | None = None
    sensitive_attribute: str | None = None

    RESULT_TYPE: ClassVar[str] = "attack"
    DETAIL_FIELDS: ClassVar[dict[str, str]] = ATTACK_DETAILS

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
        if self.parameters is None:
            self.parameters = {}
        elif not isinstance(self.parameters, dict):
            raise param_error("parameters", func, "a dict",
                              f"<{type(self.parameters).__name__}>", error=TypeError)
        self._adopt_details()
        self._check_audit_fields(func)

    def _check_audit_fields(self, func: str) -> None:
        moved = [k for k in (*LEGACY_AUDIT_KEYS, "out_of_fold", "raw_advantage")
                 if k in self.extra]
        if moved:
            warnings.warn(
                f"AttackResult: the extra keys {moved} are typed fields now (audit=, "
                "out_of_fold=, raw_advantage=); they were moved there.",
                DeprecationWarning, stacklevel=4)
            legacy, rest = split_legacy_extra(self.extra)
            if self.audit.is_empty():
                self.audit = legacy
            self.out_of_fold = bool(rest.pop("out_of_fold", self.out_of_fold))
            self.raw_advantage = rest.pop("raw_advantage", self.raw_advantage)
            self.extra = rest
        if self.audit is None:
            self.audit = AuditInfo()
        elif not isinstance(self.audit, AuditInfo):
            raise param_error("audit", func, "an AuditInfo", f"<{type(self.audit).__name__}>",
                              error=TypeError)
        if not isinstance(self.out_of_fold, (bool, np.bool_)):
            raise param_error("out_of_fold", func, "a bool", self.out_of_fold, error=TypeError)
        self.out_of_fold = bool(self.out_of_fold)
        if self.raw_advantage is not None:
            # Read by metrics() for the privacy gain: checked now, not when a report is built.
            self.raw_advantage = check_fraction(
                self.raw_advantage, param="raw_advantage", func=func, low=-1.0, high=1.0,
                low_inclusive=True, high_inclusive=True)

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
            ``fpr_resolution`` says which rates the non-members resolve: ``smallest_fpr``
            (``1 / n_non_members``), ``resolvable`` (per FPR key: at least one false
            positive fits; a TPR "at 0.1% FPR" on 100 non-members is the TPR at FPR 0 and
            is not a measurement), ``smallest_resolvable`` (the key of the smallest
            positive resolvable FPR asked for, or None) and ``smallest`` (the TPR at
            ``smallest_fpr`` with its interval and exact p-value, or None);
            ``tpr_p_value`` gives, per FPR key, the exact p-value of the TPR under "no
            membership signal" (:func:`privaudit.metrics.lift_p_value`; None at FPR 0 or
            an unresolvable FPR).

        Notes
        -----
        Each TPR at FPR is that of the best threshold allowed to randomise on its
        boundary (``tpr_at_fpr(..., randomized=True)``, Fawcett 2006): the same number as
        the plain TPR at FPR unless members and non-members tie across the rate, and
        continuous in the counts, so a tie block cannot split its bootstrap between 0 and
        1.

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
        return result_metrics(self, fprs=fprs, n_bootstrap=n_bootstrap,
                              confidence=confidence, random_state=random_state)

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
        return beats_random(self, n_bootstrap=n_bootstrap, confidence=confidence,
                            random_state=random_state)

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

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, the metrics with their intervals, ROC curves."""
        return notebook_html(self)

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
            ``raw_statistic_name``, ``n_records``, ``parameters``, ``extra`` (the
            free-form details), ``details`` (the typed ones, by their saved key),
            ``audit`` (:meth:`AuditInfo.to_dict`), ``out_of_fold``, ``raw_advantage`` and
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
            "extra": to_jsonable(self.free_extra(), where="AttackResult.extra"),
            "details": to_jsonable(self.details(), where="AttackResult.details"),
            "audit": to_jsonable(self.audit.to_dict(), where="AttackResult.audit"),
            "out_of_fold": self.out_of_fold,
            "raw_advantage": self.raw_advantage,
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
        return write_result(self, directory, format=format, n_bootstrap=n_bootstrap,
                            random_state=random_state)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, require_digest: bool = False
             ) -> AttackResult:
        """Read a result written by :meth:`save`.

        Parameters
        ----------
        path : path-like
            The result folder, or its ``result.json``.
        require_digest : bool
            Refuse a result without digests (written by an older privaudit) instead of
            loading it with an :class:`~privaudit.results.UnsealedResultWarning`.

        Returns
        -------
        AttackResult
            Equal to the saved one: same arrays (float64 bit for bit, ids of the same type),
            same provenance, parameters, extra and audit info (non-finite floats inside
            ``parameters`` and ``extra`` come back as ``None``, since JSON has no NaN).
            A result of schema 1 (audit facts as loose ``extra`` keys) is read too.

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
            than 0/1, or non-numeric or non-finite scores; a file was modified after it
            was written (:class:`~privaudit.results.ModifiedResultError`: its SHA-256
            differs from the digest in ``result.json``, or ``result.json``'s own content
            differs from its digest); a value no audit writes (``claimed_epsilon`` <= 0).
            The message names the file and what is wrong.
        """
        fields, scores_path = read_result(path, require_digest=require_digest)
        try:
            return cls(**fields)
        except (TypeError, ValueError) as exc:
            raise ResultFileError(f"{scores_path} holds invalid data: {exc}") from None


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
    results = []
    for path in find_result_files(paths):
        try:
            results.append(AttackResult.load(path))
        except ResultFileError as exc:
            if strict:
                raise
            warnings.warn(f"Skipped the damaged result {path}: {exc}", DamagedResultWarning,
                          stacklevel=2)
    return results
