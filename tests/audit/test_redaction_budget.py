"""Redaction within a time and length budget: pathological and huge messages finish, raw text is never stored,
and an entity on a window's edge is still found. Speed itself is measured by benchmarks/redaction.py; the only
clock here is a generous sanity cap."""

from __future__ import annotations

import re
import time

import pytest

from guard.audit.budget import RedactionBudget, windows

SANITY_CAP_S = 30
PII = "Call me on 07700 900123 or write to 12 rue de la Paix, 75002 Paris."


@pytest.mark.parametrize(
    "text",
    ["." * 200_000, ("a." * 100_000), ("-" * 200_000), ("x " * 100_000), "." * 8_000, "https://" + "a." * 50_000],
)
def test_pathological_text_finishes_within_bounds(redactor, text):
    began = time.monotonic()
    out = redactor.redact(text)
    assert time.monotonic() - began < SANITY_CAP_S
    budget = RedactionBudget()
    assert len(out) <= budget.max_chars + 200


def test_a_200k_message_is_bounded_and_holds_no_raw_pii(redactor):
    text = " ".join([PII] * 3000)[:200_000]
    out = redactor.redact(text)
    # at most max_chars of input are analysed; placeholders such as <PHONE_NUMBER> may be longer than what they hide
    assert "[redaction budget exceeded:" in out and len(out) < 2 * RedactionBudget().max_chars
    match = re.search(r"\[redaction budget exceeded: (\d+) chars withheld\]$", out)
    assert match and 180_000 <= int(match.group(1)) < 200_000
    for value in ("07700 900123", "rue de la Paix", "75002"):
        assert value not in out
    assert "<PHONE_NUMBER>" in out


def test_a_spent_budget_withholds_everything(redactor):
    everything = f"[redaction budget exceeded: {len(PII)} chars withheld]"
    assert redactor.redact(PII, RedactionBudget(max_seconds=0)) == everything
    assert redactor.redact(PII, RedactionBudget(max_chars=0)) == everything


@pytest.mark.parametrize("offset", range(-14, 2))
def test_an_entity_on_a_window_edge_is_redacted_whole(redactor, offset):
    budget = RedactionBudget(window_chars=400, overlap_chars=60)
    filler = "x" * (400 + offset)  # one long word: the window cannot end at whitespace before the number
    text = f"{filler} +44 7700 900123 and more words after it."
    out = redactor.redact(text, budget)
    assert "900123" not in out and "7700" not in out


def test_windows_cover_the_text_with_overlaps():
    budget = RedactionBudget(window_chars=500, overlap_chars=50, max_chars=10_000)
    text = ("word " * 700)[:3_333]
    spans = list(windows(text, budget))
    assert spans[0][0] == 0 and spans[-1][1] == len(text) and spans[-1][2] == len(text)
    for (start, end, safe), (next_start, _, _) in zip(spans, spans[1:]):
        assert end - start <= 500 and next_start == end - 50 and safe == next_start


def test_windows_stop_at_the_length_budget_with_an_overlap():
    budget = RedactionBudget(window_chars=500, overlap_chars=50, max_chars=1_000)
    spans = list(windows("y" * 5_000, budget))
    assert spans[-1][1] == 1_000 and spans[-1][2] == 950


def test_a_budget_whose_windows_would_barely_advance_is_refused():
    with pytest.raises(ValueError, match="overlap_chars"):
        RedactionBudget(window_chars=300, overlap_chars=200)
