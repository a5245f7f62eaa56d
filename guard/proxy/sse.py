"""Server-sent events in OpenAI's chat.completion.chunk format."""

from __future__ import annotations

import json
import time
from typing import Any

DONE = b"data: [DONE]\n\n"


class ChunkWriter:
    """Encodes the chunks of one streamed completion (same id, model and creation time on every chunk)."""

    def __init__(self, id: str, model: str) -> None:
        self.id, self.model, self.created = id, model, int(time.time())
        self._role_sent = False

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
            **extra,
        }
        return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"

    def content(self, text: str) -> bytes:
        delta: dict[str, Any] = {"content": text}
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        return self._chunk(delta)

    def tool_calls(self, calls: list[dict[str, Any]]) -> bytes:
        return self._chunk({"tool_calls": calls})

    def final(self, finish_reason: str, guard_info: dict[str, Any], usage: dict[str, Any] | None = None) -> bytes:
        extra: dict[str, Any] = {"couchguard": guard_info}
        if usage:
            extra["usage"] = usage
        return self._chunk({}, finish_reason, **extra)

    @staticmethod
    def error(message: str, code: str) -> bytes:
        body = {"error": {"message": message, "type": "upstream_error", "param": None, "code": code}}
        return b"data: " + json.dumps(body).encode() + b"\n\n"
