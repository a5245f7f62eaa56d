"""The conversation as the classifiers read it: validated OpenAI-style messages.

Everything that enters couchguard (proxy requests, `check` and `classify` lines, library calls) is turned into a
`Conversation` here, so that bad input fails in one place with one kind of error.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

Role = Literal["system", "developer", "user", "assistant", "tool", "function"]
KNOWN_ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool", "function")

# OpenAI's content part types and the field each carries. Only text is scored; the others are forwarded to the model
# as they are, so they must at least have their field: a provider refuses a part it cannot read, and through litellm
# that refusal is an upstream failure rather than the client's error.
CONTENT_PARTS: dict[str, str] = {
    "text": "text",
    "image_url": "image_url",
    "input_audio": "input_audio",
    "file": "file",
    "refusal": "refusal",
}

# A 1,500-word response is about 9,000 characters; the default leaves ample room while keeping the work for one
# conversation bounded (scoring time grows linearly with length).
DEFAULT_MAX_CHARS = 200_000


class ConversationError(ValueError):
    """The input is not a conversation couchguard can read. The message says what is wrong and where."""


class Message(BaseModel):
    """One chat turn with its content reduced to plain text."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str


class Conversation(BaseModel):
    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...]

    @property
    def last(self) -> Message:
        return self.messages[-1]

    def user_turns(self, upto: int | None = None) -> list[str]:
        """Texts of the user turns among messages[:upto]."""
        window = self.messages if upto is None else self.messages[:upto]
        return [m.content for m in window if m.role == "user"]

    @property
    def last_user_index(self) -> int | None:
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role == "user":
                return index
        return None


def clean_text(text: str) -> str:
    """Drop control characters and unpaired surrogates so any string can be tokenised; keep newlines and tabs."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs", "Co", "Cn"))


def _content_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return clean_text(content)
    if isinstance(content, list):
        parts = []
        for index, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise ConversationError(f"{where}.content[{index}].text must be a string, got {_kind(text)}")
                parts.append(text)
            elif isinstance(part, dict) and isinstance(part.get("type"), str):
                # images, audio and files carry no text for the classifiers
                _check_part(part, f"{where}.content[{index}]")
            else:
                raise ConversationError(
                    f"{where}.content[{index}] must be a text part like {{'type': 'text', 'text': '...'}}, "
                    f"got {_kind(part)}"
                )
        return clean_text("\n".join(parts))
    raise ConversationError(f"{where}.content must be a string or a list of content parts, got {_kind(content)}")


def _check_part(part: dict, where: str) -> None:
    kind = part["type"]
    field = CONTENT_PARTS.get(kind)
    if field is None:
        known = ", ".join(repr(k) for k in CONTENT_PARTS)
        raise ConversationError(f"{where}.type {kind!r} is not a content part type; expected one of {known}")
    if not isinstance(part.get(field), (str, dict)):
        raise ConversationError(f"{where}: the {kind!r} part needs its {field!r} field, got {_kind(part.get(field))}")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def parse_conversation(messages: Any, *, max_chars: int = DEFAULT_MAX_CHARS) -> Conversation:
    """Validate raw OpenAI-style messages and return a `Conversation`, or raise `ConversationError`."""
    if not isinstance(messages, list):
        raise ConversationError(f"messages must be a list of message objects, got {_kind(messages)}")
    if not messages:
        raise ConversationError("messages is empty: at least one message is needed")
    parsed: list[Message] = []
    total = 0
    for index, raw in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(raw, dict):
            raise ConversationError(f"{where} must be an object with 'role' and 'content', got {_kind(raw)}")
        role = raw.get("role")
        if role is None:
            raise ConversationError(f"{where}.role is missing")
        if role not in KNOWN_ROLES:
            raise ConversationError(f"{where}.role {role!r} is unknown; expected one of {', '.join(KNOWN_ROLES)}")
        tool_calls = raw.get("tool_calls")
        if tool_calls is not None:
            # forwarded to the model as they are: malformed ones would be the provider's refusal, not the client's error
            if role != "assistant":
                raise ConversationError(f"{where}.tool_calls belongs to assistant messages, not to a {role} message")
            if not isinstance(tool_calls, list) or not all(isinstance(call, dict) for call in tool_calls):
                raise ConversationError(f"{where}.tool_calls must be a list of tool call objects")
        if "content" not in raw and not tool_calls:
            raise ConversationError(f"{where}.content is missing")
        if raw.get("content") is None and role != "assistant":
            # OpenAI lets only an assistant turn (one that calls tools) go without content
            raise ConversationError(f"{where}.content is null; only an assistant message may have no content")
        text = _content_text(raw.get("content"), where)
        total += len(text)
        if total > max_chars:
            raise ConversationError(
                f"conversation text exceeds {max_chars} characters at {where}; split it or raise the limit"
            )
        try:
            parsed.append(Message(role=role, content=text))
        except ValidationError as exc:  # pragma: no cover - role and content are checked above
            raise ConversationError(f"{where}: {exc.errors()[0]['msg']}") from exc
    conversation = Conversation(messages=tuple(parsed))
    if conversation.last_user_index is None and conversation.last.role != "assistant":
        raise ConversationError("messages hold no user or assistant turn to check")
    return conversation
