"""Latency couchguard adds over a direct call, against the same scripted upstream on loopback, in one run.

    python benchmarks/proxy_latency.py [--requests 200] [--streams 50] [--concurrency 64] [--no-batching]
                                       [--json reports/proxy_latency.json]

The scripted upstream and `couchguard serve` each run in a process of their own, as deployed: servers sharing the
benchmark's process (and its GIL) added tens of milliseconds of their own to every loopback call. Non-streamed: each
request is sent directly and through couchguard, interleaved, and the added latency is the per-pair difference (p50,
p95). Streamed: time to the first content token directly, and to the first *checked* token through couchguard.
Concurrent: rounds of `--concurrency` requests sent at once, directly and then through couchguard; the added
latency of each request through couchguard is its latency less the median direct latency at the same concurrency,
and its p95 / p50 ratio says whether requests queue behind one another (head-of-line blocking; goal < 3).
Responses are the scripted 188-word answer to a calm user turn after a serial number, so that each, from its first
streamed window on, is text the proxy has not seen: a repeated answer would come from the embedding cache and skip
the encoder, which no deployment's answers do.
The policy is mental-health; the audit log is a SQLite file (written off the request path). The machine's load
average is recorded: on a shared machine, read the figures as relative.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
import yaml  # noqa: E402
from openai import OpenAI  # noqa: E402

from benchmarks.servers import (  # noqa: E402
    OFFLINE,
    QUESTION,
    SERVE_ENV,
    free_port,
    fresh_config,
    machine,
    percentile,
    start_serve,
    start_upstream,
    stop,
    wait_ready,
)
from tests.proxy.upstream_server import SAFE  # noqa: E402

os.environ.update(OFFLINE)


def summary(values: list[float]) -> dict[str, float]:
    p50, p95 = percentile(values, 50), percentile(values, 95)
    assert p50 is not None and p95 is not None, "summary of no values"
    return {
        "p50_ms": round(p50, 2),
        "p95_ms": round(p95, 2),
        "mean_ms": round(statistics.fmean(values), 2),
    }


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def first_token_ms(client: OpenAI, model: str, messages: list[Any]) -> tuple[float, float]:
    started = time.perf_counter()
    first = None
    for chunk in client.chat.completions.create(model=model, messages=messages, stream=True):
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = (time.perf_counter() - started) * 1000
    return first or float("nan"), (time.perf_counter() - started) * 1000


async def concurrent_round(url: str, model: str, concurrency: int, first: int) -> list[float]:
    """Milliseconds of each of `concurrency` non-streamed requests sent at once."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def one(i: int) -> float:
            body = {"model": model, "messages": [{"role": "user", "content": QUESTION.format(i=i)}]}
            started = time.perf_counter()
            response = await client.post(f"{url}/chat/completions", json=body, headers={"authorization": "Bearer x"})
            response.raise_for_status()
            return (time.perf_counter() - started) * 1000

        await asyncio.gather(*(one(first + i) for i in range(min(concurrency, 8))))  # connections up
        return list(await asyncio.gather(*(one(first + i) for i in range(concurrency))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=64, help="requests at once in the concurrent rounds")
    parser.add_argument("--rounds", type=int, default=4, help="concurrent rounds (0: none)")
    parser.add_argument("--no-batching", action="store_true", help="serve with batching.enabled: false")
    parser.add_argument("--json", default="reports/proxy_latency.json")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="couchguard-bench-"))
    upstream, upstream_url = start_upstream(workdir / "upstream.log")
    port, proxy_log, config_path = free_port(), workdir / "proxy.log", workdir / "serve.yaml"
    proxy_url = f"http://127.0.0.1:{port}"
    config = fresh_config(
        upstream_url,
        workdir / "audit.db",
        batching={"enabled": not args.no_batching},
        # the concurrent rounds measure queueing, not refusals
        concurrency={"max_in_flight": max(64, 2 * args.concurrency)},
    )
    config_path.write_text(yaml.safe_dump(config))
    proxy = start_serve(config_path, port, proxy_log, SERVE_ENV)
    try:
        wait_ready(f"{proxy_url}/healthz", proxy, proxy_log)
        result = measure(args, upstream_url, proxy_url)
    finally:
        stop(proxy, upstream)

    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {**machine(), "load_average_before": [round(x, 2) for x in load_before]},
        "policy": "mental-health",
        "response_words": len(SAFE.split()),
        "batching": not args.no_batching,
        **result,
    }
    report(result, args)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


