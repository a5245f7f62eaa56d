"""Every upstream fault, streamed and not, for a calm user and a user at risk: what the client receives, that no
unchecked model text reaches it, and the audit rows of both rails.

A proxy of its own, with short upstream timeouts, so that the timeout and idle-stream faults take about a second; the
scripted upstream (tests/proxy/upstream_server.py) plays each fault by model name. The policy is mental-health, which
fails closed: the vetted safe response (the crisis template once the input rail flagged a crisis), action `block`,
rule `fail-closed`; an upstream 4xx is relayed with its status, action `error`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from itertools import count

import httpx
import pytest

from guard.resources import render_template

from .helpers import RISK, STRESS, hash_of, sse_events, streamed_text, user
from .upstream_server import SAFE, start_proxy

KEY = "k-faults"
MODELS = ("safe", "error", "reject", "slow", "hang", "cut", "malformed", "empty", "drip")
SENTENCE_END = (".", "?", "!")


@dataclass(frozen=True)
class Fault:
    name: str
    model: str
    # the failure event audited on the output rail, non-streamed and streamed (None: no failure, a normal row)
    plain_event: str | None
    stream_event: str | None


FAULTS = [
    Fault("upstream-5xx", "error", "upstream_unavailable", "upstream_unavailable"),
    Fault("upstream-4xx", "reject", "upstream_rejected", "upstream_rejected"),
    Fault("timeout", "slow", "upstream_timeout", "upstream_timeout"),
    # non-streamed, a model that goes silent is a timeout; streamed, a stream silent past the idle limit is cut
    Fault("idle-stream", "hang", "upstream_timeout", "stream_cut"),
    Fault("cut-stream", "cut", "upstream_unavailable", "stream_cut"),
    Fault("malformed", "malformed", "upstream_unavailable", "stream_cut"),
    Fault("empty-choices", "empty", "upstream_unavailable", "stream_cut"),
    # the client leaves: a streamed answer's output row records it, a non-streamed one is decided all the same
    # (not an upstream fault, but the same questions: what arrived, and what the audit says)
    Fault("client-disconnect", "drip", None, "client_disconnected"),
]
USERS = {"calm": (STRESS, "allow", "safe_fallback"), "at-risk": (RISK, "steer", "crisis_response")}
_numbers = count()


@pytest.fixture(scope="module")
def faulty(upstream, scorer, tmp_path_factory):
    from guard.proxy import create_app
    from guard.proxy.config import parse_config

    os.environ.setdefault("COUCHGUARD_TEST_UPSTREAM_KEY", "sk-upstream-dummy")
    directory = tmp_path_factory.mktemp("faults")
    config = parse_config(
        {
            "upstream": {
                "api_base": f"{upstream.url}/v1",
                "api_key_env": "COUCHGUARD_TEST_UPSTREAM_KEY",
                # the scripted faults sleep 5 s (slow) or 30 s (a silent stream); healthy answers take milliseconds,
                # the slow but healthy "drip" model 0.3 s (non-streamed) or 0.1 s between deltas
                "timeout_s": 1.2,
                "stream_idle_timeout_s": 0.6,
            },
            "models": {name: f"openai/{name}" for name in MODELS},
            "audit": {"url": f"sqlite:///{directory / 'audit.db'}"},
            "products": {"faults": {"keys": [KEY], "policy": "mental-health"}},
        }
    )
    app = create_app(config)
    server = start_proxy(app)
    server.state = app.state.couchguard
    yield server
    server.stop()


def _rows(proxy, messages: list[dict], rails: int = 2, wait_s: float = 60) -> list[dict]:
    """The conversation's audit rows, once both rails have one: a departed client's request is still finishing."""
    deadline = time.monotonic() + wait_s
    while True:
        rows = [r for r in proxy.state.audit.rows() if r["conversation_hash"] == hash_of(messages)]
        if len(rows) >= rails or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def _is_openai_error(body: dict) -> bool:
    error = body.get("error")
    return isinstance(error, dict) and set(error) == {"message", "type", "param", "code"} and bool(error["message"])


def _released(text: str, template: str) -> str:
    """What came before the template: checked sentences of the model's answer, if any."""
    assert text.endswith(template), text[-200:]
    return text[: -len(template)].rstrip("\n")


