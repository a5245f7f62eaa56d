"""One decision as the page shows it: Guard's own rails on cached scores, with each rule's criterion spelled out.

The page never decides anything itself: every action, rule and text here comes from `Guard.input_rail` or
`Guard.output_rail`, given the scores computed once for the conversation.
"""

from __future__ import annotations

from typing import Any

from classifiers.conversation import Conversation
from classifiers.signals import SIGNALS

from ..commands.policy import _condition_text, criteria
from ..decision import Decision
from ..pipeline import Guard
from ..policy.schema import InputRule, OutputRule

DELIVERY = {
    ("input", "allow"): "The model is called with the conversation unchanged.",
    ("input", "steer"): "The model is called with an added safety instruction (below); output rules may tighten.",
    ("input", "block"): "The model is not called: the user receives this vetted template.",
    ("output", "allow"): "The response is delivered unchanged.",
    ("output", "annotate"): "The response is delivered, followed by added text.",
    ("output", "rewrite"): "The response is withheld and rewritten.",
    ("output", "block"): "The response is withheld: the user receives this vetted template.",
}
# what a rewrite delivers, by the strategy that produced it; the playground has no upstream model, so `regenerate`
# is never available here
REWRITTEN = {
    "remove": "The response is withheld: the user receives it with the offending sentences removed, checked again.",
    "template": "The response is withheld: the user receives this vetted template.",
    "regenerate": "The response is withheld: the user receives a regenerated response that passed the output rail.",
}


async def decide(guard: Guard, conversation: Conversation, scores: dict[str, float]) -> Decision:
    """The rail the conversation calls for, as `couchguard check` takes it, without an upstream model."""
    if conversation.last.role == "assistant":
        return await guard.output_rail(conversation, scores=scores)
    return guard.input_rail(conversation, scores)


def view(guard: Guard, base: Guard, conversation: Conversation, decision: Decision) -> dict[str, Any]:
    thresholds, base_thresholds = guard.thresholds(), base.thresholds()
    delivery = DELIVERY.get((decision.rail, decision.action), "")
    if decision.action == "rewrite":
        delivery = REWRITTEN.get(decision.strategy or "", delivery)
    return {
        "rail": decision.rail,
        "action": decision.action,
        "escalate": decision.escalate,
        "delivery": delivery,
        "text": decision.text,
        "strategy": decision.strategy,
        "instructions": _added_instructions(conversation, decision),
        "rules": _rules(guard, decision),
        "signals": [
            {
                "name": name,
                "side": spec.side,
                "kind": spec.kind,
                "description": spec.description,
                # None: not computed for this conversation (assistant signals before any response exists)
                "score": decision.signals.get(name),
                "threshold": thresholds[name],
                "base_threshold": base_thresholds[name],
                "tightened_to": decision.tightened.get(name) if decision.rail == "output" else None,
                "flagged": name in decision.flagged,
            }
            for name, spec in SIGNALS.items()
        ],
    }


def _added_instructions(conversation: Conversation, decision: Decision) -> list[str]:
    """The system messages a steer adds before the model is called."""
    if not decision.upstream_messages:
        return []
    original = {(m.role, m.content) for m in conversation.messages}
    return [
        m["content"]
        for m in decision.upstream_messages
        if m.get("role") == "system" and (m["role"], m["content"]) not in original
    ]


def _rules(guard: Guard, decision: Decision) -> list[dict[str, Any]]:
    table = criteria()
    by_rail: dict[str, dict[str, InputRule | OutputRule]] = {
        "input": {r.id: r for r in guard.policy.input_rules},
        "output": {r.id: r for r in guard.policy.output_rules},
    }
    rules = []
    # on the output rail, `decision.rules` lists the input rules that fired on the user turns first
    output_ids = set(by_rail["output"]) if decision.rail == "output" else set()
    for rule_id in decision.rules:
        rail = "output" if rule_id in output_ids else "input"
        rule = by_rail[rail].get(rule_id)
        if rule is None:
            continue
        criterion = table.get(rule.criterion, {})
        rules.append(
            {
                "id": rule.id,
                "rail": rail,
                "action": rule.action,
                "escalate": rule.escalate,
                "when": _condition_text(rule.when),
                "description": rule.description.strip(),
                "criterion": rule.criterion,
                "criterion_title": criterion.get("title", rule.criterion),
                "criterion_summary": criterion.get("summary", ""),
            }
        )
    return rules
