"""The HTTP surface: POST /v1/chat/completions, GET /v1/models, /healthz and /metrics."""

from __future__ import annotations

import time
from typing import Any, AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from .body import read_json
from .completions import complete
from .exchange import Exchange
from .limits import Slot
from .models import ChatRequest, RequestError, completion_id, decision_headers, error_response
from .products import AccessError, Product
from .sse import ChunkWriter
from .state import ProxyState
from .streaming import StreamFailed, checked_stream
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
    try:
        product = state.products.resolve(_api_key(request))
    except AccessError as exc:
        return _access_error(state, "unknown", False, exc)
    # before the body is read: a refused request costs no parsing, no scoring and no upstream call
    slot = await state.limit.acquire()
    if slot is None:
        return _too_busy(state, product)
    try:
        response = await _chat_completion(request, state, product, slot)
    except BaseException:
        slot.release()
        raise
    if not isinstance(response, _HeldStream):
        slot.release()
    return response


async def _chat_completion(request: Request, state: ProxyState, product: Product, slot: Slot) -> Response:
    stream = False
    try:
        chat = ChatRequest.from_body(await read_json(request, state.config.max_body_bytes))
        stream = chat.stream
        params = chat.upstream_params()
        conversation = chat.conversation()
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
        return _access_error(state, product.name, stream, exc)
    except RequestError as exc:
        state.metrics.requests.labels(product.name, str(stream).lower(), str(exc.status)).inc()
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
    if not stream:
        response = await complete(exchange, state.metrics)
        # counted once the upstream has answered, with the status the client gets (an upstream error is not a 200)
        state.metrics.requests.labels(product.name, "false", str(response.status_code)).inc()
        return response
    # the input rail runs before the response starts, so its decision can be a header of the stream
    decision = await exchange.input_rail()
    writer = ChunkWriter(completion_id(), chat.model or upstream.model)
    body = checked_stream(
        exchange,
        state.metrics,
        writer,
        windows=state.config.stream,
        include_usage=chat.include_usage,
    )
    # the status line leaves with the first chunk: until that is ready, a failed upstream can still be answered
    # with its HTTP status (a 4xx relayed as documented, a 502/504 under fail-open) instead of a 200
    try:
        first = await body.__anext__()
    except StreamFailed as failed:
        await _close(body)
        error = failed.error
        state.metrics.requests.labels(product.name, "true", str(error.status or 502)).inc()
        return error_response(
            error.status or 502,
            error.message,
            code=failed.decision.strategy or "upstream_error",
            kind="upstream_error",
            headers={**decision_headers(failed.decision), "x-couchguard-input-action": decision.action},
        )
    except StopAsyncIteration:  # pragma: no cover - a checked stream always ends with its final chunk and [DONE]
        first = b""
    counted = _counted(first, body, state.metrics.requests.labels(product.name, "true", "200"))
    return _HeldStream(
        counted,
        slot,
        closing=(counted, body),
        media_type="text/event-stream",
        headers={"x-couchguard-input-action": decision.action, "cache-control": "no-cache"},
    )


def _access_error(state: ProxyState, product_name: str, stream: bool, exc: AccessError) -> Response:
    state.metrics.requests.labels(product_name, str(stream).lower(), str(exc.status)).inc()
    kind = (
        "authentication_error"
        if exc.status == 401
        else ("permission_error" if exc.status == 403 else "invalid_request_error")
    )
    return error_response(exc.status, exc.message, code=exc.code, kind=kind)


def _too_busy(state: ProxyState, product: Product) -> Response:
    """429 in OpenAI's shape: its clients retry it after Retry-After on their own."""
    limits = state.config.concurrency
    state.metrics.refused.labels(product.name).inc()
    # the body is not read, so whether the request was a stream is not known
    state.metrics.requests.labels(product.name, "unknown", "429").inc()
    return error_response(
        429,
        f"couchguard is answering its limit of {limits.max_in_flight} concurrent requests; "
        f"retry after {limits.retry_after_s} s",
        code="concurrency_limit_exceeded",
        kind="rate_limit_error",
        headers={"retry-after": str(limits.retry_after_s)},
    )


class _HeldStream(StreamingResponse):
    """A stream that holds its concurrency slot until it has ended, however it ends: completed, failed, or the
    client gone. Its body is closed here too, so a departed client's upstream read stops with it."""

    def __init__(
        self, body: AsyncIterator[bytes], slot: Slot, *, closing: tuple[AsyncIterator[bytes], ...], **kwargs: Any
    ) -> None:
        super().__init__(body, **kwargs)
        # the outer body and the checked stream it wraps: the outer one may never have started (a send that failed
        # at once), and closing an unstarted generator does not reach the one inside it
        self._closing, self._slot = closing, slot

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                for body in self._closing:
                    await _close(body)
            finally:
                self._slot.release()


async def _counted(first: bytes, body: AsyncIterator[bytes], requests: Any) -> AsyncIterator[bytes]:
    """A stream is counted once it has ended, not when its headers leave: until then the upstream has not answered."""
    try:
        if first:
            yield first
        async for chunk in body:
            yield chunk
        requests.inc()
    finally:
        await _close(body)


async def _close(body: AsyncIterator[bytes]) -> None:
    """Close an async generator now (its `finally` runs: the upstream reader is cancelled), not when collected."""
    aclose = getattr(body, "aclose", None)
    if aclose is not None:
        await aclose()


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
