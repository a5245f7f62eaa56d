"""Conversations back to OpenAI-style message dicts: the one place the guard turns a `Conversation` into what a model
or a hash reads."""

from __future__ import annotations

from classifiers.conversation import Conversation, parse_conversation


def as_dicts(conversation: Conversation) -> list[dict]:
    """Plain `{"role", "content"}` dicts, text only (tool calls and content parts were reduced when parsing)."""
    return [{"role": m.role, "content": m.content} for m in conversation.messages]


def with_response(conversation: Conversation, text: str) -> Conversation:
    """The conversation with `text` as the assistant's answer to it."""
    return parse_conversation(as_dicts(conversation) + [{"role": "assistant", "content": text}])


def replacing_response(conversation: Conversation, text: str) -> Conversation:
    """The conversation with its last message (the response under review) replaced by `text`."""
    return parse_conversation(as_dicts(conversation)[:-1] + [{"role": "assistant", "content": text}])
