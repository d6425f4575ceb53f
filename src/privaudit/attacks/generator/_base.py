"""The base of the attacks on a generator: read synthetic tables, answer per target."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error
from privaudit.attacks._base import BaseAttack
from privaudit.attacks._tags import AttackTags

__all__ = ["GeneratorAttack", "TargetDistances", "best_thresholds", "table_digest"]


#: Distances of the last few lists of tables, by the digests of the targets, the
#: auxiliary data and every table's content: the attacks of one audit read the same
#: tables (or the same tables read again from a cache), so the distances are computed
#: once for all of them.
_MEMO: OrderedDict[tuple, list[NDArray[np.float64]]] = OrderedDict()
#: A table's content digest, computed once per table object: ``id -> (weak ref, digest)``,
#: dropped when the table is collected (so an id reused by another object never matches).
_DIGESTS: dict[int, tuple[weakref.ref, str]] = {}
_MEMO_SIZE = 4
#: Distances computed at once (float64): about 32 MiB.
_BLOCK_ELEMENTS = 1 << 22


class TargetDistances:
    """Gower distances from the targets to the rows of tables, on one fixed scale.

    Numeric columns are scaled by their range in the auxiliary data (public, the same for
    every table), so distances from different synthetic tables compare. The tables are
    encoded together, in blocks of about four million distances, by the engine of
    :mod:`privaudit.synthetic` (its encoder must see every value it encodes), and the
    distances of the last lists of tables are kept, so that several attacks on the same
    tables compute them once.

    Parameters
    ----------
    targets : pandas.DataFrame
        The target records.
    auxiliary_data : pandas.DataFrame
        Public data setting the numeric ranges and which columns are categorical.
    """

    def __init__(self, targets: Any, auxiliary_data: Any) -> None:
        from privaudit._digest import run_digest
        from privaudit.synthetic import TableMetadata

        self.columns = list(auxiliary_data.columns)
        self.targets = targets[self.columns].reset_index(drop=True)
        self.auxiliary_data = auxiliary_data
        self.categorical = TableMetadata.infer(auxiliary_data).categorical
        self._identity = run_digest(_frame_digest(self.targets),
                                    _frame_digest(auxiliary_data))

    def __call__(self, table: Any) -> NDArray[np.float64]:
        """``(n_targets, len(table))`` distances from each target to each row."""
        return self.many([table])[0]

    def many(self, tables: Sequence[Any]) -> list[NDArray[np.float64]]:
        """For each table, its ``(n_targets, len(table))`` distances."""
        key = (self._identity, tuple(table_digest(t) for t in tables))
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
        out: list[NDArray[np.float64]] = []
        for block in _blocks(tables, max(1, _BLOCK_ELEMENTS // max(len(self.targets), 1))):
            out += self._block(block)
        _MEMO[key] = out
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
        return out

    def _block(self, tables: Sequence[Any]) -> list[NDArray[np.float64]]:
        import pandas as pd

        from privaudit.synthetic import MixedTypeEncoder, gower_distances

        joined = pd.concat([t[self.columns] for t in tables], ignore_index=True)
        encoder = MixedTypeEncoder(self.columns, self.categorical).fit(
            self.targets, joined, range_frames=[self.auxiliary_data])
        distances = gower_distances(encoder.transform(self.targets),
                                    encoder.transform(joined))
        return np.split(distances, np.cumsum([len(t) for t in tables])[:-1], axis=1)


def _blocks(tables: Sequence[Any], max_rows: int) -> list[list[Any]]:
    """Consecutive groups of tables of at most ``max_rows`` rows (at least one table)."""
    groups: list[list[Any]] = [[]]
    rows = 0
    for table in tables:
        if groups[-1] and rows + len(table) > max_rows:
            groups.append([])
            rows = 0
        groups[-1].append(table)
        rows += len(table)
    return groups


def table_digest(table: Any) -> str:
    """Hex SHA-256 of a table's columns, dtypes and values, computed once per object.

    The distance cache's key: two tables with the same content (a table and the same
    table read again from a cache) share their distances. The digest is remembered for
    the object's lifetime (synthetic tables are not edited in place by the audit).
    """
    entry = _DIGESTS.get(id(table))
    if entry is not None and entry[0]() is table:
        return entry[1]
    digest = _content_digest(table)
    key = id(table)
    try:
        ref = weakref.ref(table, lambda _, key=key: _DIGESTS.pop(key, None))
    except TypeError:  # an object that takes no weak reference: not remembered
        return digest
    _DIGESTS[key] = (ref, digest)
    return digest


def _content_digest(table: Any) -> str:
    """SHA-256 of the column names, dtypes and values (objects by value, through _digest)."""
    from privaudit._digest import array_sha256, sha256_json

    columns = [array_sha256(table[column].to_numpy()) for column in table.columns]
    return sha256_json([list(map(str, table.columns)), [str(d) for d in table.dtypes],
                        list(table.shape), columns])


def _frame_digest(frame: Any) -> str:
    from privaudit.training import data_fingerprint

    return data_fingerprint(frame)


def best_thresholds(scores: NDArray[np.float64],
                    labels: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Per column, the threshold ``s >= t`` of highest accuracy on these scores.

    Thresholds are the midpoints between consecutive distinct scores (and one below the
    lowest), so a prediction on new tables is not decided by ties at a training score.
    """
    out = np.empty(scores.shape[1])
    for t in range(scores.shape[1]):
        values = np.unique(scores[:, t])
        candidates = np.concatenate([[values[0] - 1.0], (values[1:] + values[:-1]) / 2])
        correct = [np.mean((scores[:, t] >= c) == labels[:, t]) for c in candidates]
        out[t] = candidates[int(np.argmax(correct))]
    return out


