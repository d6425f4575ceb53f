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
      # factory: my_models:build_net   # module:function: my_models.py beside the config, run
      #                                # from its own file (the folder is never on sys.path)
      # output: logits                 # or probabilities
    data:
      path: audited.csv            # CSV or Parquet: the audited records
      label_column: default        # the model's target column
      membership_column: member    # 1 = in the model's training set, 0 = not
      id_column: customer_id       # unique per record
      feature_columns: [age, income, ...]   # default: every other column
    population:
      path: population.parquet     # same columns; records the model did not train on
    attacks: [loss, entropy, lira-online, lira-offline, rmia, shadow]
    attack_params:
      lira-online: {fix_variance: true}
    reference:
      n_models: 16
      mode: auto                   # auto | online | offline
      train_fraction: null         # share of candidates each trains on (default: the
                                   # target's training-set size)
      recipe:                      # how to train reference models like the target
        type: clone                # clone (scikit-learn targets: an unfitted copy)
                                   # torch-mlp / torch-cnn (built-in, keys = their params)
                                   # callable (train: module:function, fn(X, y, *, random_state))
    executor:
      name: local                  # local | ray
      n_jobs: 2                    # a positive integer, or -1 for every CPU
      address: null                # a running Ray cluster, e.g. "ray://head:10001"
    cache_dir: .privaudit-cache    # trained reference models, reused by a rerun
    random_state: 0
    report:
      out: audit-report
      n_bootstrap: 1000

Relative paths are read relative to the configuration file.

The file is read with a typed schema (pydantic, one model per section, strict types, no
unknown keys): a misspelled key (``reference: {n_model: 2}``) or a key given twice is an
error naming the key, its section and the file, never a silent default.

The modules: :mod:`._sections` holds the sections every audit kind shares (this schema,
:class:`ModelAuditFile`, adds the attacks to them), :mod:`._reading` reads a file with a
kind's schema, :mod:`._datafiles` checks the data files and :mod:`._run` runs the audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field

from privaudit.cli._audit_config import DEFAULT_ATTACKS, AuditConfig
from privaudit.cli._datafiles import split_columns as _split_columns  # noqa: F401 (tests)
from privaudit.cli._errors import ConfigError, key_error
from privaudit.cli._reading import read_config
from privaudit.cli._run import run_audit_config
from privaudit.cli._sections import AuditFile, Name

__all__ = ["AuditConfig", "ConfigError", "ModelKindRun", "check_attack_params_key",
           "load_audit_config", "load_model_kind", "model_sections", "run_audit_config"]



class ModelAuditFile(AuditFile):
    """A whole ``privaudit audit model`` configuration file: the shared sections, attacks."""

    optional_sections: ClassVar[tuple[str, ...]] = (*AuditFile.optional_sections,
                                                    "attack_params")

    attacks: Annotated[list[Name], Field(min_length=1)] = Field(
        default_factory=lambda: list(DEFAULT_ATTACKS))
    attack_params: dict[str, dict[str, Any]] = Field(default_factory=dict)


def check_attack_params_key(attacks: Any, attack_params: Any, classes: Any, source: str,
                            *, set_by_audit: Any = None) -> None:
    """``attack_params`` of any kind's file, by the API's one check, named as keys.

    Keys must name attacks of ``attacks`` (those that run), parameters must be the
    attack's own (listed when not), values must be accepted by the attack.
    """
    from privaudit._validation import attack_params_problem

    problem = attack_params_problem(attacks, attack_params, classes,
                                    set_by_audit=set_by_audit)
    if problem is not None:
        raise key_error(f"attack_params.{problem.key}", problem.expected, problem.got, source)


def _check_attacks(schema: ModelAuditFile, source: str) -> None:
    """Attack names the registry knows; parameters their constructors take."""
    from privaudit.attacks import available_attacks
    from privaudit.attacks.membership import SET_BY_NAME, membership_attack_class

    known = sorted(available_attacks())
    for i, name in enumerate(schema.attacks):
        if name not in known:
            raise key_error(f"attacks[{i}]", f"one of {known}", name, source)
        if name in schema.attacks[:i]:
            raise key_error(f"attacks[{i}]", "an attack not listed before", name, source)
    check_attack_params_key(schema.attacks, schema.attack_params, membership_attack_class,
                            source, set_by_audit=SET_BY_NAME)


