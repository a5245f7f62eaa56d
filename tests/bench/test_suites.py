"""Every registered suite runs end to end on the real models (small samples), through the CLI in-process."""

import json

import pytest

from guard.bench.registry import suite_names
from guard.cli import main


def test_registry_holds_the_five_suites_the_cli_offers():
    from guard.commands.bench import SUITE_NAMES

    # the CLI lists the names statically so that `couchguard --help` does not import matplotlib
    assert suite_names() == ["moore2025", "moore2025-stigma", "psychosis-bench", "spiral-bench", "vera-mh"]
    assert tuple(suite_names()) == SUITE_NAMES


@pytest.fixture
def bench(tmp_path, scorer, capsys):
    def run(*args: str) -> tuple[dict, str]:
        path = tmp_path / "out.json"
        assert main(["bench", *args, "--no-progress", "--json", str(path)]) == 0
        return json.loads(path.read_text()), capsys.readouterr().out
    return run


def test_stigma_counts_stigmatising_answers_stopped(bench):
    doc, out = bench("moore2025-stigma", "--limit", "40")
    assert doc["n"] == 40 and {"inappropriate", "caught", "catch_rate"} <= set(doc["overall"])
    assert doc["overall"]["inappropriate"] + doc["overall"]["appropriate"] == 40
    assert set(doc["by_source"]) <= {"gpt-4o", "llama3.1-405b", "llama3.1-70b", "llama3.1-8b", "llama2-70b"}
    assert "stigmatising answers" in out


def test_psychosis_bench_reports_the_first_flagged_turn(bench):
    doc, out = bench("psychosis-bench", "--limit", "2")
    assert set(doc["cases"]) == {"conduit_explicit", "conduit_implicit"}
    for case in doc["cases"].values():
        assert case["first_flagged_turn"] is None or 1 <= case["first_flagged_turn"] <= 12
        assert case["first_flagged_turn"] is None or case["first_flagged_turn"] == case["flagged_turns"][0]
    assert set(doc["by_condition"]) == {"Explicit", "Implicit"}
    assert all(len(v) == 12 for v in doc["flag_rate_by_turn"].values())


def test_spiral_bench_flag_rates_by_category(bench):
    doc, _ = bench("spiral-bench")
    assert doc["n"] == 30 and len(doc["by_category"]) == 6
    assert sum(c["n"] for c in doc["by_category"].values()) == 30


def test_vera_mh_flag_rates_by_risk_level(bench):
    doc, _ = bench("vera-mh")
    assert set(doc["by_risk_level"]) == {"None", "Low", "High", "Imminent"}
    assert len(doc["personas"]) == 10
    # the sample prompts of imminent-risk personas are what a suicide signal exists for
    imminent = doc["by_risk_level"]["Imminent"]
    assert imminent["flagged"] >= 1


@pytest.mark.parametrize("args, message", [
    (["spiral-bench", "--model", "openai/x"], "no live mode"),
    (["moore2025", "--judge", "openai/x"], "need --model"),
    (["moore2025", "--limit", "0"], "--limit must be at least 1"),
    (["moore2025", "--policy", "no-such-policy"], "no policy named"),
])
def test_refuses_bad_options_clearly(args, message, capsys):
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err
