"""What a budget reads on a result: the metric at a basis, or why it cannot be measured.

One reader per metric of :data:`~privaudit.policy.METRICS`. Each reads the result's own
API, the numbers the report shows at its settings (``n_bootstrap``, ``random_state``, 95%
intervals): the lower end of the 95% interval at basis ``lower``, the point estimate at
basis ``point``. A reading without a number (no interval, a NaN metric, a TPR at an FPR
finer than the non-members resolve) carries the reason instead: the check is then
*unmeasurable*, never silently passed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from privaudit.policy._schema import reading_type

__all__ = ["CONFIDENCE", "Reading", "Readings", "metric_label"]

#: The level of every interval the gate reads: the report's.
CONFIDENCE = 0.95


class Reading(NamedTuple):
    """The number a budget is compared with, or (``note``) why there is none."""

    value: float
    note: str = ""

    @property
    def measurable(self) -> bool:
        """Whether there is a number to compare (no note)."""
        return not self.note


def metric_label(metric: str, budget: Any) -> str:
    """The check's metric as the table shows it: ``auc``, ``tpr_at_fpr@0.001``...

    ``extraction@verbmem`` names the extraction check, ``exposure@r16`` the canaries
    inserted 16 times.
    """
    if metric == "tpr_at_fpr":
        return f"{metric}@{budget.fpr:g}"
    if metric == "extraction":
        return f"{metric}@{budget.check}"
    if metric == "exposure" and budget.repetitions is not None:
        return f"{metric}@r{budget.repetitions}"
    return metric


def _from_estimate(value: float, low: float, basis: str) -> Reading:
    """The estimate's lower end (basis lower) or point estimate; NaN: the reason."""
    if basis == "point":
        return Reading(value) if not math.isnan(value) else Reading(
            math.nan, "undefined: the point estimate is NaN (degenerate input)")
    if not math.isnan(low):
        return Reading(low)
    if math.isnan(value):
        return Reading(math.nan, "undefined: the estimate is NaN (degenerate input)")
    return Reading(math.nan, f"no {CONFIDENCE:.0%} interval at this basis (the point "
                   f"estimate is {value:.4g}; n_bootstrap=0?): basis point reads it")


def _residual_risk(result: Any, budget: Any, basis: str) -> Reading:
    """Anonymeter's residual risk; unmeasurable without control records.

    Without a control set the risk is the attack's raw success rate, which includes what
    it guesses from the population alone (an independent table reads 0.66): no evidence
    either way, so never a pass or a fail on it.
    """
    if result.control_rate is None:
        return Reading(math.nan, "unmeasurable: no control records (a holdout), so the "
                       "success rate is not a residual risk")
    return _from_estimate(*_value_low(result.risk()), basis)


class Readings:
    """The readers of every metric, with each result's metrics computed once.

    Parameters
    ----------
    fprs : tuple of float
        The FPRs the policy's ``tpr_at_fpr`` budgets read (every attack result's metrics
        are computed once, at all of them).
    n_bootstrap : int
        Bootstrap resamples of the attack results' intervals (the report's 1000).
    random_state : int
        Seeds the bootstrap and the effective-epsilon split (the report's 0).
    """

    def __init__(self, fprs: tuple[float, ...], n_bootstrap: int, random_state: int) -> None:
        self.fprs, self.n_bootstrap, self.random_state = fprs, n_bootstrap, random_state
        self._metrics: dict[int, dict[str, Any]] = {}
        self.readers: dict[str, Callable[[Any, Any, str], Reading]] = {
            "auc": self._threshold_metric("auc"),
            "advantage": self._threshold_metric("advantage"),
            "tpr_at_fpr": self._tpr_at_fpr,
            "effective_epsilon": self._effective_epsilon,
            "risk": _residual_risk,
            "attribute_advantage": lambda result, budget, basis: _from_estimate(
                *_value_low(result.advantage()), basis),
            "attribute_simulator_advantage": lambda result, budget, basis: _from_estimate(
                *_value_low(result.simulator_advantage()), basis),
            "epsilon_lower_bound": self._dp_bound,
            "extraction": _extraction_difference,
            "exposure": _median_exposure,
        }

    def read(self, metric: str, result: Any, budget: Any, basis: str) -> Reading:
        """The reading of ``metric`` on ``result`` for ``budget`` at ``basis``.

        A result its attack could not measure (``extra["degenerate"]``: a statistic
        undefined on every record, e.g. LiRA on a constant model, an LLM statistic on
        one-token texts) is unmeasurable: its scores of 0 read AUC 0.5, which would pass
        any budget on no evidence.
        """
        degenerate = (getattr(result, "extra", None) or {}).get("degenerate")
        if isinstance(degenerate, str):
            return Reading(math.nan, f"unmeasurable: {degenerate}")
        return self.readers[metric](result, budget, basis)

    def _attack_metrics(self, result: Any) -> dict[str, Any]:
        key = id(result)
        if key not in self._metrics:
            import warnings

            from privaudit.exceptions import DegenerateInputWarning

            # A degenerate metric the gate reads is NaN, and its check says "unmeasurable"
            # naming the result; one it does not read (a precision with no member
            # guessed) is no concern of the gate's, and its warning would name nothing.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegenerateInputWarning)
                self._metrics[key] = result.metrics(
                    fprs=self.fprs, n_bootstrap=self.n_bootstrap, confidence=CONFIDENCE,
                    random_state=self.random_state)
        return self._metrics[key]

    def _threshold_metric(self, name: str) -> Callable[[Any, Any, str], Reading]:
        def read(result: Any, budget: Any, basis: str) -> Reading:
            estimate = self._attack_metrics(result)[name]
            return _from_estimate(estimate["value"], estimate["low"], basis)
        return read

    def _tpr_at_fpr(self, result: Any, budget: Any, basis: str) -> Reading:
        """The TPR at ``budget.fpr``; unmeasurable below the non-members' resolution.

        A TPR "at 0.1% FPR" on 500 non-members is the TPR at FPR 0: no threshold lets a
        fifth of a non-member through (:func:`privaudit.metrics.fpr_is_resolvable`, the
        rule the report's verdict follows).
        """
        from privaudit.results import fpr_key

        metrics = self._attack_metrics(result)
        key = fpr_key(budget.fpr)
        if not metrics["fpr_resolution"]["resolvable"][key]:
            n = metrics["n_non_members"]
            return Reading(math.nan, f"unmeasurable: FPR {budget.fpr:g} is below what "
                           f"{n} non-members resolve (1/{n} = {1 / max(n, 1):.2g})")
        estimate = metrics["tpr_at_fpr"][key]
        return _from_estimate(estimate["value"], estimate["low"], basis)

    def _effective_epsilon(self, result: Any, budget: Any, basis: str) -> Reading:
        """Jagielski et al.'s lower bound (basis lower); TAPAS's plug-in value (point).

        Canaries (a memorisation result): their one-run lower bound at both bases.
        """
        if reading_type(result) == "memorisation:canaries":
            return _canary_epsilon(result)
        if basis == "point":
            value = self._attack_metrics(result)["effective_epsilon"]["value"]
            return _from_estimate(value, math.nan, "point")
        from privaudit.report import headline_epsilon

        bound = headline_epsilon(result, confidence=CONFIDENCE,
                                 random_state=self.random_state)
        if math.isnan(bound["value"]):
            return Reading(math.nan, f"no lower bound: {bound['note']}")
        return Reading(bound["value"])

    @staticmethod
    def _dp_bound(result: Any, budget: Any, basis: str) -> Reading:
        """The audit's epsilon lower bound: itself a lower bound, so read at both bases."""
        value = result.epsilon_lower_bound
        if math.isnan(value):
            return Reading(math.nan, "undefined: a run's canary scores were not finite")
        return Reading(value)


