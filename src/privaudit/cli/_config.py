"""The YAML configuration of ``privaudit audit model``.

Example (every key but ``target.path``, ``data.path``, ``data.label_column`` and
``data.membership_column`` is optional)::

    target:
      path: model.skops            # a scikit-learn model saved with skops (never pickle)
      name: credit-model
      trusted: []                  # extra types to trust in the skops file, after checking
      # or a PyTorch model: weights (safetensors, or a state dict read with
      # weights_only=True) loaded into the module that `factory` builds
      # type: torch
      # path: model.safetensors
      # factory: my_models:build_net   # module:function, imported from the config's folder
      # output: logits                 # or probabilities
    data:
      path: audited.csv            # CSV or Parquet: the audited records
      label_column: default        # the model's target column
      membership_column: member    # 1 = in the model's training set, 0 = not
      id_column: customer_id
      feature_columns: [age, income, ...]   # default: every other column
    population:
      path: population.parquet     # same columns; records the model did not train on
    attacks: [loss, entropy, lira-online, lira-offline, rmia, shadow]
    attack_params:
      lira-online: {fix_variance: true}
    reference:
      n_models: 16
      mode: auto                   # auto | online | offline
      recipe:                      # how to train reference models like the target
        type: clone                # clone (scikit-learn targets: an unfitted copy)
                                   # torch-mlp / torch-cnn (built-in, keys = their params)
                                   # callable (train: module:function, fn(X, y, *, random_state))
    executor:
      name: local                  # local | ray
      n_jobs: 2
      address: null                # a running Ray cluster, e.g. "ray://head:10001"
    cache_dir: .privaudit-cache    # trained reference models, reused by a rerun
    random_state: 0
    report:
      out: audit-report
      n_bootstrap: 1000

Relative paths are read relative to the configuration file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["AuditConfig", "ConfigError", "load_audit_config", "run_audit_config"]


class ConfigError(ValueError):
    """A configuration key is missing or has a wrong value; the message names the key."""


def _key_error(key: str, expected: str, got: Any) -> ConfigError:
    return ConfigError(f"The {key!r} key of the audit configuration must be {expected}. "
                       f"Got {got!r} instead.")


@dataclass
class AuditConfig:
    """A validated ``privaudit audit model`` configuration (see the module docstring)."""

    target_path: Path
    label_column: str
    membership_column: str
    data_path: Path
    target_name: str | None = None
    target_type: str = "sklearn"
    factory: str | None = None
    output: str = "logits"
    trusted: list[str] = field(default_factory=list)
    recipe: dict[str, Any] = field(default_factory=dict)
    id_column: str | None = None
    feature_columns: list[str] | None = None
    population_path: Path | None = None
    attacks: list[str] = field(default_factory=lambda: ["loss", "confidence", "entropy",
                                                        "modified-entropy"])
    attack_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    n_reference_models: int = 16
    reference_mode: str = "auto"
    executor: str = "local"
    n_jobs: int | None = None
    address: str | None = None
    cache_dir: Path | None = None
    random_state: int = 0
    out: Path = Path("audit-report")
    n_bootstrap: int = 1000
    config_dir: Path = Path(".")


def _section(raw: dict[str, Any], name: str, *, required: bool = False) -> dict[str, Any]:
    value = raw.get(name)
    if value is None:
        if required:
            raise _key_error(name, "a mapping", None)
        return {}
    if not isinstance(value, dict):
        raise _key_error(name, "a mapping", value)
    return value


def _path(base: Path, value: Any, key: str, *, must_exist: bool = True) -> Path:
    if not isinstance(value, str) or not value:
        raise _key_error(key, "a path", value)
    path = Path(value)
    if not path.is_absolute():
        path = base / path
    if must_exist and not path.exists():
        raise _key_error(key, "an existing file", str(path))
    return path


def _str(section: dict[str, Any], name: str, key: str, *, required: bool = False) -> str | None:
    value = section.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise _key_error(key, "a non-empty string", value)
    return value


def load_audit_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit configuration file (YAML)."""
    import yaml

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"The audit configuration {str(path)!r} does not exist.")
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        raise ConfigError(f"The audit configuration {str(path)!r} must be a YAML mapping.")
    known = {"target", "data", "population", "attacks", "attack_params", "reference",
             "executor", "cache_dir", "random_state", "report"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _key_error("(top level)", f"among {sorted(known)}", unknown)
    base = path.parent
    target = _section(raw, "target", required=True)
    data = _section(raw, "data", required=True)
    population = _section(raw, "population")
    reference = _section(raw, "reference")
    executor = _section(raw, "executor")
    report = _section(raw, "report")

    cfg = AuditConfig(
        target_path=_path(base, target.get("path"), "target.path"),
        data_path=_path(base, data.get("path"), "data.path"),
        label_column=_str(data, "label_column", "data.label_column", required=True),  # type: ignore[arg-type]
        membership_column=_str(data, "membership_column", "data.membership_column",
                               required=True),  # type: ignore[arg-type]
    )
    cfg.config_dir = base
    cfg.target_name = _str(target, "name", "target.name")
    cfg.target_type = target.get("type", "sklearn")
    if cfg.target_type not in ("sklearn", "torch"):
        raise _key_error("target.type", "'sklearn' or 'torch'", cfg.target_type)
    if cfg.target_type == "torch":
        cfg.factory = _str(target, "factory", "target.factory", required=True)
        if ":" not in cfg.factory:  # type: ignore[operator]
            raise _key_error("target.factory", "'module:function'", cfg.factory)
        cfg.output = target.get("output", "logits")
        if cfg.output not in ("logits", "probabilities"):
            raise _key_error("target.output", "'logits' or 'probabilities'", cfg.output)
    trusted = target.get("trusted") or []
    if not isinstance(trusted, list) or not all(isinstance(t, str) for t in trusted):
        raise _key_error("target.trusted", "a list of type names", trusted)
    cfg.trusted = trusted
    cfg.id_column = _str(data, "id_column", "data.id_column")
    features = data.get("feature_columns")
    if features is not None and (not isinstance(features, list)
                                 or not all(isinstance(c, str) for c in features)):
        raise _key_error("data.feature_columns", "a list of column names", features)
    cfg.feature_columns = features
    if population:
        cfg.population_path = _path(base, population.get("path"), "population.path")
    attacks = raw.get("attacks", cfg.attacks)
    if not isinstance(attacks, list) or not attacks or not all(isinstance(a, str) for a in attacks):
        raise _key_error("attacks", "a non-empty list of attack names", attacks)
    cfg.attacks = attacks
    params = raw.get("attack_params") or {}
    if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
        raise _key_error("attack_params", "a mapping from attack name to parameters", params)
    cfg.attack_params = params
    n_models = reference.get("n_models", cfg.n_reference_models)
    if isinstance(n_models, bool) or not isinstance(n_models, int) or n_models < 1:
        raise _key_error("reference.n_models", "a positive integer", n_models)
    cfg.n_reference_models = n_models
    recipe = reference.get("recipe") or {}
    if not isinstance(recipe, dict):
        raise _key_error("reference.recipe", "a mapping with a 'type'", recipe)
    if recipe and recipe.get("type") not in ("clone", "torch-mlp", "torch-cnn", "callable"):
        raise _key_error("reference.recipe.type",
                         "'clone', 'torch-mlp', 'torch-cnn' or 'callable'", recipe.get("type"))
    if recipe.get("type") == "callable" and ":" not in str(recipe.get("train", "")):
        raise _key_error("reference.recipe.train", "'module:function'", recipe.get("train"))
    cfg.recipe = recipe
    cfg.reference_mode = reference.get("mode", "auto")
    if cfg.reference_mode not in ("auto", "online", "offline"):
        raise _key_error("reference.mode", "'auto', 'online' or 'offline'", cfg.reference_mode)
    cfg.executor = executor.get("name", "local")
    if cfg.executor not in ("local", "ray"):
        raise _key_error("executor.name", "'local' or 'ray'", cfg.executor)
    cfg.n_jobs = executor.get("n_jobs")
    if cfg.n_jobs is not None and (isinstance(cfg.n_jobs, bool) or not isinstance(cfg.n_jobs, int)):
        raise _key_error("executor.n_jobs", "an integer", cfg.n_jobs)
    cfg.address = executor.get("address")
    if raw.get("cache_dir") is not None:
        cfg.cache_dir = _path(base, raw["cache_dir"], "cache_dir", must_exist=False)
    seed = raw.get("random_state", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise _key_error("random_state", "a non-negative integer", seed)
    cfg.random_state = seed
    if report.get("out") is not None:
        cfg.out = _path(base, report["out"], "report.out", must_exist=False)
    n_boot = report.get("n_bootstrap", cfg.n_bootstrap)
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 0:
        raise _key_error("report.n_bootstrap", "a non-negative integer", n_boot)
    cfg.n_bootstrap = n_boot
    return cfg


def _read_table(path: Path) -> Any:
    import pandas as pd

    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    if path.suffix.lower() in (".csv", ".txt"):
        return pd.read_csv(path)
    raise ConfigError(f"Data file {str(path)!r} must be CSV (.csv) or Parquet (.parquet).")


def _split_columns(
    frame: Any, cfg: AuditConfig, *, where: str, membership: bool,
    features: list[str] | None = None,
) -> tuple:
    """Features (a DataFrame, columns by name), labels, membership and ids of one file.

    The population is read with the audited file's feature list (``features``), by name:
    the same columns in another order, or an extra membership column, must not shift
    what the model sees.
    """
    needed = [cfg.label_column] + ([cfg.membership_column] if membership else [])
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ConfigError(f"The {where} file has no column {missing[0]!r} "
                          f"(columns: {list(frame.columns)[:20]}).")
    if features is None:
        if cfg.feature_columns is not None:
            features = list(cfg.feature_columns)
        else:
            drop = {cfg.label_column, cfg.membership_column}
            if cfg.id_column:
                drop.add(cfg.id_column)
            features = [c for c in frame.columns if c not in drop]
    absent = [c for c in features if c not in frame.columns]
    if absent:
        raise ConfigError(f"The {where} file has no feature column {absent[0]!r}.")
    X = frame[features].reset_index(drop=True)
    y = frame[cfg.label_column].to_numpy()
    ids = frame[cfg.id_column].to_numpy() if cfg.id_column and cfg.id_column in frame else None
    labels = frame[cfg.membership_column].to_numpy() if membership else None
    return X, y, labels, ids


def _import_object(spec: str, base: Path, key: str) -> Any:
    """Import ``module:attribute``, looking in the configuration's folder first.

    Naming code in the configuration is how the user opts in to running it (as a
    training script would); nothing is ever unpickled from a data or model file.
    """
    import importlib
    import sys

    module_name, _, attribute = spec.partition(":")
    folder = str(base.resolve())
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"The {key!r} key names module {module_name!r}, which cannot be "
                          f"imported ({exc}).") from None
    finally:
        if added:
            sys.path.remove(folder)
    if not hasattr(module, attribute):
        raise ConfigError(f"The {key!r} key names {spec!r}, but {module_name!r} has no "
                          f"{attribute!r}.")
    return getattr(module, attribute)


def _load_target(cfg: AuditConfig, base: Path) -> Any:
    from privaudit.targets import as_target, load_sklearn_model

    name = cfg.target_name or cfg.target_path.stem
    if cfg.target_type == "torch":
        from privaudit.targets import TorchTarget, load_torch_model

        factory = _import_object(cfg.factory or "", base, "target.factory")
        module = load_torch_model(cfg.target_path, factory)
        module.eval()
        return TorchTarget(module, output=cfg.output, name=name)  # type: ignore[arg-type]
    model = load_sklearn_model(cfg.target_path, trusted=cfg.trusted or None)
    return as_target(model, name=name)


def _load_recipe(cfg: AuditConfig, base: Path) -> Any:
    """The reference-model recipe the configuration asks for (None: audit_model's default)."""
    spec = dict(cfg.recipe)
    kind = spec.pop("type", "clone")
    if kind == "clone":
        return None
    if kind == "callable":
        from privaudit.training import CallableRecipe

        return CallableRecipe(_import_object(spec.pop("train"), base, "reference.recipe.train"),
                              fn_kwargs=spec or None)
    from privaudit.training import TorchCNNRecipe, TorchMLPRecipe

    cls = TorchMLPRecipe if kind == "torch-mlp" else TorchCNNRecipe
    try:
        return cls(**spec)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"The 'reference.recipe' key has parameters {cls.__name__} does "
                          f"not take: {exc}") from None


