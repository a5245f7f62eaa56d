"""Rule conditions: each kind knows how it holds, which signals it reads and how it reads aloud.

A condition in YAML is a mapping whose key names its kind (`signal`, `all`, `any`, `not`). The kinds are a registry,
read when a policy is validated (as actions are in guard/actions.py): the key picks the model, so a misspelt key is
one error ("a condition needs exactly one of the keys ...") instead of one error per kind tried, and a kind
registered before a policy is loaded (here, or by a product's own module or a test) is valid in it without any list
being edited. A new kind is one class decorated with `@condition_kind("key")`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Callable, ClassVar, Iterator, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, SerializeAsAny
from pydantic_core import PydanticCustomError

# (signal, location of its `signal` field, whether it sits under an odd number of `not`s)
SignalUse = tuple[str, tuple[Any, ...], bool]
CONDITION_ERROR = "condition_kind"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConditionBase(_Strict):
    """A condition kind: `holds` decides, `signals` names what it reads (for the loader's checks and `policy
    explain`), `__str__` reads it aloud."""

    key: ClassVar[str]

    def holds(self, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
        raise NotImplementedError

    def signals(self, location: tuple[Any, ...] = (), negated: bool = False) -> Iterator[SignalUse]:
        raise NotImplementedError


CONDITION_KINDS: dict[str, type[ConditionBase]] = {}
Kind = TypeVar("Kind", bound=type[ConditionBase])


def condition_kind(key: str) -> Callable[[Kind], Kind]:
    """Register a condition model under the YAML key that introduces it."""

    def register(cls: Kind) -> Kind:
        if key in CONDITION_KINDS:
            raise ValueError(f"condition kind {key!r} is already registered")
        cls.key = key
        CONDITION_KINDS[key] = cls
        return cls

    return register


def unregister_condition_kind(key: str) -> None:
    """Remove a registered kind (a test's own, or a product module's on unload); policies using it stop validating."""
    del CONDITION_KINDS[key]


def condition_kind_of(value: Any) -> str | None:
    """The registered key a raw condition (or a built one) carries; None when it carries none or several."""
    if isinstance(value, ConditionBase):
        return value.key
    if not isinstance(value, Mapping):
        return None
    keys = [key for key in CONDITION_KINDS if key in value]
    return keys[0] if len(keys) == 1 else None


def _validate(value: Any) -> ConditionBase:
    """Pick the kind by its key, from the registry as it is now. The kind's own errors keep their locations: pydantic
    carries a ValidationError raised here into the enclosing model's, under the field this condition sits in."""
    if isinstance(value, ConditionBase):
        return value
    key = condition_kind_of(value)
    if key is None:
        raise PydanticCustomError(
            CONDITION_ERROR,
            "a condition needs exactly one of the keys {expected}",
            {"expected": ", ".join(repr(key) for key in CONDITION_KINDS)},
        )
    return CONDITION_KINDS[key].model_validate(value)


if TYPE_CHECKING:  # for type checkers every condition is a ConditionBase
    Condition = ConditionBase
else:
    # SerializeAsAny: a dump (the loader merges `extends` chains through one) writes the kind's own fields
    Condition = Annotated[SerializeAsAny[ConditionBase], PlainValidator(_validate)]


@condition_kind("signal")
class SignalCondition(ConditionBase):
    """True when the signal's score is at or above `at_least` (default: the policy's threshold for it)."""

    signal: str
    at_least: float | None = Field(default=None, ge=0.0, le=1.0)

    def holds(self, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
        if self.signal not in scores:
            return False  # a signal not computed for this conversation (no response yet) cannot fire
        limit = self.at_least if self.at_least is not None else thresholds[self.signal]
        return scores[self.signal] >= limit

    def signals(self, location: tuple[Any, ...] = (), negated: bool = False) -> Iterator[SignalUse]:
        yield self.signal, location + ("signal",), negated

    def __str__(self) -> str:
        return f"{self.signal} >= {self.at_least if self.at_least is not None else 'threshold'}"


@condition_kind("all")
class AllCondition(ConditionBase):
    all: list[Condition] = Field(min_length=1)

    def holds(self, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
        return all(part.holds(scores, thresholds) for part in self.all)

    def signals(self, location: tuple[Any, ...] = (), negated: bool = False) -> Iterator[SignalUse]:
        for index, part in enumerate(self.all):
            yield from part.signals(location + ("all", index), negated)

    def __str__(self) -> str:
        return "(" + " AND ".join(str(part) for part in self.all) + ")"


@condition_kind("any")
class AnyCondition(ConditionBase):
    any: list[Condition] = Field(min_length=1)

    def holds(self, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
        return any(part.holds(scores, thresholds) for part in self.any)

    def signals(self, location: tuple[Any, ...] = (), negated: bool = False) -> Iterator[SignalUse]:
        for index, part in enumerate(self.any):
            yield from part.signals(location + ("any", index), negated)

    def __str__(self) -> str:
        return "(" + " OR ".join(str(part) for part in self.any) + ")"


@condition_kind("not")
class NotCondition(ConditionBase):
    not_: Condition = Field(alias="not")

    def holds(self, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
        return not self.not_.holds(scores, thresholds)

    def signals(self, location: tuple[Any, ...] = (), negated: bool = False) -> Iterator[SignalUse]:
        yield from self.not_.signals(location + ("not",), not negated)

    def __str__(self) -> str:
        return f"NOT {self.not_}"
