"""LiRA and RMIA as estimators over a shared :class:`ReferenceOutputs`.

The numerical cores live in :mod:`._lira` and :mod:`._rmia` (pure numpy/scipy, tested
against slow reference implementations); this module only wires them to the target's
outputs and to the outputs of the reference models, collected once for all attacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_fraction, check_int, param_error
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._augment import query_augmented
from privaudit.attacks.membership._base import ReferenceAttack, _check_bool
from privaudit.attacks.membership._lira import (
    _AUTO_PER_RECORD_FROM,
    _LOGIT_EPS,
    _check_fix_variance,
    _check_min_models,
    lira_scores,
    saturation_bound,
)
from privaudit.attacks.membership._reference import ReferenceOutputs
from privaudit.attacks.membership._rmia import (
    _check_gamma,
    rmia_scores,
    tune_rmia_offline_a,
)
from privaudit.results import AttackResult
from privaudit.signals import logit_confidence
from privaudit.targets import ModelOutputs

__all__ = ["LiRAAttack", "RMIAAttack", "lira_offline"]


def _check_reference(reference: Any, func: str) -> ReferenceOutputs:
    if not isinstance(reference, ReferenceOutputs):
        raise param_error(
            "reference", func,
            "a ReferenceOutputs (see privaudit.attacks.membership.collect_reference_outputs)",
            f"<{type(reference).__name__}>", error=TypeError,
        )
    return reference


class _LiraName:
    """``LiRAAttack.name``: the registry name of an instance, ``"lira"`` on the class."""

    def __get__(self, obj: Any, owner: type | None = None) -> str:
        if obj is None:
            return "lira"
        return "lira-online" if obj.online else "lira-offline"


class _ReferenceAttack(ReferenceAttack):
    """Shared plumbing: fitted on reference outputs of the SAME audited records it scores."""

    def _check_plan(self, ref: ReferenceOutputs, func: str) -> None:
        """Refuse, with what to change, reference outputs this attack cannot use."""
        from privaudit.attacks._plan import check_reference_models, check_task

        first = ref.audited[0]
        check_task(self.name, self, first.task, func=func, param="reference")
        if first.probabilities is None:
            raise param_error("reference", func,
                              "outputs of reference classifiers revealing probabilities",
                              "<label-only outputs>")
        check_reference_models(self.name, self, ref.n_models, ref.mode, func=func,
                               param="reference")

    def _check_aligned(self, outputs: ModelOutputs, func: str) -> None:
        n = self.reference_.n_audited  # type: ignore[attr-defined]
        if len(outputs) != n:
            raise param_error(
                "X", func,
                f"the {n} audited records the reference outputs were collected on",
                f"<{len(outputs)} records>",
            )

    def _extra(self, outputs, labels, scores, predictions) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        ref: ReferenceOutputs = self.reference_  # type: ignore[attr-defined]
        return {"n_reference_models": ref.n_models, "reference_mode": ref.mode}


class LiRAAttack(_ReferenceAttack):
    """Likelihood-ratio attack (LiRA) of Carlini et al., online or offline.

    For each audited record, the logit-scaled true-class confidence
    ``phi = log(p_y / (1 - p_y))`` on reference models trained with (IN) and without (OUT)
    the record is fitted by Gaussians; the target's ``phi`` is scored by the likelihood
    ratio (online) or by a one-sided test against the OUT Gaussian (offline).

    Parameters
    ----------
    online : bool, default=True
        Online (IN and OUT models; registry name ``"lira-online"``) or offline (OUT models
        only; ``"lira-offline"``).
    fix_variance : bool or "auto", default="auto"
        One pooled variance for all records instead of one per record. Carlini et al.
        (Section VI.A, Figure 9) find the global variance better below about 64 reference
        models (under 32 per side, per-record variances are too noisy) and per-record
        variances better above; ``"auto"`` follows that rule, and below 64 models keeps
        the records a pooled Gaussian cannot describe (an outlying variance, typically a
        statistic saturated by a probability of exactly 0 or 1 on some models, as trees
        give) on their own variance and out of the pooled one (see
        :func:`~privaudit.attacks.membership.fit_lira_gaussians`). ``True`` pools over
        every record, as the paper's code does (a warning says when outliers dominate it).
    min_models : int, default=2
        Records with fewer models on a side use the pooled variance there.
    eps : float, default=np.finfo(np.float64).tiny
        Clipping of the probabilities in the statistic ``log(max(p_y, eps)) -
        log(max(1 - p_y, eps))``: a probability of exactly 0 or 1 gives +-708.4 with the
        default (:func:`privaudit.signals.logit_confidence`), +-103.6 with the ``1e-45``
        of Carlini et al.'s code. The default keeps sharp networks' confidences apart
        (``benchmarks/bench_lira_saturated.py``: with ``1e-45``, online LiRA on an MLP
        whose confidences reach 1 - 1e-300 finds a third of the members at 1% FPR it
        finds with the default, and nothing changes on a forest).

    Notes
    -----
    Augmented queries (Carlini et al., Section VI.B): when the reference outputs were
    collected with ``augmentations`` (see
    :func:`~privaudit.attacks.membership.collect_reference_outputs`), one Gaussian pair is
    fitted per query (the record itself first, then each augmentation) and the scores
    combine them (see :func:`~privaudit.attacks.membership.lira_scores`). ``score`` and
    ``run`` then need the target with ``X, y``, to query it on the same augmented records
    (``outputs=`` may still carry its answers on the records themselves).

    References
    ----------
    .. [1] Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F. (2022).
       Membership Inference Attacks From First Principles. IEEE S&P 2022.
    """

    _tags: ClassVar[AttackTags] = replace(ReferenceAttack._tags, augmented_queries=True)
    #: Below this many reference models, ``fix_variance="auto"`` pools the variance.
    AUTO_FIXED_VARIANCE_BELOW: ClassVar[int] = _AUTO_PER_RECORD_FROM

    def __init__(
        self,
        online: bool = True,
        fix_variance: bool | str = "auto",
        min_models: int = 2,
        eps: float = _LOGIT_EPS,
    ):
        self.online = online
        self.fix_variance = fix_variance
        self.min_models = min_models
        self.eps = eps

    #: Registry name: ``"lira-online"`` or ``"lira-offline"`` (``"lira"`` on the class).
    name = _LiraName()

    def __privaudit_tags__(self) -> AttackTags:
        """LiRA's tags: online LiRA also needs an online pool."""
        return replace(self._tags, needs_online_pool=bool(self.online))

    def check_params(self) -> None:
        """Refuse a parameter out of range, before any reference output is read.

        ``online`` a bool, ``fix_variance`` True, False or "auto", ``min_models`` an
        integer >= 2, ``eps`` in (0, 1).
        """
        who = type(self).__name__
        _check_bool(self.online, "online", who)
        _check_fix_variance(self.fix_variance, who)
        _check_min_models(self.min_models, who)
        check_fraction(self.eps, param="eps", func=who)

    def fit(self, reference: ReferenceOutputs,
            population_outputs: ModelOutputs | None = None) -> LiRAAttack:
        """Read the reference models' statistics on the audited records; returns ``self``.

        Parameters
        ----------
        reference : ReferenceOutputs
            Outputs of the reference models on the audited records. Online LiRA needs an
            online pool (records IN some models); offline LiRA reads the OUT entries only,
            so either pool works.
        population_outputs : ModelOutputs, optional
            Ignored: accepted so that every reference attack is fitted the same way.
        """
        func = f"{type(self).__name__}.fit"
        self.check_params()
        ref = _check_reference(reference, func)
        self._check_plan(ref, func)
        if self.online and ref.mode != "online":
            raise param_error(
                "reference", func,
                "collected in online mode for online LiRA (or use online=False)",
                f"<{ref.mode} reference outputs>",
            )
        fixed = self.fix_variance
        self.fix_variance_ = fixed if isinstance(fixed, str) else bool(fixed)
        self.saturation_ = saturation_bound(self.eps)
        self.reference_ = ref
        self.augmentations_ = ref.augmentations
        stats = [np.stack([self._statistic(o) for o in ref.audited])]
        for k in range(ref.n_augmentations):
            assert ref.audited_augmented is not None
            stats.append(np.stack([self._statistic(p[k]) for p in ref.audited_augmented]))
        self.reference_stats_ = stats[0] if ref.augmentations is None else np.stack(
            stats, axis=-1)
        self.in_mask_ = ref.in_mask("audited")
        return self

    def min_reference_models(self, mode: str) -> tuple[int, str]:
        """Fewest reference models the attack needs with a pool of ``mode``, and why."""
        if self.online:
            return 2, "online LiRA needs IN and OUT reference models for every record"
        if mode == "online":
            return 2, ("offline LiRA needs an OUT reference model for every record, and an "
                       "online pool trains one model in two on it")
        return 1, "offline LiRA fits each record's OUT Gaussian"

    def _statistic(self, outputs: ModelOutputs) -> NDArray[np.float64]:
        """The logit-scaled true-class confidence, probabilities clipped at ``eps``."""
        return logit_confidence(outputs.probabilities, outputs.y_index, eps=self.eps)

    def _augmented_statistic(
        self, target: Any, X: Any, y: ArrayLike | None, outputs: ModelOutputs | None,
        augmented_outputs: Sequence[ModelOutputs] | None, func: str,
    ) -> tuple[ModelOutputs, Any, NDArray[np.float64]]:
        """The target's statistic on the records and their augmentations, (n, 1 + A)."""
        n_aug = len(self.augmentations_)
        if augmented_outputs is None and (target is None or X is None or y is None):
            raise param_error(
                "target", func,
                "given with X and y: the reference outputs are augmented, so the target "
                "is queried on the augmented records too ('outputs' alone is not enough; "
                "or give 'augmented_outputs')",
                "<outputs only>" if outputs is not None else None, error=TypeError,
            )
        out, resolved = self._outputs(target, X, y, outputs, func)
        self._check_aligned(out, func)
        if augmented_outputs is None:
            augmented = query_augmented(resolved, X, y, self.augmentations_, func=func)
        else:
            augmented = tuple(augmented_outputs)
            if len(augmented) != n_aug or any(
                not isinstance(o, ModelOutputs) or len(o) != len(out) for o in augmented
            ):
                raise param_error(
                    "augmented_outputs", func,
                    f"{n_aug} ModelOutputs (one per augmentation) on the {len(out)} records",
                    f"<{len(augmented)} items>",
                )
        for o in augmented:
            if o.probabilities is None:
                raise param_error("target", func, "a target revealing class probabilities",
                                  "<label-only outputs>")
        stat = np.stack([self._statistic(out)] + [self._statistic(o) for o in augmented],
                        axis=-1)
        return out, resolved, stat

    def score(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
        augmented_outputs: Sequence[ModelOutputs] | None = None,
    ) -> NDArray[np.float64]:
        """One membership score per record, higher = more likely member.

        See :meth:`MembershipAttack.score`. With augmented reference outputs the target,
        ``X`` and ``y`` are required (``outputs`` optional, for the records themselves),
        unless ``augmented_outputs`` (the target's outputs on each augmented copy, as
        :func:`~privaudit.attacks.membership.query_augmented` returns) are given with
        ``outputs``.
        """
        func = f"{type(self).__name__}.score"
        self.check_params()
        self._check_fitted(func)
        if getattr(self, "augmentations_", None) is None:
            return super().score(target, X, y, outputs=outputs)
        _, _, stat = self._augmented_statistic(target, X, y, outputs, augmented_outputs,
                                               func)
        return self._to_score(stat)

    def run(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
        record_ids: ArrayLike | None = None,
        dataset: str = "",
        target_name: str | None = None,
        augmented_outputs: Sequence[ModelOutputs] | None = None,
    ) -> AttackResult:
        """Score the audited records and package the result.

        See :meth:`MembershipAttack.run` and :meth:`score` (augmented queries);
        ``raw_statistic`` is then the statistic of the records themselves.
        """
        func = f"{type(self).__name__}.run"
        if getattr(self, "augmentations_", None) is None:
            return super().run(target, X, y, labels, outputs=outputs, record_ids=record_ids,
                               dataset=dataset, target_name=target_name)
        self.check_params()
        self._require_labels(labels, func)
        self._check_fitted(func)
        out, resolved, stat = self._augmented_statistic(target, X, y, outputs,
                                                        augmented_outputs, func)
        lab = self._check_labels(labels, len(out), func)
        scores = self._to_score(stat)
        name = target_name if target_name is not None else (resolved.name if resolved else "")
        return self._package(
            labels=lab, scores=scores, target_name=name, record_ids=record_ids,
            dataset=dataset, raw=stat[:, 0], raw_name="logit_confidence", predictions=None,
            extra=self._extra(out, lab, scores, None),
        )

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        self._check_aligned(outputs, f"{type(self).__name__}.score")
        return self._statistic(outputs), "logit_confidence"

    def _extra(self, outputs, labels, scores, predictions) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        extra = super()._extra(outputs, labels, scores, predictions)
        fixed = self.fix_variance_
        if fixed == "auto":
            fixed = self.reference_.n_models < _AUTO_PER_RECORD_FROM
        extra["fixed_variance"] = bool(fixed)
        extra["variance_rule"] = str(self.fix_variance_)
        extra["n_saturated_records"] = int(np.sum(np.any(
            np.abs(self.reference_stats_) >= self.saturation_ * (1 - 1e-9),
            axis=tuple(a for a in range(self.reference_stats_.ndim) if a != 1))))
        augmentations = getattr(self, "augmentations_", None)
        if augmentations is not None:
            extra["n_augmentations"] = len(augmentations)
            extra["augmentations"] = [repr(a) for a in augmentations]
        return extra

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        return lira_scores(
            raw, self.reference_stats_, self.in_mask_, online=self.online,
            fix_variance=self.fix_variance_, min_models=self.min_models,
            saturation=self.saturation_,
        )


