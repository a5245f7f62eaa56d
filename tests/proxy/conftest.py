"""Session fixtures: a scripted upstream and couchguard serve, both on loopback, models loaded once."""

from __future__ import annotations

import hashlib
import os

import pytest
import yaml

from .upstream_server import scripted_server, start_proxy

MAIN_KEY, OPEN_KEY, PRIVATE_KEY = "k-main", "k-open", "k-private"
SCRIPTS = ("safe", "means", "means-once", "echo", "error", "slow", "cut", "hang", "empty")


@pytest.fixture(scope="session")
def upstream():
    with scripted_server() as server:
        yield server


def _policy(directory, name: str, **fields) -> str:
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "extends": "mental-health", **fields}))
    return str(path)


def _start(upstream, directory, timeout_s: float):
    from guard.proxy import create_app
    from guard.proxy.config import parse_config

    os.environ["COUCHGUARD_TEST_UPSTREAM_KEY"] = "sk-upstream-dummy"
    config = parse_config(
        {
            "upstream": {
                "api_base": f"{upstream.url}/v1",
                "api_key_env": "COUCHGUARD_TEST_UPSTREAM_KEY",
                "timeout_s": timeout_s,
                "stream_idle_timeout_s": 20,
            },
            "models": {name: f"openai/{name}" for name in SCRIPTS},
            "max_body_bytes": 64_000,
            "audit": {"url": f"sqlite:///{directory / 'audit.db'}", "store_text": True},
            "escalation": {"webhook_url": f"{upstream.url}/webhook", "timeout_s": 2},
            "products": {
                "main": {"keys": [MAIN_KEY], "policy": "mental-health", "policy_header": ["research"]},
                "open": {"keys": [OPEN_KEY], "policy": _policy(directory, "open", fail_mode="open")},
                "private": {
                    "keys": ["sha256:" + hashlib.sha256(PRIVATE_KEY.encode()).hexdigest()],
                    "policy": _policy(directory, "private", redact_upstream_pii=True),
                },
            },
        }
    )
    app = create_app(config)
    server = start_proxy(app)
    server.state = app.state.couchguard
    return server


@pytest.fixture(scope="session")
def proxy(upstream, scorer, tmp_path_factory):
    # 3 s: the scripted "slow" model answers after 5 s, and the timeout tests need it to time out
    server = _start(upstream, tmp_path_factory.mktemp("proxy"), timeout_s=3)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def patient_proxy(upstream, scorer, tmp_path_factory):
    """The same proxy with a generous upstream timeout, for many requests at once.

    Here the proxy, the scripted upstream and the test's client share one process and its GIL; with 50 streams on
    two cores the scripted upstream's first byte can take longer than the 3 s the timeout tests rely on, which
    would turn a concurrency test into a timeout test (benchmarks/load.py measures concurrency in separate
    processes)."""
    server = _start(upstream, tmp_path_factory.mktemp("patient-proxy"), timeout_s=60)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def client(proxy):
    from openai import OpenAI

    return OpenAI(base_url=f"{proxy.url}/v1", api_key=MAIN_KEY, max_retries=0, timeout=30)


@pytest.fixture
def audit_rows(proxy):
    """Audit rows of one conversation hash, after everything recorded so far is written."""

    def rows(conversation_hash: str | None = None):
        all_rows = proxy.state.audit.rows()
        return [r for r in all_rows if conversation_hash is None or r["conversation_hash"] == conversation_hash]

    return rows


def pytest_collection_modifyitems(config, items):
    # litellm's lazily imported provider modules warn about pydantic TypedDict qualifiers on first use; warnings
    # are errors in this suite, and that one (third-party, harmless) would fail upstream calls in server threads
    for item in items:
        if "tests/proxy" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.filterwarnings("ignore:Items? .* (are|is) using the `ReadOnly` qualifier"))
