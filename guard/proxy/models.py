"""Request and answer shapes at the edge, in OpenAI's format."""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import JSONResponse

from classifiers.conversation import Conversation, ConversationError, parse_conversation

from ..upstream_params import ParamsError, UpstreamParams, upstream_params


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """A chat-completions request. The fields named here are couchguard's own; every other field is checked against
    the allow-list of `guard.upstream_params` by `upstream_params()`, so an unknown or out-of-range field is a 400
    that names it and never reaches litellm."""

    # extra="allow" only to collect the other fields for the allow-list, which names the offending one in its error
    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[Any]
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=1)  # one checked choice per request

    def upstream_params(self) -> UpstreamParams:
        """The client's fields for the upstream, validated; RequestError(400) names the first bad one."""
        try:
            return upstream_params(dict(self.model_extra or {}))
        except ParamsError as exc:
            raise RequestError(400, str(exc), param=exc.field, code="unsupported_parameter") from None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    @classmethod
    def from_body(cls, raw: Any) -> "ChatRequest":
        """A parsed JSON body as a chat request; RequestError(400) says what the client got wrong."""
        if not isinstance(raw, dict):
            raise RequestError(400, "request body must be a JSON object")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise RequestError.from_validation(exc) from None

    def conversation(self) -> Conversation:
        """The messages as the conversation the rails score; RequestError(400) names the bad message."""
        try:
            return parse_conversation(self.messages)
        except ConversationError as exc:
            raise RequestError(400, str(exc), param="messages") from None


class RequestError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param, self.kind = status, message, code, param, kind

    @classmethod
    def from_validation(cls, exc: ValidationError) -> "RequestError":
        # keep every error with its location, not a flat message: a client can act on `messages.1.content`
        parts = [f"{'.'.join(str(s) for s in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()]
        first = exc.errors()[0]["loc"] if exc.errors() else ()
        return cls(400, "; ".join(parts), param=".".join(str(s) for s in first) or None)

    def response(self) -> JSONResponse:
        return error_response(self.status, self.message, code=self.code, param=self.param, kind=self.kind)


def error_response(
    status: int,
    message: str,
    *,
    code: str | None = None,
    param: str | None = None,
    kind: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def completion_id() -> str:
    return f"chatcmpl-cg{uuid.uuid4().hex[:24]}"


def completion_body(
    *,
    id: str,
    model: str,
    text: str,
    finish_reason: str,
    guard_info: dict[str, Any],
    usage: dict[str, Any] | None = None,
    tool_calls: list | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "couchguard": guard_info,
    }


def guard_info(decision) -> dict[str, Any]:
    """The visible part of a decision: what happened and why, without scores or text."""
    contract = decision.contract()
    return {
        "rail": contract["rail"],
        "action": contract["action"],
        "rules": contract["rules"],
        "flagged": contract["flagged"],
    }


def decision_headers(decision) -> dict[str, str]:
    return {"x-couchguard-action": decision.action, "x-couchguard-rules": ",".join(decision.rules)}
