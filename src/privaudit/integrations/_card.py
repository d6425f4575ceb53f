"""A privacy section for a Hugging Face model card, with its ``model-index`` metadata.

:func:`model_card` writes, from the same reading of an audit as the trackers
(:func:`~privaudit.integrations.read_audit`): YAML front matter with the headline numbers
as ``model-index`` results (one entry per kind of result and dataset, each metric
``{type, value, name}``, its interval as ``<type>_low`` / ``<type>_high`` entries), then
Markdown: what was audited, with which attacks and how many reference models, the
report's verdict and its answer per artefact (the report's own sentences: nothing is
re-judged here), the headline numbers with intervals (a language model's extraction rates
and canary exposures too), the ε lower bounds beside any claimed ε, and the limits of the
audit. A result without a headline number is named below the table, never dropped.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from privaudit._files import atomic_write_text
from privaudit._text import UNPRINTABLE, escape_controls
from privaudit._validation import NONE, RealRule, check_declared
from privaudit.integrations._audit_rows import AuditSummary, ResultMetrics, read_audit

__all__ = ["check_claimed_epsilon", "markdown_escape", "model_card", "write_model_card"]

#: The numbers a card shows per result, when the result has them: the report's headline
#: metrics (membership: AUC, advantage, TPR at each FPR, the Clopper-Pearson ε bound of
#: Jagielski et al. 2020; risks: the residual risk; closeness: the value; DP audits: the
#: ε lower bound and the claim).
HEADLINE_METRICS: tuple[str, ...] = ("auc", "advantage", "effective_epsilon_lower_bound",
                                     "simulator_advantage", "risk", "value",
                                     "epsilon_lower_bound", "claimed_epsilon")
_TPR = re.compile(r"^tpr_at_fpr_[0-9.e-]+$")
#: A memorisation result's numbers (:meth:`privaudit.results.MemorisationResult.summary`):
#: each extraction check's mean (a rate for k-extractability) on members and on held-out
#: texts and their difference, with intervals; the canaries' median exposure (bits) per
#: repetition count and the largest possible, log2 of the secrets' number (Carlini et al.
#: 2019, Definition 3).
_MEMORISATION = re.compile(
    r"^(.+_(member_mean|held_out_mean|difference)|exposure_r\d+|max_exposure)$")
#: A claimed ε: a finite real number, 0 or more. A negative, NaN, infinite or boolean
#: "claim" is no ε an audited lower bound can be set beside: it is refused, never shown.
CLAIMED_EPSILON = RealRule(0.0, math.inf, closed="left")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|])")
#: The limits every audit shares, stated on every card.
LIMITS: tuple[str, ...] = (
    "An audit measures what its attacks find: a stronger attack, or more reference "
    "models, may find more. Its numbers are lower bounds on the leakage, not proofs of "
    "privacy; \"no leakage measured\" means none was detectable with these attacks and "
    "these records.",
    "The smallest false-positive rate an attack can resolve is about one over its number "
    "of non-members: rarer leaks (a few records identified with certainty) may be missed.",
    "Attacks with reference models assume these were trained like the audited model, on "
    "data from the same population; where that does not hold their numbers may be low.",
)


def markdown_escape(text: Any) -> str:
    r"""``text`` safe inside Markdown (and a table cell): HTML and Markdown syntax escaped.

    Control characters and bidirectional overrides (from a user's names) are written as
    escapes, shown rather than obeyed.

    >>> markdown_escape("a|b <script>")
    'a\\|b &lt;script&gt;'
    >>> markdown_escape("x\u202eevil")
    'x\\\\u202eevil'
    """
    shown = escape_controls(" ".join(str(text).split()))
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(shown, quote=False))


def headline(result: ResultMetrics) -> list[str]:
    """The headline metrics ``result`` has, in :data:`HEADLINE_METRICS` order, TPRs after AUC.

    A memorisation result's extraction rates and canary exposures come before its
    epsilon bound.
    """
    names = [name for name in HEADLINE_METRICS if name in result.metrics]
    if result.kind == "memorisation":
        return [name for name in result.metrics if _MEMORISATION.match(name)] + names
    tprs = [name for name in result.metrics if _TPR.match(name)]
    return names[:1] + tprs + names[1:]


def _number(value: float) -> str:
    if math.isnan(value):
        return "undefined"
    return "∞" if math.isinf(value) else f"{value:.4g}"


def _interval(result: ResultMetrics, name: str) -> str:
    low, high = result.metrics.get(f"{name}_low"), result.metrics.get(f"{name}_high")
    if low is None or high is None:
        return "—"
    return f"[{_number(low)}, {_number(high)}]"


def _task(kind: str) -> dict[str, str]:
    kind = kind or "privacy"
    return {"type": "membership-inference" if kind == "membership" else kind.replace("_", "-"),
            "name": f"Privacy audit: {kind.replace('_', ' ')}"}


def model_index(summary: AuditSummary, name: str) -> list[dict[str, Any]]:
    """The ``model-index`` metadata: one entry per kind of result and dataset."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for result in summary.results:
        metrics = groups.setdefault((result.kind, result.dataset), [])
        for metric in headline(result):
            label = f"{metric} of {result.attack} on {result.target}"
            metrics.append({"type": metric, "value": result.metrics[metric], "name": label})
            metrics.extend({"type": f"{metric}_{end}", "value": result.metrics[f"{metric}_{end}"],
                            "name": f"{label} ({end} end of the interval)"}
                           for end in ("low", "high") if f"{metric}_{end}" in result.metrics)
    results = [{"task": _task(kind), "dataset": {"type": dataset or "unknown",
                                                 "name": dataset or "unknown"},
                "metrics": metrics} for (kind, dataset), metrics in groups.items() if metrics]
    return [{"name": name, "results": results}]


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown_escape(cell) for cell in row) + " |" for row in rows]
    return lines


