"""The validated ``privaudit audit model`` configuration, a plain record.

Apart from the reading (:mod:`privaudit.cli._config`) so that the modules which consume it
(``_datafiles``, ``_run``) need not import the module that imports them: no import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_ATTACKS", "AuditConfig"]

#: The attacks of a configuration that names none.
DEFAULT_ATTACKS = ["loss", "confidence", "entropy", "modified-entropy"]


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
    attacks: list[str] = field(default_factory=lambda: list(DEFAULT_ATTACKS))
    attack_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    n_reference_models: int = 16
    reference_mode: str = "auto"
    train_fraction: float | None = None
    executor: str = "local"
    n_jobs: int | None = None
    address: str | None = None
    cache_dir: Path | None = None
    random_state: int = 0
    out: Path = Path("audit-report")
    n_bootstrap: int = 1000
    config_dir: Path = Path(".")
    #: How messages name the configuration (its path as given).
    source: str = "the audit configuration"

    def reference_spec(self, recipe: Any = None) -> Any:
        """The ``reference`` section as :func:`privaudit.audit_model` takes it.

        ``recipe`` is the loaded ``reference.recipe`` (``None``: a clone of the target).
        """
        from privaudit.training import ReferenceSpec

        return ReferenceSpec(recipe=recipe, n_models=self.n_reference_models,
                             mode=self.reference_mode, train_fraction=self.train_fraction)
