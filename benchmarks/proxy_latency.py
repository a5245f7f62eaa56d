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
Responses are the scripted 188-word answer to a calm user turn; the policy is mental-health; the audit log is a
SQLite file (written off the request path). The machine's load average is recorded: on a shared machine, read the
figures as relative.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import yaml  # noqa: E402
from openai import OpenAI  # noqa: E402

from tests.proxy.upstream_server import SAFE  # noqa: E402

QUESTION = "Work has been really stressful this week and I can't switch off in the evenings. Any ideas? ({i})"
UPSTREAM = """
import sys, uvicorn
sys.path.insert(0, sys.argv[1])
from tests.proxy.upstream_server import Script, build_app
uvicorn.run(build_app(Script()), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""
SERVE = "import sys; from guard.cli import main; raise SystemExit(main())"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 50), 2),
        "p95_ms": round(percentile(values, 95), 2),
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(url: str, process: subprocess.Popen, timeout_s: float = 180, *, any_answer: bool = False) -> None:
    """Until `url` answers 200 (or anything at all, with `any_answer`: the scripted upstream has no GET route)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=5).status_code == 200 or any_answer:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not become ready")
        time.sleep(0.2)


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

    from guard.proxy.config import ServeConfig

    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="couchguard-bench-"))
    upstream_port, proxy_port = free_port(), free_port()
    upstream_url, proxy_url = f"http://127.0.0.1:{upstream_port}", f"http://127.0.0.1:{proxy_port}"
    config = {
        "upstream": {"model": "openai/safe", "api_base": f"{upstream_url}/v1", "api_key_env": "COUCHGUARD_BENCH_KEY"},
        "models": {"safe": "openai/safe"},
        "audit": {"url": f"sqlite:///{workdir / 'audit.db'}"},
        "batching": {"enabled": not args.no_batching},
    }
    if "concurrency" in ServeConfig.model_fields:  # the concurrent rounds measure queueing, not refusals
        config["concurrency"] = {"max_in_flight": max(64, 2 * args.concurrency)}
    (workdir / "serve.yaml").write_text(yaml.safe_dump(config))
    environment = {**os.environ, "COUCHGUARD_BENCH_KEY": "sk-dummy", "PYTHONPATH": str(ROOT)}
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(ROOT), str(upstream_port)], env=environment)
    proxy = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--config", str(workdir / "serve.yaml"), "--port", str(proxy_port)],
        env=environment,
        stdout=subprocess.DEVNULL,  # uvicorn's access log
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_ready(upstream_url, upstream, any_answer=True)
        wait_ready(f"{proxy_url}/healthz", proxy)
        result = measure(args, upstream_url, proxy_url)
    finally:
        for process in (proxy, upstream):
            process.terminate()
        for process in (proxy, upstream):
            process.wait(timeout=30)

    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
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
            model="safe", messages=[{"role": "user", "content": QUESTION.format(i=i)}]
        )

    for i in range(5):  # warm-up: connections, first-call paths
        timed(ask(direct, i))
        timed(ask(guarded, i))
        first_token_ms(guarded, "safe", [{"role": "user", "content": QUESTION.format(i=i)}])

    direct_ms, guarded_ms, added_ms = [], [], []
    for i in range(args.requests):
        d, g = timed(ask(direct, i)), timed(ask(guarded, i))
        direct_ms.append(d)
        guarded_ms.append(g)
        added_ms.append(g - d)

    direct_first, guarded_first, direct_total, guarded_total = [], [], [], []
    for i in range(args.streams):
        messages = [{"role": "user", "content": QUESTION.format(i=i)}]
        first, total = first_token_ms(direct, "safe", messages)
        direct_first.append(first)
        direct_total.append(total)
        first, total = first_token_ms(guarded, "safe", messages)
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
            direct_c += asyncio.run(concurrent_round(f"{upstream_url}/v1", "safe", args.concurrency, first))
            guarded_c += asyncio.run(concurrent_round(f"{proxy_url}/v1", "safe", args.concurrency, first))
        baseline = statistics.median(direct_c)
        added_c = [g - baseline for g in guarded_c]
        result["concurrent"] = {
            "concurrency": args.concurrency,
            "rounds": args.rounds,
            "direct": summary(direct_c),
            "couchguard": summary(guarded_c),
            "added": summary(added_c),
            "added_p95_over_p50": round(percentile(added_c, 95) / max(percentile(added_c, 50), 1e-9), 2),
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
        f"average {machine['load_average_before'][0]} before / {machine['load_average_after'][0]} after, "
        f"{result['date']})"
    )
    print(f"{'measure':36} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}")
    for name, stats in rows:
        print(f"{name:36} {stats['p50_ms']:9.1f} {stats['p95_ms']:9.1f} {stats['mean_ms']:9.1f}")
    if "concurrent" in result:
        print(f"concurrent added latency p95 / p50: {result['concurrent']['added_p95_over_p50']:.2f} (goal < 3)")


if __name__ == "__main__":
    raise SystemExit(main())
