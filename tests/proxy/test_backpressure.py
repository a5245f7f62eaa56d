"""Backpressure: at most `max_in_flight` chat requests per replica (a stream until it ends), then 429 with Retry-After
in OpenAI's error shape; health and metrics are never refused. And an upstream that refuses a streamed request
before any byte has left is answered with its HTTP status, not a 200 carrying an SSE error.

The servers are real (uvicorn on loopback); "held" streams stop after their first sentence until the test releases
them, so which requests hold a slot is decided by events, not by timing."""

from __future__ import annotations

import asyncio
import json
import os
import re

import httpx
import pytest

from guard.proxy.config import ConcurrencyConfig, ConfigError, load_config, parse_config
from guard.proxy.limits import ConcurrencyLimit

from .helpers import STRESS, hash_of, sse_events, streamed_text, user
from .upstream_server import REJECTION, SAFE, Script, build_app, serving, start_proxy

LIMIT, EXTRA, RETRY_AFTER = 2, 3, 2
MAIN, OPEN = "k-main", "k-open"


@pytest.fixture(scope="module")
def held_upstream():
    script = Script()
    with serving(build_app(script), script) as server:
        yield server
        script.release.set()  # never leave a held stream behind


def _proxy(upstream, directory, **concurrency):
    from guard.proxy import create_app

    os.environ.setdefault("COUCHGUARD_TEST_UPSTREAM_KEY", "sk-upstream-dummy")
    open_policy = directory / "open.yaml"
    open_policy.write_text("name: open\nextends: mental-health\nfail_mode: open\n")
    config = parse_config(
        {
            "upstream": {
                "api_base": f"{upstream.url}/v1",
                "api_key_env": "COUCHGUARD_TEST_UPSTREAM_KEY",
                "timeout_s": 5,
                # held streams are silent until released; the test, not this timeout, ends them
                "stream_idle_timeout_s": 60,
            },
            "models": {name: f"openai/{name}" for name in ("safe", "held", "reject", "error")},
            "audit": {"url": f"sqlite:///{directory / 'audit.db'}"},
            "concurrency": concurrency,
            "products": {
                "main": {"keys": [MAIN], "policy": "mental-health"},
                "open": {"keys": [OPEN], "policy": str(open_policy)},
            },
        }
    )
    app = create_app(config)
    server = start_proxy(app)
    server.state = app.state.couchguard  # type: ignore[attr-defined]
    return server


@pytest.fixture(scope="module")
def limited(held_upstream, scorer, tmp_path_factory):
    server = _proxy(held_upstream, tmp_path_factory.mktemp("limited"), max_in_flight=LIMIT, retry_after_s=RETRY_AFTER)
    yield server
    server.stop()


def _request(model: str, text: str, *, stream: bool = True) -> dict:
    return {"model": model, "messages": user(text), "stream": stream}


async def _open(http: httpx.AsyncClient, body: dict, opened: asyncio.Queue, key: str = MAIN):
    """Sends one request, reports its status as soon as the headers are in, then reads it to the end."""
    async with http.stream(
        "POST", "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {key}"}
    ) as response:
        await opened.put(response.status_code)
        return response.status_code, response.headers, await response.aread()


async def _until(condition, what: str, seconds: float = 60) -> None:
    """Waits for a state the server reaches by itself (a slot released after the last byte), with a generous bound."""
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting until {what}")


def _metric(text: str, name: str, labels: str = "") -> float:
    match = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


def _assert_too_busy(status: int, headers, body: bytes) -> None:
    assert status == 429
    assert headers["retry-after"] == str(RETRY_AFTER)
    error = json.loads(body)["error"]
    assert error["type"] == "rate_limit_error" and error["code"] == "concurrency_limit_exceeded"
    assert f"limit of {LIMIT} concurrent requests" in error["message"]


