"""Seeded fuzzing of couchguard serve: hostile bodies, headers, paths and methods against a healthy upstream.

    python benchmarks/fuzz.py [--requests 10000] [--seed 0] [--json reports/fuzz.json]

Each request is drawn from a seeded generator (the same seed, the same requests): wrong types, deep nesting, huge
strings and numbers, lone surrogates, NaN and Infinity, unknown fields (litellm's call settings among them), bad
roles and content parts, wrong content types, truncated and invalid JSON, invalid UTF-8, odd methods and paths.
The proxy runs in-process on loopback in front of the scripted upstream (tests/proxy/upstream_server.py), which
answers every healthy model normally, so no answer should be a 5xx: every one is counted as a violation, as is an
error body not in OpenAI's shape, a success that is not a completion or a complete stream, or a request that gets
no answer at all (a crash). The report has the status counts and the first violations.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

CHAT = "/v1/chat/completions"
PATHS = [
    CHAT,
    "/chat/completions",
    "/v1/models",
    "/healthz",
    "/metrics",
    CHAT + "/",
    "/v1/chat",
    "/v1/../v1/models",
    "/v1/chat/completions?stream=true&x=%00",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/v1/" + "a" * 3000,
    "/v1/chat/c%F0mpletions",
]
METHODS = ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "PROPFIND", "FOO"]
CONTENT_TYPES = [
    "application/json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/json; charset=latin-1",
    "application/xml",
    "",
    "*/*",
    "application/json\x7f",
]
ROLES = ["user", "assistant", "system", "developer", "tool", "function", "robot", "", "USER", "user ", None, 7]
# litellm keywords a client must never set (docs/proxy.md), and fields no API has
UNKNOWN_FIELDS = [
    "api_base",
    "base_url",
    "api_key",
    "mock_response",
    "timeout",
    "num_retries",
    "litellm_params",
    "metadata",
    "extra_body",
    "top_k",
    "callbacks",
    "functions",
    "audio",
    "prediction",
    "store",
    "x",
]
TEXTS = [
    "Work has been stressful this week, any ideas for switching off?",
    "hello",
    "",
    " ",
    "\u0000",
    "\u202e\u2066",
    "😀" * 3,
    "A" * 500,
    "<script>alert(1)</script>",
    "'; DROP TABLE decisions; --",
    "{{crisis_lines}} {0} %s",
]
# raw pieces spliced into a JSON body as text: things Python's json accepts or chokes on that JSON does not allow
RAW_VALUES = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "1" * 5000,
    "1" * 4301,
    "0." + "1" * 5000,
    '"\\ud800"',
    '"\\udfff x"',
    '"\\u0000"',
    "[" * 100 + "]" * 100,
    "[" * 5000 + "]" * 5000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    "{}",
    "[]",
    "null",
    "true",
    '"' + "\\u00e9" * 200 + '"',
    "1.7976931348623157e309",
    "-0",
    "0e0",
    "123456789012345678901234567890",
]


@dataclass
class Case:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stream: bool = False  # a well-formed streamed request: the answer is read as SSE


def _junk(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any type, sometimes nested, sometimes large."""
    kind = rng.randrange(10 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2, 3, 2**31, -(2**63), 2**64, 10**30])
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e308, -1e-308, 3.14, 2.5])
    if kind in (4, 5):
        return rng.choice(TEXTS)
    if kind in (6, 7):
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(TEXTS + UNKNOWN_FIELDS): _junk(rng, depth + 1) for _ in range(rng.randrange(4))}


def _nested(rng: random.Random) -> Any:
    value: Any = rng.choice(TEXTS)
    for _ in range(rng.choice([10, 63, 64, 65, 200])):  # deeper nesting is spliced in as text (RAW_VALUES)
        value = [value] if rng.random() < 0.5 else {"a": value}
    return value


