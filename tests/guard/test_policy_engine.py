"""The policy engine without a model: conditions, severity, tightening, extends and observe_only, on scores given
by hand. Signal names come from the registry, never from a list kept here."""

from __future__ import annotations

from pathlib import Path

import pytest

from classifiers.signals import SIGNALS
from guard.actions import policy_actions
from guard.policy import PolicyError, effective_thresholds, evaluate, load_policy, tightening
from guard.policy.conditions import CONDITION_KINDS, AllCondition, AnyCondition, NotCondition, SignalCondition
from guard.policy.schema import OutputRule

USER = [name for name, spec in SIGNALS.items() if spec.side == "user" and spec.kind == "harm"]
ASSISTANT = [name for name, spec in SIGNALS.items() if spec.side == "assistant" and spec.kind == "harm"]
U1, U2 = USER[0], USER[1]
A1, A2 = ASSISTANT[0], ASSISTANT[1]
HALF = {name: 0.5 for name in SIGNALS}


def rule(when: dict, action: str = "block", **extra) -> OutputRule:
    return OutputRule.model_validate(
        {
            "id": "r",
            "criterion": "dont_stigmatize",
            "when": when,
            "action": action,
            "template": "safe_fallback",
            **extra,
        }
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- conditions ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "when,scores,expected",
    [
        ({"signal": A1}, {A1: 0.5}, True),  # at the threshold fires
        ({"signal": A1}, {A1: 0.49}, False),
        ({"signal": A1}, {}, False),  # not computed (no response yet): cannot fire
        ({"signal": A1, "at_least": 0.9}, {A1: 0.8}, False),  # its own level, above the threshold
        ({"signal": A1, "at_least": 0.2}, {A1: 0.3}, True),  # and below it
        ({"all": [{"signal": A1}, {"signal": A2}]}, {A1: 0.9, A2: 0.1}, False),
        ({"all": [{"signal": A1}, {"signal": A2}]}, {A1: 0.9, A2: 0.9}, True),
        ({"any": [{"signal": A1}, {"signal": A2}]}, {A1: 0.1, A2: 0.9}, True),
        ({"any": [{"signal": A1}, {"signal": A2}]}, {A1: 0.1, A2: 0.1}, False),
        ({"not": {"signal": A1}}, {A1: 0.1}, True),
        ({"not": {"signal": A1}}, {A1: 0.9}, False),
        (
            {"all": [{"signal": A1}, {"not": {"any": [{"signal": A2}, {"signal": U1}]}}]},
            {A1: 0.9, A2: 0.1, U1: 0.1},
            True,
        ),
    ],
)
def test_conditions_hold(when, scores, expected):
    assert rule(when).when.holds(scores, HALF) is expected


def test_conditions_name_their_signals_with_locations_and_negation():
    when = rule({"all": [{"signal": A1}, {"not": {"any": [{"signal": A2}]}}]}).when
    assert list(when.signals(("when",))) == [
        (A1, ("when", "all", 0, "signal"), False),
        (A2, ("when", "all", 1, "not", "any", 0, "signal"), True),
    ]


def test_conditions_read_aloud():
    when = rule({"all": [{"signal": A1, "at_least": 0.7}, {"not": {"any": [{"signal": A2}, {"signal": U1}]}}]}).when
    assert str(when) == f"({A1} >= 0.7 AND NOT ({A2} >= threshold OR {U1} >= threshold))"


def test_every_condition_kind_is_picked_by_its_key():
    examples = {
        "signal": {"signal": A1},
        "all": {"all": [{"signal": A1}]},
        "any": {"any": [{"signal": A1}]},
        "not": {"not": {"signal": A1}},
    }
    assert set(examples) == set(CONDITION_KINDS)  # a new kind needs an example here
    built = {key: rule(when).when for key, when in examples.items()}
    assert {key: type(c) for key, c in built.items()} == {
        "signal": SignalCondition,
        "all": AllCondition,
        "any": AnyCondition,
        "not": NotCondition,
    }
    for condition in built.values():
        assert [s for s, _, _ in condition.signals()] == [A1]
        assert A1 in str(condition)


