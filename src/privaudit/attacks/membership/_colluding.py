"""The colluding adversary of Yeom et al. (Adversary 3): membership read through secret keys.

A model trained by the colluding algorithm
(:class:`privaudit.training.ColludingRecipe`, Algorithm 1) answers ``G_{K_j}(x)`` at the
input ``F_{K_j}(x)`` for each of its training records and each key; the adversary, who
holds the keys, asks for those labels and says "member" when every answer matches. The
model need not overfit: this is Yeom et al.'s proof that overfitting is not necessary for
membership leakage (Theorem 4).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import param_error
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import ParameterFreeAttack, _task_error
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs, QueryBudgetExceededError, Target, as_target

__all__ = ["ColludingAttack"]


def _keys_of(recipe: Any, func: str) -> Any:
    """The keyed functions of ``recipe``: a ColludingRecipe's ``keys``, or ColludingKeys."""
    if recipe is None:
        try:
            from privaudit.training import ColludingKeys
        except ImportError:  # pragma: no cover - until the name is exported
            raise param_error(
                "recipe", func, "the ColludingRecipe (or ColludingKeys) the target was "
                "trained with", None, error=TypeError,
            ) from None
        return ColludingKeys()
    keys = getattr(recipe, "keys", recipe)
    if not (callable(getattr(keys, "probes", None)) and hasattr(keys, "n_keys")):
        raise param_error(
            "recipe", func,
            "the ColludingRecipe (or ColludingKeys) the target was trained with",
            f"<{type(recipe).__name__}>", error=TypeError,
        )
    return keys


def _record_array(X: Any, func: str) -> tuple[NDArray[Any], Any]:
    """``X`` as a float array of at least 2 dimensions, and its DataFrame columns.

    A float array keeps its dtype (the keyed points are sent in it); anything else
    becomes float64.
    """
    columns = getattr(X, "columns", None)
    raw = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X)
    try:
        arr = raw if raw.dtype.kind == "f" else np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(
            "X", func, "numeric records (the keyed functions hash their values)",
            f"<{type(X).__name__} with non-numeric values>", error=TypeError,
        ) from None
    if arr.ndim < 2 or arr.shape[0] == 0:
        raise param_error("X", func, "a non-empty array of records (n_records, ...)",
                          f"<array of shape {arr.shape}>")
    return arr, columns


