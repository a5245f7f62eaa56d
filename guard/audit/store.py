"""The audit log: SQLite by default, PostgreSQL (or any SQLAlchemy URL) by configuration, one SQL layer.

Rows are written by one background thread, so a rail never waits on the database or on PII redaction; `flush()`
waits until everything recorded so far is committed (tests, shutdown).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable

from sqlalchemy import create_engine, select
from sqlalchemy.engine import Engine

from .schema import decisions, metadata

log = logging.getLogger("couchguard.audit")
_STOP = object()


def conversation_hash(messages: list[dict[str, Any]], key: bytes | None = None) -> str:
    canonical = json.dumps([[m.get("role"), m.get("content")] for m in messages], sort_keys=True,
                           ensure_ascii=False, default=str).encode()
    if key:
        return hmac.new(key, canonical, hashlib.sha256).hexdigest()
    return hashlib.sha256(canonical).hexdigest()


def _elapsed_ms(context: dict[str, Any]) -> float | None:
    started = context.get("rail_started")
    return (time.perf_counter() - started) * 1000 if started is not None else None


class AuditLog:
    """`observer` plugs into Guard.observers; constructing stores parameters, `start()` connects."""

    def __init__(self, url: str = "sqlite:///couchguard-audit.db", *, store_text: bool = False,
                 redactor: Callable[[], Any] | None = None, hash_key: bytes | None = None) -> None:
        self.url, self.store_text, self.hash_key = url, store_text, hash_key
        # a factory: the presidio engines load only if text is ever stored
        self._redactor_factory = redactor
        self._queue: queue.Queue = queue.Queue()

    def start(self) -> "AuditLog":
        connect_args = {"check_same_thread": False} if self.url.startswith("sqlite") else {}
        self.engine_: Engine = create_engine(self.url, connect_args=connect_args, future=True)
        metadata.create_all(self.engine_)
        self._thread = threading.Thread(target=self._writer, name="couchguard-audit", daemon=True)
        self._thread.start()
        return self

    # -- recording -------------------------------------------------------------------------------------------------
    def observer(self, conversation, decision, context: dict[str, Any]) -> None:
        """Guard observer: snapshot what is needed now (context is mutable), write later."""
        messages = [{"role": m.role, "content": m.content} for m in conversation.messages]
        if decision.rail == "output":
            request_messages = messages[:-1]
        else:
            request_messages = messages
        row = {
            "created_at": datetime.now(timezone.utc),
            "request_id": context.get("request_id"),
            "product": context.get("product"),
            "policy": context.get("policy"),
            "conversation_hash": context.get("conversation_hash")
            or conversation_hash(request_messages, self.hash_key),
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
        }
        # a policy may ask for text too (policy.store_text, passed by the proxy in the context)
        store = self.store_text or bool(context.get("store_text"))
        texts = (messages[-1]["content"] if messages else None, decision.text) if store else None
        self._queue.put((row, texts))

    def flush(self, timeout: float | None = None) -> None:
        self._queue.join()

    def close(self) -> None:
        if hasattr(self, "_thread"):
            self._queue.put((_STOP, None))
            self._thread.join(timeout=10)
            self.engine_.dispose()

    # -- writing ---------------------------------------------------------------------------------------------------
    def _writer(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:  # take what else is waiting: one transaction for a burst of decisions
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(row is _STOP for row, _ in batch)
            rows = [self._with_text(row, texts) for row, texts in batch if row is not _STOP]
            try:
                if rows:
                    with self.engine_.begin() as connection:
                        connection.execute(decisions.insert(), rows)
            except Exception:  # the audit must never take the proxy down; the failure is logged loudly
                log.exception("couchguard audit: could not write %d rows", len(rows))
            finally:
                for _ in batch:
                    self._queue.task_done()
            if stop:
                return

    def _with_text(self, row: dict, texts) -> dict:
        # text is stored redacted or not at all: without a redactor there is no text column to fill
        if texts is not None and self._redactor_factory is not None:
            message, delivered = texts
            redactor = self._redactor_factory()
            row["message_text"] = redactor.redact(message)
            row["delivered_text"] = redactor.redact(delivered)
        return row

    # -- reading ---------------------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        self.flush()
        with self.engine_.connect() as connection:
            return [dict(r._mapping) for r in connection.execute(select(decisions).order_by(decisions.c.id))]
