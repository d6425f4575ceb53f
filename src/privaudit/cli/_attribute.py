"""``privaudit audit attribute``: attribute inference against a saved model.

The configuration (``--config``, YAML) has the sections of ``audit model`` (``target``,
``data``, ``population``, ``random_state``, ``report``) and these::

    sensitive:
      column: gender               # the sensitive attribute's column (or a list: a one-hot
                                   # group, candidates then lists of values)
      candidates: [male, female]   # default: the population's values
      alpha: null                  # a continuous attribute: right within alpha
      name: gender                 # how the report names it
    attacks: [model-inversion, confidence-ai, loss-ai, direct, shadow-ai]
    attack_params: {model-inversion: {use_prior: false}}   # requested attacks only
    reference: {n_models: 8}       # shadow-ai's shadow models (as in audit model; mode
                                   # auto or offline: they train on the population)
    executor: {name: local, n_jobs: 2}   # where shadow-ai's shadows train
    cache_dir: .privaudit-cache    # shadow-ai's shadows, reused by a rerun

``reference``, ``executor`` and ``cache_dir`` are read by ``shadow-ai`` only, and refused
without it; ``attack_params`` are checked against each attack's own parameters (the same
check as ``audit model``'s); ``model-inversion``'s ``sigma`` is for regression targets.
``data.id_column`` names the records: every result keeps their ids as its
``record_ids`` (saved with the scores).

The population (the attacker's records, with the attribute) is required: the attacks and
the model-free guesses are fitted on it, never on the audited records.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field

from privaudit.cli._audit_config import AuditConfig
from privaudit.cli._config import ModelKindRun
from privaudit.cli._errors import ConfigError, key_error
from privaudit.cli._sections import AuditFile, Name, Section, given_keys

if TYPE_CHECKING:
    import pandas as pd

    from privaudit._progress import Progress

__all__ = ["AttributeAuditFile", "load_attribute_config", "run_attribute_audit"]

#: The attack that needs a fitted membership attack object (the Python API only).
_MEMBERSHIP_AI = "membership-ai"


class SensitiveSection(Section):
    """``sensitive``: the attribute to infer."""

    column: Name | Annotated[list[Name], Field(min_length=1)]
    candidates: Annotated[list[Any], Field(min_length=2)] | None = None
    alpha: Annotated[float, Field(ge=0)] | None = None
    name: Name | None = None


class AttributeAuditFile(AuditFile):
    """The configuration of ``privaudit audit attribute``."""

    optional_sections: ClassVar[tuple[str, ...]] = (*AuditFile.optional_sections,
                                                    "attack_params")

    sensitive: SensitiveSection
    attacks: Annotated[list[Name], Field(min_length=1)] | None = None
    attack_params: dict[Name, dict[Name, Any]] = Field(default_factory=dict)


def _attack_names(schema: AttributeAuditFile) -> list[str]:
    from privaudit.audits import DEFAULT_ATTRIBUTE_ATTACKS

    return list(schema.attacks or DEFAULT_ATTRIBUTE_ATTACKS)


def _check(schema: AttributeAuditFile, source: str) -> None:
    from privaudit.attacks.attribute import ATTRIBUTE_ATTACKS, MembershipAttributeAttack
    from privaudit.audits import MODEL_FREE_GUESSES, SHADOW_AI
    from privaudit.cli._config import check_attack_params_key

    if schema.population is None:
        raise key_error("population", "the attacker's records with the sensitive attribute "
                        "(a table disjoint from data)", None, source)
    registry = {**ATTRIBUTE_ATTACKS, SHADOW_AI: MembershipAttributeAttack}
    known = sorted(set(registry) - set(MODEL_FREE_GUESSES) - {_MEMBERSHIP_AI})
    for i, name in enumerate(schema.attacks or []):
        if name == _MEMBERSHIP_AI:
            raise key_error(f"attacks[{i}]", f"one of {known}: {_MEMBERSHIP_AI!r} needs a "
                            "fitted membership attack object, which only the Python API "
                            f"(audit_attributes) can pass; {SHADOW_AI!r} is the same attack "
                            "with shadow models trained on the population", name, source)
        if name not in known:
            raise key_error(f"attacks[{i}]", f"one of {known}", name, source)
    names = _attack_names(schema)
    check_attack_params_key(names, schema.attack_params, registry.__getitem__, source)
    _check_shadow_keys(schema, names, source)


def _check_shadow_keys(schema: AttributeAuditFile, names: list[str], source: str) -> None:
    """``reference``, ``executor`` and ``cache_dir`` are read by shadow-ai's shadows only."""
    from privaudit.audits import SHADOW_AI

    if SHADOW_AI not in names:
        for key, value in given_keys(schema, "reference", "executor", "cache_dir").items():
            raise key_error(key, f"left out unless {SHADOW_AI!r} is in 'attacks' (only its "
                            "shadow models read it)", value, source)
    if schema.reference.mode == "online":
        raise key_error("reference.mode", f"'auto' or 'offline' ({SHADOW_AI}'s shadow models "
                        "train on halves of the population, never on audited records)",
                        schema.reference.mode, source)


def load_attribute_config(path: str | Path) -> ModelKindRun:
    """Read and check the configuration file of ``privaudit audit attribute``."""
    from privaudit.cli._config import load_model_kind

    return load_model_kind(path, AttributeAuditFile, _check, "attribute-report")


