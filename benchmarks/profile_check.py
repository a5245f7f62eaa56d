"""Where `couchguard check` spends its time: Moore et al.'s responses through the real command, under cProfile.

Writes `<out>/profile.txt` (time under each stage: windowing, encoding, the forward pass (torch or ONNX Runtime),
the heads, policy and actions; then the functions with the most time of their own and under them) and
`<out>/profile.pstats` (for snakeviz or `python -m pstats`). cProfile (standard library) adds per-call overhead to
Python code, not to the forward pass, so Python-heavy stages look slightly slower than they are. It sees the main
thread only: what the output rail runs in worker threads (the rewrite loop re-scoring sentences and candidates) shows
as the event loop waiting (`select.epoll.poll`) inside "policy and actions".
Named profile_check, not profile: a script in benchmarks/ puts that folder first on sys.path, and a
profile.py there would shadow the standard library module that cProfile (and torch) import.
Run: `make profile` (200 conversations, the default backend; `--backend onnx-int8` to compare).

`--proxy` profiles the proxy's request path instead (`<out>/proxy.txt`): `couchguard serve` in this process in front
of the scripted upstream (run in a child process, so that its work is not counted), non-streamed and streamed calm
requests sent one at a time, then `--concurrency` requests at once. cProfile sees one thread, and the proxy's time
is spread over the event loop, the scoring threads and the audit threads, so a sampler reads every thread's stack
every millisecond instead and puts each busy sample in one stage (the first of STAGES that appears anywhere in the
stack): what is left on the event loop besides scoring (litellm, JSON, policy, observers) is what the fast path is
about.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from types import FrameType

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The functions whose inclusive time tells the story, outermost first; nested ones overlap (the forward pass is
# inside encoding, encoding inside featurising, featurising inside scoring and re-scoring).
KEY_FUNCTIONS = (
    ("pipeline.py", "check_many", "scoring and deciding a batch"),
    ("scorer.py", "score_many", "scoring (all signals)"),
    ("features.py", "featurize", "featurising (windows, encoding, context)"),
    ("encoder.py", "chunks", "windowing (tokenising whole turns)"),
    ("encoder.py", "_encode", "encoding (tokenise, bucket, forward)"),
    ("encoder.py", "_torch_forward", "forward pass (torch)"),
    ("encoder.py", "_onnx_forward", "forward pass (ONNX Runtime)"),
    ("scorer.py", "_score_side", "heads (logistic regression)"),
    ("pipeline.py", "check", "policy and actions (per conversation)"),
    ("jsonl.py", "parse_line", "parsing input lines"),
)


def write_input(path: Path, limit: int) -> int:
    from classifiers.conversation import parse_conversation  # noqa: F401  (import cost outside the profile)
    from guard.bench.checking import evenly_spaced
    from guard.bench.suites.moore_data import labelled_responses

    every = labelled_responses()
    with open(path, "w", encoding="utf-8") as handle:
        for i in evenly_spaced(len(every), limit):
            handle.write(json.dumps({"id": every[i].id, "messages": every[i].messages}) + "\n")
    return min(limit, len(every))


def inclusive_times(stats: pstats.Stats) -> dict[str, float]:
    """Inclusive seconds under each key function (summed over the modules that define one of that name)."""
    seconds: dict[str, float] = {}
    for (filename, _, function), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        for module, name, label in KEY_FUNCTIONS:
            if function == name and os.path.basename(filename) == module:
                seconds[label] = seconds.get(label, 0.0) + cumulative
    return seconds


# Proxy stages, most specific first: a sample counts for the first stage with a frame anywhere in its stack, so the
# forward pass inside scoring is "forward pass", and JSON inside litellm is "litellm". (path fragment, function or
# None for any, stage)
STAGES = (
    ("classifiers/onnx_backend.py", "__call__", "scoring: forward pass (ONNX Runtime)"),
    ("classifiers/encoder.py", "_torch_forward", "scoring: forward pass (torch)"),
    ("classifiers/encoder.py", None, "scoring: tokenising and windowing"),
    ("classifiers/scorer.py", "_score_side", "scoring: heads"),
    ("classifiers/", None, "scoring: features, cache, batching"),
    ("guard/batching.py", None, "scoring: features, cache, batching"),
    ("presidio", None, "PII redaction (presidio)"),
    ("guard/audit/", None, "audit log (observer, redaction, writer)"),
    ("sqlalchemy", None, "audit log (observer, redaction, writer)"),
    ("litellm", None, "upstream call (litellm, openai client)"),
    ("openai/", None, "upstream call (litellm, openai client)"),
    ("guard/policy/", None, "policy evaluation"),
    ("guard/rewriting.py", None, "actions and rewrites"),
    ("guard/actions.py", None, "actions and rewrites"),
    ("guard/proxy/metrics.py", None, "metrics"),
    ("prometheus_client", None, "metrics"),
    ("json/", None, "JSON (request, response, SSE)"),
    ("guard/proxy/models.py", None, "JSON (request, response, SSE)"),
    ("guard/proxy/sse.py", None, "JSON (request, response, SSE)"),
    ("pydantic", None, "JSON (request, response, SSE)"),
    ("guard/", None, "guard and proxy code (other)"),
    ("uvicorn", None, "HTTP server (uvicorn, starlette)"),
    ("starlette", None, "HTTP server (uvicorn, starlette)"),
    ("h11", None, "HTTP server (uvicorn, starlette)"),
    ("anyio", None, "event loop and thread hops"),
    ("asyncio", None, "event loop and thread hops"),
    ("threading.py", None, "event loop and thread hops"),
)
# a thread whose innermost Python frame is one of these is waiting (in C, on a lock, a queue or epoll), not working
IDLE = {
    ("selectors.py", "select"),
    ("threading.py", "wait"),
    ("queue.py", "get"),
    ("threading.py", "_wait_for_tstate_lock"),
    ("thread.py", "_worker"),  # concurrent.futures' idle worker, blocked in SimpleQueue.get
}
UPSTREAM = """
import sys, uvicorn
sys.path.insert(0, sys.argv[1])
from tests.proxy.upstream_server import Script, build_app
uvicorn.run(build_app(Script()), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


class StackSampler:
    """Every thread's stack (but the caller's and its own) every `interval` seconds: busy samples per stage."""

    def __init__(self, interval: float = 0.001) -> None:
        self.interval = interval
        # busy seconds (weighted samples) per stage, per kind of thread and per innermost frame
        self.stages: dict[str, float] = defaultdict(float)
        self.threads: dict[str, float] = defaultdict(float)
        self.functions: dict[str, float] = defaultdict(float)
        self.seconds = 0.0
        self._stop = threading.Event()
        self._skip = {threading.get_ident()}

    def __enter__(self) -> "StackSampler":
        self._thread = threading.Thread(target=self._run, name="stack-sampler", daemon=True)
        self._thread.start()
        self._skip.add(self._thread.ident or 0)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        names: dict[int, str] = {}
        # The sampler needs the GIL to look, and a thread running Python code hands it over only every switch
        # interval: each sample is weighted by the time since the last one, so busy Python stretches are not
        # under-counted against moments when every thread waits in C.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(self.interval / 2)
        last = time.perf_counter()
        try:
            while not self._stop.wait(self.interval):
                now = time.perf_counter()
                weight, last = now - last, now
                self.seconds += weight
                for ident, frame in sys._current_frames().items():
                    if ident in self._skip:
                        continue
                    if ident not in names:
                        names[ident] = next((t.name for t in threading.enumerate() if t.ident == ident), str(ident))
                    self._record(names[ident], frame, weight)
        finally:
            sys.setswitchinterval(switch)

    def _record(self, thread: str, frame: FrameType, weight: float) -> None:
        stack = []
        current: FrameType | None = frame
        while current is not None:
            stack.append((current.f_code.co_filename, current.f_code.co_name))
            current = current.f_back
        leaf_file, leaf_function = stack[0]
        if (os.path.basename(leaf_file), leaf_function) in IDLE:
            return
        self.threads[_thread_kind(thread)] += weight
        self.stages[_stage(stack)] += weight
        self.functions[f"{_short(leaf_file)}:{leaf_function}"] += weight


def _thread_kind(name: str) -> str:
    if name.startswith("AnyIO worker"):
        return "worker threads (scoring, to_thread)"
    if name.startswith("couchguard-audit"):
        return "audit threads"
    if name.startswith("Thread-") or name == "MainThread":
        return "event loop (uvicorn)"
    return "other threads (litellm logging, ONNX Runtime)"


def _stage(stack: list[tuple[str, str]]) -> str:
    for fragment, function, stage in STAGES:
        for filename, name in stack:
            if fragment in filename and (function is None or function == name):
                return stage
    return "other"


REPOSITORY = str(Path(__file__).resolve().parents[1]) + "/"


def _short(filename: str) -> str:
    """A frame's file relative to the repository or to the installed packages, wherever either lives."""
    if filename.startswith(REPOSITORY):
        return filename[len(REPOSITORY) :]
    for marker in ("site-packages/", "lib/python"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def profile_proxy(out: Path, requests: int, streams: int, interval: float, concurrency: int = 0) -> str:
    """The proxy's request path under the stack sampler; returns the report (also written to `out`/proxy.txt)."""
    import socket

    import httpx

    from benchmarks.servers import KEY_ENV, QUESTION, SERVE_ENV, fresh_config
    from guard.proxy import create_app
    from guard.proxy.config import parse_config
    from tests.proxy.upstream_server import SAFE, ServerThread

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = Path(__file__).resolve().parents[1]
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(root), str(port)])
    scratch = Path(tempfile.mkdtemp(prefix="couchguard-profile-"))
    os.environ[KEY_ENV] = SERVE_ENV[KEY_ENV]
    try:
        app = create_app(parse_config(fresh_config(f"http://127.0.0.1:{port}", scratch / "audit.db")))
        proxy = ServerThread(app).start()
        with httpx.Client(timeout=60) as client:
            while client.get(f"{proxy.url}/healthz").status_code != 200:
                time.sleep(0.2)
            deadline = time.monotonic() + 30
            while True:  # the upstream child starts in parallel
                try:
                    client.get(f"http://127.0.0.1:{port}/v1/models")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)

            def ask(i: int, stream: bool) -> float:
                body = {
                    "model": "fresh",
                    "stream": stream,
                    "messages": [{"role": "user", "content": QUESTION.format(i=i)}],
                }
                started = time.perf_counter()
                response = client.post(
                    f"{proxy.url}/v1/chat/completions", json=body, headers={"authorization": "Bearer sk-dummy"}
                )
                response.raise_for_status()
                return (time.perf_counter() - started) * 1000

            async def at_once(count: int) -> list[float]:
                async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=count)) as pool:

                    async def one(i: int) -> float:
                        body = {"model": "fresh", "messages": [{"role": "user", "content": QUESTION.format(i=i)}]}
                        started = time.perf_counter()
                        response = await pool.post(f"{proxy.url}/v1/chat/completions", json=body)
                        response.raise_for_status()
                        return (time.perf_counter() - started) * 1000

                    return list(await asyncio.gather(*(one(i) for i in range(count))))

            for i in range(5):  # first-call paths (imports, litellm's lazy set-up) are start-up, not requests
                ask(i, False), ask(i, True)
            sections = []
            for label, stream, count in (("non-streamed", False, requests), ("streamed", True, streams)):
                if count <= 0:
                    continue
                with StackSampler(interval) as sampler:
                    wall = [ask(i, stream) for i in range(count)]
                sections.append(_proxy_section(label, count, wall, sampler))
            if concurrency > 1:
                asyncio.run(at_once(min(concurrency, 8)))  # connections up
                with StackSampler(interval) as sampler:
                    wall = asyncio.run(at_once(concurrency))
                sections.append(_proxy_section(f"{concurrency} non-streamed at once", concurrency, wall, sampler))
        proxy.stop()
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)
    header = (
        f"couchguard serve, calm {len(SAFE.split())}-word scripted answers on loopback, {os.cpu_count()} "
        f"cores, load average {os.getloadavg()[0]:.1f}; sampled every {1000 * interval:.0f} ms, busy samples "
        "only (a thread waiting on a lock, a queue or the network is not counted)"
    )
    report = "\n\n".join([header, *sections]) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "proxy.txt").write_text(report)
    return report


