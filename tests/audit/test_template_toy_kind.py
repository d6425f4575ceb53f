"""Proof of the audit template: a whole new audit kind in this one file.

A toy kind ("a lookup table leaks whether a record is in it") declares its settings, one
attack and a baseline; :func:`drive` does the rest: run key, reuse of saved results,
resumption after a crash, the baseline check, the typed report and the HTML page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from privaudit._validation import NAMES, NONE, RealRule
from privaudit.audits import RandomGuessBaseline
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions, drive
from privaudit.report import AuditReport
from privaudit.results import AttackResult, load_all_results

# This module reads the reports' text, tables and files, never their images: figures
# are counted but not drawn (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("figures_not_drawn")


@dataclass(frozen=True)
class LookupSettings(AuditSettings):
    """How noisy the lookup attack's scores are, and which attacks run."""

    noise: float = 0.1
    attacks: tuple[str, ...] | None = None

    CONSTRAINTS: ClassVar[dict[str, list[Any]]] = {
        "noise": [RealRule(0.0, 10.0, closed="left")], "attacks": [NONE, NAMES]}
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({"attacks"})


class Crash(RuntimeError):
    """Raised by the toy attack to simulate a crash mid-audit."""


class LookupAudit(AuditKind):
    """Audits a set of stored keys: members are the keys it holds."""

    kind, func, Settings = "lookup", "audit_lookup", LookupSettings
    ATTACKS: ClassVar[tuple[str, ...]] = ("lookup", "lookup-noisy")
    crash_on: ClassVar[set[str]] = set()
    runs: ClassVar[list[str]] = []

    def __init__(self, table: set[int], records: np.ndarray, settings: LookupSettings,
                 options: RunOptions) -> None:
        super().__init__(settings, options)
        self.table, self.records = table, records
        self._labels = np.array([int(r in table) for r in records], dtype=np.int8)

    @property
    def labels(self) -> np.ndarray:
        return self._labels

    def target_name(self) -> str:
        return "table"

    def identity(self) -> tuple[Any, ...]:
        return (sorted(self.table), self.records)

    def baseline(self) -> RandomGuessBaseline:
        return RandomGuessBaseline()

    def plan(self) -> list[Job]:
        names = self.settings.attacks or self.ATTACKS
        return [Job(name, {}, (), order) for order, name in enumerate(names)]

    def run_job(self, job: Job, run: Any) -> AttackResult:
        if job.name in self.crash_on:
            raise Crash(job.name)
        self.runs.append(job.name)
        rng = np.random.default_rng(self.options.random_state)
        noise = self.settings.noise * (job.name == "lookup-noisy")
        scores = self._labels + noise * rng.normal(size=self._labels.size)
        return AttackResult(labels=self._labels, scores=scores, target="table",
                            attack=job.name)


def audit_lookup(table: set[int], records: Any, *, noise: float = 0.1,
                 attacks: Any = None, **options: Any) -> AuditReport:
    """The thin keyword wrapper every audit kind is."""
    return drive(LookupAudit(table, np.asarray(records),
                             LookupSettings(noise=noise, attacks=attacks),
                             RunOptions.checked("audit_lookup", **options)))


TABLE, RECORDS = set(range(0, 60, 2)), np.arange(60)


def test_the_toy_kind_runs_end_to_end_into_a_typed_report(tmp_path):
    LookupAudit.runs.clear()
    report = audit_lookup(TABLE, RECORDS, results_dir=tmp_path / "r")
    assert isinstance(report, AuditReport) and len(report) == 2
    assert [r.attack for r in report] == ["lookup", "lookup-noisy"]
    assert all(r.audit.kind == "lookup" and r.audit.key for r in report)
    assert report[0].metrics(n_bootstrap=0)["auc"]["value"] == 1.0
    assert report[0].audit.baseline is not None  # the baseline check ran
    page = report.report(tmp_path / "page", n_bootstrap=20)
    assert (tmp_path / "page" / "index.html").is_file() and page is not None


