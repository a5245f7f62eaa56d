"""The processes the proxy benchmarks start on loopback, and the helpers they share.

`couchguard serve` and the tests' scripted OpenAI-compatible upstream (tests/proxy/upstream_server.py) each run in
a process of their own, as deployed: servers sharing the benchmark's process (and its GIL) add tens of milliseconds
of their own to every loopback call, and the proxy's memory is only its own in a process of its own.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

# Runs in the upstream's process: the scripted server on the port given, served from the main thread as
# `uvicorn.run` does (the tests' ServerThread, a daemon thread beside an idle main one, answered loopback calls
# tens of milliseconds slower).
_UPSTREAM = """
import sys, uvicorn
sys.path.insert(0, sys.argv[1])
from tests.proxy.upstream_server import Script, build_app
app = build_app(Script(), token_delay_s=float(sys.argv[3]))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


# What the benchmarks ask: a calm user turn, numbered so that no two requests are the same conversation
QUESTION = "Work has been really stressful this week and I can't switch off in the evenings. Any ideas? ({i})"
# The upstream key `couchguard serve` reads (the scripted upstream accepts any), and the environment that sets it
KEY_ENV = "COUCHGUARD_BENCH_KEY"
SERVE_ENV = {KEY_ENV: "sk-dummy"}


def fresh_config(upstream_url: str, audit_db: Path, **sections: Any) -> dict[str, Any]:
    """`couchguard serve`'s config in front of the scripted upstream's `fresh` model, whose every answer is text the
    proxy has not seen (a repeated answer would come from the embedding cache), with a SQLite audit log; `sections`
    are added to it (an `upstream` one is merged into the upstream section)."""
    upstream = {"model": "openai/fresh", "api_base": f"{upstream_url}/v1", "api_key_env": KEY_ENV}
    return {
        **sections,
        "upstream": {**upstream, **sections.get("upstream", {})},
        "models": {"fresh": "openai/fresh"},
        "audit": {"url": f"sqlite:///{audit_db}"},
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile as a measured value, not interpolated (None for no values)."""
    return float(np.percentile(values, q, method="nearest")) if values else None


def p50_p95(values: list[float]) -> dict[str, float | None]:
    """{"p50", "p95"}, rounded to 0.1 (None for no values)."""
    return {f"p{q}": None if (v := percentile(values, q)) is None else round(v, 1) for q in (50, 95)}


def machine() -> dict[str, Any]:
    """What the figures were measured on; the load average says whether the machine was otherwise idle."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def start_upstream(log: Path, token_delay_s: float = 0.0, timeout_s: float = 60) -> tuple[subprocess.Popen, str]:
    """(process, base URL) of the scripted upstream, once it answers; `token_delay_s` paces its streamed words."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-c", _UPSTREAM, str(ROOT), str(port), str(token_delay_s)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, **OFFLINE},
    )
    wait_ready(url, process, log, timeout_s, any_answer=True)
    return process, url


def start_serve(config: Path, port: int, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`couchguard serve --config config --port port`, its output (uvicorn's access log included) into `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "guard.cli", "serve", "--config", str(config), "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **OFFLINE, **(env or {})},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


def wait_ready(
    url: str, process: subprocess.Popen, log: Path, timeout_s: float = 300, any_answer: bool = False
) -> None:
    """Until `url` answers 200 (any status with `any_answer`); raises when the process exits first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {process.returncode}; see {log}")
        try:
            status = httpx.get(url, timeout=5).status_code
            if any_answer or status == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} was not ready after {timeout_s:.0f} s; see {log}")


def stop(*processes: subprocess.Popen) -> None:
    """Terminate, then wait; kill what has not exited after 30 s."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
