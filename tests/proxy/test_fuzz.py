"""A few hundred seeded hostile requests against the running proxy (benchmarks/fuzz.py runs ten thousand): no 5xx,
no dropped connection, every error in OpenAI's shape, every success a completion or a complete stream.

The scripted upstream is healthy for the models the fuzzer asks for, so a 502/503/504 (the documented answers to
upstream faults) would be a finding here too.
"""

from __future__ import annotations

import pytest

from benchmarks.fuzz import fuzz

from .conftest import MAIN_KEY

pytestmark = pytest.mark.slow  # a running proxy, and the rails for the requests that reach them


def test_hostile_requests_get_client_errors_or_checked_answers(proxy):
    # the echo model's short answers keep the requests that reach the rails quick to check
    report = fuzz(proxy.url, requests=200, seed=13, key=MAIN_KEY, models=["echo"])
    assert report.violations == [], report.violations[:5]
    assert report.crashes == 0 and report.server_errors == 0
    # the generator reaches every layer: refused bodies, refused keys and routes, and requests the rails answer
    assert {400, 401, 404, 405, 413, 200} <= set(report.statuses), report.statuses