class GeneratorAttack(BaseAttack):
    """Membership inference against a generator, from the synthetic tables it outputs.

    ``fit(tables, labels, targets, auxiliary_data=...)`` learns from shadow runs (the
    tables of training sets with and without each target; ``labels[r, t]`` says whether
    target ``t`` was in run ``r``); ``score(tables)`` gives, for every new table and
    target, a score (higher = more likely that the target was in the table's training
    set); ``predict(tables)`` the guesses at the thresholds of highest accuracy on the
    shadow runs. Subclasses write :meth:`_signals` (one value per table and record of
    ``records_``, higher = more member-like) and, when they learn more than thresholds,
    :meth:`_prepare`.

    Attribute inference (TAPAS's ``TargetedAIA``): with ``alternatives``, every training
    set holds each target, with one of two values of its secret attribute; a
    record-level attack scores the target and its alternative and subtracts.

    References
    ----------
    .. [1] Houssiau, F., Jordon, J., Cohen, S. N., et al. "TAPAS: a Toolbox for
       Adversarial Privacy Auditing of Synthetic Data." NeurIPS 2022 Workshop on
       Synthetic Data.
    """

    _tags: ClassVar[AttackTags] = AttackTags(tasks=("synthetic",), needs_reference_models=True)
    #: In attribute inference, whether the attack scores a target and its alternative
    #: apart and subtracts (a record-level signal), rather than reading the table alone.
    contrasts_records: ClassVar[bool] = True

    def fit(self, tables: Sequence[Any], labels: Any, targets: Any, *,
            auxiliary_data: Any, reference_data: Any = None,
            alternatives: Any = None) -> GeneratorAttack:
        """Learn from shadow tables.

        Parameters
        ----------
        tables : sequence of DataFrame
            The shadow runs' synthetic tables.
        labels : array-like of shape (n_tables, n_targets)
            Whether each target was in each table's training set.
        targets : pandas.DataFrame
            The target records.
        auxiliary_data : pandas.DataFrame
            The attacker's public data (sets the distance scale and the domain).
        reference_data : pandas.DataFrame, optional
            Population records disjoint from every training set (the density attack).
        alternatives : pandas.DataFrame, optional
            Attribute inference: each target with the other value of its secret
            attribute; ``labels[r, t]`` then says whether run ``r`` trained on the target
            (1) or on its alternative (0). A record-level attack scores both and
            subtracts, so the score says which of the two the table looks trained on.
        """
        func = f"{type(self).__name__}.fit"
        labels = np.asarray(labels, dtype=bool)
        if labels.shape != (len(tables), len(targets)):
            raise param_error("labels", func, f"a (n_tables, n_targets) = ({len(tables)}, "
                              f"{len(targets)}) array", f"<shape {labels.shape}>")
        import pandas as pd

        self.targets_ = targets.reset_index(drop=True)
        self.auxiliary_data_ = auxiliary_data
        self.reference_data_ = reference_data
        self.alternatives_ = None if alternatives is None else alternatives[list(
            targets.columns)].reset_index(drop=True)
        contrast = self.alternatives_ is not None and self.contrasts_records
        self.records_ = (pd.concat([self.targets_, self.alternatives_], ignore_index=True)
                         if contrast else self.targets_)
        self._prepare(tables, np.hstack([labels, ~labels]) if contrast else labels)
        self.thresholds_ = best_thresholds(self._contrast(self._signals(tables)), labels)
        return self

    def _contrast(self, signals: NDArray[np.float64]) -> NDArray[np.float64]:
        """Targets' signals, minus their alternatives' in attribute inference."""
        n = len(self.targets_)
        return signals if signals.shape[1] == n else signals[:, :n] - signals[:, n:]

    def _prepare(self, tables: Sequence[Any], labels: NDArray[np.bool_]) -> None:
        """Learn what the signals need from the shadow tables (nothing by default)."""

    def _signals(self, tables: Sequence[Any]) -> NDArray[np.float64]:
        raise NotImplementedError

    def score(self, tables: Sequence[Any]) -> NDArray[np.float64]:
        """``(n_tables, n_targets)`` scores, higher = more likely a member."""
        self._check_fitted("score")
        return np.asarray(self._contrast(self._signals(tables)), dtype=np.float64)

    def predict(self, tables: Sequence[Any]) -> NDArray[np.bool_]:
        """``(n_tables, n_targets)`` guesses: member or not."""
        return self.score(tables) >= self.thresholds_[None, :]
