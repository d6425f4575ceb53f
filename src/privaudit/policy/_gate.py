"""The gate: every budget of a policy checked on every result it covers.

:func:`gate` reads each result the way the report does (the same intervals, the same
settings) and compares, per budget, the lower end of the metric's 95% interval (or its
point estimate) with the budget: a budget is exceeded only when the evidence says so. A
check without a number (:mod:`._readings`) is *unmeasurable*; the policy's
``unmeasurable`` says whether that warns (the default), fails or passes.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from privaudit.exceptions import PrivauditWarning
from privaudit.policy._readings import Readings, metric_label
from privaudit.policy._schema import (
    METRICS,
    NOT_BUDGETED,
    Policy,
    PolicyError,
    Rule,
    load_policy,
    reading_type,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["TABLE_COLUMNS", "GateCheck", "GateResult", "NotGated", "UnmatchedBudgetWarning",
           "gate"]

#: The columns of :meth:`GateResult.table`.
TABLE_COLUMNS = ("outcome", "rule", "kind", "artefact", "attack", "metric", "basis", "value",
                 "budget", "note")
_COMPARED = "a compared artefact (shown beside the audited one), not the audited artefact"
#: Result roles that are not the audited artefact's leakage, and why they are not gated.
_NOT_LEAKAGE = {"baseline": "a blind baseline: evidence about the data split, not leakage",
                "fidelity": "a fidelity classifier: evidence about the data, not leakage",
                "compared": _COMPARED}


class UnmatchedBudgetWarning(PrivauditWarning):
    """A budget of the policy covers no result (a misspelled pattern, a missing audit)."""


@dataclass(frozen=True)
class GateCheck:
    """One budget checked on one result.

    Attributes
    ----------
    rule : str
        The rule's ``name``, or ``rules[i]``.
    metric : str
        The metric (``auc``, ``tpr_at_fpr@0.001``...).
    target, attack, kind : str
        The result checked (``kind``: the audit kind), as the rule's patterns read them.
    artefact : str
        What the result audits, as the report names it (the target, and the generator
        and dataset when it has them: a generator's records are told apart).
    basis : str
        ``lower`` (the lower end of the 95% interval) or ``point``.
    value : float
        The number compared with the budget (NaN when unmeasurable).
    budget : float
        The budget's ``max`` (for ``max: claim``, the result's claimed epsilon).
    status : {"pass", "fail", "unmeasurable"}
        What the measurement says.
    outcome : {"pass", "fail", "warn"}
        What the check does to the gate: an unmeasurable check is decided by the
        policy's ``unmeasurable``.
    note : str
        Why a check is unmeasurable, or what its budget reads.
    """

    rule: str
    metric: str
    target: str
    attack: str
    kind: str
    artefact: str
    basis: str
    value: float
    budget: float
    status: Literal["pass", "fail", "unmeasurable"]
    outcome: Literal["pass", "fail", "warn"]
    note: str = ""

    @property
    def failed(self) -> bool:
        """Whether this check fails the gate."""
        return self.outcome == "fail"

    @property
    def message(self) -> str:
        """One line: what was read, against which budget, and the outcome."""
        read = "95% lower bound" if self.basis == "lower" else "point estimate"
        if self.status == "unmeasurable":
            return f"{self.metric} of {self.attack} on {self.artefact}: {self.note}"
        sign = ">" if self.status == "fail" else "<="
        return (f"{self.metric} of {self.attack} on {self.artefact}: {read} "
                f"{self.value:.4g} {sign} budget {self.budget:.4g}"
                + (f" ({self.note})" if self.note else ""))


@dataclass(frozen=True)
class NotGated:
    """A result no check read, and why: counted and named, never silently passed.

    Attributes
    ----------
    kind, artefact, attack : str
        The audit kind, what the result audits (as the report names it) and the attack.
    result_type : str
        What the metrics read (:func:`~privaudit.policy.reading_type`).
    reason : str
        Why: not leakage (a blind baseline, a fidelity classifier, a compared artefact),
        a kind of result no metric reads (:data:`~privaudit.policy.NOT_BUDGETED`), or no
        budget of the policy covering it.
    """

    kind: str
    artefact: str
    attack: str
    result_type: str
    reason: str

    @property
    def message(self) -> str:
        """One line: the result and the reason."""
        return f"{self.attack} on {self.artefact} ({self.result_type}): not gated, {self.reason}"


@dataclass(frozen=True)
class GateResult:
    """Every check of a gate, and whether the gate passed.

    Attributes
    ----------
    checks : tuple of GateCheck
        One per budget and result it covers, in the policy's order.
    policy : Policy
    basis : str
        The default basis the checks read (a budget's own ``basis`` overrides it).
    unmatched : tuple of str
        Budgets that covered no result (each was warned about).
    left_out : tuple of NotGated
        The results no check read, each with its reason: blind baselines, fidelity
        classifiers and a report's compared artefacts (evidence about the split or the
        data, not leakage), kinds of result no metric reads (closeness), and results no
        budget of the policy covers.
    """

    checks: tuple[GateCheck, ...]
    policy: Policy
    basis: str
    unmatched: tuple[str, ...] = ()
    left_out: tuple[NotGated, ...] = ()

    @property
    def not_gated(self) -> int:
        """How many results no check read (:attr:`left_out`)."""
        return len(self.left_out)

    @property
    def passed(self) -> bool:
        """True when no check fails."""
        return not any(check.failed for check in self.checks)

    @property
    def exit_code(self) -> int:
        """The CLI's: 0 when the gate passes, 1 when a budget is exceeded."""
        return 0 if self.passed else 1

    @property
    def failures(self) -> tuple[GateCheck, ...]:
        """The checks that fail the gate."""
        return tuple(check for check in self.checks if check.failed)

    def counts(self) -> dict[str, int]:
        """How many checks pass, fail and warn."""
        return {outcome: sum(c.outcome == outcome for c in self.checks)
                for outcome in ("pass", "fail", "warn")}

    def summary(self) -> str:
        """One line: passed or failed, and how many checks passed, failed and warned."""
        n = self.counts()
        head = "Gate passed" if self.passed else "Gate FAILED"
        return (f"{head}: {n['fail']} of {len(self.checks)} checks failed, {n['pass']} "
                f"passed, {n['warn']} unmeasurable (warnings)." + self._left_out_text())

    def _left_out_text(self) -> str:
        """`` N results not gated: ...`` naming them by reason, or nothing."""
        if not self.left_out:
            return ""
        by_reason: dict[str, list[str]] = {}
        for entry in self.left_out:
            by_reason.setdefault(entry.reason, []).append(
                f"{entry.attack} on {entry.artefact}")
        parts = [f"{_first_names(names)} ({reason})" for reason, names in by_reason.items()]
        noun = "result" if self.not_gated == 1 else "results"
        return f" {self.not_gated} {noun} not gated: " + "; ".join(parts) + "."

    def table(self) -> pd.DataFrame:
        """One row per check (:data:`TABLE_COLUMNS`), then one per result not gated.

        A result no check read has the outcome ``"not gated"`` and its reason as note.
        """
        import pandas as pd

        rows = [{name: getattr(c, name) for name in TABLE_COLUMNS} for c in self.checks]
        rows += [{"outcome": "not gated", "rule": "", "kind": e.kind, "artefact": e.artefact,
                  "attack": e.attack, "metric": "", "basis": "", "value": float("nan"),
                  "budget": float("nan"), "note": e.reason} for e in self.left_out]
        return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))

    def to_junit(self, path: str | os.PathLike[str]) -> Path:
        """Write the checks as JUnit XML at ``path``: one ``<testcase>`` per check.

        A failing check is a ``<failure>`` with its message; an unmeasurable one that
        warns is ``<skipped>`` with the reason, so any CI shows it; each result not gated
        is a ``<skipped>`` test case too, with its reason. Written atomically.
        """
        from privaudit._files import atomic_write_text
        from privaudit.policy._junit import junit_xml

        return atomic_write_text(path, junit_xml(self))

    def __repr__(self) -> str:
        return f"GateResult({self.summary()})"


