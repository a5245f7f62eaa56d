"""Load on `couchguard serve`: waves of concurrent checked streams, a scripted streaming upstream, all on loopback.

    python benchmarks/load.py [--concurrency 50 100 200] [--settle-s 60] [--max-in-flight 64]
                              [--token-delay-ms 20] [--window-growth 2.0]
                              [--json reports/load.json] [--markdown reports/load.md]

The proxy runs as `couchguard serve` in a subprocess (its own process, so its memory is what is measured), with the
shipped policy and classifiers and a SQLite audit log; the upstream is the tests' scripted OpenAI-compatible server
(tests/proxy/upstream_server.py) in a second subprocess, streaming a 180-word answer one word every
`--token-delay-ms`. For each level, that many streams start at once, each a different conversation; the report gives
the 200 / 429 / other counts, p50 / p95 time to the first checked token and to the end of the stream (answered
requests only), and the proxy's resident memory (VmRSS) at baseline (after a warm-up), at its peak during each
level, right after the load and `--settle-s` seconds later.

Done when, at the highest level, every request is answered (200) or refused with 429, and the resident memory after
settling is within 10% of the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from benchmarks.servers import (  # noqa: E402
    OFFLINE,
    QUESTION,
    SERVE_ENV,
    free_port,
    fresh_config,
    machine,
    p50_p95,
    start_serve,
    start_upstream,
    stop,
    wait_ready,
)

os.environ.update(OFFLINE)

RSS_TOLERANCE = 0.10


def rss_mib(pid: int) -> float:
    """Resident memory of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class Outcome:
    status: int | None = None  # None: no HTTP answer at all (connection refused, reset, timed out)
    first_ms: float | None = None
    total_ms: float | None = None
    complete: bool = False  # an answered stream that ended with [DONE]
    error: str | None = None


@dataclass
class Level:
    concurrency: int
    outcomes: list[Outcome] = field(default_factory=list)
    peak_rss_mib: float = 0.0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        answered = [o for o in self.outcomes if o.status == 200]
        firsts = [o.first_ms for o in answered if o.first_ms is not None]
        totals = [o.total_ms for o in answered if o.total_ms is not None]
        other = [o for o in self.outcomes if o.status not in (200, 429)]
        return {
            "concurrency": self.concurrency,
            "ok": len(answered),
            "refused_429": sum(o.status == 429 for o in self.outcomes),
            "other": len(other),
            "incomplete_streams": sum(not o.complete for o in answered),
            "other_examples": sorted({f"{o.status}: {o.error}" for o in other})[:5],
            "first_checked_token_ms": p50_p95(firsts),
            "total_ms": p50_p95(totals),
            "peak_rss_mib": round(self.peak_rss_mib, 1),
            "seconds": round(self.seconds, 1),
        }


async def one_stream(http: httpx.AsyncClient, tag: str) -> Outcome:
    outcome = Outcome()
    started = time.perf_counter()
    body = {"model": "fresh", "stream": True, "messages": [{"role": "user", "content": QUESTION.format(i=tag)}]}
    try:
        async with http.stream("POST", "/v1/chat/completions", json=body) as response:
            outcome.status = response.status_code
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")
                outcome.error = text[:200]
                return outcome
            async for line in response.aiter_lines():
                if line == "data: [DONE]":
                    outcome.complete = True
                elif outcome.first_ms is None and line.startswith("data: "):
                    event = json.loads(line[6:])
                    if event.get("choices") and event["choices"][0]["delta"].get("content"):
                        outcome.first_ms = (time.perf_counter() - started) * 1000
    except httpx.HTTPError as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
    outcome.total_ms = (time.perf_counter() - started) * 1000
    return outcome


async def sample_rss(pid: int, level: Level, stop: asyncio.Event) -> None:
    while not stop.is_set():
        level.peak_rss_mib = max(level.peak_rss_mib, rss_mib(pid))
        try:
            await asyncio.wait_for(stop.wait(), 0.1)
        except asyncio.TimeoutError:
            pass


async def in_flight(http: httpx.AsyncClient) -> float:
    for line in (await http.get("/metrics")).text.splitlines():
        if line.startswith("couchguard_in_flight_requests "):
            return float(line.split()[1])
    return 0.0


async def run_level(url: str, pid: int, concurrency: int) -> Level:
    level = Level(concurrency)
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=concurrency + 8, max_keepalive_connections=concurrency + 8)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        sampler = asyncio.create_task(sample_rss(pid, level, stop))
        started = time.perf_counter()
        level.outcomes = list(
            await asyncio.gather(*(one_stream(http, f"c{concurrency}-{i}") for i in range(concurrency)))
        )
        level.seconds = time.perf_counter() - started
        stop.set()
        await sampler
        # the next level starts from an idle proxy: every slot released, every stream closed
        for _ in range(600):
            if await in_flight(http) == 0:
                break
            await asyncio.sleep(0.1)
    return level


