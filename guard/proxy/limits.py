"""Backpressure: a bounded number of chat requests in flight per replica, a small bounded wait, then 429.

One event loop serves the app, so the counters need no lock: every change happens between two awaits. A slot is
handed straight from a finishing request to the first waiter, so a waiter cannot be overtaken by a request that
arrived later.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Callable

from .config import ConcurrencyConfig


class Slot:
    """One held place among the requests in flight; `release()` may be called any number of times."""

    def __init__(self, limit: "ConcurrencyLimit") -> None:
        self._limit: ConcurrencyLimit | None = limit

    def release(self) -> None:
        limit, self._limit = self._limit, None
        if limit is not None:
            limit._release()


class ConcurrencyLimit:
    def __init__(self, config: ConcurrencyConfig) -> None:
        self.config = config
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        # called when the last request in flight has ended (the proxy hands freed memory back then)
        self.on_idle: Callable[[], None] | None = None

    @property
    def waiting(self) -> int:
        return sum(1 for waiter in self._waiters if not waiter.done())

    async def acquire(self) -> Slot | None:
        """A slot, or None when the replica is full and the wait queue is full or the wait ran out."""
        if self.in_flight < self.config.max_in_flight and not self._waiters:
            self.in_flight += 1
            return Slot(self)
        if self.waiting >= self.config.max_waiting:
            return None
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.config.max_wait_s)
        except asyncio.TimeoutError:
            if waiter.done():  # handed a slot just as the wait ran out: it is ours
                return Slot(self)
            waiter.cancel()
            self._discard(waiter)
            return None
        except asyncio.CancelledError:  # the client went away while waiting
            if waiter.done() and not waiter.cancelled():
                self._release()  # a slot was handed over: pass it on
            else:
                waiter.cancel()
                self._discard(waiter)
            raise
        return Slot(self)

    def _discard(self, waiter: asyncio.Future[None]) -> None:
        try:
            self._waiters.remove(waiter)
        except ValueError:
            pass

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes to the waiter: in_flight is unchanged
                return
        self.in_flight -= 1
        if self.in_flight == 0 and self.on_idle is not None:
            self.on_idle()
