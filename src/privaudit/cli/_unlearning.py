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
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field

from privaudit.cli._config import ModelKindRun
from privaudit.cli._errors import key_error
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
    from privaudit.audits import UNLEARNING_ATTACKS
    from privaudit.unlearn import METHODS

    if schema.unlearning.method not in METHODS:
        raise key_error("unlearning.method", f"one of {sorted(METHODS)}",
                        schema.unlearning.method, source)
    if schema.population is None:
        raise key_error("population", "a table of records the model never trained on, "
                        "disjoint from data (the shadows train on it)", None, source)
    recipe = schema.reference.recipe
    if recipe is None or recipe.type not in ("torch-mlp", "torch-cnn"):
        raise key_error("reference.recipe.type", "torch-mlp or torch-cnn (the shadows are "
                        "torch classifiers that unlearn as the target did)",
                        None if recipe is None else recipe.type, source)
    for i, name in enumerate(schema.attacks or []):
        if name not in UNLEARNING_ATTACKS:
            raise key_error(f"attacks[{i}]", f"one of {list(UNLEARNING_ATTACKS)}", name,
                            source)
    for name in schema.attack_params:
        if name not in UNLEARNING_ATTACKS:
            raise key_error(f"attack_params.{name}", f"one of {list(UNLEARNING_ATTACKS)}",
                            name, source)


def load_unlearning_config(path: str | Path) -> ModelKindRun:
    """Read and check the configuration file of ``privaudit audit unlearning``."""
    from privaudit.cli._config import load_model_kind

    return load_model_kind(path, UnlearningAuditFile, _check, "unlearning-report")


def _split(X: Any, y: Any, labels: Any) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    import numpy as np

    forgotten = np.asarray(labels) == 1
    X_arr, y_arr = np.asarray(X, dtype=np.float32), np.asarray(y)
    return (X_arr[forgotten], y_arr[forgotten]), (X_arr[~forgotten], y_arr[~forgotten])


def run_unlearning_audit(run: ModelKindRun, *, progress: Any = None) -> Path:
    """Load the model and the tables, run the unlearning attacks, write the report."""
    import numpy as np

    from privaudit.audits import audit_unlearning
    from privaudit.cli._config import model_sections
    from privaudit.cli._datafiles import load_records
    from privaudit.cli._run import _load_recipe, _load_target
    from privaudit.report import build_report
    from privaudit.training import get_executor

    schema = run.config
    cfg = model_sections(schema, run.base, run.source)
    target = _load_target(cfg, run.base)
    (X, y, labels, _ids), population = load_records(cfg, target)
    forget, heldout = _split(X, y, labels)
    recipe = _load_recipe(cfg, run.base)
    u = schema.unlearning
    params = dict(u.params)
    if u.method == "RT":
        params.setdefault("model_factory", recipe)  # retraining trains like the original
    results = audit_unlearning(
        target, forget, heldout, recipe=recipe, method=u.method, params=params,
        population=(np.asarray(population[0], dtype=np.float32), np.asarray(population[1])),
        train_size=u.train_size, attacks=schema.attacks,
        attack_params=schema.attack_params or None, n_shadows=schema.reference.n_models,
        forget_fraction=u.forget_fraction, trajectories=schema.trajectories,
        executor=get_executor(cfg.executor, n_jobs=cfg.n_jobs, address=cfg.address,
                              func="audit unlearning"),
        cache_dir=cfg.cache_dir, dataset=cfg.data_path.name,
        random_state=schema.random_state, results_dir=run.out / "results",
        progress=progress)
    return build_report(results, run.out, n_bootstrap=schema.report.n_bootstrap,
                        progress=progress, random_state=schema.random_state,
                        title=f"Machine unlearning audit of {target.name}")
