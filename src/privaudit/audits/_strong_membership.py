"""Strong membership inference (Zhao et al. 2021): members against their close neighbours.

Ordinary membership inference asks whether a record is a member or a random non-member;
Zhao et al.'s r-strong membership inference (SMI) asks whether it is a member or a
non-member within distance ``r`` of it. Attribute inference needs the second (Theorem 2):
a model can leak membership against random non-members (its training records are far
from typical records) and still not tell a training record from its near twin, which is
all an attribute-inference adversary sees. This module measures that gap, one
:class:`~privaudit.results.AttackResult` per radius, from ONE query of the target.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_random_state, param_error
from privaudit.audits._inputs import check_population, population_overlap

__all__ = ["SMI_ATTACKS", "SMI_METRICS", "strong_membership_inference"]

_FUNC = "strong_membership_inference"
#: Distances a neighbour can be drawn in (on the scaled features).
SMI_METRICS: tuple[str, ...] = ("l2", "l1", "linf")
#: How the distance of a neighbour from its member is drawn within ``(0, r]``.
_RADIAL: tuple[str, ...] = ("uniform", "ball")
#: Attacks that score each record by one fixed statistic of the target's answer on it.
SMI_ATTACKS: tuple[str, ...] = ("loss", "confidence", "entropy", "modified-entropy", "gap")
_NORM_ORD: dict[str, float] = {"l2": 2.0, "l1": 1.0, "linf": math.inf}


def _check_labels(y_members: Any, n: int) -> NDArray[Any]:
    y = np.asarray(y_members)
    if y.ndim != 1 or y.shape[0] != n:
        raise param_error("y_members", _FUNC, f"one label per row of X_members ({n})",
                          f"<array of shape {y.shape}>")
    return y


def _draw_neighbours(rng: Any, flat: NDArray[np.float64], scale: NDArray[np.float64],
                     k: int, metric: str, radial: str, finite: list[float]
                     ) -> tuple[dict[float, NDArray[np.float64]], NDArray[np.intp]]:
    """Each radius's neighbours, and the features they may move along (scale > 0)."""
    active = np.flatnonzero(scale > 0)
    d_eff = active.size
    # One block per (member, neighbour), shared by every radius (see Notes).
    blocks = rng.standard_normal((flat.shape[0], k, d_eff + 1))
    unit = _directions(blocks[..., :d_eff], metric)
    fraction = _fractions(blocks[..., d_eff], radial, d_eff)
    return {r: _neighbours(flat, active, scale, unit, fraction, r) for r in finite}, active


def _check_labels_and_dataset(neighbour_labels: Any, dataset: Any) -> None:
    if not (neighbour_labels == "member" or callable(neighbour_labels)):
        raise param_error("neighbour_labels", _FUNC, "'member' or a callable",
                          neighbour_labels, error=TypeError)
    if not isinstance(dataset, str):
        raise param_error("dataset", _FUNC, "a string", dataset, error=TypeError)


def _one_batch(flat: NDArray[np.float64], y: NDArray[Any],
               neighbours: dict[float, NDArray[np.float64]], y_near: dict[float, Any],
               finite: list[float], pop_flat: Any, y_pop: Any, pop_index: Any
               ) -> tuple[NDArray[np.float64], NDArray[Any], dict[float, NDArray[np.intp]]]:
    """Members, then each finite radius's neighbours, then the population sample: one batch.

    Returns the rows, their labels and where each radius's non-members sit in the batch.
    """
    n = flat.shape[0]
    parts: list[NDArray[np.float64]] = [flat]
    labels_parts: list[NDArray[Any]] = [y]
    rows: dict[float, NDArray[np.intp]] = {}
    start = n
    for r in finite:
        rows[r] = np.arange(start, start + neighbours[r].shape[0])
        parts.append(neighbours[r])
        labels_parts.append(y_near[r])
        start += neighbours[r].shape[0]
    if pop_index is not None:
        rows[math.inf] = np.arange(start, start + pop_index.size)
        parts.append(pop_flat[pop_index])
        labels_parts.append(y_pop[pop_index])
    return np.concatenate(parts), np.concatenate(labels_parts), rows


