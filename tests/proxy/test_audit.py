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
SEEDED = (
    "Hi, I'm Maria Gonzalez and I live at 42 Elm Street, Springfield. My number is 415-555-0132 and my "
    "email is maria.gonzalez@example.com, my MRN 00481234. I've felt so low since the divorce and I "
    "can't sleep."
)


def test_fifty_concurrent_streams_are_all_checked_and_audited(patient_proxy):
    proxy = patient_proxy
    conversations = [user(f"Work has been stressful, day {i}: how do I switch off in the evenings?") for i in range(50)]

    async def one(client: AsyncOpenAI, messages) -> str:
        stream = await client.chat.completions.create(model="safe", messages=messages, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    async def all_streams():
        client = AsyncOpenAI(base_url=f"{proxy.url}/v1", api_key=MAIN_KEY, max_retries=0, timeout=120)
        async with client:
            return await asyncio.gather(*(one(client, m) for m in conversations))

    texts = asyncio.run(all_streams())
    assert texts == [SAFE] * 50
    all_rows = proxy.state.audit.rows()
    for messages in conversations:
        rows = [r for r in all_rows if r["conversation_hash"] == hash_of(messages)]
        assert sorted((r["rail"], r["action"], r["stream"]) for r in rows) == [
            ("input", "allow", True),
            ("output", "allow", True),
        ]
        assert all(r["decision_ms"] is not None and r["scores"] for r in rows)


def test_audit_rows_and_escalations_hold_no_pii(proxy, client, audit_rows, upstream):
    messages = [
        {"role": "user", "content": SEEDED},
        {"role": "assistant", "content": "I'm sorry, Maria. That sounds exhausting."},
        {
            "role": "user",
            "content": "Honestly I've decided to end my life tonight, Maria Gonzalez "
            "won't be a burden anymore. I have the pills ready.",
        },
    ]
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
    calm = SEEDED.replace(
        "I've felt so low since the divorce and I can't sleep.", "Could you suggest a calmer morning routine?"
    )
    text = client.chat.completions.create(model="echo", messages=user(calm)).choices[0].message.content
    sent = next(r for r in reversed(upstream.script.requests) if r["model"] == "echo")
    upstream_text = json.dumps(sent["messages"])
    for value in ("Maria Gonzalez", "maria.gonzalez@example.com", "42 Elm Street"):
        assert value not in upstream_text  # the model never saw it
        assert value in text  # the user gets it back where the model echoed the placeholder


def _samples(proxy) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    body = httpx.get(f"{proxy.url}/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }


def test_metrics_count_each_request_once_the_upstream_has_answered(proxy, client):
    before = _samples(proxy)
    client.chat.completions.create(model="safe", messages=user("Metrics check: a calm day today."))
    after = _samples(proxy)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert grew("couchguard_requests_total", product="main", stream="false", status="200") == 1
    assert grew("couchguard_decisions_total", action="allow", product="main", rail="input") == 1
    assert grew("couchguard_decisions_total", action="allow", product="main", rail="output") == 1
    assert grew("couchguard_classifier_seconds_count", rail="output") == 1
    assert grew("couchguard_upstream_seconds_count", stream="false") == 1


def test_uk_and_eu_pii_is_redacted_in_stored_text(client, audit_rows):
    text = (
        "I'm staying at 12 rue de la Paix, 75002 Paris, my UK mobile is 07700 900461, and my sister lives at "
        "Hauptstraße 5, 10115 Berlin (030 12345678). Post goes to 221B Baker Street, London NW1 6XE. "
        "What helps with jet lag and a low mood?"
    )
    messages = user(text)
    client.chat.completions.create(model="safe", messages=messages)
    dumped = json.dumps(audit_rows(hash_of(messages)), default=str)
    assert "<PHONE_NUMBER>" in dumped and "<STREET_ADDRESS>" in dumped
    for value in (
        "rue de la Paix",
        "75002",
        "07700 900461",
        "Hauptstraße 5",
        "10115",
        "030 12345678",
        "221B Baker Street",
        "NW1 6XE",
    ):
        assert value not in dumped