def _first_names(names: list[str], shown: int = 3) -> str:
    """``a, b, c and 4 more``: a summary line stays one line."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _covers(rule: Rule, result: Any, kind: str) -> bool:
    """Whether every pattern of ``rule``'s scope matches ``result`` (case-sensitive)."""
    return all(fnmatchcase(value or "", pattern) for value, pattern in (
        (result.target, rule.target), (result.attack, rule.attack), (kind, rule.kind),
        (result.generator, rule.generator), (result.dataset, rule.dataset)))


def _check(readings: Readings, rule_name: str, metric: str, budget: Any, result: Any,
           kind: str, basis: str, unmeasurable: str) -> GateCheck:
    """One budget on one result."""
    from privaudit.report import artefact_name

    basis = budget.basis or basis
    reading = readings.read(metric, result, budget, basis)
    limit, note = budget.max, ""
    if limit == "claim":
        limit, note = result.claim, f"the claim ({result.claim_accountant} accountant)"
    if not reading.measurable:
        status, outcome = "unmeasurable", {"warn": "warn", "fail": "fail",
                                           "pass": "pass"}[unmeasurable]
        note = reading.note
    else:
        status = outcome = "fail" if reading.value > limit else "pass"
    return GateCheck(rule=rule_name, metric=metric_label(metric, budget),
                     target=result.target or "", attack=result.attack or "", kind=kind,
                     artefact=artefact_name(result), basis=basis, value=reading.value,
                     budget=float(limit), status=status, outcome=outcome, note=note)


