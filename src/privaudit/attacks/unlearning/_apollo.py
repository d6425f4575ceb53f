"""Apollo: the a-posteriori, label-only membership attack on unlearned models.

Tang, Joshi and Kundu ask whether a record was unlearned (1) or never trained on (0)
seeing only the labels of the unlearned model. Approximate unlearning leaves two kinds of
artefact near a forgotten record ``x``: UNDER-UNLEARNING (points ``x'`` the unlearned model
still labels ``y`` although a model that never saw ``x`` would not) and OVER-UNLEARNING
(points it labels otherwise although such a model would label ``y``). Algorithm 1 searches
for such ``x'`` on shadow models in expanding L2 shells around ``x``; one label query of
the target at ``x'`` then decides.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import param_error
from privaudit.attacks._base import BaseAttack
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.unlearning._sides import covered
from privaudit.exceptions import NotFittedError
from privaudit.results import AttackResult

__all__ = ["ApolloAttack"]

_FUNC = "ApolloAttack"
_KINDS = ("auto", "under", "over", "both")


def _real(value: Any, param: str, *, positive: bool = True) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        raise param_error(param, _FUNC, "a positive real number" if positive
                          else "a non-negative real number", value)
    return float(value)


def _pool_models(pool: Any) -> list[Any]:
    if not hasattr(pool, "in_mask_") or not hasattr(pool, "models_"):
        raise param_error("shadows", f"{_FUNC}.fit", "a fitted privaudit.training."
                          "ReferencePool of torch classifiers", f"<{type(pool).__name__}>",
                          error=TypeError)
    models = list(pool.models_)
    torch = __import__("privaudit.targets", fromlist=["import_torch"]).import_torch()
    if not all(isinstance(m, torch.nn.Module) for m in models):
        raise param_error("shadows", f"{_FUNC}.fit", "a pool of torch classifiers (Apollo "
                          "differentiates the shadows' losses with respect to the input)",
                          f"<models of type {type(models[0]).__name__}>", error=TypeError)
    return models


class ApolloAttack(BaseAttack):
    """Apollo (Tang, Joshi, Kundu): label-only, a-posteriori membership on unlearned models.

    Parameters
    ----------
    online : bool, default=True
        Online: shadows trained on random halves of the audited and population records,
        each then unlearning the audited records it saw with the audited algorithm (a
        pool over :class:`~privaudit.unlearn.UnlearningRecipe`); the loss asks the
        unlearned shadows that had ``x`` to keep labelling ``x'`` as ``y`` (UNDER) or not
        (OVER), and those that never had it the opposite. Offline: shadows that never saw
        an audited record (an offline pool of the plain recipe); the unlearned shadows'
        term is replaced by the distance to the decision boundary (registry name
        ``"apollo-offline"``).
    kind : {"auto", "under", "over", "both"}, default="auto"
        Which artefact to search for. Which one an algorithm leaves depends on it (the
        paper's Figure 5), and the wrong one scores below chance (on TV16 after gradient
        ascent: UNDER AUC 0.67, OVER 0.30). ``"auto"``, online: the kind that finds the
        unlearned records of one shadow playing the target (its labels only, searched on
        the other shadows), as the attacker can check without the target; offline: the
        same on ``fit``'s ``calibration`` model, else ``"under"``. ``"both"``: the higher
        of a record's two ranks among the audited records.
    eps : float or "auto", default="auto"
        Width of the search shells, in the features' units. ``"auto"``: half the median
        distance from an audited record to its nearest other audited record, divided by
        ``n_rounds`` (the whole search stays within half a neighbour distance of ``x``,
        the locality Theorems III.3 and III.4 assume).
    n_rounds : int, default=30
        Search rounds T (the authors' code's default; the paper's table lists 50).
    alpha, beta : float, default=1.0, 4.0
        Weights of the sensitivity and specificity terms (the paper: beta / alpha = 4).
    bounds : (array-like, array-like) or None, default="data"
        Lower and upper bound of every feature; ``"data"``: the range seen in the audited
        records (the code clips images to [0, 1]); None: unbounded.

    Notes
    -----
    Scores. Algorithm 1 stops the search of a record at the first round where the
    never-trained shadows' mean true-class logit ``conf`` falls below ``tau`` (UNDER; above
    it for OVER) and decides by the target's label there; the authors sweep ``tau`` for a
    ROC. A per-record score must be monotone in ``tau``, which that rule is not in
    general; the score here is the rule's early-stopping side: for UNDER, minus the lowest
    ``conf`` among the rounds where ``conf`` made a new minimum (the only rounds any
    ``tau`` stops at) while the target kept answering ``y`` from the first round on; for
    OVER, the highest ``conf`` while it kept answering another label. Thresholding it
    gives exactly the rule's decisions for records whose answers at those rounds start
    with the flagged answer and change at most once (tested against the rule); a record
    flagged only far out (answers changing the other way) gets the lowest score, where
    the rule flags it at low ``tau`` only. With ``trajectories=True`` the rule's own ROC
    over ``tau`` is stored too (``extra["tau_roc"]``). The target is queried on those
    rounds only and until the answer changes: at most ``n_rounds`` label queries per
    record and search, fewer in practice (``result.queries_per_record``).

    Deviations from the authors' code, for correctness: the offline boundary distance is
    averaged over every shadow (the code reads the first shadow's only); the shadows that
    never saw ``x`` are the pool's models, which unlearned the other audited records, so
    that they match the target under "never trained on ``x``".

    References
    ----------
    .. [1] Tang, Y., Joshi, A. and Kundu, S. "Apollo: A Posteriori Label-Only Membership
       Inference Attack Towards Machine Unlearning." 2025 (Algorithm 1; online and
       offline losses).
    .. [2] Choquette-Choo, C. A. et al. "Label-Only Membership Inference Attacks."
       ICML 2021.
    """

    _tags = AttackTags(tasks=("classification",), needs_reference_models=True,
                       queries_target=True)

    def __init__(self, online: bool = True, kind: str = "auto", eps: Any = "auto",
                 n_rounds: int = 30, alpha: float = 1.0, beta: float = 4.0,
                 bounds: Any = "data") -> None:
        self.online = online
        self.kind = kind
        self.eps = eps
        self.n_rounds = n_rounds
        self.alpha = alpha
        self.beta = beta
        self.bounds = bounds

    @property
    def name(self) -> str:  # type: ignore[override]
        """``"apollo"`` or ``"apollo-offline"``."""
        return "apollo" if self.online else "apollo-offline"

    def check_params(self) -> None:
        """Refuse an unknown ``kind``; ``n_rounds``, ``alpha``, ``beta``, ``eps`` out of range."""
        if self.kind not in _KINDS:
            raise param_error("kind", _FUNC, f"one of {list(_KINDS)}", self.kind)
        n = self.n_rounds
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise param_error("n_rounds", _FUNC, "a positive integer", n)
        _real(self.alpha, "alpha", positive=False)
        _real(self.beta, "beta", positive=False)
        if not isinstance(self.eps, str) or self.eps != "auto":
            _real(self.eps, "eps")

    def fit(self, shadows: Any, audited: ArrayLike | None = None,
            calibration: dict[str, Any] | None = None) -> ApolloAttack:
        """Take the shadow models and which audited records each trained on.

        Parameters
        ----------
        shadows : ReferencePool
            A fitted pool of torch classifiers of one architecture (it may differ from
            the target's): online, over an :class:`~privaudit.unlearn.UnlearningRecipe`
            of the audited algorithm; offline, of the plain recipe, in offline mode.
            Online, a record without an unlearned and a never-trained shadow (too few
            shadows for the pool's training fraction) is not searched: :meth:`run`
            leaves it out of the result, with a
            :class:`~privaudit.exceptions.DegenerateInputWarning` (no record searched:
            a result with no information, every score 0, ``extra["degenerate"]``).
        audited : array-like of int, optional
            Rows of the pool's data that are the audited records, in the order ``run``
            gets them (default: the pool's ``audited`` rows).
        calibration : dict, optional
            Offline, for ``kind="auto"``: a model that unlearned some records with the
            audited algorithm (``"model"``, e.g. U-MIA's surrogate, itself the pool's
            first shadow), records it forgot and records it never saw (``"X"``, ``"y"``,
            ``"labels"``: 1 = forgotten) and which shadows trained on each (``"in_mask"``,
            ``(n_shadows, n_records)``, the pool's rows). The kind that finds its
            forgotten records is used on the target (without it, UNDER: an
            over-unlearning algorithm then scores below chance).
        """
        func = f"{_FUNC}.fit"
        self.check_params()
        models = _pool_models(shadows)
        rows = np.asarray(shadows.audited_ if audited is None else audited, dtype=np.int64)
        if rows.size == 0:
            raise param_error("audited", func, "the rows of the audited records (the pool "
                              "was fitted without audited=)", "<no rows>")
        in_mask = np.asarray(shadows.in_mask_)[:, rows]
        if self.online:
            _check_online(shadows, func)
        elif in_mask.any():
            raise param_error("shadows", func, "an offline pool (no shadow trained on an "
                              "audited record) for offline Apollo", "<an online pool>")
        self.models_ = models
        self.in_mask_ = in_mask
        # Online, a record's search weighs its own unlearned and never-trained shadows:
        # one without both is left out of the result (run warns), not searched.
        self.covered_ = covered(in_mask) if self.online else np.ones(rows.size, dtype=bool)
        self.train_fraction_ = getattr(shadows, "train_fraction", None)
        self.calibration_ = _check_calibration(calibration, len(models), func)
        return self

    def _check_fitted(self, func: str) -> None:
        if not hasattr(self, "models_"):
            raise NotFittedError(f"This ApolloAttack is not fitted: call fit(shadows) "
                                 f"before {func}.")

    def run(self, target: Any, X: Any, y: ArrayLike, labels: ArrayLike, *,
            record_ids: Any = None, dataset: str = "", trajectories: bool = False
            ) -> AttackResult:
        """Search around every audited record and ask the target for labels there.

        Parameters
        ----------
        target : Target
            The unlearned model; only its predicted labels are read (a
            :class:`~privaudit.targets.LabelOnlyTarget` is enough); its query counter
            counts what the attack spent.
        X, y : the audited records and their labels, in the order given to ``fit``.
        labels : array-like of {0, 1}
            1 = unlearned record, 0 = never trained on (for the result only).
        trajectories : bool, default=False
            Also query the target at every round of both searches and store the
            UNDER x OVER grids of true and false positive rates over search radii
            (the paper's Figure 5) in ``result.heatmap`` and Algorithm 1's ROC over
            ``tau`` per search in ``extra["tau_roc"]`` (``2 n_rounds`` queries per
            record).

        Returns
        -------
        AttackResult
        """
        from privaudit.attacks.unlearning._apollo_run import apollo_run

        func = f"{_FUNC}.run"
        self._check_fitted(func)
        self.check_params()
        return apollo_run(self, target, X, y, labels, record_ids=record_ids,
                          dataset=dataset, trajectories=trajectories, func=func)

    def min_reference_models(self, mode: str) -> tuple[int, str]:
        """Online: 2 (unlearned and never-trained shadows per record); offline: 1."""
        if self.online:
            return 2, "online Apollo needs unlearned and never-trained shadows per record"
        return 1, "offline Apollo needs shadows that never saw the audited records"


def _check_calibration(value: Any, n_models: int, func: str) -> dict[str, Any] | None:
    if value is None:
        return None
    keys = {"model", "X", "y", "labels", "in_mask"}
    if not isinstance(value, dict) or set(value) != keys:
        raise param_error("calibration", func, f"None or a dict with keys {sorted(keys)}",
                          f"<{type(value).__name__}>", error=TypeError)
    n = len(value["y"])
    mask = np.asarray(value["in_mask"], dtype=bool)
    if len(value["X"]) != n or len(value["labels"]) != n or mask.shape != (n_models, n):
        raise param_error("calibration", func, f"X, y, labels of one length n and an "
                          f"in_mask of shape ({n_models}, n)", "<other shapes>")
    return {**value, "in_mask": mask}


def _check_online(pool: Any, func: str) -> None:
    from privaudit.unlearn import UnlearningRecipe

    if not isinstance(getattr(pool, "recipe", None), UnlearningRecipe):
        raise param_error("shadows", func, "a pool over an UnlearningRecipe for online "
                          "Apollo (shadows that unlearned the records they saw)",
                          f"<a pool over {type(getattr(pool, 'recipe', None)).__name__}>")
