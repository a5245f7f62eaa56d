"""The suites `couchguard bench` knows, by name. A new suite is one module in suites/ and one `register` call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .types import BenchOptions, SuiteRun

if TYPE_CHECKING:
    from ..pipeline import Guard


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    run: Callable[["Guard", BenchOptions], SuiteRun]
    # whether `--model` makes sense: only suites judged on responses can be run against a live model
    live: bool = False
    # whether `--judge-tier` makes sense: the suite checks labelled responses offline (the judge tier's measurement)
    judge_tier: bool = False


SUITES: dict[str, Suite] = {}


def register(suite: Suite) -> Suite:
    if suite.name in SUITES:
        raise ValueError(f"bench suite {suite.name!r} is already registered")
    SUITES[suite.name] = suite
    return suite


def get_suite(name: str) -> Suite:
    _load_builtin()
    if name not in SUITES:
        raise KeyError(f"unknown bench suite {name!r}; known suites: {', '.join(sorted(SUITES))}")
    return SUITES[name]


def suite_names() -> list[str]:
    _load_builtin()
    return sorted(SUITES)


def _load_builtin() -> None:
    from . import suites  # noqa: F401  (each module registers itself on import)