def _message(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return {"role": "user", "content": rng.choice(TEXTS[:2])}
    if roll < 0.6:
        return _junk(rng)
    message: dict[str, Any] = {"role": rng.choice(ROLES)}
    choice = rng.randrange(6)
    if choice == 0:
        message["content"] = rng.choice(TEXTS)
    elif choice == 1:
        message["content"] = [
            {"type": rng.choice(["text", "image_url", "input_audio", "refusal", 3]), "text": rng.choice(TEXTS)}
            for _ in range(rng.randrange(3))
        ]
    elif choice == 2:
        message["content"] = _junk(rng)
    elif choice == 3:
        message["tool_calls"] = _junk(rng)
    elif choice == 4:
        message.update({"content": None, "tool_call_id": _junk(rng), "name": _junk(rng)})
    return message


def _fields(rng: random.Random, models: list[str]) -> dict[str, Any]:
    """A request that is valid, then up to a few mutations of it."""
    body: dict[str, Any] = {
        "model": rng.choice(models),
        "messages": [{"role": "user", "content": rng.choice(TEXTS[:2])}],
    }
    if rng.random() < 0.25:
        body["stream"] = True
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):  # one in six stays well-formed (and reaches the model)
        mutation = rng.randrange(12)
        if mutation == 0:
            body["messages"] = [_message(rng) for _ in range(rng.randrange(4))]
        elif mutation == 1:
            body["messages"] = _junk(rng)
        elif mutation == 2:
            body[rng.choice(["model", "stream", "n", "stream_options"])] = _junk(rng)
        elif mutation == 3:
            body[rng.choice(UNKNOWN_FIELDS)] = _junk(rng)
        elif mutation == 4:  # an allow-listed field with any value
            name = rng.choice(
                [
                    "temperature",
                    "top_p",
                    "max_tokens",
                    "max_completion_tokens",
                    "stop",
                    "seed",
                    "tools",
                    "tool_choice",
                    "response_format",
                    "logit_bias",
                    "logprobs",
                    "top_logprobs",
                    "user",
                    "modalities",
                    "presence_penalty",
                    "parallel_tool_calls",
                    "service_tier",
                ]
            )
            body[name] = _junk(rng)
        elif mutation == 5:
            body[rng.choice(["tools", "metadata", "messages"])] = _nested(rng)
        elif mutation == 6:
            body["messages"].append({"role": "user", "content": "x" * rng.choice([10_000, 70_000])}) if isinstance(
                body.get("messages"), list
            ) else None
        elif mutation == 7:
            body["stop"] = ["s" * rng.choice([1, 256, 257])] * rng.choice([1, 4, 5])
        elif mutation == 8:
            body["logit_bias"] = {str(i): rng.choice([1, 100, 101, -101]) for i in range(rng.choice([1, 300, 301]))}
        elif mutation == 9:
            body["tools"] = [{"type": rng.choice(["function", 1, None])} for _ in range(rng.choice([1, 128, 129]))]
        elif mutation == 10:
            body["n"] = rng.choice([0, 1, 2, True, "1", 1.0])
        else:
            body["stream_options"] = rng.choice([{"include_usage": True}, {"include_usage": "yes"}, {"x": 1}, 5, None])
    return body


def _encode(rng: random.Random, body: dict[str, Any]) -> bytes:
    encoded = json.dumps(body).encode()
    roll = rng.random()
    if roll < 0.06:  # truncated JSON
        return encoded[: rng.randrange(max(1, len(encoded)))]
    if roll < 0.16:  # a raw value JSON does not allow, or Python's json cannot read safely, where a value goes
        key = rng.choice(["temperature", "seed", "max_tokens", "model", "tools", "n", "x"])
        return encoded[:-1] + b', "' + key.encode() + b'": ' + rng.choice(RAW_VALUES).encode() + b"}"
    if roll < 0.20:  # invalid UTF-8, a byte-order mark, a NUL
        return rng.choice([b"\xff\xfe", b"\xef\xbb\xbf", b"\x00", b"\xc3\x28"]) + encoded
    if roll < 0.23:  # a content part's text with a lone surrogate, escaped
        return encoded.replace(b'"content": "', b'"content": "\\ud83d', 1)
    if roll < 0.26:  # duplicate keys, the last one wins in Python
        return encoded[:-1] + b', "messages": ' + json.dumps(_junk(rng)).encode() + b"}"
    if roll < 0.28:
        return rng.choice([b"", b" ", b"null", b"[]", b'"text"', b"1", b"{", b"}", b"[{}]", b'{"messages": []}'])
    return encoded


def generate(rng: random.Random, *, key: str, models: list[str]) -> Case:
    """One hostile (or occasionally well-formed) request."""
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    roll = rng.random()
    if roll < 0.05:
        headers["authorization"] = rng.choice(["", "Bearer", "Bearer wrong", "Basic abc", "bearer " + key, key])
    elif roll < 0.08:
        headers["x-couchguard-policy"] = rng.choice(
            ["research", "general-assistant", "../../etc/passwd", "", "x" * 300]
        )
    elif roll < 0.13:
        headers["content-type"] = rng.choice(CONTENT_TYPES)
    elif roll < 0.15:
        headers["content-encoding"] = rng.choice(["gzip", "br", "identity"])
    roll = rng.random()
    if roll < 0.08:
        return Case(rng.choice(METHODS), rng.choice(PATHS), headers, json.dumps(_junk(rng)).encode())
    if roll < 0.14:
        return Case("POST", rng.choice(PATHS), headers, _encode(rng, _fields(rng, models)))
    if roll < 0.20:
        return Case("POST", CHAT, headers, json.dumps(_junk(rng)).encode())
    body = _fields(rng, models)
    return Case("POST", CHAT, headers, _encode(rng, body), stream=body.get("stream") is True)


