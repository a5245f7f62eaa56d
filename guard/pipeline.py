"""`Guard`: one pipeline for the library, `check`, `serve` and `bench`.

request -> input rail (scores -> policy -> input action) -> model -> output rail (scores -> policy -> output
action, rewrites re-checked) -> observers (audit, escalation, metrics).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

import anyio

from classifiers.conversation import Conversation, parse_conversation
from classifiers.scorer import SignalScorer, shared_scorer
from classifiers.signals import SIGNALS

from .actions import INPUT_ACTIONS, OUTPUT_ACTIONS, OutputContext, Regenerate
from .decision import Decision
from .policy import Policy, Verdict, effective_thresholds, evaluate, load_policy, tightening
from .policy.schema import condition_signals

Observer = Callable[[Conversation, Decision, dict[str, Any]], None]


class Guard:
    def __init__(self, policy: Policy, scorer: SignalScorer | None = None, *, locale: str | None = None) -> None:
        self.policy = policy
        if scorer is None:
            scorer = shared_scorer()
        elif not scorer.loaded:
            scorer.load()
        self.scorer = scorer
        self.locale = locale or policy.locale
        self.observers: list[Observer] = []
        self._defaults = {name: self.scorer.default_threshold(name) for name in SIGNALS}

    @classmethod
    def from_policy(cls, name_or_path: str | Path = "mental-health", **kwargs) -> "Guard":
        return cls(load_policy(name_or_path), **kwargs)

    # -- thresholds ------------------------------------------------------------------------------------------------
    def thresholds(self, tightened: dict[str, float] | None = None) -> dict[str, float]:
        return effective_thresholds(self.policy, self._defaults, tightened or {})

    @staticmethod
    def assistant_signals_in(rule) -> list[str]:
        """Assistant signals a rule requires present (those under `not` must be absent: removing text cannot help)."""
        return [signal for signal, _, negated in condition_signals(rule.when)
                if not negated and SIGNALS[signal].side == "assistant"]

    # -- scoring (CPU-bound: off the event loop) -------------------------------------------------------------------
    async def _scores(self, conversation: Conversation, user_scores: dict[str, float] | None = None) -> dict[str, float]:
        """All signal scores; with `user_scores` (from the input rail) only the assistant side is computed."""
        sides = ("assistant",) if user_scores is not None else ("user", "assistant")
        results = await anyio.to_thread.run_sync(self.scorer.score, conversation, sides, user_scores)
        return {**(user_scores or {}), **{name: result.score for name, result in results.items()}}

    async def sentence_scores(self, conversation: Conversation):
        return await anyio.to_thread.run_sync(self.scorer.sentence_scores, conversation)

    def _verdicts(self, scores: dict[str, float], tightened_extra: dict[str, float] | None = None):
        user_scores = {k: v for k, v in scores.items() if SIGNALS[k].side == "user"}
        input_verdict = evaluate(self.policy, "input", user_scores, self.thresholds())
        tightened = {**tightening(input_verdict)}
        for signal, value in (tightened_extra or {}).items():
            tightened[signal] = min(value, tightened.get(signal, 1.0))
        output_verdict = evaluate(self.policy, "output", scores, self.thresholds(tightened))
        return input_verdict, output_verdict, tightened

    async def output_verdict(self, messages: list[dict], tightened: dict[str, float],
                             user_scores: dict[str, float] | None = None) -> Verdict:
        conversation = parse_conversation(messages)
        _, verdict, _ = self._verdicts(await self._scores(conversation, user_scores), tightened)
        return verdict

    # -- rails -----------------------------------------------------------------------------------------------------
    def input_rail(self, conversation: Conversation, scores: dict[str, float] | None = None, *,
                   locale: str | None = None, context: dict[str, Any] | None = None) -> Decision:
        """Decide before the model is called: allow, steer (with upstream_messages) or block (with text)."""
        if scores is None:
            scores = {n: r.score for n, r in self.scorer.score(conversation).items()}
        verdict = evaluate(self.policy, "input", scores, self.thresholds())
        outcome = INPUT_ACTIONS[verdict.action](conversation, verdict, locale or self.locale)
        decision = self._decision("input", verdict, scores, text=outcome.text,
                                  upstream_messages=outcome.upstream_messages, tightened=tightening(verdict))
        return self._notify(conversation, decision, context)

    async def output_rail(self, conversation: Conversation, *, regenerate: Regenerate | None = None,
                          scores: dict[str, float] | None = None, input_decision: Decision | None = None,
                          locale: str | None = None, context: dict[str, Any] | None = None) -> Decision:
        """Decide what the user receives for the response that ends `conversation`.

        Pass the input rail's `input_decision` for the same user turns to reuse its user-signal scores instead of
        computing them again.
        """
        if conversation.last.role != "assistant":
            raise ValueError("the output rail needs a conversation that ends with an assistant response")
        if scores is None:
            scores = await self._scores(conversation, input_decision.signals if input_decision else None)
        input_verdict, verdict, tightened = self._verdicts(scores)
        outcome = await OUTPUT_ACTIONS[verdict.action](OutputContext(
            guard=self, conversation=conversation, verdict=verdict, tightened=tightened,
            locale=locale or self.locale, regenerate=regenerate,
            user_scores={k: v for k, v in scores.items() if SIGNALS[k].side == "user"}))
        # the input rail already ran on the user turns this answers: its findings (rules, escalation) apply
        decision = self._decision("output", verdict, scores, text=outcome.text, tightened=tightened,
                                  earlier=input_verdict, strategy=outcome.strategy, attempts=outcome.attempts)
        return self._notify(conversation, decision, context)

    def check(self, conversation: Conversation, scores: dict[str, float] | None = None,
              locale: str | None = None) -> Decision:
        """The rail the conversation calls for: output when it ends with a response, else input. No upstream.

        Synchronous, for scripts and batch jobs; inside an event loop, await `output_rail` instead.
        """
        if conversation.last.role == "assistant":
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(self.output_rail(conversation, scores=scores, locale=locale))
            raise RuntimeError("Guard.check runs its own event loop: inside async code, await Guard.output_rail")
        return self.input_rail(conversation, scores, locale=locale)

    def check_many(self, conversations: list[Conversation]) -> list[Decision]:
        """Batched `check`: texts of the whole batch are encoded together."""
        batch = self.scorer.score_many(conversations)
        return [self.check(c, {n: r.score for n, r in s.items()}) for c, s in zip(conversations, batch)]

    # -- helpers ---------------------------------------------------------------------------------------------------
    def _decision(self, rail: str, verdict: Verdict, scores: dict[str, float], *, earlier: Verdict | None = None,
                  **fields: Any) -> Decision:
        matched = (earlier.matched if earlier else ()) + verdict.matched
        return Decision(
            rail=rail,
            action=verdict.action,
            rules=[rule.id for rule in matched],
            criteria=list(dict.fromkeys(rule.criterion for rule in matched)),
            flagged=[name for name in SIGNALS if name in verdict.flagged or (earlier and name in earlier.flagged)],
            signals=dict(scores),
            escalate=verdict.escalate or bool(earlier and earlier.escalate),
            **fields,
        )

    def _notify(self, conversation: Conversation, decision: Decision, context: dict[str, Any] | None) -> Decision:
        for observer in self.observers:
            observer(conversation, decision, context or {})
        return decision

