"""Upstream errors, timeouts and cut streams follow the policy's fail mode, are audited, and never read `allow`."""

from __future__ import annotations

import httpx
import openai
import pytest

from guard.resources import render_template

from .conftest import MAIN_KEY, OPEN_KEY
from .helpers import RISK, STRESS, hash_of, sse_events, streamed_text, user
from .upstream_server import SAFE


@pytest.mark.parametrize("model, event", [("error", "upstream_unavailable"), ("slow", "upstream_timeout")])
def test_fail_closed_answers_the_safe_template(client, audit_rows, model, event):
    messages = user(f"{STRESS} ({model})")
    raw = client.chat.completions.with_raw_response.create(model=model, messages=messages)
    assert raw.status_code == 200
    assert raw.parse().choices[0].message.content == render_template("safe_fallback", "US")
    assert raw.headers["x-couchguard-action"] == "block"
    assert "fail-closed" in raw.headers["x-couchguard-rules"]
    output = [r for r in audit_rows(hash_of(messages)) if r["rail"] == "output"]
    assert [(r["action"], r["event"]) for r in output] == [("block", event)]


def test_fail_closed_on_a_crisis_path_answers_the_crisis_template(client):
    text = client.chat.completions.create(model="error", messages=user(RISK)).choices[0].message.content
    assert text == render_template("crisis_response", "US")


def test_cut_stream_sends_only_checked_sentences_then_the_template(proxy, audit_rows):
    messages = user(f"{STRESS} (stream drop)")  # a suffix keeps its audit rows apart; not "(cut)", a self-harm cue
    with httpx.stream(
        "POST",
        f"{proxy.url}/v1/chat/completions",
        timeout=30,
        json={"model": "cut", "messages": messages, "stream": True},
        headers={"authorization": "Bearer k-main"},
    ) as response:
        raw = b"".join(response.iter_raw())
    events = sse_events(raw)
    text = streamed_text(events)
    template = render_template("safe_fallback", "US")
    assert text.endswith(template)
    released = text[: -len(template)].rstrip("\n")
    # what came before the template is whole checked sentences of the upstream answer, never a partial one
    assert SAFE.startswith(released) and (released == "" or released.endswith((".", "?", "!")))
    assert events[-1]["couchguard"]["action"] == "block"
    output = [r for r in audit_rows(hash_of(messages)) if r["rail"] == "output"]
    assert [(r["action"], r["event"]) for r in output] == [("block", "stream_cut")]


def test_fail_open_surfaces_upstream_errors_and_records_them(proxy, audit_rows):
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=OPEN_KEY, max_retries=0)
    messages = user(f"{STRESS} (open)")
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="error", messages=messages)
    assert info.value.status_code == 502
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model="cut", messages=messages, stream=True))
    output = [r for r in audit_rows(hash_of(messages)) if r["rail"] == "output"]
    assert sorted((r["action"], r["event"]) for r in output) == [
        ("error", "stream_cut"),
        ("error", "upstream_unavailable"),
    ]


@pytest.mark.parametrize("key", [MAIN_KEY, OPEN_KEY], ids=["fail-closed", "fail-open"])
def test_no_failure_is_ever_recorded_as_allow(proxy, audit_rows, key):
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=key, max_retries=0)
    messages = user(f"{STRESS} (never allow, {key})")
    try:
        client.chat.completions.create(model="error", messages=messages)
    except openai.APIStatusError:
        pass  # fail-open surfaces the failure
    failures = [r for r in audit_rows(hash_of(messages)) if r["event"]]
    assert failures  # the failure was recorded, so the check below has something to hold for
    assert all(r["action"] != "allow" for r in failures)
