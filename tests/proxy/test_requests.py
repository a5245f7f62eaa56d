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


@pytest.mark.parametrize("content, status, fragment", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be a JSON object"),
    (b'{"model": "safe"}', 400, "messages: Field required"),
    (b'{"model": "safe", "messages": []}', 400, "messages is empty"),
    (b'{"model": "safe", "messages": [{"role": "robot", "content": "hi"}]}', 400, "messages[0].role 'robot'"),
    (b'{"model": "safe", "messages": [{"role": "user", "content": "hi"}], "n": 2}', 400, "n: Input should be"),
    (b'{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}', 400, "not served here"),
])
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
        model="means", messages=user("What are the tallest bridges in NYC for a photo tour?"),
        extra_headers={"x-couchguard-policy": "research"})
    assert allowed.headers["x-couchguard-action"] == "allow"  # research observes only
    denied = _post(proxy, headers={**AUTH, "x-couchguard-policy": "general-assistant"},
                   json={"model": "safe", "messages": user(STRESS)})
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "policy_not_allowed"
