"""Escalation webhooks: retried on transport errors and 5xx, never on 4xx, dropped with a log line. A real HTTP
server on loopback; no model."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from guard.decision import Decision
from guard.escalation import EscalationWebhook


@pytest.fixture
def receiver():
    """A webhook receiver answering with the statuses it is given, in order (then 200)."""
    state = {"statuses": [], "events": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            state["events"].append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            self.send_response(state["statuses"].pop(0) if state["statuses"] else 200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", state
    server.shutdown()
    server.server_close()


def _escalate(webhook: EscalationWebhook) -> None:
    decision = Decision(rail="input", action="steer", rules=["r"], escalate=True)
    webhook.observer(None, decision, {"conversation_hash": "h", "product": "p"})
    webhook.flush()
    webhook.close()


@pytest.mark.parametrize("statuses,posts", [([], 1), ([503], 2), ([503, 502], 3), ([503, 503, 503], 3), ([404], 1)])
def test_retries_server_errors_a_bounded_number_of_times(receiver, statuses, posts):
    url, state = receiver
    state["statuses"] = list(statuses)
    _escalate(EscalationWebhook(url, timeout_s=2, retries=2))
    assert len(state["events"]) == posts
    assert all(event["conversation_hash"] == "h" and event["rules"] == ["r"] for event in state["events"])


def test_an_unreachable_webhook_drops_the_event_with_a_log_line(caplog):
    with caplog.at_level(logging.WARNING, logger="couchguard.escalation"):
        _escalate(EscalationWebhook("http://127.0.0.1:1/hook", timeout_s=0.5, retries=1))
    assert any("dropped" in record.getMessage() for record in caplog.records)