def strong_membership_inference(
    model: Any,
    X_members: Any,
    y_members: ArrayLike,
    *,
    radii: Sequence[float | None],
    n_neighbours: int = 1,
    attack: str = "loss",
    attack_params: dict[str, Any] | None = None,
    metric: str = "l2",
    radial: str = "uniform",
    feature_scale: ArrayLike | None = None,
    neighbour_labels: str | Callable[[Any, NDArray[Any]], ArrayLike] = "member",
    population: tuple[Any, ArrayLike] | None = None,
    dataset: str = "",
    random_state: int | np.random.Generator | None = 0,
) -> list[Any]:
    """Score the target's members against non-member neighbours within each radius.

    For every radius ``r`` the experiment of Zhao et al. (Experiment 2, r-SMI) is run on
    all members at once: each member is paired with ``n_neighbours`` non-members drawn
    at distance in ``(0, r]`` of it, and a membership attack scores members (label 1)
    against those neighbours (label 0). A radius of ``inf`` (or ``None``) is ordinary
    membership inference, members against random population records, the reference point
    that the SMI curve should approach as ``r`` grows.

    Parameters
    ----------
    model : fitted model or privaudit Target
        Anything :func:`privaudit.targets.as_target` accepts. It is queried once, on the
        members, every neighbour of every radius and the population sample together, so
        its query counter grows by exactly that many records.
    X_members : array-like of shape (n_members, ...) or DataFrame
        Training records of the model (numeric features; extra axes are flattened for
        the geometry and restored for the query).
    y_members : array-like of shape (n_members,)
        Their true labels (or targets, for a regressor).
    radii : sequence of float or None
        Radii ``r > 0`` in units of the scaled features (see Notes); ``inf`` or ``None``
        is ordinary MI against the population and needs ``population``. One result per
        radius, in the order given; repeats are refused.
    n_neighbours : int, default=1
        Neighbours drawn per member and radius.
    attack : str, default="loss"
        A membership attack scoring each record from the target's answer on it alone,
        one of :data:`SMI_ATTACKS` (see :func:`privaudit.attacks.get_attack`). Attacks
        needing reference models, white-box access, their own queries or a fit on the
        audited labels are refused: the same adversary must be compared across radii.
    attack_params : dict, optional
        Constructor parameters of the attack (e.g. ``{"threshold": 0.1}``).
    metric : {"l2", "l1", "linf"}, default="l2"
        Norm of the scaled difference that defines the distance.
    radial : {"uniform", "ball"}, default="uniform"
        ``"uniform"``: the distance is uniform on ``(0, r)``, so small and large
        perturbations are equally represented. ``"ball"``: the neighbour is uniform in
        the volume of the ball (distance ``r * U**(1/d)``), which in ``d`` dimensions puts
        almost every neighbour near distance ``r``.
    feature_scale : array-like of shape (n_features,), optional
        Per-feature unit of distance (non-negative, one positive at least). Default: the
        population's per-feature standard deviation, or the members' when no population
        is given. Features whose scale is 0 are never perturbed.
    neighbour_labels : "member" or callable, default="member"
        Label given to a neighbour when the target is queried. ``"member"`` keeps its
        member's label (the neighbourhood is assumed label-homogeneous, as Zhao et al.'s
        near neighbours are). A callable ``f(X_neighbours, y_of_their_members)`` returns
        other labels (e.g. from a labelling oracle); it is called once with the neighbours
        of every finite radius stacked, in the order of the result.
    population : (X_population, y_population), optional
        Non-members from the same distribution (checked disjoint from the members):
        the feature scale, and the non-members of the ``inf`` radius.
    dataset : str, default=""
        Dataset name for provenance.
    random_state : int, numpy Generator or None, default=0
        Every random draw (directions, distances, population sample) goes through it.

    Returns
    -------
    list of AttackResult
        One per radius, in the order of ``radii``. Labels: 1 = member, 0 = neighbour (or
        population record). ``attack`` is ``"strong-<attack>[r=<r>]"``; ``parameters``
        holds the radius (``None`` for ``inf``), the attack's parameters and the sampling
        settings; ``extra`` the distance definition and the realised distances. Record
        ids: member ``i`` is ``i``; neighbour ``j`` of member ``i`` is
        ``n_members + i * n_neighbours + j`` (the same id at every radius: the same
        ray, see Notes); population record ``p`` is ``n_members * (1 + n_neighbours) + p``.

    Raises
    ------
    ValueError
        A non-positive or repeated radius, ``inf`` without a population, empty or
        mismatched inputs, an unknown metric or attack, a population overlapping the
        members, or a radius so small that a neighbour equals a member in floating point.
    TypeError
        An attack that cannot score from shared outputs (reference models, white box,
        own queries, cross-fitted), non-numeric features, or arguments of the wrong type.

    Notes
    -----
    **Distance.** With ``s`` the per-feature scale and ``A`` the features with
    ``s > 0``, ``d(x, x') = || ((x' - x) / s)[A] ||_p`` (``p`` from ``metric``);
    features outside ``A`` are equal in ``x`` and ``x'``.

    **Drawing a neighbour.** For each member ``x`` and neighbour ``j``, one block of
    ``|A| + 1`` standard normals ``(g, h)`` is drawn from the generator (members in
    order, their neighbours in order: the block of neighbour ``j`` of member ``i`` is the
    ``(i * n_neighbours + j)``-th). The direction ``u`` is uniform on the unit sphere of
    the norm: ``g / ||g||_2`` for ``"l2"``; a Laplace vector ``sign(g) * -log(erfc(|g| /
    sqrt 2))`` divided by its l1 norm for ``"l1"`` (a density depending on the l1 norm
    only, as the Gaussian's depends on the l2 norm); a uniform point of the cube
    ``erf(g / sqrt 2)`` divided by its largest magnitude for ``"linf"`` (projecting the
    cube from its centre onto its faces is uniform on them, every face being at the same
    distance). ``f = Phi(h)`` is uniform on ``(0, 1)``; the distance is ``t = r * f``
    (``"uniform"``) or ``r * f**(1/|A|)`` (``"ball"``), and ``x'[A] = x[A] + t * s[A] *
    u``. The same block serves every radius: the neighbours of a member at radii ``r1 <
    r2`` lie on the same ray at distances in the ratio ``r1 / r2`` (common random
    numbers, so the AUCs of different radii are compared on the same directions and
    the neighbours of one radius do not depend on which other radii were asked). The
    population sample of the ``inf`` radius is drawn after the blocks, without
    replacement: ``min(n_members * n_neighbours, n_population)`` records.

    **Non-membership of the neighbours.** A neighbour equal to a member's features (its
    own, when ``t * s`` vanishes in floating point, or another member's) would be a
    training record labelled non-member: it is refused with an error naming the radius.
    Only the members given are known to be training records; a neighbour may still
    coincide with a training record that was not passed (with continuous features the
    chance is nil).

    **What it measures.** Zhao et al. sample the neighbour from the data distribution
    restricted to the ball; the distribution is unknown here, so neighbours are drawn
    geometrically around the member. Near-zero radii give neighbours the target cannot
    tell from their members (AUC near 0.5: Zhao et al.'s indistinguishable neighbours,
    their Definition 5); large radii may give points off the data manifold, which the
    target can treat worse than real non-members, so the SMI AUC can exceed the ordinary
    MI AUC there. The ``loss`` attack is fitted on the members' outputs (Yeom et al.'s
    threshold: the mean training loss) for hard predictions; the AUC does not depend
    on it.

    References
    ----------
    .. [1] Zhao, B. Z. H., Agrawal, A., Coburn, C., Asghar, H. J., Bhaskar, R., Kaafar,
       M. A., Webb, D., Dickinson, P. "On the (In)Feasibility of Attribute Inference
       Attacks on Machine Learning Models." IEEE EuroS&P 2021 (Experiment 2 and
       Definition 8: r-strong membership inference; Theorems 1 and 2).
    .. [2] Yeom, S., Giacomelli, I., Fredrikson, M., Jha, S. "Privacy Risk in Machine
       Learning: Analyzing the Connection to Overfitting." IEEE CSF 2018 (the loss
       attack and its threshold).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)); y = (X[:, 0] > 0).astype(int)
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[:30], y[:30])
    >>> results = strong_membership_inference(model, X[:30], y[:30], radii=[0.01, 2.0, None],
    ...                                       population=(X[30:], y[30:]))
    >>> [r.parameters["radius"] for r in results]
    [0.01, 2.0, None]
    """
    from privaudit.targets import as_target

    flat, tail, columns = _as_features(X_members, "X_members")
    n, d = flat.shape
    y = _check_labels(y_members, n)
    radius_list = _check_radii(radii)
    k = _check_n_neighbours(n_neighbours)
    metric = _check_choice(metric, "metric", SMI_METRICS)
    radial = _check_choice(radial, "radial", _RADIAL)
    _check_labels_and_dataset(neighbour_labels, dataset)
    rng = check_random_state(random_state, func=_FUNC)
    pop_flat, y_pop = _check_population(population, X_members, y, d)
    if math.inf in radius_list and pop_flat is None:
        raise param_error("radii", _FUNC, "finite unless 'population' is given (inf or None "
                          "is ordinary MI against population records)", list(radii))
    scale, scale_source = _feature_scale(feature_scale, flat, pop_flat, d)
    target = as_target(model)
    attacker = _make_attack(attack, attack_params, target)

    finite = [r for r in radius_list if math.isfinite(r)]
    neighbours, active = _draw_neighbours(rng, flat, scale, k, metric, radial, finite)
    d_eff = active.size
    # Drawn after the neighbours' blocks: the finite radii do not depend on it.
    pop_index = (rng.choice(pop_flat.shape[0], size=min(n * k, pop_flat.shape[0]),
                            replace=False)
                 if pop_flat is not None and math.inf in radius_list else None)

    y_centre = np.repeat(y, k)
    y_near = _neighbour_labels(neighbour_labels, neighbours, finite, y_centre, tail, columns)
    for r in finite:
        _check_not_members(neighbours[r], flat, r)

    batch, batch_labels, rows = _one_batch(flat, y, neighbours, y_near, finite, pop_flat,
                                           y_pop, pop_index)
    outputs = target.query(_restore(batch, tail, columns), batch_labels)

    member_rows = np.arange(n)
    if _calibrates_on_members(attacker):
        # Yeom et al.'s adversary knows the mean training loss: its threshold.
        attacker.fit(outputs=outputs.subset(member_rows))
    common = {
        "n_neighbours": k, "metric": metric, "radial": radial,
        "feature_scale": scale_source, "neighbour_labels": _labels_name(neighbour_labels),
        "random_state": int(random_state) if isinstance(random_state, numbers.Integral) else None,
    }
    results = []
    for r in radius_list:
        idx = np.concatenate([member_rows, rows[r]])
        labels = np.r_[np.ones(n, dtype=np.int8), np.zeros(rows[r].size, dtype=np.int8)]
        if math.isfinite(r):
            ids = np.arange(n + n * k)
            extra = _distance_extra(metric, scale_source, d_eff, d,
                                    _distances(neighbours[r], flat, active, scale, k, metric))
        else:
            ids = np.r_[np.arange(n), n * (1 + k) + pop_index]
            extra = {"non_members": "random population records (ordinary MI)",
                     "n_population": int(pop_flat.shape[0])}  # type: ignore[union-attr]
        result = attacker.run(outputs=outputs.subset(idx), labels=labels, record_ids=ids,
                              dataset=dataset, target_name=target.name)
        label = "inf" if not math.isfinite(r) else f"{r:g}"
        results.append(dataclasses.replace(
            result,
            attack=f"strong-{attacker.name}[r={label}]",
            parameters={"radius": r if math.isfinite(r) else None, "attack": attacker.name,
                        **result.parameters, **common},
            extra={**result.extra, **extra},
        ))
    return results


