"""The batch commands, as a user runs them: JSON lines in, JSON lines out, in order, bad lines reported."""

import json
import subprocess
import sys

import pytest

from classifiers.signals import SIGNALS

# every test runs the real command line in a subprocess, which loads the models
pytestmark = pytest.mark.slow

CONTRACT_KEYS = {"id", "rail", "action", "rules", "flagged", "signals", "escalate", "text"}


def couchguard(*args, stdin: str = "", timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "guard.cli", *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


def lines(*records) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


GOOD_USER = {"id": "u1", "messages": [{"role": "user", "content": "what's a nice walk near the river?"}]}
GOOD_OUTPUT = {
    "id": "o1",
    "messages": [
        {"role": "user", "content": "what's a nice walk near the river?"},
        {"role": "assistant", "content": "The riverside path from the old mill to the park is lovely in the evening."},
    ],
}


def test_classify_writes_one_line_per_input_in_order_and_keeps_going():
    result = couchguard(
        "classify",
        "-",
        stdin=lines(
            GOOD_USER,
            "{not json",
            {"id": "bad-role", "messages": [{"role": "wizard", "content": "x"}]},
            {"id": 7, "messages": "hello"},
            ["a", "list"],
            GOOD_OUTPUT,
            {"id": "big", "messages": [{"role": "user", "content": "x" * 1_000_001}]},
        ),
    )
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["id"] for o in out] == ["u1", 2, "bad-role", 7, 5, "o1", "big"]
    assert set(out[0]["signals"]) == {name for name, spec in SIGNALS.items() if spec.side == "user"}
    assert set(out[5]["signals"]) == set(SIGNALS)  # a response is read with the user turns it answers
    assert "invalid JSON" in out[1]["error"]
    assert "role 'wizard' is unknown" in out[2]["error"]
    assert "messages must be a list" in out[3]["error"]
    assert "expected an object" in out[4]["error"]
    assert "exceeds 200000 characters" in out[6]["error"]
    assert "classified 2 conversations, 5 errors" in result.stderr


def test_check_follows_the_contract():
    result = couchguard("check", "--policy", "mental-health", stdin=lines(GOOD_USER, GOOD_OUTPUT, "[]"))
    assert result.returncode == 0, result.stderr
    first, second, third = (json.loads(line) for line in result.stdout.splitlines())
    assert set(first) == CONTRACT_KEYS and first["rail"] == "input" and first["action"] == "allow"
    assert first["text"] is None
    assert set(second) == CONTRACT_KEYS and second["rail"] == "output" and second["action"] == "allow"
    assert second["text"] == GOOD_OUTPUT["messages"][1]["content"]
    assert third == {"id": 3, "error": "line 3: expected an object with 'id' and 'messages', got list"}


def test_check_reports_a_broken_policy_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\nthresholds:\n  user.suicide: 2\n")
    result = couchguard("check", "--policy", str(path), stdin=lines(GOOD_USER))
    assert result.returncode == 2
    assert f"{path}:3: thresholds.user.suicide" in result.stderr


def test_check_handles_ten_thousand_lines_streaming_with_errors_in_place(tmp_path):
    records = []
    for i in range(10_000):
        if i % 1000 == 999:
            records.append("{broken")
        else:
            turn = [
                "can you suggest a book for a long train ride?",
                "thanks! what about a podcast?",
                "i can't sleep again, any tips?",
            ][i % 3]
            records.append({"id": i, "messages": [{"role": "user", "content": turn}]})
    source = tmp_path / "in.jsonl"
    source.write_text(lines(*records))
    process = subprocess.Popen(
        [sys.executable, "-m", "guard.cli", "check", str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = process.stdout.readline()
    assert process.poll() is None  # the first line arrives while the rest of the file is still being processed
    rest = process.stdout.read()
    process.wait(timeout=900)
    out = [json.loads(first)] + [json.loads(line) for line in rest.splitlines()]
    assert process.returncode == 0
    assert len(out) == 10_000
    assert [o["id"] for o in out if "error" not in o] == [i for i in range(10_000) if i % 1000 != 999]
    assert sum("error" in o for o in out) == 10
    assert out[999]["id"] == 1000 and "invalid JSON" in out[999]["error"]


def test_policy_commands():
    explained = couchguard("policy", "explain", "mental-health")
    assert explained.returncode == 0
    assert "criterion: Don't Enable Suicidal Ideation" in explained.stdout
    assert "department_of_veterans_affairs_vadod_2023" in explained.stdout
    # a user at risk lowers the bar of the output rules: a clinician reading the policy sees by how much
    suicide_risk = explained.stdout.split("\n- suicide-risk:")[1].split("\n- ")[0]
    assert "output rules use assistant.means 0.6, assistant.enabling 0.7 where" in suicide_risk
    checked = couchguard("policy", "check", "policies/mental-health.yaml")
    assert checked.returncode == 0 and "ok" in checked.stdout


@pytest.mark.parametrize("command", ["classify", "check"])
def test_empty_input_is_fine(command):
    result = couchguard(command, stdin="")
    assert result.returncode == 0 and result.stdout == ""
