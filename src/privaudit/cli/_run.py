"""Running the audit a configuration describes: the model, the recipe, the report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from privaudit.cli._datafiles import load_records
from privaudit.cli._errors import ConfigError, one_line

if TYPE_CHECKING:
    from privaudit.cli._audit_config import AuditConfig

__all__ = ["run_audit_config"]


def _import_object(spec: str, base: Path, key: str) -> Any:
    """The object ``module:attribute`` names: ``<base>/module.py``, or an installed module.

    Naming code in the configuration is how the user opts in to running it (as a
    training script would); nothing is ever unpickled from a data or model file. Only the
    named module's own file is trusted: the configuration's folder is never put on
    ``sys.path``, so the module's imports come from the installed packages (a planted
    ``sklearn.py`` beside the configuration is never run) and its imports of sibling files
    do not resolve (the error says so). See :func:`privaudit.cli._imports.import_named`.
    """
    from privaudit.cli._imports import import_named
    from privaudit.exceptions import OutsideFolderError

    try:
        return import_named(spec, base, key=key)
    except (ImportError, AttributeError, OutsideFolderError) as exc:
        raise ConfigError(" ".join(str(exc).split())) from None


def _load_torch(cfg: AuditConfig, base: Path, name: str, where: str) -> Any:
    from privaudit.targets import TorchTarget, load_torch_model

    factory = _import_object(cfg.factory or "", base, "target.factory")
    try:
        module = load_torch_model(cfg.target_path, factory)
    except ImportError:
        raise
    except Exception as exc:  # safetensors and torch raise their own types
        raise ConfigError(f"{where} cannot be loaded into the module that {cfg.factory} "
                          f"builds: {one_line(exc)}") from None
    module.eval()
    return TorchTarget(module, output=cfg.output, name=name)  # type: ignore[arg-type]


def _load_sklearn(cfg: AuditConfig, where: str) -> Any:
    import zipfile

    from privaudit.targets import UntrustedTypesError, load_sklearn_model

    try:
        return load_sklearn_model(cfg.target_path, trusted=cfg.trusted or None)
    except UntrustedTypesError as exc:
        raise ConfigError(f"{where} contains types that are not trusted: {exc.types}; "
                          "nothing was run. If you trust them, list them under "
                          f"target.trusted in {cfg.source}.") from None
    except zipfile.BadZipFile:
        raise ConfigError(f"{where} is not a skops file (not a zip archive: a pickle "
                          "renamed .skops?). privaudit never unpickles; save the model with "
                          "privaudit.targets.save_sklearn_model (skops).") from None
    except (ValueError, TypeError, KeyError, OSError, AttributeError) as exc:
        raise ConfigError(f"{where} cannot be read as a skops file: "
                          f"{one_line(exc)}") from None


def _load_target(cfg: AuditConfig, base: Path) -> Any:
    from privaudit.targets import as_target

    name = cfg.target_name or cfg.target_path.stem
    where = f"The target file {str(cfg.target_path)!r} (target.path)"
    if cfg.target_type == "torch":
        return _load_torch(cfg, base, name, where)
    model = _load_sklearn(cfg, where)
    try:
        return as_target(model, name=name)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} does not hold a model privaudit can audit: "
                          f"{one_line(exc)}") from None


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
        raise ConfigError(f"The 'reference.recipe' key of {cfg.source} is wrong for "
                          f"{cls.__name__}: {one_line(exc)}") from None


def run_audit_config(
    cfg: AuditConfig, *, out: Path | None = None, progress: Any = None,
    base: Path | None = None,
) -> Path:
    """Run the audit a configuration describes and write its report; returns index.html.

    Every input is checked before any work: the model file, then each column of the data
    and population files (the messages name the file, the column and the row).
    """
    from privaudit.audits import audit_model
    from privaudit.report import build_report

    base = base if base is not None else cfg.config_dir
    target = _load_target(cfg, base)
    (X, y, labels, ids), population = load_records(cfg, target)
    recipe = _load_recipe(cfg, base)
    out_dir = out or cfg.out
    results = audit_model(
        target, X, y, labels, population=population, attacks=cfg.attacks,
        attack_params=cfg.attack_params, reference=cfg.reference_spec(recipe), record_ids=ids,
        dataset=cfg.data_path.name, random_state=cfg.random_state, n_jobs=cfg.n_jobs,
        executor=cfg.executor,
        address=cfg.address, cache_dir=cfg.cache_dir, results_dir=out_dir / "results",
        progress=progress,
    )
    return build_report(results, out_dir, n_bootstrap=cfg.n_bootstrap, progress=progress,
                        random_state=cfg.random_state,
                        title=f"Privacy audit of {target.name}")
