"""Two `couchguard serve` processes, on two loopback ports, share one PostgreSQL: driven at once, every decision
lands exactly once, and each replica's shutdown writes what it accepted."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import httpx
import pytest
import yaml
from sqlalchemy import create_engine, select

from guard.audit import conversation_hash
from guard.audit.schema import decisions
from tests.proxy.upstream_server import SAFE, Script, ServerThread, build_app

KEY = "k-replica"
REQUESTS_PER_REPLICA = 20
READY_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def upstream():
    server = ServerThread(build_app(Script())).start()
    yield server
    server.stop()


def _start_replica(config_path, port: int, log_path) -> subprocess.Popen:
    env = {
        **os.environ,
        "COUCHGUARD_TEST_UPSTREAM_KEY": "sk-upstream-dummy",
        "COUCHGUARD_AUDIT_KEY": "shared-secret",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "guard.cli",
                "serve",
                "--config",
                str(config_path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _wait_ready(processes, urls, logs) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = set(urls)
    while pending:
        for process, log in zip(processes, logs):
            assert process.poll() is None, f"replica exited:\n{log.read_text()[-3000:]}"
        for url in list(pending):
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    pending.discard(url)
            except httpx.HTTPError:
                pass
        assert time.monotonic() < deadline, "replicas not ready"
        time.sleep(0.25)


def test_two_replicas_write_every_decision_exactly_once(postgres_url, upstream, tmp_path):
    config = {
        "upstream": {"api_base": f"{upstream.url}/v1", "api_key_env": "COUCHGUARD_TEST_UPSTREAM_KEY", "timeout_s": 10},
        "models": {"safe": "openai/safe"},
        "audit": {"url": postgres_url, "hash_key_env": "COUCHGUARD_AUDIT_KEY"},
        "products": {"main": {"keys": [KEY], "policy": "mental-health"}},
    }
    config_path = tmp_path / "couchguard.yaml"
    config_path.write_text(yaml.safe_dump(config))
    ports = [_free_port(), _free_port()]
    logs = [tmp_path / f"replica-{i}.log" for i in range(2)]
    processes = [_start_replica(config_path, port, log) for port, log in zip(ports, logs)]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        _wait_ready(processes, urls, logs)
        conversations = [
            [{"role": "user", "content": f"Replica check {i}: work was long, how do I unwind?"}]
            for i in range(2 * REQUESTS_PER_REPLICA)
        ]

        async def drive():
            async with httpx.AsyncClient(timeout=60, headers={"authorization": f"Bearer {KEY}"}) as client:

                async def one(i, messages):
                    response = await client.post(
                        f"{urls[i % 2]}/v1/chat/completions", json={"model": "safe", "messages": messages}
                    )
                    return response.status_code, response.json()["choices"][0]["message"]["content"]

                return await asyncio.gather(*(one(i, m) for i, m in enumerate(conversations)))

        answers = asyncio.run(drive())
        assert answers == [(200, SAFE)] * len(conversations)
    finally:
        for process in processes:  # a graceful stop, as an orchestrator sends it: accepted rows are written
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
    engine = create_engine(postgres_url)
    with engine.connect() as connection:
        rows = connection.execute(select(decisions.c.request_id, decisions.c.conversation_hash, decisions.c.rail)).all()
    engine.dispose()
    per_request = Counter(request_id for request_id, _, _ in rows)
    assert len(per_request) == len(conversations) and set(per_request.values()) == {2}  # input and output rail
    hashes = Counter((h, rail) for _, h, rail in rows)
    for messages in conversations:  # both replicas hash with the same key, so a conversation is found either way
        digest = conversation_hash(messages, b"shared-secret")
        assert hashes[(digest, "input")] == 1 and hashes[(digest, "output")] == 1
