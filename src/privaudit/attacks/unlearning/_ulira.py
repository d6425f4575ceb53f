"""U-LiRA: the per-example likelihood-ratio test on shadows that unlearned the record.

Hayes et al. adapt LiRA to unlearning: for each record under test, the shadows of one
side trained on the record and then unlearned it with the audited algorithm, the shadows
of the other side never saw it. A Gaussian on each side of the logit-scaled confidence
and the target's own value give the likelihood ratio "unlearned" vs "never trained on".
The shadows come from a :class:`~privaudit.training.ReferencePool` over an
:class:`~privaudit.unlearn.UnlearningRecipe`, so U-LiRA is online LiRA on those outputs;
this class adds what makes the test U-LiRA rather than LiRA: it refuses shadows that did
not unlearn, and a pool too small to give every record shadows on both sides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privaudit._validation import param_error
from privaudit.attacks.membership import LiRAAttack, ReferenceOutputs

__all__ = ["ULiRAAttack"]


def _check_unlearning_pool(reference: Any, func: str) -> None:
    from privaudit.unlearn import UnlearningRecipe

    pool = getattr(reference, "pool", None)
    recipe = getattr(pool, "recipe", None)
    if pool is not None and not isinstance(recipe, UnlearningRecipe):
        raise param_error(
            "reference", func,
            "outputs of a pool over an UnlearningRecipe (shadows that trained on each "
            "record and then unlearned it with the audited algorithm)",
            f"<a pool over {type(recipe).__name__}: plain LiRA, not U-LiRA>",
        )


def _check_sides(reference: ReferenceOutputs, min_per_side: int, func: str) -> None:
    in_mask = reference.in_mask("audited")
    n_in = in_mask.sum(axis=0)
    n_out = in_mask.shape[0] - n_in
    short = np.flatnonzero((n_in < min_per_side) | (n_out < min_per_side))
    if short.size:
        raise param_error(
            "reference", func,
            f"at least {min_per_side} unlearned and {min_per_side} never-trained shadow "
            "models for every record (U-LiRA's test is per example): use more shadows "
            f"(n_models >= {2 * min_per_side} with a balanced online pool)",
            f"<{short.size} of {in_mask.shape[1]} records short, e.g. record "
            f"{int(short[0])} with {int(n_in[short[0]])} unlearned and "
            f"{int(n_out[short[0]])} never-trained shadows>",
        )


class ULiRAAttack(LiRAAttack):
    """U-LiRA (Hayes et al.): online LiRA over shadows that trained on a record, then forgot it.

    Parameters
    ----------
    fix_variance : bool or "auto", default="auto"
        As :class:`~privaudit.attacks.membership.LiRAAttack` (a pooled variance below 64
        shadows, where per-record variances are noise).
    min_models : int, default=2
        Records with fewer shadows on a side use the pooled variance there.
    min_per_side : int, default=1
        Fewest shadows of each side (unlearned / never trained on) every record needs;
        fewer is refused, not imputed as plain LiRA would: a record's own means are the
        test.
    eps : float, default=np.finfo(np.float64).tiny
        Clipping of the probabilities in the logit-scaled confidence.

    Notes
    -----
    Labels of the results: 1 = unlearned record, 0 = never trained on. Make the shadows
    with ``ReferencePool(UnlearningRecipe(recipe, candidates, method=...), mode="online")``
    and :func:`~privaudit.attacks.membership.collect_reference_outputs`; their training
    sets should be as large as the target's (``train_fraction``), or the shadows memorise
    differently from it.

    References
    ----------
    .. [1] Hayes, J., Shumailov, I., Triantafillou, E., Khalifa, A. and Papernot, N.
       "Inexact Unlearning Needs More Careful Evaluations to Avoid a False Sense of
       Privacy." 2024.
    .. [2] Carlini, N. et al. "Membership Inference Attacks From First Principles."
       IEEE S&P 2022.
    .. [3] Tang, Y., Joshi, A. and Kundu, S. "Apollo: A Posteriori Label-Only Membership
       Inference Attack Towards Machine Unlearning" (U-LiRA as a baseline).
    """

    name = "u-lira"  # type: ignore[assignment]

    def __init__(self, fix_variance: bool | str = "auto", min_models: int = 2,
                 min_per_side: int = 1, eps: float = LiRAAttack().eps) -> None:
        super().__init__(online=True, fix_variance=fix_variance, min_models=min_models,
                         eps=eps)
        self.min_per_side = min_per_side

    def check_params(self) -> None:
        """LiRA's parameters (the same checks), and ``min_per_side`` an integer >= 1."""
        super().check_params()
        value = self.min_per_side
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise param_error("min_per_side", type(self).__name__, "an integer >= 1", value)

    def fit(self, reference: ReferenceOutputs,
            population_outputs: Any = None) -> ULiRAAttack:
        """Read the shadows' statistics; refuse plain shadows and too small a pool."""
        func = f"{type(self).__name__}.fit"
        self.check_params()
        value = self.min_per_side
        if isinstance(reference, ReferenceOutputs):
            _check_unlearning_pool(reference, func)
            if reference.mode == "online":
                _check_sides(reference, int(value), func)
        super().fit(reference, population_outputs)
        return self

    def min_reference_models(self, mode: str) -> tuple[int, str]:
        """Twice ``min_per_side``: a balanced pool puts each record in half the shadows."""
        return (2 * int(self.min_per_side),
                "U-LiRA needs unlearned and never-trained shadows for every record")
