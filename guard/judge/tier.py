"""Deciding with the judge tier: which output rules go to the judge, one question per criterion, and the verdict
once the answers are in.

A rule goes to the judge when a signal it requires present (an assistant signal not under `not`) scored inside the
judge band for that signal. The answer replaces the classifier's for those signals in that rule: yes -> they hold
(the rest of the condition still has to hold, e.g. "the user is at risk"), no -> they do not. Rules of the same
criterion share one question, so one call answers them all. Out of band, nothing is asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from classifiers.conversation import Conversation
from classifiers.signals import SIGNALS

from ..actions import severity
from ..decision import JudgeCall
from ..policy import Verdict
from ..policy.schema import JudgeConfig, OutputRule
from .client import JudgeClient, Reply
from .limits import Answer, AnswerCache, CallBudget
from .questions import question_for


def in_band_signals(rule: OutputRule, scores: Mapping[str, float], config: JudgeConfig) -> dict[str, float]:
    """The signals a rule requires present whose scores fall in their judge band (inclusive)."""
    found: dict[str, float] = {}
    for signal, _, negated in rule.when.signals():
        if negated or signal not in scores or SIGNALS[signal].side != "assistant":
            continue
        band = config.band_for(signal)
        if band is not None and band[0] <= scores[signal] <= band[1]:
            found[signal] = scores[signal]
    return found


def _answer_matters(
    rule: OutputRule, signals: Mapping[str, float], scores: Mapping[str, float], thresholds: Mapping[str, float]
) -> bool:
    """Whether yes and no would decide the rule differently: not when the rest of its condition fails anyway (means
    given to a user not at risk, for a rule about users at risk), nor when another part makes it hold regardless."""
    fires_on_yes = rule.when.holds({**scores, **dict.fromkeys(signals, 1.0)}, thresholds)
    fires_on_no = rule.when.holds({**scores, **dict.fromkeys(signals, 0.0)}, thresholds)
    return fires_on_yes != fires_on_no


@dataclass
class _Question:
    criterion: str
    text: str
    rules: list[OutputRule] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)


class JudgeTier:
    """One per `Guard` (so per product and policy): its cache and budget are shared by every conversation it sees."""

    def __init__(
        self,
        config: JudgeConfig,
        client: JudgeClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.client = client or JudgeClient(config)
        self.cache = AnswerCache(config.cache_size)
        self.budget = CallBudget(config.max_calls_per_minute, clock)

    def questions(
        self, rules: Iterable[OutputRule], scores: Mapping[str, float], thresholds: Mapping[str, float]
    ) -> list[_Question]:
        """What to ask: one question per criterion, for the rules whose outcome the answer can change."""
        grouped: dict[str, _Question] = {}
        for rule in rules:
            signals = in_band_signals(rule, scores, self.config)
            if not signals or not _answer_matters(rule, signals, scores, thresholds):
                continue
            question = grouped.setdefault(rule.criterion, _Question(rule.criterion, question_for(rule.criterion)))
            question.rules.append(rule)
            question.signals.update(signals)
        return list(grouped.values())

    async def review(
        self,
        conversation: Conversation,
        verdict: Verdict,
        rules: list[OutputRule],
        scores: Mapping[str, float],
        thresholds: Mapping[str, float],
    ) -> tuple[Verdict, list[JudgeCall]]:
        """The output verdict with the judge's answers in place of the classifiers' for in-band signals, and what
        was asked. No rule in band: the classifiers' verdict unchanged and no call."""
        questions = self.questions(rules, scores, thresholds)
        if not questions:
            return verdict, []
        calls = list(await asyncio.gather(*(self._ask(conversation, q) for q in questions)))
        overrides: dict[str, dict[str, float]] = {}  # rule id -> signal scores that replace the classifiers'
        for question, call in zip(questions, calls):
            holds = call.answer == "yes" if call.answer is not None else self._holds_without_answer()
            if holds is None:
                continue  # on_error classifier: the classifiers' verdict stands for these rules
            for rule in question.rules:
                in_band = in_band_signals(rule, scores, self.config)
                overrides[rule.id] = {signal: 1.0 if holds else 0.0 for signal in in_band}

        def fires(rule: OutputRule) -> bool:
            if rule.id not in overrides:
                return rule in verdict.matched
            return rule.when.holds({**scores, **overrides[rule.id]}, thresholds)

        matched = tuple(rule for rule in rules if fires(rule))
        judged = Verdict(
            rail=verdict.rail,
            action=max((r.action for r in matched), key=lambda name: severity("output", name), default="allow"),
            matched=matched,
            flagged=verdict.flagged,
            escalate=any(rule.escalate for rule in matched),
            scores=verdict.scores,
        )
        return judged, calls

    def _holds_without_answer(self) -> bool | None:
        # fail_closed: with no second opinion the uncertain harm is taken to hold; classifier: no override
        return True if self.config.on_error == "fail_closed" else None

    def _key(self, conversation: Conversation, question: str) -> str:
        canonical = json.dumps(
            [self.config.model, question, [[m.role, m.content] for m in conversation.messages]], ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode()).hexdigest()

    async def _ask(self, conversation: Conversation, question: _Question) -> JudgeCall:
        key = self._key(conversation, question.text)
        cached = self.cache.get(key)
        if cached is not None:
            return self._record(question, Reply("in_band", cached, 0.0), "cache_hit")
        if not self.budget.take():
            return self._record(question, Reply("error", None, 0.0), "budget_exhausted")
        reply = await self.client.ask(conversation, question.text)
        if reply.answer is not None:
            self.cache.put(key, reply.answer)
        return self._record(question, reply, reply.outcome)

    def _record(self, question: _Question, reply: Reply, outcome: str) -> JudgeCall:
        answer: Answer | None = reply.answer
        return JudgeCall.model_validate(
            {
                "criterion": question.criterion,
                "question": question.text,
                "rules": [rule.id for rule in question.rules],
                "signals": {s: round(v, 4) for s, v in question.signals.items()},
                "outcome": outcome,
                "answer": answer,
                "latency_ms": round(reply.latency_ms, 1),
                "model": self.config.model,
                "fallback": None if answer is not None else self.config.on_error,
            }
        )
