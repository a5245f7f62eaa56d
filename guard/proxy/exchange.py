"""One request's passage through couchguard: rails, upstream and failures, shared by the stream and non-stream paths.

Rails run with the scores computed here so that classifier time is measured apart from rewrite time; CPU-bound
scoring runs in worker threads, never on the event loop.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import anyio

from classifiers.conversation import Conversation

from ..audit import Pseudonyms, conversation_hash
from ..decision import Decision, JudgeCall, Rail
from ..messages import as_dicts, with_response
from ..pipeline import Guard
from .failures import CLASSIFIER_ERROR, RELAYED_EVENTS, upstream_event
from .models import ChatRequest
from .products import Product
from .upstream import Upstream, UpstreamError

log = logging.getLogger("couchguard.proxy")


@dataclass
class Exchange:
    guard: Guard
    product: Product
    request: ChatRequest
    conversation: Conversation
    upstream: Upstream
    redactor: Any = None  # set when the policy redacts PII before the upstream call
    hash_key: bytes | None = None
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    input_decision: Decision | None = None
    pseudonyms: Pseudonyms = field(default_factory=Pseudonyms)
    # the judge tier's questions about a stream's windows, recorded with the stream's output decision
    window_judge_calls: list[JudgeCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conversation_hash = conversation_hash(as_dicts(self.conversation), self.hash_key)

    @property
    def locale(self) -> str:
        return self.product.locale or self.guard.locale

    def context(self, **extra: Any) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "product": self.product.name,
            "policy": self.guard.policy.name,
            "conversation_hash": self.conversation_hash,
            "stream": self.request.stream,
            "store_text": self.guard.policy.store_text,
            "rail_started": time.perf_counter(),
            **extra,
        }

    # -- input -----------------------------------------------------------------------------------------------------
    async def input_rail(self) -> Decision:
        context = self.context()
        try:
            started = time.perf_counter()
            scores = await self.guard.scores(self.conversation)
            context["classifier_ms"] = (time.perf_counter() - started) * 1000
            # on the loop: with the scores known, the policy and the observers (which only queue) take well under a
            # millisecond, less than a second hop to a worker thread costs on a busy machine
            decision = self.guard.input_rail(self.conversation, scores, locale=self.locale, context=context)
        except Exception:
            # classifier errors fail closed (the safe template) or open (the model is called unchecked)
            log.exception("couchguard: input rail failed for request %s", self.request_id)
            decision = self.fail("input", CLASSIFIER_ERROR, text=None, unchecked=True, context=context)
        self.input_decision = decision
        return decision

    @property
    def known_user_scores(self) -> dict[str, float] | None:
        """Once the input rail has run, its user-signal scores (the user turns a response answers do not change)."""
        return self.input_decision.signals if self.input_decision is not None else None

    def upstream_messages(self) -> list[dict]:
        raw = [dict(m) for m in self.request.messages]
        decision = self.input_decision
        steered = decision.upstream_messages if decision is not None else None
        if steered is not None:
            raw = _with_steering(raw, steered)
        if self.redactor is not None:
            raw = self.pseudonymize(raw)
        return raw

    async def messages_for_upstream(self) -> list[dict]:
        """`upstream_messages`, in a worker thread only when PII is masked (presidio is CPU-bound); else on the loop,
        where copying the messages costs less than the hop."""
        if self.redactor is None:
            return self.upstream_messages()
        return await anyio.to_thread.run_sync(self.upstream_messages)

    def pseudonymize(self, messages: list[dict]) -> list[dict]:
        texts = [m.get("content") if isinstance(m.get("content"), str) else "" for m in messages]
        masked = self.redactor.pseudonymize(texts, self.pseudonyms)
        return [{**m, "content": text} if isinstance(m.get("content"), str) else m for m, text in zip(messages, masked)]

    def restore(self, text: str) -> str:
        return self.pseudonyms.restore(text) if self.pseudonyms.originals else text

    # -- output ----------------------------------------------------------------------------------------------------
    async def regenerate(self, messages: list[dict]) -> str:
        """The rewrite hook: the same upstream, PII masked on the way out and restored on the way back."""
        if self.redactor is not None:
            messages = await anyio.to_thread.run_sync(self.pseudonymize, messages)
        return self.restore(await self.upstream.regenerate(messages))

    async def output_rail(self, text: str, *, upstream_ms: float | None = None) -> Decision:
        context = self.context(upstream_ms=upstream_ms)
        conversation: Conversation | None = None
        try:  # one boundary for the whole rail: any failure becomes a failure decision, audited
            conversation = with_response(self.conversation, text)
            started = time.perf_counter()
            scores = await self.guard.scores(conversation, self.known_user_scores)
            context["classifier_ms"] = (time.perf_counter() - started) * 1000
            return await self.guard.output_rail(
                conversation,
                regenerate=self.regenerate,
                scores=scores,
                locale=self.locale,
                context=context,
                window_judge_calls=self.window_judge_calls,
            )
        except Exception:
            log.exception("couchguard: output rail failed for request %s", self.request_id)
            return self.fail(
                "output", CLASSIFIER_ERROR, text=text, unchecked=True, context=context, conversation=conversation
            )

    async def window_allowed(self, text_so_far: str) -> bool:
        """A streamed window may be released when the response so far passes the output rules. The judge's
        questions about windows are kept for the stream's decision, so that its audit row and metrics hold them."""
        passes, calls = await self.guard.output_window(
            with_response(self.conversation, text_so_far), self.known_user_scores
        )
        self.window_judge_calls.extend(calls)
        return passes

    # -- failures --------------------------------------------------------------------------------------------------
    def upstream_failed(self, error: UpstreamError, upstream_ms: float | None = None) -> Decision:
        log.warning("couchguard: upstream %s for request %s: %s", error.kind, self.request_id, error.message)
        return self.fail(
            "output",
            upstream_event(error.kind),
            text=None,
            unchecked=False,
            context=self.context(upstream_ms=upstream_ms),
        )

    def fail(
        self,
        rail: Rail,
        event: str,
        *,
        text: str | None,
        unchecked: bool,
        context: dict[str, Any],
        conversation: Conversation | None = None,
    ) -> Decision:
        return self.guard.failure(
            rail,
            event,
            conversation or self.conversation,
            earlier=self.input_decision if rail == "output" else None,
            text=text,
            unchecked=unchecked,
            relayed=event in RELAYED_EVENTS,
            locale=self.locale,
            context=context,
        )


def _with_steering(raw: list[dict], steered: list[dict]) -> list[dict]:
    """Add the steering system message to the client's own messages, keeping their tool calls and content parts;
    fall back to the pipeline's text-only messages when the steer changed more than one insertion."""
    if len(steered) == len(raw) + 1:
        position = next((i for i, m in enumerate(raw) if m.get("role") not in ("system", "developer")), len(raw))
        if steered[position].get("role") == "system":
            return raw[:position] + [steered[position]] + raw[position:]
    return steered
