"""Properties of the policy engine over every shipped policy, on random scores (no model: fast).

Raising a harm score never lowers the action, nor does lowering a protective one; a verdict's action is always one
registered for its rail; tightening never loosens; and the rule that chooses the user's template follows the user's
risk (a user at risk never receives the mania template).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifiers.signals import SIGNALS
from guard.actions import ACTIONS, severity
from guard.policy import effective_thresholds, evaluate, load_policy, tightening
from guard.policy.loader import POLICIES_DIR

POLICY_FILES = sorted(POLICIES_DIR.glob("*.yaml")) + sorted((POLICIES_DIR / "products").glob("*.yaml"))
POLICIES = {path.relative_to(POLICIES_DIR).as_posix(): load_policy(path) for path in POLICY_FILES}
NAMES = sorted(SIGNALS)
HARM = [name for name in NAMES if SIGNALS[name].kind == "harm"]
PROTECTIVE = [name for name in NAMES if SIGNALS[name].kind == "protective"]
CRISIS = [name for name in NAMES if SIGNALS[name].crisis]
RAILS = ("input", "output")

# a few dozen examples per policy: the engine is pure Python, so this runs in a few seconds; derandomized, so a run
# is reproducible and nothing is written to a local example database
FAST = settings(max_examples=30, deadline=None, derandomize=True, database=None)

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
# most signals are near zero on a real conversation, a few high: mostly zeros, so that single rules decide and the
# interesting cases (one rule matched, one signal crossing its threshold) are common
scores_st = st.fixed_dictionaries({name: st.one_of(st.just(0.0), st.just(0.0), st.just(0.0), unit) for name in NAMES})
# the shipped thresholds are chosen per signal; any value in (0, 1) must keep the properties
defaults_st = st.fixed_dictionaries({name: st.floats(min_value=0.01, max_value=0.99) for name in NAMES})


def _rail_scores(rail: str, scores: dict[str, float]) -> dict[str, float]:
    # the input rail sees user signals only (no response yet), as Guard gives it
    return {k: v for k, v in scores.items() if rail == "output" or SIGNALS[k].side == "user"}


def _rank(policy, rail: str, scores: dict[str, float], thresholds: dict[str, float]) -> int:
    return severity(rail, evaluate(policy, rail, _rail_scores(rail, scores), thresholds).action)  # type: ignore[arg-type]


def test_every_shipped_policy_is_covered():
    assert {"mental-health.yaml", "general-assistant.yaml", "research.yaml"} <= set(POLICIES)
    assert any(name.startswith("products/") for name in POLICIES)


@pytest.mark.parametrize("name", list(POLICIES))
@settings(FAST, max_examples=120)
@given(scores=scores_st, defaults=defaults_st, step=st.floats(min_value=0.0, max_value=1.0))
def test_raising_harm_or_lowering_protection_never_lowers_the_action(name, scores, defaults, step):
    policy = POLICIES[name]
    thresholds = effective_thresholds(policy, defaults)
    before = {rail: _rank(policy, rail, scores, thresholds) for rail in RAILS}
    for signal in HARM + PROTECTIVE:  # every signal moved in turn: part of its way to the extreme, and all of it
        current = scores[signal]
        # harm goes up, protection goes down: either way the response (or the user) looks no safer than before
        for fraction in (step, 1.0):
            moved = current + fraction * (1.0 - current) if signal in HARM else current * (1.0 - fraction)
            worse = {**scores, signal: moved}
            for rail in RAILS:
                assert _rank(policy, rail, worse, thresholds) >= before[rail], (rail, signal, moved)


@pytest.mark.parametrize("name", list(POLICIES))
@FAST
@given(scores=scores_st, defaults=defaults_st)
def test_the_action_is_registered_for_its_rail_and_the_most_severe_matched(name, scores, defaults):
    policy = POLICIES[name]
    thresholds = effective_thresholds(policy, defaults)
    for rail in RAILS:
        verdict = evaluate(policy, rail, _rail_scores(rail, scores), thresholds)
        assert (rail, verdict.action) in ACTIONS and ACTIONS[(rail, verdict.action)].in_policies
        assert all(severity(rail, rule.action) <= severity(rail, verdict.action) for rule in verdict.matched)
        assert verdict.matched or verdict.action == "allow"


@pytest.mark.parametrize("name", list(POLICIES))
@FAST
@given(scores=scores_st, defaults=defaults_st)
def test_tightening_never_loosens(name, scores, defaults):
    policy = POLICIES[name]
    plain = effective_thresholds(policy, defaults)
    tightened = tightening(evaluate(policy, "input", _rail_scores("input", scores), plain))
    tight = effective_thresholds(policy, defaults, tightened)
    assert all(tight[signal] <= plain[signal] for signal in plain)
    assert _rank(policy, "output", scores, tight) >= _rank(policy, "output", scores, plain)


@pytest.mark.parametrize("name", list(POLICIES))
@FAST
@given(scores=scores_st, defaults=defaults_st, data=st.data())
def test_the_template_follows_the_users_risk(name, scores, defaults, data):
    policy = POLICIES[name]
    thresholds = effective_thresholds(policy, defaults)
    # a user at risk: at least one crisis signal at or above its threshold
    crisis = data.draw(st.sampled_from(CRISIS), label="crisis signal")
    scores = {**scores, crisis: data.draw(st.floats(min_value=thresholds[crisis], max_value=1.0), label="score")}
    tightened = tightening(evaluate(policy, "input", _rail_scores("input", scores), thresholds))
    verdict = evaluate(policy, "output", scores, effective_thresholds(policy, defaults, tightened))
    chosen = verdict.rules_with(verdict.action)
    if not chosen:
        return
    assert chosen[0].template != "mania_pause"

    def about_the_crisis(rule) -> bool:
        required = {s for s, _, negated in rule.when.signals() if not negated}
        return any(s in verdict.flagged and SIGNALS[s].crisis for s in required)

    # a matched rule about the user's crisis, when there is one, is the one whose template the user receives
    if any(about_the_crisis(rule) for rule in chosen):
        assert about_the_crisis(chosen[0])


def test_policy_files_are_read_from_the_shipped_directory():
    assert all(Path(path).is_file() for path in POLICY_FILES)
