"""The data files of a configuration: read, then every column checked, before any work.

Messages name the file, the column (and the configuration key that names it) and the
first bad row, in one line (:class:`~privaudit.cli._errors.ConfigError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privaudit.cli._errors import RESAVE_UTF8, ConfigError, not_utf8

if TYPE_CHECKING:
    from privaudit.cli._audit_config import AuditConfig

__all__ = ["check_finite", "load_records", "split_columns"]


@dataclass
class _Table:
    """A data file read into a frame, and how messages name it and its rows."""

    frame: Any
    path: Path
    role: str  # "data" or "population"
    key: str  # the configuration key naming the file

    @property
    def name(self) -> str:
        return f"the {self.role} file {str(self.path)!r}"

    def row(self, position: int) -> str:
        # A spreadsheet shows the header on line 1: data row 0 is line 2.
        if self.path.suffix.lower() in (".csv", ".txt"):
            return f"line {position + 2}"
        return f"row {position} (from 0)"


def _check_csv_shape(path: Path, name: str) -> None:
    """Refuse what pandas would silently repair in a CSV file.

    Repeated column names (pandas renames them ``a.1``) and rows with fewer fields than
    the header (pandas fills them with NaN, later reported as "Input X contains NaN").
    """
    import csv

    limit = csv.field_size_limit()
    csv.field_size_limit(_FIELD_LIMIT)  # a long text cell is data, not an error
    try:
        _check_rows(path, name)
    finally:
        csv.field_size_limit(limit)


#: The longest CSV cell read (the csv module's default is 128 KiB).
_FIELD_LIMIT = 2**31 - 1


def _check_rows(path: Path, name: str) -> None:
    import csv

    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        repeated = sorted({c for c in header if header.count(c) > 1})
        if repeated:
            raise ConfigError(f"The header of {name} repeats the column(s) {repeated}: "
                              "rename them so each column has one name.")
        for row in reader:
            if row and len(row) < len(header):
                raise ConfigError(f"Line {reader.line_num} of {name} has {len(row)} "
                                  f"field(s) but the header has {len(header)} "
                                  f"({header[len(row)]!r} and after are missing).")


def _read_table(path: Path, role: str = "data", key: str = "data.path") -> _Table:
    """Read a CSV or Parquet file; an unreadable one is one line naming it."""
    import pandas as pd

    table = _Table(None, path, role, key)
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        elif suffix in (".csv", ".txt"):
            _check_csv_shape(path, table.name)
            frame = pd.read_csv(path)
        else:
            raise ConfigError(f"The {key!r} file {str(path)!r} must be CSV (.csv) or Parquet "
                              "(.parquet).")
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{table.name.capitalize()} ({key}) is empty.") from None
    except UnicodeDecodeError:
        raise ConfigError(_not_utf8(table)) from None
    except (ValueError, OSError) as exc:
        if isinstance(exc, ConfigError):
            raise
        reason = " ".join(str(exc).split())[:200]
        raise ConfigError(f"{table.name.capitalize()} ({key}) cannot be read as "
                          f"{'Parquet' if suffix in ('.parquet', '.pq') else 'CSV'}: "
                          f"{reason}") from None
    if len(frame) == 0:
        raise ConfigError(f"{table.name.capitalize()} ({key}) has no rows.")
    table.frame = frame
    if suffix in (".parquet", ".pq"):  # a CSV cell is never a list
        _check_flat(table)
    _check_separator(table)
    _check_unnamed(table)
    return table


def _not_utf8(table: _Table) -> str:
    """Why a CSV file cannot be decoded: binary content, or text in another encoding."""
    data = table.path.read_bytes()
    where = not_utf8(data)
    if where is None:
        return (f"{table.name.capitalize()} ({table.key}) is not a text CSV file (binary "
                "content); give a CSV or a Parquet file.")
    return (f"{table.name.capitalize()} ({table.key}) is not UTF-8 text: {where} "
            f"{RESAVE_UTF8} (pandas: to_csv(path, index=False, encoding='utf-8')), or as "
            "Parquet.")


def _check_flat(table: _Table) -> None:
    """Refuse a column of lists, arrays or mappings (a nested Parquet type), naming it."""
    for column in table.frame.columns:
        values = table.frame[column]
        if values.dtype != object:
            continue
        nested = values.map(lambda v: hasattr(v, "__len__") and not isinstance(v, (str, bytes)))
        if nested.any():
            raise ConfigError(
                f"The column {str(column)!r} of {table.name} ({table.key}) holds lists "
                f"({_first(table, nested)}; a nested Parquet type): privaudit reads flat "
                "columns of numbers or text. Spread the list into one column per item, or "
                "leave the column out.")


def check_finite(table: _Table) -> None:
    """Refuse infinite numbers in any column, naming the file, the column and the row."""
    import numpy as np

    for column in table.frame.columns:
        values = table.frame[column]
        if values.dtype.kind != "f":
            continue
        infinite = np.isinf(values.to_numpy(dtype=float, na_value=np.nan))
        if infinite.any():
            raise ConfigError(f"The column {str(column)!r} of {table.name} ({table.key}) holds "
                              f"infinite values ({_first(table, infinite)}): replace them with "
                              "finite numbers or leave the cells empty.")


def _check_separator(table: _Table) -> None:
    """Refuse a file read as one column because its separator is not a comma."""
    if table.frame.shape[1] != 1:
        return
    header = str(table.frame.columns[0])
    for sep, label in ((";", "semicolons"), ("\t", "tabs"), ("|", "'|'")):
        if sep in header:
            raise ConfigError(
                f"{table.name.capitalize()} ({table.key}) reads as one column "
                f"{header[:60]!r}: its fields look separated by {label}, and privaudit reads "
                "comma-separated CSV. Save it with commas (pandas: to_csv(path, index=False)"
                ") or as Parquet.")


def _check_unnamed(table: _Table) -> None:
    """Refuse a column without a name: most often a saved pandas index (``Unnamed: 0``).

    Left in, it would be audited as a feature (even guessed as a secret), and a row
    number makes every record unique.
    """
    import re

    unnamed = [str(c) for c in table.frame.columns
               if re.fullmatch(r"Unnamed: \d+(_level_\d+)?|__index_level_\d+__|\s*",
                               str(c))]
    if not unnamed:
        return
    column = unnamed[0]
    values = table.frame[table.frame.columns[[str(c) for c in table.frame.columns].index(
        column)]]
    looks = ""
    if values.dtype.kind in "iu" and values.tolist() == list(range(len(values))):
        looks = f", values 0 to {len(values) - 1}: a saved pandas index"
    raise ConfigError(
        f"{table.name.capitalize()} ({table.key}) has a column without a name, {column!r}"
        f"{looks}; it would be audited as data. Save the file without the index "
        "(to_csv(path, index=False)), or give the column a name.")


def _column(table: _Table, column: str, key: str) -> Any:
    if column not in table.frame.columns:
        columns = [str(c) for c in table.frame.columns]
        shown = columns[:20] + (["..."] if len(columns) > 20 else [])
        raise ConfigError(f"{table.name.capitalize()} has no column {column!r} ({key}); its "
                          f"columns are {shown}.")
    return table.frame[column]


def _first(table: _Table, mask: Any) -> str:
    import numpy as np

    positions = np.flatnonzero(np.asarray(mask))
    return f"{len(positions)} row{'s' * (len(positions) > 1)}, first at {table.row(positions[0])}"


def _check_labels(table: _Table, column: str, key: str, classes: Any = None) -> Any:
    import numpy as np

    values = _column(table, column, key)
    if values.isna().any():
        raise ConfigError(f"The label column {column!r} of {table.name} has missing values "
                          f"({_first(table, values.isna())}): every record needs its label.")
    if classes is not None:
        unknown = ~values.isin(list(classes)).to_numpy()
        if unknown.any():
            examples = list(dict.fromkeys(values[unknown].tolist()))[:3]
            raise ConfigError(f"The label column {column!r} of {table.name} holds labels the "
                              f"model does not know, e.g. {examples} ({_first(table, unknown)}"
                              f"); its classes are {np.asarray(classes).tolist()[:10]}.")
    return values.to_numpy()


def _check_membership(table: _Table, column: str, key: str) -> Any:
    import numpy as np
    import pandas as pd

    values = _column(table, column, key)
    numeric = pd.to_numeric(values, errors="coerce") if values.dtype != bool else values
    bad = ~np.isin(numeric.to_numpy(dtype=float, na_value=np.nan), (0, 1))
    if bad.any():
        examples = list(dict.fromkeys(values[bad].tolist()))[:3]
        raise ConfigError(f"The membership column {column!r} ({key}) of {table.name} must "
                          f"hold 0/1 (1 = member); it holds {examples} ({_first(table, bad)}).")
    labels = numeric.to_numpy().astype(np.int8)
    if len(np.unique(labels)) < 2:
        raise ConfigError(f"The membership column {column!r} ({key}) of {table.name} needs "
                          "both members (1) and non-members (0) to tell apart; it holds only "
                          f"{int(labels[0])} ({len(labels)} row{'s' * (len(labels) > 1)}).")
    return labels


def _check_ids(table: _Table, column: str, key: str) -> Any:
    values = _column(table, column, key)
    if values.isna().any():
        raise ConfigError(f"The id column {column!r} ({key}) of {table.name} has missing ids "
                          f"({_first(table, values.isna())}).")
    repeated = values.astype(str).duplicated(keep=False)
    if repeated.any():
        shown = list(dict.fromkeys(values[repeated].tolist()))
        raise ConfigError(f"The id column {column!r} ({key}) of {table.name} repeats "
                          f"{len(shown)} id(s), e.g. {shown[:5]!r} ({_first(table, repeated)}): "
                          "ids must be unique.")
    return values.to_numpy()


@dataclass
class _Accepts:
    """What the audited model takes as input, to check feature columns up front."""

    allow_nan: bool = False
    allow_text: bool = False
    model: str = "the model"
    classes: Any = None  # a classifier's labels, to check the label column against


def _accepted_inputs(target: Any) -> _Accepts:
    """NaN and text are refused unless the model can take them.

    A bare scikit-learn estimator says whether it accepts NaN (its ``allow_nan`` tag) and
    takes numbers only; a pipeline or column transformer may impute and encode, so its
    columns are left for it to judge. Torch modules take finite numbers.
    """
    classes = getattr(target, "classes_", None)
    estimator = getattr(target, "estimator", None)
    if estimator is None:
        return _Accepts(model=f"the {type(target).__name__}", classes=classes)
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.utils import get_tags

    model = f"the model ({type(estimator).__name__})"
    if isinstance(estimator, (Pipeline, ColumnTransformer)):
        return _Accepts(allow_nan=True, allow_text=True, model=model, classes=classes)
    try:
        allow_nan = bool(get_tags(estimator).input_tags.allow_nan)
    except (AttributeError, TypeError, ValueError):
        allow_nan = False
    return _Accepts(allow_nan=allow_nan, model=model, classes=classes)


def _check_feature(table: _Table, column: str, accepts: _Accepts) -> None:
    """Check one feature column: numbers (or text the model encodes), finite, no NaN.

    NaN passes when the model takes it. Messages name the column, the file and the first
    bad row.
    """
    import numpy as np
    import pandas as pd

    values = table.frame[column]
    what = f"The feature column {column!r} of {table.name}"
    if values.dtype.kind in "biuf":
        numeric = values.astype(float)
    else:
        numeric = pd.to_numeric(values, errors="coerce")
        text = numeric.isna() & values.notna()
        if text.any():
            if accepts.allow_text:
                return
            raise ConfigError(f"{what} holds text such as {values[text].iloc[0]!r} "
                              f"({_first(table, text)}); {accepts.model} takes numbers: fix "
                              "the values or leave the column out of data.feature_columns.")
    infinite = np.isinf(numeric.to_numpy(dtype=float, na_value=np.nan))
    if infinite.any():
        raise ConfigError(f"{what} holds infinite values ({_first(table, infinite)}): "
                          "replace them with finite numbers.")
    missing = values.isna()
    if missing.any() and not accepts.allow_nan:
        raise ConfigError(f"{what} has missing values ({_first(table, missing)}); "
                          f"{accepts.model} does not accept them: fill or drop those rows "
                          "(a CSV row with fewer fields than its header reads as missing).")


def _feature_names(table: _Table, cfg: AuditConfig) -> list[str]:
    if cfg.feature_columns is not None:
        return list(cfg.feature_columns)
    roles = {cfg.label_column, cfg.membership_column, cfg.id_column}
    features = [c for c in table.frame.columns if c not in roles]
    if not features:
        raise ConfigError(f"{table.name.capitalize()} has no feature column besides the "
                          f"label, membership and id columns {sorted(r for r in roles if r)}.")
    return features


def _records(
    table: _Table, cfg: AuditConfig, *, membership: bool, features: list[str] | None,
    accepts: _Accepts | None,
) -> tuple:
    """Features, labels, membership and ids of one file, each column checked."""
    y = _check_labels(table, cfg.label_column, "data.label_column",
                      None if accepts is None else accepts.classes)
    labels = (_check_membership(table, cfg.membership_column, "data.membership_column")
              if membership else None)
    ids = None
    if cfg.id_column and (membership or cfg.id_column in table.frame.columns):
        ids = _check_ids(table, cfg.id_column, "data.id_column")
    key = "data.feature_columns"
    if features is None:
        features = _feature_names(table, cfg)
    else:
        key = "a feature column of the data file"
    for column in features:
        _column(table, column, key)
        if accepts is not None:
            _check_feature(table, column, accepts)
    return table.frame[features].reset_index(drop=True), y, labels, ids


def split_columns(
    frame: Any, cfg: AuditConfig, *, where: str, membership: bool,
    features: list[str] | None = None, accepts: _Accepts | None = None,
) -> tuple:
    """Features (a DataFrame, columns by name), labels, membership and ids of one file.

    The population is read with the audited file's feature list (``features``), by name:
    the same columns in another order, or an extra membership column, must not shift
    what the model sees.
    """
    path = cfg.data_path if where == "data" else (cfg.population_path or Path(where))
    table = _Table(frame, path, where, f"{where}.path")
    return _records(table, cfg, membership=membership, features=features, accepts=accepts)


def _check_disjoint(data: _Table, pop: _Table, cfg: AuditConfig, records: tuple,
                    pop_records: tuple) -> None:
    """The population must hold no audited record: by id, then as the model sees it."""
    from privaudit.audits import population_overlap

    X, y, _, ids = records
    X_pop, y_pop, _, pop_ids = pop_records
    if ids is not None and pop_ids is not None:
        shared = sorted(set(map(str, ids)) & set(map(str, pop_ids)))
        if shared:
            raise ConfigError(f"{pop.name.capitalize()} shares {len(shared)} id(s) "
                              f"({cfg.id_column!r}) with {data.name}, e.g. {shared[:5]}: a "
                              "record is either audited or in the population.")
    n_shared, pop_row, row = population_overlap(X, y, X_pop, y_pop)
    if not n_shared:
        return
    features = list(X.columns)
    others = [c for c in data.frame.columns if c not in features
              and c not in (cfg.label_column, cfg.membership_column, cfg.id_column)]
    subset = (f" Only {len(features)} of the data's {len(features) + len(others)} columns "
              f"are features ({others[:5]} are not), so different records can look the same "
              "to the model: drop those rows from the population, or use more feature "
              "columns." if others
              else " Drop those rows from the population.")
    raise ConfigError(
        f"{pop.name.capitalize()} repeats {n_shared} audited record(s) of {data.name} on "
        f"what the model sees, the feature columns {features[:10]}"
        f"{' ...' if len(features) > 10 else ''} and the label {cfg.label_column!r} (e.g. "
        f"data {data.row(row)} = population {pop.row(pop_row)}): reference models trained "
        f"on them would count as trained on the audited records.{subset}")


def _which_columns(X: Any, cfg: AuditConfig) -> str:
    """How the feature columns were chosen, and the first few, for a message."""
    shown = [str(c) for c in X.columns[:5]] + (["..."] if X.shape[1] > 5 else [])
    how = ("data.feature_columns" if cfg.feature_columns is not None
           else "every column but the label, membership and id columns")
    return f"{X.shape[1]} feature column(s) {shown} ({how})"


def _sklearn_columns(data: _Table, X: Any, estimator: Any, cfg: AuditConfig) -> Any:
    """The model's columns by name, in its order; or a count the model takes."""
    model = f"the model ({type(estimator).__name__})"
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        names = [str(n) for n in names]
        columns = [str(c) for c in X.columns]
        missing = [n for n in names if n not in columns]
        extra = [c for c in columns if c not in names]
        if missing or extra:
            raise ConfigError(
                f"{data.name.capitalize()} has {_which_columns(X, cfg)}; {model} was fitted "
                f"on {len(names)} named columns: missing from the file {missing[:10]}, not "
                f"known to the model {extra[:10]}. Rename the columns, or list the model's "
                "in data.feature_columns.")
        return X[[X.columns[columns.index(n)] for n in names]]  # the model's order
    expected = getattr(estimator, "n_features_in_", None)
    if expected is not None and int(expected) != X.shape[1]:
        raise ConfigError(f"{data.name.capitalize()} has {_which_columns(X, cfg)}; {model} "
                          f"takes {int(expected)}.")
    return X