def _largest(seconds: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(seconds.items(), key=lambda item: -item[1])


def _proxy_section(label: str, count: int, wall: list[float], sampler: StackSampler) -> str:
    per_request = 1000 / count  # busy seconds in all -> ms per request
    wall.sort()
    lines = [
        f"{label}: {count} requests, wall p50 {wall[len(wall) // 2]:.1f} ms through the proxy "
        f"(upstream included); busy thread time per request, by stage:"
    ]
    busy = sum(sampler.stages.values()) or 1
    for stage, seconds in _largest(sampler.stages):
        lines.append(f"  {stage:45s} {seconds * per_request:7.2f} ms  {100 * seconds / busy:5.1f}%")
    lines.append("by thread:")
    for thread, seconds in _largest(sampler.threads):
        lines.append(f"  {thread:45s} {seconds * per_request:7.2f} ms")
    lines.append("innermost frames with the most busy samples:")
    for function, seconds in _largest(sampler.functions)[:20]:
        lines.append(f"  {function[:90]:90s} {seconds * per_request:7.2f} ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200, help="Moore conversations (evenly spaced)")
    parser.add_argument("--batch", type=int, default=32, help="`couchguard check --batch`")
    parser.add_argument("--backend", default=None, help="torch, onnx or onnx-int8 (default: COUCHGUARD_BACKEND)")
    parser.add_argument("--out", type=Path, default=Path("reports/profile"))
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--proxy", action="store_true", help="profile the proxy's request path instead")
    parser.add_argument("--requests", type=int, default=100, help="--proxy: non-streamed requests")
    parser.add_argument("--streams", type=int, default=30, help="--proxy: streamed requests")
    parser.add_argument("--interval-ms", type=float, default=1.0, help="--proxy: sampling interval")
    parser.add_argument("--concurrency", type=int, default=64, help="--proxy: then this many requests at once")
    args = parser.parse_args()
    if args.backend:
        os.environ["COUCHGUARD_BACKEND"] = args.backend
    if args.proxy:
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.servers, tests.proxy.upstream_server
        report = profile_proxy(args.out, args.requests, args.streams, args.interval_ms / 1000, args.concurrency)
        print(report, end="")
        print(f"full report: {args.out / 'proxy.txt'}")
        return

    from classifiers import shared_scorer
    from guard.cli import main as couchguard

    scorer = shared_scorer()  # loading is start-up, not checking: kept out of the profile
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "moore.jsonl"
        count = write_input(source, args.limit)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            profiler.enable()
            couchguard(["check", str(source), "--batch", str(args.batch)])
            profiler.disable()
        wall = time.perf_counter() - started
    profiler.dump_stats(args.out / "profile.pstats")
    stats = pstats.Stats(profiler)
    stages = inclusive_times(stats)
    total = stats.total_tt  # type: ignore[attr-defined]
    lines = [
        f"couchguard check: {count} Moore conversations, batch {args.batch}, backend "
        f"{scorer.encoder_.backend_}, {os.cpu_count()} cores",
        f"wall {wall:.2f} s under the profiler ({1000 * wall / count:.1f} ms per conversation), profiled {total:.2f} s",
        "",
        "time under each stage (inclusive; nested stages overlap):",
    ]
    for _, _, label in KEY_FUNCTIONS:
        seconds = stages.get(label, 0.0)
        lines.append(f"  {label:42s} {seconds:7.2f} s  {100 * seconds / total:5.1f}%")
    for order, title in (("tottime", "own time"), ("cumulative", "cumulative time")):
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats(order).print_stats(args.top)
        body = buffer.getvalue()
        lines += ["", f"top {args.top} functions by {title}:", body[body.find("   ncalls") :].rstrip()]
    report = "\n".join(lines) + "\n"
    (args.out / "profile.txt").write_text(report)
    print("\n".join(lines[: len(KEY_FUNCTIONS) + 4]))
    print(f"full report: {args.out / 'profile.txt'}")


if __name__ == "__main__":
    main()
