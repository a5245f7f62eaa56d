"""The starlette app, built once from a ServeConfig and frozen: routes never change after start-up."""

from __future__ import annotations

import asyncio
import contextlib

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Route

from . import routes
from .config import ServeConfig
from .models import error_response
from .state import ProxyState


def create_app(config: ServeConfig | None = None) -> Starlette:
    state = ProxyState.from_config(config or ServeConfig())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        state.start()
        loading = asyncio.create_task(state.load_models())
        try:
            yield
        finally:
            loading.cancel()
            state.stop()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", routes.chat_completions, methods=["POST"]),
            Route("/chat/completions", routes.chat_completions, methods=["POST"]),
            Route("/v1/models", routes.models, methods=["GET"]),
            Route("/healthz", routes.healthz, methods=["GET"]),
            Route("/metrics", routes.metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.state.couchguard = state
    return app


async def _http_error(request: Request, exc: Exception):
    """404, 405 and the like in OpenAI's error shape, like every other answer of the API."""
    assert isinstance(exc, HTTPException)  # registered for HTTPException only
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    return error_response(
        exc.status_code,
        f"{request.method} {request.url.path}: {exc.detail}",
        kind=kind,
        headers=dict(exc.headers or {}),
    )
