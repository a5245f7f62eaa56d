"""The starlette app, built once from a ServeConfig and frozen: routes never change after start-up."""

from __future__ import annotations

import asyncio
import contextlib

from starlette.applications import Starlette
from starlette.routing import Route

from . import routes
from .config import ServeConfig
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

    app = Starlette(routes=[
        Route("/v1/chat/completions", routes.chat_completions, methods=["POST"]),
        Route("/chat/completions", routes.chat_completions, methods=["POST"]),
        Route("/v1/models", routes.models, methods=["GET"]),
        Route("/healthz", routes.healthz, methods=["GET"]),
        Route("/metrics", routes.metrics, methods=["GET"]),
    ], lifespan=lifespan)
    app.state.couchguard = state
    return app
