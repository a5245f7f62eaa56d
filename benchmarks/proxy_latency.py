"""Latency couchguard adds over a direct call, against the same scripted upstream on loopback, in one run.

    python benchmarks/proxy_latency.py [--requests 200] [--json reports/proxy_latency.json]

Non-streamed: each request is sent directly and through couchguard, interleaved, and the added latency is the
per-pair difference (p50, p95). Streamed: time to the first content token directly, and to the first *checked*
token through couchguard. Responses are the scripted 180-word answer; the policy is mental-health; the audit log
is a SQLite file (written off the request path).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from openai import OpenAI  # noqa: E402

from tests.proxy.upstream_server import SAFE, Script, ServerThread, build_app  # noqa: E402

QUESTION = "Work has been really stressful this week and I can't switch off in the evenings. Any ideas? ({i})"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2),
            "mean_ms": round(statistics.fmean(values), 2)}


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def first_token_ms(client: OpenAI, model: str, messages: list[dict]) -> tuple[float, float]:
    started = time.perf_counter()
    first = None
    for chunk in client.chat.completions.create(model=model, messages=messages, stream=True):
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = (time.perf_counter() - started) * 1000
    return first or float("nan"), (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--json", default="reports/proxy_latency.json")
    args = parser.parse_args(argv)

    from guard.proxy import create_app
    from guard.proxy.config import parse_config

    upstream = ServerThread(build_app(Script())).start()
    workdir = Path(tempfile.mkdtemp(prefix="couchguard-bench-"))
    os.environ["COUCHGUARD_BENCH_KEY"] = "sk-dummy"
    app = create_app(parse_config({
        "upstream": {"model": "openai/safe", "api_base": f"{upstream.url}/v1", "api_key_env": "COUCHGUARD_BENCH_KEY"},
        "models": {"safe": "openai/safe"},
        "audit": {"url": f"sqlite:///{workdir / 'audit.db'}"},
    }))
    proxy = ServerThread(app).start()
    while httpx.get(f"{proxy.url}/healthz").status_code != 200:
        time.sleep(0.2)

    direct = OpenAI(base_url=f"{upstream.url}/v1", api_key="sk-dummy", max_retries=0)
    guarded = OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-dummy", max_retries=0)
    words = len(SAFE.split())

    def ask(client: OpenAI, i: int, **kwargs):
        return lambda: client.chat.completions.create(model="safe", messages=[
            {"role": "user", "content": QUESTION.format(i=i)}], **kwargs)

    for i in range(5):  # warm-up: connections, first-call paths
        timed(ask(direct, i)), timed(ask(guarded, i)), first_token_ms(guarded, "safe", [
            {"role": "user", "content": QUESTION.format(i=i)}])

    direct_ms, guarded_ms, added_ms = [], [], []
    for i in range(args.requests):
        d, g = timed(ask(direct, i)), timed(ask(guarded, i))
        direct_ms.append(d), guarded_ms.append(g), added_ms.append(g - d)

    direct_first, guarded_first, direct_total, guarded_total = [], [], [], []
    for i in range(args.streams):
        messages = [{"role": "user", "content": QUESTION.format(i=i)}]
        first, total = first_token_ms(direct, "safe", messages)
        direct_first.append(first), direct_total.append(total)
        first, total = first_token_ms(guarded, "safe", messages)
        guarded_first.append(first), guarded_total.append(total)

    proxy.stop(), upstream.stop()
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "python": platform.python_version()},
        "policy": "mental-health", "response_words": words, "requests": args.requests, "streams": args.streams,
        "non_stream": {"direct": summary(direct_ms), "couchguard": summary(guarded_ms), "added": summary(added_ms)},
        "stream": {"first_token_direct": summary(direct_first), "first_checked_token": summary(guarded_first),
                   "total_direct": summary(direct_total), "total_couchguard": summary(guarded_total)},
    }
    rows = [("non-stream: direct", result["non_stream"]["direct"]),
            ("non-stream: via couchguard", result["non_stream"]["couchguard"]),
            ("non-stream: added by couchguard", result["non_stream"]["added"]),
            ("stream: first token, direct", result["stream"]["first_token_direct"]),
            ("stream: first checked token", result["stream"]["first_checked_token"]),
            ("stream: whole stream, direct", result["stream"]["total_direct"]),
            ("stream: whole stream, couchguard", result["stream"]["total_couchguard"])]
    print(f"couchguard proxy latency, {words}-word responses, {args.requests} requests / {args.streams} streams "
          f"({result['machine']['cpus']} CPUs, {result['date']})")
    print(f"{'measure':36} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}")
    for name, stats in rows:
        print(f"{name:36} {stats['p50_ms']:9.1f} {stats['p95_ms']:9.1f} {stats['mean_ms']:9.1f}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
