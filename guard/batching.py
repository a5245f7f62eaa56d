"""Micro-batching of scoring: concurrent requests' texts go through the encoder together.

Under concurrent load, scoring each request in its own worker thread makes every request wait for the encoder lock
in turn and pay one forward pass (and one thread hop) of its own. The batcher instead queues each request's scoring
on the event loop; one worker takes what is waiting and scores it with one `SignalScorer.score_many` call per kind
of request, so that texts of similar length from different requests share forward passes.

- A request alone is not kept waiting for company: when the worker is idle it starts at once (after one turn of the
  event loop, which gathers the requests that arrived together). It lingers up to `max_wait_ms` only when more
  than one request is already waiting, i.e. when traffic is concurrent.
- A batch holds at most `max_batch` requests. Requests of one kind (input rail, or response with the user's scores
  known) are scored together, the cheapest kind first, and each kind's callers are answered as soon as that kind is
  scored, so that a short input-rail check never waits for a batch of long responses.
- The queue is bounded: beyond `max_queue` waiting requests `score` raises `BatcherFull` at once instead of growing
  the wait without limit.
- A failure is answered to the caller whose conversation caused it: when a batch fails, its requests are scored one
  by one and each caller gets its own result or its own exception.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Callable

import anyio

from classifiers.conversation import Conversation
from classifiers.scorer import SignalResult, SignalScorer
from classifiers.signals import Side

log = logging.getLogger("couchguard.batching")

Results = dict[str, SignalResult]
# (conversations, sides, user scores of each or None) -> results of each: SignalScorer.score_many's shape
ScoreMany = Callable[[list[Conversation], tuple[Side, ...], list[dict[str, float] | None]], list[Results]]

DEFAULT_MAX_BATCH = 16
DEFAULT_MAX_WAIT_MS = 2.0
DEFAULT_MAX_QUEUE = 1024


class BatcherFull(RuntimeError):
    """More scoring requests are waiting than the batcher's queue holds: the caller is refused, not queued."""


@dataclass
class _Request:
    conversation: Conversation
    sides: tuple[Side, ...]
    user_scores: dict[str, float] | None
    future: asyncio.Future
    arrived: float = field(default_factory=time.perf_counter)

    @property
    def cost(self) -> int:
        """A cheap proxy for the encoder work: the characters of the scored turn (input rails are short)."""
        return len(self.conversation.last.content)


class ScoreBatcher:
    """Batches `SignalScorer` calls from concurrent coroutines of one event loop (see the module docstring)."""

    def __init__(
        self,
        scorer: SignalScorer,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_wait_ms: float = DEFAULT_MAX_WAIT_MS,
        max_queue: int = DEFAULT_MAX_QUEUE,
        score_many: ScoreMany | None = None,
    ) -> None:
        if max_batch < 1 or max_queue < 1 or max_wait_ms < 0:
            raise ValueError("max_batch and max_queue must be at least 1, max_wait_ms at least 0")
        self.scorer = scorer
        self.max_batch, self.max_wait, self.max_queue = max_batch, max_wait_ms / 1000, max_queue
        self._score_many: ScoreMany = score_many or scorer.score_many
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[_Request] | None = None
        self._worker: asyncio.Task | None = None
        self.batches = 0  # batches run, and requests scored in them: how much batching happened
        self.scored = 0

    async def score(
        self,
        conversation: Conversation,
        sides: tuple[Side, ...] = ("user", "assistant"),
        user_scores: dict[str, float] | None = None,
    ) -> Results:
        """`SignalScorer.score(conversation, sides, user_scores)`, batched with concurrent callers."""
        queue = self._started()
        if queue.qsize() >= self.max_queue:
            raise BatcherFull(f"{queue.qsize()} scoring requests already waiting (batching.max_queue)")
        request = _Request(conversation, tuple(sides), user_scores or None, asyncio.get_running_loop().create_future())
        queue.put_nowait(request)
        return await request.future

    def _started(self) -> asyncio.Queue[_Request]:
        """The queue of the running loop, with its worker (a new loop, e.g. in tests, gets its own)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._queue is None or self._worker is None or self._worker.done():
            self._loop, self._queue = loop, asyncio.Queue()
            self._worker = loop.create_task(self._work(self._queue), name="couchguard-score-batcher")
        return self._queue

    async def _work(self, queue: asyncio.Queue[_Request]) -> None:
        while True:
            batch = [await queue.get()]
            await asyncio.sleep(0)  # requests sent in the same turn of the loop join this batch
            self._take(queue, batch)
            if 1 < len(batch) < self.max_batch and self.max_wait > 0:
                await self._linger(queue, batch)
            batch = [request for request in batch if not request.future.done()]  # callers that gave up
            if not batch:
                continue
            loop = asyncio.get_running_loop()
            try:
                await anyio.to_thread.run_sync(self._run, batch, loop)
            except BaseException as exc:  # cancelled (shutdown) or a bug in the batcher itself: nobody left waiting
                for request in batch:
                    if not request.future.done():
                        request.future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
                if not isinstance(exc, Exception):
                    raise
                log.exception("couchguard: score batch failed")

    def _take(self, queue: asyncio.Queue[_Request], batch: list[_Request]) -> None:
        while len(batch) < self.max_batch and not queue.empty():
            batch.append(queue.get_nowait())

    async def _linger(self, queue: asyncio.Queue[_Request], batch: list[_Request]) -> None:
        """Concurrent traffic: wait for more until the oldest request has waited `max_wait` or the batch is full."""
        deadline = batch[0].arrived + self.max_wait
        while len(batch) < self.max_batch:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return
            try:
                batch.append(await asyncio.wait_for(queue.get(), remaining))
            except asyncio.TimeoutError:
                return
            self._take(queue, batch)

    # -- in the worker thread --------------------------------------------------------------------------------------
    def _run(self, batch: list[_Request], loop: asyncio.AbstractEventLoop) -> None:
        groups: dict[tuple[Side, ...], list[_Request]] = {}
        for request in batch:
            groups.setdefault(request.sides, []).append(request)
        self.batches += 1
        self.scored += len(batch)
        # the cheapest kind first: its callers are answered before the long responses are encoded
        for sides, group in sorted(groups.items(), key=lambda item: sum(r.cost for r in item[1]) / len(item[1])):
            outcomes: list[Results | Exception]
            try:
                outcomes = list(
                    self._score_many([r.conversation for r in group], sides, [r.user_scores for r in group])
                )
            except Exception as exc:
                # one conversation may have caused it: scored alone, each caller gets its own result or error
                outcomes = [exc] if len(group) == 1 else [self._alone(request) for request in group]
            for request, outcome in zip(group, outcomes):
                loop.call_soon_threadsafe(_settle, request.future, outcome)

    def _alone(self, request: _Request) -> Results | Exception:
        try:
            return self._score_many([request.conversation], request.sides, [request.user_scores])[0]
        except Exception as exc:
            return exc


def _settle(future: asyncio.Future, outcome: Results | Exception) -> None:
    if future.done():  # the caller was cancelled meanwhile
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
