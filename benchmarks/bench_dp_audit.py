"""One-run audits of Opacus DP-SGD on a real table (issue 22's Opacus lines of "Must show").

Each run trains one model with :class:`privaudit.dp.OpacusRecipe` on ``stevedata::TV16``
(party identification, 7 classes, 90 features) plus 1,000 canaries, each included with
probability 1/2, and bounds epsilon from the canaries' scores with
:func:`privaudit.metrics.canary_epsilon_lower_bound` (two-sided guesses, Bonferroni over
the fixed grid, 95% confidence, delta = 1e-5), per method ("steinke", "fdp"):

- ``eps=8 white-box``: Dirac gradient canaries in the recipe's Dirac slots (parameters the
  data never moves), the claim calibrated with the PRV accountant;
- ``eps=8 <kind>``: the same training with input-space canaries (records of held-out
  respondents with a flipped or random label; out-of-distribution points), scored by loss;
- ``non-private``: ``noise_multiplier=0`` (clipping kept), Dirac canaries;
- ``mis-accounted``: claims eps = 1 but trains with a tenth of the noise its accountant was
  told (``noise_scale=0.1``), Dirac canaries;
- ``eps=1``, ``eps=4``: correct claims, Dirac canaries (the bound must stay below them).

The idealised ceiling of a claim: the same bound on the scores of the Gaussian mechanism
that the claim allows exactly (mu = ``gdp_mu(eps, delta)``: score = mu * included + N(0, 1),
no interference), median over 20 seeds. DP-SGD with sample rate q and T steps separates a
Dirac canary's mean by ``q sqrt(T) / sigma``, which approaches mu as q -> 1: the runs use
q = 0.5 (40 steps), where it is 92% of mu at eps = 8; at q = 0.01 (400 steps) it is 23%, and
a final-model audit cannot come near the claim (Steinke et al. 2023, Sec. 7).

The audit's time (making the canaries and the inclusion, scoring, both bounds) is CPU time
beside the training's CPU time (the target: under 10% of one training run).

Run::

    .venv/bin/python benchmarks/bench_dp_audit.py              # 5,000 rows, 7 runs
    .venv/bin/python benchmarks/bench_dp_audit.py --rows 2000 --only white-box non-private
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privaudit.data import load_tv16
from privaudit.dp import OpacusRecipe, draw_inclusion, make_canaries, score_canaries
from privaudit.metrics import canary_epsilon_lower_bound, gdp_mu

DELTA = 1e-5
METHODS = ("steinke", "fdp")


@dataclass
class Scenario:
    """One training run to audit."""

    name: str
    kind: str
    claim: float  # the claimed epsilon (0: no claim)
    recipe_kwargs: dict[str, Any] = field(default_factory=dict)


SCENARIOS = (
    Scenario("white-box", "dirac-gradient", 8.0, {"target_epsilon": 8.0}),
    Scenario("flipped-label", "flipped-label", 8.0, {"target_epsilon": 8.0}),
    Scenario("random-label", "random-label", 8.0, {"target_epsilon": 8.0}),
    Scenario("out-of-distribution", "out-of-distribution", 8.0, {"target_epsilon": 8.0}),
    Scenario("non-private", "dirac-gradient", 0.0, {"noise_multiplier": 0.0}),
    Scenario("mis-accounted", "dirac-gradient", 1.0,
             {"target_epsilon": 1.0, "noise_scale": 0.1}),
    Scenario("eps=1", "dirac-gradient", 1.0, {"target_epsilon": 1.0}),
    Scenario("eps=4", "dirac-gradient", 4.0, {"target_epsilon": 4.0}),
)


def ceiling(epsilon: float, m: int, method: str, seeds: int = 20) -> float:
    """Median bound on the scores of the Gaussian mechanism a claim of ``epsilon`` allows."""
    mu = gdp_mu(epsilon, DELTA)
    bounds = []
    for seed in range(seeds):
        rng = np.random.default_rng(10_000 + seed)
        inc = draw_inclusion(m, random_state=rng)
        scores = rng.standard_normal(m) + mu * inc
        bounds.append(canary_epsilon_lower_bound(scores[inc], scores[~inc], delta=DELTA,
                                                 method=method, two_sided=True).epsilon)
    return float(np.median(bounds))


def audit_one(scenario: Scenario, data: tuple, population: tuple, args: argparse.Namespace):
    """Train one run and audit it: (bounds per method, claims, train CPU s, audit CPU s)."""
    recipe = OpacusRecipe(sample_rate=args.sample_rate, epochs=args.epochs,
                          learning_rate=args.learning_rate, hidden=(args.hidden,),
                          dirac_slots=args.canaries, **scenario.recipe_kwargs)
    start = time.process_time()
    if scenario.kind == "dirac-gradient":
        canaries = make_canaries(scenario.kind, args.canaries,
                                 n_parameters=recipe.n_parameters(data),
                                 parameter_indices=recipe.dirac_coordinates(data),
                                 random_state=args.seed)
    else:
        canaries = make_canaries(scenario.kind, args.canaries, features=population[0],
                                 labels=population[1], random_state=args.seed)
    inclusion = draw_inclusion(args.canaries, random_state=args.seed + 1)
    audit_seconds = time.process_time() - start
    run = recipe(data, canaries.subset(inclusion), random_state=args.seed + 2)
    start = time.process_time()
    scores = score_canaries(run, canaries)
    bounds = {method: canary_epsilon_lower_bound(scores[inclusion], scores[~inclusion],
                                                 delta=DELTA, method=method, two_sided=True)
              for method in METHODS}
    audit_seconds += time.process_time() - start
    return bounds, run, audit_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000, help="TV16 training rows")
    parser.add_argument("--canaries", type=int, default=1000)
    parser.add_argument("--sample-rate", type=float, default=0.5)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=2.0)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", default=None, help="scenario names")
    args = parser.parse_args()

    import opacus  # noqa: F401  (imported once before any timing)

    table = load_tv16(random_state=args.seed)  # every row, shuffled
    data = (table.X[:args.rows], table.y[:args.rows])
    population = (table.X[args.rows:args.rows + 10_000], table.y[args.rows:args.rows + 10_000])
    print(f"# {platform.python_version()}, {table.name}: {args.rows} training rows, "
          f"{args.canaries} canaries, q={args.sample_rate}, {args.epochs} epochs, "
          f"MLP ({args.hidden},), delta={DELTA}, two-sided Bonferroni, 95%")
    ceilings: dict[tuple[float, str], float] = {}
    print("| run | claim (prv / rdp) | bound steinke | bound fdp | share of ceiling "
          "(steinke / fdp) | guesses (correct) | train CPU s | audit CPU s | audit / train |")
    print("|---|---|---|---|---|---|---|---|---|")
    for scenario in SCENARIOS:
        if args.only and scenario.name not in args.only:
            continue
        bounds, run, audit_s = audit_one(scenario, data, population, args)
        claims = run.claimed_epsilon
        claim = (f"{claims['prv']:.2f} / {claims['rdp']:.2f}" if claims else "none")
        shares = "-"
        if scenario.claim > 0:
            for method in METHODS:
                ceilings.setdefault((scenario.claim, method),
                                    ceiling(scenario.claim, args.canaries, method))
            shares = " / ".join(
                f"{bounds[m].epsilon / ceilings[(scenario.claim, m)]:.0%} of "
                f"{ceilings[(scenario.claim, m)]:.2f}" for m in METHODS)
        b = bounds["steinke"]
        print(f"| {scenario.name} | {claim} | {bounds['steinke'].epsilon:.2f} | "
              f"{bounds['fdp'].epsilon:.2f} | {shares} | {b.n_guesses} ({b.n_correct}) | "
              f"{run.train_seconds:.1f} | {audit_s:.2f} | {audit_s / run.train_seconds:.1%} |",
              flush=True)


if __name__ == "__main__":
    main()
