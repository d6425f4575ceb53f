"""Machine-unlearning algorithms for torch classifiers (each returns a new model).

The algorithms the Apollo paper audits: RT (retraining on the retain set), FT
(fine-tuning), GA (gradient ascent), BT (bad-teacher distillation), SCRUB, SalUn and SFR-on,
behind one entry point, :func:`unlearn`, and as functions with their hyperparameters. All
run on CPU, seeded by ``random_state`` (the same seed gives the same weights), and never
modify the input model. torch is imported only when an algorithm runs.
"""

from privaudit.unlearn._api import METHODS, unlearn
from privaudit.unlearn._basic import fine_tune, gradient_ascent, retrain
from privaudit.unlearn._distill import bad_teacher, scrub
from privaudit.unlearn._recipe import UnlearningRecipe
from privaudit.unlearn._saliency import salun, sfr_on

__all__ = [
    "METHODS",
    "UnlearningRecipe",
    "bad_teacher",
    "fine_tune",
    "gradient_ascent",
    "retrain",
    "salun",
    "scrub",
    "sfr_on",
    "unlearn",
]
