"""Checked streaming: no text reaches the client before the output rules have passed it.

Upstream tokens are buffered by a reader task; the relay releases them in sentence windows, each checked with all
the response so far as context. Windows size themselves: while one is being scored, tokens keep arriving, and the
next window takes every complete sentence that is waiting, so checks never fall behind a fast model. They also grow
(`next_window`): each check re-encodes the whole response so far, so after the first sentence a window waits until
it would multiply the released text by `stream.window_growth`.

A window that fails is not the answer: a sentence can read as harm alone and be sound in context (a suggestion the
next sentence takes back), and the text so far would pick a rewrite or template the whole answer does not call for.
So on a window violation the relay holds (nothing more is released) but keeps reading, and the output rail decides on
the whole answer, exactly as for a non-streamed one: if that passes, the rest is released; if not, its rewrite or
template follows the text already sent. Holding is bounded by the upstream's own timeouts (a silent stream is cut)
and by `timeout_s` from the first failed window; past that, the rail decides on what has arrived.
The trade-off: the first text arrives about one sentence (plus one scoring pass) later than an unchecked stream.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import anyio

from classifiers.encoder import sentence_spans

from ..actions import delivers
from ..decision import Decision
from .config import StreamConfig
from .exchange import Exchange
from .metrics import Metrics
from .models import guard_info
from .sse import DONE, ChunkWriter
from .upstream import Delta, UpstreamError

log = logging.getLogger("couchguard.proxy")

# the failure event of a stream whose client left before the output rail decided (audited, never `allow`)
CLIENT_DISCONNECTED = "client_disconnected"


class StreamFailed(Exception):
    """The upstream failed before any byte of the stream was produced, and the fail mode surfaces the failure: the
    route answers with the failure's HTTP status and OpenAI's error body instead of a 200 carrying an SSE error."""

    def __init__(self, error: UpstreamError, decision: Decision) -> None:
        super().__init__(error.message)
        self.error, self.decision = error, decision


def last_boundary(text: str, start: int) -> int | None:
    """Where the last complete sentence of `text` ends, if beyond `start`.

    Sentences are the classifiers' own (`sentence_spans`), so a window is cut where the scorer cuts sentences. A
    sentence is complete once the boundary after it has arrived: the end of the buffer is no boundary ("3." may
    become "3.5")."""
    spans = sentence_spans(text)
    complete = spans[:-1] if spans and spans[-1][1] == len(text) else spans
    cut = complete[-1][1] if complete else None
    return cut if cut is not None and cut > start else None


def remainder(text: str, sent: str) -> str:
    """What to send after `sent` so the client ends with `text`: the rest of it when `sent` is its beginning
    (allow, annotate, a removal), else the whole text after a paragraph break (a rewrite or template)."""
    if text.startswith(sent):
        return text[len(sent) :]
    return ("\n\n" if sent else "") + text


@dataclass
class Received:
    text: str = ""
    # one entry per upstream delta: tool-call fragments are relayed in the order and grouping they came in
    tool_calls: list[list[dict[str, Any]]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    done: bool = False
    error: UpstreamError | None = None
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0
    changed: asyncio.Event = field(default_factory=asyncio.Event)


async def _read(deltas: AsyncIterator[Delta], received: Received, request_id: str) -> None:
    try:
        async for delta in deltas:
            received.text += delta.text
            if delta.tool_calls:
                received.tool_calls.append(delta.tool_calls)
            received.finish_reason = delta.finish_reason or received.finish_reason
            received.usage = delta.usage or received.usage
            received.changed.set()
    except UpstreamError as error:
        received.error = error
    except Exception:  # anything else from the upstream is a cut stream too
        log.warning("couchguard: upstream stream failed for request %s", request_id, exc_info=True)
        received.error = UpstreamError("cut", "the upstream model's stream was cut", 502)  # details: the log
    finally:
        received.seconds = time.perf_counter() - received.started
        received.done = True
        received.changed.set()


def next_window(shown: str, sent: int, windows: StreamConfig) -> int | None:
    """Where the next window to check ends, `sent` characters of `shown` being out; None to wait for more text.

    Every check scores the whole response so far, so its cost grows with what was already sent: a window must hold
    `min_window_chars` of complete sentences and bring the released text to `window_growth` times its length. The
    first window is one sentence whatever the growth (the first checked token is not delayed); later ones grow
    geometrically, so that a stream's checks add up to about `growth / (growth - 1)` passes over the answer instead
    of one per sentence."""
    cut = last_boundary(shown, sent)
    needed = max(windows.min_window_chars, math.ceil((windows.window_growth - 1.0) * sent))
    return cut if cut is not None and cut - sent >= needed else None


async def checked_stream(
    ex: Exchange,
    metrics: Metrics,
    writer: ChunkWriter,
    *,
    windows: StreamConfig | None = None,
    include_usage: bool = False,
) -> AsyncIterator[bytes]:
    windows = windows or StreamConfig()
    decision = ex.input_decision
    if decision is not None and not delivers(decision.action, "input"):  # answered by the guard, model not called
        yield writer.content(decision.text or "")
        yield writer.final("stop", guard_info(decision))
        yield DONE
        return
    messages = await anyio.to_thread.run_sync(ex.upstream_messages)
    received = Received()
    reader = asyncio.create_task(_read(ex.upstream.stream(messages), received, ex.request_id))
    sent = ""
    decided = False  # whether an output decision has been recorded (audited) for this stream
    try:
        held_since: float | None = None  # set by the first window that fails: nothing more is released
        while not received.done:
            if held_since is None:
                await received.changed.wait()
            elif not await _wait(received.changed, held_since + ex.upstream.config.timeout_s - time.perf_counter()):
                log.warning(
                    "couchguard: held stream of request %s still open after the upstream timeout", ex.request_id
                )
                reader.cancel()  # the rail decides on what has arrived, which a window has already failed
                break
            received.changed.clear()
            if received.done or held_since is not None:
                continue  # the whole response is in (the final rail checks the tail), or held until it is
            shown = ex.restore(received.text)
            cut = next_window(shown, len(sent), windows)
            if cut is None:
                continue
            if not await ex.window_allowed(shown[:cut]):
                held_since = time.perf_counter()
                continue
            yield writer.content(shown[len(sent) : cut])
            sent = shown[:cut]

        metrics.upstream_seconds.labels("true").observe(received.seconds or time.perf_counter() - received.started)
        if received.error is not None:
            outcome = ex.upstream_failed(received.error, received.seconds * 1000)
            decided = True
            if outcome.action != "block":  # fail-open: surface the failure, send nothing unchecked
                if not sent:  # nothing has left yet: the status line can still say what happened
                    raise StreamFailed(received.error, outcome)
                yield writer.error(received.error.message, outcome.strategy or "upstream_error")
                yield DONE
                return
        else:
            outcome = await ex.output_rail(ex.restore(received.text), upstream_ms=received.seconds * 1000 or None)
            decided = True
        async for chunk in _finish(outcome, received, writer, sent, include_usage):
            yield chunk
    except (GeneratorExit, asyncio.CancelledError):
        # the client left mid-stream: what it received was checked; the audit still gets the output rail's row
        if not decided:
            ex.fail("output", CLIENT_DISCONNECTED, text=None, unchecked=False, context=ex.context())
        raise
    finally:
        reader.cancel()


async def _wait(event: asyncio.Event, seconds: float) -> bool:
    """Whether `event` is set within `seconds`."""
    try:
        await asyncio.wait_for(event.wait(), max(seconds, 0.0))
    except asyncio.TimeoutError:
        return False
    return True


async def _finish(
    outcome: Decision, received: Received, writer: ChunkWriter, sent: str, include_usage: bool
) -> AsyncIterator[bytes]:
    rest = remainder(outcome.text or "", sent)
    if rest:
        yield writer.content(rest)
    delivered = delivers(outcome.action)
    for calls in received.tool_calls if delivered else ():
        yield writer.tool_calls(calls)
    finish = (received.finish_reason or "stop") if delivered else "stop"
    yield writer.final(finish, guard_info(outcome), received.usage if include_usage else None)
    yield DONE
