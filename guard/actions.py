"""Actions as registries: a new action is one function registered for its rail.

Input actions take the conversation and the input verdict and return what happens before the model is called.
Output actions take the response and the output verdict and return what the user receives. `rewrite` tries its
strategies (also a registry) in order; every rewritten text is checked again by the output rail before delivery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable

from classifiers.conversation import Conversation

from .policy import Verdict
from .resources import render_instruction, render_template

if TYPE_CHECKING:
    from .pipeline import Guard

# regenerate(messages) -> new response text, from the upstream model
Regenerate = Callable[[list[dict]], Awaitable[str]]

MIN_WORDS_AFTER_REMOVAL = 25


@dataclass
class InputOutcome:
    text: str | None = None
    upstream_messages: list[dict] | None = None


@dataclass
class OutputOutcome:
    text: str
    strategy: str | None = None
    attempts: list[str] = field(default_factory=list)


@dataclass
class OutputContext:
    guard: "Guard"
    conversation: Conversation  # the last message is the response under review
    verdict: Verdict
    tightened: dict[str, float]
    locale: str
    regenerate: Regenerate | None
    user_scores: dict[str, float]  # the user turns do not change during a rewrite: score them once


INPUT_ACTIONS: dict[str, Callable[[Conversation, Verdict, str], InputOutcome]] = {}
OUTPUT_ACTIONS: dict[str, Callable[[OutputContext], Awaitable[OutputOutcome]]] = {}
REWRITE_STRATEGIES: dict[str, Callable[[OutputContext, list[str]], Awaitable[str | None]]] = {}


def input_action(name: str):
    def register(function):
        INPUT_ACTIONS[name] = function
        return function
    return register


def output_action(name: str):
    def register(function):
        OUTPUT_ACTIONS[name] = function
        return function
    return register


def rewrite_strategy(name: str):
    def register(function):
        REWRITE_STRATEGIES[name] = function
        return function
    return register


def as_messages(conversation: Conversation) -> list[dict]:
    return [{"role": m.role, "content": m.content} for m in conversation.messages]


def _instructions(rules, locale: str) -> list[str]:
    ids = list(dict.fromkeys(rule.instruction for rule in rules if rule.instruction))
    return [render_instruction(i, locale) for i in ids]


def _first_template(rules, locale: str, default: str = "safe_fallback") -> str:
    template = next((rule.template for rule in rules if rule.template), default)
    return render_template(template, locale)


# -- input -----------------------------------------------------------------------------------------------------------
@input_action("allow")
def allow_input(conversation: Conversation, verdict: Verdict, locale: str) -> InputOutcome:
    return InputOutcome()


@input_action("steer")
def steer_input(conversation: Conversation, verdict: Verdict, locale: str) -> InputOutcome:
    guidance = "\n\n".join(_instructions(verdict.rules_with("steer"), locale))
    messages = as_messages(conversation)
    # after any existing system prompt, so the product's own instructions keep their place
    position = next((i for i, m in enumerate(messages) if m["role"] not in ("system", "developer")), len(messages))
    messages.insert(position, {"role": "system", "content": guidance})
    return InputOutcome(upstream_messages=messages)


@input_action("block")
def block_input(conversation: Conversation, verdict: Verdict, locale: str) -> InputOutcome:
    return InputOutcome(text=_first_template(verdict.rules_with("block"), locale, "blocked_request"))


# -- output ----------------------------------------------------------------------------------------------------------
@output_action("allow")
async def allow_output(context: OutputContext) -> OutputOutcome:
    return OutputOutcome(text=context.conversation.last.content)


@output_action("annotate")
async def annotate_output(context: OutputContext) -> OutputOutcome:
    return OutputOutcome(text=annotate(context.conversation.last.content, context.verdict, context.locale))


def annotate(text: str, verdict: Verdict, locale: str) -> str:
    notes = list(dict.fromkeys(render_template(rule.template, locale)
                               for rule in verdict.rules_with("annotate") if rule.template))
    return "\n\n".join([text.rstrip(), *notes]) if notes else text


@output_action("block")
async def block_output(context: OutputContext) -> OutputOutcome:
    return OutputOutcome(text=_first_template(context.verdict.rules_with("block"), context.locale))


@output_action("rewrite")
async def rewrite_output(context: OutputContext) -> OutputOutcome:
    rules = context.verdict.rules_with("rewrite")
    strategies = list(dict.fromkeys(s for rule in rules for s in rule.strategies))
    attempts: list[str] = []
    for name in strategies:
        text = await REWRITE_STRATEGIES[name](context, attempts)
        if text is not None:
            return OutputOutcome(text=text, strategy=name, attempts=attempts)
    attempts.append("template:fallback")
    return OutputOutcome(text=_first_template(rules, context.locale), strategy="template", attempts=attempts)


async def _recheck(context: OutputContext, candidate: str) -> str | None:
    """The candidate as the user would receive it if the output rail passes it (annotations added), else None."""
    messages = as_messages(context.conversation)[:-1] + [{"role": "assistant", "content": candidate}]
    verdict = await context.guard.output_verdict(messages, context.tightened, context.user_scores)
    if verdict.action in ("allow", "annotate"):
        return annotate(candidate, verdict, context.locale)
    return None


@rewrite_strategy("regenerate")
async def regenerate(context: OutputContext, attempts: list[str]) -> str | None:
    if context.regenerate is None:
        return None
    rules = context.verdict.rules_with("rewrite")
    correction = "\n\n".join(_instructions(rules, context.locale))
    messages = as_messages(context.conversation)[:-1]
    messages.insert(0, {"role": "system", "content": correction})
    for attempt in range(context.guard.policy.max_rewrites):
        attempts.append(f"regenerate:{attempt + 1}")
        try:
            candidate = await context.regenerate(messages)
        except Exception as exc:  # an upstream failure ends this strategy, never the rail
            attempts.append(f"regenerate:error:{type(exc).__name__}")
            return None
        if candidate and candidate.strip():
            checked = await _recheck(context, candidate)
            if checked is not None:
                return checked
    return None


@rewrite_strategy("remove")
async def remove_sentences(context: OutputContext, attempts: list[str]) -> str | None:
    """Drop the sentences that carry the flagged harm, if what remains still stands on its own."""
    attempts.append("remove")
    harmful = {signal for rule in context.verdict.rules_with("rewrite")
               for signal in context.guard.assistant_signals_in(rule)}
    if not harmful:
        return None
    thresholds = context.guard.thresholds(context.tightened)
    text = context.conversation.last.content
    sentences = await context.guard.sentence_scores(context.conversation)
    keep = [span for span, scores in sentences
            if not any(scores[s] >= thresholds[s] for s in harmful)]
    if len(keep) == len(sentences):
        return None  # the harm is spread over the text, not in removable sentences
    remaining = " ".join(text[a:b].strip() for a, b in keep).strip()
    if len(remaining.split()) < MIN_WORDS_AFTER_REMOVAL:
        return None
    return await _recheck(context, remaining)


@rewrite_strategy("template")
async def template(context: OutputContext, attempts: list[str]) -> str | None:
    attempts.append("template")
    return _first_template(context.verdict.rules_with("rewrite"), context.locale)
