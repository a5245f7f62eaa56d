"""Pieces of the proxy that need no model: config errors, sentence windows, keys, offline presidio helpers."""

from __future__ import annotations

import hashlib
import socket

import pytest

from classifiers.encoder import sentence_spans
from guard.proxy.config import ConfigError, StreamConfig, parse_config
from guard.proxy.products import _key_matches
from guard.proxy.streaming import last_boundary, next_window, remainder


def test_config_errors_keep_their_location():
    with pytest.raises(ConfigError) as info:
        parse_config(
            {"products": {"clinic": {"thresholds": {"user.suicid": 0.2}, "keyz": []}}, "max_body_bytes": 0},
            "serve.yaml",
        )
    message = str(info.value)
    assert "serve.yaml: max_body_bytes: Input should be greater than 0" in message
    assert "serve.yaml: products.clinic.thresholds: Value error, unknown signal 'user.suicid'" in message
    assert "serve.yaml: products.clinic.keyz: Extra inputs are not permitted" in message


@pytest.mark.parametrize(
    "text, start, expected",
    [
        ("Hello there. How are", 0, 12),
        ("Hello there.", 0, None),  # the end of the buffer is not a boundary: more may follow ("3.5")
        ("Hello there. ", 0, 12),  # the boundary has arrived
        ("It costs 3.5 dollars", 0, None),  # a decimal point is not a sentence end
        ("One! Two? Three", 0, 9),
        ("line one\nline", 0, 8),
        ("A. B. C", 3, 5),
        ("A. B. C", 5, None),  # nothing complete beyond what was sent
    ],
)
def test_sentence_boundaries(text, start, expected):
    assert last_boundary(text, start) == expected


@pytest.mark.parametrize(
    "text",
    ["Hello there. How are", "One! Two? Three", "line one\n\nline two. And", 'He said "stop." Then he left. Fine'],
)
def test_windows_end_where_the_classifiers_split_sentences(text):
    cut = last_boundary(text, 0)
    spans = sentence_spans(text)
    assert cut == spans[-2][1]


@pytest.mark.parametrize(
    "text, sent, growth, expected",
    [
        ("First one. Second", 0, 2.0, 10),  # the first window is one sentence whatever the growth
        ("First one. Second one. Third", 10, 1.0, 22),  # growth 1: every complete sentence that arrives
        ("First one. Second one. Third", 10, 2.0, 22),  # 12 new characters >= 10 released: a window
        ("First one. Second. Third", 10, 2.0, None),  # 8 new characters < 10 released: wait for more
        ("First one. Second. Third", 10, 1.5, 18),
        ("First one. Second one", 10, 1.0, None),  # nothing complete beyond what was sent
    ],
)
def test_next_window_grows_with_what_was_sent(text, sent, growth, expected):
    assert next_window(text, sent, StreamConfig(window_growth=growth)) == expected


def test_min_window_chars_still_holds_under_growth():
    assert next_window("A. B. C", 0, StreamConfig(min_window_chars=4, window_growth=2.0)) == 5
    assert next_window("A. B. C", 0, StreamConfig(min_window_chars=6, window_growth=2.0)) is None


@pytest.mark.parametrize("growth", [1.5, 2.0, 3.0])
def test_growing_windows_bound_the_text_a_stream_checks(growth):
    """Sentences arriving one at a time: every check scores the response so far, so what a stream's checks read in
    all is the sum of the windows' ends; growing windows keep it within growth / (growth - 1) of the answer, where a
    window per sentence reads the answer once per sentence."""
    answer = "".join(f"Sentence number {i} says {'something ' * (i % 4)}useful. " for i in range(40))
    ends = [end + 1 for _, end in sentence_spans(answer)]  # each sentence arrives with the space after it

    def checked(windows: StreamConfig) -> list[int]:
        sent, cuts = 0, []
        for end in ends:
            cut = next_window(answer[:end], sent, windows)
            if cut is not None:
                cuts.append(cut)
                sent = cut
        return cuts

    per_sentence, growing = checked(StreamConfig(window_growth=1.0)), checked(StreamConfig(window_growth=growth))
    assert len(per_sentence) == len(ends)  # a check per sentence
    assert growing[0] == per_sentence[0]  # the first checked text is not delayed
    assert all(b >= growth * a for a, b in zip(growing, growing[1:]))
    assert sum(growing) <= growth / (growth - 1) * len(answer)
    assert sum(per_sentence) > 10 * len(answer)


@pytest.mark.parametrize(
    "text, sent, expected",
    [
        ("A. B. C.", "A. ", "B. C."),  # allow: the rest of the response
        ("A. B.\n\nResources.", "A.", " B.\n\nResources."),  # annotate: the rest, then the note
        ("Template.", "A.", "\n\nTemplate."),  # rewrite after released text: a new paragraph
        ("Template.", "", "Template."),
    ],
)
def test_remainder(text, sent, expected):
    assert remainder(text, sent) == expected


def test_keys_plain_and_hashed():
    assert _key_matches("k1", "k1") and not _key_matches("k2", "k1")
    assert _key_matches("k1", "sha256:" + hashlib.sha256(b"k1").hexdigest())
    assert not _key_matches("k2", "sha256:" + hashlib.sha256(b"k1").hexdigest())


def test_tldextract_never_reaches_the_network(monkeypatch):
    from guard.audit.offline import configure_tldextract

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    configure_tldextract()
    import tldextract

    assert tldextract.extract("someone@mail.example.co.uk".split("@")[1]).suffix == "co.uk"