def _audited(summary: AuditSummary) -> list[str]:
    targets = dict.fromkeys((r.target, r.dataset) for r in summary.results)
    attacks: dict[str, int | None] = {}
    for result in summary.results:
        attacks[result.attack] = attacks.get(result.attack) or result.reference_models
    attack_text = ", ".join(
        markdown_escape(a) + (f" ({n} reference models)" if n else "")
        for a, n in attacks.items())
    return [f"{len(summary.results)} results on {len(targets)} audited artefacts, "
            f"by {len(attacks)} attacks: {attack_text}.", "",
            *_table(("Artefact", "Dataset"), targets)]


def _verdict(summary: AuditSummary) -> list[str]:
    verdict = summary.verdict
    if verdict is None:
        return ["No result to judge."]
    lines = [f"**{markdown_escape(verdict.label)}** ({markdown_escape(verdict.artefact)}): "
             f"{markdown_escape(verdict.text)}", ""]
    return lines + _table(("Artefact", "Answer", "Attack", "Metric", "Interval"),
                          ((f.artefact, f.label, f.attack or "—", f.metric or "—",
                            f.interval or "—") for f in summary.overview))


def _numbers(summary: AuditSummary) -> list[str]:
    confidence = summary.settings.get("confidence")
    level = f"{confidence:.0%} interval" if isinstance(confidence, float) else "Interval"
    lines = _table(("Artefact", "Attack", "Metric", "Value", level),
                   ((r.target, r.attack, m, _number(r.metrics[m]), _interval(r, m))
                    for r in summary.results for m in headline(r)))
    skipped = [r for r in summary.results if not headline(r)]
    if skipped:  # named, never dropped silently
        lines += ["", "Not in this table (no headline number for their kind of result):",
                  *(f"- {markdown_escape(r.attack)} on {markdown_escape(r.target)} "
                    f"({markdown_escape(r.kind or 'unknown kind')})" for r in skipped)]
    return lines


