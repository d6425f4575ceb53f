"""``AuditRun``: what makes every audit trustworthy, written once for every audit kind.

An audit (of a model, an LLM, a synthetic table, an unlearned model...) plans its attacks
and runs them; the run object does the rest, the same way for every kind:

- the **run key**: a digest of the target's fingerprint, the data, the seed and the
  parameters, so that a saved result is reused only by the same audit;
- **reuse** of a finished result from a :class:`~privaudit.results.ResultsStore` (a
  damaged one is recomputed, with a :class:`~privaudit.results.DamagedResultWarning`);
- **finish**: provenance stamp -> baseline check -> enrichers (slices...) -> atomic save;
- **progress** messages and **seeding** of the attacks.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from privaudit._digest import run_digest as digest
from privaudit._progress import Progress, as_progress
from privaudit.audits._baselines import Baseline

__all__ = ["AuditRun", "Enricher", "digest"]


class Enricher(Protocol):
    """Adds entries to a finished result (e.g. its slices); returns whether it changed it.

    An enricher never queries the target: it reads what the audit already has, and may be
    called again on a result reused from the store (it then adds only what is missing).
    """

    def __call__(self, result: Any) -> bool: ...


class AuditRun:
    """One audit's run: its key, its saved results, how each result is finished.

    Parameters
    ----------
    func : str
        The audit function, for messages (``"audit_model"``).
    target_name : str
        The audited target's name: results are filed under it.
    identity : tuple
        What identifies the audit apart from each attack: the target's fingerprint, the
        data's, the labels, the ids, the seed... (digested into :attr:`base_key`).
    random_state : int
        The audit's seed: given to attacks that take one and to the baseline's bootstrap.
    store : ResultsStore, optional
        Where finished results are saved and found again (``None``: nothing is saved).
    baseline : Baseline, optional
        What each result is compared with (``None``: no comparison).
    enrichers : sequence of Enricher
        Run on every finished result before it is saved.
    progress : None, bool, callable(str) or Progress
        Where progress goes.
    dataset : str
        Dataset name stamped on results that carry none.
    answers : callable, optional
        Called, only when the store holds a result, to identify a target whose
        fingerprint is unknown by its answers (an array put into every attack's key).
    kind : str, optional
        The audit kind stamped on results (``result.audit.kind``), for the report's
        sections; default ``func`` without its ``audit_`` prefix (``"model"``, ``"llm"``).
    key_scheme : str, optional
        Prefixed to every key (``"t1:<digest>"``): the audit template's keys differ from
        those earlier releases saved, and a saved result with an unprefixed key that
        does not match is recomputed with one
        :class:`~privaudit.exceptions.StaleResultWarning` instead of silently.

    Examples
    --------
    >>> import numpy as np
    >>> from privaudit.audits import AuditRun
    >>> from privaudit.results import AttackResult
    >>> run = AuditRun(func="demo", target_name="m", identity=("m", 1), random_state=0,
    ...                baseline=None)
    >>> r = run.finish("loss", (), AttackResult(labels=np.array([1, 0]),
    ...                                         scores=np.array([0.9, 0.1])))
    >>> r.audit.key == run.key("loss")
    True
    """

    def __init__(
        self, *, func: str, target_name: str, identity: tuple, random_state: int,
        store: Any = None, baseline: Baseline | None = None,
        enrichers: Sequence[Enricher] = (), progress: Any = None, dataset: str = "",
        answers: Callable[[], Any] | None = None, kind: str | None = None,
        key_scheme: str | None = None,
    ) -> None:
        self.func, self.target_name, self.random_state = func, target_name, random_state
        self.store, self.baseline, self.enrichers = store, baseline, list(enrichers)
        self.progress: Progress = as_progress(progress, func=func)
        self.dataset = dataset
        self.base_key = digest(*identity)
        self.kind = kind or func.removeprefix("audit_")
        self._step: Any = None
        self._answers = answers
        self.key_scheme = key_scheme
        self._stale_warned = False

    @contextmanager
    def tracking(self, n_attacks: int, description: str = "Attacks") -> Iterator[None]:
        """A progress bar over the run's attacks: each reused or finished one advances it."""
        with self.progress.task(f"{description} on {self.target_name}",
                                total=n_attacks) as step:
            self._step = step
            try:
                yield
            finally:
                self._step = None

    def _advance(self) -> None:
        if self._step is not None:
            self._step.advance()

    def say(self, message: str) -> None:
        """Send one progress message."""
        self.progress.message(message)

    def seed(self, attack: Any) -> Any:
        """Give ``attack`` the audit's seed when it takes one and has none; return it."""
        if getattr(attack, "random_state", 0) is None:
            attack.random_state = self.random_state
        return attack

    def key(self, attack: str, *parts: Any) -> str:
        """The key of one attack's result: the run's, the attack's name and ``parts``."""
        answers = None
        if self._answers is not None and self.store is not None:
            answers = np.asarray(self._answers())
        key = digest(self.base_key, attack, *parts, answers)
        return key if self.key_scheme is None else f"{self.key_scheme}:{key}"

    def reuse(self, attack: str, parts: tuple,
              labels: np.ndarray | Callable[[Any], bool]) -> Any:
        """The finished result of ``attack`` in the store if it can be reused, else None.

        Reused when its ``audit_key`` is :meth:`key` (computed only when a result is
        there) and its labels are the audited records' (``labels`` may instead be a
        function that says whether a saved result is consistent with the audited records,
        for results that leave some records out). A damaged one (not JSON, keys
        missing, scores truncated or edited, other labels) is treated as missing, with a
        :class:`~privaudit.results.DamagedResultWarning`: it is recomputed and
        overwritten instead of making every later audit fail until deleted by hand.
        """
        from privaudit.results import DamagedResultWarning, ResultFileError

        if self.store is None or not self.store.has(self.target_name, attack):
            return None
        path = self.store.path_for(self.target_name, attack)
        try:
            saved = self.store.load(self.target_name, attack)
        except ResultFileError as exc:
            reason = str(exc)
        else:
            if saved.audit.key != self.key(attack, *parts):
                self._warn_if_stale(saved.audit.key, path)
                return None  # another audit's result: silently recomputed
            if (labels(saved) if callable(labels) else np.array_equal(saved.labels, labels)):
                self.say(f"{attack}: reusing the finished result in {path}")
                self._advance()
                return saved
            reason = "its labels are not those of the audited records"
        warnings.warn(
            f"The saved result in {path} is damaged ({reason}); it is treated as missing: "
            "recomputed and overwritten.", DamagedResultWarning, stacklevel=3,
        )
        return None

    def _warn_if_stale(self, saved_key: Any, path: Any) -> None:
        """One warning per run when ``saved_key`` predates this run's key scheme."""
        if (self.key_scheme is None or self._stale_warned
                or (isinstance(saved_key, str) and ":" in saved_key)):
            return
        self._stale_warned = True
        from privaudit.exceptions import StaleResultWarning

        warnings.warn(
            f"{self.func}: results saved in {Path(path).parent} by an earlier release of "
            "privaudit carry run keys of an older scheme; they are recomputed and "
            "overwritten (they still load for reports).", StaleResultWarning, stacklevel=4)

    def finish(self, attack: str, parts: tuple, result: Any) -> Any:
        """Stamp provenance, check the baseline, enrich, save atomically; return ``result``.

        An attack no better than its baseline says so: a warning (e.g.
        :class:`~privaudit.exceptions.BaselineWarning`) and flags saved with the result.
        """
        result.audit.key = self.key(attack, *parts)
        result.audit.kind = self.kind
        if not result.dataset and self.dataset:
            result.dataset = self.dataset
        if self.baseline is not None:
            result.audit.baseline = _checked(self.baseline,
                                             self.baseline.check(result, self.random_state))
        self.enrich(attack, result)
        if self.store is not None:
            self.store.save(result, attack=attack)
        self._advance()
        return result

    def enrich(self, attack: str, result: Any, *, save: bool = False) -> bool:
        """Run the enrichers on ``result``; with ``save``, save it again if one changed it.

        Used on results reused from the store or finished before what an enricher reads
        was at hand (slices of an attack that queried the target itself).
        """
        changed = False
        for enricher in self.enrichers:
            changed = bool(enricher(result)) or changed
        if changed and save and self.store is not None:
            self.store.save(result, attack=attack)
        return changed


def _checked(baseline: Any, check: Any) -> Any:
    """``check`` if it is what the Baseline protocol promises, else a TypeError naming it."""
    from privaudit.results import BaselineCheck

    if check is not None and not isinstance(check, BaselineCheck):
        raise TypeError(
            f"The baseline {baseline!r} returned {type(check).__name__} from check(); "
            "expected a privaudit.results.BaselineCheck or None."
        )
    return check
