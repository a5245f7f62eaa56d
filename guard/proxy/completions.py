"""The non-streamed answer: input rail, upstream, output rail, one JSON body with the decision visible."""

from __future__ import annotations

import time

from starlette.responses import JSONResponse, Response

from ..actions import delivers
from ..decision import Decision
from .exchange import Exchange
from .metrics import Metrics
from .models import completion_body, completion_id, decision_headers, error_response, guard_info
from .upstream import UpstreamError


def _answer(
    ex: Exchange, decision: Decision, text: str, *, finish: str = "stop", usage=None, tool_calls=None
) -> JSONResponse:
    body = completion_body(
        id=completion_id(),
        model=ex.request.model or ex.upstream.model,
        text=text,
        finish_reason=finish,
        guard_info=guard_info(decision),
        usage=usage,
        tool_calls=tool_calls,
    )
    return JSONResponse(body, headers=decision_headers(decision))


async def complete(ex: Exchange, metrics: Metrics) -> Response:
    decision = await ex.input_rail()
    if not delivers(decision.action, "input"):  # answered by the guard: the model is not called
        return _answer(ex, decision, decision.text or "")
    messages = await ex.messages_for_upstream()
    started = time.perf_counter()
    try:
        completion = await ex.upstream.complete(messages)
    except UpstreamError as error:
        upstream_ms = (time.perf_counter() - started) * 1000
        failure = ex.upstream_failed(error, upstream_ms)
        if failure.action == "block":
            return _answer(ex, failure, failure.text or "")
        return error_response(
            error.status or 502,
            error.message,
            code=failure.strategy,
            kind="upstream_error",
            headers=decision_headers(failure),
        )
    metrics.upstream_seconds.labels("false").observe(completion.seconds)
    text = ex.restore(completion.text)
    if not text.strip() and completion.tool_calls:
        # a pure tool call carries no text for the user: the input decision is what applies
        return _answer(
            ex, decision, "", finish=completion.finish_reason, usage=completion.usage, tool_calls=completion.tool_calls
        )
    out = await ex.output_rail(text, upstream_ms=completion.seconds * 1000)
    delivered = delivers(out.action)
    return _answer(
        ex,
        out,
        out.text or "",
        finish=completion.finish_reason if delivered else "stop",
        usage=completion.usage,
        tool_calls=completion.tool_calls if delivered else None,
    )