# ---------------------------------------------------------------------- input checks
def _as_features(X: Any, param: str) -> tuple[NDArray[np.float64], tuple[int, ...], Any]:
    """Rows as float64 ``(n, d)``, the trailing shape and DataFrame columns (or None)."""
    columns = getattr(X, "columns", None)
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError):
        raise param_error(param, _FUNC, "an array or DataFrame of numbers",
                          f"<{type(X).__name__}>", error=TypeError) from None
    if columns is not None and hasattr(X, "dtypes"):
        bad = [c for c, t in zip(columns, X.dtypes, strict=True)
               if not (np.issubdtype(t, np.number) or np.issubdtype(t, np.bool_))]
        if bad:
            raise param_error(param, _FUNC, "numeric features (a neighbour is a numeric "
                              "perturbation)", f"<non-numeric columns {bad[:3]}>",
                              error=TypeError)
    elif arr.dtype.kind not in "biuf":
        raise param_error(param, _FUNC, "numeric features (a neighbour is a numeric "
                          "perturbation)", f"<array of dtype {arr.dtype}>", error=TypeError)
    if arr.ndim < 2:
        raise param_error(param, _FUNC, "a 2-D (or higher) array of records",
                          f"<array of shape {arr.shape}>")
    if arr.shape[0] == 0:
        raise param_error(param, _FUNC, "non-empty", "<no records>")
    flat = arr.reshape(arr.shape[0], -1).astype(np.float64)
    if not np.all(np.isfinite(flat)):
        raise param_error(param, _FUNC, "finite (no NaN or inf)",
                          f"<{int(np.sum(~np.isfinite(flat)))} non-finite values>")
    return flat, tuple(arr.shape[1:]), columns


