"""Reading the request body under a size limit: 413 before a large body is ever held in memory."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from .models import RequestError


async def read_json(request: Request, limit: int) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"request body of {declared} bytes exceeds the limit of {limit} bytes",
                           code="request_too_large")
    body = bytearray()
    async for chunk in request.stream():  # a missing or false content-length is caught here
        body.extend(chunk)
        if len(body) > limit:
            raise RequestError(413, f"request body exceeds the limit of {limit} bytes", code="request_too_large")
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from None


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity, which JSON does not: a client sending them gets a 400, not a model
    # call with a value no provider accepts
    raise RequestError(400, f"request body is not valid JSON: {name} is not a JSON number", code="invalid_json")