def _not_gated(result: Any, kind: str, reason: str) -> NotGated:
    from privaudit.report import artefact_name

    return NotGated(kind=kind, artefact=artefact_name(result), attack=result.attack or "",
                    result_type=reading_type(result), reason=reason)


def _gated(results: Any) -> tuple[list[tuple[Any, str]], list[NotGated]]:
    """``(result, audit kind)`` pairs to gate, and the results left out, with why."""
    from privaudit.report import AuditReport
    from privaudit.results import load_all_results, result_type_of

    # strict: a result that cannot be read is an error, never a warning and a decision on
    # the others (a gate that skipped it would pass the build on the rest).
    if _are_paths(results):
        results = load_all_results(results if isinstance(results, (str, os.PathLike))
                                   else list(results), strict=True)
    left_out: list[NotGated] = []
    default_kind = ""
    if isinstance(results, AuditReport):
        default_kind = results.kind
        left_out = [_not_gated(r, r.audit_kind or default_kind, _NOT_LEAKAGE.get(
            r.audit.role, _NOT_LEAKAGE["baseline"])) for r in results.baselines]
        left_out += [_not_gated(r, r.audit_kind or default_kind, _COMPARED)
                     for r in results.compared]
        results = results.results
    from privaudit._validation import param_error

    if not isinstance(results, Sequence) or isinstance(results, (str, bytes)) or any(
            result_type_of(r) is None for r in results):
        raise param_error("results", "gate", "an AuditReport, a sequence of privaudit "
                          "results, or results folders", results, error=TypeError)
    if not results:  # no check at all would pass any policy
        raise param_error("results", "gate", "at least one result", "<no result>")
    pairs = []
    for result in results:
        kind = result.audit_kind or default_kind
        if result.audit.role in _NOT_LEAKAGE:
            left_out.append(_not_gated(result, kind, _NOT_LEAKAGE[result.audit.role]))
        else:
            pairs.append((result, kind))
    return pairs, left_out


def _are_paths(results: Any) -> bool:
    """Whether ``results`` is a folder, or a non-empty sequence of folders, of results."""
    from privaudit.report import AuditReport

    if isinstance(results, (str, os.PathLike)):
        return True
    return (isinstance(results, Sequence) and not isinstance(results, AuditReport)
            and bool(results) and all(isinstance(r, (str, os.PathLike)) for r in results))


def _unread_reason(result: Any) -> str:
    """Why no check read ``result``: no metric reads its kind, or no budget covers it."""
    kind = reading_type(result)
    if not any(kind in spec.result_types for spec in METRICS.values()):
        return NOT_BUDGETED.get(kind.partition(":")[0], f"no metric of the gate reads "
                                f"{kind} results")
    return "no budget of the policy covers it"


def _budget_name(rule: Rule, index: int, metric: str, budget: Any) -> str:
    name = repr(rule.name) if rule.name else f"rules[{index}]"
    scope = ", ".join(f"{key} {getattr(rule, key)!r}" for key in (
        "target", "attack", "kind", "generator", "dataset") if getattr(rule, key) != "*")
    return f"{metric_label(metric, budget)} budget of rule {name} ({scope or 'every result'})"


