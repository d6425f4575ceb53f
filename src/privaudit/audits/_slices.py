"""Slices of a finished membership result, from the target's outputs already in hand.

:func:`slice_result` computes them; :class:`SliceEnricher` adds them to every result an
audit finishes (an :class:`~privaudit.audits.Enricher` of :class:`~privaudit.audits.AuditRun`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit.results import SliceSummary

if TYPE_CHECKING:
    from privaudit.results import AttackResult
    from privaudit.targets import ModelOutputs

__all__ = ["SLICE_SETTINGS", "SliceEnricher", "slice_result"]

#: How :func:`audit_model` slices every result (see :func:`slice_result`). The bootstrap is
#: kept small because an attack has some 25 slices (2 of correctness, 10 of loss, one per
#: class): 100 resamples give intervals good to about +-0.01 at a tenth of the default cost.
#: TPR is reported at 1% and 10% FPR only: a slice has ~100 non-members, so a 0.1% FPR is
#: below its resolution.
SLICE_SETTINGS: dict[str, Any] = {
    "n_bootstrap": 100,
    "fprs": (0.01, 0.1),
    "confidence": 0.95,
    "min_slice_size": 10,
    "n_most_exposed": 10,
}
# Deciles need ~1,000 records to keep ~50 members and ~50 non-members per slice.
_DECILE_MIN_RECORDS = 1000


def slice_result(
    result: AttackResult, outputs: ModelOutputs, *,
    random_state: int | np.random.Generator | None = 0,
) -> SliceSummary | None:
    """Slices and most exposed records of one result, as a JSON-ready summary.

    Computed from the target's outputs on the audited records, already in hand: the target
    is not queried. Slices follow TensorFlow Privacy's ``SlicingSpec`` [1]_: the entire
    dataset, each true class and correct / incorrect predictions (classifiers), and loss
    percentiles (deciles from 1,000 records, quintiles below; not for a label-only
    target, whose 0-1 loss is the correctness slice again).

    Parameters
    ----------
    result : AttackResult
        A result whose records are the rows of ``outputs``, in order.
    outputs : ModelOutputs
        The target's outputs on those records.
    random_state : int, Generator or None, default=0
        Seeds the bootstrap of :func:`~privaudit.results.slice_metrics`.

    Returns
    -------
    SliceSummary or None
        ``rows``, ``most_exposed``, ``most_exposed_tied`` and ``settings``: the rows of
        :func:`~privaudit.results.slice_metrics`;
        the first ``SLICE_SETTINGS["n_most_exposed"]`` rows of
        :func:`~privaudit.results.vulnerability_ranking` (``record_id``, ``score``,
        ``detection_fpr``, ``rank``; ties share a rank); the number of members whose
        detection FPR is at most that of the last one listed (larger than the list when it
        was cut inside a tie, whose order is only the record order); and the settings
        used. Lists of dicts with NaN written as ``None``, so the result saves to strict
        JSON and reloads equal. ``None`` when ``outputs`` has another number of records.

    Notes
    -----
    Slices that cannot be scored (fewer than ``min_slice_size`` members or non-members,
    one class, empty) keep NaN metrics and their ``status``; the
    :class:`~privaudit.exceptions.DegenerateInputWarning` that
    :func:`~privaudit.results.slice_metrics` raises for them is silenced here, since the
    caller asked for an audit, not for these slices.

    References
    ----------
    .. [1] Song, S. and Marn, D. (2020). Introducing a new privacy testing library in
       TensorFlow. TensorFlow blog (``SlicingSpec`` of TensorFlow Privacy).
    .. [2] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership inference attacks from first principles. IEEE S&P.
    """
    import warnings

    from privaudit.exceptions import DegenerateInputWarning
    from privaudit.results import slice_metrics, to_jsonable, vulnerability_ranking

    n = result.n_records
    if len(outputs) != n:
        return None
    loss = np.asarray(outputs.loss, dtype=np.float64)
    use_loss = outputs.loss_name != "zero_one" and bool(np.all(np.isfinite(loss)))
    n_percentiles = 10 if n >= _DECILE_MIN_RECORDS else 5
    classifier = outputs.task == "classification"
    settings = SLICE_SETTINGS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)
        frame = slice_metrics(
            result,
            by_class=outputs.y if classifier else None,
            correct=outputs.signal("correctness") if classifier else None,
            loss=loss if use_loss else None,
            n_percentiles=n_percentiles,
            fprs=settings["fprs"],
            n_bootstrap=settings["n_bootstrap"],
            confidence=settings["confidence"],
            min_slice_size=settings["min_slice_size"],
            random_state=random_state,
        )
        ranking = vulnerability_ranking(result)
    exposed = ranking.head(settings["n_most_exposed"])
    n_tied = 0
    if len(exposed):
        # Ties are common (a memorising model gives many members the same score): say how
        # many members are as exposed as the last one listed, so that a list drawn from a
        # larger tie is not read as "these ten and no others".
        last = exposed["detection_fpr"].iloc[-1]
        n_tied = (int((ranking["detection_fpr"] <= last).sum()) if np.isfinite(last)
                  else len(ranking))
    return SliceSummary(
        rows=to_jsonable(frame.to_dict("records"), where="slices"),
        most_exposed=to_jsonable(
            exposed[["record_id", "score", "detection_fpr", "rank"]].to_dict("records"),
            where="most_exposed",
        ),
        most_exposed_tied=n_tied,
        settings=to_jsonable({
            "n_bootstrap": settings["n_bootstrap"],
            "confidence": settings["confidence"],
            "fprs": list(settings["fprs"]),
            "min_slice_size": settings["min_slice_size"],
            "n_percentiles": n_percentiles if use_loss else 0,
            "loss": outputs.loss_name if use_loss else None,
        }, where="slice_settings"),
    )



class SliceEnricher:
    """Adds :func:`slice_result` to each result whose records are the audited rows.

    Parameters
    ----------
    outputs : callable
        Returns the target's outputs on the audited records, or None when they were not
        queried: slicing alone never spends a query (a label-only budget).
    labels : ndarray
        The audited membership labels (a result with other labels is left as is).
    random_state : int
        Seeds the slices' bootstrap.
    """

    def __init__(self, outputs: Callable[[], ModelOutputs | None], labels: np.ndarray,
                 random_state: int) -> None:
        self.outputs, self.labels, self.random_state = outputs, labels, random_state

    def __call__(self, result: AttackResult) -> bool:
        """Add the slices; return whether the result changed."""
        outputs = self.outputs()
        if outputs is None or result.audit.slices is not None:
            return False
        if not np.array_equal(result.labels, self.labels):
            return False  # not aligned with the audited rows: nothing to slice by
        sliced = slice_result(result, outputs, random_state=self.random_state)
        if sliced is None:
            return False
        result.audit.slices = sliced
        return True
