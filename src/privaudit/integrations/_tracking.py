"""What the trackers log of an audit: metrics, parameters and tags under valid, unique keys.

:func:`tracking_items` turns an :class:`~privaudit.integrations.AuditSummary` into the three
mappings MLflow and W&B both take, so that the two loggers log the same names and values:

- metrics ``<target>/<attack>/<metric>`` (``_low`` / ``_high`` for the interval), one
  prefix per result, made unique (``-2``, ``-3``... after the attack when two results
  share a target and an attack, never a number another result's prefix has; ``baseline/``
  or ``compared/`` before the results that are not the audited artefact's);
- parameters: the report settings (``privaudit.n_bootstrap``...) and each result's
  attack parameters under its prefix;
- tags: the verdict (``privaudit.verdict``, its severity, artefact and sentence), and
  ``privaudit.not_logged`` naming any result without a number to log.

Every result type's numbers are logged: those of its row in the report's table
(:meth:`~privaudit.report.AuditReport.to_frame`), an LLM audit's memorisation results
too (each extraction check's member and held-out means and their difference, with
intervals; the canaries' median exposure per repetition count and their epsilon bound).

Keys keep to MLflow's rules (letters, digits, ``_ - . : /`` and spaces; at most 250
characters): any other character becomes ``_``.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from privaudit.integrations._audit_rows import AuditSummary, ResultMetrics

__all__ = ["TrackingItems", "metric_key", "report_page", "result_prefixes", "tracking_items"]

#: MLflow's limits (mlflow.utils.validation): key length, parameter and tag value lengths.
MAX_KEY_LENGTH = 250
MAX_PARAM_LENGTH = 6000
MAX_TAG_LENGTH = 8000
#: Room left in a key for the metric's own name after the result's prefix.
_PREFIX_LENGTH = 180
#: Outside MLflow's key characters, or a slash (the separator of the parts of a key).
_NOT_IN_KEY = re.compile(r"[^0-9A-Za-z_\-. :]")


class TrackingItems(NamedTuple):
    """What a tracker logs of an audit."""

    #: ``<prefix>/<metric>`` -> value (NaN for an undefined part of a defined metric).
    metrics: dict[str, float]
    #: The report settings and each result's attack parameters, as text.
    params: dict[str, str]
    #: The verdict, the title, privaudit's version and the number of results.
    tags: dict[str, str]


def metric_key(*parts: str) -> str:
    """A valid MLflow key from ``parts`` joined by ``/``: other characters become ``_``.

    A slash inside a part becomes ``_`` too, so that the key has one level per part; a
    part never starts with ``_`` (W&B keeps those for its own keys), an empty part is
    ``unnamed`` and a part of dots only (``.``, ``..``) becomes dashes: MLflow refuses a
    key that a path would resolve to another name (``a/../b``).

    >>> metric_key("model|v2", "loss", "tpr_at_fpr_0.001")
    'model_v2/loss/tpr_at_fpr_0.001'
    >>> metric_key("..", "loss")
    '--/loss'
    """
    # a leading underscore would make W&B take the key for one of its own (``_step``)
    text = "/".join(_NOT_IN_KEY.sub("_", part.strip()).lstrip("_") or "unnamed"
                    for part in parts)
    return cut_key(text, MAX_KEY_LENGTH)


def cut_key(key: str, limit: int) -> str:
    """``key`` cut to ``limit`` characters, still a name MLflow accepts.

    No trailing slash (``a/`` resolves to ``a``) and no part of dots only (``a/..``):
    MLflow's ``path_not_unique`` (mlflow.utils.validation) refuses both.
    """
    text = key[:limit].rstrip("/")
    return "/".join("-" * len(part) if not part.strip(".") else part
                    for part in text.split("/"))


def _prefix_parts(result: ResultMetrics) -> tuple[str, ...]:
    """The parts of a result's prefix, each a valid key part: [role], target, attack."""
    role = (result.role,) if result.role != "result" else ()
    return tuple(metric_key(part) for part in (*role, result.target, result.attack))


