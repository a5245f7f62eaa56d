"""Properties of the request parser (no model, no server): any body either parses to a valid request or raises the
typed client error that becomes a 400 (or 413) in OpenAI's shape; never another exception, which would be a 500.

The steps are the route's (guard/proxy/routes.py): the body read under its limit and checked (guard/proxy/body.py),
the chat request, the allow-listed upstream fields (guard/upstream_params.py) and the conversation.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from guard.proxy.body import read_json
from guard.proxy.models import ChatRequest, RequestError
from guard.upstream_params import FORWARDED_FIELDS, ParamsError, UpstreamParams, upstream_params

LIMIT = 4_000
FAST = settings(max_examples=100, deadline=None, derandomize=True, database=None)

# any JSON value, NaN and Infinity included (Python's json writes them; JSON has no such numbers), and text with lone
# surrogates, which JSON escapes can carry and UTF-8 cannot
text = st.text(max_size=12) | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2)
scalars = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | text
# numbers as a client may write them: beyond a float's range, beyond Python's 4,300-digit limit for integers
raw_numbers = st.sampled_from(["1e400", "-1e999", "1" * 4301, "0." + "1" * 5000, "2.5", "-0", "1E+2"])
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=12
)
roles = st.sampled_from(["user", "assistant", "system", "developer", "tool", "function", "robot", ""]) | json_values
parts = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "input_audio"]) | json_values, "text": text}),
    max_size=2,
)
message = st.fixed_dictionaries(
    {"role": roles}, optional={"content": text | parts | json_values, "name": json_values, "tool_calls": json_values}
)
user_turn = st.fixed_dictionaries({"role": st.just("user"), "content": st.text(min_size=1, max_size=20)})
upstream_fields = st.dictionaries(st.sampled_from(sorted(FORWARDED_FIELDS)), json_values, max_size=3)
requests = st.builds(
    lambda base, fields, extra: {**base, **fields, **extra},
    st.fixed_dictionaries(
        # well-formed turns too, so that the fields beside them are what decides
        {"messages": st.lists(message, max_size=3) | json_values | st.lists(user_turn, min_size=1, max_size=2)},
        optional={
            "model": st.just("safe") | json_values,
            "stream": st.booleans() | json_values,
            "stream_options": st.fixed_dictionaries({"include_usage": json_values}) | json_values,
            "n": st.integers(-1, 3) | json_values,
        },
    ),
    upstream_fields,
    st.dictionaries(text, json_values, max_size=2),  # unknown fields, litellm's call settings among them by chance
)


def _request(body: bytes, declared: int | None = None) -> Request:
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    headers = [(b"content-type", b"application/json")]
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": headers, "query_string": b""}
    return Request(scope, receive)


async def _parse(body: bytes, declared: int | None = None) -> tuple[ChatRequest, UpstreamParams]:
    """The route's parsing steps, raising only RequestError for what the client got wrong."""
    chat = ChatRequest.from_body(await read_json(_request(body, declared), LIMIT))
    params = chat.upstream_params()
    chat.conversation()
    return chat, params


def _check(body: bytes, declared: int | None = None) -> None:
    try:
        chat, params = asyncio.run(_parse(body, declared))
    except RequestError as error:
        assert error.status in (400, 413), error.status
        response = error.response()  # renders: a message that cannot be encoded would be a 500 here
        payload = json.loads(response.body)
        assert set(payload["error"]) == {"message", "type", "param", "code"} and payload["error"]["message"]
        assert response.status_code == error.status
        return
    # a request that parses is one couchguard can serve: one choice, only allow-listed fields forwarded, and what is
    # forwarded is JSON again (no infinity from an overlong number, no lone surrogate)
    assert chat.n == 1 and isinstance(chat.messages, list) and chat.messages
    assert set(params.forwarded()) <= FORWARDED_FIELDS
    json.dumps({"messages": chat.messages, **params.forwarded()}, allow_nan=False).encode()


@FAST
@given(st.binary(max_size=200))
def test_any_bytes_parse_or_are_a_client_error(body):
    _check(body)


@FAST
@given(json_values)
def test_any_json_value_parses_or_is_a_client_error(value):
    _check(json.dumps(value).encode("utf-8", "surrogatepass"))


@FAST
@given(requests)
def test_request_shaped_bodies_parse_or_are_a_client_error(body):
    _check(json.dumps(body).encode())


@FAST
@given(requests, st.integers(min_value=0, max_value=400))
def test_truncated_bodies_are_a_client_error(body, cut):
    encoded = json.dumps(body).encode()
    _check(encoded[: min(cut, len(encoded) - 1)])


@FAST
@given(requests, st.sampled_from(["temperature", "seed", "tools", "messages", "n", "x"]), raw_numbers)
def test_numbers_beyond_range_are_a_client_error(body, field, number):
    encoded = json.dumps(body).encode()
    _check(encoded[:-1] + f', "{field}": {number}}}'.encode() if encoded.endswith(b"}") else encoded)
    _check(
        json.dumps({"model": "safe", "messages": [{"role": "user", "content": "hi"}], "tools": []}).encode()[:-1]
        + f', "tool_choice": {{"x": [{number}]}}}}'.encode()
    )


@FAST
@given(st.integers(min_value=0, max_value=3 * LIMIT), st.integers(min_value=-5, max_value=3 * LIMIT) | st.none())
def test_sizes_and_declared_lengths(size, declared):
    # a false content-length (larger, smaller, absent) never lets a body over the limit through, nor fails oddly
    body = json.dumps({"model": "safe", "messages": [{"role": "user", "content": "x" * size}]}).encode()
    if declared is not None and declared < 0:
        declared = None
    _check(body, declared)
    if len(body) > LIMIT:
        try:
            asyncio.run(_parse(body, declared))
        except RequestError as error:
            assert error.status == 413
        else:
            raise AssertionError("a body over the limit parsed")


@FAST
@given(st.dictionaries(text | st.sampled_from(sorted(FORWARDED_FIELDS)), json_values, max_size=4))
def test_upstream_params_validate_or_raise_params_error(fields):
    try:
        params = upstream_params(fields)
    except ParamsError as error:
        assert error.field and error.message
        return
    assert set(params.forwarded()) <= set(fields) <= FORWARDED_FIELDS