def test_a_misspelt_condition_key_is_one_error_line_with_a_suggestion(tmp_path):
    path = write(
        tmp_path,
        "p.yaml",
        "name: p\noutput_rules:\n  - id: r\n    criterion: dont_stigmatize\n"
        f"    when: {{sigal: {A1}}}\n    action: block\n    template: safe_fallback\n",
    )
    with pytest.raises(PolicyError) as error:
        load_policy(path)
    assert [str(p) for p in error.value.problems] == [
        f"{path}:5: output_rules[0] (rule 'r').when: a condition needs exactly one of the keys "
        + ", ".join(repr(k) for k in CONDITION_KINDS)
        + "; found 'sigal' (did you mean 'signal'?)"
    ]


def test_a_nested_condition_error_keeps_its_path(tmp_path):
    path = write(
        tmp_path,
        "p.yaml",
        "name: p\noutput_rules:\n  - id: r\n    criterion: dont_stigmatize\n"
        f"    when: {{all: [{{signal: {A1}, at_least: 2}}]}}\n    action: block\n"
        "    template: safe_fallback\n",
    )
    with pytest.raises(PolicyError) as error:
        load_policy(path)
    assert [str(p) for p in error.value.problems] == [
        f"{path}:5: output_rules[0] (rule 'r').when.all[0].at_least: Input should be less than or equal to 1"
    ]


# -- deciding --------------------------------------------------------------------------------------------------------
def test_the_most_severe_matched_action_wins(tmp_path):
    actions = policy_actions("output")
    rules = "".join(
        f"  - {{id: r{i}, criterion: dont_stigmatize, when: {{signal: {A1}}}, action: {action}, "
        "template: safe_fallback, strategies: [template]}\n"
        for i, action in enumerate(actions)
    )
    policy = load_policy(write(tmp_path, "p.yaml", "name: p\noutput_rules:\n" + rules))
    verdict = evaluate(policy, "output", {A1: 0.9}, HALF)
    assert verdict.action == actions[-1] and len(verdict.matched) == len(actions)
    assert evaluate(policy, "output", {A1: 0.1}, HALF).action == "allow"


def test_the_rule_about_the_users_strongest_signal_gives_the_template(tmp_path):
    # policy order puts the response-only rule and the weaker user signal's rule first; neither gives the template
    plain = [name for name in USER if not SIGNALS[name].crisis]
    belief, voices = plain[0], plain[1]
    rules = "".join(
        f"  - {{id: {rule_id}, criterion: dont_stigmatize, when: {{all: [{{signal: {A1}}}{extra}]}}, "
        "action: rewrite, template: safe_fallback, strategies: [template]}\n"
        for rule_id, extra in (
            ("response", ""),
            ("voices", f", {{signal: {voices}}}"),
            ("belief", f", {{signal: {belief}}}"),
        )
    )
    policy = load_policy(write(tmp_path, "p.yaml", "name: p\noutput_rules:\n" + rules))
    order = [r.id for r in evaluate(policy, "output", {A1: 0.9, belief: 1.0, voices: 0.9}, HALF).rules_with("rewrite")]
    assert order == ["belief", "voices", "response"]
    order = [r.id for r in evaluate(policy, "output", {A1: 0.9, belief: 0.6, voices: 0.9}, HALF).rules_with("rewrite")]
    assert order == ["voices", "belief", "response"]
    order = [r.id for r in evaluate(policy, "output", {A1: 0.9, belief: 0.7, voices: 0.7}, HALF).rules_with("rewrite")]
    assert order == ["voices", "belief", "response"]  # a tie keeps policy order


