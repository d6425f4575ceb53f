"""Linkability and inference, as anonymeter defines them, on the exact neighbour engine.

**Linkability**: the attacker holds two pieces of a target record, the columns
``aux_cols[0]`` from one source and ``aux_cols[1]`` from another, and wants to know whether
they belong to the same person. For each piece it finds the ``n_neighbors`` nearest
synthetic records (on that piece's columns); the link succeeds when the two neighbour sets
share a synthetic record. Baseline: two random sets of ``n_neighbors`` synthetic records.

**Inference**: the attacker knows ``aux_cols`` of a target and guesses its ``secret`` from
the nearest synthetic record (on ``aux_cols``). A guess is right when equal (a
categorical secret) or within a relative ``tolerance`` of the truth (a numeric one).
Baseline: the secret of a random synthetic record.

Both attack ``n_attacks`` original records and as many control records, drawn without
replacement with ``random_state`` (anonymeter draws them unseeded). Exact ties between
synthetic neighbours are broken at random, independently per target and per search (each
its own seed drawn from ``random_state``), never by position: two searches favouring the
same positions would link by accident, and one order shared by all targets would give
every target the same pick among tied rows, so that on a table of copies all targets
were linked or none (one draw counted as ``n_attacks``). Neighbours come from
:func:`~privaudit.synthetic.nearest_neighbors`: Gower's distance with the numeric ranges
of the two tables compared, as anonymeter's; anonymeter lets a missing number turn the
distance into NaN, here a missing value against a value counts as a full mismatch (see
the engine).

Differences from anonymeter, on purpose: seeded draws; for a numeric secret, the guess is
right when ``|guess - secret| <= tolerance * |guess|`` (anonymeter divides by the signed
guess, so every negative guess passes its test); ties broken per target (anonymeter's
``argsort`` puts tied rows in one order for every target and both pieces: on a table of
one repeated row it links all 200 of 200 targets and 200 of 200 controls, a risk it
cannot estimate). Without ties the neighbours are the same.

References
----------
.. [1] Giomi, M. et al. "A Unified Framework for Quantifying Privacy Risk in Synthetic
   Data." PoPETs 2023.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privaudit._validation import check_fraction, check_random_state, param_error, warn_degenerate
from privaudit.synthetic._neighbors import nearest_neighbors, worth_workers
from privaudit.synthetic._risk_counts import (
    Counts,
    PrivacyRisk,
    check_attack_count,
    check_frame,
    check_jobs,
)

__all__ = ["InferenceEvaluator", "LinkabilityEvaluator", "inference_guesses_correct"]

#: A synthetic table is (almost) copies on a column set, and warned about, when it has one
#: distinct row there, or at most this share of its rows distinct AND fewer distinct rows
#: than the original (a few categories on both sides is the data, not a collapsed table).
COLLAPSED_SHARE = 0.01


def _columns(value: Any, frame: pd.DataFrame, param: str, func: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise param_error(param, func, "a non-empty list of column names", value,
                          error=TypeError)
    missing = [c for c in value if c not in frame.columns]
    if missing:
        raise param_error(param, func, f"columns of the tables (among {list(frame.columns)[:8]})",
                          missing)
    return list(value)


class _Evaluator:
    """Shared state: the tables, the seed, the counts once evaluated."""

    _FUNC = ""
    #: Fewer records than n_attacks: attack them all (anonymeter's inference) or refuse.
    _CLAMP = False

    def __init__(self, ori: pd.DataFrame, syn: pd.DataFrame, control: Any,
                 n_attacks: Any, random_state: Any, executor: Any, n_jobs: Any) -> None:
        self.ori = check_frame(ori, "ori", self._FUNC).reset_index(drop=True)
        self.syn = check_frame(syn, "syn", self._FUNC).reset_index(drop=True)
        self.control = check_frame(control, "control", self._FUNC, allow_none=True)
        if self.control is not None:
            self.control = self.control.reset_index(drop=True)
        limits = [("ori", len(self.ori))] + (
            [("control", len(self.control))] if self.control is not None else [])
        n_attacks = len(self.ori) if n_attacks is None else n_attacks
        if self._CLAMP and isinstance(n_attacks, int) and not isinstance(n_attacks, bool):
            n_attacks = min(n_attacks, *(rows for _, rows in limits))
        self.n_attacks = check_attack_count(n_attacks, self._FUNC, *limits)
        self.random_state, self.executor = random_state, executor
        self.n_jobs = check_jobs(n_jobs, self._FUNC)
        self._counts: Counts | None = None

    def _targets(self, table: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        rows = np.sort(rng.choice(len(table), self.n_attacks, replace=False))
        return table.iloc[rows].reset_index(drop=True)

    def _warn_collapsed(self, column_sets: dict[str, list[str]]) -> None:
        """Warn for each column set on which the synthetic rows are (almost) all copies.

        There every target is about as close to every synthetic row: its neighbours are a
        random pick among copies (ties are broken at random per target), so the attack is
        close to its baseline and a risk near 0 describes a collapsed table (a generator
        that outputs one record), not a private useful one.
        """
        for label, columns in column_sets.items():
            distinct = len(self.syn[columns].drop_duplicates())
            original = len(self.ori[columns].drop_duplicates())
            if distinct == 1 or (distinct <= COLLAPSED_SHARE * len(self.syn)
                                 and distinct < original):
                warn_degenerate(
                    f"{self._FUNC}: the synthetic table has {distinct} distinct row(s) on "
                    f"{label} {columns} ({len(self.syn)} rows; the original has "
                    f"{original} distinct): each target's nearest synthetic rows there are "
                    "a random pick among copies, so the attack is close to its random "
                    "baseline; a risk near 0 says that the synthetic table is degenerate, "
                    "not that a useful one is private.", stacklevel=4)

    def _neighbours(self, targets: pd.DataFrame, columns: list[str], k: int,
                    rng: np.random.Generator) -> np.ndarray:
        """The ``k`` nearest synthetic rows of each target, ties broken at random per target.

        Survey-like tables tie often (a table of copies: every row). By the lowest
        position, two searches would share neighbours by that alone; by one shuffle per
        search, every target would take the same pick among the tied rows, and the rates
        of [1]_ (successes of independent attacks) would count one draw ``n_attacks``
        times. So each target draws its own tie-break: a seed from ``rng`` per target and
        per search, read by the engine whatever its chunks or workers. Without ties the
        neighbours are the exact ones, whatever the seeds.
        """
        seeds = rng.integers(0, 2**64, size=len(targets), dtype=np.uint64)
        runner = getattr(self, "_runner", None)
        return nearest_neighbors(targets[columns], self.syn[columns], n_neighbors=k,
                                 executor=runner, tie_seeds=seeds)[1]

    @contextlib.contextmanager
    def _workers(self, n_searches: int) -> Iterator[None]:
        """One set of workers for every search of an evaluation, or none when it won't pay.

        An executor given by the caller is used as is. Otherwise ``n_jobs`` workers start
        once (not once per search) and only for at least
        :data:`~privaudit.synthetic._neighbors.PARALLEL_MIN_DISTANCES` distances in all;
        below that the searches run in this process, where BLAS uses every core.
        """
        total = n_searches * self.n_attacks * len(self.syn)
        if not worth_workers(total, self.executor, self.n_jobs):
            self._runner = None
            yield
            return
        if self.executor is not None and not isinstance(self.executor, str):
            self._runner = self.executor
            yield
            return
        from privaudit.training import get_executor

        runner = get_executor(self.executor or "local", n_jobs=self.n_jobs, func=self._FUNC)
        self._runner = runner
        try:
            yield
        finally:
            self._runner = None
            close = getattr(runner, "close", None) or getattr(runner, "shutdown", None)
            if close is not None:
                close()

    def _evaluated(self) -> Counts:
        if self._counts is None:
            raise RuntimeError(f"{self._FUNC}: call evaluate() first.")
        return self._counts

    def results(self, confidence_level: float = 0.95) -> Counts:
        """The counts (attacks, successes, baseline and control successes).

        Read as anonymeter's ``EvaluationResults``: ``attack_rate``, ``control_rate``,
        ``risk(baseline=...)`` at ``confidence_level``.
        """
        return self._evaluated().at_level(confidence_level)

    def risk(self, confidence_level: float = 0.95, baseline: bool = False) -> PrivacyRisk:
        """The risk (anonymeter's definition) with its interval (``.value``, ``.ci``)."""
        return self.results(confidence_level).risk(baseline)

    def _jobs(self, n_jobs: Any) -> None:
        """``evaluate(n_jobs=...)``, as anonymeter's (-2: all cores but one)."""
        if n_jobs is not None:
            self.n_jobs = check_jobs(n_jobs, f"{self._FUNC}.evaluate")


class LinkabilityEvaluator(_Evaluator):
    """anonymeter's linkability evaluator on privaudit's exact, seeded neighbour search.

    Parameters
    ----------
    ori, syn : DataFrame
        The original (training) records and the synthetic ones.
    aux_cols : (list of str, list of str)
        The two column sets the attacker holds from two sources.
    n_attacks : int or None, default=500
        Target records (None: every original record).
    n_neighbors : int, default=1
        Synthetic neighbours of each piece searched for a common one.
    control : DataFrame, optional
        Records the generator never saw, attacked the same way.
    random_state : None, int or numpy Generator
        Seeds the targets and the baseline.
    executor, n_jobs
        Where the neighbour scans run (see :func:`~privaudit.synthetic.nearest_neighbors`).
    """

    _FUNC = "LinkabilityEvaluator"

    def __init__(self, ori: pd.DataFrame, syn: pd.DataFrame,
                 aux_cols: tuple[Sequence[str], Sequence[str]], n_attacks: int | None = 500,
                 n_neighbors: int = 1, control: pd.DataFrame | None = None,
                 random_state: Any = None, executor: Any = None,
                 n_jobs: int | None = None) -> None:
        super().__init__(ori, syn, control, n_attacks, random_state, executor, n_jobs)
        if not isinstance(aux_cols, (tuple, list)) or len(aux_cols) != 2:
            raise param_error("aux_cols", self._FUNC, "two lists of column names",
                              aux_cols, error=TypeError)
        self.aux_cols = tuple(_columns(a, self.ori, "aux_cols", self._FUNC) for a in aux_cols)
        if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, int) or not (
                1 <= n_neighbors <= len(self.syn)):
            raise param_error("n_neighbors", self._FUNC, "an integer from 1 to the "
                              f"synthetic table's {len(self.syn)} row(s) (the neighbours "
                              "searched per record)", n_neighbors)
        self.n_neighbors = n_neighbors

    def evaluate(self, n_jobs: int | None = None,
                 n_neighbors: int | None = None) -> LinkabilityEvaluator:
        """Search both pieces' neighbours for the original and control targets.

        ``n_jobs`` (anonymeter's argument: -1 every core, -2 all but one) overrides the
        constructor's; the counts are the same whatever it is.
        """
        self._jobs(n_jobs)
        self._warn_collapsed({f"aux_cols[{i}]": list(c) for i, c in enumerate(self.aux_cols)})
        rng = check_random_state(self.random_state, func=self._FUNC)
        k = self.n_neighbors
        with self._workers(2 * (1 + (self.control is not None))):
            self._links = {"ori": self._attack(self._targets(self.ori, rng), k, rng)}
            if self.control is not None:
                self._links["control"] = self._attack(self._targets(self.control, rng), k,
                                                      rng)
        self._links["baseline"] = tuple(
            np.array([rng.choice(len(self.syn), k, replace=False)
                      for _ in range(self.n_attacks)]) for _ in range(2))
        self._counts = self._count(n_neighbors or k)
        return self

    def _attack(self, targets: pd.DataFrame, k: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return tuple(self._neighbours(targets, list(cols), k, rng) for cols in self.aux_cols)

    def _count(self, k: int) -> Counts:
        def linked(pair: tuple[np.ndarray, np.ndarray]) -> int:
            a, b = pair[0][:, :k], pair[1][:, :k]
            return int((a[:, :, None] == b[:, None, :]).any(axis=(1, 2)).sum())

        control = self._links.get("control")
        return Counts(self.n_attacks, linked(self._links["ori"]),
                      linked(self._links["baseline"]),
                      None if control is None else linked(control),
                      extra={"n_neighbors": k, "aux_cols": [list(a) for a in self.aux_cols]})

    def results(self, confidence_level: float = 0.95,
                n_neighbors: int | None = None) -> Counts:
        """The counts, for the first ``n_neighbors`` neighbours (at most the evaluated)."""
        self._evaluated()
        if n_neighbors is None:
            return self._counts.at_level(confidence_level)  # type: ignore[union-attr]
        if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, int) or not (
                1 <= n_neighbors <= self.n_neighbors):
            raise param_error("n_neighbors", f"{self._FUNC}.results",
                              f"an integer in [1, {self.n_neighbors}] (the evaluated ones)",
                              n_neighbors)
        return self._count(n_neighbors).at_level(confidence_level)

    def risk(self, confidence_level: float = 0.95, baseline: bool = False,
             n_neighbors: int | None = None) -> PrivacyRisk:
        """The risk for the first ``n_neighbors`` neighbours (anonymeter's signature)."""
        return self.results(confidence_level, n_neighbors).risk(baseline)


