"""`Guard`: one pipeline for the library, `check`, `serve` and `bench`.

request -> input rail (scores -> policy -> input action) -> model -> output rail (scores -> policy -> output
action, rewrites re-checked) -> observers (audit, escalation, metrics).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import anyio

from classifiers.conversation import Conversation
from classifiers.scorer import SignalResult, SignalScorer, shared_scorer
from classifiers.signals import SIGNALS, Side

from .actions import Outcome, action_spec, annotate, delivers
from .decision import Decision, JudgeCall, Rail
from .judge import JudgeTier
from .messages import replacing_response
from .policy import Policy, Verdict, effective_thresholds, evaluate, load_policy, tightening
from .resources import render_template
from .rewriting import Attempt, Regenerate, Span, rewrite

if TYPE_CHECKING:
    from .batching import ScoreBatcher

Observer = Callable[[Conversation, Decision, dict[str, Any]], None]

log = logging.getLogger("couchguard")


class Guard:
    def __init__(
        self,
        policy: Policy,
        scorer: SignalScorer | None = None,
        *,
        locale: str | None = None,
        batcher: ScoreBatcher | None = None,
    ) -> None:
        self.policy = policy
        if scorer is None:
            scorer = shared_scorer()
        elif not scorer.loaded:
            scorer.load()
        self.scorer = scorer
        self.locale = locale or policy.locale
        self.observers: list[Observer] = []
        self._defaults = {name: self.scorer.default_threshold(name) for name in SIGNALS}
        # the proxy's micro-batcher (guard/batching.py): concurrent requests' scoring shares encoder passes
        self.batcher = batcher
        # the opt-in second opinion for the classifiers' uncertain band (docs/judge.md); None: classifiers alone
        self.judge = JudgeTier(policy.judge) if policy.judge is not None else None

    @classmethod
    def from_policy(cls, name_or_path: str | Path = "mental-health", **kwargs) -> "Guard":
        return cls(load_policy(name_or_path), **kwargs)

    # -- thresholds ------------------------------------------------------------------------------------------------
    def thresholds(self, tightened: dict[str, float] | None = None) -> dict[str, float]:
        return effective_thresholds(self.policy, self._defaults, tightened or {})

    @staticmethod
    def assistant_signals_in(rule) -> list[str]:
        """Assistant signals a rule requires present (those under `not` must be absent: removing text cannot help)."""
        return [
            signal for signal, _, negated in rule.when.signals() if not negated and SIGNALS[signal].side == "assistant"
        ]

    # -- scoring ---------------------------------------------------------------------------------------------------
    def score(self, conversation: Conversation, user_scores: dict[str, float] | None = None) -> dict[str, float]:
        """All signal scores. With `user_scores` (the input rail's, for the same user turns) only the response is
        scored: the user turns it answers have not changed."""
        results = self.scorer.score(conversation, _sides(user_scores), user_scores or None)
        return _merged(user_scores, results)

    async def scores(self, conversation: Conversation, user_scores: dict[str, float] | None = None) -> dict[str, float]:
        """`score` off the event loop (CPU-bound): batched with concurrent requests' when the guard has a batcher,
        else in a worker thread of its own."""
        if self.batcher is not None:
            results = await self.batcher.score(conversation, _sides(user_scores), user_scores or None)
            return _merged(user_scores, results)
        return await anyio.to_thread.run_sync(self.score, conversation, user_scores)

    def _verdicts(self, scores: dict[str, float], tightened_extra: dict[str, float] | None = None):
        user_scores = {k: v for k, v in scores.items() if SIGNALS[k].side == "user"}
        input_verdict = evaluate(self.policy, "input", user_scores, self.thresholds())
        tightened = {**tightening(input_verdict)}
        for signal, value in (tightened_extra or {}).items():
            tightened[signal] = min(value, tightened.get(signal, 1.0))
        output_verdict = evaluate(self.policy, "output", scores, self.thresholds(tightened))
        return input_verdict, output_verdict, tightened

    async def output_verdict(
        self,
        conversation: Conversation,
        tightened: dict[str, float],
        user_scores: dict[str, float] | None = None,
    ) -> Verdict:
        """The output verdict on classifier scores alone (the rewrite loop's recheck)."""
        scores = await self.scores(conversation, user_scores)
        _, verdict, _ = self._verdicts(scores, tightened)
        return verdict

    async def judged(
        self, conversation: Conversation, verdict: Verdict, scores: dict[str, float], tightened: dict[str, float]
    ) -> tuple[Verdict, list[JudgeCall]]:
        """The judge tier's second opinion on rules whose signals scored in its band; unchanged without a judge."""
        if self.judge is None:
            return verdict, []
        return await self.judge.review(
            conversation, verdict, self.policy.output_rules, scores, self.thresholds(tightened)
        )

    async def output_window(
        self, conversation: Conversation, user_scores: dict[str, float] | None = None
    ) -> tuple[bool, list[JudgeCall]]:
        """Whether the response ending `conversation` would be delivered as it stands (a streamed window), and the
        questions the judge tier was asked about it (only when a rule's signal scored in its band)."""
        scores = await self.scores(conversation, user_scores)
        _, verdict, effective = self._verdicts(scores)
        verdict, calls = await self.judged(conversation, verdict, scores, effective)
        return delivers(verdict.action), [call.model_copy(update={"scope": "window"}) for call in calls]

    async def output_passes(self, conversation: Conversation, user_scores: dict[str, float] | None = None) -> bool:
        """`output_window` without the judge's questions."""
        passes, _ = await self.output_window(conversation, user_scores)
        return passes

    # -- rails -----------------------------------------------------------------------------------------------------
    def input_rail(
        self,
        conversation: Conversation,
        scores: dict[str, float] | None = None,
        *,
        locale: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> Decision:
        """Decide before the model is called: allow, steer (with upstream_messages) or block (with text)."""
        if scores is None:
            scores = {n: r.score for n, r in self.scorer.score(conversation).items()}
        verdict = evaluate(self.policy, "input", scores, self.thresholds())
        outcome = _build(verdict, conversation, locale or self.locale)
        decision = self._decision(
            "input",
            verdict,
            scores,
            text=outcome.text,
            upstream_messages=outcome.upstream_messages,
            tightened=tightening(verdict),
        )
        return self.notify(conversation, decision, context)

    async def output_rail(
        self,
        conversation: Conversation,
        *,
        regenerate: Regenerate | None = None,
        scores: dict[str, float] | None = None,
        input_decision: Decision | None = None,
        locale: str | None = None,
        context: dict[str, Any] | None = None,
        window_judge_calls: list[JudgeCall] | None = None,
    ) -> Decision:
        """Decide what the user receives for the response that ends `conversation`.

        Pass the input rail's `input_decision` for the same user turns to reuse its user-signal scores instead of
        computing them again, and a stream's `window_judge_calls` (from `output_window`) to record them with it.
        """
        if conversation.last.role != "assistant":
            raise ValueError("the output rail needs a conversation that ends with an assistant response")
        if scores is None:
            scores = await self.scores(conversation, input_decision.signals if input_decision else None)
        input_verdict, verdict, tightened = self._verdicts(scores)
        verdict, judge_calls = await self.judged(conversation, verdict, scores, tightened)
        locale = locale or self.locale
        if action_spec("output", verdict.action).rewrites:
            user_scores = {k: v for k, v in scores.items() if SIGNALS[k].side == "user"}
            review = _Review(self, conversation, tightened, locale, user_scores)
            request_id = (context or {}).get("request_id")
            outcome = await _rewritten(review, verdict, conversation, locale, regenerate, request_id)
        else:
            outcome = _build(verdict, conversation, locale)
        # the input rail already ran on the user turns this answers: its findings (rules, escalation) apply
        decision = self._decision(
            "output",
            verdict,
            scores,
            text=outcome.text,
            tightened=tightened,
            earlier=input_verdict,
            strategy=outcome.strategy,
            attempts=outcome.attempts,
            judge=[*(window_judge_calls or []), *judge_calls],
        )
        return self.notify(conversation, decision, context)

    def failure(
        self,
        rail: Rail,
        event: str,
        conversation: Conversation,
        *,
        earlier: Decision | None,
        text: str | None,
        unchecked: bool,
        relayed: bool = False,
        locale: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> Decision:
        """The decision for a failure (a classifier error, an upstream fault), handed to the observers like any.

        fail-closed: `block` with a vetted safe text (the crisis template on a crisis path), never an unchecked
        partial. fail-open: `unchecked` when the model is called or its text delivered without a check, else `error`
        (the failure is surfaced). `relayed`: the model refused the request itself; its error is relayed as it is,
        not a guard decision. Never recorded as `allow`.
        """
        if self.policy.fail_mode == "closed":
            crisis = earlier is not None and any(SIGNALS[s].crisis for s in earlier.flagged if s in SIGNALS)
            action, rules = "block", ["fail-closed"]
            text = render_template("crisis_response" if crisis else "safe_fallback", locale or self.locale)
        else:
            action, rules = ("unchecked" if unchecked else "error"), ["fail-open"]
        if relayed:
            action, text = "error", None
        decision = Decision(
            rail=rail,
            action=action,
            rules=(earlier.rules if earlier else []) + rules,
            flagged=earlier.flagged if earlier else [],
            signals=earlier.signals if earlier else {},
            escalate=bool(earlier and earlier.escalate),
            text=text,
            strategy=f"failure:{event}",
        )
        return self.notify(conversation, decision, {**(context or {}), "event": event})

    def check(
        self, conversation: Conversation, scores: dict[str, float] | None = None, locale: str | None = None
    ) -> Decision:
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
    def _decision(
        self, rail: Rail, verdict: Verdict, scores: dict[str, float], *, earlier: Verdict | None = None, **fields: Any
    ) -> Decision:
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

    def notify(self, conversation: Conversation, decision: Decision, context: dict[str, Any] | None) -> Decision:
        """Hand a decision to every observer (audit, escalation, metrics)."""
        for observer in self.observers:
            observer(conversation, decision, context or {})
        return decision


def _sides(user_scores: dict[str, float] | None) -> tuple[Side, ...]:
    return ("assistant",) if user_scores else ("user", "assistant")


def _merged(user_scores: dict[str, float] | None, results: dict[str, SignalResult]) -> dict[str, float]:
    return {**(user_scores or {}), **{name: result.score for name, result in results.items()}}


def _build(verdict: Verdict, conversation: Conversation, locale: str) -> Outcome:
    build = action_spec(verdict.rail, verdict.action).build
    assert build is not None  # every action a rule can choose has a builder (register_action takes one)
    return build(conversation, verdict, locale)


async def _rewritten(
    review: "_Review",
    verdict: Verdict,
    conversation: Conversation,
    locale: str,
    regenerate: Regenerate | None,
    request_id: str | None,
) -> Outcome:
    """The rewrite loop's text, or the action's own outcome (its template) when no strategy produced one."""
    attempt = Attempt(conversation, verdict.rules_with(verdict.action), locale, regenerate, request_id=request_id)
    text, strategy, attempts = await rewrite(review, attempt)
    if text is None:
        fallback = _build(verdict, conversation, locale)
        return Outcome(text=fallback.text, strategy=fallback.strategy, attempts=attempts + fallback.attempts)
    return Outcome(text=text, strategy=strategy, attempts=attempts)


@dataclass
class _Review:
    """The rewrite loop's view of the guard for one response (guard/rewriting.py `Review`)."""

    guard: Guard
    conversation: Conversation  # the last message is the response under review
    tightened: dict[str, float]
    locale: str
    user_scores: dict[str, float]  # the user turns do not change during a rewrite: scored once

    @property
    def max_rewrites(self) -> int:
        return self.guard.policy.max_rewrites

    async def recheck(self, candidate: str) -> str | None:
        verdict = await self.guard.output_verdict(
            replacing_response(self.conversation, candidate), self.tightened, self.user_scores
        )
        return annotate(candidate, verdict, self.locale) if delivers(verdict.action) else None

    async def harmful_sentences(self, rules: list[Any]) -> list[tuple[Span, bool]] | None:
        harmful = {signal for rule in rules for signal in self.guard.assistant_signals_in(rule)}
        if not harmful:
            return None
        thresholds = self.guard.thresholds(self.tightened)
        sentences = await anyio.to_thread.run_sync(self.guard.scorer.sentence_scores, self.conversation)
        return [(span, any(scores[s] >= thresholds[s] for s in harmful)) for span, scores in sentences]
