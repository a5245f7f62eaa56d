"""Calibrated crisis and harm signals for chat conversations."""

from .conversation import Conversation, ConversationError, Message, parse_conversation
from .scorer import SignalResult, SignalScorer, shared_scorer
from .signals import SIGNALS, SignalSpec, signals_for

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
