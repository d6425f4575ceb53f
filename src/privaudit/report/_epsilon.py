"""Statistically valid effective epsilon of a set of attacks (Jagielski et al., TAPAS)."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

import privaudit.metrics as pm
from privaudit._validation import check_fraction, param_error
from privaudit.exceptions import DegenerateInputWarning
from privaudit.report._common import (
    artefact_key,
    artefact_name,
    attack_label,
    check_results,
    unique_names,
)
from privaudit.report._format import EPSILON_DIGITS, fmt
from privaudit.results import AttackResult

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["ArtefactEpsilon", "EffectiveEpsilonReport", "artefact_epsilons",
           "effective_epsilon_by_target", "epsilon_section_context", "epsilon_statement",
           "headline_epsilon"]

#: Why a cross-fitted result has no headline epsilon (shared with the per-target section).
OUT_OF_FOLD_NOTE = "scored out of fold, not valid for this bound"

#: How :class:`EffectiveEpsilonReport` chooses among attacks.
SELECTIONS = ("bonferroni", "validation")

EPSILON_COLUMNS = ("confidence", "epsilon_low", "epsilon_high", "attack", "threshold",
                   "n_validation", "n_test")

#: Columns :func:`effective_epsilon_by_target` adds after ``note`` (issue 20), so that the
#: columns before them keep their places: the kind of inference (membership and attribute
#: results of one artefact are never mixed in one bound), ``n_attacks`` (m, the attacks
#: of the artefact and kind the Bonferroni correction runs over) and
#: ``attack_confidence`` (the level each attack was bounded at: 1 - (1 - confidence) / m).
ARTEFACT_COLUMNS = ("kind", "n_attacks", "attack_confidence")


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
    """Effective-epsilon bounds per audited artefact, for reports over many targets.

    Results are grouped by artefact (:func:`~privaudit.report.artefact_key`: dataset,
    generator, target) and kind of inference: the copier's and the DP generator's attacks
    on one record are two artefacts, and a membership test and an attribute test (two
    different neighbouring relations) are never bounded together. The ``m`` attacks of a
    group (``n_attacks``) are each bounded at ``1 - (1 - confidence) / m``
    (``attack_confidence``, Bonferroni) and the largest of their bounds is a valid bound
    at ``confidence`` for the artefact, by the union bound (Jagielski et al. for each
    bound). A group whose results audit the same records is one
    :class:`EffectiveEpsilonReport` (one row per level, naming the attack that reached
    the largest bound); otherwise each result is one row per level, still at the
    group's corrected level, so that the largest over the group's rows is the artefact's
    bound. With ``m = 1`` the row is the result's headline epsilon
    (:func:`headline_epsilon`).

    Results scored out of fold (``result.out_of_fold``, the cross-fitted ``trained-*``
    attacks) are left out of the candidates: a record's score there comes from a
    classifier trained on other audited records' membership, including records of the test
    part, so the attack is not fixed before the test part as Jagielski et al.'s bound
    requires. The ``note`` column names what was left out. A group whose bound cannot be
    computed (e.g. too few records) gets NaN rows with the reason in ``note``, so one
    small group does not stop a report.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``generator``, ``target``, ``candidates`` (the attacks
        compared), the columns of :meth:`EffectiveEpsilonReport.compute`, ``note``, then
        (issue 20, appended so that earlier columns keep their places) ``kind``,
        ``n_attacks`` and ``attack_confidence``.
    """
    import pandas as pd

    results = check_results(results, "effective_epsilon_by_target")
    groups: dict[tuple[str, str, str, str], list[AttackResult]] = {}
    for result in results:
        groups.setdefault((*artefact_key(result), result.kind), []).append(result)
    frames = [_group_frame(key, group, validation_split, tuple(confidence_levels),
                           random_state) for key, group in groups.items()]
    return pd.concat(frames, ignore_index=True)


def _group_frame(key: tuple[str, str, str, str], group: list[AttackResult],
                 validation_split: float, levels: tuple[float, ...],
                 random_state: Any) -> pd.DataFrame:
    """The rows of one artefact and kind: its Bonferroni-corrected bounds."""
    import pandas as pd

    members = [r for r in group if not r.out_of_fold]
    excluded = [r.attack or "attack" for r in group if r.out_of_fold]
    left_out = f"left out ({OUT_OF_FOLD_NOTE}): {', '.join(excluded)}" if excluded else ""
    m = max(len(members), 1)
    units: list[list[AttackResult]] = [members] if members else []
    if len(members) > 1:
        try:
            EffectiveEpsilonReport(members, validation_split, levels,
                                   random_state).aligned_scores()
        except ValueError:  # different records: each bounded alone, at the group's level
            units = [[r] for r in members]
    frames = []
    for unit in units or [[]]:
        frame, note = _unit_frame(unit, m, validation_split, levels, random_state)
        frame.insert(0, "candidates", ", ".join(r.attack or "attack" for r in unit))
        for column, value in zip(("target", "generator", "dataset"), key[2::-1],
                                 strict=True):
            frame.insert(0, column, value)
        frame["note"] = "; ".join(t for t in (note, left_out) if t)
        frame["kind"] = key[3]
        frame["n_attacks"] = len(members)
        frame["attack_confidence"] = [1.0 - (1.0 - c) / m for c in levels]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _unit_frame(unit: list[AttackResult], m: int, validation_split: float,
                levels: tuple[float, ...], random_state: Any) -> tuple[pd.DataFrame, str]:
    """The bounds of one unit (one report over aligned attacks, or one result), and why not."""
    import pandas as pd

    empty = pd.DataFrame([{"confidence": c} for c in levels], columns=list(EPSILON_COLUMNS))
    if not unit:
        return empty, ""
    if len(unit) > 1:  # the report corrects over its own m attacks
        try:
            return EffectiveEpsilonReport(unit, validation_split, levels,
                                          random_state).compute(), ""
        except ValueError as error:
            return empty, str(error)
    corrected = [1.0 - (1.0 - c) / m for c in levels]
    try:
        frame = EffectiveEpsilonReport(unit, validation_split, corrected,
                                       random_state).compute()
    except ValueError as error:
        return empty, str(error)
    frame["confidence"] = list(levels)
    return frame, ""


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


# ---------------------------------------------------------------- the report's section
class ArtefactEpsilon(NamedTuple):
    """The effective-epsilon bound of one audited artefact and kind of inference.

    The largest of the Bonferroni-corrected bounds of its attacks
    (:func:`effective_epsilon_by_target`, the rows of ``effective_epsilon.csv``), at the
    report's confidence, with what it rests on.

    Attributes
    ----------
    key : tuple of str
        ``(dataset, generator, target, kind)``.
    artefact : str
        :func:`~privaudit.report.artefact_name` of the artefact.
    kind : str
        ``"membership"`` or ``"attribute"``.
    indices : tuple of int
        Positions of the artefact's results (of this kind) in ``report.results``.
    confidence : float
        Family-wise confidence of :attr:`value`.
    value : float
        The bound (NaN when none could be computed).
    attack : str
        The attack whose bound it is ("" when none).
    n_attacks : int
        ``m``: the attacks compared (out-of-fold ones left out).
    attack_confidence : float
        Each attack's level, ``1 - (1 - confidence) / m``.
    n_validation, n_test : int
        Of that attack: records (runs, for a generator) choosing its threshold, and
        bounding its rates.
    note : str
        Why there is no bound, and what was left out.
    other_levels : tuple of (float, float)
        ``(confidence, bound)`` at the other confidence levels of the frame.
    """

    key: tuple[str, str, str, str]
    artefact: str
    kind: str
    indices: tuple[int, ...]
    confidence: float
    value: float
    attack: str
    n_attacks: int
    attack_confidence: float
    n_validation: int
    n_test: int
    note: str
    other_levels: tuple[tuple[float, float], ...]


def artefact_epsilons(report: Any) -> list[ArtefactEpsilon]:
    """Each artefact's (and kind's) bound at ``report.confidence``, in first-seen order.

    ``report`` is the page (:class:`~privaudit.report.HtmlReport`, read through
    ``results``, ``epsilon_frame``, ``confidence``, ``validation_split`` and
    ``random_state``): the numbers are those of ``effective_epsilon.csv``. When the
    report's confidence is not one of the frame's levels, the artefact's rows are computed
    at it the same way.
    """
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for i, result in enumerate(report.results):
        groups.setdefault((*artefact_key(result), result.kind), []).append(i)
    frame = report.epsilon_frame
    out = []
    for key, indices in groups.items():
        rows = frame[(frame["dataset"] == key[0]) & (frame["generator"] == key[1])
                     & (frame["target"] == key[2]) & (frame["kind"] == key[3])]
        if not np.isclose(rows["confidence"], report.confidence).any():
            rows = effective_epsilon_by_target(
                [report.results[i] for i in indices], confidence_levels=(report.confidence,),
                validation_split=report.validation_split, random_state=report.random_state)
        out.append(_artefact_epsilon(key, report.results[indices[0]], tuple(indices), rows,
                                     report.confidence))
    return out


def _artefact_epsilon(key: tuple[str, str, str, str], first: AttackResult,
                      indices: tuple[int, ...], rows: pd.DataFrame,
                      confidence: float) -> ArtefactEpsilon:
    """The largest bound among an artefact's rows at ``confidence`` (its units')."""
    at = rows[np.isclose(rows["confidence"], confidence)]
    bounded = at[at["epsilon_low"].notna()]
    best = (bounded.loc[bounded["epsilon_low"].idxmax()] if len(bounded) else at.iloc[0])
    others = []
    for level, group in rows.groupby("confidence", sort=True):
        if not np.isclose(level, confidence) and group["epsilon_low"].notna().any():
            others.append((float(level), float(group["epsilon_low"].max())))
    notes = [n for n in dict.fromkeys(at["note"].tolist()) if isinstance(n, str) and n]
    return ArtefactEpsilon(
        key=key, artefact=artefact_name(first), kind=key[3], indices=indices,
        confidence=float(confidence), value=float(best["epsilon_low"]),
        attack=best["attack"] if isinstance(best["attack"], str) else "",
        n_attacks=int(best["n_attacks"]), attack_confidence=float(best["attack_confidence"]),
        n_validation=_count(best["n_validation"]), n_test=_count(best["n_test"]),
        note="; ".join(notes), other_levels=tuple(others))


def _count(value: Any) -> int:
    """A count stored as a float in the frame (NaN: 0)."""
    return 0 if value is None or (isinstance(value, float) and math.isnan(value)) else int(
        value)


def _percent(level: float) -> str:
    """``0.9875`` -> ``"98.75%"``, ``0.95`` -> ``"95%"``: a level as people write it."""
    return f"{level * 100:.4g}%"


def unit_of(result: AttackResult) -> str:
    """What a result's records are: ``"runs"`` of a generator audit, else ``"records"``."""
    return "runs" if result.audit.kind == "generator" else "records"