def _restore(flat: NDArray[np.float64], tail: tuple[int, ...], columns: Any) -> Any:
    """Rows in the members' own form (DataFrame columns, trailing axes) for the query."""
    if columns is not None:
        import pandas as pd

        return pd.DataFrame(flat, columns=columns)
    return flat.reshape((flat.shape[0], *tail))


def _check_radii(radii: Any) -> list[float]:
    if isinstance(radii, (str, bytes)) or not isinstance(radii, Sequence | np.ndarray):
        raise param_error("radii", _FUNC, "a sequence of radii (floats > 0, inf or None)",
                          radii, error=TypeError)
    out: list[float] = []
    for r in radii:
        if r is None:
            value = math.inf
        elif isinstance(r, numbers.Real) and not isinstance(r, bool):
            value = float(r)
        else:
            raise param_error("radii", _FUNC, "floats > 0, inf or None", r, error=TypeError)
        if not value > 0:  # NaN too
            raise param_error("radii", _FUNC, "made of radii > 0 (a neighbour at distance 0 "
                              "is the member itself)", r)
        if value in out:
            raise param_error("radii", _FUNC, "free of repeats (one result per radius)", r)
        out.append(value)
    if not out:
        raise param_error("radii", _FUNC, "non-empty", "<no radius>")
    return out