def _value_low(estimate: Any) -> tuple[float, float]:
    return float(estimate.value), float(estimate.low)


def _extraction_difference(result: Any, budget: Any, basis: str) -> Reading:
    """An extraction check's mean on member texts minus on held-out texts.

    The difference of two rates with Newcombe's interval for k-extractability (a 0/1
    check; Newcombe 1998, method 10), a percentile bootstrap interval for the others:
    those the result holds (:class:`~privaudit.results.MemorisationResult`), read only
    when they are at the gate's level.
    """
    comparison = result.comparisons.get(budget.check)
    if comparison is None:
        return Reading(math.nan, f"unmeasurable: the audit did not run the check "
                       f"{budget.check!r} (audit_llm(checks=[...]) runs it)")
    level = float(comparison.get("confidence", result.confidence))
    difference = comparison["difference"]
    if basis == "lower" and not math.isclose(level, CONFIDENCE):
        return Reading(math.nan, f"no {CONFIDENCE:.0%} interval: the result's are at "
                       f"{level:.0%} (rerun the audit at confidence {CONFIDENCE}, or "
                       "basis point)")
    return _from_estimate(float(difference["value"]), float(difference["low"]), basis)


def _median_exposure(result: Any, budget: Any, basis: str) -> Reading:
    """The median exposure (bits) of the inserted canaries, of one repetition count if set.

    The evidence is the median's distribution-free interval (order statistics,
    :func:`~privaudit.results.quantile_interval`): its lower end is above the budget
    only when so many canaries exceed the budget that a median at or below it would give
    that with probability under 2.5%. A canary's own exposure is no such evidence: a
    canary the model never learnt has ``P(exposure >= x) = 2^-x`` (its rank is uniform,
    Carlini et al. 2019, section 4), so the largest of ``n`` reaches about ``log2 n``
    bits by chance. Six canaries at least give a 95% lower bound.
    """
    from privaudit.results import quantile_interval

    by_count = result.exposure_by_repetitions()
    which = "" if budget.repetitions is None else f" inserted {budget.repetitions} times"
    exposures = ([e for values in by_count.values() for e in values]
                 if budget.repetitions is None else by_count.get(budget.repetitions, []))
    if not exposures:
        return Reading(math.nan, f"unmeasurable: no canary{which} (repetitions: "
                       f"{sorted(by_count)})")
    median = quantile_interval(exposures, 0.5, CONFIDENCE)
    if basis == "lower" and math.isinf(median.low):
        return Reading(math.nan, f"no {CONFIDENCE:.0%} lower bound on the median of "
                       f"{len(exposures)} canaries{which} (6 at least: per_repetition); "
                       f"basis point reads the median, {median.value:.4g} bits")
    return _from_estimate(median.value, median.low, basis)


def _canary_epsilon(result: Any) -> Reading:
    """The canaries' one-run epsilon lower bound (Steinke, Nasr and Jagielski 2023).

    Itself a lower bound (at the result's confidence): read the same at both bases.
    """
    if result.epsilon is None:
        return Reading(math.nan, "no one-run bound: every canary was inserted "
                       "(CanaryCheck(inclusion='random') gives one)")
    value = float(result.epsilon.epsilon)
    if math.isnan(value):
        return Reading(math.nan, "undefined: the canaries' scores were not finite")
    return Reading(value)
