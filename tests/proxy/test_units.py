"""Pieces of the proxy that need no model: config errors, sentence windows, keys, offline presidio helpers."""

from __future__ import annotations

import hashlib
import socket

import pytest

from classifiers.encoder import sentence_spans
from guard.proxy.config import ConfigError, parse_config
from guard.proxy.products import _key_matches
from guard.proxy.streaming import last_boundary, remainder


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
