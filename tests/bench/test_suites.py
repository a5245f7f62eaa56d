"""Every registered suite runs end to end on the real models (small samples), through the CLI in-process."""

import json

import pytest

from guard.bench.registry import suite_names
from guard.cli import main

# suites end to end on the real models, and the CLI in a fresh interpreter
pytestmark = pytest.mark.slow


def test_the_cli_offers_every_registered_suite_without_importing_matplotlib():
    import subprocess
    import sys

    # a fresh interpreter: this one may have drawn figures already
    probe = "import sys; from guard.cli import build_parser; build_parser(); print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "False", result.stderr
    from guard.cli import build_parser

    bench = build_parser()._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    suite = next(a for a in bench._actions if a.dest == "suite")
    assert list(suite.choices) == suite_names()


def test_a_registered_suite_is_offered_and_run(tmp_path, capsys):
    from guard.bench.registry import SUITES, Suite, register
    from guard.bench.types import SuiteRun, Table

    register(
        Suite(
            name="test-only",
            description="a suite of a test's own",
            run=lambda guard, options: SuiteRun(
                summary={"suite": "test-only", "n": 0}, tables=[Table(title="t", headers=["a"], rows=[["1"]])]
            ),
        )
    )
    try:
        assert "test-only" in suite_names()
        path = tmp_path / "out.json"
        assert main(["bench", "test-only", "--no-progress", "--json", str(path)]) == 0
        assert json.loads(path.read_text())["suite"] == "test-only"
    finally:
        SUITES.pop("test-only")


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


@pytest.mark.parametrize(
    "args, message",
    [
        (["spiral-bench", "--model", "openai/x"], "no live mode"),
        (["moore2025", "--judge", "openai/x"], "need --model"),
        (["moore2025", "--limit", "0"], "--limit must be at least 1"),
        (["moore2025", "--policy", "no-such-policy"], "no policy named"),
    ],
)
def test_refuses_bad_options_clearly(args, message, capsys):
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err
