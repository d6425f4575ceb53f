"""Statistically valid effective epsilon of a set of attacks (Jagielski et al., TAPAS)."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import privaudit.metrics as pm
from privaudit._validation import check_fraction, param_error
from privaudit.exceptions import DegenerateInputWarning
from privaudit.report._common import check_results, unique_names
from privaudit.results import AttackResult

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["EffectiveEpsilonReport", "effective_epsilon_by_target", "headline_epsilon"]

#: Why a cross-fitted result has no headline epsilon (shared with the per-target section).
OUT_OF_FOLD_NOTE = "scored out of fold, not valid for this bound"

#: How :class:`EffectiveEpsilonReport` chooses among attacks.
SELECTIONS = ("bonferroni", "validation")

EPSILON_COLUMNS = ("confidence", "epsilon_low", "epsilon_high", "attack", "threshold",
                   "n_validation", "n_test")


class EffectiveEpsilonReport:
    r"""Lower bound on the effective epsilon of a mechanism, from several attacks on it.

    A mechanism that is :math:`\varepsilon`-DP bounds every attack's rates by
    :math:`\max(TPR/FPR, (1-FPR)/(1-TPR)) \leq e^\varepsilon`. Following Jagielski et
    al., a fraction ``validation_split`` of the records selects a threshold and the rest
    of the records bound its rates with Clopper-Pearson intervals at each confidence
    level. The bound is statistically valid but conservative: it needs many records to
    be non-trivial.

    How the attack is chosen among ``m`` candidates (``selection``):

    - ``"bonferroni"`` (default): no attack is chosen on the data. Every attack is bounded
      on its own at level ``1 - (1 - gamma) / m`` and the row reports the largest bound
      and the attack that reached it. By the union bound the largest is a valid level-gamma
      bound, and one attack's clear refutation is never hidden by a selection made on a
      small validation part (issue 19: a tenth of 200 runs picked an attack whose bound
      was 0.00 beside another's 2.00). The same rule as the generator claims' test.
    - ``"validation"``: TAPAS's way, the validation part also picks the attack (one test
      at level gamma; more power when the validation part is large, none of the above
      guarantee against a poor pick).

    All results must be attacks on the same records (same record ids and labels): they
    are the candidate attacks of one experiment. Results listing the same records in a
    different order are aligned by record id.

    Parameters
    ----------
    results : sequence of AttackResult
        Attacks on the same records.
    validation_split : float
        Fraction of records used to select the attack and threshold, in (0, 1).
    confidence_levels : sequence of float
        Confidence levels at which to report the bound.
    random_state : int, Generator or None
        Seeds the validation/test split.
    selection : {"bonferroni", "validation"}, default="bonferroni"
        How the attack is chosen among the candidates (see above).

    References
    ----------
    .. [1] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private
       Machine Learning: How Private is Private SGD?" NeurIPS 2020.
    .. [2] Houssiau, F., et al. "TAPAS: a Toolbox for Adversarial Privacy Auditing of
       Synthetic Data." NeurIPS 2022 Workshop on Synthetic Data.
    """

    def __init__(
        self,
        results: Sequence[AttackResult],
        validation_split: float = 0.1,
        confidence_levels: Sequence[float] = (0.9, 0.95, 0.99),
        random_state: int | np.random.Generator | None = 0,
        selection: str = "bonferroni",
    ) -> None:
        func = "EffectiveEpsilonReport"
        self.results = check_results(results, func)
        if selection not in SELECTIONS:
            raise param_error("selection", func, f"one of {list(SELECTIONS)}", selection)
        self.selection = selection
        self.validation_split = check_fraction(validation_split, param="validation_split",
                                               func=func)
        self.confidence_levels = tuple(
            check_fraction(c, param="confidence_levels", func=func) for c in confidence_levels
        )
        if not self.confidence_levels:
            raise param_error("confidence_levels", func, "a non-empty sequence", "<()>")
        self.random_state = random_state

    def aligned_scores(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The shared labels and a mapping attack name -> scores, aligned by record.

        Names are the attack names, made unique with the target (and a counter) when
        attacks share a name.

        Raises
        ------
        ValueError
            If the results do not audit the same records with the same labels.
        """
        first = self.results[0]
        ids = first.record_ids
        labels = first.labels
        ordered: list[np.ndarray] = []
        for result in self.results:
            if result.n_records != first.n_records:
                raise ValueError(
                    "EffectiveEpsilonReport needs results on the same records: "
                    f"{result.name} has {result.n_records} records but {first.name} has "
                    f"{first.n_records}."
                )
            scores, result_labels = result.scores, result.labels
            if not np.array_equal(result.record_ids, ids):
                order = _order_of(result.record_ids, ids)
                if order is None:
                    raise ValueError(
                        "EffectiveEpsilonReport needs results on the same records: the "
                        f"record ids of {result.name} and {first.name} differ (or repeat)."
                    )
                scores, result_labels = scores[order], result_labels[order]
            if not np.array_equal(result_labels, labels):
                n_diff = int(np.sum(result_labels != labels))
                raise ValueError(
                    "EffectiveEpsilonReport needs results whose labels agree record by "
                    f"record: {result.name} and {first.name} disagree on {n_diff} records."
                )
            ordered.append(scores)
        names = [r.attack or "attack" for r in self.results]
        if len(set(names)) < len(names):
            names = [r.name for r in self.results]
        names = unique_names(names)
        return labels, dict(zip(names, ordered, strict=True))

    def bounds(self) -> tuple[pm.EpsilonBound, ...]:
        """The bounds, one :class:`~privaudit.metrics.EpsilonBound` per confidence level."""
        labels, scores = self.aligned_scores()
        if self.selection == "validation" or len(scores) == 1:
            return pm.effective_epsilon_lower_bound(
                labels, scores, validation_split=self.validation_split,
                confidence_levels=self.confidence_levels, random_state=self.random_state,
            )
        return self._largest_corrected(labels, scores)

    def _largest_corrected(self, labels: np.ndarray,
                           scores: dict[str, np.ndarray]) -> tuple[pm.EpsilonBound, ...]:
        """Each attack bounded at ``1 - (1 - gamma) / m``; the largest per level."""
        m = len(scores)
        levels = [1.0 - (1.0 - c) / m for c in self.confidence_levels]
        per_attack = {name: pm.effective_epsilon_lower_bound(
            labels, {name: values}, validation_split=self.validation_split,
            confidence_levels=levels, random_state=self.random_state)
            for name, values in scores.items()}
        rows = []
        for i, confidence in enumerate(self.confidence_levels):
            candidates = [bounds[i] for bounds in per_attack.values()
                          if not np.isnan(bounds[i].epsilon_low)]
            if not candidates:  # no attack could be bounded: NaN, as one attack gives
                candidates = [next(iter(per_attack.values()))[i]]
            best = max(candidates, key=lambda b: b.epsilon_low)
            rows.append(best._replace(confidence=confidence))
        return tuple(rows)

    def compute(self) -> pd.DataFrame:
        """The bounds as a DataFrame.

        Returns
        -------
        pandas.DataFrame
            One row per confidence level, with columns ``confidence``, ``epsilon_low``
            (the valid lower bound), ``epsilon_high``, ``attack`` (the attack that reached it),
            ``threshold`` (its selected threshold), ``n_validation``, ``n_test``.
        """
        import pandas as pd

        rows: list[dict[str, Any]] = [b._asdict() for b in self.bounds()]
        return pd.DataFrame(rows, columns=list(EPSILON_COLUMNS))

    def publish(self, directory: str | os.PathLike[str]) -> pd.DataFrame:
        """Write ``effective_epsilon.csv`` in ``directory`` and return the frame."""
        from privaudit.report._binary import write_frame_csv

        frame = self.compute()
        write_frame_csv(frame, Path(directory) / "effective_epsilon.csv")
        return frame


