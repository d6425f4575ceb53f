"""Count-based risks: attack, baseline and control success rates (anonymeter style)."""

from __future__ import annotations

import math
import numbers
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import privaudit.metrics as pm
from privaudit._validation import check_fraction, param_error
from privaudit.exceptions import BaselineWarning
from privaudit.results._audit_info import AuditInfo, notebook_html
from privaudit.results._family import ResultFamily
from privaudit.results._io import ResultFileError, dump_json, read_strict_json

__all__ = ["RISK_FILE", "RiskResult"]

#: Name of the file a :class:`RiskResult` is saved to, inside its folder.
RISK_FILE = "risk.json"
_FORMAT = "privaudit.risk/1"
_COUNTS = ("n_attacks", "n_success", "n_baseline", "n_baseline_attacks", "n_control",
           "n_control_attacks")
_TEXTS = ("attack", "target", "dataset", "generator", "kind")


def _count(value: Any, param: str, *, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise param_error(param, "RiskResult", "a non-negative integer", value, error=TypeError)
    if value < 0:
        raise param_error(param, "RiskResult", "a non-negative integer", value)
    return int(value)


@dataclass(frozen=True)
class RiskResult(ResultFamily):
    """Success counts of an attack, its baseline and its control, with rates and risk.

    The result of a count-based attack as anonymeter evaluates synthetic data: ``n_attacks``
    guesses (singling out, linkability, inference) made with the synthetic data, of which
    ``n_success`` were right on the training records; the same guesses by a *baseline*
    attacker who does not use the data (random guessing), and against *control* records
    that were not used for training. Rates carry Wilson intervals
    (:func:`privaudit.metrics.wilson_interval`); the risk is anonymeter's residual risk

    .. math:: R = (r_{attack} - r_{control}) / (1 - r_{control}),

    the share of the control attack's failures that training data turned into successes.
    As anonymeter does, ``R`` is computed from the Wilson centres of the two rates, its
    half-width propagated from theirs by first-order error propagation
    (``sqrt((e_a / (1 - r_c))**2 + (e_c * (r_a - 1) / (1 - r_c)**2)**2)``), and the value
    and interval clipped to [0, 1].

    Parameters
    ----------
    n_attacks, n_success : int
        Attacks made and successes of the attack on the training records.
    n_baseline : int
        Successes of the baseline attacker.
    n_control : int or None
        Successes of the attack on the control records (None: no control set; the risk
        is then the attack's success rate, as in anonymeter).
    n_baseline_attacks, n_control_attacks : int or None
        Attacks made by the baseline and on the control records; ``n_attacks`` if None.
    attack, target, dataset, generator, kind : str
        Provenance, as in :class:`~privaudit.results.AttackResult` (``kind`` e.g.
        ``"singling_out"``, ``"linkability"``, ``"inference"``).
    confidence : float
        Level of every interval.
    parameters, extra : dict
        The attack's parameters and anything else to keep (strict-JSON types).
    audit : AuditInfo
        What the audit that ran the attack stamps on it (run key, kind, findings); the
        object is mutable even though the result is not.

    Warns
    -----
    BaselineWarning
        When the attack's success rate is no higher than the baseline's (anonymeter's
        sanity check): the analysis cannot be trusted. :attr:`better_than_baseline` says so.

    References
    ----------
    .. [1] Giomi, M., Boenisch, F., Wehmeyer, C. and Tasnádi, B. "A Unified Framework for
       Quantifying Privacy Risk in Synthetic Data." PETS 2023 (anonymeter).
    .. [2] Wilson, E. B. "Probable inference, the law of succession, and statistical
       inference." JASA 22 (1927).
    """

    n_attacks: int
    n_success: int
    n_baseline: int
    n_control: int | None = None
    n_baseline_attacks: int | None = None
    n_control_attacks: int | None = None
    attack: str = ""
    target: str = ""
    dataset: str = ""
    generator: str = ""
    kind: str = "risk"
    confidence: float = 0.95
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    audit: AuditInfo = field(default_factory=AuditInfo)

    RESULT_TYPE: ClassVar[str] = "risk"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in _COUNTS:
            set_(self, name, _count(getattr(self, name), name,
                                    allow_none=name not in ("n_attacks", "n_success",
                                                            "n_baseline")))
        if self.n_baseline_attacks is None:
            set_(self, "n_baseline_attacks", self.n_attacks)
        if self.n_control is not None and self.n_control_attacks is None:
            set_(self, "n_control_attacks", self.n_attacks)
        for k, n, names in self._pairs():
            if n == 0:
                raise param_error(names[1], "RiskResult", "a positive integer", n)
            if k > n:
                raise param_error(names[0], "RiskResult", f"at most {names[1]} = {n}", k)
        for name in _TEXTS:
            if not isinstance(getattr(self, name), str):
                raise param_error(name, "RiskResult", "a string", getattr(self, name),
                                  error=TypeError)
        set_(self, "confidence", check_fraction(self.confidence, param="confidence",
                                                func="RiskResult"))
        if not isinstance(self.audit, AuditInfo):
            raise param_error("audit", "RiskResult", "an AuditInfo", self.audit,
                              error=TypeError)
        self._adopt_details()
        if not self.better_than_baseline:
            warnings.warn(
                f"{self.name}: the attack succeeds no more often than its baseline "
                f"({self.attack_rate.value:.3g} vs {self.baseline_rate.value:.3g}): the "
                "risk estimate cannot be trusted.", BaselineWarning, stacklevel=3)

    def _pairs(self) -> list[tuple[int, int, tuple[str, str]]]:
        pairs = [(self.n_success, self.n_attacks, ("n_success", "n_attacks")),
                 (self.n_baseline, self.n_baseline_attacks, ("n_baseline",
                                                             "n_baseline_attacks"))]
        if self.n_control is not None:
            pairs.append((self.n_control, self.n_control_attacks,
                          ("n_control", "n_control_attacks")))
        return pairs  # type: ignore[return-value]

    # ------------------------------------------------------------------ numbers
    @property
    def name(self) -> str:
        """``"target / attack"``, as for an AttackResult."""
        return " / ".join(p for p in (self.target, self.attack) if p) or "risk"

    def _rate(self, k: int, n: int) -> pm.Estimate:
        interval = pm.wilson_interval(k, n, self.confidence)
        return pm.Estimate(k / n, interval.low, interval.high)

    @property
    def attack_rate(self) -> pm.Estimate:
        """Success rate of the attack, ``n_success / n_attacks``, with its Wilson interval."""
        return self._rate(self.n_success, self.n_attacks)

    @property
    def baseline_rate(self) -> pm.Estimate:
        """Success rate of the baseline attacker, with its Wilson interval."""
        return self._rate(self.n_baseline, self.n_baseline_attacks)  # type: ignore[arg-type]

    @property
    def control_rate(self) -> pm.Estimate | None:
        """Success rate on the control records with its Wilson interval (None: no control)."""
        if self.n_control is None:
            return None
        return self._rate(self.n_control, self.n_control_attacks)  # type: ignore[arg-type]

    @property
    def better_than_baseline(self) -> bool:
        """Whether the attack's success rate is above the baseline's."""
        return self.attack_rate.value > self.baseline_rate.value

    def risk(self) -> pm.Estimate:
        """Anonymeter's risk: the residual risk over the control, clipped to [0, 1].

        Without a control set, the attack's success rate (Wilson centre and half-width,
        clipped), as anonymeter does. NaN when every control attack succeeds (nothing is
        left to measure).
        """
        attack = _centre_and_error(self.attack_rate)
        if self.control_rate is None:
            value, error = attack
        else:
            (r_a, e_a), (r_c, e_c) = attack, _centre_and_error(self.control_rate)
            if self.n_control == self.n_control_attacks:
                return pm.Estimate(math.nan, math.nan, math.nan)
            value = (r_a - r_c) / (1.0 - r_c)
            error = math.hypot(e_a / (1.0 - r_c), e_c * (r_a - 1.0) / (1.0 - r_c) ** 2)
        return pm.Estimate(_clip(value), _clip(value - error), _clip(value + error))

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, the metrics with their intervals, ROC curves."""
        return notebook_html(self)

    # ------------------------------------------------------------------ disk
    def to_dict(self) -> dict[str, Any]:
        """Counts, provenance, rates and risk as a dict (floats may be non-finite)."""
        def est(e: pm.Estimate | None) -> dict[str, float] | None:
            return None if e is None else e._asdict()

        doc: dict[str, Any] = {"format": _FORMAT}
        doc.update({name: getattr(self, name) for name in (*_TEXTS, *_COUNTS, "confidence")})
        doc.update(parameters=self.parameters, extra=self.free_extra(),
                   audit=self.audit.to_dict())
        doc["rates"] = {"attack": est(self.attack_rate), "baseline": est(self.baseline_rate),
                        "control": est(self.control_rate)}
        doc["risk"] = est(self.risk())
        doc["better_than_baseline"] = self.better_than_baseline
        return doc

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``risk.json`` (strict JSON, atomically) into ``directory``; return its path."""
        return dump_json(self.to_dict(), Path(directory) / RISK_FILE, where="RiskResult",
                         keep_non_finite=True, seal=[])

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, require_digest: bool = False
             ) -> RiskResult:
        """Read a result written by :meth:`save` (its folder or its ``risk.json``).

        Only the counts, provenance, parameters and extra are read; rates and risk are
        recomputed from the counts.

        Raises
        ------
        FileNotFoundError
            If there is no ``risk.json`` at ``path``.
        ResultFileError
            If the file is not strict JSON or its fields are missing or of the wrong type,
            or it was modified after it was written (its digest differs).
        """
        path = Path(path)
        json_path = path if path.is_file() or path.is_symlink() else path / RISK_FILE
        if not os.path.lexists(json_path):
            raise FileNotFoundError(f"No {RISK_FILE} in {path}: is it a folder written by "
                                    "RiskResult.save?")
        doc, check = read_strict_json(json_path, _FORMAT, "risk result",
                                      require_digest=require_digest)
        kwargs = {k: doc.get(k) for k in (*_TEXTS, *_COUNTS, "confidence", "parameters",
                                          "extra") if k in doc}
        for key in ("parameters", "extra"):
            if not isinstance(kwargs.get(key, {}), dict):
                raise ResultFileError(f"{json_path} is damaged: the key {key!r} must be an "
                                      "object.")
        check.finish()
        try:
            audit = AuditInfo.from_dict(doc.get("audit") or {})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BaselineWarning)
                return cls(**kwargs, audit=audit)
        except (TypeError, ValueError) as exc:
            raise ResultFileError(f"{json_path} holds invalid data: {exc}") from None


def _centre_and_error(rate: pm.Estimate) -> tuple[float, float]:
    """Wilson centre and half-width of an interval (anonymeter's rate and error)."""
    return (rate.low + rate.high) / 2.0, (rate.high - rate.low) / 2.0


def _clip(value: float) -> float:
    return min(max(value, 0.0), 1.0)
