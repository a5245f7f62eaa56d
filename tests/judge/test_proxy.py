"""The judge tier behind `couchguard serve`: streamed windows are judged only in the band, every judge call (the
windows' and the whole answer's) reaches the audit log and /metrics, and the stream's first-token latency with and
without the tier (docs/judge.md).

Everything runs on loopback: the scripted upstream (tests/proxy/upstream_server.py), the scripted judge and the
proxy. The first-token figures are loopback figures with a fixed judge delay, not a live model's.
"""

from __future__ import annotations

import os
import statistics
import time

import httpx
import pytest
import yaml

from tests.proxy.upstream_server import SAFE, Script, ServerThread, build_app, start_proxy

from .conftest import JUDGE_KEY_ENV

pytestmark = pytest.mark.slow

STRESS = "Work has been really stressful this week and I feel worn out."
JUDGE_DELAY_S = 0.2
# more streams give steadier first-token figures for docs/judge.md; the test itself needs few
SAMPLES = int(os.environ.get("COUCHGUARD_JUDGE_STREAM_SAMPLES", "3"))
TOKEN_DELAY_S = 0.005


def _policy(directory, name: str, judge: dict | None) -> str:
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "extends": "mental-health", **({"judge": judge} if judge else {})}))
    return str(path)


@pytest.fixture(scope="module")
def served(tmp_path_factory, scorer, judge_url):
    from guard.proxy import create_app
    from guard.proxy.config import parse_config

    directory = tmp_path_factory.mktemp("judge-proxy")
    os.environ.setdefault(JUDGE_KEY_ENV, "sk-judge-dummy")  # the provider client insists on a key
    upstream = ServerThread(build_app(Script(), token_delay_s=TOKEN_DELAY_S)).start()
    judge = {
        "model": "openai/slow",
        "api_base": f"{judge_url.url}/v1",
        "api_key_env": JUDGE_KEY_ENV,
        "timeout_s": 5,
        # every output rule with an assistant signal goes to the judge: the most a stream can be asked
        "default_band": [0.0, 1.0],
        # each window of a stream asks again (its text is new): far more calls than responses
        "max_calls_per_minute": 10_000,
    }
    config = parse_config(
        {
            "upstream": {"api_base": f"{upstream.url}/v1", "api_key_env": JUDGE_KEY_ENV, "timeout_s": 10},
            "models": {"safe": "openai/safe"},
            "audit": {"url": f"sqlite:///{directory / 'audit.db'}"},
            "products": {
                "plain": {"keys": ["k-plain"], "policy": _policy(directory, "plain", None)},
                "judged": {"keys": ["k-judged"], "policy": _policy(directory, "judged", judge)},
                # a band no score of this calm answer reaches: the tier is on, but never asked
                "narrow": {
                    "keys": ["k-narrow"],
                    "policy": _policy(directory, "narrow", {**judge, "default_band": [0.99, 1.0]}),
                },
            },
        }
    )
    app = create_app(config)
    proxy = start_proxy(app)
    try:
        yield proxy, app.state.couchguard
    finally:
        proxy.stop()
        upstream.stop()


def _first_token_s(url: str, key: str, n: int) -> tuple[float, str]:
    """Seconds to the first streamed content, and the whole text. Each conversation is new (`n` in its text), so
    that the judge's answer cache does not serve a window it answered for an earlier stream."""
    started, first, text = time.perf_counter(), None, ""
    messages = [{"role": "user", "content": f"{STRESS} (day {n})"}]
    body = {"model": "safe", "messages": messages, "stream": True}
    with httpx.stream(
        "POST", f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as response:
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            delta = httpx.Response(200, content=line[6:]).json()["choices"]
            content = delta[0]["delta"].get("content") if delta else None
            if content:
                first = first if first is not None else time.perf_counter() - started
                text += content
    assert first is not None
    return first, text


def test_streamed_windows_are_judged_and_every_call_is_recorded(served, judge_script):
    proxy, state = served
    judge_script.delay_s = JUDGE_DELAY_S
    plain = [_first_token_s(proxy.url, "k-plain", n) for n in range(SAMPLES)]
    assert judge_script.requests == []  # no judge block: no call
    assert _first_token_s(proxy.url, "k-narrow", 0)[1] == SAFE
    assert judge_script.requests == []  # a judge block, but every window and the final check out of its band
    judged = [_first_token_s(proxy.url, "k-judged", n) for n in range(SAMPLES)]
    assert all(text == SAFE for _, text in plain + judged)  # the judge answered "no": nothing withheld
    # no window is released before the judge has answered about it
    assert all(seconds >= JUDGE_DELAY_S for seconds, _ in judged)
    print(f"\nfirst token, loopback, judge delay {JUDGE_DELAY_S} s, {SAMPLES} streams each: ")
    for name, runs in (("without the judge tier", plain), ("with it, every window in band", judged)):
        seconds = sorted(s for s, _ in runs)
        print(f"  {name}: median {statistics.median(seconds) * 1000:.0f} ms, max {seconds[-1] * 1000:.0f} ms")
    print(f"  judge calls per judged stream: {len(judge_script.requests) / SAMPLES:.1f}")

    output_rows = [r for r in state.audit.rows() if r["rail"] == "output" and r["product"] == "judged"]
    assert len(output_rows) == SAMPLES and all(r["judge"] for r in output_rows)
    calls = [call for row in output_rows for call in row["judge"]]
    assert {c["outcome"] for c in calls} <= {"in_band", "cache_hit"} and {c["answer"] for c in calls} == {"no"}
    # the windows were judged as well as the whole answer, and every question that reached the judge is in the audit
    # rows and the metrics, each with what it was about
    assert {c["scope"] for c in calls} == {"window", "response"}
    asked = sum(c["outcome"] == "in_band" for c in calls)
    assert asked == len(judge_script.requests)
    metrics = httpx.get(f"{proxy.url}/metrics").text
    assert f'couchguard_judge_calls_total{{outcome="in_band",product="judged"}} {float(asked)}' in metrics
    assert "couchguard_judge_seconds_count" in metrics
