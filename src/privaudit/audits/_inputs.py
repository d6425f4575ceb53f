"""Checks of an audit's inputs, done before any query or training."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privaudit._validation import (
    REFERENCE_MODES,
    align_on_index,
    check_attack_params,
    check_binary_labels,
    check_unique_ids,
    param_error,
)

__all__ = [
    "check_attack_names",
    "check_population",
    "check_records",
    "n_rows",
    "population_overlap",
    "reference_fields_set",
    "reference_spec",
]

_FUNC = "audit_model"


def n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


def population_overlap(X: Any, y: Any, X_pop: Any, y_pop: Any) -> tuple[int, int, int]:
    """Audited rows that the population repeats on what the model sees (features, label).

    Returns
    -------
    (n_shared, population_row, audited_row)
        How many audited rows equal some population row, and the first such pair
        (positions, from 0; ``-1`` when none).
    """
    from privaudit._rows import rows_found_in, with_label

    audited, pop = with_label(X, y), with_label(X_pop, y_pop)
    shared = np.flatnonzero(rows_found_in(audited, pop))
    if not shared.size:
        return 0, -1, -1
    first = int(shared[0])
    partner = np.flatnonzero(rows_found_in(pop, audited.iloc[[first]]))
    return int(shared.size), int(partner[0]), first


def _check_population_disjoint(X: Any, y: Any, X_pop: Any, y_pop: Any,
                               func: str = _FUNC, why: str = "a reference model trained on "
                               "such a row counts as trained on the audited record") -> None:
    n_shared, pop_row, audited_row = population_overlap(X, y, X_pop, y_pop)
    if n_shared:
        raise param_error(
            "population", func,
            f"free of the audited records as the model sees them (features and label): {why}",
            f"<{n_shared} audited rows also in the population, e.g. audited row "
            f"{audited_row} = population row {pop_row} (from 0)>",
        )



#: audit_model's deprecated flat keywords -> the ReferenceSpec field each one sets.
FLAT_REFERENCE_KEYWORDS = {
    "recipe": "recipe", "n_reference_models": "n_models", "reference_mode": "mode",
    "reference_fraction": "train_fraction", "wrap": "to_target",
}


def reference_spec(reference: Any, *, func: str = _FUNC,
                   names: dict[str, str] | None = None,
                   category: type[Warning] = DeprecationWarning, **flat: Any) -> Any:
    """The audit's :class:`~privaudit.training.ReferenceSpec`, from it or the flat keywords.

    ``flat`` holds the old flat keywords of ``func`` (``names`` maps each to the field of
    :class:`~privaudit.training.ReferenceSpec` it sets; default
    :data:`FLAT_REFERENCE_KEYWORDS`, those of :func:`audit_model`; ``None`` when not
    given): they still work, with one warning of ``category`` naming the field to set
    instead. Mixing a spec and flat keywords is an error; a bad flat value is refused under
    the keyword the caller used.
    """
    from privaudit.training import ReferenceSpec

    names = FLAT_REFERENCE_KEYWORDS if names is None else names
    given = {k: v for k, v in flat.items() if v is not None}
    if reference is not None:
        if not isinstance(reference, ReferenceSpec):
            raise param_error("reference", func, "a privaudit.training.ReferenceSpec",
                              f"<{type(reference).__name__}>", error=TypeError)
        if given:
            name = next(iter(given))
            raise param_error(name, func, "left out when 'reference' is given (set "
                              f"ReferenceSpec({names[name]}=...))", given[name])
        return reference
    if not given:
        return ReferenceSpec()
    _warn_flat(given, func, names, category)
    fields = {names[k]: v for k, v in given.items()}
    try:
        return ReferenceSpec(**fields)
    except (TypeError, ValueError) as exc:  # name the keyword the caller used
        message = str(exc)
        for old, new in names.items():
            message = message.replace(f"'{new}' parameter of ReferenceSpec",
                                      f"'{old}' parameter of {func}")
        raise type(exc)(message) from None


def reference_fields_set(spec: Any, *, besides: Sequence[str]) -> list[str]:
    """The fields of ``spec`` set away from their defaults, other than ``besides``.

    What a kind that fixes the other fields of a :class:`~privaudit.training.ReferenceSpec`
    must refuse; the one check behind every "a ReferenceSpec with only ..." error
    (unlearning reads a recipe and a count; the generator game a count and its mode).
    """
    import dataclasses

    from privaudit.training import ReferenceSpec

    default = ReferenceSpec()
    return [f.name for f in dataclasses.fields(spec) if f.name not in besides
            and getattr(spec, f.name) != getattr(default, f.name)]


def _warn_flat(given: dict[str, Any], func: str, names: dict[str, str],
               category: type[Warning]) -> None:
    import warnings

    old = ", ".join(f"'{k}'" for k in given)
    new = ", ".join(f"{names[k]}=..." for k in given)
    warnings.warn(f"{func}: {old} {'is' if len(given) == 1 else 'are'} deprecated and will "
                  f"be removed; give reference=ReferenceSpec({new}) (from "
                  "privaudit.training).", category, stacklevel=4)


def check_records(X: Any, y: Any, labels: Any, record_ids: Any, func: str = _FUNC) -> tuple:
    """Align pandas inputs on their index, check lengths, labels and unique ids."""
    aligned = align_on_index({"X": X, "y": y, "labels": labels, "record_ids": record_ids},
                             func=func)
    X, record_ids = aligned["X"], aligned["record_ids"]
    n = n_rows(X)
    if n == 0:
        raise param_error("X", func, "non-empty", "<no records>")
    y_arr = np.asarray(aligned["y"])
    if y_arr.ndim != 1 or y_arr.shape[0] != n:
        raise param_error("y", func, f"one label per row of X ({n})",
                          f"<array of shape {y_arr.shape}>")
    lab = check_binary_labels(aligned["labels"], func=func)
    if lab.shape[0] != n:
        raise param_error("labels", func, f"one membership label per row of X ({n})",
                          f"<length {lab.shape[0]}>")
    if record_ids is not None:
        ids = np.asarray(record_ids)
        if ids.ndim != 1 or ids.shape[0] != n:
            raise param_error("record_ids", func, f"one id per row of X ({n})",
                              f"<array of shape {ids.shape}>")
        check_unique_ids(ids, param="record_ids", func=func)
    return X, y_arr, lab, record_ids



def check_population(population: Any, X: Any, y: np.ndarray, func: str = _FUNC,
                     why: str | None = None) -> tuple[Any, Any]:
    """``(X_population, y_population)`` aligned and checked disjoint from the audit."""
    if population is None:
        return None, None
    if not isinstance(population, tuple | list) or len(population) != 2:
        raise param_error("population", func, "a pair (X_population, y_population)",
                          f"<{type(population).__name__}>", error=TypeError)
    pair = align_on_index({"population[0]": population[0],
                           "population[1]": population[1]}, func=func)
    X_pop, y_pop = pair["population[0]"], np.asarray(pair["population[1]"])
    if n_rows(X_pop) != y_pop.shape[0]:
        raise param_error("population", func, "a pair with one label per row",
                          f"<{n_rows(X_pop)} rows, {y_pop.shape[0]} labels>")
    _check_population_disjoint(X, y, X_pop, y_pop, func,
                               *(() if why is None else (why,)))
    return X_pop, y_pop


def check_attack_names(
    attacks: Any, attack_params: Any, reference_mode: Any, task: str
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The attack names (defaults by task), their parameters; refuse unknown or repeated.

    ``attack_params`` goes through the one check of every audit and configuration
    (:func:`~privaudit._validation.check_attack_params`): keys of requested attacks, each
    attack's own parameters (the valid ones listed), values the attack accepts.
    """
    from privaudit.attacks import available_attacks
    from privaudit.attacks.membership import SET_BY_NAME, membership_attack_class
    from privaudit.audits._plan import default_attacks

    if attacks is None:
        attacks = default_attacks(task)
    if isinstance(attacks, str) or not isinstance(attacks, Sequence) or not attacks:
        raise param_error("attacks", _FUNC, "a non-empty list of attack names", attacks,
                          error=TypeError)
    known = set(available_attacks())
    unknown = [a for a in attacks if a not in known]
    if unknown:
        raise param_error("attacks", _FUNC, f"names among {sorted(known)}", unknown)
    if len(set(attacks)) != len(attacks):
        raise param_error("attacks", _FUNC, "names without repetition", list(attacks))
    if attack_params is not None and not isinstance(attack_params, Mapping):
        raise param_error("attack_params", _FUNC, "a dict {attack name: {parameter: value}}",
                          f"<{type(attack_params).__name__}>", error=TypeError)
    params = dict(attack_params or {})
    check_attack_params(list(attacks), params, membership_attack_class, func=_FUNC,
                        set_by_audit=SET_BY_NAME)
    REFERENCE_MODES.check(reference_mode, param="reference_mode", func=_FUNC)
    return list(attacks), params
