"""What a checked stream costs the proxy, and what its reader sees, for each `stream.window_growth`.

    python benchmarks/stream_windows.py [--growth 1 1.5 2 3] [--streams 30] [--word-delay 0.02]
                                        [--json reports/stream_windows.json]

Every window check scores the whole response so far, so a window per sentence encodes a ten-sentence answer several
times over; windows that grow geometrically bound that work and release later sentences in larger pieces. For each
growth, `couchguard serve` (a process of its own, the growth in its config) relays streams from the scripted upstream
(a process of its own, pacing its words like a hosted model, 50 words/s by default), one stream at a time, each the
188-word calm answer after a serial number (text the proxy has not seen). Per stream:

- proxy CPU: the serve process's user + system CPU time over the streams (/proc), divided by their number;
- pieces: the content chunks the client received (each released window, then the rest after the final check);
- first checked token and the whole stream, from the request;
- reader wait: a reader at `--reader-wps` words/s starts with the first checked token; the time they would sit with
  everything released already read, waiting for the next piece (0 when the released text stays ahead of them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402
from openai import OpenAI  # noqa: E402

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
from tests.proxy.upstream_server import SAFE  # noqa: E402

os.environ.update(OFFLINE)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reader_wait_s(pieces: list[tuple[float, int]], words_per_s: float) -> float:
    """Seconds a reader starting with the first piece waits for text: pieces are (arrival s, words), in order."""
    if not pieces:
        return 0.0
    waited = 0.0
    finished = pieces[0][0] + pieces[0][1] / words_per_s  # when the reader reaches the end of what has arrived
    for arrival, words in pieces[1:]:
        if arrival > finished:
            waited += arrival - finished
            finished = arrival
        finished += words / words_per_s
    return waited


def stream_once(client: OpenAI, i: int) -> dict:
    started = time.perf_counter()
    pieces: list[tuple[float, int]] = []
    for chunk in client.chat.completions.create(
        model="fresh", messages=[{"role": "user", "content": QUESTION.format(i=i)}], stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append((time.perf_counter() - started, len(chunk.choices[0].delta.content.split())))
    return {"pieces": pieces, "total_s": time.perf_counter() - started}


def measure(growth: float, args, upstream_url: str, workdir: Path) -> dict:
    port, log, config_path = free_port(), workdir / f"proxy-{growth}.log", workdir / f"serve-{growth}.yaml"
    config = fresh_config(upstream_url, workdir / f"audit-{growth}.db", stream={"window_growth": growth})
    config_path.write_text(yaml.safe_dump(config))
    proxy = start_serve(config_path, port, log, SERVE_ENV)
    try:
        wait_ready(f"http://127.0.0.1:{port}/healthz", proxy, log)
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-dummy", max_retries=0)
        for i in range(3):  # warm-up: connections, first-call paths
            stream_once(client, 10_000 + i)
        cpu_before = cpu_seconds(proxy.pid)
        streams = [stream_once(client, i) for i in range(args.streams)]
        cpu_per_stream = (cpu_seconds(proxy.pid) - cpu_before) / args.streams
    finally:
        stop(proxy)
    first = [s["pieces"][0][0] * 1000 for s in streams if s["pieces"]]
    return {
        "window_growth": growth,
        "proxy_cpu_ms_per_stream": round(cpu_per_stream * 1000, 1),
        "pieces_per_stream": round(statistics.fmean(len(s["pieces"]) for s in streams), 2),
        "first_checked_token_ms": p50_p95(first),
        "whole_stream_ms": p50_p95([s["total_s"] * 1000 for s in streams]),
        "reader_wait_ms": p50_p95([reader_wait_s(s["pieces"], args.reader_wps) * 1000 for s in streams]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--growth", type=float, nargs="+", default=[1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--streams", type=int, default=30)
    parser.add_argument("--word-delay", type=float, default=0.02, help="seconds between the upstream's words")
    parser.add_argument("--reader-wps", type=float, default=5.0, help="the reader's words per second")
    parser.add_argument("--json", default="reports/stream_windows.json")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="couchguard-stream-"))
    upstream, upstream_url = start_upstream(workdir / "upstream.log", token_delay_s=args.word_delay)
    try:
        rows = [measure(growth, args, upstream_url, workdir) for growth in args.growth]
    finally:
        stop(upstream)
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {**machine(), "load_average_before": [round(x, 2) for x in load_before]},
        "policy": "mental-health",
        "response_words": len(SAFE.split()),
        "upstream_words_per_s": round(1 / args.word_delay, 1) if args.word_delay else None,
        "reader_words_per_s": args.reader_wps,
        "streams": args.streams,
        "rows": rows,
    }
    print(
        f"{args.streams} streams of {result['response_words']} words at {result['upstream_words_per_s']} words/s, "
        f"one at a time; reader at {args.reader_wps} words/s ({result['machine']['cpus']} CPUs, load "
        f"{result['machine']['load_average_before'][0]})"
    )
    print(
        f"{'growth':>7} {'proxy CPU/stream':>17} {'pieces':>7} {'first token p50/p95':>20} "
        f"{'whole stream p50':>17} {'reader wait p95':>16}"
    )
    for row in rows:
        print(
            f"{row['window_growth']:>7} {row['proxy_cpu_ms_per_stream']:>14} ms {row['pieces_per_stream']:>7} "
            f"{row['first_checked_token_ms']['p50']:>9} / {row['first_checked_token_ms']['p95']:>5} ms "
            f"{row['whole_stream_ms']['p50']:>14} ms {row['reader_wait_ms']['p95']:>13} ms"
        )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
