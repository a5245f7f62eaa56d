"""Deciding: which rules of a policy fire on a set of signal scores, and which action wins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from .schema import (
    INPUT_SEVERITY,
    OUTPUT_SEVERITY,
    AllCondition,
    AnyCondition,
    Condition,
    InputRule,
    NotCondition,
    OutputRule,
    Policy,
    SignalCondition,
)

Rail = Literal["input", "output"]


@dataclass(frozen=True)
class Verdict:
    rail: Rail
    action: str
    matched: tuple[InputRule | OutputRule, ...]
    flagged: tuple[str, ...]
    escalate: bool

    @property
    def rule_ids(self) -> list[str]:
        return [rule.id for rule in self.matched]

    def rules_with(self, action: str) -> list:
        return [rule for rule in self.matched if rule.action == action]


def holds(condition: Condition, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
    if isinstance(condition, SignalCondition):
        if condition.signal not in scores:
            return False  # a signal not computed for this conversation (no response yet) cannot fire
        limit = condition.at_least if condition.at_least is not None else thresholds[condition.signal]
        return scores[condition.signal] >= limit
    if isinstance(condition, AllCondition):
        return all(holds(part, scores, thresholds) for part in condition.all)
    if isinstance(condition, AnyCondition):
        return any(holds(part, scores, thresholds) for part in condition.any)
    if isinstance(condition, NotCondition):
        return not holds(condition.not_, scores, thresholds)
    raise TypeError(f"unknown condition {condition!r}")


def effective_thresholds(policy: Policy, defaults: Mapping[str, float], tightened: Mapping[str, float] = {}) -> dict[str, float]:
    """Model defaults, overridden by the policy, lowered (never raised) by input rules that tighten."""
    thresholds = {**defaults, **policy.thresholds}
    for signal, value in tightened.items():
        thresholds[signal] = min(thresholds.get(signal, 1.0), value)
    return thresholds


def evaluate(policy: Policy, rail: Rail, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> Verdict:
    rules = policy.input_rules if rail == "input" else policy.output_rules
    severity = INPUT_SEVERITY if rail == "input" else OUTPUT_SEVERITY
    matched = tuple(rule for rule in rules if holds(rule.when, scores, thresholds))
    action = max((rule.action for rule in matched), key=severity.__getitem__, default="allow")
    flagged = tuple(name for name, score in scores.items() if score >= thresholds.get(name, 1.0))
    return Verdict(rail=rail, action=action, matched=matched, flagged=flagged,
                   escalate=any(rule.escalate for rule in matched))


def tightening(verdict: Verdict) -> dict[str, float]:
    tightened: dict[str, float] = {}
    for rule in verdict.matched:
        for signal, value in getattr(rule, "tighten", {}).items():
            tightened[signal] = min(value, tightened.get(signal, 1.0))
    return tightened
