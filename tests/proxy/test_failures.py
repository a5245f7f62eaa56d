"""Fail-open: upstream errors and cut streams are surfaced to the client, audited, and never read `allow`.

Fail-closed, the default, is covered fault by fault in tests/proxy/test_fault_matrix.py.
"""

from __future__ import annotations

import openai
import pytest

from .conftest import OPEN_KEY
from .helpers import STRESS, hash_of, user


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


def test_no_failure_is_ever_recorded_as_allow_under_fail_open(proxy, audit_rows):
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=OPEN_KEY, max_retries=0)
    messages = user(f"{STRESS} (never allow, {OPEN_KEY})")
    with pytest.raises(openai.APIStatusError):  # fail-open surfaces the failure
        client.chat.completions.create(model="error", messages=messages)
    failures = [r for r in audit_rows(hash_of(messages)) if r["event"]]
    assert failures  # the failure was recorded, so the check below has something to hold for
    assert all(r["action"] != "allow" for r in failures)