def gate(results: Any, policy: Any, *, basis: str | None = None, strict: bool = False,
         n_bootstrap: int | None = None, random_state: int | None = None) -> GateResult:
    """Check every budget of ``policy`` on every result it covers.

    Parameters
    ----------
    results : AuditReport, sequence of results, or path(s)
        What an audit returned (its ``results``; the blind baselines and compared
        artefacts are not gated), a list of privaudit results, or folders of saved
        results (searched recursively, as ``privaudit report`` reads them). Results that
        are a blind baseline or a fidelity classifier are not gated; neither are those
        no budget reads. Each is named with its reason in :attr:`GateResult.left_out`,
        never silently passed.
    policy : Policy, mapping or path-like
        The budgets (:func:`load_policy`).
    basis : {"lower", "point"}, optional
        Overrides the policy's ``basis``; a budget's own ``basis`` still wins.
    strict : bool
        Raise :class:`PolicyError` when a budget covers no result, instead of an
        :class:`UnmatchedBudgetWarning`.
    n_bootstrap, random_state : int or None
        The attack results' bootstrap resamples and seed. None: the report's own when
        ``results`` are a report's folder (its ``results.json``,
        :func:`~privaudit.results.report_settings`), else the report's defaults (1000
        and 0), so that the gate reads the numbers the report shows.

    Returns
    -------
    GateResult

    Notes
    -----
    Each check reads the two-sided 95% interval the report shows, so a lower bound above
    the budget is evidence at one-sided level 97.5% for that check. Many checks are many
    tests: with dozens of checks, expect an occasional lower bound above a budget the
    artefact truly meets (the gate is a screen; the report is the evidence).

    References
    ----------
    .. [1] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022 (the TPR at low FPR as the measure of leakage).
    .. [2] Jagielski, M., Ullman, J. and Oprea, A. "Auditing Differentially Private
       Machine Learning: How Private is Private SGD?" NeurIPS 2020 (the effective-epsilon
       lower bound).
    """
    from privaudit._validation import check_random_state, param_error
    from privaudit.results import (
        DEFAULT_REPORT_SETTINGS,
        check_n_bootstrap,
        report_settings,
    )

    policy = load_policy(policy)
    if basis not in (None, "lower", "point"):
        raise param_error("basis", "gate", "'lower', 'point' or None", basis)
    if not isinstance(strict, bool):
        raise param_error("strict", "gate", "a bool", strict, error=TypeError)
    own = report_settings(results) if _are_paths(results) else DEFAULT_REPORT_SETTINGS
    n_bootstrap = own["n_bootstrap"] if n_bootstrap is None else n_bootstrap
    random_state = own["random_state"] if random_state is None else random_state
    check_random_state(random_state, func="gate")
    readings = Readings(policy.fprs(), check_n_bootstrap(n_bootstrap, "gate"), random_state)
    pairs, left_out = _gated(results)
    basis = basis or policy.basis
    checks, unmatched, read = [], [], set()
    for index, rule in enumerate(policy.rules):
        for metric, budget in rule.budgets():
            covered = [(r, kind) for r, kind in pairs if _covers(rule, r, kind)
                       and reading_type(r) in METRICS[metric].result_types]
            if not covered:
                unmatched.append(_budget_name(rule, index, metric, budget))
            checks += [_check(readings, rule.name or f"rules[{index}]", metric, budget, r,
                              kind, basis, policy.unmeasurable) for r, kind in covered]
            read.update(id(r) for r, _ in covered)
    left_out += [_not_gated(r, kind, _unread_reason(r)) for r, kind in pairs
                 if id(r) not in read]
    _report_unmatched(unmatched, strict)
    return GateResult(tuple(checks), policy, basis, tuple(unmatched), tuple(left_out))


def _report_unmatched(unmatched: list[str], strict: bool) -> None:
    """A budget that covers no result: an error with ``strict``, else a warning each."""
    for text in unmatched:
        message = f"The {text} covers no result."
        if strict:
            raise PolicyError(message + " (strict: every budget must cover a result.)")
        warnings.warn(message, UnmatchedBudgetWarning, stacklevel=3)

