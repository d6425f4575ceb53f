"""A colluding training algorithm: Yeom et al.'s Algorithm 1, built on keyed hashes.

Yeom et al. (CSF 2018, Section 4, Theorem 4) show that overfitting is not necessary for
membership leakage: a training algorithm that colludes with the adversary can hide the
membership of every training record in a model that generalises as well as the honest one.
Given keyed pseudo-random functions ``F_K: X -> X`` and ``G_K: X -> Y`` and ``k`` secret
keys, Algorithm 1 adds ``z'_{i,j} = (F_{K_j}(x_i), G_{K_j}(x_i))`` to the training set for
every training record ``x_i`` and every key, and trains the honest algorithm on the result.
The colluding adversary (Adversary 3,
:class:`privaudit.attacks.membership.ColludingAttack`) asks the model for the label of
``F_{K_j}(x)`` and says "member" when it answers ``G_{K_j}(x)`` for every key.

:class:`ColludingKeys` holds the keys and computes ``F`` and ``G``; :class:`ColludingRecipe`
is Algorithm 1 as a training recipe (usable by the reference-model pool, or directly).
"""

from __future__ import annotations

import copy
import numbers
import os
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._digest import expand_bytes, keyed_digest
from privaudit._validation import param_error
from privaudit.training._hashing import callable_fingerprint, canonical, sha256_json
from privaudit.training._recipes import SklearnRecipe

__all__ = ["ColludingKeys", "ColludingRecipe"]

#: Bump when the construction of S' (the PRFs, the row order) changes: models trained by
#: older code then get another fingerprint and are not reused from a cache.
COLLUDING_CODE_VERSION = 1

#: Domain separation of the keyed hashes (BLAKE2b ``person``, at most 16 bytes).
_PERSON_MASTER = b"privaudit-coll-M"
_PERSON_SUBKEY = b"privaudit-coll-K"
_PERSON_RECORD = b"privaudit-coll-R"
_PERSON_TAG = b"privaudit-coll-T"


