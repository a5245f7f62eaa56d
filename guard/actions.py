"""The action vocabulary: a new action is one `register_action` call here, with its builder.

Each action carries its spec: the rail it belongs to, its severity there (the most severe matched rule wins), the
rule fields it needs, and whether the user receives the model's response (`delivers`). The policy schema, the
severity order, the loader's checks, the proxy's "delivered" test and the bench's "withheld" count all read these
specs; nothing else lists action names.

Builders are pure: they turn a verdict into an outcome (text, messages for the model) and never call a classifier
or the model. Rewriting, which does both, is orchestrated by `Guard` (see `guard/rewriting.py`); the `rewrite`
builder supplies its last resort, the vetted template.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Protocol

from classifiers.conversation import Conversation

from .messages import as_dicts
from .resources import render_instruction, render_template

Rail = Literal["input", "output"]


class Verdict(Protocol):
    """What an action reads of the policy's verdict (`guard.policy.Verdict`): the matched rules that chose an action,
    for their templates and instructions. A protocol, so that actions, which the policy's schema is built from, do
    not import the policy."""

    def rules_with(self, action: str) -> list[Any]: ...


@dataclass
class Outcome:
    """What an action builder hands back: the user's text (None when the model is simply called) and, for input
    actions that change the request, the messages sent to the model instead."""

    text: str | None = None
    upstream_messages: list[dict] | None = None
    strategy: str | None = None
    attempts: list[str] = field(default_factory=list)


# build(conversation, verdict, locale) -> Outcome; on the output rail the conversation ends with the response
Builder = Callable[[Conversation, Verdict, str], Outcome]


@dataclass(frozen=True)
class ActionSpec:
    name: str
    rail: Rail
    severity: int
    # whether the user receives what the model wrote (with any added text): `allow`, `annotate`, `steer`
    delivers: bool
    # rule fields the action cannot work without, e.g. a block needs the template the user receives instead
    needs: tuple[str, ...] = ()
    build: Builder | None = None
    # the rewrite loop (guard/rewriting.py) runs first, with the rule's strategies; the builder is its last resort
    rewrites: bool = False
    # False for outcomes only failures produce (`unchecked`, `error`): no policy rule may choose them
    in_policies: bool = True
    description: str = ""


ACTIONS: dict[tuple[Rail, str], ActionSpec] = {}
FAILURE_RAILS: tuple[Rail, ...] = ("input", "output")


def register_action(
    rail: Rail,
    name: str,
    *,
    severity: int,
    delivers: bool,
    needs: Iterable[str] = (),
    rewrites: bool = False,
    in_policies: bool = True,
    description: str = "",
) -> Callable[[Builder], Builder]:
    """Register `name` on `rail` with the decorated function as its builder."""

    def register(build: Builder) -> Builder:
        if (rail, name) in ACTIONS:
            raise ValueError(f"action {name!r} is already registered on the {rail} rail")
        ACTIONS[(rail, name)] = ActionSpec(
            name=name,
            rail=rail,
            severity=severity,
            delivers=delivers,
            needs=tuple(needs),
            build=build,
            rewrites=rewrites,
            in_policies=in_policies,
            description=description,
        )
        return build

    return register


def unregister_action(rail: Rail, name: str) -> None:
    """For tests that register an action of their own."""
    ACTIONS.pop((rail, name), None)


def action_spec(rail: Rail, name: str) -> ActionSpec:
    return ACTIONS[(rail, name)]


def policy_actions(rail: Rail) -> list[str]:
    """The actions a policy rule on `rail` may choose, least severe first."""
    specs = sorted((s for s in ACTIONS.values() if s.rail == rail and s.in_policies), key=lambda s: s.severity)
    return [s.name for s in specs]


def action_names() -> list[str]:
    """Every action a decision may carry, on either rail, failures included."""
    return list(dict.fromkeys(name for _, name in ACTIONS))


def severity(rail: Rail, name: str) -> int:
    return ACTIONS[(rail, name)].severity


def delivers(action: str, rail: Rail = "output") -> bool:
    """Whether the user receives the model's response under `action`. Unknown actions deliver nothing."""
    spec = ACTIONS.get((rail, action))
    return spec is not None and spec.delivers