def epsilon_statement(entry: ArtefactEpsilon, unit: str = "records") -> str:
    """The artefact's bound in words: value, confidence, correction, attack, runs.

    E.g. "ε ≥ 2.42 with 95% confidence: the largest of 4 attacks' bounds, each at
    98.75% (Bonferroni); closest-distance gives it, its threshold chosen on 20 of 200
    runs and tested on the other 180."
    """
    level = _percent(entry.confidence)
    if entry.n_attacks == 0 or math.isnan(entry.value):
        return f"No bound: {entry.note or 'not computed'}."
    n = entry.n_validation + entry.n_test
    split = (f"its threshold chosen on {entry.n_validation:,} of {n:,} {unit} and tested on "
             f"the other {entry.n_test:,}")
    if entry.value <= 0:
        who = (f"{entry.attack}, the only attack, does not" if entry.n_attacks == 1 else
               f"none of {entry.n_attacks} attacks, each at "
               f"{_percent(entry.attack_confidence)} (Bonferroni),")
        return (f"ε ≥ 0 with {level} confidence: {who} bound ε above 0 on these {unit}. "
                "This rules out no ε; it does not prove a small one.")
    if entry.n_attacks == 1:
        family = f"{entry.attack}'s bound, the only attack (no correction)"
    else:
        family = (f"the largest of {entry.n_attacks} attacks' bounds, each at "
                  f"{_percent(entry.attack_confidence)} (Bonferroni); {entry.attack} gives "
                  "it")
    return (f"ε ≥ {fmt(entry.value, EPSILON_DIGITS)} with {level} confidence: {family}, "
            f"{split}.")


