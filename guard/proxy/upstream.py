"""The model behind couchguard, called through litellm (any provider it supports), with failures made explicit.

Every upstream problem becomes an `UpstreamError` with a `kind` the fail mode can act on; nothing here decides what
the user receives.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from ..upstream_params import UpstreamParams, server_call_settings
from .config import UpstreamConfig

log = logging.getLogger("couchguard.proxy")


class UpstreamError(Exception):
    """kind: timeout | unavailable (5xx, 429, connection) | cut (stream ended early) | rejected (other 4xx).

    `message` is what a client may be shown: it names the failure and the status only. The provider's own text
    (litellm's exception, which can hold the upstream URL, a masked key, provider internals) goes to the log."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.status = kind, message, status


# what a client is told when the upstream refuses its request, by the upstream's status
_REJECTED = {
    400: "the upstream model rejected the request as invalid",
    401: "the upstream model refused the server's credentials; the operator must check its upstream key",
    403: "the upstream model refused the server's credentials; the operator must check its upstream key",
    404: "the upstream model was not found",
    413: "the request is too large for the upstream model",
    422: "the upstream model could not process the request",
}


@dataclass
class Completion:
    text: str
    finish_reason: str = "stop"
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, Any] | None = None
    seconds: float = 0.0


@dataclass
class Delta:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


def _classify(exc: Exception) -> UpstreamError:
    import litellm

    if isinstance(exc, UpstreamError):
        return exc
    log.warning("couchguard: upstream call failed: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, (litellm.Timeout, asyncio.TimeoutError, TimeoutError)):
        return UpstreamError("timeout", "the upstream model did not answer in time", 504)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status not in (408, 429):
        if isinstance(exc, litellm.ContextWindowExceededError):
            message = "the conversation is longer than the upstream model's context window"
        elif isinstance(exc, litellm.ContentPolicyViolationError):
            message = "the upstream model's content policy refused the request"
        else:
            message = _REJECTED.get(status, "the upstream model rejected the request")
        return UpstreamError("rejected", f"{message} (HTTP {status})", status)
    if isinstance(status, int) and status >= 400:
        return UpstreamError("unavailable", f"the upstream model failed (HTTP {status})", 502)
    return UpstreamError("unavailable", "the upstream model could not be reached", 502)


class Upstream:
    """One upstream model with its settings. `params` are the client's fields, already allow-listed and validated
    (`guard.upstream_params`); where and how the call is made (base URL, key, timeout, retries) comes only from the
    server's `config`."""

    def __init__(self, config: UpstreamConfig, model: str, params: UpstreamParams | None = None) -> None:
        self.config, self.model = config, model
        self.params = (params or UpstreamParams()).forwarded()

    def _kwargs(self, messages: list[dict], stream: bool, params: dict[str, Any]) -> dict[str, Any]:
        # the client's fields first: every server setting below is written after them and wins
        kwargs: dict[str, Any] = {
            **params,
            "model": self.model,
            "messages": messages,
            "stream": stream,
            **server_call_settings(
                api_base=self.config.api_base, api_key=self.config.api_key(), timeout_s=self.config.timeout_s
            ),
        }
        if stream:
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def complete(self, messages: list[dict], *, for_rewrite: bool = False) -> Completion:
        import litellm

        # a rewrite needs text: tools would let the model answer with a call instead
        params = {k: v for k, v in self.params.items() if not (for_rewrite and k in ("tools", "tool_choice"))}
        started = time.perf_counter()
        try:
            response = await litellm.acompletion(**self._kwargs(messages, False, params))
        except Exception as exc:
            raise _classify(exc) from exc
        if not getattr(response, "choices", None):
            raise UpstreamError("unavailable", "upstream answered without any choice", 502)
        choice = response.choices[0]
        calls = getattr(choice.message, "tool_calls", None)
        usage = getattr(response, "usage", None)
        return Completion(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason or "stop",
            tool_calls=[c.model_dump() for c in calls] if calls else None,
            usage=usage.model_dump() if usage is not None else None,
            seconds=time.perf_counter() - started,
        )

    async def regenerate(self, messages: list[dict]) -> str:
        """The rewrite hook handed to the output rail."""
        return (await self.complete(messages, for_rewrite=True)).text

    async def stream(self, messages: list[dict]) -> AsyncIterator[Delta]:
        """Deltas as the model produces them; raises UpstreamError(kind='cut') when the stream ends early."""
        import litellm

        try:
            response = await litellm.acompletion(**self._kwargs(messages, True, self.params))
        except Exception as exc:
            raise _classify(exc) from exc
        iterator = response.__aiter__()
        finished = False
        while True:
            try:
                # a stream that goes quiet is as good as cut: the user must not wait on it forever
                chunk = await asyncio.wait_for(iterator.__anext__(), self.config.stream_idle_timeout_s)
            except StopAsyncIteration:
                break
            except Exception as exc:
                error = _classify(exc)
                if error.kind == "rejected":
                    raise error from exc
                raise UpstreamError("cut", "the upstream model's stream was cut or went silent", 502) from exc
            delta = Delta(usage=_usage(chunk))
            if chunk.choices:
                choice = chunk.choices[0]
                delta.text = getattr(choice.delta, "content", None) or ""
                calls = getattr(choice.delta, "tool_calls", None)
                delta.tool_calls = [c.model_dump() for c in calls] if calls else []
                delta.finish_reason = choice.finish_reason
                finished = finished or bool(choice.finish_reason)
            yield delta
        if not finished:
            raise UpstreamError("cut", "upstream stream ended without a finish reason", 502)


def _usage(chunk: Any) -> dict[str, Any] | None:
    usage = getattr(chunk, "usage", None)
    return usage.model_dump() if usage is not None and hasattr(usage, "model_dump") else None