def inference_guesses_correct(guesses: np.ndarray, secrets: np.ndarray, regression: bool,
                              tolerance: float = 0.05) -> np.ndarray:
    """Which guesses are right: equal, or within ``tolerance`` relative (numeric secrets).

    Two missing values agree. For numbers: ``|guess - secret| <= tolerance * |guess|``.
    """
    guesses, secrets = np.asarray(guesses, dtype=object), np.asarray(secrets, dtype=object)
    both_missing = pd.isna(guesses) & pd.isna(secrets)
    if regression:
        g = pd.to_numeric(pd.Series(guesses), errors="coerce").to_numpy(dtype=np.float64)
        s = pd.to_numeric(pd.Series(secrets), errors="coerce").to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            right = np.abs(g - s) <= tolerance * np.abs(g)
    else:
        right = np.array([a == b for a, b in zip(guesses, secrets, strict=True)], dtype=bool)
    return both_missing | right


class InferenceEvaluator(_Evaluator):
    """anonymeter's inference evaluator on privaudit's exact, seeded neighbour search.

    Parameters
    ----------
    ori, syn : DataFrame
        The original (training) records and the synthetic ones.
    aux_cols : list of str
        Columns the attacker knows of each target.
    secret : str
        The column it guesses.
    regression : bool, optional
        Numeric secret (guesses right within ``tolerance``); default: whether the secret's
        dtype is numeric, as anonymeter decides.
    n_attacks : int, default=500
        Target records (at most the rows of ``ori`` and ``control``: fewer rows, all are
        attacked, as anonymeter's).
    control : DataFrame, optional
        Records the generator never saw, attacked the same way.
    inference_model : object with ``predict(frame) -> Series``, optional
        anonymeter's custom predictor: it guesses the secret from each target's row
        instead of the nearest synthetic record (it is given the synthetic data by its
        maker, as in anonymeter).
    tolerance : float, default=0.05
        Relative tolerance of a numeric guess.
    random_state : None, int or numpy Generator
        Seeds the targets and the baseline's guesses.
    executor, n_jobs
        Where the neighbour scans run.
    """

    _FUNC = "InferenceEvaluator"
    _CLAMP = True

    def __init__(self, ori: pd.DataFrame, syn: pd.DataFrame, aux_cols: Sequence[str],
                 secret: str, regression: bool | None = None, n_attacks: int = 500,
                 control: pd.DataFrame | None = None, inference_model: Any = None,
                 tolerance: float = 0.05, random_state: Any = None, executor: Any = None,
                 n_jobs: int | None = None) -> None:
        super().__init__(ori, syn, control, n_attacks, random_state, executor, n_jobs)
        if inference_model is not None and not callable(getattr(inference_model, "predict",
                                                                None)):
            raise param_error("inference_model", self._FUNC, "None or an object with "
                              "predict(frame) -> Series (anonymeter's InferencePredictor)",
                              f"<{type(inference_model).__name__}>", error=TypeError)
        self.inference_model = inference_model
        if not isinstance(secret, str) or secret not in self.ori.columns:
            raise param_error("secret", self._FUNC, "one column name of the tables", secret)
        self.secret = secret
        self.aux_cols = _columns(aux_cols, self.ori, "aux_cols", self._FUNC)
        if secret in self.aux_cols:
            raise param_error("aux_cols", self._FUNC, f"columns other than the secret "
                              f"{secret!r}", self.aux_cols)
        self.regression = (pd.api.types.is_numeric_dtype(self.ori[secret])
                           and not pd.api.types.is_bool_dtype(self.ori[secret])
                           if regression is None else bool(regression))
        self.tolerance = check_fraction(tolerance, param="tolerance", func=self._FUNC)

    def evaluate(self, n_jobs: int | None = None) -> InferenceEvaluator:
        """Guess the secret of the original and control targets, and the baseline's.

        ``n_jobs`` (anonymeter's argument: -1 every core, -2 all but one) overrides the
        constructor's; the counts are the same whatever it is.
        """
        self._jobs(n_jobs)
        if self.inference_model is None:  # a custom model's guesses need no neighbours
            self._warn_collapsed({"aux_cols": self.aux_cols})
        rng = check_random_state(self.random_state, func=self._FUNC)
        n_baseline = self._baseline(rng)
        searches = 0 if self.inference_model is not None else 1 + (self.control is not None)
        with self._workers(searches):
            n_success = self._attack(self._targets(self.ori, rng), rng)
            n_control = None if self.control is None else self._attack(
                self._targets(self.control, rng), rng)
        self._counts = Counts(self.n_attacks, n_success, n_baseline, n_control,
                              extra={"secret": self.secret, "regression": self.regression,
                                     "aux_cols": self.aux_cols})
        return self

    def _right(self, guesses: np.ndarray, targets: pd.DataFrame) -> int:
        return int(inference_guesses_correct(guesses, targets[self.secret].to_numpy(),
                                             self.regression, self.tolerance).sum())

    def _attack(self, targets: pd.DataFrame, rng: np.random.Generator) -> int:
        if self.inference_model is not None:
            return self._right(self._predicted(targets), targets)
        nearest = self._neighbours(targets, self.aux_cols, 1, rng)[:, 0]
        return self._right(self.syn[self.secret].to_numpy()[nearest], targets)

    def _predicted(self, targets: pd.DataFrame) -> np.ndarray:
        """The custom model's guesses, one per target (by index when it returns a Series)."""
        guesses = self.inference_model.predict(targets)
        if isinstance(guesses, pd.Series):
            guesses = guesses.reindex(targets.index)
        guesses = np.asarray(guesses, dtype=object).reshape(-1)
        if len(guesses) != len(targets):
            raise ValueError(f"{self._FUNC}: inference_model.predict returned "
                             f"{len(guesses)} guesses for {len(targets)} target rows.")
        return guesses

    def _baseline(self, rng: np.random.Generator) -> int:
        targets = self._targets(self.ori, rng)
        picks = rng.choice(len(self.syn), self.n_attacks, replace=len(self.syn) < self.n_attacks)
        return self._right(self.syn[self.secret].to_numpy()[picks], targets)