def split_sizes(result: AttackResult, validation_split: float) -> tuple[int, int]:
    """(records choosing the threshold, records bounding the rates) of one result.

    The stratified split of :func:`privaudit.metrics.effective_epsilon_lower_bound`: a
    ``validation_split`` share of each class, rounded half up. Counts only, no draw.
    """
    n_val = sum(int(np.floor(validation_split * n + 0.5))
                for n in (result.n_members, result.n_non_members))
    return n_val, result.n_records - n_val


def _attack_rows(report: Any, entry: ArtefactEpsilon) -> list[dict[str, Any]]:
    """One row per attack: its headline ε (as the metrics table), records, the bound's."""
    rows = []
    for i in entry.indices:
        result, headline = report.results[i], report.headline_epsilons[i]
        n_val, n_test = split_sizes(result, report.validation_split)
        value = headline["value"]
        rows.append({
            "attack": attack_label(result), "value": fmt(value, EPSILON_DIGITS),
            "reason": "" if not math.isnan(value) else (
                "not valid: scored out of fold" if result.out_of_fold else "not computed"),
            "title": headline["note"], "records": f"{n_val:,} / {n_test:,}",
            "gives": entry.value > 0 and entry.attack == (result.attack or "attack")
            and not result.out_of_fold,
        })
    return rows


def epsilon_section_context(report: Any) -> dict[str, Any]:
    """The variables of the effective-ε section (``templates/sections/epsilon.html``).

    One block per artefact and kind (:func:`artefact_epsilons`): its bound in words
    (:func:`epsilon_statement`), the bound at the other confidence levels, and one row per
    attack with the same ε as the metrics table and ``results.json``
    (``report.headline_epsilons``: that attack alone at the report's confidence), so that
    a result has one ε everywhere (issue 20).
    """
    blocks = []
    for entry in artefact_epsilons(report):
        first = report.results[entry.indices[0]]
        blocks.append({
            "artefact": entry.artefact,
            "kind": "attribute inference" if entry.kind == "attribute" else "",
            "statement": epsilon_statement(entry, unit_of(first)),
            "other_levels": " · ".join(f"{_percent(c)}: ε ≥ {fmt(v, EPSILON_DIGITS)}"
                                       for c, v in entry.other_levels),
            "rows": _attack_rows(report, entry),
        })
    return {"epsilon_blocks": blocks, "epsilon_confidence": _percent(report.confidence)}
