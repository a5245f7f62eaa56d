"""What a failure turns into: under fail-closed a vetted safe response, never an unchecked partial; under fail-open
the failure is surfaced (upstream) or the unchecked text is delivered (classifiers) and marked so. Either way the
event is audited and counted through the guard's observers, and never recorded as `allow`."""

from __future__ import annotations

from typing import Any

from ..decision import Decision
from ..pipeline import Guard
from ..resources import render_template

CRISIS_SIGNALS = ("user.suicide", "user.self_harm")

# event kinds, as audited and counted
UPSTREAM_EVENTS = {"timeout": "upstream_timeout", "unavailable": "upstream_unavailable", "cut": "stream_cut",
                   "rejected": "upstream_rejected"}
CLASSIFIER_ERROR = "classifier_error"


def safe_template(input_decision: Decision | None, locale: str | None) -> str:
    """The crisis template on a crisis path (flagged by the input rail), the general fallback otherwise."""
    crisis = input_decision is not None and any(s in input_decision.flagged for s in CRISIS_SIGNALS)
    return render_template("crisis_response" if crisis else "safe_fallback", locale)


def failure_decision(guard: Guard, rail: str, event: str, input_decision: Decision | None, *,
                     text: str | None, unchecked: bool, locale: str | None) -> Decision:
    """The decision recorded for a failure. fail-closed: `block` with the safe text; fail-open: `unchecked` when
    the model is called or its text delivered without a check, else `error` (the failure is surfaced)."""
    if guard.policy.fail_mode == "closed":
        action, rules, text = "block", ["fail-closed"], safe_template(input_decision, locale)
    else:
        action, rules = ("unchecked" if unchecked else "error"), ["fail-open"]
    earlier = input_decision
    return Decision(
        rail=rail, action=action, rules=(earlier.rules if earlier else []) + rules,
        flagged=earlier.flagged if earlier else [], signals=earlier.signals if earlier else {},
        escalate=bool(earlier and earlier.escalate), text=text, strategy=f"failure:{event}",
    )


def notify(guard: Guard, conversation, decision: Decision, context: dict[str, Any]) -> None:
    """Hand a decision the pipeline did not make (a failure) to the same observers as every rail decision."""
    for observer in guard.observers:
        observer(conversation, decision, context)
