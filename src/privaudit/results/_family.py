"""The result family: the header every result shares, and its typed report details.

privaudit has four result classes, one per shape of evidence: an attack's per-record
scores (:class:`~privaudit.results.AttackResult`), an attribute attack's guesses
(:class:`~privaudit.results.AttributeResult`), the success counts of a count-based risk
(:class:`~privaudit.results.RiskResult`) and the per-row closeness of synthetic data
(:class:`~privaudit.results.ProximityResult`). Each is a dataclass with its own fields
(one of them frozen), so the shared part is a mixin, :class:`ResultFamily`, and a
structural type, :class:`Result`, rather than a dataclass base (a base with defaulted
fields would force every field of the subclasses to take a default as well).

Every result answers the same questions the same way:

- what it is: :attr:`ResultFamily.RESULT_TYPE` (``"attack"``, ``"attribute"``, ``"risk"``,
  ``"proximity"``), a class attribute the reports dispatch on instead of ``isinstance``;
- which audit made it: :attr:`ResultFamily.audit_kind` (``audit.kind``: ``"model"``,
  ``"llm"``, ``"unlearning"``...; None for a result built by hand);
- what it infers: ``kind`` (``"membership"`` or ``"attribute"`` for an attack result, the
  risk measured for a count-based risk, ``"attribute"`` and ``"closeness"`` for the other
  two);
- its header: ``target``, ``attack``, ``dataset``, ``generator``, ``parameters``,
  :attr:`ResultFamily.provenance` and ``audit``.

The numbers a report reads beside the metrics (a study's tag, the target's train and test
accuracy, Apollo's heatmap...) are typed attributes declared by each class in
``DETAIL_FIELDS``; they are saved under the key ``"details"``. Older code and older saved
results kept them as loose ``extra`` keys: a result built or loaded with them in
``extra`` has them moved to the typed attributes, and ``result.extra`` stays a live view
that still reads and writes them under their old keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from privaudit._validation import param_error
from privaudit.results._audit_info import AuditInfo

__all__ = ["RESULT_TYPES", "ExtraView", "Result", "ResultFamily", "result_type_of"]

#: The result types, one per class (:attr:`ResultFamily.RESULT_TYPE`).
RESULT_TYPES = ("attack", "attribute", "risk", "proximity", "dp", "memorisation")


def result_type_of(obj: Any) -> str | None:
    """The :attr:`ResultFamily.RESULT_TYPE` of ``obj``; None for anything not a result.

    Reports take mixed lists (results of every type, and whatever a user passed): this
    is how they tell them apart, without an ``isinstance`` chain over the classes.
    """
    kind = getattr(type(obj), "RESULT_TYPE", None)
    return kind if kind in RESULT_TYPES else None


@runtime_checkable
class Result(Protocol):
    """What every privaudit result has: the header the reports and stores read."""

    RESULT_TYPE: ClassVar[str]
    target: str
    attack: str
    dataset: str
    parameters: dict[str, Any]
    audit: AuditInfo

    @property
    def kind(self) -> str: ...

    @property
    def generator(self) -> str: ...

    @property
    def audit_kind(self) -> str | None: ...

    @property
    def provenance(self) -> dict[str, str]: ...


class ExtraView(dict[str, Any]):
    """``result.extra``: the free-form details, plus the typed ones under their old keys.

    A plain dict of both (so ``json.dumps(result.extra)`` and ``{**result.extra}`` work as
    when ``extra`` was a dict), made afresh at each read of ``result.extra``, whose
    writes go through to the result: a key of ``DETAIL_FIELDS`` to its typed attribute,
    any other to the free-form details. So ``result.extra["heatmap"]`` and
    ``result.extra.update(study="overfitting")`` keep working for old code. The typed
    attributes are the truth: a view kept across a later change of one is stale.
    """

    def __init__(self, owner: ResultFamily) -> None:
        super().__init__({**owner.free_extra(), **owner.details()})
        self._owner = owner

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy or a pickle of the view is a plain dict, detached from the result.
        return dict, (dict(self),)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._owner._write_extra(key, value)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._owner._delete_extra(key)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Set each key as ``view[key] = value`` does (through to the result)."""
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> ExtraView:  # type: ignore[override,misc]
        self.update(other)
        return self

    def setdefault(self, key: str, default: Any = None) -> Any:
        """``view[key]``, set to ``default`` first when missing (through to the result)."""
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        """Remove ``key`` (from the result too) and return its value."""
        if key in self:
            value = self[key]
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, Any]:
        """Remove the last key (from the result too) and return it with its value."""
        if not self:
            raise KeyError("popitem(): the extra details are empty")
        key = next(reversed(self))
        return key, self.pop(key)

    def clear(self) -> None:
        """Remove every key, from the result too."""
        for key in list(self):
            del self[key]


