"""The audit log under load and with PII, escalation webhooks, and metrics."""

from __future__ import annotations

import asyncio
import json

import httpx
from openai import AsyncOpenAI

from .conftest import MAIN_KEY
from .helpers import hash_of, user
from .upstream_server import SAFE

PII = ("Maria Gonzalez", "415-555-0132", "maria.gonzalez@example.com", "42 Elm Street", "MRN 00481234")
SEEDED = ("Hi, I'm Maria Gonzalez and I live at 42 Elm Street, Springfield. My number is 415-555-0132 and my "
          "email is maria.gonzalez@example.com, my MRN 00481234. I've felt so low since the divorce and I "
          "can't sleep.")


def test_fifty_concurrent_streams_are_all_checked_and_audited(proxy, audit_rows):
    conversations = [user(f"Work has been stressful, day {i}: how do I switch off in the evenings?")
                     for i in range(50)]

    async def one(client: AsyncOpenAI, messages) -> str:
        stream = await client.chat.completions.create(model="safe", messages=messages, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    async def all_streams():
        client = AsyncOpenAI(base_url=f"{proxy.url}/v1", api_key=MAIN_KEY, max_retries=0, timeout=120)
        async with client:
            return await asyncio.gather(*(one(client, m) for m in conversations))

    texts = asyncio.run(all_streams())
    assert texts == [SAFE] * 50
    for messages in conversations:
        rows = audit_rows(hash_of(messages))
        assert sorted((r["rail"], r["action"], r["stream"]) for r in rows) == [("input", "allow", True),
                                                                               ("output", "allow", True)]
        assert all(r["decision_ms"] is not None and r["scores"] for r in rows)


def test_audit_rows_and_escalations_hold_no_pii(proxy, client, audit_rows, upstream):
    messages = [{"role": "user", "content": SEEDED},
                {"role": "assistant", "content": "I'm sorry, Maria. That sounds exhausting."},
                {"role": "user", "content": "Honestly I've decided to end my life tonight, Maria Gonzalez "
                                            "won't be a burden anymore. I have the pills ready."}]
    response = client.chat.completions.create(model="safe", messages=messages)
    assert response.model_extra["couchguard"]["flagged"]
    rows = audit_rows(hash_of(messages))
    assert {r["rail"] for r in rows} == {"input", "output"}
    assert any(r["message_text"] for r in rows)  # text is stored here (store_text), redacted
    dumped = json.dumps(rows, default=str)
    for value in PII:
        assert value not in dumped
    assert "<PERSON>" in dumped
    proxy.state.escalation.flush()
    events = [e for e in upstream.script.webhooks if e["conversation_hash"] == hash_of(messages)]
    assert events and all(e["type"] == "couchguard.escalation" and e["rules"] for e in events)
    assert not any(value in json.dumps(events) for value in PII)


def test_pii_is_masked_before_the_upstream_and_restored_after(proxy, upstream):
    import openai

    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="k-private", max_retries=0)
    # a plumbing test: a calm message, so the output rail delivers the echo and the restored values can be seen
    calm = SEEDED.replace("I've felt so low since the divorce and I can't sleep.",
                          "Could you suggest a calmer morning routine?")
    text = client.chat.completions.create(model="echo", messages=user(calm)).choices[0].message.content
    sent = next(r for r in reversed(upstream.script.requests) if r["model"] == "echo")
    upstream_text = json.dumps(sent["messages"])
    for value in ("Maria Gonzalez", "maria.gonzalez@example.com", "42 Elm Street"):
        assert value not in upstream_text  # the model never saw it
        assert value in text               # the user gets it back where the model echoed the placeholder


def test_metrics(proxy, client):
    client.chat.completions.create(model="safe", messages=user("Metrics check: a calm day today."))
    body = httpx.get(f"{proxy.url}/metrics").text
    for name in ("couchguard_requests_total", "couchguard_decisions_total", "couchguard_signal_score_bucket",
                 "couchguard_classifier_seconds_bucket", "couchguard_upstream_seconds_bucket",
                 "couchguard_failures_total"):
        assert name in body
    assert 'couchguard_decisions_total{action="allow",product="main",rail="output"}' in body
