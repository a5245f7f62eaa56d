"""The audit writer: one thread that commits rows in batches and outlives a database outage.

Rows wait in a bounded buffer. A batch that fails for a transient reason (the server is down or restarting) is
retried with exponential backoff (tenacity) and then kept, while new rows keep arriving, until the database is back.
A batch the database refuses for its content is split, so one bad row is dropped alone and never holds up the
others. When the buffer is full, new rows are dropped and counted (`dropped`), with an error in the log: the proxy
keeps answering, because an audit outage must not become a care outage.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from typing import Any

from sqlalchemy.engine import Engine
from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential
from tenacity.stop import stop_base

from .database import create_schema, is_transient
from .schema import decisions

log = logging.getLogger("couchguard.audit")
_STOP = object()


class RowWriter:
    def __init__(
        self,
        engine: Engine,
        *,
        buffer_rows: int = 50_000,
        batch_rows: int = 500,
        attempts: int = 4,
        max_backoff_s: float = 5.0,
    ) -> None:
        self.engine, self.buffer_rows, self.batch_rows = engine, buffer_rows, batch_rows
        self.attempts, self.max_backoff_s = attempts, max_backoff_s
        self.dropped = 0  # buffer full
        self.rejected = 0  # refused by the database for their content
        self.written = 0
        self._queue: queue.Queue = queue.Queue()
        self._backlog = 0  # rows queued or pending, not yet settled
        self._settled = 0  # rows written, dropped or rejected
        self._changed = threading.Condition()
        self._closing = threading.Event()
        self._deadline = float("inf")
        self._schema_ready = False
        self._outage_since: float | None = None

    def start(self) -> "RowWriter":
        self._thread = threading.Thread(target=self._run, name="couchguard-audit-writer", daemon=True)
        self._thread.start()
        return self

    # -- producer side ---------------------------------------------------------------------------------------------
    def put(self, row: dict[str, Any]) -> None:
        """Never blocks: the row is queued, or dropped and counted when the buffer is full."""
        with self._changed:
            if self._backlog >= self.buffer_rows:
                self.dropped += 1
                self._settled += 1
                self._changed.notify_all()
                if self.dropped == 1 or self.dropped % 1000 == 0:
                    log.error(
                        "couchguard audit: buffer full (%d rows), %d rows dropped so far",
                        self.buffer_rows,
                        self.dropped,
                    )
                return
            self._backlog += 1
        self._queue.put(row)

    @property
    def pending(self) -> int:
        return self._backlog

    def wait_settled(self, target: int, timeout: float | None = None) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._settled >= target, timeout)

    def create_schema_now(self) -> bool:
        """One quick attempt at start-up; when the database is down the writer keeps trying before its first write."""
        try:
            self._ensure_schema()
            return True
        except Exception as exc:
            if not is_transient(exc):
                raise
            log.warning(
                "couchguard audit: database unavailable at start-up (%s); rows are buffered until it is back",
                exc.__class__.__name__,
            )
            return False

    def close(self, deadline: float) -> None:
        """Write what was accepted, until `deadline` (time.monotonic()); rows still unwritten then are logged lost."""
        self._deadline = deadline
        self._closing.set()
        self._queue.put(_STOP)
        self._thread.join(timeout=max(0.0, deadline - time.monotonic()) + 5)

    # -- the thread ------------------------------------------------------------------------------------------------
    def _run(self) -> None:
        pending: deque = deque()
        stop = False
        backoff, next_try = 0.0, 0.0
        while True:
            now = time.monotonic()
            if not pending:
                timeout = None  # nothing to retry: wait for rows
            else:
                timeout = max(0.0, min(next_try, self._deadline) - now)
            try:
                item = self._queue.get(timeout=timeout)
                while True:
                    if item is _STOP:
                        stop = True
                    else:
                        pending.append(item)
                    item = self._queue.get_nowait()
            except queue.Empty:
                pass
            if pending and time.monotonic() >= next_try:
                while pending and self._write_batch(pending):
                    pass
                # rows left means the database is unavailable: back off, longer each time, new rows keep queueing
                backoff = min(self.max_backoff_s, max(0.25, backoff * 2)) if pending else 0.0
                next_try = time.monotonic() + backoff
            if stop and (not pending or time.monotonic() >= self._deadline):
                if pending:
                    log.error(
                        "couchguard audit: database still unavailable at shutdown, %d rows not written", len(pending)
                    )
                    self._settle(len(pending))
                return

    def _write_batch(self, pending: deque) -> bool:
        """Write the first batch of `pending`; False when the database is unavailable (the rows stay)."""
        batch = [pending[i] for i in range(min(self.batch_rows, len(pending)))]
        try:
            self._retrying()(self._insert, batch)
        except Exception as exc:
            if is_transient(exc):
                if self._outage_since is None:
                    self._outage_since = time.monotonic()
                    log.error(
                        "couchguard audit: database unavailable (%s); buffering rows (%d now, at most %d)",
                        exc.__class__.__name__,
                        len(pending),
                        self.buffer_rows,
                    )
                return False
            return self._insert_one_by_one(pending, len(batch))
        if self._outage_since is not None:
            log.warning("couchguard audit: database back after %.1f s", time.monotonic() - self._outage_since)
            self._outage_since = None
        self.written += len(batch)
        for _ in batch:
            pending.popleft()
        self._settle(len(batch))
        return True

    def _insert_one_by_one(self, pending: deque, n: int) -> bool:
        """The database refused a batch for its content: find the rows it refuses and drop only those."""
        for _ in range(n):
            row = pending[0]
            try:
                self._insert([row])
                self.written += 1
            except Exception as exc:
                if is_transient(exc):
                    return False  # an outage mid-way: the rows written so far are already settled
                self.rejected += 1
                log.error(
                    "couchguard audit: row for request %s refused by the database: %s",
                    row.get("request_id"),
                    exc.__class__.__name__,
                )
            pending.popleft()
            self._settle(1)
        return True

    def _retrying(self) -> Retrying:
        # while closing, retry only as long as the shutdown allows
        limit: stop_base = stop_after_attempt(self.attempts)
        if self._closing.is_set():
            limit = limit | stop_after_delay(max(0.0, self._deadline - time.monotonic()))
        return Retrying(
            stop=limit,
            wait=wait_exponential(multiplier=0.1, max=1.0),
            retry=retry_if_exception(is_transient),
            reraise=True,
        )

    def _insert(self, rows: list[dict]) -> None:
        try:
            if not self._schema_ready:
                self._ensure_schema()
            with self.engine.begin() as connection:
                connection.execute(decisions.insert(), rows)
        except Exception:
            self._schema_ready = False  # a dropped table or a new server is set up again on the next attempt
            raise

    def _ensure_schema(self) -> None:
        create_schema(self.engine)
        self._schema_ready = True

    def _settle(self, n: int) -> None:
        with self._changed:
            self._backlog -= n
            self._settled += n
            self._changed.notify_all()
