"""Attribute inference against a model: guesses on members and non-members, and advantages.

An :class:`AttributeResult` keeps, for every audited record, the candidate value an
attack guessed for its sensitive attribute, the true value, whether the record trained the
model, and the guesses of model-free attackers on the same records. Its numbers are those
of Yeom et al. (2018): accuracy on members and on non-members, the attribute advantage of
their Definition 5 (the difference of the two) and of their Definition 6 (accuracy on
members against the best model-free simulator's on non-members), with Newcombe intervals.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

import privaudit.metrics as pm
from privaudit._validation import check_fraction, param_error
from privaudit.results._attack_result import AttackResult, _check_record_ids
from privaudit.results._audit_info import AuditInfo, notebook_html
from privaudit.results._family import ResultFamily, details_from
from privaudit.results._io import (
    ResultFileError,
    dump_json,
    read_arrays,
    read_strict_json,
    save_arrays,
    to_jsonable,
)

__all__ = ["ATTRIBUTE_FILE", "AttributeResult"]

#: Name of the file an :class:`AttributeResult` is saved to, inside its folder.
ATTRIBUTE_FILE = "attribute.json"
_ARRAYS_FILE = "attribute.npz"
_FORMAT = "privaudit.attribute/1"
_FUNC = "AttributeResult"
_TEXTS = ("attack", "target", "dataset", "sensitive_attribute")
#: The arrays of integer ids, and of string ids: their code points end to end, and the
#: number of code points of each (npz files read without pickle hold no Python strings).
_INT_IDS = "record_ids"
_STR_IDS = ("record_ids.codepoints", "record_ids.lengths")


def _indices(values: Any, param: str, n_candidates: int, n: int | None,
             abstain: bool = False) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise param_error(param, _FUNC, "a 1-d array of candidate indices", values,
                          error=TypeError)
    if n is not None and arr.shape[0] != n:
        raise param_error(param, _FUNC, f"length {n} (one per record)", f"<length {len(arr)}>")
    low = -1 if abstain else 0
    if arr.size and (arr.min() < low or arr.max() >= n_candidates):
        raise param_error(param, _FUNC, f"indices in [{low}, {n_candidates})",
                          f"<values {int(arr.min())}..{int(arr.max())}>")
    return arr.astype(np.int64)


def _record_ids(values: Any, n: int) -> NDArray[Any]:
    """One unique id per record, int64 or ``str`` (default ``0 .. n - 1``)."""
    if values is not None:
        shape = np.shape(values)
        if len(shape) != 1 or shape[0] != n:
            raise param_error("record_ids", _FUNC, f"a 1-d array of length {n} (one id per "
                              "record, as 'members')", f"<shape {shape}>")
    return _check_record_ids(values, n, _FUNC)


def _ids_to_arrays(ids: NDArray[Any]) -> dict[str, NDArray[np.int64]]:
    """The arrays :meth:`AttributeResult.save` writes for ``ids`` (int64 or strings)."""
    if ids.dtype.kind == "i":
        return {_INT_IDS: ids}
    text = "".join(ids.tolist()).encode("utf-32-le", "surrogatepass")
    return {_STR_IDS[0]: np.frombuffer(text, dtype="<u4").astype(np.int64),
            _STR_IDS[1]: np.array([len(s) for s in ids.tolist()], dtype=np.int64)}


def _ids_from_arrays(arrays: dict[str, NDArray[Any]]) -> NDArray[Any] | None:
    """The ids :func:`_ids_to_arrays` wrote (popped from ``arrays``); None if none saved."""
    if _INT_IDS in arrays:
        return arrays.pop(_INT_IDS)
    if not any(name in arrays for name in _STR_IDS):
        return None  # written before results kept ids: positions
    codes, lengths = (arrays.pop(name, np.zeros(0, np.int64)) for name in _STR_IDS)
    if (codes.ndim != 1 or lengths.ndim != 1 or (lengths < 0).any()
            or int(lengths.sum()) != codes.size
            or (codes.size and not 0 <= codes.min() <= codes.max() <= 0x10FFFF)):
        raise ValueError("its string record ids are damaged (code points and lengths "
                         "do not match)")
    text = codes.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")
    ends = np.cumsum(lengths).tolist()
    out = np.empty(lengths.size, dtype=object)
    out[:] = [text[end - k:end] for end, k in zip(ends, lengths.tolist(), strict=True)]
    return out


#: The typed details of an attribute result, by the ``extra`` key older layouts used.
ATTRIBUTE_DETAILS = {
    "study": "study", "train_accuracy": "train_accuracy", "test_accuracy": "test_accuracy",
    "train_r2": "train_r2", "test_r2": "test_r2", "theory": "theory",
}


@dataclass(eq=False)
class AttributeResult(ResultFamily):
    """Guesses of an attribute-inference attack on members and non-members of a model.

    Parameters
    ----------
    candidates : sequence
        The values the sensitive attribute may take (numbers, strings, or tuples when the
        attribute spans several columns, e.g. a one-hot group), in a fixed order.
    guesses : array of int, shape (n_records,)
        Index in ``candidates`` of each record's guess; -1 where the attack made none
        (Yeom's reductions may abstain), counted as a wrong guess.
    truth : array of int, shape (n_records,), optional
        Index in ``candidates`` of each record's true value (exact attribute inference).
    truth_values : array of float, shape (n_records,), optional
        The true values of a continuous attribute (approximate attribute inference: a
        guess is right when within ``alpha``); exactly one of ``truth`` and
        ``truth_values`` is given.
    members : array of {0, 1}, shape (n_records,)
        1 = the record trained the model (Yeom et al.'s b = 0), 0 = drawn from the same
        distribution but not trained on (b = 1).
    posteriors : array of float, shape (n_records, n_candidates), optional
        The attack's belief in each candidate (rows sum to 1), for ROC curves per value.
    model_free : dict of str to array of int, optional
        Guesses of attackers without model access on the same records (``"prior"``: the
        most common value; ``"known-features"``: a classifier on what the attacker knows),
        fitted on data the attack never saw: the simulators of Definition 6.
    alpha : float, optional
        Tolerance of approximate attribute inference (with ``truth_values``).
    attack, target, dataset, sensitive_attribute : str
        Provenance.
    confidence : float
        Level of every interval.
    parameters, extra : dict
        The attack's parameters and anything else to keep (JSON types); keys of the
        typed details below given in ``extra`` (the older way) move to their attributes.
    audit : AuditInfo
        What the audit stamped on the result.
    record_ids : array of int or str, shape (n_records,), optional
        The records' own ids (unique), in the order of every per-record array; default
        their positions ``0 .. n_records - 1``. Carried into :meth:`to_attack_results`
        and :meth:`to_membership_result` (the ``record_id`` column of their scores).
    study : str, optional
        The study the result belongs to (``"overfitting"``), read by the study section.
    train_accuracy, test_accuracy, train_r2, test_r2 : float, optional
        The target's accuracy or R² on its training and test records.
    theory : dict, optional
        Yeom et al.'s Theorem 5 prediction for this attack (``predicted_advantage`` and
        the spreads it rests on).

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M. and Jha, S. "Privacy Risk in Machine
       Learning: Analyzing the Connection to Overfitting." CSF 2018 (Experiment 2,
       Definitions 5 and 6).
    .. [2] Zhao, B. Z. H., Agrawal, A., Coburn, C., et al. "On the (In)Feasibility of
       Attribute Inference Attacks on Machine Learning Models." EuroS&P 2021 (approximate
       attribute inference).
    .. [3] Newcombe, R. G. "Interval estimation for the difference between independent
       proportions." Statistics in Medicine 17 (1998).
    """

    candidates: list[Any]
    guesses: NDArray[np.int64]
    members: NDArray[np.int8]
    truth: NDArray[np.int64] | None = None
    truth_values: NDArray[np.float64] | None = None
    posteriors: NDArray[np.float64] | None = None
    model_free: dict[str, NDArray[np.int64]] = field(default_factory=dict)
    alpha: float | None = None
    attack: str = ""
    target: str = ""
    dataset: str = ""
    sensitive_attribute: str = ""
    confidence: float = 0.95
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    audit: AuditInfo = field(default_factory=AuditInfo)
    record_ids: NDArray[Any] | None = None
    study: str | None = None
    train_accuracy: float | None = None
    test_accuracy: float | None = None
    train_r2: float | None = None
    test_r2: float | None = None
    theory: dict[str, Any] | None = None

    RESULT_TYPE: ClassVar[str] = "attribute"
    DETAIL_FIELDS: ClassVar[dict[str, str]] = ATTRIBUTE_DETAILS

    def __post_init__(self) -> None:
        self.candidates = [tuple(c) if isinstance(c, list) else c for c in self.candidates]
        m = len(self.candidates)
        if m < 2:
            raise param_error("candidates", _FUNC, "at least two values", self.candidates)
        self.members = np.asarray(self.members)
        if self.members.ndim != 1 or not np.isin(self.members, (0, 1)).all():
            raise param_error("members", _FUNC, "a 1-d array of 0/1", "<other values>")
        self.members = self.members.astype(np.int8)
        n = self.members.shape[0]
        self.record_ids = _record_ids(self.record_ids, n)
        self.guesses = _indices(self.guesses, "guesses", m, n, abstain=True)
        self._check_truth(m, n)
        self.model_free = {str(k): _indices(v, f"model_free[{k!r}]", m, n, abstain=True)
                           for k, v in self.model_free.items()}
        if self.posteriors is not None:
            self.posteriors = np.asarray(self.posteriors, dtype=np.float64)
            if self.posteriors.shape != (n, m) or not np.isfinite(self.posteriors).all():
                raise param_error("posteriors", _FUNC, f"finite values of shape ({n}, {m})",
                                  f"<shape {self.posteriors.shape}>")
        self.confidence = check_fraction(self.confidence, param="confidence", func=_FUNC)
        for name in _TEXTS:
            if not isinstance(getattr(self, name), str):
                raise param_error(name, _FUNC, "a string", getattr(self, name),
                                  error=TypeError)
        self._adopt_details()

    def _check_truth(self, m: int, n: int) -> None:
        if (self.truth is None) == (self.truth_values is None):
            raise param_error("truth", _FUNC, "exactly one of 'truth' (candidate indices) "
                              "and 'truth_values' (a continuous attribute)", None)
        if self.truth is not None:
            self.truth = _indices(self.truth, "truth", m, n)
            if self.alpha is not None:
                raise param_error("alpha", _FUNC, "None with exact 'truth'", self.alpha)
            return
        self.truth_values = np.asarray(self.truth_values, dtype=np.float64)
        if self.truth_values.shape != (n,):
            raise param_error("truth_values", _FUNC, f"length {n}", "<other shape>")
        if self.alpha is None or not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise param_error("alpha", _FUNC, "a finite tolerance >= 0 with 'truth_values'",
                              self.alpha)
        if not all(isinstance(c, (int, float, np.number)) for c in self.candidates):
            raise param_error("candidates", _FUNC, "numbers with 'truth_values'",
                              self.candidates[:5])

    # ------------------------------------------------------------------ counts
    @property
    def generator(self) -> str:
        """Always empty: a model, not a generator, is attacked (reports group by it)."""
        return ""

    @property
    def kind(self) -> str:
        """Always ``"attribute"``: what the result infers (the family's ``kind``)."""
        return "attribute"

    @property
    def name(self) -> str:
        """``"target / attack"``."""
        return " / ".join(p for p in (self.target, self.attack) if p) or "attribute"

    @property
    def n_members(self) -> int:
        return int(self.members.sum())

    @property
    def n_non_members(self) -> int:
        return int(self.members.size - self.members.sum())

    def is_correct(self, guesses: NDArray[np.int64] | None = None) -> NDArray[np.bool_]:
        """Whether each guess (the attack's, or ``guesses``) is right (within ``alpha``)."""
        g = self.guesses if guesses is None else guesses
        if self.truth is not None:
            return (g == self.truth) & (g >= 0)
        values = np.asarray(self.candidates, dtype=np.float64)[np.maximum(g, 0)]
        return (np.abs(values - self.truth_values) <= self.alpha + 1e-12) & (g >= 0)

    def _counts(self, guesses: NDArray[np.int64] | None, member: int) -> tuple[int, int]:
        group = self.members == member
        return int(self.is_correct(guesses)[group].sum()), int(group.sum())

    def _accuracy(self, guesses: NDArray[np.int64] | None, member: int) -> pm.Estimate:
        k, n = self._counts(guesses, member)
        if n == 0:
            return pm.Estimate(math.nan, math.nan, math.nan)
        return pm.wilson_interval(k, n, self.confidence)

    # ------------------------------------------------------------------ numbers
    def accuracy(self, members: bool = True) -> pm.Estimate:
        """Share of right guesses on members (or non-members), with its Wilson interval."""
        return self._accuracy(None, int(members))

    def model_free_accuracy(self, name: str, members: bool = True) -> pm.Estimate:
        """Accuracy of the model-free guess ``name`` on members (or non-members)."""
        if name not in self.model_free:
            raise param_error("name", f"{_FUNC}.model_free_accuracy",
                              f"one of {sorted(self.model_free)}", name)
        return self._accuracy(self.model_free[name], int(members))

    def _difference(self, first: tuple[int, int], second: tuple[int, int]) -> pm.Estimate:
        if first[1] == 0 or second[1] == 0:
            return pm.Estimate(math.nan, math.nan, math.nan)
        return pm.newcombe_interval(*first, *second, confidence=self.confidence)

    def advantage(self) -> pm.Estimate:
        """Yeom et al.'s Definition 5: accuracy on members minus accuracy on non-members.

        Positive when the model tells more about its training records' attribute than
        about anyone else's; with Newcombe's interval for a difference of proportions.
        """
        return self._difference(self._counts(None, 1), self._counts(None, 0))

    @property
    def best_model_free(self) -> str | None:
        """The model-free guess most accurate on non-members (Definition 6's simulator)."""
        if not self.model_free:
            return None
        return max(sorted(self.model_free),
                   key=lambda k: self._counts(self.model_free[k], 0)[0])

    def simulator_advantage(self, name: str | None = None) -> pm.Estimate:
        """Yeom et al.'s Definition 6: the attack on members against a simulator.

        Accuracy of the attack on members minus that of the model-free guess ``name``
        (default: :attr:`best_model_free`) on non-members. NaN without model-free guesses.
        """
        name = name or self.best_model_free
        if name is None:
            return pm.Estimate(math.nan, math.nan, math.nan)
        self.model_free_accuracy(name)  # checks the name
        return self._difference(self._counts(None, 1),
                                self._counts(self.model_free[name], 0))

    def per_value(self) -> list[dict[str, Any]]:
        """Per true candidate value: how many members and non-members, and each's accuracy."""
        if self.truth is None:
            truth = np.abs(np.asarray(self.candidates, dtype=np.float64)[None, :]
                           - self.truth_values[:, None]).argmin(1)
        else:
            truth = self.truth
        rows = []
        for j, value in enumerate(self.candidates):
            row: dict[str, Any] = {"value": value}
            for label, member in (("members", 1), ("non_members", 0)):
                group = (truth == j) & (self.members == member)
                n = int(group.sum())
                k = int(self.is_correct()[group].sum())
                row[f"n_{label}"] = n
                row[f"accuracy_{label}"] = (pm.wilson_interval(k, n, self.confidence)
                                            if n else pm.Estimate(math.nan, math.nan,
                                                                  math.nan))
            rows.append(row)
        return rows

    def metrics(self) -> dict[str, Any]:
        """Every number of the result, intervals as ``Estimate`` tuples."""
        out: dict[str, Any] = {
            "n_members": self.n_members, "n_non_members": self.n_non_members,
            "accuracy_members": self.accuracy(True),
            "accuracy_non_members": self.accuracy(False),
            "advantage": self.advantage(),
            "simulator": self.best_model_free,
            "simulator_advantage": self.simulator_advantage()}
        for name in sorted(self.model_free):
            out[f"model_free_accuracy_members[{name}]"] = self.model_free_accuracy(name)
            out[f"model_free_accuracy_non_members[{name}]"] = self.model_free_accuracy(
                name, members=False)
        return out

    def to_attack_results(self) -> list[AttackResult]:
        """One-vs-rest :class:`AttackResult` per candidate value, on the members.

        ``labels`` 1 = the member has that value, ``scores`` = the attack's posterior for
        it: the form TAPAS's attribute-inference report and the ROC report read. For two
        candidates, only the second value's (the other is its mirror image). Needs
        ``posteriors`` and exact ``truth``.
        """
        if self.posteriors is None or self.truth is None:
            raise ValueError(f"{self.name}: one-vs-rest results need the posteriors and "
                             "an exact attribute (truth), not a continuous one.")
        keep = self.members == 1
        values = range(1, 2) if len(self.candidates) == 2 else range(len(self.candidates))
        out = []
        for j in values:
            labels = (self.truth[keep] == j).astype(np.int8)
            if labels.min() == labels.max():
                continue  # no member has it, or all have it: no ROC
            out.append(AttackResult(
                labels=labels, scores=self.posteriors[keep, j],
                record_ids=self.record_ids[keep], attack=self.attack,
                target=self.target, dataset=self.dataset, kind="attribute",
                parameters={**self.parameters, "sensitive_attribute":
                            self.sensitive_attribute, "value": to_jsonable(
                                self.candidates[j], where="candidate")}))
        return out

    def to_membership_result(self) -> AttackResult:
        """Yeom et al.'s Adversary 5: "member" exactly when the attribute guess is right.

        ``labels`` are the records' membership; ``predictions`` whether the guess is
        right, so that the membership advantage of these hard guesses (TPR - FPR) equals
        :meth:`advantage` (Theorem 6); ``scores`` are the attack's belief in the true
        value when it has posteriors (a ranking for ROC curves), else the same 0/1.
        """
        correct = self.is_correct()
        if self.posteriors is not None and self.truth is not None:
            scores = self.posteriors[np.arange(self.truth.size), self.truth]
        else:
            scores = correct.astype(np.float64)
        return AttackResult(
            labels=self.members, scores=scores, predictions=correct.astype(np.int8),
            record_ids=self.record_ids, attack=f"{self.attack}->membership",
            target=self.target, dataset=self.dataset,
            parameters={**self.parameters, "reduction": "Yeom et al. Adversary 5",
                        "sensitive_attribute": self.sensitive_attribute})

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, the metrics with their intervals, ROC curves."""
        return notebook_html(self)

    # ------------------------------------------------------------------ disk
    def to_dict(self) -> dict[str, Any]:
        """Provenance, candidates and metrics as a dict (floats may be non-finite)."""
        metrics = {k: (v._asdict() if isinstance(v, pm.Estimate) else v)
                   for k, v in self.metrics().items()}
        doc: dict[str, Any] = {"format": _FORMAT}
        doc.update({name: getattr(self, name) for name in _TEXTS})
        doc.update(candidates=to_jsonable(list(self.candidates), where="candidates"),
                   alpha=self.alpha, confidence=self.confidence,
                   parameters=self.parameters, extra=self.free_extra(),
                   details=self.details(), audit=self.audit.to_dict(), metrics=metrics,
                   model_free=sorted(self.model_free))
        return doc

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays: dict[str, np.ndarray] = {"guesses": self.guesses, "members": self.members}
        for name in ("truth", "truth_values", "posteriors"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        arrays.update({f"model_free.{k}": v for k, v in self.model_free.items()})
        arrays.update(_ids_to_arrays(self.record_ids))
        return arrays

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``attribute.npz``, then ``attribute.json``, atomically; return the JSON."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        doc = self.to_dict()
        doc["arrays"] = save_arrays(directory, _ARRAYS_FILE, self._arrays())
        return dump_json(doc, directory / ATTRIBUTE_FILE, where=_FUNC, keep_non_finite=True,
                         seal=[_ARRAYS_FILE])

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, require_digest: bool = False
             ) -> AttributeResult:
        """Read what :meth:`save` wrote (its folder or its ``attribute.json``).

        Raises
        ------
        FileNotFoundError
            If there is no ``attribute.json`` at ``path``.
        ResultFileError
            If a file is damaged, edited (an array's digest differs) or malformed.
        """
        path = Path(path)
        json_path = path if path.is_file() or path.is_symlink() else path / ATTRIBUTE_FILE
        if not os.path.lexists(json_path):
            raise FileNotFoundError(f"No {ATTRIBUTE_FILE} in {path}: is it a folder written "
                                    "by AttributeResult.save?")
        doc, check = read_strict_json(json_path, _FORMAT, "attribute result",
                                      require_digest=require_digest)
        arrays = read_arrays(json_path, doc, _ARRAYS_FILE, check)
        check.finish()
        kwargs = {k: doc[k] for k in (*_TEXTS, "candidates", "alpha", "confidence",
                                      "parameters") if k in doc}
        kwargs["extra"] = details_from(doc)
        model_free = {k.removeprefix("model_free."): v for k, v in arrays.items()
                      if k.startswith("model_free.")}
        try:
            record_ids = _ids_from_arrays(arrays)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return cls(**kwargs, **{k: v for k, v in arrays.items()
                                        if not k.startswith("model_free.")},
                           model_free=model_free, record_ids=record_ids,
                           audit=AuditInfo.from_dict(doc.get("audit") or {}))
        except (TypeError, ValueError) as exc:
            raise ResultFileError(f"{json_path} holds invalid data: {exc}") from None