def test_flagged_and_escalate_follow_thresholds_and_rules(tmp_path):
    policy = load_policy(
        write(
            tmp_path,
            "p.yaml",
            (
                "name: p\ninput_rules:\n"
                f"  - {{id: r, criterion: dont_stigmatize, when: {{signal: {U1}, at_least: 0.9}}, action: allow, "
                "escalate: true}\n"
            ),
        )
    )
    verdict = evaluate(policy, "input", {U1: 0.6, U2: 0.2}, HALF)
    assert verdict.flagged == (U1,) and not verdict.matched and not verdict.escalate
    assert evaluate(policy, "input", {U1: 0.95}, HALF).escalate


def test_input_rules_tighten_output_thresholds_never_loosen(tmp_path):
    policy = load_policy(
        write(
            tmp_path,
            "p.yaml",
            (
                "name: p\ninput_rules:\n"
                f"  - {{id: a, criterion: dont_stigmatize, when: {{signal: {U1}}}, action: allow, tighten: {{{A1}: 0.3}}}}\n"
                f"  - {{id: b, criterion: dont_stigmatize, when: {{signal: {U1}}}, action: allow, tighten: {{{A1}: 0.4, "
                f"{A2}: 0.9}}}}\n"
            ),
        )
    )
    tightened = tightening(evaluate(policy, "input", {U1: 0.9}, HALF))
    assert tightened == {A1: 0.3, A2: 0.9}  # the lowest of the rules that fired
    thresholds = effective_thresholds(policy, HALF, tightened)
    assert thresholds[A1] == 0.3 and thresholds[A2] == 0.5  # 0.9 would raise it: ignored
    assert tightening(evaluate(policy, "input", {U1: 0.1}, HALF)) == {}


# -- extends and observe_only ----------------------------------------------------------------------------------------
def test_extends_overrides_only_what_the_child_names(tmp_path):
    write(
        tmp_path,
        "base.yaml",
        (
            "name: base\nlocale: US\nmax_rewrites: 3\nthresholds: {" + f"{A1}: 0.4, {A2}: 0.6" + "}\noutput_rules:\n"
            f"  - {{id: keep, criterion: dont_stigmatize, when: {{signal: {A1}}}, action: block, template: safe_fallback}}\n"
            f"  - {{id: drop, criterion: dont_stigmatize, when: {{signal: {A2}}}, action: block, template: safe_fallback}}\n"
            f"  - {{id: swap, criterion: dont_stigmatize, when: {{signal: {A2}}}, action: block, template: safe_fallback}}\n"
        ),
    )
    child = load_policy(
        write(
            tmp_path,
            "child.yaml",
            (
                "name: child\nextends: base.yaml\nlocale: GB\nthresholds: {"
                + f"{A2}: 0.2"
                + "}\ndisable_rules: [drop]\n"
                "output_rules:\n"
                f"  - {{id: swap, criterion: dont_stigmatize, when: {{signal: {A1}}}, action: annotate, "
                "template: safe_fallback}\n"
            ),
        )
    )
    assert child.name == "child" and child.locale == "GB" and child.max_rewrites == 3
    assert child.thresholds == {A1: 0.4, A2: 0.2}
    assert [(r.id, r.action) for r in child.output_rules] == [("keep", "block"), ("swap", "annotate")]


def test_observe_only_refuses_rules_that_change_content_even_inherited(tmp_path):
    write(
        tmp_path,
        "base.yaml",
        "name: base\noutput_rules:\n"
        f"  - {{id: b, criterion: dont_stigmatize, when: {{signal: {A1}}}, action: block, template: safe_fallback}}\n",
    )
    with pytest.raises(PolicyError, match="inherited rules change content: b"):
        load_policy(write(tmp_path, "watch.yaml", "name: watch\nextends: base.yaml\nobserve_only: true\n"))
    watching = load_policy(
        write(tmp_path, "ok.yaml", "name: ok\nextends: base.yaml\nobserve_only: true\ndisable_rules: [b]\n")
    )
    assert watching.observe_only and not watching.output_rules
