"""Calibrated crisis and harm signals for chat conversations.

The names below load with the module that defines them, when first used: `classifiers.settings` (read by the CLI and
the proxy before anything else, for the offline defaults) must not pull in the scorer and scikit-learn with it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .conversation import Conversation, ConversationError, Message, parse_conversation
    from .scorer import SignalResult, SignalScorer, shared_scorer
    from .signals import SIGNALS, SignalSpec, signals_for

_WHERE = {
    "Conversation": ".conversation",
    "ConversationError": ".conversation",
    "Message": ".conversation",
    "parse_conversation": ".conversation",
    "SignalResult": ".scorer",
    "SignalScorer": ".scorer",
    "shared_scorer": ".scorer",
    "SIGNALS": ".signals",
    "SignalSpec": ".signals",
    "signals_for": ".signals",
}

__all__ = [
    "SIGNALS",
    "Conversation",
    "ConversationError",
    "Message",
    "SignalResult",
    "SignalScorer",
    "SignalSpec",
    "parse_conversation",
    "shared_scorer",
    "signals_for",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_WHERE[name], __name__), name)
