"""The one-run DP bounds on an idealised mechanism and on null runs (issue 22, metric parts).

(a) Ceilings. A Gaussian mechanism calibrated exactly to (eps, delta) (Balle and Wang 2018:
mu = privaudit.metrics.gdp_mu(eps, delta)), no interference between canaries: an included
canary scores N(mu, 1), an excluded one N(0, 1). For m canaries, the guess "in" at or above a
threshold t gives in expectation ``m/2 (Q(t - mu) + Q(t))`` guesses of which ``m/2 Q(t - mu)``
are correct; the two-sided attacker mirrors it ("out" at or below ``mu - t``: twice both).
The threshold t is the one whose expected counts (rounded) give the best bound (grid step
0.05): it depends on eps, delta and m only, so it is pre-registered. Columns:

- ceiling at expected counts: the bound at those expected counts (Steinke et al.'s idealised
  figure); the bound is not linear in the counts (near "all guesses correct" one wrong guess
  costs much), so a typical run falls short of it;
- CEILING (median): the median, over ``--draws`` simulated runs, of the bound from each run's
  counts at t (one_run_epsilon_lower_bound): what the method certifies of this mechanism in a
  typical run. This is the ceiling the "within 0.05" check uses;
- measured (median): privaudit's canary_epsilon_lower_bound on ``--sims`` fresh simulated runs
  (other seeds) through the scores, at the explicit threshold t; diff = measured - ceiling,
  with the standard error of that difference of medians;
- Bonferroni rule (median): the same fresh runs with threshold="bonferroni" (the rule that does
  not know t), and its share of the ceiling.

(b) Null runs. Canaries never included in training: inclusion drawn at random, the scores
independent of it (N(0, 1)). A positive bound is a false positive. For every method and
threshold rule of privaudit (Bonferroni grid, split, a pre-registered threshold at the
N(0, 1) 90% quantile; one- and two-sided) and for gdp_epsilon_estimate, the share of seeds
with a positive bound, with its Clopper-Pearson 95% interval (and, for the pre-registered
threshold, the exact rate, computed from the binomial laws without simulation); beside them
jax-privacy 2.0.0's share on the same scores (its data-dependent Bonferroni: Steinke, f-DP,
Clopper-Pearson; and its ``epsilon_from_gdp``), computed in ``.venv-jaxprivacy``
(``make .venv-jaxprivacy/.installed``) by ``tests/metrics/_jax_privacy_side.py``; "n/a"
without that environment.

Run::

    .venv/bin/python benchmarks/bench_dp_bounds.py                 # both parts
    .venv/bin/python benchmarks/bench_dp_bounds.py --part ceilings --sims 21
    .venv/bin/python benchmarks/bench_dp_bounds.py --part null --seeds 50
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
from pathlib import Path

import numpy as np
from scipy import stats

from privaudit.metrics import (
    canary_epsilon_lower_bound,
    gdp_epsilon_estimate,
    gdp_mu,
    one_run_epsilon_lower_bound,
)

ROOT = Path(__file__).resolve().parents[1]
JAX_PYTHON = Path(os.environ.get("PRIVAUDIT_JAXPRIVACY_PYTHON",
                                 ROOT / ".venv-jaxprivacy" / "bin" / "python"))
JAX_SIDE = ROOT / "tests" / "metrics" / "_jax_privacy_side.py"
METHODS = ("steinke", "fdp")
#: The null runs' pre-registered threshold: the top 10% of N(0, 1) guessed "in".
NULL_THRESHOLD = float(stats.norm.isf(0.1))


# ----------------------------------------------------------------- (a) ceilings


def expected_counts(m: int, mu: float, t: float, two_sided: bool) -> tuple[int, int]:
    """Expected (guesses, correct), rounded, of "in" at or above ``t`` (mirrored if two-sided)."""
    guesses = m / 2 * (stats.norm.sf(t - mu) + stats.norm.sf(t))
    correct = m / 2 * stats.norm.sf(t - mu)
    factor = 2 if two_sided else 1
    return min(m, round(factor * guesses)), min(m, round(factor * correct))


def threshold_grid(mu: float, two_sided: bool) -> np.ndarray:
    """Thresholds searched (two-sided ones stay above mu / 2: "in" and "out" never overlap)."""
    return np.arange(mu / 2 if two_sided else mu - 2, mu + 5, 0.05)


def expected_ceiling(m: int, mu: float, method: str, two_sided: bool,
                     args: argparse.Namespace) -> tuple[float, float]:
    """The best bound at the expected counts over the threshold grid, and its threshold."""
    best = (0.0, float("inf"))
    for t in threshold_grid(mu, two_sided):
        r, v = expected_counts(m, mu, t, two_sided)
        best = max(best, (one_run_epsilon_lower_bound(
            m, r, v, delta=args.delta, confidence=args.confidence, method=method), float(t)))
    return best


def simulate(m: int, mu: float, n_runs: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n_runs`` runs of the idealised mechanism: inclusion masks and scores, (n_runs, m)."""
    included = rng.random((n_runs, m)) < 0.5
    return included, rng.normal(mu * included, 1.0)


