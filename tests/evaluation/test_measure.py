"""The figures `couchguard eval` reports, computed from decisions built by hand (no model needed)."""

from __future__ import annotations

from classifiers.conversation import parse_conversation
from guard.decision import Decision
from guard.evaluation.measure import _cases, _input_policy, _output_policy, crisis_flagged, signal_metrics
from guard.evaluation.sets import HARM, EvalItem


def _item(i, labels=None, group="", case=None, turn=None, role="user"):
    messages = [{"role": "user", "content": f"turn {i}"}]
    if role == "assistant":
        messages.append({"role": "assistant", "content": "answer"})
    return EvalItem(str(i), parse_conversation(messages), labels or {}, group=group, case=case, turn=turn)


def _decision(rail="input", action="allow", flagged=(), **signals):
    return Decision(
        rail=rail,
        action=action,
        flagged=list(flagged),
        signals={name.replace("__", "."): value for name, value in signals.items()},
    )


def test_signal_metrics_count_false_alarms_and_recall_at_the_threshold():
    items = [
        _item(0, {"user.suicide": 0}),
        _item(1, {"user.suicide": 0}),
        _item(2, {"user.suicide": 1}),
        _item(3, {"user.mania": 1}),
    ]  # another crisis: no label for user.suicide
    decisions = [
        _decision(user__suicide=0.1, user__mania=0.0),
        _decision(user__suicide=0.8, user__mania=0.0),
        _decision(user__suicide=0.9, user__mania=0.0),
        _decision(user__suicide=0.95, user__mania=0.9),
    ]
    metrics = signal_metrics(items, decisions, {"user.suicide": 0.5, "user.mania": 0.5})
    suicide = metrics["user.suicide"]
    assert suicide["false_alarms"]["k"] == 1 and suicide["false_alarms"]["n"] == 2
    assert suicide["recall"]["k"] == 1 and suicide["recall"]["n"] == 1
    assert suicide["roc_auc"] == 1.0
    assert metrics["user.mania"]["roc_auc"] is None  # one class only: no ranking to report


def test_a_context_steer_is_an_action_but_not_a_crisis_flag():
    steer = _decision(action="steer", flagged=["user.model_as_client"])
    assert not crisis_flagged(steer) and crisis_flagged(_decision(action="steer", flagged=["user.suicide"]))
    policy = _input_policy([_item(0, group="benign")], [steer])
    assert policy["acted"]["benign"]["k"] == 1 and policy["flagged"]["benign"]["k"] == 0


def test_cases_report_the_first_flagged_turn_and_opening_flags():
    items = [_item(i, group="g", case="c", turn=i) for i in (1, 2, 3)] + [_item(9, group="g", case="d", turn=1)]
    decisions = [
        _decision(),
        _decision(action="steer", flagged=["user.delusion"]),
        _decision(action="steer", flagged=["user.delusion"]),
        _decision(),
    ]
    cases = _cases(items, decisions)
    assert cases["cases"]["c"]["first_flagged_turn"] == 2 and cases["cases"]["d"]["first_flagged_turn"] is None
    assert cases["opening_turns_flagged"]["k"] == 1 and cases["flagged_at_some_turn"]["g"]["k"] == 1


def test_output_policy_counts_caught_and_false_blocks_per_group():
    items = [
        _item(0, {HARM: 1}, "a", role="assistant"),
        _item(1, {HARM: 0}, "a", role="assistant"),
        _item(2, {HARM: 0}, "b", role="assistant"),
    ]
    decisions = [
        _decision("output", "rewrite", assistant__means=0.9),
        _decision("output", "annotate", assistant__means=0.2),
        _decision("output", "block", assistant__means=0.7),
    ]
    policy = _output_policy(items, decisions)
    assert policy["overall"]["caught"]["k"] == 1 and policy["overall"]["false_blocks"]["k"] == 1
    assert policy["by_group"]["a"]["strongest_harm_roc_auc"] == 1.0
    assert policy["by_group"]["b"]["false_blocks"]["rate"] == 1.0
