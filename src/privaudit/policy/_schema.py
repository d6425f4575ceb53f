"""The gate's policy: budgets on the metrics of results, read from YAML with a typed schema.

A policy is a list of rules; a rule names the results it covers (``fnmatch`` patterns on
the target, the attack, the audit kind, the generator and the dataset, ``*`` by default)
and a budget per metric::

    basis: lower            # lower (default): a budget is exceeded only when the lower
                            # end of the metric's 95% interval is above it; point: the
                            # point estimate is compared
    unmeasurable: warn      # a check that cannot be measured: warn (default), fail, pass
    rules:
      - name: models
        kind: model
        tpr_at_fpr: {fpr: 0.001, max: 0.01}
        auc: {max: 0.6}
      - kind: synthetic
        risk: {max: 0.05}
      - kind: dp
        epsilon_lower_bound: {max: claim}   # the result's own claimed epsilon
      - kind: llm
        extraction: {check: k-extractability, max: 0.01}
        exposure: {max: 10}                 # bits
        effective_epsilon: {max: 1.0}       # the canaries' one-run bound

Each metric is read on some kinds of result (:attr:`MetricSpec.result_types`); a result
kind no metric reads is listed in :data:`NOT_BUDGETED` with the reason, and the gate
counts such results as not gated (never silently passed).

The file is validated as the CLI's configuration files are (pydantic, strict types, no
unknown keys, no key given twice): an unknown metric, a budget outside its metric's
range (``auc: {max: 1.7}``) or a misspelled key is one :class:`PolicyError` naming the
key and the file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)

from privaudit._yaml import load_yaml_text

__all__ = ["BASES", "EXTRACTION_BUDGET_CHECKS", "METRICS", "NOT_BUDGETED", "UNMEASURABLE",
           "Budget", "MetricSpec", "Policy", "PolicyError", "Rule", "load_policy",
           "reading_type"]

#: What a budget compares: the lower end of the 95% interval, or the point estimate.
BASES = ("lower", "point")
#: What an unmeasurable check does to the gate.
UNMEASURABLE = ("warn", "fail", "pass")


class PolicyError(ValueError):
    """A policy is wrong: the message names the key and the file (or the argument)."""


@dataclass(frozen=True)
class MetricSpec:
    """A metric a policy may budget: the results it applies to and its range.

    Attributes
    ----------
    name : str
        The policy's key (``"auc"``).
    result_types : tuple of str
        The kinds of result it is read on (:func:`reading_type`: a
        :attr:`~privaudit.results.ResultFamily.RESULT_TYPE`, a memorisation result with
        its check, ``"memorisation:canaries"``).
    low, high : float
        The range of the metric, so of a budget on it.
    description : str
        What it is, for the documentation and the error messages.
    """

    name: str
    result_types: tuple[str, ...]
    low: float
    high: float
    description: str

    @property
    def takes_claim(self) -> bool:
        """Whether ``max: claim`` (the result's own claimed epsilon) is allowed."""
        return "dp" in self.result_types

    @property
    def range_text(self) -> str:
        """``"in [0, 1]"``, or ``"at least 0"`` for an unbounded metric."""
        if math.isinf(self.high):
            return f"a number at least {self.low:g}"
        return f"a number in [{self.low:g}, {self.high:g}]"


#: Every metric a policy may budget, by its key.
METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in (
    MetricSpec("auc", ("attack",), 0.0, 1.0, "the attack's ROC AUC"),
    MetricSpec("advantage", ("attack",), 0.0, 1.0,
               "the attack's membership advantage, max TPR - FPR (Yeom et al., Def. 4)"),
    MetricSpec("tpr_at_fpr", ("attack",), 0.0, 1.0,
               "the attack's true-positive rate at a false-positive rate (Carlini et al.)"),
    MetricSpec("effective_epsilon", ("attack", "memorisation:canaries"), 0.0, math.inf,
               "the effective epsilon of the attack's rates (Jagielski et al.'s lower "
               "bound; the TAPAS plug-in estimate at basis point), or the one-run lower "
               "bound of canaries included at random (Steinke et al.)"),
    MetricSpec("risk", ("risk",), 0.0, 1.0,
               "a synthetic-data risk over its control (anonymeter)"),
    MetricSpec("attribute_advantage", ("attribute",), -1.0, 1.0,
               "attribute accuracy on members minus on non-members (Yeom et al., Def. 5)"),
    MetricSpec("attribute_simulator_advantage", ("attribute",), -1.0, 1.0,
               "attribute accuracy on members minus the best model-free guess on "
               "non-members (Yeom et al., Def. 6)"),
    MetricSpec("epsilon_lower_bound", ("dp",), 0.0, math.inf,
               "a DP training audit's epsilon lower bound (Steinke et al.; Mahloujifar "
               "et al.); max: claim compares it with the claimed epsilon"),
    MetricSpec("extraction", ("memorisation:extraction",), -1.0, 1.0,
               "an extraction check's mean (a rate for k-extractability) on member texts "
               "minus on held-out texts (Carlini et al. 2023); longest-common-prefix "
               "counts tokens"),
    MetricSpec("exposure", ("memorisation:canaries",), 0.0, math.inf,
               "the median exposure in bits of the inserted canaries (Carlini et al. "
               "2019, Def. 3)"),
)}