def lira_offline(**params: Any) -> LiRAAttack:
    """Offline LiRA (registry name ``"lira-offline"``): ``LiRAAttack(online=False, ...)``."""
    if "online" in params:
        raise param_error("online", "lira_offline", "left out (offline LiRA is offline)",
                          params["online"], error=TypeError)
    return LiRAAttack(online=False, **params)


class RMIAAttack(_ReferenceAttack):
    """Robust membership inference attack (RMIA) of Zarifzadeh, Liu and Shokri.

    ``score(x)`` is the fraction of population samples ``z`` that ``x`` dominates in
    likelihood ratio ``(Pr(x|theta)/Pr(x)) / (Pr(z|theta)/Pr(z)) >= gamma``, with
    ``Pr(.)`` the reference models' average probability of the true label.

    Parameters
    ----------
    gamma : float, default=1.0
        Threshold on the pairwise likelihood ratio.
    offline : bool, default=True
        Offline (OUT models only, with the paper's linear approximation of the missing IN
        models through ``a``) or online (all reference models).
    offline_a : float or "tune", default="tune"
        The ``a`` of the offline approximation; ``"tune"`` picks it on the reference
        models themselves (one playing the target), as the paper does.
    n_pseudo_targets : int, default=1
        Reference models that play the target in turn when tuning ``a``.
    break_ties : bool, default=True
        Order records with the same fraction by their own likelihood ratio
        ``Pr(x|theta)/Pr(x)``, of which the fraction is a non-decreasing function: a
        refinement of the paper's ranking (never a reversal) that matters at low FPR
        when the population is small. ``False`` gives the paper's score exactly.

    References
    ----------
    .. [1] Zarifzadeh, S., Liu, P. and Shokri, R. (2024). Low-Cost High-Power Membership
       Inference Attacks. ICML 2024.
    """

    name: ClassVar[str] = "rmia"
    _tags: ClassVar[AttackTags] = replace(ReferenceAttack._tags, needs_population=True)

    def __init__(
        self,
        gamma: float = 1.0,
        offline: bool = True,
        offline_a: float | str = "tune",
        n_pseudo_targets: int = 1,
        break_ties: bool = True,
    ):
        self.break_ties = break_ties
        self.gamma = gamma
        self.offline = offline
        self.offline_a = offline_a
        self.n_pseudo_targets = n_pseudo_targets

    def check_params(self) -> None:
        """Refuse a parameter out of range, before any reference model trains.

        ``gamma`` positive, ``offline_a`` in [0, 1] or "tune", ``n_pseudo_targets`` an
        integer >= 1 (at most the reference models: checked when fitting), ``offline``
        and ``break_ties`` bools.
        """
        who = type(self).__name__
        _check_gamma(self.gamma, who)
        _check_bool(self.offline, "offline", who)
        _check_bool(self.break_ties, "break_ties", who)
        a = self.offline_a
        if isinstance(a, str) or a is None:
            if a != "tune":
                raise param_error("offline_a", who, "a real number in [0, 1] or 'tune'", a)
        else:
            check_fraction(a, param="offline_a", func=who, low_inclusive=True,
                           high_inclusive=True)
        check_int(self.n_pseudo_targets, param="n_pseudo_targets", func=who, low=1)

    def fit(
        self, reference: ReferenceOutputs, population_outputs: ModelOutputs | None = None
    ) -> RMIAAttack:
        """Calibrate on the reference models and on the target's answers on the population.

        Parameters
        ----------
        reference : ReferenceOutputs
            Reference outputs on the audited records AND on the population records.
        population_outputs : ModelOutputs
            The TARGET's outputs on the same population records (``Pr(z | theta)``); the
            population must be disjoint from the audited records.
        """
        func = f"{type(self).__name__}.fit"
        self.check_params()
        ref = _check_reference(reference, func)
        self._check_plan(ref, func)
        if ref.population is None:
            raise param_error("reference", func,
                              "collected with population outputs (query_population=True)",
                              "<reference outputs without population>")
        if population_outputs is None:
            raise param_error("population_outputs", func,
                              "given: the target's outputs on the population records", None,
                              error=TypeError)
        if not isinstance(population_outputs, ModelOutputs):
            raise param_error("population_outputs", func, "a ModelOutputs",
                              f"<{type(population_outputs).__name__}>", error=TypeError)
        if len(population_outputs) != len(ref.population[0]):
            raise param_error("population_outputs", func,
                              f"outputs on the {len(ref.population[0])} population records",
                              f"<{len(population_outputs)} records>")
        if population_outputs.probabilities is None:
            raise param_error("population_outputs", func, "outputs with class probabilities",
                              "<label-only outputs>")
        if not self.offline and ref.mode != "online":
            raise param_error(
                "reference", func,
                "collected in online mode for online RMIA (or use offline=True)",
                f"<{ref.mode} reference outputs>",
            )
        self.reference_ = ref
        self.reference_prob_x_ = ref.signal("true_class_confidence", "audited")
        self.reference_prob_z_ = ref.signal("true_class_confidence", "population")
        self.target_prob_z_ = population_outputs.signal("true_class_confidence")
        if not self.offline:
            self.a_ = None
        elif isinstance(self.offline_a, str):  # "tune", by check_params
            tuning = self._tune(ref, func)
            self.a_ = float(tuning.a)
            self.tuning_ = tuning
        else:
            self.a_ = float(self.offline_a)
        return self

    def min_reference_models(self, mode: str) -> tuple[int, str]:
        """Fewest reference models the attack needs with a pool of ``mode``, and why."""
        if self.offline and isinstance(self.offline_a, str):
            return 2, "one reference model plays the target to tune offline_a"
        if self.offline and mode == "online":
            return 2, ("offline RMIA needs an OUT reference model for every record, and an "
                       "online pool trains one model in two on it")
        return 1, "RMIA averages the reference models' probabilities"

    def _tune(self, ref: ReferenceOutputs, func: str) -> Any:
        # Tune on the population records: their membership in each model is known and
        # mixed in both pool modes (audited records of an offline pool are all OUT).
        mask = ref.in_mask("population")
        try:
            return tune_rmia_offline_a(
                self.reference_prob_z_, mask, self.reference_prob_z_, in_mask_z=mask,
                n_pseudo_targets=self.n_pseudo_targets, gamma=self.gamma,
            )
        except ValueError as exc:
            if "'in_mask' parameter" not in str(exc):
                raise
            raise param_error(
                "reference", func,
                "a pool where a reference model playing the target has population members "
                "and non-members with OUT models left (raise n_reference_models, "
                "reference.n_models in a config, to 4 or more, or give offline_a a number "
                "in [0, 1])", f"<{ref.n_models} reference models>",
            ) from exc

    def _raw_statistic(self, outputs: ModelOutputs) -> tuple[NDArray[np.float64], str]:
        self._check_aligned(outputs, f"{type(self).__name__}.score")
        return outputs.signal("true_class_confidence"), "true_class_confidence"

    def _to_score(self, raw: NDArray[np.float64]) -> NDArray[np.float64]:
        ref: ReferenceOutputs = self.reference_
        fraction = rmia_scores(
            raw, self.reference_prob_x_, self.target_prob_z_, self.reference_prob_z_,
            offline_a=self.a_, in_mask_x=ref.in_mask("audited"),
            in_mask_z=ref.in_mask("population"), gamma=self.gamma,
        )
        if not self.break_ties:
            return fraction
        # The fraction moves in steps of 1/n_z: with a few hundred population records many
        # members and non-members tie at 1.0, and ties decide TPR at low FPR. The fraction
        # is a non-decreasing function of x's own ratio r_x = Pr(x|theta)/Pr(x), so ordering
        # the ties by r_x refines the paper's ranking without ever reversing it; the
        # refinement stays below half a step, so the score is within 1/(2 n_z) of it.
        log_ratio = np.log(np.maximum(raw, 1e-300)) - np.log(np.maximum(self._pr_x(), 1e-300))
        squashed = 0.5 * (1.0 + np.tanh(log_ratio / 4.0))  # in (0, 1), monotone
        return fraction + squashed / (2.0 * len(self.target_prob_z_))

    def _pr_x(self) -> NDArray[np.float64]:
        """``Pr(x)`` of the audited records, as :func:`rmia_scores` computes it."""
        from privaudit.attacks.membership._rmia import _marginal

        return _marginal(self.reference_prob_x_, self.reference_.in_mask("audited"), self.a_,
                         "in_mask_x", "RMIAAttack.score")

    def _extra(self, outputs, labels, scores, predictions) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        extra = super()._extra(outputs, labels, scores, predictions)
        extra["offline_a"] = self.a_
        extra["n_population"] = len(self.target_prob_z_)
        return extra
