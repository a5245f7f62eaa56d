"""Condition kinds are a registry: a new kind is one class with `@condition_kind`, and the loader, the engine, the
`extends` merge and `policy explain` all follow it with no list edited. No model."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest
from pydantic import Field, model_validator

from classifiers.signals import SIGNALS
from guard.cli import main
from guard.policy import PolicyError, evaluate, load_policy
from guard.policy.conditions import (
    CONDITION_KINDS,
    ConditionBase,
    SignalUse,
    condition_kind,
    unregister_condition_kind,
)

USER = [name for name, spec in SIGNALS.items() if spec.side == "user" and spec.kind == "harm"]
U1, U2 = USER[0], USER[1]
HALF = {name: 0.5 for name in SIGNALS}


@pytest.fixture
def between():
    """A kind of the test's own: a score inside [low, high), e.g. the uncertain band where a gentle check-in fits."""

    @condition_kind("between")
    class BetweenCondition(ConditionBase):
        between: str  # the signal, named by the key as `signal` names it
        low: float = Field(ge=0.0, le=1.0)
        high: float = Field(ge=0.0, le=1.0)

        @model_validator(mode="after")
        def _ordered(self) -> BetweenCondition:
            if self.low >= self.high:
                raise ValueError(f"low must be below high, got {self.low} and {self.high}")
            return self

        def holds(self, scores: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
            return self.between in scores and self.low <= scores[self.between] < self.high

        def signals(self, location: tuple[Any, ...] = (), negated: bool = False) -> Iterator[SignalUse]:
            yield self.between, location + ("between",), negated

        def __str__(self) -> str:
            return f"{self.low} <= {self.between} < {self.high}"

    yield BetweenCondition
    unregister_condition_kind("between")


def _policy(tmp_path: Path, when: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(
        f"name: {path.stem}\ninput_rules:\n"
        "  - id: check-in\n"
        "    criterion: dont_enable_suicidal_ideation\n"
        f"    when: {when}\n"
        "    action: steer\n"
        "    instruction: crisis_support\n"
    )
    return path


BAND = f"{{all: [{{between: {U1}, low: 0.3, high: 0.6}}, {{not: {{signal: {U2}}}}}]}}"


def _problems(path: Path) -> list[str]:
    with pytest.raises(PolicyError) as error:
        load_policy(path)
    return [str(p) for p in error.value.problems]


def test_an_unregistered_kind_is_one_error_line_naming_the_registered_keys(tmp_path):
    path = _policy(tmp_path, f"{{between: {U1}, low: 0.3, high: 0.6}}")
    assert "between" not in CONDITION_KINDS
    assert _problems(path) == [
        f"{path}:5: input_rules[0] (rule 'check-in').when: a condition needs exactly one of the keys "
        + ", ".join(repr(k) for k in CONDITION_KINDS)
        + "; found 'between', 'low', 'high'"
    ]


def test_a_registered_kind_is_loaded_evaluated_merged_and_explained(tmp_path, between, capsys):
    path = _policy(tmp_path, BAND)
    policy = load_policy(path)
    [rule] = policy.input_rules
    assert type(rule.when.all[0]) is between

    def fires(score: float, other: float = 0.0) -> bool:
        return evaluate(policy, "input", {U1: score, U2: other}, HALF).action == "steer"

    assert [fires(0.29), fires(0.3), fires(0.59), fires(0.6)] == [False, True, True, False]
    assert not fires(0.4, other=0.9)  # the `not` around the registered signal kind still applies

    # an `extends` chain is merged through a dump and a fresh validation: the new kind survives both
    child = tmp_path / "child.yaml"
    child.write_text(f"name: child\nextends: {path.name}\nthresholds: {{{U2}: 0.8}}\n")
    merged = load_policy(child)
    assert merged.input_rules == policy.input_rules
    assert evaluate(merged, "input", {U1: 0.4, U2: 0.7}, {**HALF, U2: 0.8}).action == "steer"

    assert main(["policy", "explain", str(path)]) == 0
    assert f"  when (0.3 <= {U1} < 0.6 AND NOT {U2} >= threshold)\n" in capsys.readouterr().out


def test_a_registered_kind_brings_its_signals_to_the_loaders_checks(tmp_path, between):
    path = _policy(tmp_path, BAND.replace(f"between: {U1}", f"between: {U1}x"))
    assert _problems(path) == [
        f"{path}:5: input_rules[0] (rule 'check-in').when.all[0].between: unknown signal '{U1}x' (did you mean '{U1}'?)"
    ]


@pytest.mark.parametrize(
    "when, location, message",
    [
        ("{between: SIGNAL, low: 0.3, high: 1.6}", "when.high", "Input should be less than or equal to 1"),
        ("{all: [{between: SIGNAL, low: 0.6, high: 0.3}]}", "when.all[0]", "Value error, low must be below high"),
        ("{between: SIGNAL, low: 0.3}", "when.high", "Field required"),
    ],
)
def test_a_mistake_inside_a_registered_kind_is_one_error_line_at_its_place(tmp_path, between, when, location, message):
    path = _policy(tmp_path, when.replace("SIGNAL", U1))
    found = _problems(path)
    assert len(found) == 1
    assert found[0].startswith(f"{path}:5: input_rules[0] (rule 'check-in').{location}: {message}")


def test_unregistering_restores_the_registry(between):
    assert "between" in CONDITION_KINDS
    unregister_condition_kind("between")
    try:
        assert "between" not in CONDITION_KINDS
        with pytest.raises(ValueError, match="already registered"):
            condition_kind("signal")(between)
    finally:
        CONDITION_KINDS["between"] = between  # the fixture unregisters it again
