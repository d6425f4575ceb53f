"""``privaudit audit unlearning``: did a saved torch classifier forget its records.

The configuration (``--config``, YAML) has the sections of ``audit model`` (``target``,
``data``, ``population``, ``reference``, ``executor``, ``cache_dir``, ``random_state``,
``report``) and these::

    data:
      membership_column: forgotten # 1 = a record the model unlearned, 0 = never trained on
    reference:
      n_models: 16                 # shadows per pool
      recipe: {type: torch-mlp, hidden: [256], epochs: 60}   # how the original trained
    unlearning:
      method: GA                   # RT, FT, GA, BT, SCRUB, SalUn, SFR-on
      params: {lr: 0.002, epochs: 5}
      train_size: 2000             # the original model's training-set size
    attacks: [u-mia, u-lira, apollo, apollo-offline]
    attack_params: {apollo: {n_rounds: 30}}
    trajectories: true             # Apollo's UNDER x OVER heatmap (2 T queries per record)

The population (records of the same distribution, disjoint from the audited ones) trains
the shadows and is required; so is a torch recipe (the shadows unlearn as the target did).

Every key has an effect or is refused: ``reference.mode`` (other than ``auto``) and
``reference.train_fraction`` are refused, since each attack reads the pool it needs
(online shadows that unlearned for U-LiRA and Apollo, offline ones for Apollo offline and
U-MIA) and their training sets follow ``unlearning.train_size`` (at least the number of
forgotten records); ``attack_params`` only for attacks that run, checked against their
parameters; ``unlearning.forget_fraction`` only with U-MIA (or offline Apollo of kind
``auto``), ``trajectories`` only with Apollo; ``unlearning.params`` must be the method's
hyperparameters with values it accepts (:func:`privaudit.unlearn.check_method_params`),
checked before any shadow trains. ``data.id_column`` names the records: the
results carry their ids (``record_id`` in ``scores.csv``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field

from privaudit.cli._config import ModelKindRun
from privaudit.cli._errors import ConfigError, key_error
from privaudit.cli._sections import AuditFile, Name, Section

__all__ = ["UnlearningAuditFile", "load_unlearning_config", "run_unlearning_audit"]


class UnlearningSection(Section):
    """``unlearning``: the algorithm the model was unlearned with."""

    method: Name
    params: dict[Name, Any] = Field(default_factory=dict)
    train_size: Annotated[int, Field(ge=2)] | None = None
    forget_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None


class UnlearningAuditFile(AuditFile):
    """The configuration of ``privaudit audit unlearning``."""

    optional_sections: ClassVar[tuple[str, ...]] = (*AuditFile.optional_sections,
                                                    "attack_params")

    unlearning: UnlearningSection
    attacks: Annotated[list[Name], Field(min_length=1)] | None = None
    attack_params: dict[Name, dict[Name, Any]] = Field(default_factory=dict)
    trajectories: bool = False


def _check(schema: UnlearningAuditFile, source: str) -> None:
    from privaudit.unlearn import METHODS, check_method_params

    u = schema.unlearning
    if u.method not in METHODS:
        raise key_error("unlearning.method", f"one of {sorted(METHODS)}", u.method, source)
    # The rule the algorithm applies, before any shadow trains (named unlearning.params.<k>).
    check_method_params(u.method, u.params, func=source, param="unlearning.params")
    if schema.population is None:
        raise key_error("population", "a table of records the model never trained on, "
                        "disjoint from data (the shadows train on it)", None, source)
    recipe = schema.reference.recipe
    if recipe is None or recipe.type not in ("torch-mlp", "torch-cnn"):
        raise key_error("reference.recipe.type", "torch-mlp or torch-cnn (the shadows are "
                        "torch classifiers that unlearn as the target did)",
                        None if recipe is None else recipe.type, source)
    _check_pools(schema, source)
    _check_attacks(schema, source)


def _check_pools(schema: UnlearningAuditFile, source: str) -> None:
    """The attacks fix their pools; their training sets follow ``unlearning.train_size``."""
    if schema.reference.mode != "auto":
        raise key_error("reference.mode", "'auto' or left out (each attack reads the pool "
                        "it needs: online shadows that unlearned for U-LiRA and Apollo, "
                        "offline ones for Apollo offline and U-MIA)", schema.reference.mode,
                        source)
    if schema.reference.train_fraction is not None:
        raise key_error("reference.train_fraction", "left out (the shadows train on as "
                        "many records as the original model: set 'unlearning.train_size')",
                        schema.reference.train_fraction, source)


def _check_attacks(schema: UnlearningAuditFile, source: str) -> None:
    from privaudit.attacks.unlearning import (
        SET_BY_AUDIT,
        unlearning_attack_class,
        unread_unlearning_settings,
    )
    from privaudit.audits import UNLEARNING_ATTACKS
    from privaudit.cli._config import check_attack_params_key

    for i, name in enumerate(schema.attacks or []):
        if name not in UNLEARNING_ATTACKS or name in (schema.attacks or [])[:i]:
            raise key_error(f"attacks[{i}]", f"one of {list(UNLEARNING_ATTACKS)}, not "
                            "listed before", name, source)
    names = list(schema.attacks or UNLEARNING_ATTACKS)
    check_attack_params_key(names, schema.attack_params, unlearning_attack_class, source,
                            set_by_audit=SET_BY_AUDIT)
    given = {"unlearning.forget_fraction": schema.unlearning.forget_fraction,
             "trajectories": schema.trajectories}
    unread = unread_unlearning_settings(
        names, schema.attack_params, forget_fraction=given["unlearning.forget_fraction"],
        trajectories=given["trajectories"])
    for key, value in given.items():
        readers = unread.get(key.rpartition(".")[2])
        if readers:
            raise key_error(key, f"left out unless {readers} is in 'attacks' (no other "
                            "attack reads it)", value, source)


def load_unlearning_config(path: str | Path) -> ModelKindRun:
    """Read and check the configuration file of ``privaudit audit unlearning``."""
    from privaudit.cli._config import load_model_kind

    return load_model_kind(path, UnlearningAuditFile, _check, "unlearning-report")


def _split(X: Any, y: Any, labels: Any, ids: Any
           ) -> tuple[tuple[Any, Any], tuple[Any, Any], Any]:
    """Forgotten and held-out records, and the ids in the audit's order (forgotten first)."""
    import numpy as np

    forgotten = np.asarray(labels) == 1
    X_arr, y_arr = np.asarray(X, dtype=np.float32), np.asarray(y)
    order = None if ids is None else np.r_[np.asarray(ids)[forgotten],
                                           np.asarray(ids)[~forgotten]]
    return ((X_arr[forgotten], y_arr[forgotten]), (X_arr[~forgotten], y_arr[~forgotten]),
            order)