def guess_counts(included: np.ndarray, scores: np.ndarray, t: float, mu: float,
                 two_sided: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per run: guesses and correct guesses, "in" at or above t (and "out" at or below mu - t)."""
    guessed_in = scores >= t
    guesses, correct = guessed_in.sum(1), (guessed_in & included).sum(1)
    if two_sided:
        guessed_out = (scores <= mu - t) & ~guessed_in
        guesses, correct = guesses + guessed_out.sum(1), correct + (guessed_out & ~included).sum(1)
    return guesses, correct


def run_bounds(m: int, method: str, two_sided: bool, t: float, mu: float,
               runs: tuple[np.ndarray, np.ndarray], args: argparse.Namespace) -> np.ndarray:
    """Each simulated run's bound at threshold ``t``, from its counts.

    Through one_run_epsilon_lower_bound on the counts, not through the scores pipeline that
    the measured column checks; equal counts are bounded once.
    """
    memo: dict[tuple[int, int], float] = {}
    guesses, correct = guess_counts(*runs, t, mu, two_sided)
    for pair in zip(guesses.tolist(), correct.tolist(), strict=True):
        if pair not in memo:
            memo[pair] = one_run_epsilon_lower_bound(
                m, *pair, delta=args.delta, confidence=args.confidence, method=method)
    return np.array([memo[pair] for pair in zip(guesses.tolist(), correct.tolist(),
                                                 strict=True)])


def measured(mu: float, method: str, two_sided: bool, t: float,
             runs: tuple[np.ndarray, np.ndarray], args: argparse.Namespace,
             threshold: str | None = None) -> float:
    """Median of canary_epsilon_lower_bound over fresh runs, at threshold t (or a rule)."""
    rule = threshold or ((t, mu - t) if two_sided else t)
    return float(np.median([canary_epsilon_lower_bound(
        scores[mask], scores[~mask], delta=args.delta, confidence=args.confidence,
        method=method, threshold=rule, two_sided=two_sided).epsilon
        for mask, scores in zip(*runs, strict=True)]))


def ceiling_rows(args: argparse.Namespace) -> list[str]:
    """Part (a): one row per (m, eps, method, sides)."""
    rows = ["| m | eps | method | sides | ceiling at expected counts | ceiling (median) "
            "| measured (median) | diff | its s.e. | within 0.05 | Bonferroni rule (median) "
            "| its share of the ceiling |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in args.canaries:
        for eps in args.epsilons:
            mu = gdp_mu(eps, args.delta)
            ceiling_runs = simulate(m, mu, args.draws, np.random.default_rng([args.seed, m, 0]))
            fresh_runs = simulate(m, mu, args.sims, np.random.default_rng([args.seed, m, 1]))
            searched_runs = tuple(part[:args.bonferroni_sims] for part in fresh_runs)
            for method in METHODS:
                for two_sided in (False, True):
                    expected, t = expected_ceiling(m, mu, method, two_sided, args)
                    bounds = run_bounds(m, method, two_sided, t, mu, ceiling_runs, args)
                    top = float(np.median(bounds))
                    at_t = measured(mu, method, two_sided, t, fresh_runs, args)
                    searched = measured(mu, method, two_sided, t, searched_runs, args,
                                        threshold="bonferroni")
                    # Standard error of a difference of two medians (normal approximation).
                    error = 1.2533 * bounds.std() * np.sqrt(1 / args.draws + 1 / args.sims)
                    diff = at_t - top
                    rows.append(
                        f"| {m:,} | {eps:g} | {method} | {2 if two_sided else 1} "
                        f"| {expected:.3f} | {top:.3f} | {at_t:.3f} | {diff:+.3f} | {error:.3f} "
                        f"| {'yes' if abs(diff) <= 0.05 else 'NO'} | {searched:.3f} "
                        f"| {searched / top:.0%} |")
    return rows


# ----------------------------------------------------------------- (b) null runs


def null_scores(seeds: int, m: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Null runs: inclusion drawn with p = 1/2, scores N(0, 1) independent of it."""
    runs = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        included = rng.random(m) < 0.5
        scores = rng.normal(size=m)
        runs.append((scores[included], scores[~included]))
    return runs


def privaudit_null(runs, delta: float, confidence: float) -> dict[str, list[float]]:
    """privaudit's bound on every null run, per (method, rule, sides)."""
    bounds: dict[str, list[float]] = {}
    rules = {"bonferroni": "bonferroni", "split": "split", "explicit": NULL_THRESHOLD}
    for seed, (ins, outs) in enumerate(runs):
        for method in (*METHODS, "clopper-pearson"):
            for rule, threshold in rules.items():
                for two_sided in (False, True):
                    if two_sided and rule == "explicit":  # "out" below the 10% quantile
                        threshold = (NULL_THRESHOLD, -NULL_THRESHOLD)
                    key = f"{method} | {rule} | {2 if two_sided else 1}"
                    bounds.setdefault(key, []).append(canary_epsilon_lower_bound(
                        ins, outs, delta=delta, confidence=confidence, method=method,
                        threshold=threshold, two_sided=two_sided, random_state=seed).epsilon)
        for rule, threshold in rules.items():
            bounds.setdefault(f"gdp estimate | {rule} | 1", []).append(gdp_epsilon_estimate(
                ins, outs, delta=delta, confidence=confidence, threshold=threshold,
                random_state=seed).epsilon)
    return bounds


def jax_privacy_null(runs, delta: float, confidence: float) -> dict[str, list[float]] | None:
    """jax-privacy 2.0.0's Bonferroni bounds and epsilon_from_gdp on the same runs."""
    if not JAX_PYTHON.exists():
        return None
    job = {"bonferroni": [{"in": ins.tolist(), "out": outs.tolist(), "delta": delta,
                           "significance": 1 - confidence,
                           "methods": ["steinke", "fdp", "clopper-pearson", "gdp"]}
                          for ins, outs in runs]}
    done = subprocess.run([str(JAX_PYTHON), str(JAX_SIDE)], input=json.dumps(job),
                          capture_output=True, text=True, check=True)
    answers = json.loads(done.stdout.strip().splitlines()[-1])["bonferroni"]
    return {key: [a[key] for a in answers] for key in ("steinke", "fdp", "clopper-pearson",
                                                       "gdp", "hull")}


def rate_cell(values: list[float]) -> str:
    """Share of positive bounds with its Clopper-Pearson 95% interval."""
    k, n = sum(v > 0 for v in values), len(values)
    low = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k / n:.1%} [{low:.1%}, {high:.1%}]"


