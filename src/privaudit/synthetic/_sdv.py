"""SDV's single-table synthesizers as privaudit generators (``privaudit[sdv]``).

:func:`sdv_generator` wraps a synthesizer of the Synthetic Data Vault (a Gaussian copula,
CTGAN, TVAE or CopulaGAN) as a generator ``generator(train, n_rows, random_state)``: every
call builds the synthesizer afresh, fits it on the training table and samples from it, all
under the call's seed. SDV is imported when a generator is made or run, never by
``import privaudit``.

References
----------
.. [1] Patki, N., Wedge, R. and Veeramachaneni, K. "The Synthetic Data Vault." IEEE DSAA
   2016.
.. [2] Xu, L., Skoularidou, M., Cuesta-Infante, A. and Veeramachaneni, K. "Modeling
   Tabular Data using Conditional GAN." NeurIPS 2019.
"""

from __future__ import annotations

import contextlib
import copy
import random
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from privaudit._optional import import_optional
from privaudit._validation import check_int, param_error
from privaudit.exceptions import PrivauditWarning

__all__ = ["SDV_SYNTHESIZERS", "SDVGenerator", "sdv_generator"]

#: The SDV single-table synthesizers :func:`sdv_generator` accepts, by class name.
SDV_SYNTHESIZERS = ("GaussianCopulaSynthesizer", "CTGANSynthesizer", "TVAESynthesizer",
                    "CopulaGANSynthesizer")
#: The short names accepted for them ("CTGAN" for "CTGANSynthesizer").
_SHORT = {name.removesuffix("Synthesizer"): name for name in SDV_SYNTHESIZERS}
#: The table name given to SDV when the metadata names none.
_TABLE = "table"
_NAME = "sdv_generator"
_PURPOSE = "sdv_generator (SDV's synthesizers)"


def sdv_generator(synthesizer: str = "GaussianCopulaSynthesizer", *, metadata: Any = None,
                  **params: Any) -> SDVGenerator:
    """An SDV single-table synthesizer as a generator ``(train, n_rows, random_state)``.

    Every call builds the synthesizer afresh, fits it on the training table, samples
    ``n_rows`` rows and returns them with the training table's columns, in order: one
    run of the generator, as :func:`privaudit.audit_generator` and
    :class:`~privaudit.training.GeneratorRuns` call it. The generator pickles (to worker
    processes or Ray) and its fingerprint, which keys the cache of synthetic tables, is
    made of the synthesizer's name, the metadata (as a dict), ``params`` and SDV's version.

    Parameters
    ----------
    synthesizer : str, default="GaussianCopulaSynthesizer"
        One of :data:`SDV_SYNTHESIZERS` (``"GaussianCopulaSynthesizer"``,
        ``"CTGANSynthesizer"``, ``"TVAESynthesizer"``, ``"CopulaGANSynthesizer"``), or its
        short name (``"GaussianCopula"``, ``"CTGAN"``...). Nothing else is imported.
    metadata : sdv.metadata.Metadata, SingleTableMetadata, dict or None
        The table's metadata: an SDV metadata object (stored as its ``to_dict()``) or a dict
        in SDV's JSON form (multi-table form with one table, or a single table's
        ``{"columns": ...}``). With None every run detects it from its own training table
        (``Metadata.detect_from_dataframes``), so the column types are guessed from the
        data, may differ from one run to the next, and a column SDV takes for personal
        information (a name, an address, a US state) is replaced by fake values; a warning
        says so. Pass the metadata to fix them.
    **params
        Keyword arguments of the synthesizer's constructor (``epochs=50``,
        ``enable_gpu=False``, ``default_distribution="norm"``...).

    Returns
    -------
    SDVGenerator
        Called ``generator(train, n_rows, random_state=seed)``; returns a DataFrame.

    Raises
    ------
    ValueError
        ``synthesizer`` is not one of the accepted names.
    TypeError
        ``metadata`` is not a metadata object, a dict or None.
    ImportError
        SDV is not installed (``pip install 'privaudit[sdv]'``).

    Warns
    -----
    PrivauditWarning
        With ``metadata=None``: the column types will be read from each training table.

    Notes
    -----
    What a run fits on and samples depends on SDV's version: SDV 2 fits on and samples a
    ``{table_name: DataFrame}`` dict (a bare DataFrame is refused with
    ``InvalidDataTypeError``), SDV 1 on a DataFrame; both are handled.

    **Seeds.** The run's seed is split in two (``numpy.random.SeedSequence``). The first
    seeds numpy's, Python's and torch's global generators while the synthesizer is built,
    fitted and sampled (a GAN's initial weights, its minibatches and noise are drawn from
    them), inside a context that restores the caller's global states afterwards
    (``torch.random.fork_rng`` for torch). The second seeds sampling, through SDV's
    ``_set_random_state`` after fitting. Some draws are seeded by SDV's data transformers
    (RDT) from the training data itself, not from the run's seed: where missing values
    are put back, and fake values of personal-information columns.

    **Reproducibility** (measured with SDV 2.0.0 and torch 2.13 on a 2-core CPU, 300 rows
    of TV16, 5 epochs for the neural ones): the same seed gave a bit-identical table, in
    one process and across processes, with each of the four synthesizers; another seed
    gave another table. Without the global seeding above, CTGAN's tables differed from one
    call to the next (the Gaussian copula's did not: it draws only when sampling). The
    neural synthesizers' tables depend on the machine: with one CPU thread instead of two,
    CTGAN and CopulaGAN gave other tables for the same seed (floating-point sums in
    another order; TVAE and the Gaussian copula did not change), and a GPU is no more
    bit-exact. Cached tables stay valid; a rerun on another machine may differ.

    References
    ----------
    .. [1] Patki, N., Wedge, R. and Veeramachaneni, K. "The Synthetic Data Vault." IEEE
       DSAA 2016.
    .. [2] Xu, L., Skoularidou, M., Cuesta-Infante, A. and Veeramachaneni, K. "Modeling
       Tabular Data using Conditional GAN." NeurIPS 2019.

    Examples
    --------
    >>> import privaudit
    >>> from privaudit.synthetic import sdv_generator
    >>> generator = sdv_generator("CTGAN", metadata=metadata, epochs=50,
    ...                           enable_gpu=False)  # doctest: +SKIP
    >>> synthetic = generator(train, 1000, random_state=0)  # doctest: +SKIP
    >>> results = privaudit.audit_generator(generator, population)  # doctest: +SKIP
    """
    return SDVGenerator(synthesizer, metadata=metadata, **params)


