"""Machine-unlearning algorithms for torch classifiers (each returns a new model).

The algorithms the Apollo paper audits: RT (retraining on the retain set), FT
(fine-tuning), GA (gradient ascent), BT (bad-teacher distillation), SCRUB, SalUn and SFR-on,
behind one entry point, :func:`unlearn`, and as functions with their hyperparameters;
:func:`check_method_params` checks a method's hyperparameters before any work, by the rules
the algorithms check them by. All run on CPU, seeded by ``random_state`` (the same seed
gives the same weights), and never modify the input model. torch is imported only when an
algorithm runs.
"""

from privaudit.unlearn._api import (
    METHODS,
    check_method_params,
    method_hyperparameters,
    unlearn,
)
from privaudit.unlearn._basic import fine_tune, gradient_ascent, retrain
from privaudit.unlearn._distill import bad_teacher, scrub
from privaudit.unlearn._recipe import UnlearningRecipe
from privaudit.unlearn._saliency import salun, sfr_on

__all__ = [
    "METHODS",
    "UnlearningRecipe",
    "bad_teacher",
    "check_method_params",
    "fine_tune",
    "gradient_ascent",
    "method_hyperparameters",
    "retrain",
    "salun",
    "scrub",
    "sfr_on",
    "unlearn",
]