def smallest_positive_count(m: int, r: int, method: str, delta: float,
                            confidence: float) -> int:
    """The fewest correct of ``r`` guesses giving a positive bound (r + 1 when none does)."""
    def positive(v: int) -> bool:
        return one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence,
                                           method=method) > 0

    low, high = 0, r + 1  # positive(high) by convention; the bound grows with v
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if positive(middle) else (middle, high)
    return high


def exact_explicit_rate(m: int, method: str, two_sided: bool, delta: float,
                        confidence: float) -> float:
    """The exact null false-positive rate of the pre-registered threshold, no simulation.

    With scores independent of inclusion, the guessed canaries number r ~ Binomial(m, p)
    (p = 10% one-sided, 20% two-sided) and each guess is right with probability 1/2
    independently: P(positive) = sum_r P(r) P(Binomial(r, 1/2) >= v_min(r)).
    """
    share = stats.norm.sf(NULL_THRESHOLD) * (2 if two_sided else 1)
    guesses = np.arange(m + 1)
    weights = stats.binom.pmf(guesses, m, share)
    total = 0.0
    for r in guesses[weights > 1e-12]:
        v_min = smallest_positive_count(m, int(r), method, delta, confidence)
        total += weights[r] * stats.binom.sf(v_min - 1, r, 0.5)
    return float(total)


