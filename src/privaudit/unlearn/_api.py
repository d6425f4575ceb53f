"""One entry point for every unlearning algorithm: :func:`unlearn`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from privaudit._validation import param_error
from privaudit.unlearn._basic import fine_tune, gradient_ascent, retrain
from privaudit.unlearn._common import HYPERPARAMETER_RULES, DataPair
from privaudit.unlearn._distill import bad_teacher, scrub
from privaudit.unlearn._saliency import salun, sfr_on

__all__ = ["METHODS", "check_method_params", "method_hyperparameters", "unlearn"]

#: The algorithms by their short name in the Apollo paper's tables.
METHODS: dict[str, Callable[..., Any]] = {
    "RT": retrain,
    "FT": fine_tune,
    "GA": gradient_ascent,
    "BT": bad_teacher,
    "SCRUB": scrub,
    "SalUn": salun,
    "SFR-on": sfr_on,
}


def unlearn(
    model: Any,
    forget: DataPair,
    retain: DataPair,
    *,
    method: str = "GA",
    random_state: int = 0,
    training_set: DataPair | None = None,
    **hyperparameters: Any,
) -> Any:
    """Unlearn the ``forget`` records from a torch classifier; return a new model.

    Parameters
    ----------
    model : torch.nn.Module
        The original classifier, returning logits of shape ``(n_records, n_classes)``; it is
        never modified (every method works on a deep copy or a fresh network). If it has a
        ``classes_`` attribute (privaudit's torch recipes set it), labels are read in that
        order; otherwise labels must be the integers ``0 .. n_classes - 1``.
    forget, retain : (X, y)
        The records to forget and the records to keep. A record (feature row) in both is
        refused; that ``forget`` was in the training set cannot be checked here.
    method : {"RT", "FT", "GA", "BT", "SCRUB", "SalUn", "SFR-on"}, default="GA"
        The algorithm (see :data:`METHODS` and each function's documentation).
    random_state : int, default=0
        Seeds every random draw (inside a forked torch generator: the caller's global
        random state is untouched); the same seed gives the same weights.
    training_set : (X, y), optional
        The original model's training set: when given, every forget and retain record
        must be in it (features and label), or the request is refused before any work
        (unlearning a record the model never saw is a silent no-op that an audit would
        then score as "forgotten").
    **hyperparameters
        The method's own keyword arguments (``epochs``, ``lr``, ``batch_size``...).

    Returns
    -------
    torch.nn.Module
        The unlearned model, in evaluation mode.

    Raises
    ------
    ValueError
        For an unknown method, overlapping sets, a model that is not a classifier or a bad
        hyperparameter (the message names the parameter).
    TypeError
        For a hyperparameter the method does not take.

    References
    ----------
    .. [1] Tang, Joshi, Kundu. "Apollo: A Posteriori Label-Only Membership Inference Attack
       Towards Machine Unlearning" (the algorithms it audits).

    Examples
    --------
    >>> import torch  # doctest: +SKIP
    >>> new = unlearn(net, (X_f, y_f), (X_r, y_r), method="SCRUB", epochs=5)  # doctest: +SKIP
    """
    check_method_params(method, hyperparameters, func="unlearn")
    if training_set is not None:
        _check_in_training_set(forget, retain, training_set)
    return METHODS[method](model, forget, retain, random_state=random_state,
                           **hyperparameters)


def method_hyperparameters(method: str) -> list[str]:
    """The hyperparameters ``method`` takes (its keyword arguments but the seed), sorted."""
    fixed = {"model", "forget", "retain", "random_state"}
    return sorted(set(inspect.signature(METHODS[method]).parameters) - fixed)


def check_method_params(method: Any, params: Mapping[str, Any] | None, *,
                        func: str = "check_method_params", param: str | None = None) -> None:
    """Refuse an unknown method, or a hyperparameter it does not take or a bad value.

    The one rule of :func:`unlearn` (which calls it first) and of every caller that runs
    an algorithm later (:func:`~privaudit.audits.audit_unlearning`, whose shadows unlearn
    after minutes of training): the keys must be among the method's hyperparameters
    (:func:`method_hyperparameters`, listed when not) and each value must pass the rule
    the algorithm itself checks it by (``HYPERPARAMETER_RULES``).

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    params : mapping or None
        ``{hyperparameter: value}``.
    func : str
        The caller, named in the messages.
    param : str, optional
        The caller's name of ``params`` (``"params"``): a bad value is then named
        ``'<param>.<key>'``. Default: the keys are the caller's own keyword arguments
        (``unlearn``'s ``**hyperparameters``), each named as itself.

    Raises
    ------
    ValueError
        For an unknown method, or a bad value (naming the key and what it must be).
    TypeError
        For params that are not a mapping, or a hyperparameter the method does not take
        (naming it and listing the valid ones).
    """
    if not isinstance(method, str) or method not in METHODS:
        raise param_error("method", func, f"one of {sorted(METHODS)}", method)
    where = f"{func}(method={method!r})" if param is None else func
    if params is not None and not isinstance(params, Mapping):
        raise param_error(param or "hyperparameters", where, "a mapping of hyperparameter "
                          "names to values", f"<{type(params).__name__}>", error=TypeError)
    known = method_hyperparameters(method)
    unknown = sorted(set(params or {}) - set(known), key=str)
    if unknown:
        raise param_error(param or "hyperparameters", where, f"among {known} (the "
                          f"hyperparameters of {method})", f"<unknown {unknown}>",
                          error=TypeError)
    for key, value in (params or {}).items():
        HYPERPARAMETER_RULES[key](value, key if param is None else f"{param}.{key}", where)


def _check_in_training_set(forget: DataPair, retain: DataPair, training: DataPair) -> None:
    """Every forget and retain record (features and label) must be a training record."""
    import numpy as np

    from privaudit._rows import rows_found_in, with_label

    train = with_label(*training)
    for name, pair in (("forget", forget), ("retain", retain)):
        missing = np.flatnonzero(~rows_found_in(with_label(*pair), train))
        if missing.size:
            raise param_error(name, "unlearn", "records of the training set (features and "
                              "label)", f"<{missing.size} record(s) not in it, e.g. row "
                              f"{int(missing[0])}>")
