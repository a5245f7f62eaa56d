"""Reading the request body under a size limit: 413 before a large body is ever held in memory."""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request

from .models import RequestError

# far deeper than any chat request (content parts, tool schemas) needs, far shallower than Python's recursion limit
MAX_DEPTH = 64


async def read_json(request: Request, limit: int) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(
            413, f"request body of {declared} bytes exceeds the limit of {limit} bytes", code="request_too_large"
        )
    body = bytearray()
    async for chunk in request.stream():  # a missing or false content-length is caught here
        body.extend(chunk)
        if len(body) > limit:
            raise RequestError(413, f"request body exceeds the limit of {limit} bytes", code="request_too_large")
    try:
        value = json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except ValueError as exc:  # JSON or UTF-8 errors, and numbers Python will not read (over 4,300 digits)
        raise RequestError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from None
    except RecursionError:
        raise RequestError(400, f"request body nests deeper than {MAX_DEPTH} levels", code="invalid_json") from None
    _check_shape(value)
    return value


def _check_shape(value: Any) -> None:
    """Depth and text checks in one iterative walk (no recursion for a hostile body to exhaust): nesting beyond
    MAX_DEPTH, and strings that are not valid Unicode (lone surrogates, which JSON escapes allow but UTF-8 cannot
    carry), are client errors that would otherwise fail later, deep in a library, as a 500."""
    stack: list[tuple[Any, str, int]] = [(value, "body", 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RequestError(400, f"request body nests deeper than {MAX_DEPTH} levels", code="invalid_json")
        if isinstance(item, str):
            _check_text(item, where)
        elif isinstance(item, dict):
            for key, child in item.items():
                _check_text(key, where)
                stack.append((child, f"{where}.{key}" if where != "body" else key, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError(
            400,
            f"{where}: text holds a lone surrogate (\\u{ord(text[_surrogate(text)]):04x}), which is not valid Unicode",
            code="invalid_text",
            param=where,
        ) from None


def _surrogate(text: str) -> int:
    return next(i for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF)


def _finite_float(text: str) -> float:
    # 1e400 is a JSON number, but Python reads it as infinity, which no JSON encoder writes back: a request carrying
    # it would fail on its way to the model (as an upstream fault) instead of being the client's error
    value = float(text)
    if math.isinf(value):
        raise RequestError(
            400, f"request body is not valid JSON: {text[:40]} is not a finite number", code="invalid_json"
        )
    return value


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity, which JSON does not: a client sending them gets a 400, not a model
    # call with a value no provider accepts
    raise RequestError(400, f"request body is not valid JSON: {name} is not a JSON number", code="invalid_json")
