"""The one base class of every attack: :class:`BaseAttack`.

Membership attacks subclass it now; attribute, generator and unlearning attacks will too.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator

from privaudit._validation import param_error
from privaudit.attacks._tags import AttackTags
from privaudit.exceptions import NotFittedError

__all__ = ["BaseAttack"]

_A = TypeVar("_A", bound="BaseAttack")


class BaseAttack(BaseEstimator):
    """Base class of every attack: an estimator with tags saying what it needs.

    The contract, as scikit-learn's estimators:

    - ``__init__`` stores its parameters unchanged and does no work;
    - ``check_params()`` refuses a parameter value the attack cannot use, naming the
      parameter, without data: audits call it on every attack before any query or
      training, and ``fit`` / ``score`` / ``run`` call it too;
    - ``fit(...)`` calibrates (reads reference outputs, trains attack models, estimates
      parameters) and returns ``self``; learned state ends in ``_``;
    - ``score(...)`` returns one float64 per record, higher = more likely member (or more
      likely the sensitive value, for attribute attacks);
    - ``run(...)`` returns an :class:`~privaudit.results.AttackResult`;
    - every random draw goes through a ``random_state`` parameter.

    What ``fit``, ``score`` and ``run`` take depends on the family and is declared by the
    tags (:class:`~privaudit.attacks.AttackTags`, read with
    :func:`~privaudit.attacks.get_tags`): an attack with ``needs_reference_models`` is
    fitted with ``fit(reference, population_outputs=None)``, one with
    ``fits_on_audited`` with ``fit(outputs=..., labels=...)``, and so on. Subclasses set
    ``name`` (the registry name) and ``_tags``, or override :meth:`__privaudit_tags__`
    when the tags depend on the parameters (``LiRAAttack(online=...)``).

    Notes
    -----
    ``get_params``, ``set_params``, ``repr`` and :func:`sklearn.base.clone` come from
    scikit-learn's :class:`~sklearn.base.BaseEstimator`, so attacks behave as every
    estimator of the ecosystem (grid searches over attack parameters, ``clone`` in
    executors) and the rules are those the field knows. scikit-learn is a core dependency
    and ``sklearn.base`` is light (imported with the attacks, not with ``import
    privaudit``). The one departure: ``set_params`` refuses an unknown name with the
    project's error template (still a ``ValueError``).

    References
    ----------
    .. [1] Buitinck, L. et al. (2013). API design for machine learning software:
       experiences from the scikit-learn project. ECML PKDD Workshop.
    """

    #: Registry name (see :func:`~privaudit.attacks.get_attack`).
    name: ClassVar[str] = ""
    #: What the attack needs; see :meth:`__privaudit_tags__`.
    _tags: ClassVar[AttackTags] = AttackTags()

    def __privaudit_tags__(self) -> AttackTags:
        """The attack's tags (read them with :func:`privaudit.attacks.get_tags`)."""
        return self._tags

    # ------------------------------------------------------------------ contract
    def fit(self: _A, *args: Any, **kwargs: Any) -> _A:
        """Calibrate the attack; returns ``self`` (what it reads: see the subclass)."""
        raise NotImplementedError

    def score(self, *args: Any, **kwargs: Any) -> NDArray[np.float64]:
        """One float64 score per record, higher = more likely member."""
        raise NotImplementedError

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Score the audited records and package an :class:`~privaudit.results.AttackResult`."""
        raise NotImplementedError

    # ------------------------------------------------------------------ parameters
    def check_params(self) -> None:
        """Refuse constructor parameter values out of range (default: none to check).

        Raises
        ------
        TypeError, ValueError
            Naming the parameter and the value, as every privaudit error does.
        """

    def set_params(self: _A, **params: Any) -> _A:
        """Set constructor parameters (``a__b`` for nested ones); returns ``self``."""
        valid = sorted(self.get_params(deep=False))
        for key in params:
            if key.partition("__")[0] not in valid:
                raise param_error(
                    "params", f"{type(self).__name__}.set_params", f"among {valid}", key
                )
        super().set_params(**params)
        return self

    # ------------------------------------------------------------------ fitted state
    def __sklearn_is_fitted__(self) -> bool:
        """Whether learned state (attributes ending in ``_``) exists."""
        return any(k.endswith("_") and not k.startswith("_") for k in vars(self))

    def _check_fitted(self, func: str) -> None:
        """Raise :class:`~privaudit.NotFittedError` when ``fit`` is required and not done."""
        if self.__privaudit_tags__().requires_fit and not self.__sklearn_is_fitted__():
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted: call fit(...) (or give its "
                f"parameters explicitly) before {func}."
            )