class ColludingAttack(ParameterFreeAttack):
    """Yeom et al.'s colluding adversary (Adversary 3): ask the keyed points, compare.

    For each audited record ``x`` the target is asked the label of ``F_{K_j}(x)`` for the
    ``k`` keys of the recipe it was trained with (one batched query of ``n * k`` records);
    the score is the fraction of answers equal to ``G_{K_j}(x)``, and the hard guess is
    "member" when all ``k`` are. Predicted labels suffice: it runs on a
    :class:`~privaudit.targets.LabelOnlyTarget`. The true labels ``y`` are not read.

    Parameters
    ----------
    recipe : ColludingRecipe or ColludingKeys, optional
        The colluding training recipe (:class:`privaudit.training.ColludingRecipe`) the
        target was trained with, or its keys (:class:`privaudit.training.ColludingKeys`).
        ``None``: ``ColludingKeys()``, the public default key that
        ``ColludingRecipe(estimator)`` uses too.

    Notes
    -----
    **Advantage.** A member of a model that fitted its added points passes the test for
    every key; a non-member passes by chance, when the model's answer at each
    ``F_{K_j}(x)`` (far from all data, hence unrelated to ``G``) equals the pseudo-random
    ``G_{K_j}(x)``: probability ``C ** -k`` for ``C`` classes. Theorem 4 gives the
    advantage ``1 - mu(n, D) - 2 ** -mk`` with ``m = log2 C`` (``mu`` the chance that a
    non-member equals a member); measured on digits (10 classes, 2 keys, an RBF SVM or a
    1-nearest-neighbour classifier, half the data in training) it is 0.99. Against a model
    trained without collusion it is 0: the answers at the keyed points are unrelated to
    membership.

    **Queries.** ``n * k`` record queries, checked against the target's remaining budget
    before any is made (:class:`~privaudit.targets.QueryBudgetExceededError` otherwise).
    ``outputs=`` (the target's outputs on the audited records) is accepted and not read:
    the clean answers carry no colluding signal.

    **Classes.** ``G`` draws from the target's ``classes_``, which equal the training
    labels' distinct values for a model trained by the recipe.

    **Scores.** ``raw_statistic`` is the number of matching keys, the score that number
    divided by ``k``. Records must be given as the model was trained on them (the same
    numbers; the dtype may differ): ``F`` and ``G`` hash the record's values.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M., Jha, S. "Privacy Risk in Machine
       Learning: Analyzing the Connection to Overfitting." CSF 2018, Section 4
       (Adversary 3, Theorem 4).
    .. [2] Song, C., Ristenpart, T., Shmatikov, V. "Machine Learning Models that Remember
       Too Much." ACM CCS 2017 (malicious training algorithms that leak their training
       data through black-box queries on synthetic inputs).

    Examples
    --------
    >>> from privaudit.attacks.membership import ColludingAttack
    >>> ColludingAttack()
    ColludingAttack()
    """

    name: ClassVar[str] = "colluding"
    _tags: ClassVar[AttackTags] = AttackTags(tasks=("classification",), queries_target=True)

    def __init__(self, recipe: Any = None) -> None:
        self.recipe = recipe

    def check_params(self) -> None:
        """``recipe`` None, a ColludingRecipe or its ColludingKeys (read again by ``score``)."""
        _keys_of(self.recipe, type(self).__name__)

    def planned_queries(self, n_records: int) -> int:
        """Record queries a run on ``n_records`` records makes: ``n_records * n_keys``."""
        keys = _keys_of(self.recipe, f"{type(self).__name__}.planned_queries")
        return int(n_records) * int(keys.n_keys)

    # ------------------------------------------------------------------ scoring
    def _statistic(
        self, target: Any, X: Any, outputs: ModelOutputs | None, func: str,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], dict[str, Any], Target]:
        keys = _keys_of(self.recipe, func)
        if target is None or X is None:
            missing = "target" if target is None else "X"
            raise param_error(
                missing, func,
                "given: the colluding adversary queries the target on the keyed points of "
                "the records, so outputs= alone is not enough", None, error=TypeError,
            )
        resolved = as_target(target)
        if resolved.task != "classification":
            raise _task_error(func, ("classification",), resolved.task, resolved.name)
        records, columns = _record_array(X, func)
        n = records.shape[0]
        if outputs is not None:
            if not isinstance(outputs, ModelOutputs):
                raise param_error("outputs", func, "a privaudit.targets.ModelOutputs",
                                  f"<{type(outputs).__name__}>", error=TypeError)
            if len(outputs) != n:
                raise param_error("outputs", func, f"outputs on the {n} records of X",
                                  f"<outputs on {len(outputs)} records>")
        k = int(keys.n_keys)
        planned = n * k
        max_q = getattr(resolved, "max_queries", None)
        if max_q is not None:
            remaining = int(max_q) - int(getattr(resolved, "n_queries", 0))
            if planned > remaining:
                raise QueryBudgetExceededError(
                    f"{type(self).__name__} needs {planned} record queries for {n} records "
                    f"({k} keys), but target {resolved.name!r} has {remaining} of "
                    f"max_queries={max_q} left. Nothing was queried. Audit fewer records "
                    "or raise the budget."
                )
        classes = resolved.classes_
        if classes is None:  # pragma: no cover - classification targets have classes
            raise ValueError(f"Target {resolved.name!r} does not say its classes.")
        points, expected = keys.probes(records, classes)
        if records.dtype.kind == "f":
            points = points.astype(records.dtype, copy=False)
        if columns is not None:
            import pandas as pd

            points = pd.DataFrame(points.reshape(planned, -1), columns=columns)
        start = int(getattr(resolved, "n_queries", 0))
        answers = resolved.query(points, expected)
        if answers.predictions is None:  # pragma: no cover - classification outputs have them
            raise ValueError("The target's outputs carry no predicted labels.")
        match = np.asarray(answers.predictions == expected, dtype=bool).reshape(n, k)
        raw = match.sum(axis=1).astype(np.float64)
        n_classes = len(classes)
        info = {
            "n_keys": k,
            "queries_planned": planned,
            "queries_used": int(getattr(resolved, "n_queries", 0)) - start,
            "n_classes": n_classes,
        }
        return raw, raw / k, info, resolved

    def score(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
    ) -> NDArray[np.float64]:
        """Fraction of the keys whose keyed point the target labels as ``G`` says.

        Parameters
        ----------
        target : Target or fitted scikit-learn classifier
            The audited model; only its predicted labels are read.
        X : array-like of shape (n_records, ...)
            Audited records (numeric, as the model was trained on them).
        y : array-like of shape (n_records,), optional
            Not read (the adversary needs the record only).
        outputs : ModelOutputs, optional
            Accepted and not read.

        Returns
        -------
        ndarray of shape (n_records,)
            In ``{0, 1/k, ..., 1}``; 1 = every key matches.

        Raises
        ------
        QueryBudgetExceededError
            Before any query, if ``n * k`` exceeds the target's remaining budget.
        """
        func = f"{type(self).__name__}.score"
        return self._statistic(target, X, outputs, func)[1]

    def run(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
        record_ids: ArrayLike | None = None,
        dataset: str = "",
        target_name: str | None = None,
    ) -> AttackResult:
        """Score the audited records and package the result (see :meth:`score`).

        Parameters
        ----------
        target, X, y, outputs
            See :meth:`score`.
        labels : array-like of 0/1
            Ground truth, 1 = member.
        record_ids : array-like, optional
            Identifiers of the audited records.
        dataset : str
            Dataset name for provenance.
        target_name : str, optional
            Overrides the target's name.

        Returns
        -------
        AttackResult
            ``predictions`` is Adversary 3's guess (1 when all ``k`` keys match),
            ``raw_statistic`` the number of matching keys; ``extra`` holds ``n_keys``,
            the queries planned and used; ``chance_match_rate`` is ``C ** -k``.
        """
        func = f"{type(self).__name__}.run"
        self._require_labels(labels, func)
        if X is not None:
            # The labels are checked before any query is spent.
            self._check_labels(labels, len(_record_array(X, func)[0]),  # type: ignore[arg-type]
                               func)
        raw, scores, info, resolved = self._statistic(target, X, outputs, func)
        lab = self._check_labels(labels, len(scores), func)  # type: ignore[arg-type]
        result = self._package(
            labels=lab, scores=scores,
            target_name=target_name if target_name is not None else resolved.name,
            record_ids=record_ids, dataset=dataset, raw=raw, raw_name="colluding_matches",
            predictions=(scores >= 1.0).astype(np.int8), extra=info,
        )
        # A non-member of a model whose answers at the keyed points are unrelated to G
        # passes all k tests with this probability (Yeom et al.'s 2 ** -mk).
        result.chance_match_rate = float(info["n_classes"]) ** -info["n_keys"]
        return result
