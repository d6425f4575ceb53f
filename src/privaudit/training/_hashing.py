"""Stable content hashes for recipes, parameters and data.

The on-disk cache of reference models is keyed by these hashes, so they must be identical
across processes, machines and Python sessions: no ``hash()`` (salted per process), no
``repr`` containing a memory address, no pickle of objects whose byte layout may vary.
"""

from __future__ import annotations

import inspect
import numbers
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np

from privaudit._digest import Hasher, array_sha256, sha256_hex, sha256_json

__all__ = ["callable_fingerprint", "canonical", "data_fingerprint", "sha256_json"]


def _source_digest(obj: Any) -> str:
    """Hash of the source code of a function or class, or of its bytecode as a fallback."""
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        if code is None:
            return "<no source>"
        return sha256_hex(code.co_code + repr(code.co_consts).encode())
    return sha256_hex(text.encode("utf-8"))


def callable_fingerprint(fn: Any) -> dict[str, Any]:
    """Describe a callable by qualified name and a hash of its source.

    Only the function's own source is covered, not the helpers it calls: a recipe that
    wants a change in a helper to invalidate its cache says so with an explicit version.
    """
    import functools

    if isinstance(fn, functools.partial):
        return {
            "partial": callable_fingerprint(fn.func),
            "args": canonical(list(fn.args)),
            "keywords": canonical(dict(fn.keywords)),
        }
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn):
        target = fn.__func__ if inspect.ismethod(fn) else fn
        return {
            "function": f"{getattr(target, '__module__', '?')}.{target.__qualname__}",
            "source": _source_digest(target),
        }
    if inspect.isclass(fn):
        return {"class": f"{fn.__module__}.{fn.__qualname__}", "source": _source_digest(fn)}
    # A callable instance: its class and its state.
    cls = type(fn)
    return {
        "instance_of": f"{cls.__module__}.{cls.__qualname__}",
        "source": _source_digest(cls),
        "state": canonical(getattr(fn, "__dict__", {})),
    }


def canonical(obj: Any) -> Any:
    """Turn ``obj`` into JSON-serialisable data that identifies its content.

    Handles the values scikit-learn estimators take as parameters: scalars, strings,
    containers, numpy arrays, nested estimators, functions and classes. Anything else is
    identified by a hash of its pickle, which is stable within one library version.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        value = float(obj)
        # JSON cannot tell 1.0 from 1 after a round trip through some parsers: keep repr.
        return {"float": repr(value)}
    if isinstance(obj, np.generic):
        return canonical(obj.item())
    if isinstance(obj, np.ndarray):
        return {"ndarray": array_sha256(obj)}
    if isinstance(obj, Mapping):
        return {"dict": sorted(([canonical(k), canonical(v)] for k, v in obj.items()), key=repr)}
    if isinstance(obj, (list, tuple)):
        return {type(obj).__name__: [canonical(v) for v in obj]}
    if isinstance(obj, (set, frozenset)):
        return {"set": sorted((canonical(v) for v in obj), key=repr)}
    if isinstance(obj, np.dtype):
        return {"dtype": obj.str}
    if hasattr(obj, "get_params") and hasattr(obj, "fit") and not inspect.isclass(obj):
        cls = type(obj)
        return {
            "estimator": f"{cls.__module__}.{cls.__qualname__}",
            "params": canonical(obj.get_params(deep=False)),
        }
    if callable(obj):
        return callable_fingerprint(obj)
    try:
        payload = pickle.dumps(obj, protocol=4)
    except Exception as exc:
        raise TypeError(
            f"Cannot fingerprint a value of type {type(obj).__name__} for the reference-model "
            "cache; pass a recipe with an explicit 'version' or use plain parameter values."
        ) from exc
    return {"pickle": sha256_hex(payload)}


def data_fingerprint(X: Any, y: Any = None) -> str:
    """Hex SHA-256 of a dataset's content, shape and dtypes.

    Parameters
    ----------
    X : array-like, pandas DataFrame or scipy sparse matrix
        Features.
    y : array-like, optional
        Labels.

    Returns
    -------
    str
        A digest that changes whenever any value, the shape, a dtype, or (for data frames)
        a column name changes.
    """
    h = Hasher()
    for name, part in (("X", X), ("y", y)):
        h.update(f"<{name}>".encode())
        if part is None:
            h.update(b"None")
            continue
        h.update(_part_digest(part).encode())
    return h.hexdigest()


def _part_digest(part: Any) -> str:
    import scipy.sparse as sp

    if sp.issparse(part):
        csr = sp.csr_matrix(part)
        csr.sort_indices()
        return sha256_json(
            {
                "sparse": [int(s) for s in csr.shape],
                "data": array_sha256(csr.data),
                "indices": array_sha256(csr.indices.astype(np.int64)),
                "indptr": array_sha256(csr.indptr.astype(np.int64)),
            }
        )
    module = type(part).__module__
    if module.startswith("pandas"):
        import pandas as pd

        if isinstance(part, pd.DataFrame):
            return sha256_json(
                {
                    "columns": [str(c) for c in part.columns],
                    "dtypes": [str(d) for d in part.dtypes],
                    "values": array_sha256(
                        pd.util.hash_pandas_object(part, index=False).to_numpy()
                    ),
                    "n_rows": len(part),
                }
            )
        if isinstance(part, pd.Series):
            return sha256_json(
                {
                    "name": str(part.name),
                    "dtype": str(part.dtype),
                    "values": array_sha256(
                        pd.util.hash_pandas_object(part, index=False).to_numpy()
                    ),
                }
            )
    return array_sha256(np.asarray(part))