def withheld(action: str, rail: Rail = "output") -> bool:
    """The opposite of `delivers`, for counting what the user did not receive (caught or falsely blocked)."""
    return not delivers(action, rail)


# -- shared pieces of the builders ---------------------------------------------------------------------------------
def instructions(rules: Iterable[Any], locale: str) -> list[str]:
    ids = list(dict.fromkeys(rule.instruction for rule in rules if rule.instruction))
    return [render_instruction(i, locale) for i in ids]


def first_template(rules: Iterable[Any], locale: str, default: str = "safe_fallback") -> str:
    template = next((rule.template for rule in rules if rule.template), default)
    return render_template(template, locale)


def annotate(text: str, verdict: Verdict, locale: str) -> str:
    notes = list(
        dict.fromkeys(
            render_template(rule.template, locale) for rule in verdict.rules_with("annotate") if rule.template
        )
    )
    return "\n\n".join([text.rstrip(), *notes]) if notes else text


def _failure(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    raise TypeError("failure outcomes are built by Guard.failure, not by a policy verdict")


# -- input -----------------------------------------------------------------------------------------------------------
@register_action("input", "allow", severity=0, delivers=True, description="the model is called unchanged")
def allow_input(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    return Outcome()


@register_action(
    "input",
    "steer",
    severity=1,
    delivers=True,
    needs=("instruction",),
    description="the model is called with an added safety instruction",
)
def steer_input(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    guidance = "\n\n".join(instructions(verdict.rules_with("steer"), locale))
    messages = as_dicts(conversation)
    # after any existing system prompt, so the product's own instructions keep their place
    position = next((i for i, m in enumerate(messages) if m["role"] not in ("system", "developer")), len(messages))
    messages.insert(position, {"role": "system", "content": guidance})
    return Outcome(upstream_messages=messages)


@register_action(
    "input",
    "block",
    severity=2,
    delivers=False,
    needs=("template",),
    description="a vetted template; the model is not called",
)
def block_input(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    return Outcome(text=first_template(verdict.rules_with("block"), locale, "blocked_request"))


# -- output ----------------------------------------------------------------------------------------------------------
@register_action("output", "allow", severity=0, delivers=True, description="the response unchanged")
def allow_output(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    return Outcome(text=conversation.last.content)


@register_action(
    "output",
    "annotate",
    severity=1,
    delivers=True,
    needs=("template",),
    description="the response, followed by added text",
)
def annotate_output(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    return Outcome(text=annotate(conversation.last.content, verdict, locale))


@register_action(
    "output",
    "rewrite",
    severity=2,
    delivers=False,
    needs=("template",),
    rewrites=True,
    description="different content: regenerated, sentences removed, or a template",
)
def rewrite_output(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    # the last resort of the rewrite loop (guard/rewriting.py), which Guard runs first
    return Outcome(
        text=first_template(verdict.rules_with("rewrite"), locale), strategy="template", attempts=["template:fallback"]
    )


@register_action(
    "output",
    "block",
    severity=3,
    delivers=False,
    needs=("template",),
    description="a vetted template instead of the response",
)
def block_output(conversation: Conversation, verdict: Verdict, locale: str) -> Outcome:
    return Outcome(text=first_template(verdict.rules_with("block"), locale))


# -- failures (Guard.failure): never chosen by a rule --------------------------------------------------------------
for _rail in FAILURE_RAILS:
    # fail-open: the model was called, or its text delivered, without a check
    register_action(
        _rail,
        "unchecked",
        severity=-1,
        delivers=True,
        in_policies=False,
        description="fail-open: delivered without a check",
    )(_failure)
    # fail-open: the failure itself is surfaced to the client; nothing is delivered
    register_action(
        _rail, "error", severity=-1, delivers=False, in_policies=False, description="fail-open: the failure is surfaced"
    )(_failure)
