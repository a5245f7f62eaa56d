"""Rule conditions: each kind knows how it holds, which signals it reads and how it reads aloud.

A condition in YAML is a mapping whose key names its kind (`signal`, `all`, `any`, `not`); that key picks the model
(a pydantic discriminator), so a misspelt key is one error ("a condition needs one of ...") instead of one error per
kind tried. A new kind is one class here with `@condition_kind("key")`, before `Condition` is built at the bottom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Iterator, Mapping, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

# (signal, location of its `signal` field, whether it sits under an odd number of `not`s)
SignalUse = tuple[str, tuple[Any, ...], bool]
CONDITION_ERROR = "condition_kind"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConditionBase(_Strict):
    key: ClassVar[str]

    def holds(self, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
        raise NotImplementedError

    def signals(self, location: tuple[Any, ...] = (), negated: bool = False) -> Iterator[SignalUse]:
        raise NotImplementedError


CONDITION_KINDS: dict[str, type[ConditionBase]] = {}


def condition_kind(key: str):
    """Register a condition model under the YAML key that introduces it."""

    def register(cls: type[ConditionBase]) -> type[ConditionBase]:
        if key in CONDITION_KINDS:
            raise ValueError(f"condition kind {key!r} is already registered")
        cls.key = key
        CONDITION_KINDS[key] = cls
        return cls

    return register


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


def condition_kind_of(value: Any) -> str | None:
    """The registered key a raw condition (or a built one) carries; None when it carries none or several."""
    if isinstance(value, ConditionBase):
        return value.key
    if not isinstance(value, Mapping):
        return None
    keys = [key for key in CONDITION_KINDS if key in value]
    return keys[0] if len(keys) == 1 else None


def _tag(value: Any) -> str | None:
    # the model's class name, not the YAML key, tags the union: pydantic puts the tag in error locations, where a
    # key would be ambiguous with the field of the same name (`all.all.0`); the loader drops these tags
    key = condition_kind_of(value)
    return None if key is None else CONDITION_KINDS[key].__name__


def condition_tags() -> set[str]:
    return {cls.__name__ for cls in CONDITION_KINDS.values()}


def _expected() -> str:
    return ", ".join(repr(key) for key in CONDITION_KINDS)


if TYPE_CHECKING:  # for type checkers every condition is a ConditionBase; pydantic reads the discriminated union
    Condition = ConditionBase
else:
    Condition = Annotated[
        Union[tuple(Annotated[cls, Tag(cls.__name__)] for cls in CONDITION_KINDS.values())],
        Discriminator(
            _tag,
            custom_error_type=CONDITION_ERROR,
            custom_error_message=f"a condition needs exactly one of the keys {_expected()}",
        ),
    ]

for _cls in CONDITION_KINDS.values():
    _cls.model_rebuild()