@pytest.mark.parametrize("who", list(USERS))
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_fault(faulty, fault: Fault, stream: bool, who: str):
    text, input_action, template_name = USERS[who]
    # the reference that tells this case's audit rows apart rides in a system message: appended to the user's turn
    # it changed the text the signals score, and the at-risk turn then sat at the threshold
    reference = {"role": "system", "content": f"ref {next(_numbers)}, {fault.name}, {'stream' if stream else 'plain'}"}
    messages = [reference, *user(text)]
    template = render_template(template_name, "US")
    body = {"model": fault.model, "messages": messages, "stream": stream}
    url, headers = f"{faulty.url}/v1/chat/completions", {"authorization": f"Bearer {KEY}"}
    event = fault.stream_event if stream else fault.plain_event

    if fault.name == "client-disconnect":
        raw = _leave_early(url, headers, body, stream)
        # whatever arrived before the client left is checked sentences of the answer, never a partial one
        received = streamed_text(sse_events(raw)) if stream else ""
        assert SAFE.startswith(received) and (received == "" or received.endswith(SENTENCE_END))
        rows = _rows(faulty, messages)
        output = [r for r in rows if r["rail"] == "output"]
        if stream:
            assert [(r["action"], r["event"]) for r in output] == [("block", event)]
        else:  # the answer is decided and audited although nobody is left to receive it
            assert len(output) == 1 and output[0]["action"] in ("allow", "annotate") and not output[0]["event"]
        assert [r["action"] for r in rows if r["rail"] == "input"] == [input_action]
        return

    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
        raw = b"".join(response.iter_raw())
        status, content_type = response.status_code, response.headers.get("content-type", "")

    if fault.name == "upstream-4xx":
        # the model refused the request itself: its status and message are relayed, in OpenAI's error shape, before
        # any stream starts (the first chunk has not left, so the status line can still say it)
        assert status == 400 and content_type.startswith("application/json")
        assert _is_openai_error(httpx.Response(status, content=raw).json())
        assert SAFE[:40].encode() not in raw
        expected = ("error", event)
    elif stream:
        assert status == 200 and content_type.startswith("text/event-stream")
        events = sse_events(raw)
        assert raw.endswith(b"data: [DONE]\n\n") and not any("error" in e for e in events)
        final = events[-1]
        assert final["couchguard"]["action"] == "block" and "fail-closed" in final["couchguard"]["rules"]
        released = _released(streamed_text(events), template)
        # only whole sentences that passed a window check, then the safe response; none of the rest
        assert SAFE.startswith(released) and (released == "" or released.endswith(SENTENCE_END))
        assert SAFE[len(released) :].strip()[:40].encode() not in raw
        expected = ("block", event)
    else:
        assert status == 200
        answer = httpx.Response(status, content=raw).json()
        assert answer["choices"][0]["message"]["content"] == template
        assert answer["couchguard"]["action"] == "block" and "fail-closed" in answer["couchguard"]["rules"]
        assert SAFE[:40].encode() not in raw
        expected = ("block", event)

    rows = _rows(faulty, messages)
    assert [(r["rail"], r["action"], r["event"]) for r in rows] == [
        ("input", input_action, None),
        ("output", *expected),
    ]
    assert all(r["action"] != "allow" for r in rows if r["event"])


def _leave_early(url: str, headers: dict, body: dict, stream: bool) -> bytes:
    """Send the request and leave: streamed, after the first text arrives; non-streamed, before the answer."""
    if not stream:
        with pytest.raises(httpx.ReadTimeout):  # the scripted model takes 0.3 s to answer: the client leaves first
            httpx.post(url, json=body, headers=headers, timeout=httpx.Timeout(30, read=0.2))
        return b""
    raw = b""
    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            raw += chunk
            if b'"content": "' in raw and raw.endswith(b"\n\n"):
                break  # the first released text has arrived: close the connection mid-stream
    return raw