def test_reuse_then_resume_after_a_crash(tmp_path):
    LookupAudit.runs.clear()
    LookupAudit.crash_on = {"lookup-noisy"}
    try:
        with pytest.raises(Crash):
            audit_lookup(TABLE, RECORDS, results_dir=tmp_path)
    finally:
        LookupAudit.crash_on = set()
    assert [r.attack for r in load_all_results(tmp_path)] == ["lookup"]  # saved at once
    again = audit_lookup(TABLE, RECORDS, results_dir=tmp_path)
    assert LookupAudit.runs == ["lookup", "lookup-noisy"]  # "lookup" was reused
    LookupAudit.runs.clear()
    third = audit_lookup(TABLE, RECORDS, results_dir=tmp_path, attacks=("lookup-noisy",))
    assert LookupAudit.runs == []  # NOT_IN_KEY: another attack list reuses results
    np.testing.assert_array_equal(third[0].scores, again[1].scores)


def test_a_setting_in_the_key_recomputes(tmp_path):
    LookupAudit.runs.clear()
    audit_lookup(TABLE, RECORDS, results_dir=tmp_path)
    audit_lookup(TABLE, RECORDS, results_dir=tmp_path, noise=0.5)
    audit_lookup(TABLE, RECORDS, results_dir=tmp_path, random_state=1)
    assert LookupAudit.runs == ["lookup", "lookup-noisy"] * 3


@pytest.mark.parametrize(("kwargs", "message", "error"), [
    ({"noise": -1.0}, r"'noise' parameter of audit_lookup must be a real number in \[0, 10\)",
     ValueError),
    ({"noise": "x"}, r"'noise' parameter of audit_lookup", TypeError),
    ({"attacks": "lookup"}, r"'attacks' parameter of audit_lookup must be None or a non-empty",
     TypeError),
    ({"random_state": -1}, r"'random_state' parameter of audit_lookup", ValueError),
    ({"random_state": "abc"}, r"'random_state' parameter of audit_lookup", TypeError),
    ({"executor": "bogus"}, r"'executor' parameter of audit_lookup", ValueError),
    ({"n_jobs": 0}, r"'n_jobs' parameter of audit_lookup", ValueError),
    ({"progress": 3}, r"'progress' parameter of audit_lookup", TypeError),
])
def test_every_setting_and_option_is_checked_before_any_work(kwargs, message, error):
    LookupAudit.runs.clear()
    with pytest.raises(error, match=message):
        audit_lookup(TABLE, RECORDS, **kwargs)
    assert LookupAudit.runs == []


def test_a_setting_without_a_declared_constraint_is_refused():
    @dataclass(frozen=True)
    class Loose(AuditSettings):
        anything: Any = None

    with pytest.raises(TypeError, match="declares no constraint"):
        Loose().check("audit_loose")


def test_a_result_saved_under_an_earlier_key_scheme_is_recomputed_with_one_warning(tmp_path):
    import json
    import warnings

    from privaudit.exceptions import StaleResultWarning
    from privaudit.results import ResultsStore

    first = audit_lookup(TABLE, RECORDS, results_dir=tmp_path)
    assert all(r.audit.key.startswith("t1:") for r in first)
    store = ResultsStore(tmp_path)
    for r in first:  # rewrite each saved result as an earlier release keyed it
        r.audit.key = r.audit.key.removeprefix("t1:")
        store.save(r, attack=r.attack)
    LookupAudit.runs.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = audit_lookup(TABLE, RECORDS, results_dir=tmp_path)
    stale = [w for w in caught if issubclass(w.category, StaleResultWarning)]
    assert LookupAudit.runs == ["lookup", "lookup-noisy"] and len(stale) == 1
    assert "earlier release" in str(stale[0].message)
    np.testing.assert_array_equal(again[1].scores, first[1].scores)
    with warnings.catch_warnings():  # another audit's result: recomputed silently
        warnings.simplefilter("error", StaleResultWarning)
        audit_lookup(TABLE, RECORDS, results_dir=tmp_path, noise=0.5)
    saved = [json.loads(p.read_text()) for p in tmp_path.rglob("result.json")]
    assert saved and all(d["audit"]["key"].startswith("t1:") for d in saved)
