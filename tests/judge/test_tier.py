"""The judge tier through `Guard`: asked only in the band, its answer deciding the rule, every outcome visible in the
Decision, the audit row and the metrics. The judge is a scripted server on loopback; the scores are given to the
output rail (as the proxy does), so each test sits exactly where it means to in or out of the band."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import Column, MetaData, Table, create_engine

from classifiers.conversation import parse_conversation
from classifiers.signals import SIGNALS
from guard.audit import AuditLog
from guard.audit.schema import decisions
from guard.judge import question_for
from guard.pipeline import Guard
from guard.policy import load_policy
from guard.proxy.metrics import Metrics

from .conftest import RULES, write_policy

pytestmark = pytest.mark.slow  # a scripted server on loopback and the trained models

COLLUSION_Q = question_for("dont_collude_with_delusions")
MEANS_Q = question_for("dont_enable_suicidal_ideation")
PRODUCT = "clinic"


def conversation(response: str = "That sounds frightening. If they are listening, keep your phone away."):
    return parse_conversation(
        [
            {"role": "user", "content": "My neighbours put a chip in my tooth to listen to me."},
            {"role": "assistant", "content": response},
        ]
    )


def scores(**named: float) -> dict[str, float]:
    """Every signal low, the named ones (assistant_collusion -> assistant.collusion) as given."""
    values = dict.fromkeys(SIGNALS, 0.01)
    values.update({name.replace("_", ".", 1): value for name, value in named.items()})
    return values


class Judged:
    """A Guard for a policy with (or without) a judge block, observed by an audit log and metrics as in the proxy."""

    def __init__(self, tmp_path, scorer, judge: dict[str, Any] | None) -> None:
        self.guard = Guard(load_policy(write_policy(tmp_path, judge=judge)), scorer)
        self.audit = AuditLog(f"sqlite:///{tmp_path / 'audit.db'}").start()
        self.metrics = Metrics()
        self.guard.observers.extend([self.audit.observer, self.metrics.observer])

    def decide(self, signal_scores: dict[str, float], response: str | None = None):
        convo = conversation(response) if response else conversation()
        rail = self.guard.output_rail(convo, scores=signal_scores, context={"product": PRODUCT, "request_id": "r"})
        return asyncio.run(rail)

    def rows(self) -> list[dict[str, Any]]:
        return self.audit.rows()

    def counted(self, outcome: str) -> float:
        labels = {"product": PRODUCT, "outcome": outcome}
        return self.metrics.registry.get_sample_value("couchguard_judge_calls_total", labels) or 0.0

    def timed(self, outcome: str) -> float:
        labels = {"outcome": outcome}
        return self.metrics.registry.get_sample_value("couchguard_judge_seconds_count", labels) or 0.0


@pytest.fixture
def judged(tmp_path, scorer, judge_script, judge_block):
    made: list[Judged] = []

    def make(mode: str | None = "answer", **fields: Any) -> Judged:
        made.append(Judged(tmp_path / str(len(made)), scorer, judge_block(mode, **fields) if mode else None))
        return made[-1]

    for directory in range(4):
        (tmp_path / str(directory)).mkdir()
    yield make
    for item in made:
        item.audit.close()


def test_without_a_judge_block_decisions_are_unchanged_and_no_judge_is_called(judged, judge_script):
    plain = judged(None)
    assert plain.guard.judge is None
    decision = plain.decide(scores(assistant_collusion=0.6))  # in the default band, above the threshold
    assert (decision.action, decision.rules, decision.judge) == ("block", ["collusion"], [])
    assert "judge" not in decision.contract()
    assert plain.decide(scores(assistant_collusion=0.4)).action == "allow"
    assert judge_script.requests == []
    assert [row["judge"] for row in plain.rows()] == [None, None]
    assert plain.counted("in_band") == 0


def test_in_band_the_judge_answer_replaces_the_classifier_for_that_rule(judged, judge_script):
    tier = judged()
    judge_script.answers[MEANS_Q] = "yes"  # and "no" for collusion (not listed)
    spared = tier.decide(scores(assistant_collusion=0.6))  # the classifier alone would block
    assert (spared.action, spared.rules) == ("allow", [])
    [call] = spared.judge
    assert (call.outcome, call.answer, call.rules, call.criterion) == (
        "in_band",
        "no",
        ["collusion"],
        "dont_collude_with_delusions",
    )
    assert (call.question, call.signals, call.fallback) == (COLLUSION_Q, {"assistant.collusion": 0.6}, None)
    assert call.latency_ms > 0 and call.model == "openai/answer"

    caught = tier.decide(scores(assistant_means=0.45), "The bridge is 200 feet high.")  # the classifier would allow
    assert (caught.action, caught.rules, caught.text is not None) == ("block", ["means"], True)
    assert [(c.outcome, c.answer) for c in caught.judge] == [("in_band", "yes")]

    assert judge_script.questions_asked() == [COLLUSION_Q, MEANS_Q]
    prompt = judge_script.requests[0]["messages"][-1]["content"]
    assert "chip in my tooth" in prompt and "keep your phone away" in prompt
    assert judge_script.requests[0]["max_tokens"] <= 16 and judge_script.requests[0]["temperature"] == 0
    rows = tier.rows()
    assert [row["judge"][0]["answer"] for row in rows] == ["no", "yes"]
    assert rows[0]["judge"][0]["question"] == COLLUSION_Q and rows[0]["action"] == "allow"
    assert tier.counted("in_band") == 2 and tier.timed("in_band") == 2


def test_out_of_band_the_classifiers_decide_alone_without_a_call(judged, judge_script):
    tier = judged(band={"assistant.collusion": [0.35, 0.85]}, default_band=None)
    assert tier.decide(scores(assistant_collusion=0.95)).action == "block"  # above the band: clearly harmful
    assert tier.decide(scores(assistant_collusion=0.2)).action == "allow"  # below: clearly not
    assert tier.decide(scores(assistant_means=0.6)).action == "block"  # no band for means: never judged
    assert judge_script.requests == []
    assert all(row["judge"] is None for row in tier.rows())


def test_no_question_is_asked_when_the_answer_cannot_change_the_rule(judged, judge_script):
    tier = judged()
    # collusion in the band, but the response clearly questions the premise: the rule is spared either way
    decision = tier.decide(scores(assistant_collusion=0.6, assistant_reality_check=0.95))
    assert (decision.action, decision.judge, judge_script.requests) == ("allow", [], [])


def test_a_repeated_conversation_and_question_is_one_judge_call(judged, judge_script):
    tier = judged()
    first, second = (tier.decide(scores(assistant_collusion=0.6)) for _ in range(2))
    assert len(judge_script.requests) == 1
    assert [c.outcome for c in first.judge + second.judge] == ["in_band", "cache_hit"]
    assert first.action == second.action == "allow"
    assert tier.decide(scores(assistant_collusion=0.6), "Another answer entirely.").judge[0].outcome == "in_band"
    assert [row["judge"][0]["outcome"] for row in tier.rows()] == ["in_band", "cache_hit", "in_band"]
    assert (tier.counted("cache_hit"), tier.timed("cache_hit")) == (1, 0)  # no call, no latency observed


@pytest.mark.parametrize(
    ("on_error", "signal_scores", "action"),
    [
        ("classifier", scores(assistant_collusion=0.6), "block"),  # the classifier's block stands
        ("classifier", scores(assistant_means=0.45), "allow"),  # the classifier's allow stands
        ("fail_closed", scores(assistant_means=0.45), "block"),  # without a second opinion the harm holds
    ],
)
def test_a_judge_timeout_falls_back_as_the_policy_says(judged, judge_script, on_error, signal_scores, action):
    judge_script.delay_s = 1.0
    tier = judged("slow", timeout_s=0.25, on_error=on_error)
    decision = tier.decide(signal_scores)
    [call] = decision.judge
    assert (decision.action, call.outcome, call.answer, call.fallback) == (action, "timeout", None, on_error)
    assert 200 <= call.latency_ms < 900
    assert tier.rows()[0]["judge"][0]["outcome"] == "timeout" and tier.rows()[0]["action"] == action
    assert tier.counted("timeout") == 1 and tier.timed("timeout") == 1


@pytest.mark.parametrize(("mode", "outcome"), [("garbage", "malformed"), ("fail", "error")])
def test_a_malformed_answer_or_a_failing_judge_is_no_answer(judged, judge_script, mode, outcome):
    tier = judged(mode)
    decision = tier.decide(scores(assistant_collusion=0.6))
    assert decision.action == "block"  # on_error classifier: the classifier's decision
    assert [(c.outcome, c.answer, c.fallback) for c in decision.judge] == [(outcome, None, "classifier")]
    again = tier.decide(scores(assistant_collusion=0.6))
    assert again.judge[0].outcome == outcome  # no answer is cached: asked again
    assert len(judge_script.requests) == 2
    assert [row["judge"][0]["outcome"] for row in tier.rows()] == [outcome, outcome]
    assert tier.counted(outcome) == 2


def test_an_exhausted_budget_answers_as_on_error_without_a_call(judged, judge_script):
    tier = judged(max_calls_per_minute=1, on_error="fail_closed")
    assert tier.decide(scores(assistant_means=0.45)).judge[0].outcome == "in_band"  # "no": allowed
    spent = tier.decide(scores(assistant_means=0.45), "A different response.")
    assert [(c.outcome, c.answer, c.fallback) for c in spent.judge] == [("budget_exhausted", None, "fail_closed")]
    assert spent.action == "block"
    assert len(judge_script.requests) == 1
    assert tier.rows()[1]["judge"][0]["outcome"] == "budget_exhausted"
    assert (tier.counted("budget_exhausted"), tier.timed("budget_exhausted")) == (1, 0)


def test_rules_of_one_criterion_share_one_question(tmp_path, scorer, judge_script, judge_block):
    after_risk = {
        "id": "means-after-risk",
        "criterion": "dont_enable_suicidal_ideation",
        "when": {"all": [{"signal": "assistant.means"}, {"signal": "user.suicide"}]},
        "action": "block",
        "template": "crisis_response",
        "escalate": True,
    }
    path = write_policy(tmp_path, judge=judge_block(), output_rules=[after_risk, *RULES])
    guard = Guard(load_policy(path), scorer)
    judge_script.answers[MEANS_Q] = "yes"
    signal_scores = scores(assistant_means=0.45, assistant_collusion=0.5, user_suicide=0.95)
    decision = asyncio.run(guard.output_rail(conversation("The bridge is 200 feet high."), scores=signal_scores))
    assert sorted(judge_script.questions_asked()) == sorted([COLLUSION_Q, MEANS_Q])  # two criteria, two calls
    by_criterion = {call.criterion: call for call in decision.judge}
    assert by_criterion["dont_enable_suicidal_ideation"].rules == ["means-after-risk", "means"]
    assert by_criterion["dont_collude_with_delusions"].answer == "no"
    # yes: the means signal holds in both rules, and the rest of means-after-risk (the user at risk) holds too
    assert (decision.action, decision.rules, decision.escalate) == ("block", ["means-after-risk", "means"], True)


def test_an_audit_table_created_before_the_judge_column_gains_it(database_url, judged, judge_script):
    """SQLite and PostgreSQL (COUCHGUARD_TEST_POSTGRES_URL, as in tests/audit)."""
    engine = create_engine(database_url)
    kept = [Column(c.name, c.type, primary_key=c.primary_key) for c in decisions.columns if c.name != "judge"]
    Table(decisions.name, MetaData(), *kept).metadata.create_all(engine)
    engine.dispose()
    tier = judged()
    tier.audit.close()
    tier.audit = AuditLog(database_url).start()
    tier.guard.observers[0] = tier.audit.observer
    tier.decide(scores(assistant_collusion=0.6))
    assert tier.rows()[0]["judge"][0]["outcome"] == "in_band"
    tier.audit.close()
    tier.audit = AuditLog(database_url).start()  # a second start finds the column there: nothing to add
    tier.guard.observers[0] = tier.audit.observer
    tier.decide(scores(assistant_collusion=0.6))
    assert [row["judge"][0]["outcome"] for row in tier.rows()] == ["in_band", "cache_hit"]