def markdown(result: dict[str, Any]) -> str:
    rss = result["rss_mib"]
    lines = [
        f"Load on `couchguard serve` ({result['machine']['cpus']} CPUs, {result['date']}): max_in_flight "
        f"{result['max_in_flight']}, {result['response_words']}-word streamed answers at one word per "
        f"{result['token_delay_ms']} ms, window_growth {result['window_growth']}, policy mental-health. Times are "
        "for answered (200) requests.",
        "",
        "| concurrent streams | 200 | 429 | other | first checked token p50 / p95 ms | total p50 / p95 ms "
        "| peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for level in result["levels"]:
        first, total = level["first_checked_token_ms"], level["total_ms"]
        lines.append(
            f"| {level['concurrency']} | {level['ok']} | {level['refused_429']} | {level['other']} "
            f"| {first['p50']} / {first['p95']} | {total['p50']} / {total['p95']} | {level['peak_rss_mib']} |"
        )
    lines += [
        "",
        f"Proxy RSS: baseline {rss['baseline']} MiB, peak {rss['peak']} MiB, right after the load "
        f"{rss['after_load']} MiB, {result['settle_s']} s later {rss['settled']} MiB "
        f"({rss['settled_vs_baseline_pct']:+.1f}% of baseline).",
        "",
        f"Done when (highest level answered or refused with 429 only, RSS within {RSS_TOLERANCE:.0%} of baseline "
        f"after settling): **{'yes' if result['done'] else 'no'}**.",
    ]
    return "\n".join(lines) + "\n"


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def non_negative(value: str) -> float:
    number = float(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {number}")
    return number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--concurrency", type=positive_int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--settle-s", type=non_negative, default=60.0, help="wait after the load before the last RSS")
    parser.add_argument("--max-in-flight", type=positive_int, default=None, help="the proxy's limit (default: its own)")
    parser.add_argument("--token-delay-ms", type=non_negative, default=20.0, help="upstream pace, per word")
    parser.add_argument("--window-growth", type=float, default=None, help="the proxy's stream.window_growth")
    parser.add_argument("--warmup", type=positive_int, default=5, help="sequential streams before the baseline")
    parser.add_argument("--json", default="reports/load.json")
    parser.add_argument("--markdown", default="reports/load.md")
    args = parser.parse_args(argv)

    from guard.proxy.config import DEFAULT_MAX_IN_FLIGHT, StreamConfig
    from tests.proxy.upstream_server import SAFE

    workdir = Path(tempfile.mkdtemp(prefix="couchguard-load-"))
    upstream, upstream_url = start_upstream(workdir / "upstream.log", args.token_delay_ms / 1000)
    max_in_flight = args.max_in_flight or DEFAULT_MAX_IN_FLIGHT
    config = workdir / "couchguard.yaml"
    sections: dict[str, Any] = {"upstream": {"timeout_s": 120}, "concurrency": {"max_in_flight": max_in_flight}}
    if args.window_growth:
        sections["stream"] = {"window_growth": args.window_growth}
    config.write_text(json.dumps(fresh_config(upstream_url, workdir / "audit.db", **sections)))  # JSON is YAML
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proxy_log = workdir / "proxy.log"
    proxy = start_serve(config, port, proxy_log, SERVE_ENV)
    try:
        wait_ready(f"{url}/healthz", proxy, proxy_log)
        for _ in range(args.warmup):  # first-call paths, connection set-up, lazily imported modules
            asyncio.run(run_level(url, proxy.pid, 1))
        baseline = rss_mib(proxy.pid)
        print(f"proxy pid {proxy.pid} ready, baseline RSS {baseline:.1f} MiB; logs in {workdir}", flush=True)
        levels = []
        for concurrency in args.concurrency:
            level = asyncio.run(run_level(url, proxy.pid, concurrency))
            levels.append(level.summary())
            print(json.dumps(levels[-1]), flush=True)
        after_load = rss_mib(proxy.pid)
        time.sleep(args.settle_s)
        settled = rss_mib(proxy.pid)
    finally:
        stop(proxy, upstream)

    peak = max([baseline, after_load, settled, *(level["peak_rss_mib"] for level in levels)])
    settled_pct = (settled - baseline) / baseline * 100
    last = levels[-1]
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "max_in_flight": max_in_flight,
        "window_growth": args.window_growth or StreamConfig().window_growth,
        "token_delay_ms": args.token_delay_ms,
        "response_words": len(SAFE.split()),
        "settle_s": args.settle_s,
        "levels": levels,
        "rss_mib": {
            "baseline": round(baseline, 1),
            "peak": round(peak, 1),
            "after_load": round(after_load, 1),
            "settled": round(settled, 1),
            "settled_vs_baseline_pct": round(settled_pct, 1),
        },
        "done": last["other"] == 0 and last["incomplete_streams"] == 0 and settled_pct <= RSS_TOLERANCE * 100,
    }
    for path, text in ((args.json, json.dumps(result, indent=2) + "\n"), (args.markdown, markdown(result))):
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(markdown(result))
    print(f"wrote {args.json} and {args.markdown}")
    return 0 if result["done"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
