"""Deciding: which rules of a policy fire on a set of signal scores, and which action wins."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from classifiers.signals import SIGNALS

from ..actions import severity
from .conditions import Condition
from .schema import InputRule, OutputRule, Policy

Rail = Literal["input", "output"]


@dataclass(frozen=True)
class Verdict:
    rail: Rail
    action: str
    matched: tuple[InputRule | OutputRule, ...]
    flagged: tuple[str, ...]
    escalate: bool
    # the scores the verdict was reached on; they order rules of equal specificity (rules_with)
    scores: Mapping[str, float] = field(default_factory=dict)

    def rules_with(self, action: str) -> list:
        """The matched rules with `action`, those about the user's own state first: the first one's template and
        instruction are what the user receives, so a rule that requires a crisis signal the user carries (suicide,
        self-harm) comes before one that requires another flagged user signal (mania, compulsion), which comes
        before a rule about the response alone. Within a group the rule whose user signal scores highest comes
        first (a fixed belief at 1.0 is answered as a belief, not as the voices scored 0.9 beside it); policy order
        decides the rest."""
        rules = [rule for rule in self.matched if rule.action == action]
        return sorted(rules, key=self._user_specificity)

    def _user_specificity(self, rule: InputRule | OutputRule) -> tuple[int, float]:
        required = {signal for signal, _, negated in rule.when.signals() if not negated and signal in self.flagged}
        users = [SIGNALS[signal] for signal in required if signal in SIGNALS and SIGNALS[signal].side == "user"]
        group = 0 if any(spec.crisis for spec in users) else (1 if users else 2)
        return group, -max((self.scores.get(spec.name, 0.0) for spec in users), default=0.0)


def holds(condition: Condition, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
    return condition.holds(scores, thresholds)


def effective_thresholds(
    policy: Policy, defaults: Mapping[str, float], tightened: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Model defaults, overridden by the policy, lowered (never raised) by input rules that tighten."""
    thresholds = {**defaults, **policy.thresholds}
    for signal, value in (tightened or {}).items():
        thresholds[signal] = min(thresholds.get(signal, 1.0), value)
    return thresholds


def evaluate(policy: Policy, rail: Rail, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> Verdict:
    rules = policy.input_rules if rail == "input" else policy.output_rules
    matched = tuple(rule for rule in rules if rule.when.holds(scores, thresholds))
    action = max((rule.action for rule in matched), key=lambda name: severity(rail, name), default="allow")
    flagged = tuple(name for name, score in scores.items() if score >= thresholds.get(name, 1.0))
    return Verdict(
        rail=rail,
        action=action,
        matched=matched,
        flagged=flagged,
        escalate=any(rule.escalate for rule in matched),
        scores=scores,
    )


def tightening(verdict: Verdict) -> dict[str, float]:
    tightened: dict[str, float] = {}
    for rule in verdict.matched:
        for signal, value in getattr(rule, "tighten", {}).items():
            tightened[signal] = min(value, tightened.get(signal, 1.0))
    return tightened
