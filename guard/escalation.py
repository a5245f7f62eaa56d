"""Escalation: a decision marked `escalate` becomes an event for human follow-up, posted to a webhook.

The event carries what a responder needs to find the conversation in the audit log (product, conversation hash,
rules, flagged signals), never message text. Posting happens on a background thread with a short timeout and a few
retries, so a slow webhook never delays the user's answer.
"""

from __future__ import annotations

import logging
import queue
import threading
from datetime import datetime, timezone
from typing import Any

import httpx
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
)

log = logging.getLogger("couchguard.escalation")
_STOP = object()


def escalation_event(decision, context: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "couchguard.escalation",
        "time": datetime.now(timezone.utc).isoformat(),
        "product": context.get("product"),
        "request_id": context.get("request_id"),
        "conversation_hash": context.get("conversation_hash"),
        "rail": decision.rail,
        "action": decision.action,
        "rules": list(decision.rules),
        "flagged": list(decision.flagged),
        "signals": {name: decision.signals[name] for name in decision.flagged if name in decision.signals},
    }


class EscalationWebhook:
    def __init__(self, url: str, *, timeout_s: float = 5.0, retries: int = 2) -> None:
        self.url, self.timeout_s, self.retries = url, timeout_s, retries
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._sender, name="couchguard-escalation", daemon=True)
        self._thread.start()

    def observer(self, conversation, decision, context: dict[str, Any]) -> None:
        if decision.escalate:
            self._queue.put(escalation_event(decision, context))

    def flush(self) -> None:
        self._queue.join()

    def close(self) -> None:
        self._queue.put(_STOP)
        self._thread.join(timeout=self.timeout_s * (self.retries + 1) + 1)

    def _sender(self) -> None:
        with httpx.Client(timeout=self.timeout_s) as client:
            while True:
                event = self._queue.get()
                try:
                    if event is _STOP:
                        return
                    self._post(client, event)
                finally:
                    self._queue.task_done()

    def _post(self, client: httpx.Client, event: dict[str, Any]) -> None:
        try:
            response = self._retrying(client, event)
        except RetryError as exc:
            outcome = exc.last_attempt
            cause = outcome.exception() or f"HTTP {outcome.result().status_code}"
            log.error(
                "escalation webhook unreachable (%s); event for %s dropped (it is in the audit log with escalate=true)",
                cause,
                event.get("conversation_hash"),
            )
            return
        if response.status_code >= 400:
            log.error("escalation webhook refused the event: HTTP %s", response.status_code)

    def _retrying(self, client: httpx.Client, event: dict[str, Any]) -> httpx.Response:
        # transport errors and 5xx are worth another try (the receiver may be restarting); a 4xx will not change
        retrying = Retrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=0.2, max=5),
            retry=retry_if_exception_type(httpx.HTTPError) | retry_if_result(lambda r: r.status_code >= 500),
            before_sleep=lambda state: log.warning("escalation webhook attempt %d failed", state.attempt_number),
        )
        return retrying(client.post, self.url, json=event)