#: The extraction checks an ``extraction`` budget may read (``audit_llm(checks=...)``'s
#: names); ``longest-common-prefix`` is in tokens, the others in [0, 1].
EXTRACTION_BUDGET_CHECKS = ("k-extractability", "longest-common-prefix",
                            "extraction-strength", "exact-memorization", "verbmem")
_TOKEN_CHECKS = ("longest-common-prefix",)

#: The kinds of result no metric reads, and why: the gate counts them as not gated
#: (:attr:`privaudit.policy.GateResult.not_gated`) and names them, never passes them.
NOT_BUDGETED: dict[str, str] = {
    "proximity": "closeness of synthetic rows to training rows has no budget (no "
                 "threshold is agreed on for a distance); gate the synthetic audit's "
                 "risks (risk) or the generator audit's attacks",
}


def reading_type(result: Any) -> str:
    """What a metric is read on: the result's ``RESULT_TYPE``, a memorisation result's check.

    ``"attack"``, ``"risk"``...; a :class:`~privaudit.results.MemorisationResult` is
    ``"memorisation:extraction"`` or ``"memorisation:canaries"`` (their numbers differ).
    """
    kind = str(getattr(type(result), "RESULT_TYPE", ""))
    return f"{kind}:{result.check}" if kind == "memorisation" else kind


class _Expected(ValueError):
    """Raised by a validator: what the key must be (the message's "must be ...").

    ``key`` and ``got``: the key inside the validated mapping and its value, when a
    budget's own validator checks one key against another (``extraction``'s ``max``
    against its ``check``).
    """

    def __init__(self, expected: str, key: str = "", got: Any = None) -> None:
        super().__init__(expected)
        self.expected, self.key, self.got = expected, key, got


def _in_range(spec: MetricSpec) -> AfterValidator:
    """A budget's ``max`` must lie in its metric's range (NaN refused)."""
    def check(value: float | str) -> float | str:
        if isinstance(value, str):
            if value != "claim" or not spec.takes_claim:
                raise _Expected(f"{spec.range_text}, or 'claim' (the result's claimed "
                                "epsilon)")
            return value
        if spec.name == "extraction" and not math.isnan(value):
            return float(value)  # its range depends on its check: _ExtractionBudget
        if not (spec.low <= value <= spec.high):
            raise _Expected(f"{spec.range_text} ({spec.description})")
        return float(value)
    return AfterValidator(check)


def _fpr(value: float) -> float:
    if not 0.0 <= value < 1.0:
        raise _Expected("a false-positive rate in [0, 1)")
    return float(value)


def _extraction_check(value: str) -> str:
    if value not in EXTRACTION_BUDGET_CHECKS:
        raise _Expected(f"one of {list(EXTRACTION_BUDGET_CHECKS)} (the extraction checks "
                        "of audit_llm(checks=...))")
    return value


def _repetitions(value: int) -> int:
    if value < 1:
        raise _Expected("a repetition count at least 1 (the canaries inserted that many "
                        "times)")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Budget(_Strict):
    """A budget on one metric: its ``max``, and optionally the ``basis`` it reads."""

    max: float
    basis: Literal["lower", "point"] | None = None


class _ExtractionBudget(Budget):
    """An ``extraction`` budget: its ``max`` in the range of its ``check``'s difference."""

    @model_validator(mode="after")
    def _max_in_range(self) -> _ExtractionBudget:
        if self.check not in _TOKEN_CHECKS and not -1.0 <= self.max <= 1.0:  # type: ignore[attr-defined]
            raise _Expected(f"a number in [-1, 1] for the check {self.check!r} (a "  # type: ignore[attr-defined]
                            "difference of rates or of values in [0, 1])", "max", self.max)
        return self


