"""The rewrite loop: try the strategies a rule names, in order, until one yields text the output rail passes.

A strategy is one function registered here. Strategies never decide: they propose candidates, and `Review` (which
`Guard` provides for one response) re-checks each through the same output rules, so every rewritten text the user
receives has passed the rail. The rule's template is the last resort (the `rewrite` action's builder).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Protocol

from classifiers.conversation import Conversation

from .actions import first_template, instructions
from .messages import as_dicts

# regenerate(messages) -> new response text, from the upstream model
Regenerate = Callable[[list[dict]], Awaitable[str]]
Span = tuple[int, int]

MIN_WORDS_AFTER_REMOVAL = 25

log = logging.getLogger("couchguard.rewrite")


class Review(Protocol):
    """What the rewrite loop may ask of the guard for the response under review; nothing here decides."""

    @property
    def max_rewrites(self) -> int: ...

    async def recheck(self, candidate: str) -> str | None:
        """The candidate as the user would receive it if the output rail passes it (annotations added), else None."""

    async def harmful_sentences(self, rules: list[Any]) -> list[tuple[Span, bool]] | None:
        """Each sentence of the response with whether it carries harm the rules name; None when they name no
        assistant signal a removal could take out."""


@dataclass(frozen=True)
class Attempt:
    conversation: Conversation  # the last message is the response under review
    rules: list[Any]  # the matched rewrite rules
    locale: str
    regenerate: Regenerate | None
    request_id: str | None = None  # for the log line of a failed regeneration


Strategy = Callable[[Review, Attempt, list[str]], Awaitable[str | None]]


@dataclass(frozen=True)
class StrategySpec:
    name: str
    run: Strategy
    # rule fields the strategy cannot work without
    needs: tuple[str, ...] = ()


REWRITE_STRATEGIES: dict[str, StrategySpec] = {}


def rewrite_strategy(name: str, *, needs: Iterable[str] = ()) -> Callable[[Strategy], Strategy]:
    def register(function: Strategy) -> Strategy:
        if name in REWRITE_STRATEGIES:
            raise ValueError(f"rewrite strategy {name!r} is already registered")
        REWRITE_STRATEGIES[name] = StrategySpec(name=name, run=function, needs=tuple(needs))
        return function

    return register


async def rewrite(review: Review, attempt: Attempt) -> tuple[str | None, str | None, list[str]]:
    """(text, strategy, attempts) from the first strategy that succeeds; text and strategy are None when none did
    (then the rule's template, the `rewrite` action's builder, applies)."""
    strategies = list(dict.fromkeys(s for rule in attempt.rules for s in rule.strategies))
    attempts: list[str] = []
    for name in strategies:
        text = await REWRITE_STRATEGIES[name].run(review, attempt, attempts)
        if text is not None:
            return text, name, attempts
    return None, None, attempts


@rewrite_strategy("regenerate", needs=("instruction",))
async def regenerate(review: Review, attempt: Attempt, attempts: list[str]) -> str | None:
    if attempt.regenerate is None:
        return None
    correction = "\n\n".join(instructions(attempt.rules, attempt.locale))
    messages = as_dicts(attempt.conversation)[:-1]
    messages.insert(0, {"role": "system", "content": correction})
    for number in range(1, review.max_rewrites + 1):
        attempts.append(f"regenerate:{number}")
        try:
            candidate = await attempt.regenerate(messages)
        except Exception as exc:  # an upstream failure ends this strategy, never the rail
            log.warning("couchguard: regeneration failed for request %s", attempt.request_id, exc_info=True)
            attempts.append(f"regenerate:error:{type(exc).__name__}")
            return None
        if candidate and candidate.strip():
            checked = await review.recheck(candidate)
            if checked is not None:
                return checked
    return None


@rewrite_strategy("remove")
async def remove_sentences(review: Review, attempt: Attempt, attempts: list[str]) -> str | None:
    """Drop the sentences that carry the flagged harm, if what remains still stands on its own."""
    attempts.append("remove")
    sentences = await review.harmful_sentences(attempt.rules)
    if not sentences:
        return None
    keep = [span for span, harmful in sentences if not harmful]
    if len(keep) == len(sentences):
        return None  # the harm is spread over the text, not in removable sentences
    text = attempt.conversation.last.content
    remaining = " ".join(text[a:b].strip() for a, b in keep).strip()
    if len(remaining.split()) < MIN_WORDS_AFTER_REMOVAL:
        return None
    return await review.recheck(remaining)


@rewrite_strategy("template")
async def template(review: Review, attempt: Attempt, attempts: list[str]) -> str | None:
    attempts.append("template")
    return first_template(attempt.rules, attempt.locale)
