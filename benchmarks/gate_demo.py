"""The CI gate's decision table on the demo's results, under examples/policy.yaml (issue 24).

Reads the saved results of ``privaudit demo`` (every part: models, LLM, synthetic data,
generators, attribute inference, unlearning, DP training; read only, nothing is written
there), checks the example policy's budgets on them with :func:`privaudit.policy.gate` at
the report's settings (1000 bootstrap resamples, seed 0), and prints:

- per rule, how many checks pass, fail and warn (unmeasurable); how many results no
  check read, by reason (not leakage, no metric for their kind, no budget covering them);
- the whole decision table (one row per check);
- the same policy read at the point estimates (``--basis point``): the checks whose
  decision changes, i.e. budgets the point estimate exceeds but the evidence (the lower
  end of the 95% interval) does not;
- the gate's CPU time.

Run::

    .venv/bin/python benchmarks/gate_demo.py                       # /tmp/s12/demo_full
    .venv/bin/python benchmarks/gate_demo.py --results demo-report/results --junit gate.xml
    .venv/bin/python benchmarks/gate_demo.py --n-bootstrap 200     # quicker, coarser
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import pandas as pd

from privaudit.policy import gate
from privaudit.results import load_all_results

ROOT = Path(__file__).resolve().parent.parent


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("/tmp/s12/demo_full/results"))
    parser.add_argument("--policy", type=Path, default=ROOT / "examples" / "policy.yaml")
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--junit", type=Path, default=None)
    return parser.parse_args()


def _per_rule(table: pd.DataFrame) -> pd.DataFrame:
    counts = table.groupby(["rule", "outcome"], sort=False).size().unstack(fill_value=0)
    return counts.reindex(columns=["pass", "fail", "warn"], fill_value=0)


def main() -> None:
    args = _arguments()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # results saved before a format change: warned once
        results = load_all_results(args.results)
    started = time.process_time()
    lower = gate(results, args.policy, n_bootstrap=args.n_bootstrap)
    seconds = time.process_time() - started
    point = gate(results, args.policy, basis="point", n_bootstrap=args.n_bootstrap)
    table = lower.table()
    with pd.option_context("display.width", 250, "display.max_rows", None,
                           "display.max_colwidth", 60, "display.float_format", "{:.4g}".format):
        print(f"{len(results)} results, {lower.not_gated} not gated; policy "
              f"{args.policy}\n")
        print(_per_rule(table[table["outcome"] != "not gated"]).to_string(), "\n")
        print("Not gated, by reason:")
        print(pd.Series([e.reason for e in lower.left_out], dtype=object).value_counts()
              .to_string(), "\n")
        print(table.drop(columns=["basis"]).to_string(index=False), "\n")
        changed = table.assign(point=point.table()["value"],
                               at_point=point.table()["outcome"])
        changed = changed[changed["outcome"] != changed["at_point"]]
        print(f"Decisions that change at basis point: {len(changed)} of {len(lower.checks)}")
        print(changed[["rule", "artefact", "attack", "metric", "value", "point", "budget",
                       "outcome", "at_point"]].to_string(index=False), "\n")
    print(lower.summary())
    print(f"At basis point: {point.summary()}")
    print(f"Gate CPU time (lower basis, n_bootstrap={args.n_bootstrap}): {seconds:.1f} s")
    if args.junit is not None:
        print(f"JUnit: {lower.to_junit(args.junit)}")


if __name__ == "__main__":
    main()
