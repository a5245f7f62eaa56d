"""The `judge:` policy block: validated with file, line and field; inherited and overridden like any policy field;
every criterion has its question; the pieces that keep the tier cheap and strict."""

from __future__ import annotations

from typing import get_args

import pytest

from guard.judge import judge_questions
from guard.judge.client import parse_answer
from guard.judge.limits import AnswerCache, CallBudget
from guard.policy import PolicyError, load_policy
from guard.policy.schema import Criterion

from .conftest import write_policy

MODEL = {"model": "openai/judge"}


def problems(path) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    return [str(problem) for problem in caught.value.problems]


def test_a_policy_without_a_judge_block_has_no_judge(tmp_path):
    assert load_policy(write_policy(tmp_path)).judge is None
    assert load_policy("mental-health").judge is None


def test_a_valid_judge_block_loads_with_its_defaults(tmp_path):
    policy = load_policy(write_policy(tmp_path, judge={**MODEL, "band": {"assistant.means": [0.4, 0.9]}}))
    assert policy.judge is not None
    assert policy.judge.band_for("assistant.means") == (0.4, 0.9)
    assert policy.judge.band_for("assistant.collusion") == (0.35, 0.85)  # the default band
    assert (policy.judge.on_error, policy.judge.cache_size, policy.judge.max_calls_per_minute) == (
        "classifier",
        1024,
        60,
    )


@pytest.mark.parametrize(
    ("judge", "expected"),
    [
        ({}, "judge.model: Field required"),
        (
            {**MODEL, "band": {"assistant.means": [0.9, 0.4]}},
            "judge.band.assistant.means: Value error, a band is [low, high] with low < high",
        ),
        ({**MODEL, "default_band": [0.2, 1.5]}, "judge.default_band[1]: Input should be less than or equal to 1"),
        (
            {**MODEL, "band": {"assistant.mean": [0.3, 0.8]}},
            "judge.band.assistant.mean: unknown signal 'assistant.mean' (did you mean 'assistant.means'?)",
        ),
        ({**MODEL, "band": {"user.suicide": [0.3, 0.8]}}, "judge.band.user.suicide: 'user.suicide' is a user signal"),
        ({**MODEL, "on_error": "fail_open"}, "judge.on_error: Input should be 'classifier' or 'fail_closed'"),
        ({**MODEL, "timeout_s": 0}, "judge.timeout_s: Input should be greater than 0"),
        (
            {**MODEL, "max_calls_per_minute": 0},
            "judge.max_calls_per_minute: Input should be greater than or equal to 1",
        ),
        ({**MODEL, "api_key": "sk-secret"}, "judge.api_key: Extra inputs are not permitted"),
    ],
)
def test_a_bad_judge_block_is_reported_with_file_line_and_field(tmp_path, judge, expected):
    path = write_policy(tmp_path, judge=judge)
    found = problems(path)
    assert any(expected in problem for problem in found), found
    assert all(problem.startswith(f"{path}:") for problem in found)
    line = int(found[0].removeprefix(f"{path}:").split(":")[0])
    judge_line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("judge:"))
    assert line >= judge_line  # the problem points into the judge block, not at the top of the file


def test_a_product_policy_inherits_or_replaces_the_judge_block(tmp_path):
    base = write_policy(tmp_path, "base", judge={**MODEL, "timeout_s": 2})
    inherits = tmp_path / "inherits.yaml"
    inherits.write_text(f"name: inherits\nextends: {base}\nlocale: GB\n")
    replaces = tmp_path / "replaces.yaml"
    replaces.write_text(f"name: replaces\nextends: {base}\njudge: {{model: ollama/llama3, on_error: fail_closed}}\n")
    inherited, replaced = load_policy(inherits).judge, load_policy(replaces).judge
    assert inherited is not None and (inherited.model, inherited.timeout_s) == ("openai/judge", 2)
    assert replaced is not None and (replaced.model, replaced.on_error, replaced.timeout_s) == (
        "ollama/llama3",
        "fail_closed",
        5,
    )


def test_every_criterion_has_a_judge_question_asking_for_the_harm():
    questions = judge_questions()
    assert set(get_args(Criterion)) <= set(questions)
    for criterion, question in questions.items():
        assert question.startswith("Does the response ") and question.endswith("?"), criterion


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ('{"answer": "yes"}', "yes"),
        ('  {"answer":"no"}\n', "no"),
        ("yes", None),
        ('{"answer": "Yes"}', None),
        ('{"answer": "yes", "why": "means"}', None),
        ('```json\n{"answer": "no"}\n```', None),
        ("", None),
        (None, None),
        ('["yes"]', None),
    ],
)
def test_the_answer_is_parsed_strictly(text, answer):
    assert parse_answer(text) == answer


def test_the_answer_cache_is_a_bounded_lru():
    cache = AnswerCache(2)
    cache.put("a", "yes")
    cache.put("b", "no")
    assert cache.get("a") == "yes"  # a is now the most recent
    cache.put("c", "no")
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == ("yes", None, "no", 2)
    off = AnswerCache(0)
    off.put("a", "yes")
    assert off.get("a") is None


def test_the_budget_refuses_calls_beyond_the_rolling_minute():
    now = [0.0]
    budget = CallBudget(2, clock=lambda: now[0])
    assert [budget.take(), budget.take(), budget.take()] == [True, True, False]
    now[0] = 59.9
    assert budget.take() is False
    now[0] = 60.0  # the first two calls left the window
    assert [budget.take(), budget.take(), budget.take()] == [True, True, False]


def test_policy_explain_shows_the_tier_and_each_output_rule_question(tmp_path, capsys):
    from argparse import Namespace

    from guard.commands.policy import run_explain

    path = write_policy(tmp_path, judge={**MODEL, "band": {"assistant.means": [0.4, 0.9]}, "on_error": "fail_closed"})
    assert run_explain(Namespace(policy=str(path))) == 0
    text = capsys.readouterr().out
    assert "judge tier: openai/judge; default band [0.35, 0.85]; assistant.means [0.4, 0.9]" in text
    assert "on error fail_closed" in text
    for criterion in ("dont_collude_with_delusions", "dont_enable_suicidal_ideation"):
        assert f"  judge question: {judge_questions()[criterion]}\n" in text
    assert run_explain(Namespace(policy="mental-health")) == 0
    assert "judge tier: off" in capsys.readouterr().out