class ResultFamily:
    """The shared header and behaviour of every result class (a mixin of dataclasses).

    A subclass sets :attr:`RESULT_TYPE` and :attr:`DETAIL_FIELDS`, declares a dataclass
    field ``extra`` (the constructor's free-form details) and the typed detail fields
    (default None), and calls :meth:`_adopt_details` at the end of ``__post_init__``.
    """

    #: Which of the four result classes this is (one of :data:`RESULT_TYPES`).
    RESULT_TYPE: ClassVar[str] = ""
    #: Typed detail attributes, by the ``extra`` key older layouts kept them under.
    DETAIL_FIELDS: ClassVar[dict[str, str]] = {}

    # ------------------------------------------------------------------ header
    @property
    def result_type(self) -> str:
        """Which result class this is (:data:`RESULT_TYPES`): ``"attack"``, ``"risk"``..."""
        return self.RESULT_TYPE

    @property
    def audit_kind(self) -> str | None:
        """The kind of audit that made the result (``audit.kind``); None when built by hand."""
        audit = getattr(self, "audit", None)
        return audit.kind if isinstance(audit, AuditInfo) else None

    @property
    def provenance(self) -> dict[str, str]:
        """``target``, ``attack``, ``dataset`` and ``generator``: where the result comes from."""
        return {name: getattr(self, name) for name in ("target", "attack", "dataset",
                                                        "generator")}

    # ------------------------------------------------------------------ details
    @property
    def extra(self) -> ExtraView:
        """Free-form details, with the typed :attr:`DETAIL_FIELDS` under their old keys."""
        return ExtraView(self)

    @extra.setter
    def extra(self, value: Any) -> None:
        if isinstance(value, ExtraView):
            value = dict(value.items())
        elif value is None:
            value = {}
        object.__setattr__(self, "_free_extra", value)
        if self.__dict__.get("_details_adopted"):
            self._adopt_details()

    def details(self) -> dict[str, Any]:
        """The typed details that are set, by their saved key (``DETAIL_FIELDS``'s keys)."""
        out = {}
        for key, attribute in self.DETAIL_FIELDS.items():
            value = getattr(self, attribute)
            if value is not None:
                out[key] = value
        return out

    def free_extra(self) -> dict[str, Any]:
        """The free-form details alone (what is saved under ``"extra"``)."""
        return self.__dict__["_free_extra"]

    def _write_extra(self, key: str, value: Any) -> None:
        """``extra[key] = value``: to the typed attribute of ``key``, or the free details."""
        attribute = self.DETAIL_FIELDS.get(key)
        if attribute is None:
            self.__dict__["_free_extra"][key] = value
        else:
            object.__setattr__(self, attribute, value)

    def _delete_extra(self, key: str) -> None:
        """``del extra[key]``: the typed attribute of ``key`` unset, or the key removed."""
        attribute = self.DETAIL_FIELDS.get(key)
        if attribute is None:
            self.__dict__["_free_extra"].pop(key, None)
        else:
            object.__setattr__(self, attribute, None)

    def _adopt_details(self) -> None:
        """Check ``extra`` and move the keys of :attr:`DETAIL_FIELDS` to their attributes.

        A typed attribute given explicitly wins over the same key in ``extra`` at
        construction; assigning ``extra`` later overwrites it (as assigning a key did).
        """
        free = self.__dict__["_free_extra"]
        func = type(self).__name__
        if not isinstance(free, dict):
            raise param_error("extra", func, "a dict", f"<{type(free).__name__}>",
                              error=TypeError)
        adopted = self.__dict__.get("_details_adopted", False)
        for key, attribute in self.DETAIL_FIELDS.items():
            if key in free:
                value = free.pop(key)
                if adopted or getattr(self, attribute) is None:
                    object.__setattr__(self, attribute, value)
        object.__setattr__(self, "_details_adopted", True)


def details_from(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The saved ``extra`` with the saved ``details`` merged in, for a loader.

    Results saved before the typed details kept them in ``extra``; newer ones under
    ``"details"``. Both reach the constructor as ``extra`` and are moved to the typed
    attributes there.
    """
    extra = doc.get("extra") or {}
    details = doc.get("details") or {}
    if not isinstance(details, dict):
        return details  # refused by the constructor, which names 'extra'
    return {**extra, **details} if isinstance(extra, dict) else extra