class SDVGenerator:
    """One SDV synthesizer, fitted afresh on every call. Made by :func:`sdv_generator`.

    Its state (``synthesizer``, ``metadata`` as a dict or None, ``params`` and
    ``sdv_version``) is plain data, so that privaudit's fingerprint of it is stable across
    processes and machines.
    """

    def __init__(self, synthesizer: str = "GaussianCopulaSynthesizer", *,
                 metadata: Any = None, **params: Any) -> None:
        name = _SHORT.get(synthesizer, synthesizer) if isinstance(synthesizer, str) else None
        if name not in SDV_SYNTHESIZERS:
            raise param_error("synthesizer", _NAME, f"one of {list(SDV_SYNTHESIZERS)} (or "
                              f"{list(_SHORT)})", synthesizer)
        metadata = _metadata_dict(metadata)
        sdv = _import_sdv()
        if metadata is None:
            warnings.warn(f"{_NAME}({name!r}): no metadata given, so each run reads the "
                          "column types from its own training table (SDV's detection: "
                          "they may differ between runs, and columns taken for personal "
                          "information are replaced by fake values); pass metadata= to fix "
                          "them.", PrivauditWarning, stacklevel=3)
        self.synthesizer = name
        self.metadata = metadata
        self.params = dict(params)
        self.sdv_version = str(getattr(sdv, "__version__", "?"))

    def __repr__(self) -> str:
        args = [repr(self.synthesizer)]
        if self.metadata is not None:
            args.append(f"metadata=<{len(_table_columns(self.metadata))} columns>")
        args += [f"{k}={v!r}" for k, v in sorted(self.params.items())]
        return f"sdv_generator({', '.join(args)})"

    @property
    def __name__(self) -> str:
        """The name audit results carry (``"sdv-CTGANSynthesizer"``)."""
        return f"sdv-{self.synthesizer}"

    def __call__(self, train: pd.DataFrame, n_rows: int, *,
                 random_state: Any = None) -> pd.DataFrame:
        """Fit the synthesizer on ``train`` and sample ``n_rows`` rows (seeded)."""
        func = f"{type(self).__name__}.__call__"
        if not isinstance(train, pd.DataFrame):
            raise param_error("train", func, "a pandas DataFrame",
                              f"<{type(train).__name__}>", error=TypeError)
        n_rows = check_int(n_rows, param="n_rows", func=func, low=1)
        seed = check_int(random_state, param="random_state", func=func, allow_none=True)
        fit_seed, sample_seed = (int(s) for s in np.random.SeedSequence(seed).generate_state(
            2, dtype=np.uint32))
        sdv = _import_sdv()
        major = _major(getattr(sdv, "__version__", "2"))
        # Imported before seeding: importing torch (which SDV does) must precede fork_rng.
        synthesizer_class = getattr(_module("sdv.single_table"), self.synthesizer)
        data = train.reset_index(drop=True).copy()
        with _global_seed(fit_seed), warnings.catch_warnings():
            # SDV says it of every synthesizer built on detected or loaded metadata.
            warnings.filterwarnings("ignore", message="We strongly recommend saving the "
                                    "metadata", category=UserWarning)
            metadata, table_name = self._metadata(data)
            model = synthesizer_class(metadata, **self.params)
            model.fit({table_name: data} if major >= 2 else data)
            model._set_random_state(sample_seed)
            table = model.sample(n_rows)
        if isinstance(table, Mapping):  # SDV 2: {table_name: DataFrame}
            table = table[table_name] if table_name in table else next(iter(table.values()))
        missing = [c for c in train.columns if c not in table.columns]
        if missing:
            raise ValueError(f"SDV's {self.synthesizer} returned no column {missing[:5]} of "
                             "the training table (is it in the metadata?).")
        return table[list(train.columns)].reset_index(drop=True)

    def _metadata(self, data: pd.DataFrame) -> tuple[Any, str]:
        """The run's SDV metadata object and table name (detected when none was given)."""
        module = _module("sdv.metadata")
        unified = getattr(module, "Metadata", None)
        if self.metadata is None:
            if unified is not None:
                return unified.detect_from_dataframes({_TABLE: data}), _TABLE
            single = module.SingleTableMetadata()  # SDV < 1.15
            single.detect_from_dataframe(data)
            return single, _TABLE
        tables = self.metadata.get("tables")
        name = next(iter(tables)) if isinstance(tables, Mapping) and len(tables) == 1 else _TABLE
        if unified is not None:
            return unified.load_from_dict(copy.deepcopy(self.metadata),
                                          single_table_name=name), name
        return module.SingleTableMetadata.load_from_dict(copy.deepcopy(
            self.metadata["tables"][name] if isinstance(tables, Mapping) else self.metadata)
        ), name


