"""Bad requests get OpenAI-style errors: 400 (JSON, schema, messages), 413 (size), 401 (keys), 403 (policy)."""

from __future__ import annotations

import httpx
import openai
import pytest

from .conftest import MAIN_KEY
from .helpers import STRESS, user

AUTH = {"authorization": f"Bearer {MAIN_KEY}"}


def _post(proxy, headers=AUTH, **kwargs):
    return httpx.post(f"{proxy.url}/v1/chat/completions", headers=headers, timeout=30, **kwargs)


@pytest.mark.parametrize(
    "content, status, fragment",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "must be a JSON object"),
        (b'{"model": "safe"}', 400, "messages: Field required"),
        (b'{"model": "safe", "messages": []}', 400, "messages is empty"),
        (b'{"model": "safe", "messages": [{"role": "robot", "content": "hi"}]}', 400, "messages[0].role 'robot'"),
        (b'{"model": "safe", "messages": [{"role": "user", "content": "hi"}], "n": 2}', 400, "n: Input should be"),
        (b'{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}', 400, "not served here"),
        # a part the provider cannot read is the client's error, not an upstream failure
        (
            b'{"model": "safe", "messages": [{"role": "user", "content": [{"type": "banana"}]}]}',
            400,
            "messages[0].content[0].type 'banana' is not a content part type",
        ),
    ],
)
def test_bad_requests_get_400(proxy, content, status, fragment):
    response = _post(proxy, content=content, headers={**AUTH, "content-type": "application/json"})
    assert response.status_code == status
    error = response.json()["error"]
    assert fragment in error["message"] and error["type"] == "invalid_request_error"


def test_body_over_the_limit_gets_413(proxy):
    response = _post(proxy, json={"model": "safe", "messages": user("x" * 70_000)})
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"


def test_keys(proxy):
    assert _post(proxy, headers={}, json={"model": "safe", "messages": user(STRESS)}).status_code == 401
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="safe", messages=user(STRESS))
    hashed = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="k-private", max_retries=0)
    assert hashed.chat.completions.create(model="safe", messages=user(STRESS)).choices[0].message.content


def test_policy_header_only_where_allowed(proxy, client):
    allowed = client.chat.completions.with_raw_response.create(
        model="means",
        messages=user("What are the tallest bridges in NYC for a photo tour?"),
        extra_headers={"x-couchguard-policy": "research"},
    )
    assert allowed.headers["x-couchguard-action"] == "allow"  # research observes only
    denied = _post(
        proxy,
        headers={**AUTH, "x-couchguard-policy": "general-assistant"},
        json={"model": "safe", "messages": user(STRESS)},
    )
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "policy_not_allowed"


@pytest.mark.parametrize(
    "content, code",
    [
        (
            b'{"model": "safe", "messages": [{"role": "user", "content": "hi"}], "tools": '
            + b"[" * 1000
            + b"]" * 1000
            + b"}",
            "invalid_json",
        ),
        (b'{"model": "safe\\ud800", "messages": [{"role": "user", "content": "hi"}]}', "invalid_text"),
        (b'{"model": "safe", "messages": [{"role": "user", "content": "hi \\udfff there"}]}', "invalid_text"),
        (
            b'{"model": "safe", "messages": [{"role": "user", "content": "hi"}], "stream": true, "stream_options": 5}',
            None,
        ),
        (b'{"model": "safe", "messages": [{"role": "user", "content": "hi"}], "temperature": NaN}', "invalid_json"),
    ],
)
def test_hostile_bodies_get_400_not_500(proxy, content, code):
    response = _post(proxy, content=content, headers={**AUTH, "content-type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and (code is None or error["code"] == code)


@pytest.mark.parametrize(
    "method, path, status",
    [("GET", "/v1/nothing", 404), ("GET", "/v1/chat/completions", 405), ("DELETE", "/v1/models", 405)],
)
def test_unknown_routes_and_methods_answer_in_openai_shape(proxy, method, path, status):
    response = httpx.request(method, f"{proxy.url}{path}", headers=AUTH, timeout=30)
    assert response.status_code == status
    assert response.json()["error"]["message"].startswith(f"{method} {path}")


def test_upstream_without_choices_fails_closed_and_is_audited(proxy, audit_rows):
    from .helpers import hash_of

    messages = user("Checking an upstream that answers with no choices at all, please.")
    response = _post(proxy, json={"model": "empty", "messages": messages})
    assert response.status_code in (200, 502), response.text
    assert response.status_code != 500
    if response.status_code == 200:  # mental-health fails closed: the vetted template, never nothing
        assert response.json()["choices"][0]["message"]["content"]
    proxy.state.audit.flush()
    rails = {row["rail"] for row in audit_rows(hash_of(messages))}
    assert rails == {"input", "output"}
