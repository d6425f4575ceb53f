"""U-LiRA: the per-example likelihood-ratio test on shadows that unlearned the record.

Hayes et al. adapt LiRA to unlearning: for each record under test, the shadows of one
side trained on the record and then unlearned it with the audited algorithm, the shadows
of the other side never saw it. A Gaussian on each side of the logit-scaled confidence
and the target's own value give the likelihood ratio "unlearned" vs "never trained on".
The shadows come from a :class:`~privaudit.training.ReferencePool` over an
:class:`~privaudit.unlearn.UnlearningRecipe`, so U-LiRA is online LiRA on those outputs;
this class adds what makes the test U-LiRA rather than LiRA: it refuses shadows that did
not unlearn, and leaves out of its result the records a pool too small gave no shadow on
one side (plain LiRA would impute their means from the other records).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import param_error
from privaudit.attacks.membership import LiRAAttack, ReferenceOutputs, lira_scores
from privaudit.attacks.unlearning._sides import covered, warn_left_out
from privaudit.results import AttackResult

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
        Fewest shadows of each side (unlearned / never trained on) a record needs to be
        tested: a record's own means are the test, so one with fewer is not imputed as
        plain LiRA would, but scored NaN by :meth:`score` and left out of :meth:`run`'s
        result, with a :class:`~privaudit.exceptions.DegenerateInputWarning` naming how
        many and the shadows that would cover every record. With no record covered the
        result has no information (every score 0, AUC 0.5, ``extra["degenerate"]``).
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
        """Read the shadows' statistics; refuse plain shadows.

        ``covered_`` marks the records with ``min_per_side`` shadows on each side: the
        others are scored NaN and left out of :meth:`run`'s result.
        """
        func = f"{type(self).__name__}.fit"
        self.check_params()
        if isinstance(reference, ReferenceOutputs):
            _check_unlearning_pool(reference, func)
        super().fit(reference, population_outputs)
        self.covered_ = covered(self.in_mask_, int(self.min_per_side))
        return self

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        """LiRA's scores on the covered records, fitted on them alone; NaN on the others.

        Fitting on the covered records only keeps LiRA from imputing the others' means
        (and warning about it) for scores that are left out anyway.
        """
        keep = self.covered_
        scores = np.full(len(raw), np.nan)
        if keep.any():
            scores[keep] = lira_scores(
                raw[keep], self.reference_stats_[:, keep], self.in_mask_[:, keep],
                online=True, fix_variance=self.fix_variance_, min_models=self.min_models,
                saturation=self.saturation_)
        return scores

    def _package(self, *, labels: NDArray[np.int8], scores: NDArray[np.float64],
                 record_ids: ArrayLike | None, raw: NDArray[np.float64] | None,
                 extra: dict[str, Any], predictions: NDArray[np.int8] | None = None,
                 **rest: Any) -> AttackResult:
        """The covered records' result; the others left out, with a warning.

        Their ids are kept (positions when no ``record_ids`` are given), so the result
        still says which records were tested. No record covered: no information (every
        record kept with the score 0, as the membership attacks' ``_package`` does with
        NaN scores, here with the reason).
        """
        keep = self.covered_
        pool = getattr(self.reference_, "pool", None)
        warn_left_out(f"{type(self).__name__}.run", keep, int(self.min_per_side),
                      getattr(pool, "train_fraction", None))
        if keep.all():
            return super()._package(labels=labels, scores=scores, record_ids=record_ids,
                                    raw=raw, extra=extra, predictions=predictions, **rest)
        if not keep.any():
            return super()._package(
                labels=labels, scores=np.zeros(keep.size), record_ids=record_ids, raw=raw,
                predictions=None, **rest,
                extra={**extra, "degenerate": "no record has shadows on both sides (too "
                                              "few shadows): no information, every score 0"})
        ids = np.arange(keep.size) if record_ids is None else np.asarray(record_ids)
        if ids.shape != keep.shape:
            raise param_error("record_ids", f"{type(self).__name__}.run",
                              f"one id per record ({keep.size})", f"<shape {ids.shape}>")
        return super()._package(
            labels=labels[keep], scores=scores[keep], record_ids=ids[keep],
            raw=None if raw is None else raw[keep],
            predictions=None if predictions is None else predictions[keep],
            extra={**extra, "n_left_out": int(keep.size - keep.sum())}, **rest)

    def min_reference_models(self, mode: str) -> tuple[int, str]:
        """Twice ``min_per_side``: a balanced pool puts each record in half the shadows."""
        return (2 * int(self.min_per_side),
                "U-LiRA needs unlearned and never-trained shadows for every record")