@pytest.mark.slow
def test_requests_beyond_the_limit_get_429_the_rest_complete_and_health_is_never_refused(limited, held_upstream):
    script, state = held_upstream.script, limited.state
    script.release.clear()

    async def scenario():
        opened: asyncio.Queue = asyncio.Queue()
        async with httpx.AsyncClient(base_url=limited.url, timeout=90) as http:
            before = _metric((await http.get("/metrics")).text, "couchguard_refused_requests_total", '{product="main"}')
            tasks = [
                asyncio.create_task(_open(http, _request("held", f"{STRESS} (held {i})"), opened))
                for i in range(LIMIT + EXTRA)
            ]
            # every request has its status while the admitted streams are still held open upstream
            statuses = [await asyncio.wait_for(opened.get(), 90) for _ in tasks]
            assert sorted(statuses) == [200] * LIMIT + [429] * EXTRA
            assert state.limit.in_flight == LIMIT

            # full, yet health and metrics answer; a non-streamed chat request is refused like a stream
            assert (await http.get("/healthz")).status_code == 200
            metrics = (await http.get("/metrics")).text
            assert _metric(metrics, "couchguard_in_flight_requests") == LIMIT
            refused = _metric(metrics, "couchguard_refused_requests_total", '{product="main"}')
            assert refused - before == EXTRA
            plain = await http.post(
                "/v1/chat/completions",
                json=_request("safe", f"{STRESS} (while full)", stream=False),
                headers={"authorization": f"Bearer {MAIN}"},
            )
            _assert_too_busy(plain.status_code, plain.headers, plain.content)

            script.release.set()
            results = await asyncio.gather(*tasks)
            for status, headers, body in results:
                if status == 429:
                    _assert_too_busy(status, headers, body)
                else:
                    assert body.endswith(b"data: [DONE]\n\n")
                    events = sse_events(body)
                    assert streamed_text(events) == SAFE and events[-1]["couchguard"]["action"] == "allow"

            # the slots come back once the streams have ended, and new requests are answered
            await _until(lambda: state.limit.in_flight == 0, "every slot is released")
            again = await asyncio.gather(
                *(_open(http, _request("safe", f"{STRESS} (after {i})"), asyncio.Queue()) for i in range(LIMIT))
            )
            assert [status for status, _, _ in again] == [200] * LIMIT
            assert all(streamed_text(sse_events(body)) == SAFE for _, _, body in again)

    asyncio.run(scenario())
    # refused requests were neither scored nor forwarded: the upstream saw only the admitted ones
    held = [r for r in script.requests if r["model"] == "held"]
    assert len(held) == LIMIT