def _prefix(parts: tuple[str, ...], suffix: str = "") -> str:
    """``parts`` joined, ``suffix`` after the attack, in at most ``_PREFIX_LENGTH`` characters.

    The target is cut first: the attack is what tells apart the results on one target, so
    it keeps its whole name (and its suffix) unless it alone would take over half the room.
    """
    *head, target, attack = parts
    room = _PREFIX_LENGTH - sum(len(part) + 1 for part in head) - 1  # target and attack
    keep = min(len(attack) + len(suffix), max(room - len(target), room // 2))
    attack = attack[:keep - len(suffix)] + suffix
    return cut_key("/".join((*head, target[:room - len(attack)], attack)), _PREFIX_LENGTH)


def result_prefixes(results: tuple[ResultMetrics, ...]) -> list[str]:
    """One key prefix per result, ``[<role>/]<target>/<attack>``, unique within the audit.

    A result keeps its own prefix unless an earlier result has it; then its attack gets
    ``-2``, ``-3``..., the first number that makes a prefix no other result has, its own
    included: after two ``model/loss`` results and one ``model/loss-2``, the second
    ``model/loss`` is ``model/loss-3``. Two results' metrics never share a key.
    """
    parts = [_prefix_parts(result) for result in results]
    own = [_prefix(part) for part in parts]
    reserved = set(own)  # each result's own prefix, kept for it
    used: set[str] = set()
    out = []
    for part, prefix in zip(parts, own, strict=True):
        number = 1
        while prefix in used or (number > 1 and prefix in reserved):
            number += 1
            prefix = _prefix(part, suffix=f"-{number}")
        used.add(prefix)
        out.append(prefix)
    return out


def _under(prefix: str, name: str, taken: Mapping[str, Any]) -> str:
    """The key of ``name`` under a result's ``prefix`` (already a valid key), not in ``taken``.

    A name cut to MLflow's 250 characters may become another's: it then gets ``-2``,
    ``-3``... rather than overwrite that value.
    """
    key = out = cut_key(f"{prefix}/{metric_key(name)}", MAX_KEY_LENGTH)
    number = 1
    while out in taken:
        number += 1
        out = cut_key(f"{key[:MAX_KEY_LENGTH - len(str(number)) - 1]}-{number}",
                      MAX_KEY_LENGTH)
    return out


def _text(value: Any, limit: int) -> str:
    """A parameter or tag value as text, cut to ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, default=str,
                                                           sort_keys=True)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def tracking_items(summary: AuditSummary) -> TrackingItems:
    """The metrics, parameters and tags a tracker logs for ``summary``."""
    from privaudit._version import __version__

    metrics: dict[str, float] = {}
    params = {f"privaudit.{name}": _text(value, MAX_PARAM_LENGTH)
              for name, value in summary.settings.items()}
    prefixes = result_prefixes(summary.results)
    for result, prefix in zip(summary.results, prefixes, strict=True):
        for name, value in result.metrics.items():
            metrics[_under(prefix, name, metrics)] = value
        for name, value in result.parameters.items():
            params[_under(prefix, name, params)] = _text(value, MAX_PARAM_LENGTH)
    tags = {"privaudit.version": __version__, "privaudit.n_results": str(len(summary.results))}
    unlogged = [prefix for result, prefix in zip(summary.results, prefixes, strict=True)
                if not result.metrics]
    if unlogged:  # named, never dropped silently
        tags["privaudit.not_logged"] = _text(
            {"results": unlogged, "reason": "no number in the report's table"},
            MAX_TAG_LENGTH)
    if summary.title:
        tags["privaudit.title"] = _text(summary.title, MAX_TAG_LENGTH)
    verdict = summary.verdict
    if verdict is not None:
        tags.update({"privaudit.verdict": verdict.label,
                     "privaudit.verdict.severity": verdict.severity,
                     "privaudit.verdict.artefact": _text(verdict.artefact, MAX_TAG_LENGTH),
                     "privaudit.verdict.text": _text(verdict.text, MAX_TAG_LENGTH)})
    return TrackingItems(metrics=metrics, params=params, tags=tags)


@contextmanager
def report_page(summary: AuditSummary, *, html: bool, func: str) -> Iterator[Path | None]:
    """The report page a tracker attaches, for the time of the ``with`` block.

    A report folder's own ``index.html``; for an audit read in memory, its page
    (:attr:`AuditSummary.page`: the report of the numbers logged, with their settings and
    seed, so nothing is bootstrapped again) rendered into a temporary folder, removed
    afterwards. Rendering draws the page's figures (about 0.3 s of CPU per result):
    ``html=False`` skips it. None when ``html`` is False or there is no page.

    Raises
    ------
    ImportError
        When the page needs the report extra (matplotlib, jinja2) and it is missing.
    """
    if not html or summary.html is not None or summary.page is None:
        yield summary.html if html else None
        return
    with tempfile.TemporaryDirectory(prefix="privaudit-report-") as folder:
        try:
            path = summary.page.write(folder)
        except ImportError as exc:  # the report extra is optional; so is the page
            raise ImportError(f"{exc} (or log without the page: {func}(..., html=False))"
                              ) from exc
        yield path