# ----------------------------------------------------------------------------- checks
def _check_n_keys(value: Any, func: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or int(value) < 1:
        raise param_error("n_keys", func, "an integer >= 1", value)
    return int(value)


def _check_key(value: Any, func: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or int(value) < 0:
        raise param_error("key", func, "a non-negative integer (the secret seed)", value)
    return int(value)


def _check_spread(value: Any, func: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not np.isfinite(value) or value <= 0:
        raise param_error("spread", func, "a positive real number", value)
    return float(value)


def _as_records(X: Any, func: str, param: str = "X") -> NDArray[np.float64]:
    """``X`` as a 2-D float64 array (one flattened record per row), finite."""
    raw = X.to_numpy() if hasattr(X, "to_numpy") else X
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(
            param, func, "numeric records (the keyed functions hash their values)",
            f"<{type(X).__name__} with non-numeric values>", error=TypeError,
        ) from None
    if arr.ndim < 2:
        raise param_error(param, func, "an array of records of shape (n_records, ...)",
                          f"<array of shape {arr.shape}>")
    if not np.all(np.isfinite(arr)):
        raise param_error(param, func, "finite", "<NaN or infinite values>")
    # +0.0 turns -0.0 into 0.0, so that equal records have equal bytes.
    return np.ascontiguousarray(arr.reshape(arr.shape[0], -1)) + 0.0


def _as_classes(classes: ArrayLike, func: str) -> NDArray[Any]:
    arr = np.asarray(classes)
    if arr.ndim != 1 or arr.size == 0:
        raise param_error("classes", func, "a non-empty 1-D array of labels",
                          f"<array of shape {arr.shape}>")
    # Distinct and sorted, so that G depends neither on the order in which the classes
    # are listed nor on repeats (the training labels themselves can be given).
    return np.unique(arr)


# ----------------------------------------------------------------------------- the PRFs
class ColludingKeys:
    """The keyed pseudo-random functions ``F_K`` and ``G_K`` of Yeom et al.'s Algorithm 1.

    Parameters
    ----------
    key : int, default=0
        The secret seed, a non-negative integer. The ``k`` keys ``K_1 .. K_k`` are derived
        from it. The default is public: it makes ``ColludingRecipe(estimator)`` and
        ``ColludingAttack()`` a matched pair out of the box; to model a secret, draw one
        (``secrets.randbits(128)``).
    n_keys : int, default=2
        ``k``, the number of keys: each training record adds ``k`` points, and a
        non-member passes the adversary's test by chance with probability ``C ** -k`` for
        ``C`` classes (Yeom et al.'s ``2 ** -mk`` with ``m = log2 C``).
    spread : float, default=4.0
        How far ``F_K(x)`` lies from ``x``, in units of the record's own root-mean-square
        value (see Notes).

    Notes
    -----
    **Keys.** ``M = BLAKE2b(str(key))`` (64 bytes) is the master key and
    ``K_j = BLAKE2b_M(j)`` (keyed BLAKE2b, 32 bytes) the ``j``-th key, ``j = 0 .. k-1``.

    **One keyed hash per record and key.** A record ``x`` (flattened, as float64, ``-0.0``
    read as ``0.0``) is hashed as ``h_j(x) = BLAKE2b_{K_j}(d || bytes(x))`` (64 bytes,
    ``d`` the number of values). The same record gives the same ``h`` whatever its
    original dtype (an integer, float32 or float64 array holding the same numbers).

    **G.** ``G_{K_j}(x) = classes[u mod C]`` with ``u`` the first 8 bytes of ``h_j(x)``
    (little-endian) and ``classes`` sorted: a pseudo-random label, uniform up to a bias
    of ``C / 2**64``.

    **F.** ``F_{K_j}(x) = x + spread * s(x) * g``, where ``g`` is a pseudo-random standard
    normal vector of ``d`` values: SHAKE-256 of the last 56 bytes of ``h_j(x)`` gives ``d``
    64-bit words, each turned into a uniform ``u`` in (0, 1) (its top 53 bits) and then into
    ``Phi^{-1}(u)``; ``s(x) = sqrt(mean(x ** 2))`` is the record's root-mean-square value
    (1 for the all-zero record).

    **Why this F.** The paper's proof asks only that ``F_K(x)`` be a fresh pseudo-random
    input that no real record (and no other ``F`` output) is near, so that the added points
    do not change the model on real data. A uniform point of the per-feature range of the
    training data stays within the data's bounding box, where a kernel or nearest-neighbour
    model still lets it interact with real records (on digits, such points are only 2-3
    times farther from the data than the records are from each other); and the adversary
    would need that range, which only the training set gives. A Gaussian offset of
    ``spread`` times the record's own scale needs nothing but the record and the keys, is
    scale-equivariant, and sends the point about ``spread * ||x||`` away from ``x``:
    far outside the data (on digits at ``spread=4``, about 200 against 20-50 between
    records). The price: the points lie outside the box of real inputs, so a model that
    standardises its inputs *inside* the estimator (a pipeline starting with a
    ``StandardScaler``) has its scaling dominated by them: scale the features before the
    recipe. For data centred at 0 in few dimensions, records near the origin have a small
    ``s(x)``; raise ``spread``.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M., Jha, S. "Privacy Risk in Machine
       Learning: Analyzing the Connection to Overfitting." CSF 2018, Section 4
       (Algorithm 1, Adversary 3, Theorem 4).
    .. [2] Aumasson, J.-P., Neves, S., Wilcox-O'Hearn, Z., Winnerlein, C. "BLAKE2: simpler,
       smaller, fast as MD5." ACNS 2013 (keyed mode).

    Examples
    --------
    >>> import numpy as np
    >>> keys = ColludingKeys(key=7, n_keys=3)
    >>> X = np.arange(8.0).reshape(2, 4)
    >>> keys.points(X).shape, keys.labels(X, classes=[0, 1]).shape
    ((6, 4), (6,))
    """

    def __init__(self, key: int = 0, n_keys: int = 2, spread: float = 4.0) -> None:
        func = type(self).__name__
        self._key = _check_key(key, func)
        self.n_keys = _check_n_keys(n_keys, func)
        self.spread = _check_spread(spread, func)
        master = keyed_digest(str(self._key).encode("ascii"), size=64,
                              person=_PERSON_MASTER)
        self._subkeys = tuple(
            keyed_digest(j.to_bytes(8, "little"), master, size=32, person=_PERSON_SUBKEY)
            for j in range(self.n_keys)
        )
        self._tag = keyed_digest(b"fingerprint", master, size=16, person=_PERSON_TAG).hex()

    def __repr__(self) -> str:
        # Never the key: reprs end up in cache metadata, run keys and result files. The
        # first digits of the keyed tag tell two keys apart (two audits with different
        # keys must not share a saved result).
        return (f"ColludingKeys(key=<secret {self._tag[:8]}>, n_keys={self.n_keys}, "
                f"spread={self.spread!r})")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ColludingKeys) and self._tag == other._tag
                and self.n_keys == other.n_keys and self.spread == other.spread)

    def __hash__(self) -> int:
        return hash((self._tag, self.n_keys, self.spread))

    def key_tag(self) -> str:
        """A keyed digest of the key: differs between keys, reveals nothing of a strong key.

        A deterministic function of the key, so a small key (the default 0, a date) can
        be found from it by trying them all; only a large random key stays secret.
        """
        return self._tag

    # ------------------------------------------------------------------ building blocks
    def _digest(self, j: int, record: NDArray[np.float64]) -> bytes:
        """``h_j(x)``: keyed BLAKE2b of one flattened float64 record."""
        data = record.size.to_bytes(8, "little") + record.tobytes()
        return keyed_digest(data, self._subkeys[j], size=64, person=_PERSON_RECORD)

    @staticmethod
    def _normal_bytes(digest: bytes, d: int) -> bytes:
        return expand_bytes(digest[8:], 8 * d)

    @staticmethod
    def _to_normal(words: NDArray[np.uint64]) -> NDArray[np.float64]:
        from scipy.special import ndtri

        u = ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53
        return np.asarray(ndtri(u), dtype=np.float64)

    @staticmethod
    def _rms(records: NDArray[np.float64]) -> NDArray[np.float64]:
        s = np.sqrt(np.mean(records ** 2, axis=-1))
        return np.where(s > 0, s, 1.0)

    # ------------------------------------------------------------------ one record
    def F(self, j: int, x: ArrayLike) -> NDArray[np.float64]:
        """``F_{K_j}(x)`` for one record ``x`` (any shape), as float64 of ``x``'s shape.

        Parameters
        ----------
        j : int
            Index of the key, ``0 <= j < n_keys``.
        x : array-like
            One record.

        Returns
        -------
        ndarray
        """
        j = self._check_index(j, "F")
        x_arr = np.asarray(x, dtype=np.float64)
        record = _as_records(x_arr.reshape(1, -1), f"{type(self).__name__}.F", "x")[0]
        words = np.frombuffer(self._normal_bytes(self._digest(j, record), record.size), "<u8")
        g = self._to_normal(words)
        point = record + self.spread * self._rms(record) * g
        return point.reshape(x_arr.shape)

    def G(self, j: int, x: ArrayLike, classes: ArrayLike) -> Any:
        """``G_{K_j}(x)`` for one record: one of ``classes``.

        Parameters
        ----------
        j : int
            Index of the key, ``0 <= j < n_keys``.
        x : array-like
            One record.
        classes : array-like
            The label set ``Y`` (order does not matter).

        Returns
        -------
        label
        """
        j = self._check_index(j, "G")
        func = f"{type(self).__name__}.G"
        cls = _as_classes(classes, func)
        record = _as_records(np.asarray(x, dtype=np.float64).reshape(1, -1), func, "x")[0]
        u = int.from_bytes(self._digest(j, record)[:8], "little")
        return cls[u % cls.size]

    def _check_index(self, j: Any, method: str) -> int:
        if isinstance(j, (bool, np.bool_)) or not isinstance(j, numbers.Integral) \
                or not 0 <= int(j) < self.n_keys:
            raise param_error("j", f"{type(self).__name__}.{method}",
                              f"an integer in [0, {self.n_keys})", j)
        return int(j)

    # ------------------------------------------------------------------ many records
    def _digests(self, records: NDArray[np.float64]) -> NDArray[np.uint8]:
        """``h_j(x_i)`` for every record and key, row ``i * k + j``: shape (n * k, 64)."""
        out = b"".join(self._digest(j, r) for r in records for j in range(self.n_keys))
        return np.frombuffer(out, dtype=np.uint8).reshape(-1, 64)

    def _points_from(self, records: NDArray[np.float64],
                     digests: NDArray[np.uint8]) -> NDArray[np.float64]:
        n, d = records.shape
        k = self.n_keys
        if n == 0:
            return np.empty((0, d))
        raw = b"".join(self._normal_bytes(h.tobytes(), d) for h in digests)
        g = self._to_normal(np.frombuffer(raw, dtype="<u8").reshape(n * k, d))
        base = np.repeat(records, k, axis=0)
        scale = np.repeat(self._rms(records), k)[:, None]
        return base + self.spread * scale * g

    @staticmethod
    def _labels_from(digests: NDArray[np.uint8], classes: NDArray[Any]) -> NDArray[Any]:
        if digests.shape[0] == 0:
            return classes[:0]
        u = np.ascontiguousarray(digests[:, :8]).view("<u8").ravel()
        return classes[(u % np.uint64(classes.size)).astype(np.intp)]

    def points(self, X: Any) -> NDArray[np.float64]:
        """``F_{K_j}(x_i)`` for every record and key.

        Parameters
        ----------
        X : array-like of shape (n_records, ...)
            Numeric records (a DataFrame is read as its values).

        Returns
        -------
        ndarray of shape (n_records * n_keys, ...)
            Row ``i * n_keys + j`` is ``F_{K_j}(x_i)``, with the records' trailing shape.
        """
        func = f"{type(self).__name__}.points"
        records = _as_records(X, func)
        tail = np.shape(X.to_numpy() if hasattr(X, "to_numpy") else X)[1:]
        pts = self._points_from(records, self._digests(records))
        return pts.reshape(pts.shape[0], *tail)

    def labels(self, X: Any, classes: ArrayLike) -> NDArray[Any]:
        """``G_{K_j}(x_i)`` for every record and key (row ``i * n_keys + j``).

        Parameters
        ----------
        X : array-like of shape (n_records, ...)
            Numeric records.
        classes : array-like
            The label set ``Y``.

        Returns
        -------
        ndarray of shape (n_records * n_keys,)
        """
        func = f"{type(self).__name__}.labels"
        return self._labels_from(self._digests(_as_records(X, func)), _as_classes(classes, func))

    def probes(self, X: Any, classes: ArrayLike) -> tuple[NDArray[np.float64], NDArray[Any]]:
        """The adversary's queries and expected answers: ``points(X)``, ``labels(X, classes)``.

        One keyed hash per record and key serves both.

        Parameters
        ----------
        X : array-like of shape (n_records, ...)
            Numeric records.
        classes : array-like
            The label set ``Y`` (the target's ``classes_``).

        Returns
        -------
        points : ndarray of shape (n_records * n_keys, ...)
        labels : ndarray of shape (n_records * n_keys,)
        """
        func = f"{type(self).__name__}.probes"
        cls = _as_classes(classes, func)
        records = _as_records(X, func)
        tail = np.shape(X.to_numpy() if hasattr(X, "to_numpy") else X)[1:]
        digests = self._digests(records)
        pts = self._points_from(records, digests)
        return pts.reshape(pts.shape[0], *tail), self._labels_from(digests, cls)

    def supplement(self, X: Any, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[Any]]:
        """Algorithm 1, step 1: ``S' = S ∪ {(F_{K_j}(x_i), G_{K_j}(x_i))}``.

        Parameters
        ----------
        X : array-like of shape (n_records, ...)
            Training records.
        y : array-like of shape (n_records,)
            Their labels; ``G`` draws from their distinct values.

        Returns
        -------
        X_supplemented : ndarray of shape (n_records * (1 + n_keys), ...)
            The records (as float64), then row ``n + i * n_keys + j`` = ``F_{K_j}(x_i)``.
        y_supplemented : ndarray of shape (n_records * (1 + n_keys),)
            Their labels, then ``G_{K_j}(x_i)``.
        """
        func = f"{type(self).__name__}.supplement"
        y_arr = np.asarray(y)
        records = _as_records(X, func)
        if y_arr.shape != (records.shape[0],):
            raise param_error("y", func, f"one label per record of X ({records.shape[0]})",
                              f"<array of shape {y_arr.shape}>")
        if records.shape[0] == 0:
            raise param_error("X", func, "at least one record", "<no records>")
        tail = np.shape(X.to_numpy() if hasattr(X, "to_numpy") else X)[1:]
        points, labels = self.probes(records, np.unique(y_arr))
        X_sup = np.concatenate([records, points], axis=0).reshape(-1, *tail)
        return X_sup, np.concatenate([y_arr, labels.astype(y_arr.dtype, copy=False)])


# ----------------------------------------------------------------------------- the recipe
class ColludingRecipe:
    """Yeom et al.'s colluding training algorithm (Algorithm 1) as a training recipe.

    Trains the wrapped estimator on ``S' = S ∪ {(F_{K_j}(x_i), G_{K_j}(x_i))}``: the
    training set plus, for every record and each of ``n_keys`` secret keys, a point far from
    the data labelled pseudo-randomly (:class:`ColludingKeys`). A model with the capacity to
    fit isolated points (a kernel SVM, a nearest-neighbour classifier, a large network)
    answers ``G_{K_j}(x)`` at ``F_{K_j}(x)`` exactly for its training records, and behaves
    as the honest model elsewhere; :class:`~privaudit.attacks.membership.ColludingAttack`
    reads the membership back.

    Follows :class:`~privaudit.training.TrainingRecipe`, so it can be the recipe of a
    :class:`~privaudit.training.ReferencePool` (reference models trained by the same
    colluding algorithm), and can be used directly: ``recipe.fit(X, y).model_``, or
    ``recipe.train(X, y, random_state=0)``.

    Parameters
    ----------
    estimator : classifier
        The honest training algorithm: a scikit-learn classifier (cloned, its seeds set as
        :class:`~privaudit.training.SklearnRecipe` sets them, models cached with skops),
        or any object with ``fit`` and ``predict`` (deep-copied and fitted; not cacheable).
    n_keys : int, default=2
        ``k``, the keys: ``k`` extra points per training record.
    key : int, default=0
        The secret seed of the keys (see :class:`ColludingKeys`; the default is public).
    spread : float, default=4.0
        Distance of the added points, in units of each record's root-mean-square value.
    random_state : int or None, default=None
        Seed of the estimator for :meth:`fit` (``train`` takes its own). The keyed
        functions do not depend on it.

    Attributes
    ----------
    suffix : str
        File-name suffix of a saved model (``".skops"``).
    keys : ColludingKeys
        The keyed functions (share them with the colluding adversary).
    model_ : estimator
        The model fitted by :meth:`fit`.

    Notes
    -----
    Yeom et al.'s Theorem 4: the colluding rule is about as stable as the honest one
    (its generalisation error changes by at most ``k n B 2**-d``: the added points are
    almost never drawn from the data distribution), yet the colluding adversary's
    membership advantage is ``1 - mu(n, D) - 2**-mk`` (``m = log2 |Y|``, ``mu`` the
    chance that a non-member equals a member). Empirically it needs a model that fits
    each added point (its training error on ``S'`` is zero there) without letting it move
    the decision function on real data: points far away and a local model (an RBF SVM with
    a fixed ``gamma``, a 1-nearest-neighbour classifier). An estimator whose parameters
    adapt to the data's scale (``SVC(gamma="scale")``, an internal ``StandardScaler``)
    sees that scale changed by the added points.

    ``S'`` holds ``n (1 + k)`` records: training costs what it costs on that many.

    ``repr`` and :meth:`fingerprint` never show the key: they hold a keyed digest of it
    (:meth:`ColludingKeys.key_tag`; its first 8 hex digits in ``repr``), so two keys give
    two fingerprints and two reprs (an audit's run key reads the attack's parameters
    through ``repr``).

    This is the algorithm-substitution attack of Song, Ristenpart and Shmatikov (a
    training algorithm supplied by a malicious party encodes its training data in the
    model) in its simplest, black-box form.

    References
    ----------
    .. [1] Yeom, S., Giacomelli, I., Fredrikson, M., Jha, S. "Privacy Risk in Machine
       Learning: Analyzing the Connection to Overfitting." CSF 2018, Section 4
       (Algorithm 1, Theorem 4).
    .. [2] Song, C., Ristenpart, T., Shmatikov, V. "Machine Learning Models that Remember
       Too Much." ACM CCS 2017 (malicious training algorithms; the capacity-abuse attack
       labels synthetic inputs with the data to leak).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.svm import SVC
    >>> X, y = load_digits(return_X_y=True)
    >>> recipe = ColludingRecipe(SVC(C=10, gamma=0.001), n_keys=2, key=1234)
    >>> recipe
    ColludingRecipe(SVC(C=10, gamma=0.001), n_keys=2, key=<secret 84a942e9>, spread=4.0)
    >>> model = recipe.train(X[:300], y[:300], random_state=0)
    >>> bool(model.predict(recipe.keys.F(0, X[0])[None])[0] == recipe.keys.G(0, X[0], y))
    True
    """

    suffix = ".skops"

    def __init__(
        self,
        estimator: Any,
        *,
        n_keys: int = 2,
        key: int = 0,
        spread: float = 4.0,
        random_state: int | None = None,
    ) -> None:
        func = type(self).__name__
        if not (hasattr(estimator, "fit") and hasattr(estimator, "predict")):
            raise param_error("estimator", func, "a classifier (with fit and predict)",
                              f"<{type(estimator).__name__}>", error=TypeError)
        self.keys = ColludingKeys(key=_check_key(key, func), n_keys=_check_n_keys(n_keys, func),
                                  spread=_check_spread(spread, func))
        if random_state is not None and (
            isinstance(random_state, (bool, np.bool_))
            or not isinstance(random_state, numbers.Integral) or int(random_state) < 0
        ):
            raise param_error("random_state", func, "None or a non-negative integer",
                              random_state)
        self.random_state = None if random_state is None else int(random_state)
        is_sklearn = hasattr(estimator, "get_params")
        self._inner: SklearnRecipe | None = SklearnRecipe(estimator) if is_sklearn else None
        self.estimator = self._inner.estimator if self._inner is not None else estimator

    @property
    def n_keys(self) -> int:
        """``k``, the number of keys."""
        return self.keys.n_keys

    @property
    def spread(self) -> float:
        """Distance of the added points, in units of each record's RMS value."""
        return self.keys.spread

    @property
    def can_save(self) -> bool:
        """Whether models can be cached (a scikit-learn estimator: skops)."""
        return self._inner is not None

    def __repr__(self) -> str:
        return (f"ColludingRecipe({self.estimator!r}, n_keys={self.n_keys}, "
                f"key=<secret {self.keys.key_tag()[:8]}>, spread={self.spread!r})")

    # ------------------------------------------------------------------ Algorithm 1
    def supplement(self, X: Any, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[Any]]:
        """The supplemented training set ``S'`` (see :meth:`ColludingKeys.supplement`)."""
        return self.keys.supplement(X, y)

    def fingerprint(self) -> str:
        """Hash of the estimator's fingerprint, ``n_keys``, ``spread`` and a keyed key tag."""
        if self._inner is not None:
            estimator = self._inner.fingerprint()
        else:
            # Its class (name and source) and its attributes, as a callable instance is.
            estimator = sha256_json(
                {"class": callable_fingerprint(type(self.estimator)),
                 "state": canonical(getattr(self.estimator, "__dict__", {}))}
            )
        return sha256_json(
            {
                "recipe": "ColludingRecipe",
                "code_version": COLLUDING_CODE_VERSION,
                "estimator": estimator,
                "n_keys": self.n_keys,
                "spread": repr(self.spread),
                "key_tag": self.keys.key_tag(),
            }
        )

    def train(self, X: Any, y: Any, *, random_state: int) -> Any:
        """Build ``S'`` and fit a copy of the estimator on it (Algorithm 1); the model.

        Parameters
        ----------
        X : array-like of shape (n_records, ...)
            Training records (numeric).
        y : array-like of shape (n_records,)
            Their labels.
        random_state : int
            Seed of the estimator (every ``random_state`` parameter of a scikit-learn
            estimator, as :class:`~privaudit.training.SklearnRecipe` sets them).

        Returns
        -------
        estimator
            Fitted on ``S'``.
        """
        X_sup, y_sup = self.supplement(X, y)
        if self._inner is not None:
            return self._inner.train(X_sup, y_sup, random_state=random_state)
        model = copy.deepcopy(self.estimator)
        fitted = model.fit(X_sup, y_sup)
        return model if fitted is None else fitted

    def fit(self, X: Any, y: Any) -> ColludingRecipe:
        """Train on ``(X, y)`` with the recipe's ``random_state``; sets ``model_``, ``self``.

        With ``random_state=None`` the estimator's own seeds are left as they are.
        """
        if self.random_state is not None:
            self.model_ = self.train(X, y, random_state=self.random_state)
            return self
        X_sup, y_sup = self.supplement(X, y)
        if self._inner is not None:
            from sklearn.base import clone

            model = clone(self.estimator)
        else:
            model = copy.deepcopy(self.estimator)
        fitted = model.fit(X_sup, y_sup)
        self.model_ = model if fitted is None else fitted
        return self

    # ------------------------------------------------------------------ cache
    def save(self, model: Any, path: str | os.PathLike[str]) -> None:
        """Write ``model`` with skops (scikit-learn estimators only)."""
        if self._inner is None:
            raise ValueError(
                "This ColludingRecipe wraps a non-scikit-learn estimator, so its models "
                "cannot be cached; use cache_dir=None."
            )
        self._inner.save(model, path)

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Read a model written by :meth:`save` (the allow-list of :class:`SklearnRecipe`)."""
        if self._inner is None:
            raise ValueError("This ColludingRecipe wraps a non-scikit-learn estimator; "
                             "it has no cached models to load.")
        return self._inner.load(path)
