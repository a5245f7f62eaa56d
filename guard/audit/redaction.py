"""Redaction of audit text on its own thread, so the writer never waits on presidio.

Each message gets a time and length budget (budget.py). When more messages wait than the backlog allows, a new row
is passed on at once with its text withheld, so rows keep flowing under any load; at shutdown the remaining time is
shared among the waiting messages and what cannot be redacted in time is withheld. Raw text is never passed on.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable

from .budget import RedactionBudget

log = logging.getLogger("couchguard.audit")
_STOP = object()


def _withheld(reason: str, text: str | None) -> str | None:
    return f"[{reason}: {len(text)} chars withheld]" if text else text


class TextRedaction:
    def __init__(
        self,
        redactor_factory: Callable[[], Any],
        deliver: Callable[[dict[str, Any]], None],
        *,
        budget: RedactionBudget,
        backlog: int = 1_000,
    ) -> None:
        # a factory: presidio's engines load (seconds) on the first stored text, on this thread
        self._factory, self._deliver, self.budget, self.backlog = redactor_factory, deliver, budget, backlog
        self._queue: queue.Queue = queue.Queue()
        self._deadline: float | None = None
        # the row being redacted, and whether close() gave up on this thread: exactly one of them passes it on
        self._handover = threading.Lock()
        self._current: tuple | None = None
        self._abandoned = False

    def start(self) -> "TextRedaction":
        self._thread = threading.Thread(target=self._run, name="couchguard-audit-redaction", daemon=True)
        self._thread.start()
        return self

    def put(self, row: dict[str, Any], texts: tuple[str | None, str | None]) -> None:
        if self._queue.qsize() >= self.backlog:
            self._deliver(self._with_texts(row, texts, "redaction backlog full"))
            return
        self._queue.put((row, texts))

    def close(self, deadline: float) -> None:
        """Redact what waits until `deadline` (time.monotonic()), withhold the text of the rest, pass every row on.

        If redaction is stuck past the deadline (presidio hanging while it loads, say), the rows still waiting, and
        the one being redacted, are passed on here with their text withheld.
        """
        self._deadline = deadline
        self._queue.put((_STOP, None))
        self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if not self._thread.is_alive():
            return
        with self._handover:
            self._abandoned = True
            left = [self._current] if self._current is not None else []
        while True:
            try:
                left.append(self._queue.get_nowait())
            except queue.Empty:
                break
        for row, texts in left:
            if row is not _STOP:
                self._deliver(self._with_texts(row, texts, "redaction budget exceeded"))
        log.error("couchguard audit: redaction did not finish by shutdown; %d rows stored without text", len(left))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item[0] is _STOP:
                return
            with self._handover:
                if self._abandoned:
                    return
                self._current = item
            row, texts = item
            try:
                done = self._redacted(row, texts)
            except Exception:  # never raw text, never a lost row
                log.exception("couchguard audit: redaction failed; the row is stored without its text")
                done = self._with_texts(row, texts, "redaction failed")
            with self._handover:  # close() may have passed this row on already
                if self._abandoned:
                    return
                self._current = None
                self._deliver(done)

    def _redacted(self, row: dict[str, Any], texts) -> dict[str, Any]:
        budget = self.budget
        if self._deadline is not None:  # shutting down: share what time is left among the waiting messages
            left = self._deadline - time.monotonic()
            budget = budget.shrunk(left / (2 * (self._queue.qsize() + 1)))
        redactor = self._factory()
        message, delivered = texts
        return {
            **row,
            "message_text": redactor.redact(message, budget),
            "delivered_text": redactor.redact(delivered, budget),
        }

    @staticmethod
    def _with_texts(row: dict[str, Any], texts, reason: str) -> dict[str, Any]:
        message, delivered = texts
        return {**row, "message_text": _withheld(reason, message), "delivered_text": _withheld(reason, delivered)}
