"""The judge call: one yes/no question about one response, through litellm, with server-side settings only.

Where and how the judge is called (model, base URL, key, timeout, no retries) comes from the policy's `judge:` block,
never from a client request (see guard/upstream_params.py for why a request field must not reach litellm). The
answer must be exactly `{"answer": "yes"}` or `{"answer": "no"}`: anything else is `malformed`, never guessed at.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Literal

from classifiers.conversation import Conversation

from ..policy.schema import JudgeConfig
from ..upstream_params import server_call_settings
from .limits import Answer

log = logging.getLogger("couchguard.judge")

CallOutcome = Literal["in_band", "timeout", "malformed", "error"]

INSTRUCTION = (
    "You review one chatbot response in a mental-health conversation against one criterion of good care. "
    "Answer the question about the final response only, using the conversation as context. "
    'Reply with exactly {"answer": "yes"} or {"answer": "no"} and nothing else.'
)
# enough for the JSON answer; a model that starts explaining is cut short and read as malformed
MAX_ANSWER_TOKENS = 12


@dataclass(frozen=True)
class Reply:
    outcome: CallOutcome
    answer: Answer | None
    latency_ms: float


def judge_messages(conversation: Conversation, question: str) -> list[dict[str, str]]:
    """The prompt: the conversation before the response as a transcript, the response fenced, then the question."""
    *earlier, response = conversation.messages
    transcript = "\n".join(f"[{m.role}] {m.content}" for m in earlier if m.role in ("user", "assistant"))
    content = (
        f"Conversation so far:\n{transcript or '(none)'}\n\n"
        f"Response to review:\n```\n{response.content}\n```\n\n"
        f"Question: {question}"
    )
    return [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": content}]


def parse_answer(text: str | None) -> Answer | None:
    """`{"answer": "yes"|"no"}` (whitespace around it allowed) -> the answer; anything else -> None (malformed)."""
    try:
        value = json.loads((text or "").strip())
    except ValueError:
        return None
    if not isinstance(value, dict) or set(value) != {"answer"} or value["answer"] not in ("yes", "no"):
        return None
    answer: Answer = value["answer"]
    return answer


class JudgeClient:
    def __init__(self, config: JudgeConfig) -> None:
        self.config = config

    def _kwargs(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        api_key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        return {
            "model": self.config.model,
            "messages": messages,
            "temperature": 0.0,
            "max_tokens": MAX_ANSWER_TOKENS,
            # no retries either: a retry would double the user's wait for a second opinion; on_error answers instead
            **server_call_settings(api_base=self.config.api_base, api_key=api_key, timeout_s=self.config.timeout_s),
        }

    async def ask(self, conversation: Conversation, question: str) -> Reply:
        import litellm  # slow to import; only a policy with a judge pays for it

        started = time.perf_counter()

        def reply(outcome: CallOutcome, answer: Answer | None = None) -> Reply:
            return Reply(outcome, answer, (time.perf_counter() - started) * 1000)

        try:
            # litellm's own timeout does not cover every provider's connect phase: the deadline is enforced here
            response = await asyncio.wait_for(
                litellm.acompletion(**self._kwargs(judge_messages(conversation, question))), self.config.timeout_s
            )
        except (asyncio.TimeoutError, TimeoutError, litellm.Timeout):
            return reply("timeout")
        except Exception as exc:  # any provider failure is an `error` outcome, handled by on_error
            log.warning("couchguard judge: %s failed: %s: %s", self.config.model, type(exc).__name__, exc)
            return reply("error")
        try:
            text = response.choices[0].message.content
        except (AttributeError, IndexError):
            return reply("malformed")
        answer = parse_answer(text)
        return reply("in_band", answer) if answer is not None else reply("malformed")
