"""Auditing differentially private training in one run: canaries, the protocol, Opacus.

The auditor makes canaries (:func:`make_canaries`: flipped- or random-label records,
out-of-distribution inputs, or white-box "Dirac" gradient canaries), includes each with
probability 1/2 (:func:`draw_inclusion`), has a training function train on the data and the
included canaries (``train(dataset, canaries, *, random_state) -> DPTrainingRun``; built in:
:class:`OpacusRecipe`, DP-SGD with Opacus), checks that it trained on exactly those
(:func:`check_training_run`), and scores every canary without seeing the inclusion
(:func:`score_canaries`). The scores of included and excluded canaries then give an epsilon
lower bound (:func:`privaudit.metrics.canary_epsilon_lower_bound`; Steinke, Nasr and
Jagielski, "Privacy Auditing with One (1) Training Run", NeurIPS 2023).

Nothing here imports torch or opacus at module level (``pip install 'privaudit[dp]'``).
"""

from privaudit.dp._canaries import CANARY_KINDS, CanarySet, draw_inclusion, make_canaries
from privaudit.dp._opacus import ACCOUNTANTS, OpacusRecipe
from privaudit.dp._protocol import (
    DPTrainingRun,
    TrainingFunction,
    check_training_run,
    score_canaries,
)

__all__ = [
    "ACCOUNTANTS",
    "CANARY_KINDS",
    "CanarySet",
    "DPTrainingRun",
    "OpacusRecipe",
    "TrainingFunction",
    "check_training_run",
    "draw_inclusion",
    "make_canaries",
    "score_canaries",
]
