"""The policy file format, as pydantic models: what a clinician or product lead edits in policies/*.yaml."""

from __future__ import annotations

from typing import Annotated, Callable, Iterator, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from ..actions import policy_actions
from ..rewriting import REWRITE_STRATEGIES
from .conditions import (
    AllCondition,
    AnyCondition,
    Condition,
    ConditionBase,
    NotCondition,
    SignalCondition,
    SignalUse,
)

__all__ = [
    "AllCondition",
    "AnyCondition",
    "Condition",
    "ConditionBase",
    "InputRule",
    "NotCondition",
    "OutputRule",
    "Policy",
    "SignalCondition",
    "condition_signals",
]

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
FailMode = Literal["closed", "open"]
Threshold = Annotated[float, Field(ge=0.0, le=1.0)]


def _registered(names: Callable[[], list[str]]) -> Callable[[str], str]:
    """A check against a registry read at validation time, so that an action or strategy registered before a policy
    is loaded is valid in it; the message is pydantic's own for a literal."""

    def check(value: str) -> str:
        known = names()
        if value not in known:
            expected = " or ".join(
                [", ".join(repr(n) for n in known[:-1]), repr(known[-1])]
                if len(known) > 1
                else [repr(n) for n in known]
            )
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return value

    return check


InputAction = Annotated[str, AfterValidator(_registered(lambda: policy_actions("input")))]
OutputAction = Annotated[str, AfterValidator(_registered(lambda: policy_actions("output")))]
RewriteStrategy = Annotated[str, AfterValidator(_registered(lambda: list(REWRITE_STRATEGIES)))]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def condition_signals(condition: Condition, location: tuple = (), negated: bool = False) -> Iterator[SignalUse]:
    """Every signal a condition reads, as (signal, location of its `signal` field, whether it sits under `not`)."""
    return condition.signals(location, negated)


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
    strategies: list[RewriteStrategy] = Field(default_factory=lambda: list(REWRITE_STRATEGIES))
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