#: The extra keys of a budget, per metric: name -> (type, default; ``...``: required).
_BUDGET_KEYS: dict[str, dict[str, tuple[Any, Any]]] = {
    "tpr_at_fpr": {"fpr": (Annotated[float, AfterValidator(_fpr)], ...)},
    "extraction": {"check": (Annotated[str, AfterValidator(_extraction_check)],
                             "k-extractability")},
    "exposure": {"repetitions": (Annotated[int, AfterValidator(_repetitions)] | None, None)},
}


def _budget_type(spec: MetricSpec) -> Any:
    """The schema of a budget on ``spec``: ``max`` in its range (+ ``fpr``, ``claim``...)."""
    kind = float | str if spec.takes_claim else float
    fields: dict[str, Any] = {"max": (Annotated[kind, _in_range(spec)], ...),
                              **_BUDGET_KEYS.get(spec.name, {})}
    base = _ExtractionBudget if spec.name == "extraction" else Budget
    return create_model(f"{spec.name}_budget", __base__=base, **fields)


def _no_empty_rule(rule: Any) -> Any:
    if not rule.budgets():
        raise _Expected(f"a rule with at least one budget among {sorted(METRICS)}")
    return rule


class _RuleScope(_Strict):
    """The results a rule covers: ``fnmatch`` patterns (``*`` matches every result).

    ``kind`` is the audit kind (``model``, ``llm``, ``unlearning``, ``synthetic``,
    ``generator``, ``attribute``, ``dp``); ``generator`` and ``dataset`` tell apart a
    generator audit's artefacts (its targets are records, one per generator).
    """

    name: str | None = None
    target: str = "*"
    attack: str = "*"
    kind: str = "*"
    generator: str = "*"
    dataset: str = "*"

    def budgets(self) -> list[tuple[str, Any]]:
        """``(metric, budget)`` pairs in the catalogue's order, one per list entry."""
        out: list[tuple[str, Any]] = []
        for name in METRICS:
            value = getattr(self, name)
            for budget in value if isinstance(value, list) else [value]:
                if budget is not None:
                    out.append((name, budget))
        return out


#: The metrics a rule may budget several times: one budget per FPR, per extraction
#: check, per canaries' repetition count.
_LISTABLE = ("tpr_at_fpr", "extraction", "exposure")


def _budget_field(name: str) -> tuple[Any, None]:
    budget = _budget_type(METRICS[name])
    return (budget | list[budget] | None if name in _LISTABLE else budget | None), None


#: A rule: its scope (``name``, ``target``, ``attack``, ``kind``) and one optional budget
#: per metric of :data:`METRICS` (``tpr_at_fpr``, ``extraction``, ``exposure``: one budget
#: or a list, one per FPR, check or repetition count).
Rule = create_model(
    "Rule", __base__=_RuleScope, __module__=__name__,
    __doc__="Which results a rule covers (fnmatch patterns) and its budgets per metric.",
    **{name: _budget_field(name) for name in METRICS})


class Policy(_Strict):
    """A whole policy: the default basis, what an unmeasurable check does, the rules.

    Build one with :func:`load_policy` (a YAML file or a mapping) or directly
    (``Policy(rules=[Rule(auc={"max": 0.6})])``).
    """

    basis: Literal["lower", "point"] = "lower"
    unmeasurable: Literal["warn", "fail", "pass"] = "warn"
    rules: Annotated[list[Annotated[Rule, AfterValidator(_no_empty_rule)]],  # type: ignore[valid-type]
                     Field(min_length=1)]

    def fprs(self) -> tuple[float, ...]:
        """Every FPR a ``tpr_at_fpr`` budget reads, sorted."""
        return tuple(sorted({b.fpr for r in self.rules for name, b in r.budgets()
                             if name == "tpr_at_fpr"}))


def _dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not str(part).endswith("_budget") and part not in ("list[...]",):
            text += f".{part}" if text else str(part)
    return text


