"""End to end: audit_dp_training on real DP-SGD (Opacus) at a tiny size.

The same network trained without noise and with a large noise multiplier, each with 200
white-box dirac canaries: without DP the canaries' coordinates move visibly and the
one-run bound is positive; with sigma = 8 (a claim of eps ~ 0.2 for 20 steps at q = 0.1)
the bound stays below the claim, as it must for a correct accountant.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from privaudit.audits import audit_dp_training
from privaudit.dp import OpacusRecipe

# Skipped without Opacus, which is imported by the audit, not at collection (every xdist
# worker collects this module; one runs it).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("opacus") is None,
                                reason="needs privaudit's dp extra (opacus)")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(300, 10)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 1)


def _recipe(noise_multiplier: float) -> OpacusRecipe:
    return OpacusRecipe("mlp", noise_multiplier=noise_multiplier, epochs=2, sample_rate=0.1,
                        hidden=(64,), accountants=("rdp",))


def test_a_non_private_run_leaks_and_a_private_run_stays_within_its_claim():
    kwargs = {"dataset": (X, Y), "delta": 1e-5, "canaries": "dirac-gradient",
              "n_canaries": 200, "random_state": 0}
    open_run = audit_dp_training(_recipe(0.0), claimed_epsilon=1.0, **kwargs)[0]
    assert open_run.epsilon_lower_bound > 0.0
    inside, outside = open_run.in_out_scores()
    assert inside.mean() > outside.mean()
    assert open_run.runs[0]["accountant_epsilon"] == {}  # no DP: the recipe claims nothing

    private = _recipe(8.0)
    claim = private.claimed_epsilon(8.0, private.n_steps)["rdp"]
    noisy = audit_dp_training(private, claimed_epsilon={"rdp": claim}, **kwargs)[0]
    assert noisy.runs[0]["accountant_epsilon"]["rdp"] == pytest.approx(claim)
    assert noisy.epsilon_lower_bound < claim and noisy.verdict == "consistent with the claim"