def _check_train_size(u: UnlearningSection, n_forget: int, n_pop: int, run: ModelKindRun,
                      cfg: Any) -> None:
    """``train_size``: at least the forgotten records, at most the population's rows."""
    data = cfg.data_path.name
    pop = f"population.path ({cfg.population_path.name}) has {n_pop} rows"
    if u.train_size is None:
        if n_pop < max(2, n_forget):
            raise ConfigError(f"The {pop}; the shadows train on as many records as the "
                              f"original model (unlearning.train_size, by default at least "
                              f"the {n_forget} forgotten records of {data}): give a larger "
                              "population, or set unlearning.train_size.")
        return
    if u.train_size < n_forget:
        raise key_error("unlearning.train_size", f"at least the number of forgotten records "
                        f"in {data} ({n_forget}): the original model trained on each",
                        u.train_size, run.source)
    if u.train_size > n_pop:
        raise key_error("unlearning.train_size", f"at most {n_pop}: {pop}, and the shadows "
                        "train on as many records as the original model", u.train_size,
                        run.source)


def _check_recipe_classes(schema: UnlearningAuditFile, labels: Any, run: ModelKindRun
                          ) -> None:
    """``reference.recipe.classes``, when given, must hold every label of the tables."""
    import numpy as np

    recipe = schema.reference.recipe
    classes = None if recipe is None else (recipe.model_extra or {}).get("classes")
    if classes is None:
        return
    unknown = sorted(set(np.unique(labels).tolist()) - set(classes), key=repr)
    if unknown:
        raise key_error("reference.recipe.classes", "every label of the data and population "
                        f"files (they also hold {unknown[:5]})", classes, run.source)


def run_unlearning_audit(run: ModelKindRun, *, progress: Any = None) -> Path:
    """Load the model and the tables, run the unlearning attacks, write the report."""
    import numpy as np

    from privaudit.audits import audit_unlearning
    from privaudit.cli._config import model_sections
    from privaudit.cli._datafiles import load_records
    from privaudit.cli._run import _load_recipe, _load_target
    from privaudit.report import build_report
    from privaudit.training import ReferenceSpec, get_executor

    schema = run.config
    cfg = model_sections(schema, run.base, run.source)
    target = _load_target(cfg, run.base)
    (X, y, labels, ids), population = load_records(cfg, target)
    forget, heldout, record_ids = _split(X, y, labels, ids)
    u = schema.unlearning
    _check_train_size(u, len(forget[1]), len(population[1]), run, cfg)
    _check_recipe_classes(schema, np.r_[np.asarray(y), np.asarray(population[1])], run)
    recipe = _load_recipe(cfg, run.base)
    params = dict(u.params)
    if u.method == "RT":
        params.setdefault("model_factory", recipe)  # retraining trains like the original
    results = audit_unlearning(
        target, forget, heldout, method=u.method, params=params,
        reference=ReferenceSpec(recipe=recipe, n_models=schema.reference.n_models),
        population=(np.asarray(population[0], dtype=np.float32), np.asarray(population[1])),
        train_size=u.train_size, attacks=schema.attacks,
        attack_params=schema.attack_params or None,
        forget_fraction=u.forget_fraction, trajectories=schema.trajectories,
        record_ids=record_ids,
        executor=get_executor(cfg.executor, n_jobs=cfg.n_jobs, address=cfg.address,
                              func="audit unlearning"),
        cache_dir=cfg.cache_dir, dataset=cfg.data_path.name,
        random_state=schema.random_state, results_dir=run.out / "results",
        progress=progress)
    return build_report(results, run.out, n_bootstrap=schema.report.n_bootstrap,
                        progress=progress, random_state=schema.random_state,
                        title=f"Machine unlearning audit of {target.name}")
