"""The audit log: SQLite by default, PostgreSQL (or any SQLAlchemy URL) by configuration, one SQL layer.

A rail only snapshots its decision and returns. Rows with text go through redaction on one thread (redaction.py),
then every row to the writer on another (writer.py), which buffers and retries while the database is away;
`flush()` waits until everything recorded so far is settled (tests), `close()` drains both before shutdown.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable

from sqlalchemy import select
from sqlalchemy.engine import Engine

from ..messages import as_dicts
from .budget import RedactionBudget
from .database import make_engine
from .redaction import TextRedaction
from .schema import decisions
from .writer import RowWriter

log = logging.getLogger("couchguard.audit")


def conversation_hash(messages: list[dict[str, Any]], key: bytes | None = None) -> str:
    canonical = json.dumps(
        [[m.get("role"), m.get("content")] for m in messages], sort_keys=True, ensure_ascii=False, default=str
    ).encode()
    if key:
        return hmac.new(key, canonical, hashlib.sha256).hexdigest()
    return hashlib.sha256(canonical).hexdigest()


def _elapsed_ms(context: dict[str, Any]) -> float | None:
    started = context.get("rail_started")
    return (time.perf_counter() - started) * 1000 if started is not None else None


class AuditLog:
    """`observer` plugs into Guard.observers; constructing stores parameters, `start()` connects."""

    def __init__(
        self,
        url: str = "sqlite:///couchguard-audit.db",
        *,
        store_text: bool = False,
        redactor: Callable[[], Any] | None = None,
        hash_key: bytes | None = None,
        budget: RedactionBudget | None = None,
        buffer_rows: int = 50_000,
        redaction_backlog: int = 1_000,
        drain_timeout_s: float = 15.0,
    ) -> None:
        self.url, self.store_text, self.hash_key = url, store_text, hash_key
        # a factory: the presidio engines load only if text is ever stored
        self._redactor_factory = redactor
        self.budget = budget or RedactionBudget()
        self.buffer_rows, self.redaction_backlog, self.drain_timeout_s = buffer_rows, redaction_backlog, drain_timeout_s
        self._accepted = 0
        self._accepting = False
        self._lock = threading.Lock()

    def start(self) -> "AuditLog":
        """Connects and creates the table; a database that is down is not fatal (rows wait for it), a URL that can
        never work is."""
        self.engine_: Engine = make_engine(self.url)
        self._writer = RowWriter(self.engine_, buffer_rows=self.buffer_rows)
        self._writer.create_schema_now()
        self._writer.start()
        self._redaction = None
        if self._redactor_factory is not None:
            self._redaction = TextRedaction(
                self._redactor_factory, self._writer.put, budget=self.budget, backlog=self.redaction_backlog
            ).start()
        self._accepting = True
        return self

    @property
    def dropped(self) -> int:
        """Rows lost because the buffer was full during a database outage."""
        return self._writer.dropped

    @property
    def pending(self) -> int:
        """Rows accepted by the writer and not yet committed."""
        return self._writer.pending

    # -- recording -------------------------------------------------------------------------------------------------
    def observer(self, conversation, decision, context: dict[str, Any]) -> None:
        """Guard observer: snapshot what is needed now (context is mutable), write later."""
        messages = as_dicts(conversation)
        if decision.rail == "output":
            request_messages = messages[:-1]
        else:
            request_messages = messages
        row = {
            "created_at": datetime.now(timezone.utc),
            "request_id": context.get("request_id"),
            "product": context.get("product"),
            "policy": context.get("policy"),
            "conversation_hash": context.get("conversation_hash") or conversation_hash(request_messages, self.hash_key),
            "rail": decision.rail,
            "action": decision.action,
            "rules": list(decision.rules),
            "flagged": list(decision.flagged),
            "scores": dict(decision.signals),
            "escalate": decision.escalate,
            "event": context.get("event"),
            "stream": context.get("stream"),
            "strategy": decision.strategy,
            "decision_ms": context.get("decision_ms") or _elapsed_ms(context),
            "classifier_ms": context.get("classifier_ms"),
            "upstream_ms": context.get("upstream_ms"),
            "judge": [call.model_dump() for call in decision.judge] or None,
        }
        # a policy may ask for text too (policy.store_text, passed by the proxy in the context)
        store = self.store_text or bool(context.get("store_text"))
        with self._lock:  # held while queueing (never blocks), so close() cannot slip between count and queue
            if not self._accepting:
                log.error("couchguard audit: a decision arrived after the audit log was closed; not recorded")
                return
            self._accepted += 1
            # text is stored redacted or not at all: without a redactor there is no text column to fill
            if store and self._redaction is not None:
                self._redaction.put(row, (messages[-1]["content"] if messages else None, decision.text))
            else:
                self._writer.put(row)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every row recorded so far is written (or dropped); False if `timeout` passed first."""
        with self._lock:
            target = self._accepted
        return self._writer.wait_settled(target, timeout)

    def close(self) -> None:
        """Stop accepting, then redact and write what was accepted, within `drain_timeout_s`."""
        if not hasattr(self, "_writer"):
            return
        with self._lock:
            if not self._accepting:
                return
            self._accepting = False
        deadline = time.monotonic() + self.drain_timeout_s
        if self._redaction is not None:
            self._redaction.close(deadline)
        self._writer.close(deadline)
        self.engine_.dispose()

    # -- reading ---------------------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        self.flush(timeout=120)
        with self.engine_.connect() as connection:
            return [dict(r._mapping) for r in connection.execute(select(decisions).order_by(decisions.c.id))]
