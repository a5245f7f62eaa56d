"""A very long message (close to the 200,000-character conversation limit, well under the body limit) through the
proxy with the policy storing audit text: answered, audited on both rails with its text redacted within the budget,
and the audit writer keeps up: the next request's rows are written right after."""

from __future__ import annotations

import httpx
import pytest

from guard.audit.budget import RedactionBudget
from guard.proxy.config import DEFAULT_MAX_BODY_BYTES

from .helpers import STRESS, hash_of, sse_events, streamed_text, user
from .upstream_server import SAFE, start_proxy

pytestmark = pytest.mark.slow

KEY = "k-long"
PARAGRAPH = (
    "Work has been really stressful this week and I can't switch off in the evenings. My manager keeps adding "
    "tasks, I skip lunch, and by the time I get home I just stare at my phone until late. "
)
# repeated, so scoring reuses its cached windows: the test is about the request path and the audit, not encoder time
LONG = (PARAGRAPH * (199_000 // len(PARAGRAPH) + 1))[:199_000]


@pytest.fixture(scope="module")
def long_proxy(upstream, scorer, tmp_path_factory):
    import os

    from guard.proxy import create_app
    from guard.proxy.config import parse_config

    directory = tmp_path_factory.mktemp("long")
    os.environ.setdefault("COUCHGUARD_TEST_UPSTREAM_KEY", "sk-upstream-dummy")
    policy = directory / "stored.yaml"
    # text storage asked for by the policy, not the server's audit config
    policy.write_text("name: stored\nextends: mental-health\nstore_text: true\n")
    config = parse_config(
        {
            "upstream": {"api_base": f"{upstream.url}/v1", "api_key_env": "COUCHGUARD_TEST_UPSTREAM_KEY"},
            "models": {"safe": "openai/safe"},
            "audit": {"url": f"sqlite:///{directory / 'audit.db'}", "store_text": False},
            "products": {"long": {"keys": [KEY], "policy": str(policy)}},
        }
    )
    app = create_app(config)
    server = start_proxy(app)
    server.state = app.state.couchguard  # type: ignore[attr-defined]
    yield server
    server.stop()


def _post(proxy, messages: list[dict], stream: bool) -> httpx.Response:
    return httpx.post(
        f"{proxy.url}/v1/chat/completions",
        json={"model": "safe", "messages": messages, "stream": stream},
        headers={"authorization": f"Bearer {KEY}"},
        timeout=300,
    )


def _answer(response: httpx.Response, stream: bool) -> str:
    if stream:
        return streamed_text(sse_events(response.content))
    return response.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_200k_character_message_is_answered_and_audited_without_stalling_the_audit(long_proxy, stream):
    messages = user(f"{LONG[:198_900]} ({'stream' if stream else 'plain'})")
    assert 198_000 < len(messages[0]["content"]) <= 200_000  # the conversation limit of parse_conversation
    assert len(httpx.Request("POST", "/", json={"messages": messages}).content) < DEFAULT_MAX_BODY_BYTES

    response = _post(long_proxy, messages, stream)
    assert response.status_code == 200, response.text[:500]
    assert _answer(response, stream) == SAFE

    following = user(f"{STRESS} (right after the long one, stream={stream})")
    assert _answer(_post(long_proxy, following, stream), stream) == SAFE

    audit = long_proxy.state.audit
    # everything recorded so far is written: redaction of the long text is bounded, the writer is not held up
    assert audit.flush(timeout=60)
    rows = audit.rows()
    long_rows = [r for r in rows if r["conversation_hash"] == hash_of(messages)]
    assert [(r["rail"], r["stream"]) for r in long_rows] == [("input", stream), ("output", stream)]
    stored = long_rows[0]["message_text"]
    # stored, redacted as far as the budget reaches, the rest withheld: never the raw 199,000 characters
    assert stored and "chars withheld]" in stored
    assert len(stored) < RedactionBudget().max_chars + 200
    assert long_rows[1]["delivered_text"]
    following_rows = [r for r in rows if r["conversation_hash"] == hash_of(following)]
    assert [r["rail"] for r in following_rows] == ["input", "output"]
    assert following_rows[0]["message_text"]  # short enough to be stored whole, after redaction
