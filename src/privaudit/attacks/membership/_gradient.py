"""White-box membership inference from per-record gradient norms (torch targets)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_int, param_error
from privaudit.attacks._tags import AttackTags
from privaudit.attacks.membership._base import ParameterFreeAttack
from privaudit.results import AttackResult
from privaudit.targets import ModelOutputs

__all__ = ["GradientNormAttack", "WhiteBoxFeatures"]


class WhiteBoxFeatures(NamedTuple):
    """Per-record white-box features of a torch target.

    Attributes
    ----------
    gradient_norm : ndarray of shape (n_records,)
        L2 norm of the gradient of the record's loss with respect to the parameters.
    loss : ndarray of shape (n_records,)
        The record's loss.
    """

    gradient_norm: NDArray[np.float64]
    loss: NDArray[np.float64]


def _white_box_target(target: Any, func: str) -> Any:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(target, torch.nn.Module):
        from privaudit.targets import TorchTarget

        return TorchTarget(target)
    if not callable(getattr(target, "per_sample_gradient_norms", None)):
        raise param_error(
            "target", func,
            "a TorchTarget (white-box access to a torch module: "
            "privaudit.targets.TorchTarget(model.eval()))",
            f"<{type(target).__name__}>" if target is not None else None, error=TypeError,
        )
    return target


class GradientNormAttack(ParameterFreeAttack):
    """White-box attack: a small gradient of the loss at a record means member.

    Training drives the gradient of the loss towards zero on the training records; on
    unseen records it stays larger. The score is ``-||grad_theta loss(f_theta(x), y)||_2``,
    computed per record with :meth:`privaudit.targets.TorchTarget.per_sample_gradient_norms`
    (vectorised, in chunks of bounded memory). The loss of each record comes from the same
    pass and is kept for comparison (``extra["loss_auc"]``, and :meth:`features`).

    Parameters
    ----------
    params : "all" or list of str, default="all"
        Parameters whose gradient is measured (names from ``module.named_parameters()``).
        Nasr et al. find the last layers carry most of the signal.
    batch_size : int, optional
        Records per vectorised chunk (default: automatic, see ``TorchTarget``).

    Notes
    -----
    Needs a :class:`~privaudit.targets.TorchTarget` (a ``torch.nn.Module`` in evaluation
    mode is wrapped automatically); other targets are refused with a clear error, since
    the gradient requires the weights. ``outputs=`` cannot replace the target.

    References
    ----------
    .. [1] Nasr, M., Shokri, R., Houmansadr, A. "Comprehensive Privacy Analysis of Deep
       Learning: Passive and Active White-box Inference Attacks against Centralized and
       Federated Learning." IEEE S&P 2019 (gradient norms of members are smaller; Fig. 4).
    .. [2] Rezaei, S., Liu, X. "On the Difficulty of Membership Inference Attacks."
       CVPR 2021 (gradient-norm features among white-box attacks).

    Examples
    --------
    >>> from privaudit.attacks.membership import GradientNormAttack
    >>> GradientNormAttack(params=["layers.2.weight"])
    GradientNormAttack(params=['layers.2.weight'])
    """

    name: ClassVar[str] = "gradient-norm"
    _tags: ClassVar[AttackTags] = AttackTags(needs_white_box=True, queries_target=True)

    def __init__(self, params: str | Sequence[str] = "all",
                 batch_size: int | None = None) -> None:
        self.params = params
        self.batch_size = batch_size

    def check_params(self) -> None:
        """``params`` "all" or a non-empty list of names; ``batch_size`` None or an int >= 1.

        The names themselves are checked against the module's parameters when the target
        is read (the module is not known before).
        """
        who, names = type(self).__name__, self.params
        expected = "'all' or a non-empty list of parameter names"
        if isinstance(names, str):
            if names != "all":
                raise param_error("params", who, expected, names)
        elif not isinstance(names, Sequence) or not all(isinstance(k, str) for k in names):
            raise param_error("params", who, expected, names, error=TypeError)
        elif not names:
            raise param_error("params", who, expected, names)
        check_int(self.batch_size, param="batch_size", func=who, low=1, allow_none=True)

    def features(self, target: Any, X: Any, y: ArrayLike) -> WhiteBoxFeatures:
        """Per-record gradient norm and loss, in one pass over the records.

        Parameters
        ----------
        target : TorchTarget or torch.nn.Module
            The audited model.
        X, y : array-like
            Records and their labels/targets.

        Returns
        -------
        WhiteBoxFeatures
        """
        func = f"{type(self).__name__}.features"
        return self._features(target, X, y, func)

    def _features(self, target: Any, X: Any, y: ArrayLike | None, func: str) -> WhiteBoxFeatures:
        self.check_params()
        resolved = _white_box_target(target, func)
        if X is None or y is None:
            raise param_error("X" if X is None else "y", func,
                              "given (the gradients need the records and their labels)",
                              None, error=TypeError)
        if resolved.task not in self._tags.tasks:  # pragma: no cover - both tasks are supported
            raise param_error("target", func, "a classification or regression target",
                              resolved.task)
        norms, loss = resolved.per_sample_gradient_norms(
            X, y, params=self.params, batch_size=self.batch_size, return_loss=True
        )
        return WhiteBoxFeatures(gradient_norm=norms, loss=loss)

    def score(
        self,
        target: Any = None,
        X: Any = None,
        y: ArrayLike | None = None,
        *,
        outputs: ModelOutputs | None = None,
    ) -> NDArray[np.float64]:
        """``-gradient_norm`` per record (higher = more likely member).

        Parameters
        ----------
        target : TorchTarget or torch.nn.Module
            The audited model.
        X, y : array-like
            Audited records and their labels/targets.
        outputs : None
            Not supported (white-box attacks need the module); given, it is an error.

        Returns
        -------
        ndarray of shape (n_records,)
        """
        func = f"{type(self).__name__}.score"
        self._refuse_outputs(outputs, func)
        return -self._features(target, X, y, func).gradient_norm

    @staticmethod
    def _refuse_outputs(outputs: Any, func: str) -> None:
        if outputs is not None:
            raise param_error("outputs", func,
                              "None: the gradient-norm attack needs the torch target itself",
                              "<ModelOutputs>", error=TypeError)

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
    ) -> AttackResult:
        """Score the audited records and package the result.

        Parameters
        ----------
        target : TorchTarget or torch.nn.Module
            The audited model.
        X, y : array-like
            Audited records and their labels/targets.
        labels : array-like of 0/1
            Ground truth, 1 = member.
        outputs : None
            Not supported.
        record_ids : array-like, optional
            Identifiers of the audited records.
        dataset : str
            Dataset name for provenance.
        target_name : str, optional
            Overrides the target's name.

        Returns
        -------
        AttackResult
            ``raw_statistic`` is the gradient norm; ``extra["loss_auc"]`` is the AUC of
            the loss attack (``-loss``) on the same records, for comparison.
        """
        from privaudit.metrics import roc_auc

        func = f"{type(self).__name__}.run"
        self._refuse_outputs(outputs, func)
        self._require_labels(labels, func)
        resolved = _white_box_target(target, func)
        n = len(y) if y is not None else 0
        lab = self._check_labels(labels, n, func)
        feats = self._features(resolved, X, y, func)
        extra: dict[str, Any] = {"mean_loss": float(np.mean(feats.loss))}
        if lab.min() != lab.max():
            extra["loss_auc"] = float(roc_auc(lab, -feats.loss))
        return self._package(
            labels=lab, scores=-feats.gradient_norm,
            target_name=target_name if target_name is not None else resolved.name,
            record_ids=record_ids, dataset=dataset, raw=feats.gradient_norm,
            raw_name="gradient_norm", extra=extra,
        )