def _torch_columns(data: _Table, X: Any, module: Any, cfg: AuditConfig) -> None:
    """One record through the module: a wrong number of columns fails here, not later."""
    import numpy as np
    import torch

    param = next(module.parameters(), None)
    dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
    row = torch.as_tensor(np.asarray(X.iloc[:1], dtype=float), dtype=dtype,
                          device=None if param is None else param.device)
    try:
        with torch.no_grad():
            module(row)
    except Exception as exc:  # a module raises what its layers raise
        from privaudit.cli._errors import one_line

        first = next((m for m in module.modules() if hasattr(m, "in_features")), None)
        takes = (f"takes {first.in_features}" if first is not None
                 and first.in_features != X.shape[1] else f"fails on them: {one_line(exc)}")
        raise ConfigError(f"{data.name.capitalize()} has {_which_columns(X, cfg)}; the "
                          f"model built by {cfg.factory} {takes}.") from None


def _model_columns(data: _Table, X: Any, target: Any, cfg: AuditConfig) -> Any:
    """The feature columns checked against what the model takes, before any work."""
    estimator = getattr(target, "estimator", None)
    if estimator is not None:
        return _sklearn_columns(data, X, estimator, cfg)
    module = getattr(target, "module", None)
    if module is not None:
        _torch_columns(data, X, module, cfg)
    return X


