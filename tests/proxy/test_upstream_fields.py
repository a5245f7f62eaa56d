"""Client fields reach the upstream only through the allow-list: no request field can move the call to another host,
carry the server's key elsewhere, or change its timeout, retries or provider (docs/proxy.md, 'What a client can set').

A second scripted server on loopback plays the attacker: whatever a request carries, it must receive nothing.
"""

from __future__ import annotations

import httpx
import pytest

from .conftest import MAIN_KEY
from .helpers import STRESS, user
from .upstream_server import scripted_server, start_proxy

AUTH = {"authorization": f"Bearer {MAIN_KEY}"}
SERVER_KEY = "sk-operator-secret-canary"


@pytest.fixture(scope="module")
def attacker():
    with scripted_server() as server:
        yield server


def overrides(attacker_url: str) -> dict[str, object]:
    """Every litellm keyword that sets where, how or with which credentials a call is made, with a hostile value."""
    base = f"{attacker_url}/v1"
    return {
        "api_base": base,
        "base_url": base,
        "api_key": "sk-attacker",
        "api_version": "2099-01-01",
        "custom_llm_provider": "openai",
        "extra_headers": {"x-exfiltrate": "1"},
        "headers": {"x-exfiltrate": "1"},
        "extra_body": {"api_base": base},
        "timeout": 1e9,
        "request_timeout": 1e9,
        "num_retries": 50,
        "max_retries": 50,
        "mock_response": "pwned",
        "metadata": {"api_base": base},
        "litellm_params": {"api_base": base},
        "callbacks": ["langfuse"],
        "success_callback": ["langfuse"],
        "failure_callback": ["langfuse"],
        "input_callback": ["langfuse"],
        "organization": "org-attacker",
        "model_list": [{"model_name": "safe", "litellm_params": {"model": "openai/x", "api_base": base}}],
        "azure_ad_token": "token",
        "aws_access_key_id": "AKIA",
        "vertex_credentials": "{}",
        "user_continue_message": {"role": "user", "content": "x"},
    }


def test_the_reproduction_gets_400_and_the_attacker_receives_nothing(scorer, attacker, tmp_path, monkeypatch):
    """The reported hole: a server with no api_base in its config and the provider key in the environment."""
    from guard.proxy import create_app
    from guard.proxy.config import parse_config

    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    app = create_app(
        parse_config(
            {"upstream": {"model": "openai/gpt-4o-mini"}, "audit": {"url": f"sqlite:///{tmp_path / 'audit.db'}"}}
        )
    )
    server = start_proxy(app)
    try:
        before = len(attacker.script.requests)
        response = httpx.post(
            f"{server.url}/v1/chat/completions",
            timeout=30,
            json={"model": "gpt-4o-mini", "messages": user(STRESS), "api_base": f"{attacker.url}/v1"},
        )
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["param"] == "api_base" and "api_base" in error["message"]
        assert len(attacker.script.requests) == before
    finally:
        server.stop()


@pytest.mark.parametrize("field", sorted(overrides("http://x")))
@pytest.mark.parametrize("stream", [False, True])
def test_connection_fields_are_refused_before_any_call(proxy, upstream, attacker, field, stream):
    value = overrides(attacker.url)[field]
    calls_before, attacker_before = len(upstream.script.requests), len(attacker.script.requests)
    response = httpx.post(
        f"{proxy.url}/v1/chat/completions",
        headers=AUTH,
        timeout=30,
        json={"model": "safe", "messages": user(STRESS), "stream": stream, field: value},
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == field and error["code"] == "unsupported_parameter"
    assert len(attacker.script.requests) == attacker_before, "the attacker's server was called"
    assert len(upstream.script.requests) == calls_before, "a refused request still reached the upstream"


def test_the_server_key_goes_only_to_the_configured_upstream(proxy, upstream, attacker):
    response = httpx.post(
        f"{proxy.url}/v1/chat/completions",
        headers=AUTH,
        timeout=30,
        json={"model": "safe", "messages": user(STRESS), "temperature": 0.3, "seed": 7},
    )
    assert response.status_code == 200
    assert upstream.script.headers[-1]["authorization"] == "Bearer sk-upstream-dummy"
    assert not any("sk-upstream-dummy" in str(h) for h in attacker.script.headers)


@pytest.mark.parametrize(
    "field, value, fragment",
    [
        ("temperature", "NaN", "not a JSON number"),
        ("temperature", "Infinity", "not a JSON number"),
        ("temperature", "1e999", "finite number"),
        ("temperature", "3", "less than or equal to 2"),
        ("temperature", '"hot"', "valid number"),
        ("top_p", "-0.1", "greater than or equal to 0"),
        ("max_tokens", "0", "greater than or equal to 1"),
        ("max_tokens", '"100"', "valid integer"),
        ("stop", '["a", "b", "c", "d", "e"]', "at most 4"),
        ("stop", "[1]", "valid string"),
        ("logit_bias", '{"50256": 500}', "less than or equal to 100"),
        ("top_logprobs", "21", "less than or equal to 20"),
        ("reasoning_effort", '"extreme"', "reasoning_effort"),
        ("modalities", '["text", "audio"]', "modalities"),
        ("tools", '[{"function": {"name": "f"}}]', "string 'type'"),
        ("response_format", '{"type": "yaml"}', "response_format.type"),
        ("stream_options", '"yes"', "stream_options"),
    ],
)
def test_forwarded_fields_are_validated(proxy, upstream, field, value, fragment):
    calls_before = len(upstream.script.requests)
    content = '{"model": "safe", "messages": [{"role": "user", "content": "hi"}], "%s": %s}' % (field, value)
    response = httpx.post(
        f"{proxy.url}/v1/chat/completions",
        timeout=30,
        content=content.encode(),
        headers={**AUTH, "content-type": "application/json"},
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert fragment in error["message"] and error["type"] == "invalid_request_error"
    assert len(upstream.script.requests) == calls_before


def test_common_openai_client_parameters_still_reach_the_model(client, upstream):
    completion = client.chat.completions.create(
        model="safe",
        messages=user(STRESS),
        temperature=0.2,
        top_p=0.9,
        max_tokens=200,
        stop=["\n\n\n"],
        presence_penalty=0.1,
        frequency_penalty=0.1,
        seed=3,
        user="end-user-7",
        logit_bias={"50256": -100},
        response_format={"type": "text"},
        parallel_tool_calls=False,
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
    )
    assert completion.choices[0].message.content
    sent = upstream.script.requests[-1]
    # (litellm itself leaves `user` out of the OpenAI body; that is its choice, not a refusal here)
    assert sent["temperature"] == 0.2 and sent["top_p"] == 0.9 and sent["seed"] == 3 and sent["max_tokens"] == 200
    assert sent["stop"] == ["\n\n\n"] and sent["tools"][0]["function"]["name"] == "lookup"
    assert upstream.script.headers[-1]["authorization"] == "Bearer sk-upstream-dummy"


def test_a_streamed_request_with_stream_options_still_works(client):
    stream = client.chat.completions.create(
        model="safe", messages=user(STRESS), stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join((c.choices[0].delta.content or "") for c in chunks if c.choices)
    assert any(c.usage is not None for c in chunks)
