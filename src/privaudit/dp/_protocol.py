"""The training protocol of a DP audit: what a training function returns, its check, scores.

A training function is ``train(dataset, canaries, *, random_state) -> DPTrainingRun``:
``dataset`` is ``(features, labels)``, ``canaries`` the included canaries only. The audit
checks that the run names exactly those canaries, in order (:func:`check_training_run`),
then scores every canary of the full set without being shown which were included
(:func:`score_canaries`): the inclusion stays secret until the bound is computed, as the
one-run analysis requires (Steinke, Nasr and Jagielski 2023, Sec. 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error, warn_degenerate
from privaudit.dp._canaries import CanarySet

__all__ = ["DPTrainingRun", "TrainingFunction", "check_training_run", "score_canaries"]

#: ``train(dataset, canaries, *, random_state) -> DPTrainingRun``.
TrainingFunction = Callable[..., "DPTrainingRun"]


@dataclass
class DPTrainingRun:
    """What a training function returns: the model and what the audit needs to score it.

    Attributes
    ----------
    model : object
        The trained model: a torch module in evaluation mode, a fitted scikit-learn
        classifier or a :class:`~privaudit.targets.Target` (anything
        :func:`~privaudit.targets.as_target` accepts); input-space canaries are scored by
        its loss. Unused for dirac-gradient canaries.
    canary_ids : ndarray of str
        The ids of the canaries it trained on, in the order it was given them.
    claimed_epsilon : dict of str to float
        Accountant name -> the epsilon it claims at ``delta`` ({} for no claim).
    delta : float or None
        The delta of the claims.
    noise_multiplier : float or None
        The noise multiplier the accountant was told.
    initial_parameters, final_parameters : ndarray of float64, or None
        The flat parameters before and after training (dirac-gradient canaries).
    learning_rate : float or None
        The SGD learning rate (dirac-gradient scores are in units of it).
    n_steps : int or None
        Optimizer steps taken.
    train_seconds : float
        CPU seconds of the training (for OpacusRecipe, the noise calibration included).
    """

    model: Any
    canary_ids: NDArray[np.str_]
    claimed_epsilon: dict[str, float] = field(default_factory=dict)
    delta: float | None = None
    noise_multiplier: float | None = None
    initial_parameters: NDArray[np.float64] | None = None
    final_parameters: NDArray[np.float64] | None = None
    learning_rate: float | None = None
    n_steps: int | None = None
    train_seconds: float = 0.0


def _func_name(func: Any) -> str:
    if isinstance(func, str):
        return func
    return str(getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
               or type(func).__name__)


def _listed(ids: Any, limit: int = 3) -> str:
    items = [str(i) for i in ids]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def check_training_run(run: Any, canaries: CanarySet, *, func: Any) -> None:
    """Check that a training function trained on exactly the canaries it was given.

    Parameters
    ----------
    run : DPTrainingRun
        What the function returned.
    canaries : CanarySet
        The (included) canaries it was given.
    func : callable or str
        The training function, named in the error.

    Raises
    ------
    TypeError
        If ``run`` is not a :class:`DPTrainingRun`.
    ValueError
        If its ``canary_ids`` differ from the ids given: canaries dropped, added,
        repeated or reordered. A function that silently loses canaries would make
        excluded-looking canaries of included ones and invalidate the bound.
    """
    name = _func_name(func)
    if not isinstance(run, DPTrainingRun):
        raise TypeError(f"The training function {name} must return a DPTrainingRun. "
                        f"Got {type(run).__name__} instead.")
    given = [str(i) for i in canaries.ids]
    got = [str(i) for i in np.asarray(run.canary_ids, dtype=object).ravel()]
    if got == given:
        return
    dropped = [i for i in given if i not in set(got)]
    added = [i for i in got if i not in set(given)]
    repeated = sorted({i for i in got if got.count(i) > 1}) if len(got) < 10_000 else []
    if dropped:
        what = f"dropped {len(dropped)} of them ({_listed(dropped)})"
    elif added:
        what = f"added {len(added)} it was not given ({_listed(added)})"
    elif repeated:
        what = f"repeated {len(repeated)} ({_listed(repeated)})"
    else:
        first = next(k for k, (a, b) in enumerate(zip(got, given, strict=True)) if a != b)
        what = f"reordered them (position {first}: {got[first]} where {given[first]} was given)"
    raise ValueError(
        f"The training function {name} must return the ids of the canaries it was given, "
        f"in the order given ({len(given)} ids); it {what}. Train on every canary given, "
        "once each, and return canaries.ids.")


def score_canaries(run: DPTrainingRun, canaries: CanarySet) -> NDArray[np.float64]:
    """Score every canary of the full set: higher = more likely included.

    Never given the inclusion: the scores depend on the trained model and the canaries only.

    - Input-space canaries: the negative cross-entropy of ``run.model`` on the canary
      (its label), queried through :func:`~privaudit.targets.as_target`. Training lowers
      the loss of the examples it sees, most of all mislabelled or far ones (Steinke et al.
      2023, Sec. 7, black-box audit).
    - Dirac canaries: ``-(final - initial)[coordinate] / learning_rate``, the coordinate's
      movement against the canary gradient (``+max_grad_norm`` on it) over training
      (Steinke et al. 2023, Sec. 6; Nasr et al. 2023, Sec. 4.2). Dividing by the learning
      rate is the same for every canary of a run, so the ranking (all a guess uses) is
      Steinke et al.'s; the units are "clipped canary gradients summed over steps".

    Parameters
    ----------
    run : DPTrainingRun
    canaries : CanarySet
        All canaries, included or not.

    Returns
    -------
    ndarray of float64, shape (len(canaries),)
        NaN where the model or parameters give no finite score (a diverged training),
        with a :class:`~privaudit.exceptions.DegenerateInputWarning`.
    """
    func = "score_canaries"
    if canaries.kind == "dirac-gradient":
        scores = _dirac_scores(run, canaries, func)
    else:
        scores = _input_scores(run, canaries)
    if not np.all(np.isfinite(scores)):
        scores = np.where(np.isfinite(scores), scores, np.nan)
        warn_degenerate(f"{int(np.isnan(scores).sum())} of {scores.size} canary scores are "
                        "not finite (did the training diverge?); they are NaN")
    return scores


def _input_scores(run: DPTrainingRun, canaries: CanarySet) -> NDArray[np.float64]:
    """Minus the model's loss on each canary; NaN everywhere if its outputs are not finite.

    A target refuses non-finite outputs (a torch module's logits, a function's
    probabilities) with a ValueError: from a diverged training that is the NaN score
    the audit reads as "undefined", as for Dirac canaries, not an error about a target
    the user never passed. Any other error still propagates.
    """
    from privaudit.targets import as_target

    try:
        outputs = as_target(run.model).query(canaries.features, canaries.labels)
    except ValueError as exc:
        if "non-finite" not in str(exc):
            raise
        return np.full(len(canaries), np.nan)
    return -np.asarray(outputs.loss, dtype=np.float64)


def _dirac_scores(run: DPTrainingRun, canaries: CanarySet, func: str) -> NDArray[np.float64]:
    if run.initial_parameters is None or run.final_parameters is None:
        raise param_error("run", func, "a DPTrainingRun with initial_parameters and "
                          "final_parameters (dirac-gradient canaries are scored white-box)",
                          "<a run without parameters>")
    start = np.asarray(run.initial_parameters, dtype=np.float64).ravel()
    end = np.asarray(run.final_parameters, dtype=np.float64).ravel()
    coords = np.asarray(canaries.coordinates)
    if start.shape != end.shape or (coords.size and coords.max() >= start.size):
        raise param_error("run", func, f"flat parameters of equal length above every canary "
                          f"coordinate (max {int(coords.max())})",
                          f"<parameters of shapes {start.shape} and {end.shape}>")
    scale = run.learning_rate if run.learning_rate else 1.0
    return -(end[coords] - start[coords]) / scale
