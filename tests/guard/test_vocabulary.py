"""The action vocabulary is the one source: a new action is one registration, and the schema, the severity order,
the loader's needs, the decision type, the proxy's delivered test and the bench's counts all follow it. No model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from classifiers.signals import SIGNALS
from guard.actions import ACTIONS, Outcome, delivers, policy_actions, register_action, unregister_action, withheld
from guard.bench.counting import Tally
from guard.decision import Decision
from guard.policy import PolicyError, evaluate, load_policy

HARM = next(name for name, spec in SIGNALS.items() if spec.side == "assistant" and spec.kind == "harm")


@pytest.fixture
def hold():
    """An output action of a test's own: withholds the response, between annotate and rewrite, needs a template."""

    @register_action("output", "hold", severity=1.5, delivers=False, needs=("template",))
    def build(conversation, verdict, locale):
        return Outcome(text="held for review")

    yield build
    unregister_action("output", "hold")


def _policy(tmp_path, action: str, extra: str = ", template: safe_fallback"):
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\noutput_rules:\n"
        f"  - {{id: r, criterion: dont_stigmatize, when: {{signal: {HARM}}}, action: {action}{extra}}}\n"
        f"  - {{id: n, criterion: dont_stigmatize, when: {{signal: {HARM}}}, action: annotate, template: safe_fallback}}\n"
    )
    return path


def test_an_unregistered_action_is_refused_with_the_known_ones(tmp_path):
    with pytest.raises(PolicyError) as error:
        load_policy(_policy(tmp_path, "hold"))
    assert [p.message for p in error.value.problems] == [
        "Input should be "
        + ", ".join(repr(a) for a in policy_actions("output")[:-1])
        + f" or {policy_actions('output')[-1]!r}"
    ]


def test_a_registered_action_is_validated_ranked_and_counted(tmp_path, hold):
    policy = load_policy(_policy(tmp_path, "hold"))
    assert "hold" in policy_actions("output")
    verdict = evaluate(policy, "output", {HARM: 0.99}, {HARM: 0.5})
    assert verdict.action == "hold"  # more severe than annotate, the other rule that matched
    assert Decision(rail="output", action="hold").action == "hold"
    assert withheld("hold") and not delivers("hold")
    tally = Tally()
    tally.add(appropriate=False, action="hold")
    tally.add(appropriate=True, action="hold")
    assert (tally.caught, tally.false_blocks) == (1, 1)


def test_a_registered_action_brings_its_needs_to_the_loader(tmp_path, hold):
    with pytest.raises(PolicyError) as error:
        load_policy(_policy(tmp_path, "hold", extra=""))
    assert [p.message for p in error.value.problems] == [
        "action 'hold' needs a 'template' (what the user or the model receives)"
    ]


def test_decisions_carry_registered_actions_only():
    assert Decision(rail="output", action="unchecked").action == "unchecked"
    assert Decision(rail="input", action="error").action == "error"
    with pytest.raises(ValidationError, match="not registered on the input rail"):
        Decision(rail="input", action="annotate")


@pytest.mark.parametrize("rail,name", sorted(ACTIONS))
def test_every_registered_action_is_consistent(rail, name):
    spec = ACTIONS[(rail, name)]
    assert spec.build is not None
    assert delivers(name, rail) == spec.delivers == (not withheld(name, rail))
    if spec.in_policies:
        assert name in policy_actions(rail)
    else:  # failure outcomes: never chosen by a rule
        assert name not in policy_actions(rail)
