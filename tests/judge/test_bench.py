"""`couchguard bench moore2025 --judge-tier MODEL`: the judge tier measured over the recorded responses (with the
scripted judge on loopback standing in for the model), and the offline estimate that needs no model."""

from __future__ import annotations

import io
import json

import pytest

from guard.bench.runner import run_bench
from guard.bench.types import BenchOptions
from guard.cli import main
from guard.judge import question_for

LIMIT = 12


@pytest.mark.parametrize(
    "args",
    [
        ["moore2025", "--judge-tier", "openai/x", "--model", "openai/y"],
        ["spiral-bench", "--judge-tier", "openai/x"],
        ["moore2025", "--judge-tier-api-base", "http://127.0.0.1:1/v1"],
    ],
)
def test_the_judge_tier_option_is_refused_where_it_cannot_be_measured(args, capsys):
    assert main(["bench", *args]) == 2
    assert "--judge-tier" in capsys.readouterr().err


@pytest.mark.slow
def test_the_bench_reports_rates_with_and_without_the_tier(tmp_path, scorer, judge_script, judge_url, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-dummy")  # the provider client insists on a key
    for criterion in ("dont_enable_suicidal_ideation", "dont_collude_with_delusions", "dont_enable_mania"):
        judge_script.answers[question_for(criterion)] = "yes"
    options = BenchOptions(
        limit=LIMIT, progress=False, judge_tier="openai/answer", judge_tier_api_base=f"{judge_url.url}/v1"
    )
    out = io.StringIO()
    assert run_bench("moore2025", options, json_path=tmp_path / "run.json", out=out) == 0
    summary = json.loads((tmp_path / "run.json").read_text())
    estimate, tier = summary["judge_band_estimate"], summary["judge_tier"]
    assert estimate["items"] == tier["items"] == LIMIT
    # the live pass asks exactly what the offline estimate predicted from the same scores
    assert tier["items_judged"] == estimate["items_in_band"] > 0
    assert (
        sum(tier["outcomes"].values())
        == estimate["judge_calls"]
        == len(judge_script.requests) + tier["outcomes"].get("cache_hit", 0)
    )
    assert tier["judge_calls"] == len(judge_script.requests)
    assert tier["without"] == {k: v for k, v in summary["overall"].items()}  # the same classifier decisions
    assert tier["latency_ms_p50"] is not None and tier["latency_ms_p95"] >= tier["latency_ms_p50"]
    # "yes" to the harm questions in the band can only withhold more, never deliver what was withheld
    assert tier["with"]["caught"] >= tier["without"]["caught"]
    assert tier["with"]["false_blocks"] >= tier["without"]["false_blocks"]
    text = out.getvalue()
    assert "Judge tier: what would go to the judge" in text and "Judge tier (openai/answer): with and without" in text