@pytest.mark.slow
def test_a_bounded_queue_waits_for_a_slot_before_refusing(held_upstream, scorer, tmp_path_factory):
    script = held_upstream.script
    script.release.clear()
    server = _proxy(held_upstream, tmp_path_factory.mktemp("queued"), max_in_flight=1, max_waiting=1, max_wait_s=60)
    limit = server.state.limit

    async def scenario():
        async with httpx.AsyncClient(base_url=server.url, timeout=90) as http:
            opened: asyncio.Queue = asyncio.Queue()
            holder = asyncio.create_task(_open(http, _request("held", f"{STRESS} (holder)"), opened))
            assert await asyncio.wait_for(opened.get(), 90) == 200
            waiter = asyncio.create_task(_open(http, _request("safe", f"{STRESS} (waiter)"), opened))
            await _until(lambda: limit.waiting == 1, "the second request waits")
            third = await http.post(
                "/v1/chat/completions",
                json=_request("safe", f"{STRESS} (third)"),
                headers={"authorization": f"Bearer {MAIN}"},
            )
            assert third.status_code == 429  # the queue holds one
            assert not waiter.done()
            script.release.set()
            (held_status, _, _), (waited_status, _, body) = await asyncio.gather(holder, waiter)
            assert (held_status, waited_status) == (200, 200)
            assert streamed_text(sse_events(body)) == SAFE

    try:
        asyncio.run(scenario())
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
def test_an_upstream_4xx_is_answered_with_its_status_and_a_sanitized_message(limited, held_upstream, stream):
    messages = user(f"{STRESS} (rejected, stream={stream})")
    response = httpx.post(
        f"{limited.url}/v1/chat/completions",
        json={"model": "reject", "messages": messages, "stream": stream},
        headers={"authorization": f"Bearer {MAIN}"},
        timeout=60,
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"} and error["type"] == "upstream_error"
    assert error["message"] == "the upstream model rejected the request as invalid (HTTP 400)"
    for secret in ("sk-scripted", "10.0.0.7", "litellm", "OpenAIException", REJECTION["message"]):
        assert secret not in response.text
    rows = [r for r in limited.state.audit.rows() if r["conversation_hash"] == hash_of(messages)]
    assert [r["rail"] for r in rows] == ["input", "output"]
    assert (rows[1]["action"], rows[1]["event"]) == ("error", "upstream_rejected")


@pytest.mark.slow
def test_a_stream_that_fails_before_its_first_byte_under_fail_open_gets_a_502(limited):
    messages = user(f"{STRESS} (open, failed before the first byte)")
    response = httpx.post(
        f"{limited.url}/v1/chat/completions",
        json={"model": "error", "messages": messages, "stream": True},
        headers={"authorization": f"Bearer {OPEN}"},
        timeout=60,
    )
    assert response.status_code == 502
    assert response.json()["error"]["message"] == "the upstream model failed (HTTP 500)"
    assert response.headers["x-couchguard-action"] == "error"


# -- without a server ----------------------------------------------------------------------------------------------
def test_the_limit_hands_a_slot_to_the_first_waiter_and_refuses_past_the_queue():
    async def scenario():
        limit = ConcurrencyLimit(ConcurrencyConfig(max_in_flight=1, max_waiting=1, max_wait_s=30))
        idle: list[int] = []
        limit.on_idle = lambda: idle.append(limit.in_flight)
        first = await limit.acquire()
        assert first is not None and limit.in_flight == 1
        waiting = asyncio.create_task(limit.acquire())
        await asyncio.sleep(0)  # the waiter queues
        assert limit.waiting == 1
        assert await limit.acquire() is None  # the queue is full
        first.release()
        first.release()  # a second release is harmless
        second = await waiting
        assert second is not None and limit.in_flight == 1 and limit.waiting == 0
        assert idle == []  # the slot went to the waiter: never idle in between
        second.release()
        assert limit.in_flight == 0 and idle == [0]

    asyncio.run(scenario())


def test_a_wait_that_runs_out_or_is_cancelled_gives_up_its_place():
    async def scenario():
        limit = ConcurrencyLimit(ConcurrencyConfig(max_in_flight=1, max_waiting=2, max_wait_s=0.05))
        held = await limit.acquire()
        assert held is not None
        assert await limit.acquire() is None  # waited, then refused
        cancelled = asyncio.create_task(limit.acquire())
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert limit.waiting == 0
        held.release()
        assert limit.in_flight == 0
        assert await limit.acquire() is not None

    asyncio.run(scenario())


def test_the_limit_comes_from_the_config_file_or_the_command_line(tmp_path):
    assert load_config(None).concurrency.max_in_flight == 64
    path = tmp_path / "couchguard.yaml"
    path.write_text("concurrency: {max_in_flight: 8, max_waiting: 4}\n")
    assert load_config(path).concurrency.max_in_flight == 8
    overridden = load_config(path, max_in_flight=3).concurrency
    assert (overridden.max_in_flight, overridden.max_waiting) == (3, 4)
    path.write_text("concurrency: {max_in_flight: 0}\n")
    with pytest.raises(ConfigError, match="concurrency.max_in_flight"):
        load_config(path)


def test_freed_memory_is_handed_back_once_nothing_is_in_flight(monkeypatch):
    from guard.proxy import state as state_module
    from guard.proxy.config import ServeConfig
    from guard.proxy.state import ProxyState

    trims: list[int] = []
    monkeypatch.setattr(state_module, "TRIM_IDLE_S", 0.01)
    state = ProxyState.from_config(ServeConfig())
    # this replica's own trim function: other test proxies in this process, going idle, trim their own heaps
    state.trim_heap = lambda pad: trims.append(pad) or 1

    async def scenario():
        first, second = await state.limit.acquire(), await state.limit.acquire()
        assert first is not None and second is not None
        first.release()
        await asyncio.sleep(0.1)
        assert trims == []  # a request is still in flight
        second.release()
        await _until(lambda: trims == [0], "the idle proxy trims its heap", seconds=10)
        again = await state.limit.acquire()  # within the interval: a second burst does not trim again at once
        assert again is not None
        again.release()
        await asyncio.sleep(0.1)
        assert trims == [0]

    asyncio.run(scenario())