def run_audit_config(
    cfg: AuditConfig, *, out: Path | None = None, progress: Any = None,
    base: Path | None = None,
) -> Path:
    """Run the audit a configuration describes and write its report; returns index.html."""
    from privaudit import audit_model
    from privaudit.report import build_report

    base = base if base is not None else cfg.config_dir
    target = _load_target(cfg, base)
    X, y, labels, ids = _split_columns(_read_table(cfg.data_path), cfg, where="data",
                                       membership=True)
    population = None
    if cfg.population_path is not None:
        X_pop, y_pop, _, _ = _split_columns(_read_table(cfg.population_path), cfg,
                                            where="population", membership=False,
                                            features=list(X.columns))
        population = (X_pop, y_pop)
    out_dir = out or cfg.out
    results = audit_model(
        target, X, y, labels, population=population, attacks=cfg.attacks,
        attack_params=cfg.attack_params, n_reference_models=cfg.n_reference_models,
        reference_mode=cfg.reference_mode, record_ids=ids, dataset=cfg.data_path.name,
        recipe=_load_recipe(cfg, base),
        random_state=cfg.random_state, n_jobs=cfg.n_jobs, executor=cfg.executor,
        address=cfg.address, cache_dir=cfg.cache_dir, results_dir=out_dir / "results",
        progress=progress,
    )
    return build_report(results, out_dir, n_bootstrap=cfg.n_bootstrap,
                        random_state=cfg.random_state,
                        title=f"Privacy audit of {target.name}")
