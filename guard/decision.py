"""The result of a rail, as every surface (library, CLI, proxy, bench, audit) sees it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .actions import ACTIONS, action_names

Rail = Literal["input", "output"]
# in_band: the judge was asked and answered; cache_hit: the same question about the same conversation was answered
# before; the others left the rule to the policy's judge.on_error
JudgeOutcome = Literal["in_band", "cache_hit", "timeout", "malformed", "error", "budget_exhausted"]


class JudgeCall(BaseModel):
    """One question put to the LLM judge tier (docs/judge.md) about the response a decision is for."""

    model_config = ConfigDict(frozen=True)

    criterion: str
    question: str
    # the output rules the answer decided, and their signals whose scores fell in the judge band
    rules: list[str]
    signals: dict[str, float]
    outcome: JudgeOutcome
    # "yes": the harm holds (the rules' action applies); "no": it does not; None: no usable answer
    answer: Literal["yes", "no"] | None = None
    latency_ms: float = 0.0
    model: str = ""
    # what the rules got when there was no answer: the classifiers' decision, or fired (fail_closed)
    fallback: Literal["classifier", "fail_closed"] | None = None
    # what was judged: the whole response, or the text of a stream so far before a window was released
    scope: Literal["response", "window"] = "response"


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)

    rail: Rail
    # an action registered for the rail (guard/actions.py), the failure outcomes `unchecked` and `error` included
    action: str
    rules: list[str] = Field(default_factory=list)
    criteria: list[str] = Field(default_factory=list)
    flagged: list[str] = Field(default_factory=list)
    signals: dict[str, float] = Field(default_factory=dict)
    escalate: bool = False
    # what the user receives; None when the model is simply called (input allow/steer)
    text: str | None = None
    # input steer: the messages sent upstream instead of the original ones
    upstream_messages: list[dict[str, Any]] | None = None
    # output thresholds lowered for this conversation by input rules that fired
    tightened: dict[str, float] = Field(default_factory=dict)
    # rewrite: the strategy that produced `text`, and what was tried before it
    strategy: str | None = None
    attempts: list[str] = Field(default_factory=list)
    # output rail: what the LLM judge tier was asked, when a rule's signal scored in its band (empty: not asked)
    judge: list[JudgeCall] = Field(default_factory=list)

    @model_validator(mode="after")
    def _registered_action(self) -> "Decision":
        if (self.rail, self.action) not in ACTIONS:
            known = [name for rail, name in ACTIONS if rail == self.rail]
            raise ValueError(
                f"action {self.action!r} is not registered on the {self.rail} rail; known: "
                f"{', '.join(known)} (all rails: {', '.join(action_names())})"
            )
        return self

    def contract(self) -> dict[str, Any]:
        """The `couchguard check` line shape (docs/architecture.md, "CLI contracts"), without the id."""
        return {
            "rail": self.rail,
            "action": self.action,
            "rules": self.rules,
            "flagged": self.flagged,
            "signals": {name: round(score, 4) for name, score in self.signals.items()},
            "escalate": self.escalate,
            "text": self.text,
            # only when the judge tier was asked, so that lines without it keep the documented shape
            **({"judge": [call.model_dump() for call in self.judge]} if self.judge else {}),
        }
