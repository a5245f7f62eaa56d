"""The playground's starlette app: the page, its static assets and a small JSON API.

Every decision comes from `Guard` on scores computed once per conversation; thresholds from the page are laid over
the policy the way an override file's `thresholds:` are. Bad input is a 400 with `{"error": message}`, which the page
shows as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from classifiers.conversation import ConversationError, parse_conversation
from classifiers.scorer import ArtifactError, SignalScorer, shared_scorer
from classifiers.signals import SIGNALS

from ..pipeline import Guard
from . import deciding, export, moore, vignettes
from .errors import BadRequest
from .policies import PolicyBook, with_thresholds
from .schema import DecideRequest, ExportRequest, MooreRequest, parse
from .scores import ScoreCache

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY = 2_000_000  # bytes: a long conversation is tens of kilobytes


class Playground:
    """What the app keeps between requests: the policies, the scorer, cached scores and the Moore set."""

    def __init__(
        self, policy: str, scorer: SignalScorer | None, moore_limit: int | None, cache_dir: Path | None
    ) -> None:
        self.policies = PolicyBook(policy)
        self._scorer = scorer
        self.scores = ScoreCache()
        self.moore = moore.MooreScores(self.scorer, limit=moore_limit, cache_dir=cache_dir)

    def scorer(self) -> SignalScorer:
        if self._scorer is None:
            self._scorer = shared_scorer()
        elif not self._scorer.loaded:
            self._scorer.load()
        return self._scorer

    async def guards(self, name: str | None, thresholds: dict[str, float]) -> tuple[Guard, Guard]:
        """(the policy with the page's thresholds, the policy as shipped), on the shared scorer."""
        base = self.policies.get(name)
        scorer = await anyio.to_thread.run_sync(self.scorer)  # loading the encoder takes seconds, once
        return Guard(with_thresholds(base, thresholds), scorer), Guard(base, scorer)


def create_app(
    policy: str = "mental-health",
    *,
    scorer: SignalScorer | None = None,
    moore_limit: int | None = None,
    cache_dir: Path | None = None,
) -> Starlette:
    """`moore_limit`: score an evenly spaced sample of that many Moore responses instead of all 1,880 (tests)."""
    state = Playground(policy, scorer, moore_limit, cache_dir)

    async def index(request: Request):
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def policies(request: Request):
        return JSONResponse({"default": state.policies.default, "names": state.policies.names})

    async def policy_view(request: Request):
        guard, _ = await state.guards(request.query_params.get("name"), {})
        thresholds = guard.thresholds()
        return JSONResponse(
            {
                "name": guard.policy.name,
                "description": guard.policy.description.strip(),
                "observe_only": guard.policy.observe_only,
                "signals": [
                    {
                        "name": name,
                        "side": spec.side,
                        "kind": spec.kind,
                        "description": spec.description,
                        "threshold": thresholds[name],
                    }
                    for name, spec in SIGNALS.items()
                ],
            }
        )

    async def vignette_list(request: Request):
        return JSONResponse(await anyio.to_thread.run_sync(vignettes.catalogue))

    async def moore_response(request: Request):
        return JSONResponse(vignettes.moore_response(request.path_params["row"]))

    async def decide(request: Request):
        body = parse(DecideRequest, await _json(request))
        conversation = parse_conversation(body.messages)
        guard, base = await state.guards(body.policy, body.thresholds)
        key, scores, cached = await anyio.to_thread.run_sync(state.scores.scores, guard.scorer, conversation)
        decision = await deciding.decide(guard, conversation, scores)
        return JSONResponse(
            {
                "policy": guard.policy.name,
                "conversation_hash": key,
                "cached_scores": cached,
                **deciding.view(guard, base, conversation, decision),
            }
        )

    async def moore_stats(request: Request):
        body = parse(MooreRequest, await _json(request))
        guard, base = await state.guards(body.policy, body.thresholds)
        state.moore.start()
        result: dict[str, Any] = {"status": state.moore.status()}
        if state.moore.state == "ready":
            result["stats"] = await anyio.to_thread.run_sync(moore.compare, guard, base, state.moore.items)
        return JSONResponse(result)

    async def export_override(request: Request):
        body = parse(ExportRequest, await _json(request))
        guard, base = await state.guards(body.policy, body.thresholds)
        thresholds = export.changed(guard.thresholds(), base.thresholds())
        base_name = base.policy.name
        name = body.name or f"{base_name}-playground"
        text = await anyio.to_thread.run_sync(
            lambda: export.override_yaml(
                base_name=base_name,
                extends=state.policies.extends_reference(body.policy or state.policies.default),
                thresholds=thresholds,
                name=name,
            )
        )
        return JSONResponse({"yaml": text, "filename": export.filename(name), "thresholds": thresholds})

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/api/policies", policies, methods=["GET"]),
        Route("/api/policy", policy_view, methods=["GET"]),
        Route("/api/vignettes", vignette_list, methods=["GET"]),
        Route("/api/vignettes/moore/{row:int}", moore_response, methods=["GET"]),
        Route("/api/decide", decide, methods=["POST"]),
        Route("/api/moore", moore_stats, methods=["POST"]),
        Route("/api/export", export_override, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            BadRequest: _bad_request,
            ConversationError: _bad_request,
            HTTPException: _http_error,
            ArtifactError: _unavailable,
            Exception: _internal,
        },
    )
    app.state.playground = state
    return app


async def _json(request: Request) -> Any:
    body = await request.body()
    if len(body) > MAX_BODY:
        raise BadRequest(f"the request is {len(body):,} bytes; the playground takes at most {MAX_BODY:,}")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not valid JSON: {exc}") from None


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=400)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, HTTPException):  # registered for HTTPException only; starlette types handlers by Exception
        return await _internal(request, exc)
    return JSONResponse(
        {"error": f"{request.method} {request.url.path}: {exc.detail}"},
        status_code=exc.status_code,
        headers=dict(exc.headers or {}),
    )


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    """The classifiers cannot load (e.g. a signal without a trained head): say so in the page, not as a bare 500."""
    return JSONResponse({"error": f"the classifiers cannot load: {exc}"}, status_code=503)


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": f"internal error ({type(exc).__name__}): {exc}"}, status_code=500)
