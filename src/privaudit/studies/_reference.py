"""Reference-model attacks on an overfit classifier of sklearn digits (LiRA's setting).

An MLP (256,) without weight decay is trained on a random 600 of sklearn's 1,797 digits;
the audit covers those 600 members and 600 held-out non-members, and the remaining 597
images are the population (shadow data for Shokri's attack, ``z`` samples for RMIA). The
reference models are MLPs trained like the target on random subsets of audited +
population records, each of the size of the target's training set (600 of 1,797: every
record is IN for a third of them, with balanced masks as in Carlini et al. 2022).

The digits target tests at about 0.97 accuracy: LOSS is then close to random, and the
question the study answers is whether reference-model attacks still expose records at low
FPR, as Carlini et al. show on CIFAR-10.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["REFERENCE_STUDY_ATTACKS", "run_reference_study"]

#: Attacks the study runs by default (all those that apply to a scikit-learn classifier).
REFERENCE_STUDY_ATTACKS: tuple[str, ...] = (
    "loss", "confidence", "modified-entropy", "trained-lr", "shadow",
    "lira-offline", "lira-online", "rmia",
)


def run_reference_study(
    random_state: int = 0,
    *,
    n_reference_models: int = 16,
    attacks: Sequence[str] = REFERENCE_STUDY_ATTACKS,
    n_members: int = 600,
    hidden_layer_sizes: tuple[int, ...] = (256,),
    max_iter: int = 300,
    n_jobs: int | None = None,
    executor: str = "local",
    cache_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    augmentations: Sequence[Callable[[Any], Any]] | None = None,
) -> list[Any]:
    """Audit an overfit MLP on sklearn digits with every membership attack that applies.

    Parameters
    ----------
    random_state : int, default=0
        Seeds the split, the target and the reference models: same seed, same numbers.
    n_reference_models : int, default=16
        Reference models shared by LiRA, RMIA and the shadow attack.
    attacks : sequence of str
        Attack names (default :data:`REFERENCE_STUDY_ATTACKS`).
    n_members : int, default=600
        Size of the target's training set (as many non-members are audited).
    hidden_layer_sizes, max_iter
        The MLP of the target and of the reference models.
    n_jobs, executor, cache_dir
        Parallel, resumable training of the reference models.
    progress : callable, optional
        Called with a short message at each step.
    augmentations : list of callables, optional
        LiRA with augmented queries (e.g. ``image_shifts((8, 8), 1)``); passed to
        :func:`~privaudit.audit_model`.

    Returns
    -------
    list of AttackResult
        One per attack, target ``digits-mlp``, dataset ``sklearn::digits``.

    References
    ----------
    .. [1] Carlini, N. et al. (2022). Membership Inference Attacks From First Principles.
       IEEE S&P 2022.
    """
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    from privaudit.audits import audit_model
    from privaudit.targets import SklearnTarget
    from privaudit.training import ReferenceSpec

    say = progress or (lambda message: None)
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(len(X))
    members, non_members = perm[:n_members], perm[n_members:2 * n_members]
    population = perm[2 * n_members:]
    audited = np.concatenate([members, non_members])
    labels = np.r_[np.ones(n_members, dtype=np.int8), np.zeros(n_members, dtype=np.int8)]
    seed = int(np.random.SeedSequence(random_state).generate_state(1)[0])

    def mlp() -> MLPClassifier:
        return MLPClassifier(hidden_layer_sizes, alpha=0.0, max_iter=max_iter,
                             random_state=seed)

    say(f"training the digits target: MLP {hidden_layer_sizes} on {n_members} images")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = mlp().fit(X[members], y[members])
        target = SklearnTarget(model, name="digits-mlp")
        results = audit_model(
            target, X[audited], y[audited], labels,
            population=(X[population], y[population]), attacks=list(attacks),
            reference=ReferenceSpec(recipe=mlp(), n_models=n_reference_models),
            record_ids=audited,
            dataset="sklearn::digits", random_state=random_state, n_jobs=n_jobs,
            executor=executor, cache_dir=cache_dir, progress=say,
            augmentations=augmentations,
        )
    train_acc = float(model.score(X[members], y[members]))
    test_acc = float(model.score(X[non_members], y[non_members]))
    for result in results:
        result.train_accuracy, result.test_accuracy = train_acc, test_acc
        result.extra["target_model"] = f"MLPClassifier{hidden_layer_sizes}"
    return list(results)  # the audit's AuditReport as the study's plain list of results
