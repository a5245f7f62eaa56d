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
    "JudgeConfig",
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


JudgeOnError = Literal["classifier", "fail_closed"]
DEFAULT_JUDGE_BAND = (0.35, 0.85)


def _ordered_band(band: tuple[float, float]) -> tuple[float, float]:
    if band[0] >= band[1]:
        raise ValueError(f"a band is [low, high] with low < high, got [{band[0]}, {band[1]}]")
    return band


# [low, high]: a classifier score in it (inclusive) is uncertain and goes to the judge
Band = Annotated[tuple[Threshold, Threshold], AfterValidator(_ordered_band)]


class JudgeConfig(_Strict):
    """The optional LLM judge tier (docs/judge.md): asked only about output rules whose harm signal scored in its band.

    Server-side settings only: where and how the judge is called never comes from a client request.
    """

    # litellm model string ("openai/gpt-4o-mini", "ollama/llama3", ...)
    model: str = Field(min_length=1)
    api_base: str | None = None
    # name of the environment variable holding the judge's key, when it is not the provider's usual one
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    # per assistant signal; signals not listed use default_band (None: only the listed signals are judged)
    band: dict[str, Band] = Field(default_factory=dict)
    default_band: Band | None = DEFAULT_JUDGE_BAND
    timeout_s: float = Field(default=5.0, gt=0, le=60)
    # no answer (timeout, malformed, error, budget exhausted): keep the classifiers' decision, or let the rule fire
    on_error: JudgeOnError = "classifier"
    # answers kept per (conversation, question); 0 turns the cache off
    cache_size: int = Field(default=1024, ge=0, le=1_000_000)
    # judge calls at most per rolling minute, across all conversations of this policy
    max_calls_per_minute: int = Field(default=60, ge=1, le=100_000)

    def band_for(self, signal: str) -> tuple[float, float] | None:
        return self.band.get(signal, self.default_band)


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
    # the optional LLM judge tier for the classifiers' uncertain band (None: classifiers decide alone)
    judge: JudgeConfig | None = None