def measure(args, upstream_url: str, proxy_url: str) -> dict:
    direct = OpenAI(base_url=f"{upstream_url}/v1", api_key="sk-dummy", max_retries=0)
    guarded = OpenAI(base_url=f"{proxy_url}/v1", api_key="sk-dummy", max_retries=0)

    def ask(client: OpenAI, i: int):
        return lambda: client.chat.completions.create(
            model="fresh", messages=[{"role": "user", "content": QUESTION.format(i=i)}]
        )

    for i in range(5):  # warm-up: connections, first-call paths
        timed(ask(direct, i))
        timed(ask(guarded, i))
        first_token_ms(guarded, "fresh", [{"role": "user", "content": QUESTION.format(i=i)}])

    direct_ms, guarded_ms, added_ms = [], [], []
    for i in range(args.requests):
        d, g = timed(ask(direct, i)), timed(ask(guarded, i))
        direct_ms.append(d)
        guarded_ms.append(g)
        added_ms.append(g - d)

    direct_first, guarded_first, direct_total, guarded_total = [], [], [], []
    for i in range(args.streams):
        messages = [{"role": "user", "content": QUESTION.format(i=i)}]
        first, total = first_token_ms(direct, "fresh", messages)
        direct_first.append(first)
        direct_total.append(total)
        first, total = first_token_ms(guarded, "fresh", messages)
        guarded_first.append(first)
        guarded_total.append(total)

    result: dict = {"requests": args.requests, "streams": args.streams}
    if direct_ms:
        result["non_stream"] = {
            "direct": summary(direct_ms),
            "couchguard": summary(guarded_ms),
            "added": summary(added_ms),
        }
    if direct_first:
        result["stream"] = {
            "first_token_direct": summary(direct_first),
            "first_checked_token": summary(guarded_first),
            "total_direct": summary(direct_total),
            "total_couchguard": summary(guarded_total),
        }
    if args.rounds > 0 and args.concurrency > 0:
        direct_c: list[float] = []
        guarded_c: list[float] = []
        for r in range(args.rounds):
            first = 10_000 * (r + 1)
            direct_c += asyncio.run(concurrent_round(f"{upstream_url}/v1", "fresh", args.concurrency, first))
            guarded_c += asyncio.run(concurrent_round(f"{proxy_url}/v1", "fresh", args.concurrency, first))
        baseline = statistics.median(direct_c)
        added = summary([g - baseline for g in guarded_c])
        result["concurrent"] = {
            "concurrency": args.concurrency,
            "rounds": args.rounds,
            "direct": summary(direct_c),
            "couchguard": summary(guarded_c),
            "added": added,
            "added_p95_over_p50": round(added["p95_ms"] / max(added["p50_ms"], 1e-9), 2),
        }
    return result


def report(result: dict, args) -> None:
    rows = []
    if "non_stream" in result:
        rows += [
            ("non-stream: direct", result["non_stream"]["direct"]),
            ("non-stream: via couchguard", result["non_stream"]["couchguard"]),
            ("non-stream: added by couchguard", result["non_stream"]["added"]),
        ]
    if "stream" in result:
        rows += [
            ("stream: first token, direct", result["stream"]["first_token_direct"]),
            ("stream: first checked token", result["stream"]["first_checked_token"]),
            ("stream: whole stream, direct", result["stream"]["total_direct"]),
            ("stream: whole stream, couchguard", result["stream"]["total_couchguard"]),
        ]
    if "concurrent" in result:
        n = result["concurrent"]["concurrency"]
        rows += [
            (f"{n} at once: direct", result["concurrent"]["direct"]),
            (f"{n} at once: via couchguard", result["concurrent"]["couchguard"]),
            (f"{n} at once: added by couchguard", result["concurrent"]["added"]),
        ]
    machine = result["machine"]
    print(
        f"couchguard proxy latency, {result['response_words']}-word responses, {args.requests} requests / "
        f"{args.streams} streams, batching {'on' if result['batching'] else 'off'} ({machine['cpus']} CPUs, load "
        f"average {machine['load_average_before'][0]} before / {machine['load_average'][0]} after, "
        f"{result['date']})"
    )
    print(f"{'measure':36} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}")
    for name, stats in rows:
        print(f"{name:36} {stats['p50_ms']:9.1f} {stats['p95_ms']:9.1f} {stats['mean_ms']:9.1f}")
    if "concurrent" in result:
        print(f"concurrent added latency p95 / p50: {result['concurrent']['added_p95_over_p50']:.2f} (goal < 3)")


if __name__ == "__main__":
    raise SystemExit(main())
