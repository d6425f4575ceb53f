"""Running Apollo: the searches, the label queries, the scores and the Figure 5 grids."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import param_error
from privaudit.results import AttackResult
from privaudit.targets import as_target, label_indices

__all__ = ["apollo_run"]


def _flat(X: Any, func: str) -> tuple[NDArray[np.float32], tuple[int, ...]]:
    arr = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=np.float32)
    if arr.ndim < 2 or arr.shape[0] == 0:
        raise param_error("X", func, "a non-empty array of records (n_records, ...)",
                          f"<array of shape {arr.shape}>")
    return np.ascontiguousarray(arr.reshape(arr.shape[0], -1)), arr.shape[1:]


def _auto_eps(flat: NDArray[np.float32], n_rounds: int) -> float:
    """Half the median nearest-other-record distance, over the rounds (see ``eps``)."""
    from sklearn.neighbors import NearestNeighbors

    if flat.shape[0] < 2:
        raise param_error("eps", "ApolloAttack", "a number (eps='auto' needs at least 2 "
                          "audited records)", "auto")
    dist = NearestNeighbors(n_neighbors=2).fit(flat).kneighbors(flat)[0][:, 1]
    scale = float(np.median(dist)) or float(np.mean(dist))
    if scale <= 0:
        raise param_error("eps", "ApolloAttack", "a number: the audited records are all "
                          "identical, so 'auto' has no scale", "auto")
    return 0.5 * scale / n_rounds


def _bounds(attack: Any, flat: NDArray[np.float32], func: str
            ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    d = flat.shape[1]
    if attack.bounds is None:
        return np.full(d, -np.inf, np.float32), np.full(d, np.inf, np.float32)
    if isinstance(attack.bounds, str) and attack.bounds == "data":
        return flat.min(axis=0), flat.max(axis=0)
    try:
        low, high = (np.broadcast_to(np.asarray(b, dtype=np.float32), (d,)).copy()
                     for b in attack.bounds)
    except (TypeError, ValueError):
        raise param_error("bounds", func, f"'data', None or a pair (low, high) of numbers "
                          f"or arrays of {d} values", f"<{attack.bounds!r}>") from None
    if np.any(low > high):
        raise param_error("bounds", func, "low <= high for every feature", "<low > high>")
    return low, high


class _Asker:
    """Asks the target for labels on the rows that need one, counting what it costs."""

    def __init__(self, target: Any, y: NDArray[Any], tail: tuple[int, ...]) -> None:
        self.target, self.y, self.tail = target, y, tail

    def labels_equal_y(self, x: NDArray[np.float32], rows: NDArray[np.intp]) -> NDArray[Any]:
        if rows.size == 0:
            return np.zeros(0, dtype=bool)
        out = self.target.query(x[rows].reshape(rows.size, *self.tail), self.y[rows])
        return np.asarray(out.predictions) == self.y[rows]


def _one_search(attack: Any, kind: str, stack: Any, flat: NDArray[np.float32],
                y_idx: NDArray[np.int64], masks: tuple[Any, Any], settings: dict[str, Any],
                asker: _Asker, every_round: bool) -> tuple[NDArray[np.float64], Any, int]:
    """Scores of one search kind, every round's (answers, conf) if asked, how many flagged.

    A record the search never flags scores below every value any ``tau`` can take.
    """
    from privaudit.attacks.unlearning._search import SearchSettings, search_rounds

    n = flat.shape[0]
    s = SearchSettings(kind=kind, offline=not attack.online, **settings)
    sign = -1.0 if kind == "under" else 1.0  # UNDER: conf falling is evidence
    best = np.full(n, -np.inf)
    lowest = np.inf
    scores = np.full(n, np.nan)
    alive = np.ones(n, dtype=bool)
    answers = np.zeros((n, s.n_rounds), dtype=bool) if every_round else None
    confs = np.zeros((n, s.n_rounds)) if every_round else None
    for t, x, conf in search_rounds(stack, flat, y_idx, masks[0], masks[1], s):
        value = sign * conf
        lowest = min(lowest, float(value.min()))
        candidate = value > best  # a round some tau stops at
        best = np.maximum(best, value)
        ask = np.flatnonzero(candidate & alive)
        if every_round:
            same = asker.labels_equal_y(x, np.arange(n))
            answers[:, t] = same
            confs[:, t] = conf
            same = same[ask]
        else:
            same = asker.labels_equal_y(x, ask)
        hit = same if kind == "under" else ~same
        scores[ask[hit]] = value[ask[hit]]
        alive[ask[~hit]] = False
    # Never-flagged records score below every value any tau can take.
    never = np.isnan(scores)
    scores[never] = lowest - 1.0 if np.isfinite(lowest) else 0.0
    return scores, (answers, confs) if every_round else None, int(n - never.sum())


def tau_sweep(kind: str, conf: NDArray[np.float64], same: NDArray[np.bool_],
              labels: NDArray[np.int8]) -> dict[str, list[float]]:
    """Algorithm 1's own ROC: stop at the first round past ``tau``, read that answer.

    For every ``tau`` among the held-out records' ``conf`` values (as the authors' code
    sweeps them), a record stops at its first round with ``conf < tau`` (UNDER; ``>`` for
    OVER), or at the last round, and is flagged if the target's label there is ``y``
    (UNDER) or not (OVER).
    """
    n, n_rounds = conf.shape
    taus = np.unique(conf[labels == 0]) if np.any(labels == 0) else np.unique(conf)
    tpr, fpr = [], []
    for tau in taus:
        past = conf < tau if kind == "under" else conf > tau
        stop = np.where(past.any(axis=1), past.argmax(axis=1), n_rounds - 1)
        flagged = same[np.arange(n), stop]
        flagged = flagged if kind == "under" else ~flagged
        tpr.append(float(flagged[labels == 1].mean()) if np.any(labels == 1) else np.nan)
        fpr.append(float(flagged[labels == 0].mean()) if np.any(labels == 0) else np.nan)
    return {"tau": taus.round(6).tolist(), "tpr": tpr, "fpr": fpr}


def _ranks(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Empirical CDF among the audited records."""
    from scipy.stats import rankdata

    return rankdata(scores, method="max") / scores.size


