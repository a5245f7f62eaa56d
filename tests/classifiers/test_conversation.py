import pytest

from classifiers.conversation import ConversationError, clean_text, parse_conversation


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (None, "messages must be a list"),
        ("hello", "messages must be a list"),
        ([], "messages is empty"),
        ([42], r"messages\[0\] must be an object"),
        ([{"content": "hi"}], r"messages\[0\].role is missing"),
        ([{"role": "robot", "content": "hi"}], r"messages\[0\].role 'robot' is unknown"),
        ([{"role": "user"}], r"messages\[0\].content is missing"),
        ([{"role": "user", "content": 7}], r"messages\[0\].content must be a string or a list"),
        ([{"role": "user", "content": {"text": "hi"}}], "got dict"),
        ([{"role": "user", "content": [{"type": "text", "text": 3}]}], r"content\[0\].text must be a string"),
        ([{"role": "user", "content": [5]}], r"content\[0\] must be a text part"),
        ([{"role": "system", "content": "be nice"}], "no user or assistant turn"),
    ],
)
def test_bad_conversations_get_a_clear_error(messages, expected):
    with pytest.raises(ConversationError, match=expected):
        parse_conversation(messages)


def test_content_parts_are_joined_and_non_text_parts_ignored():
    conversation = parse_conversation(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first"},
                    {"type": "image_url", "image_url": {"url": "data:..."}},
                    {"type": "text", "text": "second"},
                ],
            }
        ]
    )
    assert conversation.last.content == "first\nsecond"


@pytest.mark.parametrize(
    "part, expected",
    [
        ({"type": "banana"}, r"\[1\]\.type 'banana' is not a content part type; expected one of 'text'"),
        ("a bare string", r"\[1\] must be a text part like \{'type': 'text', 'text': '...'\}, got str"),
        ({"type": "image_url"}, r"\[1\]: the 'image_url' part needs its 'image_url' field, got null"),
        (
            {"type": "input_audio", "input_audio": 5},
            r"\[1\]: the 'input_audio' part needs its 'input_audio' field, got int",
        ),
    ],
)
def test_a_malformed_content_part_is_a_clear_error(part, expected):
    # forwarded as it is, such a part would be the model provider's refusal, reported as an upstream failure
    with pytest.raises(ConversationError, match=r"messages\[0\]\.content" + expected):
        parse_conversation([{"role": "user", "content": [{"type": "text", "text": "hello"}, part]}])


@pytest.mark.parametrize(
    "message, expected",
    [
        ({"role": "user", "content": "hi", "tool_calls": [{"id": "1"}]}, r"tool_calls belongs to assistant messages"),
        ({"role": "assistant", "tool_calls": 5}, r"tool_calls must be a list of tool call objects"),
        ({"role": "assistant", "content": None, "tool_calls": ["x"]}, r"tool_calls must be a list of tool call"),
        ({"role": "developer", "content": None}, r"content is null; only an assistant message may have no content"),
    ],
)
def test_malformed_tool_calls_and_null_content_are_a_clear_error(message, expected):
    # forwarded as they are, these would be the provider's refusal, reported as an upstream failure
    with pytest.raises(ConversationError, match=r"messages\[1\]\." + expected):
        parse_conversation([{"role": "user", "content": "weather?"}, message])


def test_size_limit_names_the_message():
    big = "a" * 1_000_001
    with pytest.raises(ConversationError, match=r"exceeds 200000 characters at messages\[1\]"):
        parse_conversation([{"role": "user", "content": "hi"}, {"role": "user", "content": big}])
    assert parse_conversation([{"role": "user", "content": big}], max_chars=2_000_000).last.content == big


def test_binary_junk_is_cleaned_not_fatal():
    junk = "ok\x00\x01\x02\ud800 fine\x7f\ttab\nline"
    assert clean_text(junk) == "ok? fine\ttab\nline"
    assert parse_conversation([{"role": "user", "content": junk}]).last.content == "ok? fine\ttab\nline"


def test_assistant_tool_call_without_content_is_accepted():
    conversation = parse_conversation(
        [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        ]
    )
    assert conversation.last.content == ""
    assert conversation.last_user_index == 0
