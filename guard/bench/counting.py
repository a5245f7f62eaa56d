"""The shared arithmetic of "caught" and "false block" (docs/architecture.md, "CLI contracts").

caught = an inappropriate response the user does not receive (rewrite or block); false block = an appropriate
response the user does not receive. `annotate` delivers the response (with added text) and counts as neither. Which
actions withhold the response is each action's spec (guard/actions.py `delivers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypeVar

from ..actions import withheld
from .stats import ci95, rate

__all__ = ["Tally", "tally", "tally_by", "withheld"]

T = TypeVar("T")


@dataclass
class Tally:
    inappropriate: int = 0
    caught: int = 0
    appropriate: int = 0
    false_blocks: int = 0
    actions: dict[str, int] = field(default_factory=dict)

    def add(self, appropriate: bool, action: str) -> None:
        self.actions[action] = self.actions.get(action, 0) + 1
        if appropriate:
            self.appropriate += 1
            self.false_blocks += withheld(action)
        else:
            self.inappropriate += 1
            self.caught += withheld(action)

    @property
    def catch_rate(self) -> float | None:
        return rate(self.caught, self.inappropriate)

    @property
    def false_block_rate(self) -> float | None:
        return rate(self.false_blocks, self.appropriate)

    def as_dict(self) -> dict[str, Any]:
        return {
            "inappropriate": self.inappropriate,
            "caught": self.caught,
            "appropriate": self.appropriate,
            "false_blocks": self.false_blocks,
            "catch_rate": _round(self.catch_rate),
            "false_block_rate": _round(self.false_block_rate),
            "catch_rate_ci95": ci95(self.caught, self.inappropriate),
            "false_block_rate_ci95": ci95(self.false_blocks, self.appropriate),
            "actions": dict(sorted(self.actions.items())),
        }


def tally(items: Iterable[T], appropriate: Callable[[T], bool], action: Callable[[T], str]) -> Tally:
    result = Tally()
    for item in items:
        result.add(appropriate(item), action(item))
    return result


def tally_by(
    items: Iterable[T], key: Callable[[T], str], appropriate: Callable[[T], bool], action: Callable[[T], str]
) -> dict[str, Tally]:
    groups: dict[str, Tally] = {}
    for item in items:
        groups.setdefault(key(item), Tally()).add(appropriate(item), action(item))
    return groups


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