def _epsilons(summary: AuditSummary, claimed_epsilon: float | None) -> list[str]:
    """The audited ε lower bounds beside the claimed ε (the result's own, or the user's).

    A DP audit's bound and an LLM audit's canaries' one-run bound
    (``epsilon_lower_bound``), and an attack's Clopper-Pearson bound
    (``effective_epsilon_lower_bound``); the claim is the result's own (a DP audit's),
    else ``claimed_epsilon``.
    """
    rows = []
    for r in summary.results:
        bound = r.metrics.get("epsilon_lower_bound",
                              r.metrics.get("effective_epsilon_lower_bound"))
        claim = r.metrics.get("claimed_epsilon", claimed_epsilon)
        if bound is not None and claim is not None:
            rows.append((r.target, r.attack, _number(bound), _number(claim)))
    if not rows:
        return []
    return ["### Differential privacy: audited ε beside the claimed ε", "",
            "An audited ε is a lower bound: a claim below it is refuted; one above it is "
            "consistent with this audit, not proven.", "",
            *_table(("Artefact", "Attack", "Audited ε (lower bound)", "Claimed ε"), rows), ""]


def check_claimed_epsilon(value: Any, *, param: str = "claimed_epsilon",
                          func: str = "model_card") -> float | None:
    """``value`` as a float (None kept), or privaudit's error naming ``param`` of ``func``.

    Raises
    ------
    TypeError
        When ``value`` is not a real number (a str, a bool).
    ValueError
        When it is negative, NaN or infinite.
    """
    check_declared(value, (NONE, CLAIMED_EPSILON), param=param, func=func)
    return None if value is None else float(value)


def model_card(report: Any, *, model_name: str | None = None,
               claimed_epsilon: float | None = None, **settings: Any) -> str:
    """The privacy section of a Hugging Face model card, with its YAML metadata.

    Parameters
    ----------
    report : AuditReport, sequence of results, or path-like
        As :func:`~privaudit.integrations.read_audit` reads it (a report folder is read
        from its files).
    model_name : str, optional
        The ``model-index`` name (default: the report's title).
    claimed_epsilon : float, optional
        The ε the model's training claims (DP-SGD), a finite number >= 0: shown beside
        each attack's Clopper-Pearson lower bound on ε (Jagielski et al., "Auditing
        Differentially Private Machine Learning", NeurIPS 2020, section 4).
    **settings
        As :func:`~privaudit.integrations.read_audit`.

    Returns
    -------
    str
        The YAML front matter between ``---`` lines, then the Markdown section.

    Raises
    ------
    TypeError, ValueError
        Naming ``claimed_epsilon`` when it is not a finite real number >= 0.
    """
    import yaml

    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)  # before the audit is read
    summary = read_audit(report, **settings)
    name = model_name or summary.title or "audited model"
    metadata = {"model-index": model_index(summary, name)}
    front = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True)
    if UNPRINTABLE.search(front.replace("\n", "")):  # YAML writes a bidi override raw
        front = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=False)
    body = ["## Privacy audit", "", f"Audited with privaudit: {markdown_escape(name)}.", "",
            "### What was audited", "", *_audited(summary), "",
            "### Verdict", "", *_verdict(summary), "",
            "### Headline numbers", "", *_numbers(summary), "",
            *_epsilons(summary, claimed_epsilon),
            "### Limits of this audit", "", *(f"- {text}" for text in LIMITS)]
    return f"---\n{front}---\n\n" + "\n".join(body) + "\n"


def write_model_card(report: Any, path: str | os.PathLike[str], **options: Any) -> Path:
    """Write :func:`model_card` to ``path`` (atomically); return the path."""
    check_claimed_epsilon(options.get("claimed_epsilon"), func="write_model_card")
    return atomic_write_text(path, model_card(report, **options))
