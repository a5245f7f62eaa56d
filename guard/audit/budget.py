"""How much time and text one message may spend in PII redaction, and the windows it is analysed in.

Redaction cost grows with the text, and the audit must neither fall behind nor ever store raw text. So a message is
analysed in bounded windows, in order, until its length or time budget runs out; what was not analysed is replaced
by a placeholder that says how much was withheld. Windows overlap, so an entity cut by one window's end is whole in
the next one. A window cannot be interrupted, so its time is bounded by its size: every recognizer runs in time
linear in the text (see recognizers/url.py for the one that did not).
"""

from __future__ import annotations

from typing import Iterator

from pydantic import BaseModel, ConfigDict, Field, model_validator

PLACEHOLDER = "[redaction budget exceeded: {n} chars withheld]"


class RedactionBudget(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_chars: int = Field(default=20_000, ge=0, description="characters of one message analysed at most")
    # checked between windows; one window of linear-time recognizers takes ~0.15 s on a 2-core CPU, so a message
    # is done in under 2 s
    max_seconds: float = Field(default=1.2, ge=0, description="analysis time for one message")
    window_chars: int = Field(default=2_000, ge=200, description="characters analysed at once")
    # longer than any entity the recognizers find (addresses are the longest, ~120 characters)
    overlap_chars: int = Field(default=160, ge=0)

    @model_validator(mode="after")
    def _windows_advance(self) -> "RedactionBudget":
        if self.overlap_chars * 2 > self.window_chars:
            raise ValueError("overlap_chars must be at most half of window_chars, or windows barely advance")
        return self

    def shrunk(self, seconds: float) -> "RedactionBudget":
        """The same budget with at most `seconds` of time (what is left of a shutdown, shared out)."""
        return self.model_copy(update={"max_seconds": max(0.0, min(self.max_seconds, seconds))})


def withheld(n: int) -> str:
    return PLACEHOLDER.format(n=n)


def windows(text: str, budget: RedactionBudget) -> Iterator[tuple[int, int, int]]:
    """(start, end, safe_end) of each window over text[:budget.max_chars].

    Everything before safe_end is covered once this window is analysed: entities that begin before it and are no
    longer than the overlap lie whole in this window or an earlier one.
    """
    limit = min(len(text), budget.max_chars)
    truncated = limit < len(text)
    start = 0
    while start < limit:
        end = min(start + budget.window_chars, limit)
        if end < limit:
            end = _break_before(text, start, end, budget)
        last = end >= limit
        # the text's true end needs no overlap; a cut at the length budget does, like any window's end
        safe = end if (last and not truncated) else max(start, end - budget.overlap_chars)
        yield start, end, safe
        if last:
            return
        start = max(end - budget.overlap_chars, start + 1)


def _break_before(text: str, start: int, end: int, budget: RedactionBudget) -> int:
    """End a window at whitespace when there is some in its last part, so words stay whole for the NER."""
    floor = start + budget.overlap_chars + 1
    for position in range(end, max(floor, end - 200), -1):
        if text[position - 1].isspace():
            return position
    return end
