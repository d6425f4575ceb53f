"""jax-privacy's side of the DP-bound parity test and benchmark: runs INSIDE .venv-jaxprivacy.

Not a test module (no ``test_`` prefix) and never imported by privaudit's own environment: the
parity test and ``benchmarks/bench_dp_bounds.py`` run it as
``.venv-jaxprivacy/bin/python tests/metrics/_jax_privacy_side.py < job.json`` and read one JSON
object from its stdout. jax-privacy 2.0.0 (``jax_privacy.auditing``) computes:

- ``"one_run"``: rows ``[m, n_guesses, n_correct, delta, significance, method]`` -> the
  one-run epsilon bound (Steinke, Nasr, Jagielski 2023 for ``"steinke"``; Mahloujifar, Melis,
  Chaudhuri 2024 for ``"fdp"``), from the module's searches ``_epsilon_one_run[_fdp]``: the
  code ``CanaryScoreAuditor.epsilon_one_run[_fdp]`` runs at every threshold.
- ``"explicit"``: ``{"in", "out", "threshold", "delta", "significance", "method"}`` -> the bound
  at that pre-registered threshold (``Explicit``; method also ``"clopper-pearson"``).
- ``"bonferroni"``: ``{"in", "out", "delta", "significance"[, "methods"]}`` -> jax-privacy's
  data-dependent Bonferroni bounds (``"steinke"``, ``"fdp"``, ``"clopper-pearson"``),
  ``epsilon_from_gdp``
  (``"gdp"``, the 2.0.0 release) and the number of ROC hull thresholds it divides by
  (``"hull"``).
- ``"gaussian_epsilon"``: rows ``[mu, delta]`` -> the (eps, delta) curve of mu-GDP through
  dp_accounting's analytic Gaussian (Balle and Wang 2018), sigma = 1 / mu.
"""

import json
import sys

import dp_accounting
import numpy as np
from jax_privacy import auditing

METHODS = {"steinke": "epsilon_one_run", "fdp": "epsilon_one_run_fdp",
           "clopper-pearson": "epsilon_clopper_pearson"}


def one_run(m, n_guesses, n_correct, delta, significance, method):
    """jax-privacy's one-run bound for one row of counts.

    The module-level search every public method ends in (``Explicit`` calls it with
    ``eps_lo = 0`` and the counts at its threshold); the public methods refuse ``delta = 0``
    and need both canary groups non-empty, which some rows of counts do not give.
    """
    search = {"steinke": auditing._epsilon_one_run, "fdp": auditing._epsilon_one_run_fdp}
    return float(search[method](0, m, n_guesses, n_correct, significance, delta))


def explicit(case):
    """jax-privacy's bound at a pre-registered threshold on the case's scores."""
    auditor = auditing.CanaryScoreAuditor(np.asarray(case["in"]), np.asarray(case["out"]))
    return float(getattr(auditor, METHODS[case["method"]])(
        case["significance"], case["delta"],
        threshold_strategy=auditing.Explicit(case["threshold"])))


def bonferroni(case):
    """jax-privacy's data-dependent Bonferroni bounds, epsilon_from_gdp and its hull size.

    ``case["methods"]`` (default all four) names the numbers wanted: the f-DP search is the
    slow one.
    """
    auditor = auditing.CanaryScoreAuditor(np.asarray(case["in"]), np.asarray(case["out"]))
    significance, delta = case["significance"], case["delta"]
    compute = {"steinke": auditor.epsilon_one_run, "fdp": auditor.epsilon_one_run_fdp,
               "clopper-pearson": auditor.epsilon_clopper_pearson,
               "gdp": auditor.epsilon_from_gdp}
    out = {method: float(compute[method](significance, delta))
           for method in case.get("methods", compute)}
    out["hull"] = len(auditor._fn_counts)
    return out


def gaussian_epsilon(mu, delta):
    """The eps of mu-GDP at delta: the Gaussian mechanism with sigma = 1 / mu (0 when mu = 0)."""
    return float(dp_accounting.get_epsilon_gaussian(1 / mu if mu > 0 else np.inf, delta))


def main():
    """Read the job from stdin, print jax-privacy's numbers as one JSON line."""
    job = json.load(sys.stdin)
    out = {"version": __import__("jax_privacy").__version__,
           "one_run": [one_run(*row) for row in job.get("one_run", [])],
           "explicit": [explicit(case) for case in job.get("explicit", [])],
           "bonferroni": [bonferroni(case) for case in job.get("bonferroni", [])],
           "gaussian_epsilon": [gaussian_epsilon(mu, delta)
                                for mu, delta in job.get("gaussian_epsilon", [])]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
