"""The frame :func:`~privaudit.llm.score_texts` returns: columns in the one vocabulary.

Issue 21 named every statistic in kebab-case (``min-k``, ``min-k-plus-plus``, ``dc-pdd``).
For one release, code written against the previous column names keeps working: reading a
column by its old name (``frame["min_k"]``, ``frame[["loss", "min_k"]]``, ``frame.min_k``,
``frame.get("min_k")``) answers the new column with one :class:`FutureWarning`. Every frame
derived from it (a slice, a copy, arithmetic) is a plain :class:`pandas.DataFrame`.

Imported only when texts are scored: pandas stays out of ``import privaudit``.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable
from typing import Any

import pandas as pd

from privaudit._validation import canonical_name

__all__ = ["PREVIOUS_COLUMNS", "StatisticFrame"]

#: The columns' names before issue 21 -> their names now (answered for one release).
PREVIOUS_COLUMNS: dict[str, str] = {
    old: canonical_name(old) for old in ("min_k", "min_k_plus_plus", "dc_pdd")}


def _warn_renamed(old: list[str]) -> None:
    pairs = ", ".join(f"'{name}' -> '{PREVIOUS_COLUMNS[name]}'" for name in old)
    # 1 this function, 2 the lookup below, 3 the frame's method, 4 the caller.
    warnings.warn(f"score_texts: the statistics' columns are kebab-case now ({pairs}); the "
                  "old names will be removed.", FutureWarning, stacklevel=4)


class StatisticFrame(pd.DataFrame):
    """One row per text, one float64 column per statistic, named in the one vocabulary.

    A :class:`pandas.DataFrame` that also answers a column's previous name (see the
    module's documentation); nothing else differs.
    """

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        # Derived frames are plain: only the returned frame answers the old names.
        return pd.DataFrame

    def _renamed(self, key: Any) -> Any:
        """``key`` with every previous column name that is not a column replaced."""
        def old(name: Any) -> bool:
            return (isinstance(name, str) and name in PREVIOUS_COLUMNS
                    and name not in self.columns)

        if old(key):
            _warn_renamed([key])
            return PREVIOUS_COLUMNS[key]
        if isinstance(key, list) and any(old(name) for name in key):
            _warn_renamed([name for name in key if old(name)])
            return [PREVIOUS_COLUMNS[name] if old(name) else name for name in key]
        return key

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self._renamed(key))

    def __getattr__(self, name: str) -> Any:
        if name in PREVIOUS_COLUMNS and PREVIOUS_COLUMNS[name] in self.columns:
            return self[self._renamed(name)]
        return super().__getattr__(name)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The column ``key`` (a previous name answers, with a warning), else ``default``."""
        key = self._renamed(key)
        return super().get(key, default)
