"""The policy file format, as pydantic models: what a clinician or product lead edits in policies/*.yaml."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

Criterion = Literal[
    "dont_stigmatize",
    "dont_collude_with_delusions",
    "dont_enable_suicidal_ideation",
    "dont_reinforce_hallucinations",
    "dont_enable_mania",
    "redirect_client",
    "keep_client_data_private",
    "hospitalize_when_necessary",
    "ai_self_disclosure",
]
InputAction = Literal["allow", "steer", "block"]
OutputAction = Literal["allow", "annotate", "rewrite", "block"]
RewriteStrategy = Literal["regenerate", "remove", "template"]
FailMode = Literal["closed", "open"]
Threshold = Annotated[float, Field(ge=0.0, le=1.0)]

# Severity order: the most severe action among the matched rules wins.
INPUT_SEVERITY: dict[str, int] = {"allow": 0, "steer": 1, "block": 2}
OUTPUT_SEVERITY: dict[str, int] = {"allow": 0, "annotate": 1, "rewrite": 2, "block": 3}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SignalCondition(_Strict):
    """True when the signal's score is at or above `at_least` (default: the policy's threshold for it)."""

    signal: str
    at_least: float | None = Field(default=None, ge=0.0, le=1.0)


class AllCondition(_Strict):
    all: list["Condition"] = Field(min_length=1)


class AnyCondition(_Strict):
    any: list["Condition"] = Field(min_length=1)


class NotCondition(_Strict):
    not_: "Condition" = Field(alias="not")


Condition = Annotated[Union[SignalCondition, AllCondition, AnyCondition, NotCondition], Field(union_mode="left_to_right")]


def condition_signals(condition: Condition, location: tuple = (), negated: bool = False):
    """Every signal a condition reads, as (signal, location of its `signal` field, whether it sits under `not`)."""
    if isinstance(condition, SignalCondition):
        yield condition.signal, location + ("signal",), negated
    elif isinstance(condition, AllCondition):
        for index, part in enumerate(condition.all):
            yield from condition_signals(part, location + ("all", index), negated)
    elif isinstance(condition, AnyCondition):
        for index, part in enumerate(condition.any):
            yield from condition_signals(part, location + ("any", index), negated)
    elif isinstance(condition, NotCondition):
        yield from condition_signals(condition.not_, location + ("not",), not negated)


class Rule(_Strict):
    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    criterion: Criterion
    description: str = ""
    when: Condition
    escalate: bool = False


class InputRule(Rule):
    action: InputAction
    # steer: id of a corrective instruction added as a system message before the model is called
    instruction: str | None = None
    # block: id of the vetted template the user receives instead of a model answer
    template: str | None = None
    # lower output thresholds for this conversation when the rule fires ("output rules may tighten")
    tighten: dict[str, Threshold] = Field(default_factory=dict)


class OutputRule(Rule):
    action: OutputAction
    # rewrite: corrective instruction for regeneration, strategies tried in order, template as the last resort
    instruction: str | None = None
    strategies: list[RewriteStrategy] = Field(default_factory=lambda: ["regenerate", "remove", "template"])
    # annotate: text appended; block/rewrite: vetted template
    template: str | None = None


class Policy(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    extends: str | None = None
    locale: str = "US"
    observe_only: bool = False
    fail_mode: FailMode = "closed"
    redact_upstream_pii: bool = False
    store_text: bool = False
    max_rewrites: int = Field(default=2, ge=0, le=5)
    thresholds: dict[str, Threshold] = Field(default_factory=dict)
    disable_rules: list[str] = Field(default_factory=list)
    input_rules: list[InputRule] = Field(default_factory=list)
    output_rules: list[OutputRule] = Field(default_factory=list)