def violation(case: Case, status: int, content_type: str, body: bytes) -> str | None:
    """Why an answer breaks the contract, or None when it keeps it."""
    if status >= 500:
        return f"{status}: a server error for a client's request"
    if case.method == "HEAD":
        return None  # no body to check
    if 300 <= status < 400:
        return None  # a redirect (a trailing slash): the client follows it to a path checked on its own
    if status >= 400:
        try:
            error = json.loads(body)["error"]
        except (ValueError, KeyError, TypeError):
            return f"{status}: error body not in OpenAI's shape: {body[:200]!r}"
        if not isinstance(error, dict) or set(error) != {"message", "type", "param", "code"} or not error["message"]:
            return f"{status}: error body not in OpenAI's shape: {body[:200]!r}"
        return None
    if case.path.split("?")[0].rstrip("/") in (CHAT, "/chat/completions") and case.method == "POST":
        if content_type.startswith("text/event-stream"):
            if not body.endswith(b"data: [DONE]\n\n"):
                return f"{status}: a stream that does not end with [DONE]: {body[-200:]!r}"
            return None
        try:
            answer = json.loads(body)
            answer["choices"][0]["message"], answer["couchguard"]["action"]
        except (ValueError, KeyError, TypeError, IndexError):
            return f"{status}: a success that is not a completion: {body[:200]!r}"
    return None


@dataclass
class Report:
    statuses: Counter = field(default_factory=Counter)
    violations: list[dict[str, Any]] = field(default_factory=list)
    crashes: int = 0

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if isinstance(status, int) and status >= 500)


def fuzz(
    base_url: str,
    *,
    requests: int,
    seed: int,
    key: str,
    models: list[str],
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Send `requests` generated requests, in order, one at a time; count statuses and contract violations."""
    rng = random.Random(seed)
    report = Report()
    with httpx.Client(base_url=base_url, timeout=httpx.Timeout(120, connect=10)) as client:
        for index in range(requests):
            case = generate(rng, key=key, models=models)
            try:
                with client.stream(case.method, case.path, headers=case.headers, content=case.body) as response:
                    body = response.read()
                    status, content_type = response.status_code, response.headers.get("content-type", "")
            except httpx.HTTPError as exc:  # no answer at all: the server dropped the connection or hung
                report.crashes += 1
                report.statuses["no answer"] += 1
                report.violations.append(
                    {"index": index, "case": _describe(case), "why": f"{type(exc).__name__}: {exc}"}
                )
                continue
            report.statuses[status] += 1
            why = violation(case, status, content_type, body)
            if why is not None:
                report.violations.append({"index": index, "case": _describe(case), "why": why})
            if progress is not None:
                progress(index)
    return report


def _describe(case: Case) -> dict[str, Any]:
    return {
        "method": case.method,
        "path": case.path[:200],
        "headers": case.headers,
        "body": case.body[:500].decode("utf-8", "backslashreplace"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default="reports/fuzz.json")
    args = parser.parse_args(argv)

    from guard.proxy import create_app
    from guard.proxy.config import parse_config
    from tests.proxy.upstream_server import Script, ServerThread, build_app, start_proxy

    upstream = ServerThread(build_app(Script())).start()
    workdir = Path(tempfile.mkdtemp(prefix="couchguard-fuzz-"))
    os.environ["COUCHGUARD_FUZZ_KEY"] = "sk-dummy"
    key, models = "k-fuzz", ["safe", "echo"]
    app = create_app(
        parse_config(
            {
                "upstream": {
                    "model": "openai/safe",
                    "api_base": f"{upstream.url}/v1",
                    "api_key_env": "COUCHGUARD_FUZZ_KEY",
                },
                "models": {name: f"openai/{name}" for name in models},
                "max_body_bytes": 64_000,
                "audit": {"url": f"sqlite:///{workdir / 'audit.db'}"},
                "products": {"fuzz": {"keys": [key], "policy": "mental-health", "policy_header": ["research"]}},
            }
        )
    )
    proxy = start_proxy(app)
    started = time.perf_counter()

    def progress(index: int) -> None:
        if (index + 1) % 1000 == 0:
            print(f"{index + 1} requests, {time.perf_counter() - started:.0f} s", file=sys.stderr)

    try:
        report = fuzz(proxy.url, requests=args.requests, seed=args.seed, key=key, models=models, progress=progress)
    finally:
        proxy.stop()
        upstream.stop()
    seconds = time.perf_counter() - started
    result = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "requests": args.requests,
        "seed": args.seed,
        "seconds": round(seconds, 1),
        "statuses": {str(status): n for status, n in sorted(report.statuses.items(), key=lambda kv: str(kv[0]))},
        "server_errors": report.server_errors,
        "crashes": report.crashes,
        "violations": len(report.violations),
        "first_violations": report.violations[:20],
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "first_violations"}, indent=2))
    for item in report.violations[:5]:
        print(f"violation #{item['index']}: {item['why']}", file=sys.stderr)
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
