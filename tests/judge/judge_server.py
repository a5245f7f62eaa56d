"""A scripted LLM judge on loopback: an OpenAI-compatible server whose answers are fixed per question.

The requested model picks the behaviour, so one server plays every judge the tests need: `answer` (the scripted
answer for the question asked, `{"answer": "yes"|"no"}`), `slow` (the same after `delay_s`), `garbage` (prose
instead of the JSON answer) and `fail` (HTTP 500). It records every request it received.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.proxy.upstream_server import ServerThread, serving


class JudgeScript:
    def __init__(self) -> None:
        # question text -> "yes" | "no"; a question not listed is answered "no"
        self.answers: dict[str, str] = {}
        self.delay_s = 1.0
        self.requests: list[dict[str, Any]] = []

    def answer_for(self, prompt: str) -> str:
        question = prompt.rsplit("Question: ", 1)[-1].strip()
        return self.answers.get(question, "no")

    def questions_asked(self) -> list[str]:
        return [r["messages"][-1]["content"].rsplit("Question: ", 1)[-1].strip() for r in self.requests]


def build_app(script: JudgeScript) -> Starlette:
    async def completions(request: Request):
        body = await request.json()
        script.requests.append(body)
        mode = str(body.get("model", "answer"))
        if mode == "fail":
            return JSONResponse({"error": {"message": "scripted judge failure", "type": "server_error"}}, 500)
        if mode == "slow":
            await asyncio.sleep(script.delay_s)
        prompt = body["messages"][-1]["content"]
        content = (
            "Yes, I think it probably does." if mode == "garbage" else f'{{"answer": "{script.answer_for(prompt)}"}}'
        )
        return JSONResponse(
            {
                "id": "chatcmpl-judge",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": mode,
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


@contextlib.contextmanager
def judge_server() -> Iterator[ServerThread]:
    script = JudgeScript()
    with serving(build_app(script), script) as server:
        yield server