def _heatmap(answers: dict[str, Any], labels: NDArray[np.int8], eps: float,
             n_rounds: int) -> dict[str, Any]:
    """TPR and FPR of "UNDER at radius r_u or OVER at radius r_o" (the paper's Figure 5)."""
    under = answers["under"]  # target answered y
    over = ~answers["over"]  # target answered another label
    pos, neg = labels == 1, labels == 0
    flagged = under[:, :, None] | over[:, None, :]  # (n, T_under, T_over)
    return {
        "radii": [float((t + 1) * eps) for t in range(n_rounds)],
        "tpr": flagged[pos].mean(axis=0).round(6).tolist() if pos.any() else None,
        "fpr": flagged[neg].mean(axis=0).round(6).tolist() if neg.any() else None,
    }


def _calibration_case(attack: Any, flat: NDArray[np.float32], y: NDArray[Any],
                      in_mask: NDArray[np.bool_]
                      ) -> tuple[Any, NDArray[Any], NDArray[Any], NDArray[np.bool_],
                                 NDArray[np.bool_]] | None:
    """(pseudo-target, records, labels, which other shadows saw each, truth) or None.

    Online: the first shadow plays the target on the searched records (it unlearned those
    it saw; ``in_mask`` is theirs). Offline: the ``calibration`` given to ``fit`` (a
    surrogate that unlearned some population records, e.g. U-MIA's, and its forgotten vs
    unseen records).
    """
    if attack.online:
        truth = in_mask[0]
        if len(attack.models_) < 3 or truth.all() or not truth.any():
            return None
        return attack.models_[0], flat, y, in_mask[1:], truth
    cal = getattr(attack, "calibration_", None)
    if cal is None:
        return None
    X_cal = np.ascontiguousarray(np.asarray(cal["X"], dtype=np.float32).reshape(
        len(cal["y"]), -1))
    return (cal["model"], X_cal, np.asarray(cal["y"]), np.asarray(cal["in_mask"])[1:],
            np.asarray(cal["labels"]).astype(bool))


