"""The HTTP surface: POST /v1/chat/completions, GET /v1/models, /healthz and /metrics."""

from __future__ import annotations

import time
from typing import Any, AsyncIterator

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from classifiers.conversation import ConversationError, parse_conversation

from .body import read_json
from .completions import complete
from .exchange import Exchange
from .models import ChatRequest, RequestError, completion_id, error_response
from .products import AccessError
from .sse import ChunkWriter
from .state import ProxyState
from .streaming import checked_stream
from .upstream import Upstream

POLICY_HEADER = "x-couchguard-policy"


def _state(request: Request) -> ProxyState:
    return request.app.state.couchguard


def _api_key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return request.headers.get("api-key") or None  # Azure-style clients


async def chat_completions(request: Request) -> Response:
    state = _state(request)
    product_name, stream = "unknown", False
    try:
        product = state.products.resolve(_api_key(request))
        product_name = product.name
        raw = await read_json(request, state.config.max_body_bytes)
        if not isinstance(raw, dict):
            raise RequestError(400, "request body must be a JSON object")
        try:
            chat = ChatRequest.model_validate(raw)
        except ValidationError as exc:
            raise RequestError.from_validation(exc) from None
        stream = chat.stream
        params = chat.upstream_params()
        try:
            conversation = parse_conversation(chat.messages)
        except ConversationError as exc:
            raise RequestError(400, str(exc), param="messages") from None
        if not state.ready:
            raise RequestError(
                503,
                "couchguard is still loading its models"
                if state.load_error is None
                else f"couchguard failed to load: {state.load_error}",
                code="not_ready",
                kind="service_unavailable",
            )
        guard = state.products.guard_for(product, request.headers.get(POLICY_HEADER))
        upstream = Upstream(product.upstream, product.upstream_model(chat.model), params)
    except AccessError as exc:
        state.metrics.requests.labels(product_name, str(stream).lower(), str(exc.status)).inc()
        kind = (
            "authentication_error"
            if exc.status == 401
            else ("permission_error" if exc.status == 403 else "invalid_request_error")
        )
        return error_response(exc.status, exc.message, code=exc.code, kind=kind)
    except RequestError as exc:
        state.metrics.requests.labels(product_name, str(stream).lower(), str(exc.status)).inc()
        return exc.response()

    exchange = Exchange(
        guard=guard,
        product=product,
        request=chat,
        conversation=conversation,
        upstream=upstream,
        redactor=state.redactor if guard.policy.redact_upstream_pii else None,
        hash_key=state.hash_key,
    )
    requests = state.metrics.requests.labels(product_name, str(stream).lower(), "200")
    if not stream:
        response = await complete(exchange, state.metrics)
        # counted once the upstream has answered, with the status the client gets (an upstream error is not a 200)
        state.metrics.requests.labels(product_name, "false", str(response.status_code)).inc()
        return response
    # the input rail runs before the response starts, so its decision can be a header of the stream
    decision = await exchange.input_rail()
    writer = ChunkWriter(completion_id(), chat.model or upstream.model)
    body = _counted(
        checked_stream(
            exchange,
            state.metrics,
            writer,
            min_window_chars=state.config.stream.min_window_chars,
            include_usage=chat.include_usage,
        ),
        requests,
    )
    return StreamingResponse(
        body,
        media_type="text/event-stream",
        headers={"x-couchguard-input-action": decision.action, "cache-control": "no-cache"},
    )


async def _counted(body: AsyncIterator[bytes], requests: Any) -> AsyncIterator[bytes]:
    """A stream is counted once it has ended, not when its headers leave: until then the upstream has not answered."""
    async for chunk in body:
        yield chunk
    requests.inc()


async def models(request: Request) -> Response:
    state = _state(request)
    try:
        state.products.resolve(_api_key(request))
    except AccessError as exc:
        return error_response(exc.status, exc.message, code=exc.code, kind="authentication_error")
    created = int(time.time())
    data = [
        {"id": name, "object": "model", "created": created, "owned_by": "couchguard"}
        for name in state.products.model_names()
    ]
    return JSONResponse({"object": "list", "data": data})


async def healthz(request: Request) -> Response:
    state = _state(request)
    if state.ready:
        return JSONResponse({"status": "ok"})
    status = "failed" if state.load_error else "loading"
    return JSONResponse({"status": status, "error": state.load_error}, status_code=503)


async def metrics(request: Request) -> Response:
    state = _state(request)
    return Response(state.metrics.render(), media_type=state.metrics.content_type)