def _order_of(ids: np.ndarray, reference: np.ndarray) -> np.ndarray | None:
    """Indices ``order`` with ``ids[order] == reference``, or None if not a permutation."""
    if len(set(ids.tolist())) != len(ids) or set(ids.tolist()) != set(reference.tolist()):
        return None
    position = {key: i for i, key in enumerate(ids.tolist())}
    return np.array([position[key] for key in reference.tolist()], dtype=np.intp)


def effective_epsilon_by_target(
    results: Sequence[AttackResult],
    *,
    validation_split: float = 0.1,
    confidence_levels: Sequence[float] = (0.9, 0.95, 0.99),
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Effective-epsilon bounds per audited mechanism, for reports over many targets.

    Results scored out of fold (``result.out_of_fold``, the cross-fitted ``trained-*``
    attacks) are left out of the candidates: a record's score there comes from a
    classifier trained on other audited records' membership, including records of the test
    part, so the attack is not fixed before the test part as Jagielski et al.'s bound
    requires. The ``note`` column names what was left out.

    Results are grouped by (dataset, generator, target): one mechanism each. A group whose
    results audit the same records gets one :class:`EffectiveEpsilonReport` over all its
    attacks (the largest of its Bonferroni-corrected bounds, naming the attack that
    reached it); otherwise each result
    is bounded on its own. A group whose bound cannot be computed (e.g. too few records)
    gets NaN rows with the reason in ``note``, so one small group does not stop a report.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``generator``, ``target``, ``candidates`` (the attacks
        compared), the columns of :meth:`EffectiveEpsilonReport.compute`, and ``note``.
    """
    import pandas as pd

    results = check_results(results, "effective_epsilon_by_target")
    groups: dict[tuple[str, str, str], list[AttackResult]] = {}
    for result in results:
        groups.setdefault((result.dataset, result.generator, result.target), []).append(result)
    frames = []
    for (dataset, generator, target), group in groups.items():
        members = [r for r in group if not r.out_of_fold]
        excluded = [r.attack or "attack" for r in group if r.out_of_fold]
        left_out = (f"left out ({OUT_OF_FOLD_NOTE}): "
                    f"{', '.join(excluded)}" if excluded else "")
        if not members:
            frame = pd.DataFrame([{"confidence": c} for c in confidence_levels],
                                 columns=list(EPSILON_COLUMNS))
            frame.insert(0, "candidates", "")
            frame.insert(0, "target", target)
            frame.insert(0, "generator", generator)
            frame.insert(0, "dataset", dataset)
            frame["note"] = left_out
            frames.append(frame)
            continue
        try:
            report = EffectiveEpsilonReport(members, validation_split, confidence_levels,
                                            random_state)
            report.aligned_scores()
            units = [report]
        except ValueError:
            units = [EffectiveEpsilonReport([r], validation_split, confidence_levels,
                                            random_state) for r in members]
        for unit in units:
            candidates = ", ".join(r.attack or "attack" for r in unit.results)
            note = ""
            try:
                frame = unit.compute()
            except ValueError as error:
                note = str(error)
                frame = pd.DataFrame(
                    [{"confidence": c} for c in unit.confidence_levels],
                    columns=list(EPSILON_COLUMNS),
                )
            frame.insert(0, "candidates", candidates)
            frame.insert(0, "target", target)
            frame.insert(0, "generator", generator)
            frame.insert(0, "dataset", dataset)
            frame["note"] = "; ".join(t for t in (note, left_out) if t)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def headline_epsilon(
    result: AttackResult,
    *,
    confidence: float = 0.95,
    validation_split: float = 0.1,
    random_state: int | np.random.Generator | None = 0,
) -> dict[str, Any]:
    """The headline effective epsilon of one result: a valid lower bound, or why there is none.

    The Clopper-Pearson lower bound of Jagielski et al.
    (:func:`privaudit.metrics.effective_epsilon_lower_bound`) on this attack alone, at
    level ``confidence``: unlike TAPAS's point estimate (``inf`` as soon as one threshold
    flags members without a false positive among the audited records), it is finite and
    means "with this confidence, the artefact is not epsilon-DP for any smaller epsilon".

    A result scored out of fold (``result.out_of_fold``, the cross-fitted ``trained-*``
    attacks) gets no bound: a record's score there depends on other test records' labels,
    so the attack is not fixed before the test part as the bound requires. A result the
    bound cannot be computed on (e.g. too few records) gets none either.

    Returns
    -------
    dict
        ``{"value": float, "confidence": float, "note": str}``: ``value`` is the bound,
        NaN when there is none, and ``note`` says why (empty when there is a bound).

    References
    ----------
    .. [1] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private
       Machine Learning: How Private is Private SGD?" NeurIPS 2020.
    """
    out: dict[str, Any] = {"value": float("nan"), "confidence": float(confidence), "note": ""}
    if result.out_of_fold:
        out["note"] = OUT_OF_FOLD_NOTE
        return out
    try:
        # Too few records give NaN with a DegenerateInputWarning: the note says why instead.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DegenerateInputWarning)
            (bound,) = pm.effective_epsilon_lower_bound(
                result.labels, result.scores, validation_split=validation_split,
                confidence_levels=(confidence,), random_state=random_state,
            )
    except ValueError as error:
        out["note"] = str(error)
        return out
    out["value"] = float(bound.epsilon_low)
    if math.isnan(out["value"]):
        out["note"] = "; ".join(str(w.message) for w in caught) or "not computed"
    return out