def _canonical_attacks(schema: ModelAuditFile, source: str) -> ModelAuditFile:
    """The file's attack names (and ``attack_params`` keys) in the one style, kebab-case.

    An old name still works, with one warning (one line) naming the file's key, as the
    API's ``attacks`` does (:func:`~privaudit._validation.canonical_names`).
    """
    from privaudit._validation import canonical_name, canonical_names

    attacks = canonical_names(list(schema.attacks), param=f"attacks of {source}",
                              func="privaudit audit model")
    old_keys = [k for k in schema.attack_params if canonical_name(k) != k]
    if old_keys:
        canonical_names(old_keys, param=f"attack_params of {source}",
                        func="privaudit audit model")
    params = {canonical_name(k): v for k, v in schema.attack_params.items()}
    return schema.model_copy(update={"attacks": attacks, "attack_params": params})


def _check_recipe(schema: ModelAuditFile, source: str) -> None:
    """A recipe's keys must be parameters of that recipe (``callable``: of ``train``)."""
    import inspect

    recipe = schema.reference.recipe
    if recipe is None:
        return
    params = dict(recipe.model_extra or {})
    if recipe.type == "callable":
        train = params.get("train")
        if not isinstance(train, str) or ":" not in train:
            raise key_error("reference.recipe.train", "'module:function' for a callable "
                             "recipe", train, source)
        return
    allowed: list[str] = []
    if recipe.type != "clone":
        from privaudit.training import TorchCNNRecipe, TorchMLPRecipe

        cls = TorchMLPRecipe if recipe.type == "torch-mlp" else TorchCNNRecipe
        allowed = sorted(inspect.signature(cls).parameters)
    for key in params:
        if key not in allowed:
            raise ConfigError(f"The 'reference.recipe.{key}' key of {source} is not known "
                              f"for a {recipe.type} recipe; expected one of "
                              f"{['type', *allowed]}.")


def _at(base: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else base / path


@dataclass
class ModelKindRun:
    """A checked configuration on ``audit model``'s sections, its folder, its report folder.

    For ``audit attribute`` and ``audit unlearning``.
    """

    config: Any
    base: Path
    out: Path
    source: str


def load_model_kind(path: str | Path, schema_type: type[AuditFile],
                    check: Any, default_out: str) -> ModelKindRun:
    """Read ``path`` with ``schema_type``, ``check(schema, source)``, place the report."""
    path = Path(path)
    schema = read_config(path, schema_type)
    check(schema, str(path))
    return ModelKindRun(schema, path.parent, _at(path.parent, schema.report.out or default_out),
                        str(path))


def model_sections(schema: AuditFile, base: Path, source: str) -> AuditConfig:
    """The ``audit model`` sections of another kind's file, as an :class:`AuditConfig`.

    For kinds that audit a saved model with ``audit model``'s ``target``, ``data`` and
    ``population`` (``audit attribute``, ``audit unlearning``): their own ``attacks`` and
    ``attack_params`` are left out (other names than the membership attacks').
    """
    shared = {k: getattr(schema, k) for k in ModelAuditFile.model_fields
              if k in type(schema).model_fields and k not in ("attacks", "attack_params")}
    return _to_config(ModelAuditFile(**shared), base, source)


def _to_config(schema: ModelAuditFile, base: Path, source: str) -> AuditConfig:
    target, data, ref, ex, report = (schema.target, schema.data, schema.reference,
                                     schema.executor, schema.report)
    return AuditConfig(
        target_path=_at(base, target.path), data_path=_at(base, data.path),
        label_column=data.label_column, membership_column=data.membership_column,
        target_name=target.name, target_type=target.type, factory=target.factory,
        output=target.output or "logits", trusted=list(target.trusted),
        recipe=ref.recipe.model_dump() if ref.recipe is not None else {},
        id_column=data.id_column, feature_columns=data.feature_columns,
        population_path=None if schema.population is None
        else _at(base, schema.population.path),
        attacks=list(schema.attacks), attack_params=dict(schema.attack_params),
        n_reference_models=ref.n_models, reference_mode=ref.mode,
        train_fraction=ref.train_fraction, executor=ex.name,
        n_jobs=ex.n_jobs, address=ex.address,
        cache_dir=None if schema.cache_dir is None else _at(base, schema.cache_dir),
        random_state=schema.random_state, out=_at(base, report.out or "audit-report"),
        n_bootstrap=report.n_bootstrap, config_dir=base, source=source,
    )


def load_audit_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit configuration file (YAML).

    Parameters
    ----------
    path : path-like
        The YAML file (see the module docstring for its keys).

    Returns
    -------
    AuditConfig
        Paths resolved against the file's folder and checked (inputs exist, output
        folders can be created).

    Raises
    ------
    ConfigError
        One line naming the key and the file: an unknown or repeated key, a wrong type or
        value, a YAML syntax error, a missing input file.
    """
    path = Path(path)
    schema = _canonical_attacks(read_config(path, ModelAuditFile), str(path))
    _check_attacks(schema, str(path))
    _check_recipe(schema, str(path))
    return _to_config(schema, path.parent, str(path))