def _calibrated_kind(attack: Any, flat: NDArray[np.float32], y: NDArray[Any],
                     in_mask: NDArray[np.bool_], classes: Any, tail: tuple[int, ...],
                     settings: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """The search kind that finds the unlearned records of a model playing the target.

    Shadows that know which records they unlearned answer as the target would (labels
    only) while the other shadows search; the kind with the higher AUC there is used on
    the target. Nothing of the target is read. Without such a model (offline, no
    ``calibration``): UNDER.
    """
    from sklearn.metrics import roc_auc_score

    from privaudit.attacks.unlearning._search import ShadowStack

    case = _calibration_case(attack, flat, y, in_mask)
    if case is None or not case[4].any() or case[4].all():
        return "under", {}
    pseudo, X_cal, y_cal, seen, truth = case
    y_idx = label_indices(y_cal, classes, func="ApolloAttack.fit",
                          param="calibration").astype(np.int64)
    stack = ShadowStack(attack.models_[1:])
    asker = _Asker(as_target(pseudo), y_cal, tail)
    masks = (seen, ~seen) if attack.online else (np.zeros_like(seen), ~seen)
    aucs = {}
    for kind in ("under", "over"):
        scores = _one_search(attack, kind, stack, X_cal, y_idx, masks, settings, asker,
                             False)[0]
        aucs[kind] = float(roc_auc_score(truth, scores))
    return max(aucs, key=lambda k: aucs[k]), aucs


def apollo_run(attack: Any, target: Any, X: Any, y: Any, labels: Any, *, record_ids: Any,
               dataset: str, trajectories: bool, func: str) -> AttackResult:
    """The body of :meth:`ApolloAttack.run`.

    Online, the records without an unlearned and a never-trained shadow (``covered_``)
    are neither searched nor asked about: they are left out of the result, with a
    warning (none searched: a result with no information).
    """
    from privaudit.attacks.unlearning._sides import warn_left_out

    resolved = as_target(target)
    if getattr(resolved, "task", None) != "classification":
        raise param_error("target", func, "a classifier", f"<task {resolved.task!r}>")
    flat, tail = _flat(X, func)
    y_arr = np.asarray(y)
    labels_arr = np.asarray(labels).astype(np.int8)
    n = flat.shape[0]
    if y_arr.shape != (n,) or labels_arr.shape != (n,):
        raise param_error("y" if y_arr.shape != (n,) else "labels", func,
                          f"one value per record ({n})", "<another length>")
    if n != attack.in_mask_.shape[1]:
        raise param_error("X", func, f"the {attack.in_mask_.shape[1]} audited records "
                          "given to fit", f"<{n} records>")
    # The search's scale and bounds come from every audited record, searched or not.
    eps = (_auto_eps(flat, int(attack.n_rounds)) if isinstance(attack.eps, str)
           else float(attack.eps))
    low, high = _bounds(attack, flat, func)
    settings = dict(eps=eps, n_rounds=int(attack.n_rounds), alpha=float(attack.alpha),
                    beta=float(attack.beta), low=low, high=high)
    keep = getattr(attack, "covered_", np.ones(n, dtype=bool))
    warn_left_out(func, keep, 1, getattr(attack, "train_fraction_", None))
    if not keep.any():
        return _no_information(attack, resolved, labels_arr, record_ids, dataset, eps)
    ids: Any = record_ids
    extra: dict[str, Any] = {}
    if not keep.all():
        ids = np.arange(n) if record_ids is None else np.asarray(record_ids)
        if ids.shape != (n,):
            raise param_error("record_ids", func, f"one id per record ({n})",
                              f"<shape {ids.shape}>")
        flat, y_arr, labels_arr, ids = flat[keep], y_arr[keep], labels_arr[keep], ids[keep]
        extra["n_left_out"] = int(n - keep.sum())
    return _search_and_score(attack, resolved, flat, tail, y_arr, labels_arr,
                             attack.in_mask_[:, keep], settings, trajectories, func,
                             record_ids=ids, dataset=dataset, extra=extra)


def _no_information(attack: Any, resolved: Any, labels: NDArray[np.int8], record_ids: Any,
                    dataset: str, eps: float) -> AttackResult:
    """No record has shadows on both sides: every score 0 (AUC 0.5), nothing asked."""
    return AttackResult(
        labels=labels, scores=np.zeros(labels.size), record_ids=record_ids,
        attack=attack.name, target=resolved.name, dataset=dataset,
        parameters=_parameters(attack, eps), queries_per_record=0.0,
        extra={"degenerate": "no record has an unlearned and a never-trained shadow (too "
                             "few shadows): no information, every score 0"})


def _parameters(attack: Any, eps: float) -> dict[str, Any]:
    return {"online": bool(attack.online), "kind": attack.kind, "eps": eps,
            "n_rounds": int(attack.n_rounds), "alpha": float(attack.alpha),
            "beta": float(attack.beta), "n_shadows": len(attack.models_)}


def _search_and_score(attack: Any, resolved: Any, flat: NDArray[np.float32],
                      tail: tuple[int, ...], y_arr: NDArray[Any], labels_arr: NDArray[np.int8],
                      in_mask: NDArray[np.bool_], settings: dict[str, Any],
                      trajectories: bool, func: str, *,
                      record_ids: Any, dataset: str, extra: dict[str, Any]) -> AttackResult:
    """Apollo's searches on the records given (those with both sides), and their result."""
    from privaudit.attacks.unlearning._search import ShadowStack

    n = flat.shape[0]
    classes = getattr(attack.models_[0], "classes_", resolved.classes_)
    y_idx = label_indices(y_arr, classes, func=func).astype(np.int64)
    eps = settings["eps"]
    masks = (in_mask, ~in_mask)
    stack = ShadowStack(attack.models_)
    asker = _Asker(resolved, y_arr, tail)
    start = int(getattr(resolved, "n_queries", 0))
    kind, calibration = attack.kind, {}
    if kind == "auto":
        kind, calibration = _calibrated_kind(attack, flat, y_arr, in_mask, classes, tail,
                                             settings)
    every_round = bool(trajectories)
    kinds = ("under", "over") if kind == "both" or every_round else (kind,)
    found = {k: _one_search(attack, k, stack, flat, y_idx, masks, settings, asker,
                            every_round) for k in kinds}
    if kind == "both":
        scores = np.maximum(_ranks(found["under"][0]), _ranks(found["over"][0]))
    else:
        scores = found[kind][0]
    extra = {
        **extra,
        "calibration_auc": calibration,
        "eps": eps,
        "flagged": {k: v[2] for k, v in found.items()},
    }
    heatmap = None
    if every_round:
        heatmap = _heatmap({k: v[1][0] for k, v in found.items()}, labels_arr, eps,
                           int(attack.n_rounds))
        extra["tau_roc"] = {k: tau_sweep(k, v[1][1], v[1][0], labels_arr)
                            for k, v in found.items()}
    return AttackResult(
        labels=labels_arr, scores=scores, record_ids=record_ids, attack=attack.name,
        target=resolved.name, dataset=dataset, parameters=_parameters(attack, eps),
        extra=extra, search_kind=kind, heatmap=heatmap,
        queries_per_record=(int(getattr(resolved, "n_queries", 0)) - start) / n,
    )