def _check_reference_rows(pop: _Table, data: _Table, cfg: AuditConfig) -> None:
    """Reference models train on parts of the population: refuse too few rows up front.

    Each model trains on a share of the candidate records (the population; online, the
    audited records too): below two records each on average, some would get none.
    """
    import math

    from privaudit.attacks import get_tags

    tags = {a: get_tags(a) for a in cfg.attacks}
    needs = [a for a in cfg.attacks if tags[a].needs_reference_models]
    if not needs:
        return
    # The pool's mode as audit_model plans it (plan_model_audit, from the tags): "auto"
    # trains offline, on the population alone, unless an attack needs an online pool.
    offline = cfg.reference_mode == "offline" or (
        cfg.reference_mode == "auto" and not any(t.needs_online_pool for t in tags.values()))
    rows = len(pop.frame) + (0 if offline else len(data.frame))
    fraction = cfg.train_fraction or 0.5  # the default is at most a half
    need = math.ceil(2 / fraction)
    if rows < need:
        shared = "the population's" if offline else "the population's and data's"
        raise ConfigError(
            f"{pop.name.capitalize()} (population.path) has {len(pop.frame)} row(s): too few "
            f"for the reference models of {needs}, each trained on {fraction:.0%} of "
            f"{shared} {rows} record(s). Give at least {need} rows (more make faithful "
            "reference models), or leave those attacks out.")


def load_records(cfg: AuditConfig, target: Any) -> tuple:
    """Read and check the data (and population) files before any work is done."""
    accepts = _accepted_inputs(target)
    data = _read_table(cfg.data_path, "data", "data.path")
    records = _records(data, cfg, membership=True, features=None, accepts=accepts)
    records = (_model_columns(data, records[0], target, cfg), *records[1:])
    if cfg.population_path is None:
        return records, None
    pop = _read_table(cfg.population_path, "population", "population.path")
    _check_reference_rows(pop, data, cfg)
    pop_records = _records(pop, cfg, membership=False, features=list(records[0].columns),
                           accepts=accepts)
    _check_disjoint(data, pop, cfg, records, pop_records)
    return records, (pop_records[0], pop_records[1])