def _where(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The location without pydantic's union branches (``tpr_at_fpr_budget``, ``list``)."""
    return tuple(p for p in loc if isinstance(p, int) or not (
        str(p).endswith("_budget") or str(p).startswith(("list[", "function-"))))


def _error_text(err: Mapping[str, Any], source: str) -> str:
    loc = _where(tuple(err["loc"]))
    key, kind = _dotted(loc), err["type"]
    if kind == "extra_forbidden":
        section = "a rule" if len(loc) == 3 else "a budget"
        expected = (sorted((*METRICS, *_RuleScope.model_fields)) if len(loc) == 3
                    else ["max", "basis", "fpr (tpr_at_fpr)", "check (extraction)",
                          "repetitions (exposure)"])
        if len(loc) == 1:
            section, expected = "the policy", ["basis", "unmeasurable", "rules"]
        return (f"The {key!r} key of {source} is not known in {section}; expected one of "
                f"{expected}.")
    if kind == "missing":
        return f"The {key!r} key of {source} is missing; it is required."
    got = err.get("input")
    if kind == "invalid_key":  # pydantic's loc ends with the key itself, not an index
        where = f" in {_dotted(loc[:-1])!r}" if loc[:-1] else ""
        return (f"The key {got!r}{where} of {source} is not a name; keys are words such "
                "as 'rules', 'target' or 'auc'.")
    if kind == "float_type" and isinstance(got, int) and not isinstance(got, bool):
        return (f"The {key!r} key of {source} must be a number a float can hold (at most "
                f"about 1.8e308). Got an integer of {len(str(abs(got)))} digits instead.")
    error = err.get("ctx", {}).get("error")
    expected = (error.expected if isinstance(error, _Expected) else _EXPECTED.get(kind)
                or str(err["msg"]).removeprefix("Input should be "))
    if isinstance(error, _Expected) and error.key:  # a budget's validator, on one key
        key, got = f"{key}.{error.key}", error.got
    return f"The {key!r} key of {source} must be {expected}. Got {got!r} instead."


_EXPECTED = {"dict_type": "a mapping (indented 'key: value' lines)",
             "model_type": "a mapping (indented 'key: value' lines)",
             "list_type": "a list of rules", "too_short": "a non-empty list of rules",
             "float_type": "a number", "string_type": "a string (an fnmatch pattern)"}


def _first_problem(exc: ValidationError, source: str) -> PolicyError:
    """One line for the first problem (an unknown key first: it explains the others)."""
    errors = exc.errors(include_url=False)
    first = next((e for e in errors if e["type"] == "extra_forbidden"), None)
    if first is None:  # a union's branches each report: keep the most specific
        first = max(errors, key=lambda e: (len(_where(tuple(e["loc"]))),
                                           e["type"] != "dict_type"))
    return PolicyError(_error_text(first, source))


#: Largest policy file read (a policy is a few dozen lines).
POLICY_MAX_BYTES = 1 << 20


def _read_yaml(path: Path) -> Any:
    """The YAML document at ``path``; a key given twice in a mapping is refused.

    Read as the user named it (links followed), then as privaudit reads its own files
    (:func:`privaudit._files.read_limited_inside`): a regular file only, opened without
    blocking, at most :data:`POLICY_MAX_BYTES`, so that a FIFO or a device (``/dev/zero``)
    given as the policy is one error, never a hang.
    """
    from privaudit._files import read_limited_inside

    real = Path(os.path.realpath(path))
    try:
        data = read_limited_inside(real.parent, real.name, max_bytes=POLICY_MAX_BYTES,
                                   what=f"The policy {path} (read at)")
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PolicyError(f"The policy {path} is not a text (UTF-8) YAML file.") from None
    except (OSError, ValueError) as exc:
        raise PolicyError(" ".join(str(exc).split())) from None
    return load_yaml_text(text, describe=str(path), error=PolicyError, what="The policy")


def load_policy(policy: str | os.PathLike[str] | Mapping[str, Any] | Policy) -> Policy:
    """Read and validate a gate policy.

    Parameters
    ----------
    policy : path-like, mapping or Policy
        A YAML file (see the module docstring and ``docs/ci_gate.md``), the same content
        as a mapping, or a :class:`Policy` (returned as it is).

    Returns
    -------
    Policy

    Raises
    ------
    PolicyError
        One line naming the key and the file: an unknown metric or key, a budget outside
        its metric's range, a wrong type, a key given twice, a YAML syntax error, a file
        that cannot be read.
    """
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        raw, source = policy, "the policy"
    elif isinstance(policy, (str, os.PathLike)):
        path = Path(policy)
        if path.is_dir() or not path.exists():
            what = "is a directory, not a file" if path.is_dir() else "does not exist"
            raise PolicyError(f"The policy {path} {what}.")
        raw, source = _read_yaml(path), str(path)
    else:
        from privaudit._validation import param_error

        raise param_error("policy", "load_policy", "a YAML file's path, a mapping or a "
                          "Policy", policy, error=TypeError)
    if not isinstance(raw, Mapping):
        raise PolicyError(f"The policy {source} must be a YAML mapping (basis, unmeasurable, "
                          f"rules). Got {type(raw).__name__} instead.")
    try:
        return Policy.model_validate(dict(raw))
    except ValidationError as exc:
        raise _first_problem(exc, source) from None