def from_sdv_synthesizer(synthesizer: Any) -> SDVGenerator | None:
    """The :class:`SDVGenerator` equivalent to an SDV synthesizer object (None if not one).

    An SDV synthesizer built by the user (``GaussianCopulaSynthesizer(metadata, ...)``)
    cannot be fitted as is by the shadow runs: SDV 2 fits ``{table: DataFrame}`` and
    returns a dict, and its training draws from global generators. Its class name,
    metadata and constructor parameters (``get_parameters()``) make the same synthesizer
    through :func:`sdv_generator`, seeded per run.
    """
    cls = type(synthesizer)
    if not cls.__module__.startswith("sdv.") or cls.__name__ not in SDV_SYNTHESIZERS:
        return None
    params = dict(synthesizer.get_parameters())
    params.pop("metadata", None)
    return SDVGenerator(cls.__name__, metadata=synthesizer.metadata, **params)


def _metadata_dict(metadata: Any) -> dict[str, Any] | None:
    """The metadata as a plain dict (the generator's canonical state), or None."""
    if metadata is None:
        return None
    if isinstance(metadata, Mapping):
        out = copy.deepcopy(dict(metadata))
    elif callable(getattr(metadata, "to_dict", None)):
        out = metadata.to_dict()
    else:
        raise param_error("metadata", _NAME, "an SDV Metadata (or SingleTableMetadata), a "
                          "dict in SDV's JSON form, or None", f"<{type(metadata).__name__}>",
                          error=TypeError)
    tables = out.get("tables")
    if not isinstance(out.get("columns"), Mapping) and not (
            isinstance(tables, Mapping) and len(tables) == 1):
        raise param_error("metadata", _NAME, "the metadata of one table (a 'columns' dict, "
                          "or 'tables' with exactly one table)",
                          f"<dict with keys {sorted(map(str, out))[:5]}>")
    return out


def _table_columns(metadata: dict[str, Any]) -> Mapping[str, Any]:
    tables = metadata.get("tables")
    table = next(iter(tables.values())) if isinstance(tables, Mapping) else metadata
    return table.get("columns", {})


def _import_sdv() -> Any:
    return import_optional("sdv", extra="sdv", purpose=_PURPOSE)


def _module(name: str) -> Any:
    return import_optional(name, extra="sdv", purpose=_PURPOSE)


def _major(version: str) -> int:
    head = str(version).split(".")[0]
    return int(head) if head.isdigit() else 2


@contextlib.contextmanager
def _global_seed(seed: int) -> Iterator[None]:
    """Seed numpy's, Python's and (when loaded) torch's global generators; restore them."""
    # The legacy global generator is the point: SDV and CTGAN draw from it.
    numpy_state, python_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    torch = sys.modules.get("torch")  # SDV imports it (CTGAN, TVAE); never imported here
    fork = torch.random.fork_rng() if torch is not None else contextlib.nullcontext()
    try:
        with fork:
            np.random.seed(seed)  # noqa: NPY002
            random.seed(seed)
            if torch is not None:
                torch.manual_seed(seed)
            yield
    finally:
        np.random.set_state(numpy_state)  # noqa: NPY002
        random.setstate(python_state)