def _check_n_neighbours(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise param_error("n_neighbours", _FUNC, "an int >= 1", value, error=TypeError)
    if value < 1:
        raise param_error("n_neighbours", _FUNC, "an int >= 1", value)
    return int(value)


def _check_choice(value: Any, param: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise param_error(param, _FUNC, f"one of {list(choices)}", value)
    return value


def _check_population(population: Any, X: Any, y: NDArray[Any], d: int
                      ) -> tuple[NDArray[np.float64] | None, NDArray[Any] | None]:
    if population is None:
        return None, None
    if isinstance(population, tuple | list) and len(population) == 2:
        # The width first: the overlap check below compares rows column by column.
        width = _as_features(population[0], "population")[0].shape[1]
        if width != d:
            raise param_error("population", _FUNC, f"records of {d} features, as X_members",
                              f"<records of {width} features>")
    # A population row equal to a member would be a training record labelled non-member.
    X_pop, y_pop = check_population(population, X, y, _FUNC,
                                    "a population row equal to a member is a training "
                                    "record counted as a non-member")
    return _as_features(X_pop, "population")[0], np.asarray(y_pop)


def _feature_scale(feature_scale: Any, flat: NDArray[np.float64],
                   pop_flat: NDArray[np.float64] | None, d: int
                   ) -> tuple[NDArray[np.float64], str]:
    if feature_scale is None:
        # The population is preferred: the members' spread is the thing being audited.
        source = "population standard deviation" if pop_flat is not None \
            else "members' standard deviation"
        scale = (pop_flat if pop_flat is not None else flat).std(axis=0)
        if not np.any(scale > 0):
            raise param_error("feature_scale", _FUNC, "given when no feature varies in the "
                              "records it defaults to", "<no feature varies>")
        return scale, source
    try:
        scale = np.asarray(feature_scale, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise param_error("feature_scale", _FUNC, "an array of non-negative floats",
                          f"<{type(feature_scale).__name__}>", error=TypeError) from None
    if scale.shape != (d,):
        raise param_error("feature_scale", _FUNC, f"one value per feature ({d})",
                          f"<{scale.size} values>")
    if not np.all(np.isfinite(scale)) or np.any(scale < 0) or not np.any(scale > 0):
        raise param_error("feature_scale", _FUNC, "finite, non-negative, with one value > 0",
                          "<" + np.array2string(scale[:5], precision=3) + "...>")
    return scale, "given"


def _make_attack(name: Any, params: Any, target: Any) -> Any:
    from privaudit.attacks import available_attacks, get_attack, get_tags

    if not isinstance(name, str):
        raise param_error("attack", _FUNC, "an attack name (str)", name, error=TypeError)
    if name not in available_attacks():
        raise param_error("attack", _FUNC, f"one of {list(SMI_ATTACKS)}", name)
    tags = get_tags(name)
    needs = [what for what, flag in (
        ("reference models", tags.needs_reference_models),
        ("white-box access", tags.needs_white_box),
        ("its own queries", tags.queries_target or tags.uses_population_features),
        ("a fit on the audited labels", tags.cross_fitted or tags.fits_on_audited),
    ) if flag]
    if needs:
        # Each radius must be scored by the same fixed adversary, from the one query.
        raise param_error("attack", _FUNC, f"an attack scoring shared outputs, one of "
                          f"{list(SMI_ATTACKS)} ({name!r} needs {', '.join(needs)})", name,
                          error=TypeError)
    if params is not None and not isinstance(params, dict):
        raise param_error("attack_params", _FUNC, "a dict of constructor parameters",
                          f"<{type(params).__name__}>", error=TypeError)
    if target.task not in tags.tasks:
        raise param_error("attack", _FUNC, f"an attack for a {target.task} target "
                          f"({name!r} reads {' or '.join(tags.tasks)})", name)
    if tags.needs_probabilities and not getattr(target, "reveals_probabilities", True):
        # Refused before the query: a label-only target's budget must not be spent.
        raise param_error("attack", _FUNC, "an attack reading predicted labels only (the "
                          f"target is label-only; {name!r} needs probabilities)", name)
    try:
        return get_attack(name, **(params or {}))
    except TypeError as exc:
        raise param_error("attack_params", _FUNC, f"constructor parameters of {name!r}",
                          f"<{sorted(params or {})}: {exc}>", error=TypeError) from None


def _calibrates_on_members(attacker: Any) -> bool:
    from privaudit.attacks import LossAttack

    return isinstance(attacker, LossAttack) and attacker.threshold is None


def _labels_name(neighbour_labels: Any) -> str:
    if isinstance(neighbour_labels, str):
        return neighbour_labels
    return getattr(neighbour_labels, "__name__", type(neighbour_labels).__name__)


# ---------------------------------------------------------------------- geometry
def _directions(g: NDArray[np.float64], metric: str) -> NDArray[np.float64]:
    """Unit vectors (in ``metric``) uniform on its sphere, from standard normals ``g``."""
    from scipy import special

    if metric == "l2":
        v = g
    elif metric == "l1":
        # erfc(|g| / sqrt 2) = 2 Phi(-|g|) is uniform on (0, 1]: -log of it is Exp(1).
        v = np.sign(g) * -np.log(special.erfc(np.abs(g) / math.sqrt(2.0)))
    else:
        v = special.erf(g / math.sqrt(2.0))  # uniform on (-1, 1)
    norm = np.linalg.norm(v, ord=_NORM_ORD[metric], axis=-1, keepdims=True)
    # A zero vector has probability 0; it would give a neighbour equal to its member,
    # which the membership check refuses, rather than NaN features.
    return np.divide(v, norm, out=np.zeros_like(v), where=norm > 0)


def _fractions(h: NDArray[np.float64], radial: str, d_eff: int) -> NDArray[np.float64]:
    """Distance as a fraction of the radius, from standard normals ``h``."""
    from scipy import special

    f = special.ndtr(h)  # uniform on (0, 1)
    return f if radial == "uniform" else f ** (1.0 / d_eff)


def _neighbours(flat: NDArray[np.float64], active: NDArray[np.intp],
                scale: NDArray[np.float64], unit: NDArray[np.float64],
                fraction: NDArray[np.float64], r: float) -> NDArray[np.float64]:
    n, k, _ = unit.shape
    out = np.repeat(flat, k, axis=0)
    step = (r * fraction)[..., None] * unit * scale[active]
    out[:, active] += step.reshape(n * k, -1)
    return out


def _distances(near: NDArray[np.float64], flat: NDArray[np.float64],
               active: NDArray[np.intp], scale: NDArray[np.float64], k: int,
               metric: str) -> NDArray[np.float64]:
    """Realised distance of each neighbour from its member (what the radius bounds)."""
    diff = (near - np.repeat(flat, k, axis=0))[:, active] / scale[active]
    return np.asarray(np.linalg.norm(diff, ord=_NORM_ORD[metric], axis=1))


def _distance_extra(metric: str, source: str, d_eff: int, d: int,
                    dist: NDArray[np.float64]) -> dict[str, Any]:
    return {
        "distance": f"{metric} norm of (x' - x) / s over the features with s > 0, "
                    f"s = {source}",
        "n_features_perturbed": d_eff, "n_features": d,
        "mean_distance": float(dist.mean()), "max_distance": float(dist.max()),
        "min_distance": float(dist.min()),
    }


def _neighbour_labels(how: Any, neighbours: dict[float, NDArray[np.float64]],
                      finite: list[float], y_centre: NDArray[Any], tail: tuple[int, ...],
                      columns: Any) -> dict[float, NDArray[Any]]:
    if how == "member" or not finite:
        return {r: y_centre for r in finite}
    stacked = np.concatenate([neighbours[r] for r in finite])
    given = np.asarray(how(_restore(stacked, tail, columns), np.tile(y_centre, len(finite))))
    if given.shape != (stacked.shape[0],):
        raise param_error("neighbour_labels", _FUNC, f"a callable returning one label per "
                          f"neighbour ({stacked.shape[0]})", f"<array of shape {given.shape}>")
    m = y_centre.shape[0]
    return {r: given[i * m:(i + 1) * m] for i, r in enumerate(finite)}


def _check_not_members(near: NDArray[np.float64], flat: NDArray[np.float64], r: float
                       ) -> None:
    # Features alone: a neighbour with a member's features is not a neighbour, whatever
    # its label. population_overlap matches (features, label): one label for all.
    fake = np.zeros(flat.shape[0], dtype=np.int8)
    n_shared, _, row = population_overlap(flat, fake, near, np.zeros(near.shape[0], np.int8))
    if n_shared:
        raise param_error("radii", _FUNC, "large enough that no neighbour equals a training "
                          "record in floating point (raise the radius or the feature scale)",
                          f"<radius {r:g}: {n_shared} members repeated by a neighbour, "
                          f"e.g. member {row} (from 0)>")