def null_rows(args: argparse.Namespace) -> list[str]:
    """Part (b): one row per privaudit (method, rule, sides), jax-privacy beside it."""
    runs = null_scores(args.seeds, args.null_canaries)
    ours = privaudit_null(runs, args.delta, args.confidence)
    theirs = jax_privacy_null(runs, args.delta, args.confidence)
    jax_key = {"steinke": "steinke", "fdp": "fdp", "clopper-pearson": "clopper-pearson",
               "gdp estimate": "gdp"}
    rows = ["| method | threshold rule | sides | privaudit: positive share [95% CI] "
            "| exact rate | jax-privacy 2.0.0, same scores (its Bonferroni / epsilon_from_gdp) |",
            "|---|---|---|---|---|---|"]
    for key, values in ours.items():
        method, rule, sides = key.split(" | ")
        cell = "n/a (no .venv-jaxprivacy)"
        if theirs is not None:
            cell = "-"  # jax-privacy has no two-sided guesses; its other rules are not run
            if rule == "bonferroni" and sides == "1":
                cell = rate_cell(theirs[jax_key[method]])
        exact = "-"  # known in closed form for a pre-registered threshold only
        if rule == "explicit" and method in METHODS:
            rate = exact_explicit_rate(args.null_canaries, method, sides == "2", args.delta,
                                       args.confidence)
            exact = f"{rate:.2%}"
        rows.append(f"| {key} | {rate_cell(values)} | {exact} | {cell} |")
    if theirs is not None:
        hull = np.array(theirs["hull"])
        rows.append(f"\njax-privacy's Bonferroni divisor (ROC hull vertices) on these runs: "
                    f"median {np.median(hull):g}, range {hull.min()}-{hull.max()}; privaudit's "
                    "is fixed by m.")
    return rows


# ----------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("ceilings", "null", "both"), default="both")
    parser.add_argument("--canaries", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--draws", type=int, default=2001,
                        help="simulated runs behind each median ceiling")
    parser.add_argument("--sims", type=int, default=1001,
                        help="fresh simulated runs behind each measured median")
    parser.add_argument("--bonferroni-sims", type=int, default=101,
                        help="of those, the runs the Bonferroni rule's median is taken over")
    parser.add_argument("--seeds", type=int, default=200, help="null runs")
    parser.add_argument("--null-canaries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.part in ("ceilings", "both"):
        start = time.process_time()
        print(f"## (a) Ceilings: Gaussian mechanism, delta = {args.delta:g}, confidence "
              f"{args.confidence:g}; median ceilings over {args.draws} simulated runs, "
              f"measured medians over {args.sims} fresh ones (Bonferroni: "
              f"{min(args.sims, args.bonferroni_sims)})\n")
        print("\n".join(ceiling_rows(args)))
        print(f"\n({time.process_time() - start:.0f} s CPU)\n")
    if args.part in ("null", "both"):
        start, children = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"## (b) Null runs: {args.seeds} seeds x {args.null_canaries} canaries never "
              f"included, delta = {args.delta:g}, confidence {args.confidence:g}\n")
        print("\n".join(null_rows(args)))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        jax_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
        print(f"\n(CPU: privaudit {time.process_time() - start:.1f} s, jax-privacy's "
              f"process {jax_cpu:.1f} s)")


if __name__ == "__main__":
    main()