def _shadow_settings(cfg: AuditConfig, run: ModelKindRun, names: list[str]
                     ) -> dict[str, object]:
    """``reference`` and the run options of shadow-ai's shadows (refused without it).

    The executor goes as its name, ``n_jobs`` and ``address``: ``audit_attributes``
    resolves it once, with every other run option.
    """
    from privaudit.audits import SHADOW_AI
    from privaudit.cli._run import _load_recipe

    if SHADOW_AI not in names:
        return {}
    return {"reference": cfg.reference_spec(_load_recipe(cfg, run.base)),
            "executor": cfg.executor, "n_jobs": cfg.n_jobs, "address": cfg.address,
            "cache_dir": cfg.cache_dir}


def _check_sensitive(s: SensitiveSection, X: pd.DataFrame, X_pop: pd.DataFrame,
                     cfg: AuditConfig, source: str) -> None:
    """Refuse, naming the key, column and file, what audit_attributes would refuse later."""
    columns = [s.column] if isinstance(s.column, str) else list(s.column)
    missing = [c for c in columns if c not in X.columns]
    if missing:
        raise ConfigError(f"The 'sensitive.column' key of {source} names {missing}, "
                          f"which are not feature columns of {cfg.data_path.name} "
                          f"({list(X.columns)[:10]}...).")
    data = f"the data file '{cfg.data_path}'"
    pop = f"the population file '{cfg.population_path}'"
    for table, where in ((X, data), (X_pop, pop)):
        _check_no_nan(table, columns, where)
    if s.alpha is not None:
        _check_numeric(X_pop, columns, s.alpha, pop, source)
        return
    audited = _rows(X, columns)
    if s.candidates is not None:
        known = {tuple(c) if isinstance(c, list) else c for c in s.candidates}
        absent = [v for v in audited if v not in known]
        if absent:
            raise key_error("sensitive.candidates", f"every value the column(s) {columns} of "
                            f"{data} take (it also holds {absent[0]!r})", s.candidates, source)
        return
    _check_population_values(X, X_pop, columns, data, pop)


def _rows(table: pd.DataFrame, columns: list[str]) -> list[Any]:
    """The sensitive value of each row: a value, or a tuple for a one-hot group."""
    if len(columns) == 1:
        return table[columns[0]].tolist()
    return [tuple(r) for r in table[columns].itertuples(index=False)]


def _check_no_nan(table: pd.DataFrame, columns: list[str], where: str) -> None:
    """No missing value in a sensitive column (the truth of a record would be unknown)."""
    import numpy as np

    for c in columns:
        nan = np.flatnonzero(table[c].isna().to_numpy())
        if nan.size:
            raise ConfigError(f"The sensitive column {c!r} (sensitive.column) of {where} "
                              f"has NaN at row {int(nan[0])} (from 0; {nan.size} rows): "
                              "every record needs its true value.")


def _check_numeric(X_pop: pd.DataFrame, columns: list[str], alpha: float, where: str,
                   source: str) -> None:
    """``alpha`` is the tolerance of a continuous (numeric) attribute."""
    import pandas as pd

    text = [c for c in columns if not pd.api.types.is_numeric_dtype(X_pop[c])]
    if text:
        raise key_error("sensitive.alpha", f"left out for the non-numeric column {text[0]!r} "
                        f"of {where} (alpha is the tolerance of a continuous attribute; a "
                        "categorical one is guessed exactly)", alpha, source)


def _check_population_values(X: pd.DataFrame, X_pop: pd.DataFrame, columns: list[str],
                             data: str, pop: str) -> None:
    """The candidates default to the population's values: two at least, every audited one."""
    import pandas as pd

    values = set(_rows(X_pop, columns))
    if len(values) < 2:
        raise ConfigError(f"The sensitive column(s) {columns} (sensitive.column) of {pop} "
                          f"take one value only ({sorted(values, key=repr)[:1]}): the attacks "
                          "choose among the population's values, give at least two (or list "
                          "them in sensitive.candidates).")
    absent = [v for v in _rows(X, columns) if v not in values]
    if not absent:
        return
    numeric = all(pd.api.types.is_numeric_dtype(X[c]) for c in columns)
    hint = ("give sensitive.alpha for a continuous attribute (or sensitive.candidates)"
            if numeric else "list every value in sensitive.candidates")
    raise ConfigError(f"The sensitive column(s) {columns} (sensitive.column) of {data} "
                      f"hold {absent[0]!r}, which {pop} never takes ({len(absent)} audited "
                      f"records): {hint}.")


def run_attribute_audit(run: ModelKindRun, *, progress: Progress | None = None) -> Path:
    """Load the model and the tables, run the attribute attacks, write the report."""
    from privaudit.audits import audit_attributes
    from privaudit.cli._config import model_sections
    from privaudit.cli._datafiles import load_records
    from privaudit.cli._run import _load_target
    from privaudit.report import build_report

    schema = run.config
    cfg = model_sections(schema, run.base, run.source)
    target = _load_target(cfg, run.base)
    (X, y, labels, ids), population = load_records(cfg, target)
    s = schema.sensitive
    _check_sensitive(s, X, population[0], cfg, run.source)
    results = audit_attributes(
        target, X, y, labels, sensitive=s.column, population=population,
        candidates=s.candidates, alpha=s.alpha, attacks=schema.attacks,
        attack_params=schema.attack_params or None, sensitive_name=s.name or "",
        record_ids=ids,
        **_shadow_settings(cfg, run, _attack_names(schema)),
        dataset=cfg.data_path.name, random_state=schema.random_state,
        results_dir=run.out / "results", progress=progress)
    return build_report(results, run.out, n_bootstrap=schema.report.n_bootstrap,
                        progress=progress, random_state=schema.random_state,
                        title=f"Attribute inference against {target.name}")
