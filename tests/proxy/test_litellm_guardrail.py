"""couchguard as a LiteLLM CustomGuardrail, through LiteLLM's own hook interface."""

from __future__ import annotations

import asyncio

import pytest
import yaml
from litellm.caching import DualCache
from litellm.exceptions import ModifyResponseException
from litellm.proxy._types import UserAPIKeyAuth
from litellm.types.utils import Delta, ModelResponse, ModelResponseStream, StreamingChoices

from guard.litellm_guardrail import CouchguardGuardrail
from guard.pipeline import Guard
from guard.policy import load_policy

from .helpers import HARMFUL_MARKERS, RISK, STRESS, user
from .upstream_server import HARMFUL_MEANS, SAFE


@pytest.fixture(scope="module")
def guardrail(scorer):
    return CouchguardGuardrail(guard=Guard(load_policy("mental-health"), scorer), event_hook=["pre_call", "post_call"])


def _response(text: str) -> ModelResponse:
    return ModelResponse(
        model="m", choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]
    )


def _pre(guardrail, data: dict) -> dict:
    return asyncio.run(guardrail.async_pre_call_hook(UserAPIKeyAuth(), DualCache(), data, "acompletion"))


def _post(guardrail, data: dict, text: str) -> ModelResponse:
    return asyncio.run(guardrail.async_post_call_success_hook(data, UserAPIKeyAuth(), _response(text)))


def test_pre_call_steers_and_post_call_rewrites(guardrail):
    data = _pre(guardrail, {"model": "m", "messages": user(RISK)})
    assert data["messages"][0]["role"] == "system" and data["messages"][-1]["content"] == RISK
    response = _post(guardrail, data, HARMFUL_MEANS)
    text = response.choices[0].message.content
    assert not any(marker in text for marker in HARMFUL_MARKERS)
    assert response._hidden_params["couchguard"]["action"] == "rewrite"


def test_appropriate_answer_passes_unchanged(guardrail):
    data = _pre(guardrail, {"messages": user(STRESS)})
    response = _post(guardrail, data, SAFE)
    assert response.choices[0].message.content == SAFE


def test_block_short_circuits_the_call(scorer, tmp_path):
    path = tmp_path / "blocking.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "blocking",
                "extends": "mental-health",
                "input_rules": [
                    {
                        "id": "suicide-risk",
                        "criterion": "dont_enable_suicidal_ideation",
                        "when": {"signal": "user.suicide"},
                        "action": "block",
                        "template": "crisis_response",
                    }
                ],
            }
        )
    )
    guardrail = CouchguardGuardrail(guard=Guard(load_policy(str(path)), scorer))
    with pytest.raises(ModifyResponseException) as info:
        _pre(guardrail, {"model": "m", "messages": user(RISK)})
    assert "988" in info.value.message


def test_streams_are_held_until_checked(guardrail):
    data = _pre(guardrail, {"messages": user(RISK)})

    async def upstream():
        for word in HARMFUL_MEANS.split(" "):
            yield ModelResponseStream(model="m", choices=[StreamingChoices(index=0, delta=Delta(content=word + " "))])
        yield ModelResponseStream(model="m", choices=[StreamingChoices(index=0, delta=Delta(), finish_reason="stop")])

    async def relay():
        hook = guardrail.async_post_call_streaming_iterator_hook(UserAPIKeyAuth(), upstream(), data)
        return [chunk async for chunk in hook]

    chunks = asyncio.run(relay())
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert not any(marker in text for marker in HARMFUL_MARKERS)
    assert chunks[-1].choices[0].finish_reason == "stop"


@pytest.mark.parametrize(
    "field, value",
    [
        ("api_base", "http://127.0.0.1:9/v1"),
        ("base_url", "http://127.0.0.1:9/v1"),
        ("api_key", "sk-attacker"),
        ("api_version", "2099"),
        ("custom_llm_provider", "openai"),
        ("extra_headers", {"x": "1"}),
        ("timeout", 1e9),
        ("num_retries", 9),
        ("max_retries", 9),
        ("mock_response", "pwned"),
        ("callbacks", ["x"]),
        ("litellm_params", {"api_base": "http://127.0.0.1:9/v1"}),
    ],
)
def test_pre_call_refuses_call_settings_from_the_client(guardrail, field, value):
    from guard.upstream_params import ParamsError

    with pytest.raises(ParamsError, match=field):
        _pre(guardrail, {"model": "m", "messages": user(STRESS), field: value})


def test_pre_call_validates_forwarded_fields_and_keeps_litellm_metadata(guardrail):
    from guard.upstream_params import ParamsError

    with pytest.raises(ParamsError, match="temperature"):
        _pre(guardrail, {"model": "m", "messages": user(STRESS), "temperature": float("nan")})
    data = _pre(
        guardrail, {"model": "m", "messages": user(STRESS), "temperature": 0.5, "metadata": {"user_api_key": "hashed"}}
    )
    assert data["metadata"]["user_api_key"] == "hashed" and "couchguard" in data["metadata"]
