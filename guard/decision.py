"""The result of a rail, as every surface (library, CLI, proxy, bench, audit) sees it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .actions import ACTIONS, action_names

Rail = Literal["input", "output"]


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
        }
