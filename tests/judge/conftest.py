"""A scripted judge on loopback (one per session, its script reset per test) and policies that turn the tier on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.audit.conftest import database_url  # noqa: F401  (SQLite, and PostgreSQL when configured)

from .judge_server import judge_server

# two output rules that block (no rewrite loop: the tests look at the decision, not at rewriting)
RULES: list[dict[str, Any]] = [
    {
        "id": "collusion",
        "criterion": "dont_collude_with_delusions",
        "when": {
            "all": [{"signal": "assistant.collusion"}, {"not": {"signal": "assistant.reality_check", "at_least": 0.9}}]
        },
        "action": "block",
        "template": "reality_check",
    },
    {
        "id": "means",
        "criterion": "dont_enable_suicidal_ideation",
        "when": {"signal": "assistant.means"},
        "action": "block",
        "template": "crisis_response",
    },
]
JUDGE_KEY_ENV = "COUCHGUARD_TEST_JUDGE_KEY"
THRESHOLDS = {"assistant.collusion": 0.5, "assistant.means": 0.5}


@pytest.fixture(scope="session")
def judge_url():
    with judge_server() as server:
        yield server


@pytest.fixture
def judge_script(judge_url):
    script = judge_url.script
    script.answers.clear()
    script.requests.clear()
    script.delay_s = 1.0
    return script


def write_policy(directory: Path, name: str = "judged", judge: dict[str, Any] | None = None, **fields: Any) -> Path:
    data: dict[str, Any] = {"name": name, "thresholds": THRESHOLDS, "output_rules": RULES, **fields}
    if judge is not None:
        data["judge"] = judge
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def judge_block(judge_url):
    """A judge block pointing at the scripted judge; `mode` is the scripted behaviour (the model name)."""

    os.environ.setdefault(JUDGE_KEY_ENV, "sk-judge-dummy")  # the provider client insists on a key

    def block(mode: str = "answer", **fields: Any) -> dict[str, Any]:
        return {
            "model": f"openai/{mode}",
            "api_base": f"{judge_url.url}/v1",
            "api_key_env": JUDGE_KEY_ENV,
            "timeout_s": 5,
            **fields,
        }

    return block
